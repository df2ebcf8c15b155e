//! The report of what was changed to get a value: one [`Repair`] per change.

/// What kind of change was made. The strings of [`RepairKind::as_str`] are stable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RepairKind {
    /// The text was a JSON string literal holding JSON; `layers` says how many were decoded.
    Unquote,
    /// An object or array written with escaped quotes and no outer quotes (`{\"a\":1}`).
    Unescape,
    /// An object or array whose every double quote was doubled, as a CSV cell writes JSON
    /// (`{""a"": 1}`, or `"{""a"": 1}"` with the cell's own quotes); the quotes were undoubled.
    DoubledQuotes,
    /// A key appeared twice in one object; the last value is kept at the first position.
    DuplicateKey,
    /// The JSON was inside a markdown code fence.
    CodeFence,
    /// Text that is not JSON was around the value and was left out (`text` holds its start).
    Prose,
    /// A JSONP wrapper `callback(...)`, or a constructor call around one value
    /// (`ObjectId("…")`, `NumberLong(42)`, `new Date(0)`), was removed; a call around nothing
    /// (`ObjectId()`) is `null`.
    Jsonp,
    /// A comma before a closing bracket was removed.
    TrailingComma,
    /// A comma with no value before it was removed.
    ExtraComma,
    /// A comma was inserted between two members or elements.
    MissingComma,
    /// A colon was inserted between a key and its value.
    MissingColon,
    /// A key had no value; `null` was written.
    MissingValue,
    /// A string in single quotes was rewritten with double quotes.
    SingleQuotes,
    /// A string in typographic quotes was rewritten with double quotes.
    TypographicQuotes,
    /// An object key without quotes was quoted.
    UnquotedKey,
    /// A bare word in a value position (or a JavaScript regular expression literal, `/a+/g`,
    /// or a call of several arguments, `Timestamp(1, 2)`) was written as a string.
    UnquotedString,
    /// Python's `True`, `False` or `None` was written as JSON.
    PythonLiteral,
    /// `NaN` or `Infinity`, with or without a sign (`-Infinity`, `+NaN`, `- Infinity`), has no
    /// JSON form; `null` was written.
    NonFinite,
    /// JavaScript's `undefined` was written as `null`.
    Undefined,
    /// A comment (`//`, `/* */` or `#`) was removed.
    Comment,
    /// A string was cut off; it was closed.
    UnterminatedString,
    /// Arrays or objects were cut off; they were closed.
    UnterminatedContainer,
    /// A literal was cut off at the end of the input (`tru`); it was completed.
    TruncatedLiteral,
    /// A raw control character (such as a newline) inside a string was escaped.
    ControlCharacter,
    /// A quote inside a string that did not end it was escaped.
    UnescapedQuote,
    /// A backslash that starts no JSON escape was kept as a literal backslash.
    InvalidEscape,
    /// A `\u` escape named half of a surrogate pair; U+FFFD was written.
    LoneSurrogate,
    /// A number in a form JSON does not allow (`.5`, `+1`, `01`, `1.`, `2e-`) was rewritten;
    /// in an array, a sign with no digits (`[1, -]`) was left out.
    NumberFormat,
    /// Strings joined with `+` were written as one string.
    StringConcat,
    /// An ellipsis standing for elided items was removed.
    Ellipsis,
    /// A closing bracket of the wrong kind closed the open container.
    MismatchedBracket,
    /// A closing bracket with nothing open was removed.
    ExtraBracket,
    /// A Python tuple `(1, 2)` was written as an array.
    Parentheses,
    /// A Python set `{1, 2}` (braces whose members have no colon) was written as an array.
    SetLiteral,
    /// A string's closing quote was missing before the text that follows it (a comma and the
    /// next member, or the closing brackets at the end); it was closed there. Unlike
    /// `unterminated_string`, the input was not cut off.
    MissingQuote,
    /// A Unicode space that JSON does not allow between tokens (no-break space, ideographic
    /// space, ...) was left out.
    UnicodeSpace,
    /// A closing bracket was missing before the next value (`[{"a":1{"b":2}]`); it was added.
    MissingBracket,
    /// A value was given the type its schema declares where the intent was unambiguous
    /// (`"20"` to `20` for an integer, `3` to `"3"` for a string, `"x"` to `["x"]` for an
    /// array, ...); `path` holds its JSON pointer. For the text values of XML-style call
    /// formats, `text` holds the parameter's name instead.
    SchemaType,
    /// An XML-style call wrote all its arguments as one `arguments` parameter holding a JSON
    /// object, for a tool whose schema has no `arguments` property: the object is the
    /// arguments.
    UnwrapArguments,
    /// The server refused the model's reply (Groq's `tool_use_failed`: a call its own parser
    /// could not read) and sent the reply's text in its error's `failed_generation`: the
    /// reply was read from there; `text` holds the server's message.
    FailedGeneration,
    /// The API's stop reason says the output was cut (`finish_reason: "length"`,
    /// `stop_reason: "max_tokens"`, ...) while the model was writing text, not a call: the
    /// text ends where the output did. A record's own repair; `text` holds the reason.
    OutputCut,
}

