//! The last stage: checking what the parser wrote against the options. Input that was cut off
//! (`--truncated error`), several values (`--concat error`), and a value that is not an object
//! where one is wanted fail here.

use std::ops::Range;

use crate::args::options::{Concat, Options, Target, Truncated};
use crate::args::unquote::layer_note;
use crate::error::{Code, Error};
use crate::repair::{Repair, ends_inside_a_value, truncated, truncation};

/// The error for an input an earlier stage failed on (`input` ends at byte `end`): with
/// [`Truncated::Error`], text a strict reader finds ending inside a value was cut off, whatever
/// the repairs could not make of it: also a string cut before what it encodes (`"`, `"\` of a
/// double-encoded object), which holds nothing yet.
pub(crate) fn failed(error: Error, input: &str, end: usize, options: &Options) -> Error {
    if options.truncated == Truncated::Error
        && !options.strict
        && matches!(error.code, Code::InvalidJson | Code::EmptyInput)
        && ends_inside_a_value(input)
    {
        let what = match error.code {
            Code::EmptyInput => "it ends inside a JSON string, before what the string holds".into(),
            _ => format!("it ends inside a JSON value ({})", error.message),
        };
        return Error {
            code: Code::Truncated,
            message: format!("the input was cut off before its end: {what}; refused, not healed"),
            offset: Some(end),
        };
    }
    error
}

/// Checks the values the parser wrote to `out` (each at one of `parts`) with the `repairs` it
/// made, for `input` (ending at byte `end`) read through `layers` string layers.
pub(crate) fn validate(
    out: &[u8],
    parts: &[Range<usize>],
    repairs: &[Repair],
    input: &str,
    end: usize,
    layers: u32,
    options: &Options,
) -> Result<(), Error> {
    if options.truncated == Truncated::Error && truncated(repairs, input) {
        return Err(cut_off(repairs, input, end, layers));
    }
    if parts.len() > 1 && options.concat == Concat::Error {
        return Err(Error::whole(
            Code::Concatenated,
            format!(
                "{} JSON values written one after another{}",
                parts.len(),
                layer_note(layers)
            ),
        ));
    }
    if options.target == Target::Object {
        let checked = match options.concat {
            Concat::All => parts.len(),
            _ => 1,
        };
        for part in &parts[..checked] {
            not_an_object(out[part.start], layers)?;
        }
    }
    Ok(())
}

/// The `truncated` error for input whose `repairs` say it was cut off.
fn cut_off(repairs: &[Repair], input: &str, end: usize, layers: u32) -> Error {
    let what = match truncation(repairs, input) {
        Some(cut) => format!(
            "{}{}{}",
            cut.kind.as_str(),
            cut.offset
                .map_or(String::new(), |o| format!(" at byte {o}")),
            layer_note(layers)
        ),
        None => "it ends inside a JSON value".to_owned(),
    };
    Error {
        code: Code::Truncated,
        message: format!("the input was cut off before its end: {what}; refused, not healed"),
        offset: Some(end),
    }
}

/// `not_an_object` for a value whose compact JSON starts with `first`, unless it is an object.
fn not_an_object(first: u8, layers: u32) -> Result<(), Error> {
    let found = match first {
        b'{' => return Ok(()),
        b'[' => "an array",
        b'"' => "a string",
        b't' | b'f' => "a boolean",
        b'n' => "null",
        _ => "a number",
    };
    Err(Error::whole(
        Code::NotAnObject,
        format!(
            "expected a JSON object, found {found}{}",
            layer_note(layers)
        ),
    ))
}
