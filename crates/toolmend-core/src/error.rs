//! Errors of the mending pipeline: a stable [`Code`] and a message that says where.

use std::fmt;

/// The stable, documented error codes written in `error.code`.
///
/// These strings are part of the output contract: they are added to, never renamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Code {
    /// The input is empty or only whitespace (after framing).
    EmptyInput,
    /// The text is not JSON, and (with `--strict`, or past what repair can do) was not mended.
    InvalidJson,
    /// The value is valid but is not a JSON object (the `args` command requires one).
    NotAnObject,
    /// The text is still a JSON string literal after `--max-depth` unquote layers.
    DepthExceeded,
    /// Arrays and objects are nested deeper than `--max-nesting`.
    TooDeep,
    /// The input is longer than `--max-bytes`.
    TooLarge,
    /// The input is not valid UTF-8.
    InvalidUtf8,
    /// Several values were concatenated and `--concat error` was given.
    Concatenated,
    /// A `--input jsonl` line is not a JSON string or an object carrying the text.
    InvalidInput,
    /// A tool call lacks a field it must have (`tool`, `parameters`, `terminate`, a name).
    MissingField,
    /// A field of a tool call has the wrong JSON type.
    WrongType,
    /// A tool call names a tool that is not in the tools file.
    UnknownTool,
    /// A tool call's parameters do not match its tool's JSON Schema.
    InvalidParameters,
    /// A tool call was cut off before its end; it is listed under `incomplete`, never healed.
    IncompleteCall,
    /// The input was cut off before its end and [`Truncated::Error`](crate::Truncated) was
    /// asked for (`--truncated error`): it is refused rather than healed.
    Truncated,
    /// toolmend failed on this input through a bug of its own (it panicked): the input got
    /// this record instead of ending the run, and every other input was still processed.
    Internal,
}

impl Code {
    /// The snake_case string written in records.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::EmptyInput => "empty_input",
            Code::InvalidJson => "invalid_json",
            Code::NotAnObject => "not_an_object",
            Code::DepthExceeded => "depth_exceeded",
            Code::TooDeep => "too_deep",
            Code::TooLarge => "too_large",
            Code::InvalidUtf8 => "invalid_utf8",
            Code::Concatenated => "concatenated",
            Code::InvalidInput => "invalid_input",
            Code::MissingField => "missing_field",
            Code::WrongType => "wrong_type",
            Code::UnknownTool => "unknown_tool",
            Code::InvalidParameters => "invalid_parameters",
            Code::IncompleteCall => "incomplete_call",
            Code::Truncated => "truncated",
            Code::Internal => "internal_error",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why one input could not be turned into a value.
///
/// `offset` is a byte offset into the text the failing stage was reading: the input itself,
/// or, after unquoting, the decoded text of the innermost layer (the message says which).
///
/// Non-exhaustive: it is made by the library only, and may gain fields; read it through its
/// fields or [`Error::code`], [`Error::message`] and [`Error::offset`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
#[non_exhaustive]
pub struct Error {
    /// The stable error code.
    pub code: Code,
    /// What failed and where, in words (lowercase, no trailing period).
    pub message: String,
    /// Byte offset of the failure, where one applies.
    pub offset: Option<usize>,
}

impl Error {
    /// The stable error code.
    pub fn code(&self) -> Code {
        self.code
    }

    /// What failed and where, in words.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The byte offset of the failure, where one applies.
    pub fn offset(&self) -> Option<usize> {
        self.offset
    }

    /// An error with a byte offset; the message gets "at byte N" appended.
    pub fn at(code: Code, offset: usize, what: impl fmt::Display) -> Error {
        Error {
            code,
            message: format!("{what} at byte {offset}"),
            offset: Some(offset),
        }
    }

    /// The error of an input that made toolmend panic (`panic` is what it panicked with): the
    /// input gets this record and the run goes on, rather than dying with every input after it.
    pub(crate) fn internal(panic: &(dyn std::any::Any + Send)) -> Error {
        let what = panic
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("no message");
        Error::whole(
            Code::Internal,
            format!(
                "toolmend failed on this input, a bug in toolmend (please report it with this \
                 input): {what}"
            ),
        )
    }

    /// An error about the input as a whole.
    pub fn whole(code: Code, what: impl Into<String>) -> Error {
        Error {
            code,
            message: what.into(),
            offset: None,
        }
    }
}