impl RepairKind {
    /// The snake_case string written in records.
    pub fn as_str(self) -> &'static str {
        use RepairKind::*;
        match self {
            Unquote => "unquote",
            Unescape => "unescape",
            DoubledQuotes => "doubled_quotes",
            DuplicateKey => "duplicate_key",
            CodeFence => "code_fence",
            Prose => "prose",
            Jsonp => "jsonp",
            TrailingComma => "trailing_comma",
            ExtraComma => "extra_comma",
            MissingComma => "missing_comma",
            MissingColon => "missing_colon",
            MissingValue => "missing_value",
            SingleQuotes => "single_quotes",
            TypographicQuotes => "typographic_quotes",
            UnquotedKey => "unquoted_key",
            UnquotedString => "unquoted_string",
            PythonLiteral => "python_literal",
            NonFinite => "non_finite",
            Undefined => "undefined",
            Comment => "comment",
            UnterminatedString => "unterminated_string",
            UnterminatedContainer => "unterminated_container",
            TruncatedLiteral => "truncated_literal",
            ControlCharacter => "control_character",
            UnescapedQuote => "unescaped_quote",
            InvalidEscape => "invalid_escape",
            LoneSurrogate => "lone_surrogate",
            NumberFormat => "number_format",
            StringConcat => "string_concat",
            Ellipsis => "ellipsis",
            MismatchedBracket => "mismatched_bracket",
            ExtraBracket => "extra_bracket",
            Parentheses => "parentheses",
            SetLiteral => "set_literal",
            MissingQuote => "missing_quote",
            UnicodeSpace => "unicode_space",
            MissingBracket => "missing_bracket",
            SchemaType => "schema_type",
            UnwrapArguments => "unwrap_arguments",
            FailedGeneration => "failed_generation",
            OutputCut => "output_cut",
        }
    }

    /// What strict parsing expected instead, for the `invalid_json` message under `--strict`.
    pub(crate) fn strict_message(self) -> &'static str {
        use RepairKind::*;
        match self {
            Unquote | Unescape | DuplicateKey => "unexpected text",
            DoubledQuotes => "expected a string, found '\"\"'",
            CodeFence => "expected a JSON value, found a code fence",
            Prose | Jsonp => "expected a JSON value, found text",
            TrailingComma => "trailing comma",
            ExtraComma => "expected a value, found ','",
            MissingComma => "expected ',' or a closing bracket",
            MissingColon => "expected ':'",
            MissingValue => "expected a value",
            SingleQuotes | TypographicQuotes => "expected '\"'",
            UnquotedKey => "expected a string key",
            UnquotedString | PythonLiteral | NonFinite | Undefined => "expected a value",
            Comment => "comments are not JSON",
            UnterminatedString => "unterminated string",
            UnterminatedContainer => "unexpected end of input",
            TruncatedLiteral => "unexpected end of input in a literal",
            ControlCharacter => "control character in a string",
            UnescapedQuote => "unexpected text after a string",
            InvalidEscape => "invalid escape",
            LoneSurrogate => "lone surrogate in a \\u escape",
            NumberFormat => "invalid number",
            StringConcat => "expected ',' or a closing bracket, found '+'",
            Ellipsis => "expected a value, found '...'",
            MismatchedBracket => "mismatched closing bracket",
            ExtraBracket => "unexpected closing bracket",
            Parentheses => "expected a value, found '('",
            SetLiteral => "expected ':' after an object key",
            MissingQuote => "unterminated string",
            UnicodeSpace => "expected a value, found a Unicode space",
            MissingBracket => "expected ',' or a closing bracket",
            SchemaType => "expected a JSON value of the schema's type",
            UnwrapArguments => "expected the tool's parameters, found one \"arguments\" object",
            FailedGeneration => "expected a reply, found the server's error",
            OutputCut => "expected a whole reply, found one the API cut",
        }
    }
}

/// One change made to the input, as reported in a record's `repairs`.
///
/// Non-exhaustive: it is made by the library only, and may gain fields (a repair kind that
/// needs more to say); read it through its fields or its accessors.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Repair {
    /// What was changed.
    pub kind: RepairKind,
    /// Byte offset in the text the change was applied to (the input, or a decoded layer).
    pub offset: Option<usize>,
    /// For [`RepairKind::Unquote`]: how many string layers were decoded.
    pub layers: Option<u32>,
    /// The key of a [`RepairKind::DuplicateKey`], or the start of left-out [`RepairKind::Prose`].
    pub text: Option<String>,
    /// For [`RepairKind::SchemaType`]: the JSON pointer of the value that was coerced.
    pub path: Option<String>,
}

impl Repair {
    /// What was changed.
    pub fn kind(&self) -> RepairKind {
        self.kind
    }

    /// The byte offset of the change in the text it was applied to, where one applies.
    pub fn offset(&self) -> Option<usize> {
        self.offset
    }

    /// For [`RepairKind::Unquote`]: how many string layers were decoded.
    pub fn layers(&self) -> Option<u32> {
        self.layers
    }

    /// The key of a [`RepairKind::DuplicateKey`], or the start of left-out [`RepairKind::Prose`].
    pub fn text(&self) -> Option<&str> {
        self.text.as_deref()
    }

    /// For [`RepairKind::SchemaType`]: the JSON pointer of the value that was coerced.
    pub fn path(&self) -> Option<&str> {
        self.path.as_deref()
    }

    /// A [`RepairKind::FailedGeneration`]: the reply was read from the error the server sent,
    /// whose message was `said`.
    pub(crate) fn failed_generation(said: &str) -> Repair {
        Repair {
            kind: RepairKind::FailedGeneration,
            offset: None,
            layers: None,
            text: Some(said.to_owned()),
            path: None,
        }
    }

    /// A [`RepairKind::OutputCut`]: the API cut the output while the model wrote text, for
    /// `why` (what [`crate::calls::cut_by`] said).
    pub(crate) fn output_cut(why: &str) -> Repair {
        Repair {
            kind: RepairKind::OutputCut,
            offset: None,
            layers: None,
            text: Some(why.to_owned()),
            path: None,
        }
    }

    pub(crate) fn at(kind: RepairKind, offset: usize) -> Repair {
        Repair {
            kind,
            offset: Some(offset),
            layers: None,
            text: None,
            path: None,
        }
    }
}

/// A repair as every record, event and package writes it: `{"kind", "offset"?, "layers"?,
/// "key"|"text"?, "path"?}` (the one encoding; `key` names the key of a duplicate key or a
/// schema coercion, `text` the start of left-out prose).
impl serde::Serialize for Repair {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("kind", self.kind.as_str())?;
        if let Some(offset) = self.offset {
            map.serialize_entry("offset", &(offset as u64))?;
        }
        if let Some(layers) = self.layers {
            map.serialize_entry("layers", &layers)?;
        }
        if let Some(text) = &self.text {
            let field = match self.kind {
                RepairKind::DuplicateKey | RepairKind::SchemaType => "key",
                _ => "text",
            };
            map.serialize_entry(field, text)?;
        }
        if let Some(path) = &self.path {
            map.serialize_entry("path", path)?;
        }
        map.end()
    }
}

/// Whether `text` was cut off before its end, judged from the `repairs` made while mending it:
/// a string, array or object left open, a literal cut short (`tru`), a value missing at the
/// very end (`{"a":`), a number ending in what cannot end one (`1.`, `2e`, `3e-`), or, whatever
/// a repair made of it, text that a strict JSON reader finds ending inside a value (`"a``
/// read as two strings). Such a value was healed, not read: a caller about to act on it (run a
/// tool call) should refuse it.
///
/// ```
/// use toolmend_core::{Mender, Options, truncated};
///
/// let mut mender = Mender::new(Options::default());
/// let text = r#"{"target": "prod", "dry_run": fal"#;
/// let mended = mender.mend(text).unwrap();
/// assert_eq!(mended.value(), r#"{"target":"prod","dry_run":false}"#);
/// assert!(truncated(mended.repairs(), text));
/// assert!(!truncated(mender.mend("{'a': 1,}").unwrap().repairs(), "{'a': 1,}"));
/// ```
pub fn truncated(repairs: &[Repair], text: &str) -> bool {
    // Text that needed no repair is valid JSON: nothing was cut.
    truncation(repairs, text).is_some() || (!repairs.is_empty() && ends_inside_a_value(text))
}

/// Whether a strict JSON reader runs out of `text` in the middle of a value.
pub(crate) fn ends_inside_a_value(text: &str) -> bool {
    let text = text.trim_start_matches('\u{feff}').trim();
    // An encoded object (a JSON string holding it, the common input that asks) needs no read:
    // a strict reader of a string whose last byte closes it reads it whole or stops at a fault
    // before the end, never running out. Reading it all was a tenth of `mendArgs` per call.
    !closes_its_string(text.as_bytes()) && strict_reader_runs_out(text)
}

/// Whether serde_json, reading `text` as one JSON value, runs out of text (`is_eof`).
fn strict_reader_runs_out(text: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(text).is_err_and(|e| e.is_eof())
}

/// Whether `text` opens a JSON string and its last byte is a quote that closes it, not one an
/// escape holds: after an even run of backslashes (`\\"` closes, `\"` is escaped), with no
/// `\u` in the six bytes before it (`\u12"`: a strict reader takes four bytes for its digits
/// and runs out). Before that quote a strict reader either stops at a fault, with text left,
/// or reads the string whole; it never runs out of text.
fn closes_its_string(text: &[u8]) -> bool {
    let [b'"', inner @ .., b'"'] = text else {
        return false;
    };
    let backslashes = inner.iter().rev().take_while(|&&b| b == b'\\').count();
    let tail = &inner[inner.len().saturating_sub(6)..];
    backslashes % 2 == 0 && !tail.windows(2).any(|pair| pair == b"\\u")
}

/// The repair that shows `text` was cut off (see [`truncated`]), when one does.
pub(crate) fn truncation<'r>(repairs: &'r [Repair], text: &str) -> Option<&'r Repair> {
    let text = text.trim_end();
    let end = text.len();
    let cut_number = text.ends_with(['.', 'e', 'E', '+', '-']);
    repairs.iter().find(|r| match r.kind {
        RepairKind::UnterminatedContainer
        | RepairKind::UnterminatedString
        | RepairKind::TruncatedLiteral => true,
        RepairKind::MissingValue => r.offset.is_none_or(|o| o + 2 >= end),
        RepairKind::NumberFormat => cut_number && r.offset.is_some_and(|o| o + 3 >= end),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `ends_inside_a_value` answered before its shortcut: a strict reader's answer.
    fn read_to_its_end(text: &str) -> bool {
        strict_reader_runs_out(text.trim_start_matches('\u{feff}').trim())
    }

    #[test]
    fn the_shortcut_answers_as_a_strict_reader() {
        // Every text of up to five of these pieces, each also inside quotes: the tails that
        // matter are escapes cut at the end (`\"`, `\u12"`), escaped backslashes before a
        // closing quote, and strings closed before the end; an encoded object ends `\"}"`.
        let pieces = ["\"", "\\", "u", "0", "a", " ", "{", "}", "\n", "é"];
        let mut texts = vec![String::new()];
        let mut all = Vec::new();
        for _ in 0..5 {
            let mut longer = Vec::new();
            for text in &texts {
                for piece in pieces {
                    longer.push(format!("{text}{piece}"));
                }
            }
            all.extend(longer.iter().cloned());
            texts = longer;
        }
        let mut shortcut = 0;
        for body in &all {
            for text in [
                body.clone(),
                format!("\"{body}\""),
                format!(" \"{body}\" \n"),
            ] {
                let trimmed = text.trim_start_matches('\u{feff}').trim();
                shortcut += usize::from(closes_its_string(trimmed.as_bytes()));
                assert_eq!(
                    ends_inside_a_value(&text),
                    read_to_its_end(&text),
                    "{text:?}"
                );
            }
        }
        assert!(shortcut > 10_000, "the shortcut was taken {shortcut} times");
        // Encoded objects, once and twice, take it.
        assert!(closes_its_string(br#""{\"a\":\"b\"}""#));
        assert!(closes_its_string(br#""\"{\\\"a\\\":1}\"""#));
        // And the cases named above, one by one.
        for (text, cut) in [
            (r#""abc\""#, true),
            (r#""abc\u12""#, true),
            (r#""abc\u123""#, false),
            (r#""abc\\""#, false),
            (r#""{\"a\":\"b\"}""#, false),
            (r#""{\"a\":\"b\"}\""#, true),
            (r#""a" "b""#, false),
            (r#""{\"a\": 1}""#, false),
            ("\"", true),
            ("\"\"", false),
        ] {
            assert_eq!(ends_inside_a_value(text), cut, "{text}");
            assert_eq!(read_to_its_end(text), cut, "{text}");
        }
    }
}
