//! The output record: one JSON object per input, a [`Record`] written straight into a byte
//! buffer by every command (`args`, `repair`, `calls`).
//!
//! ```text
//! {"ok":true,"line":3,"id":"c7","value":{…},"repairs":[{"kind":"unquote","layers":2}],"dropped":[]}
//! {"ok":false,"line":4,"error":{"code":"invalid_json","message":"…","original":"…","offset":17}}
//! ```
//!
//! `file` follows `line` when more than one input file was given; `id` is copied (as JSON)
//! from `--input jsonl` lines that carry one. `repairs` and `dropped` are always present in
//! a success record, empty when nothing was changed or left out.

use std::io::{self, Write};

use crate::args::Mended;
use crate::bytes::cut;
use crate::bytes::escape::push_json_string;
use crate::error::Error;
use crate::repair::Repair;
use crate::tools::schema::Violation;

/// Where an input came from.
#[derive(Debug, Clone, Copy, Default)]
pub struct Origin<'a> {
    /// 1-based line (or record) number in its file.
    pub line: u64,
    /// The input file's name, when several were given.
    pub file: Option<&'a str>,
    /// The `id` of a jsonl input, as JSON text.
    pub id: Option<&'a str>,
}

/// Opens a record: `{"ok":…`, then where the input came from (`line`, `file`, `id`) when given.
fn write_head(buf: &mut Vec<u8>, ok: bool, origin: Option<&Origin<'_>>) {
    buf.extend_from_slice(if ok {
        b"{\"ok\":true"
    } else {
        b"{\"ok\":false"
    });
    if let Some(origin) = origin {
        write_origin(buf, origin);
    }
}

fn write_origin(buf: &mut Vec<u8>, origin: &Origin<'_>) {
    buf.extend_from_slice(b",\"line\":");
    push_u64(buf, origin.line);
    if let Some(file) = origin.file {
        buf.extend_from_slice(b",\"file\":");
        push_json_string(buf, file.as_bytes());
    }
    if let Some(id) = origin.id {
        buf.extend_from_slice(b",\"id\":");
        buf.extend_from_slice(id.as_bytes());
    }
}

/// One record: where the input came from and how it ended. Every command's record (`args`,
/// `repair`, `calls`) is one of these, written by [`Record::write`] (or [`Record::write_to`]).
pub(crate) struct Record<'a> {
    /// `line`, `file` and `id`; none for a record that stands for a whole stream.
    pub origin: Option<&'a Origin<'a>>,
    /// The outcome: a value or an error.
    pub outcome: RecordResult<'a>,
}

/// How an input ended.
pub(crate) enum RecordResult<'a> {
    /// `"ok":true`: the value, its `repairs` (then `more`, a schema's coercions), and for `args`
    /// and `repair` the `dropped` values of the mend.
    Ok {
        value: Written<'a>,
        repairs: &'a [Repair],
        more: &'a [Repair],
        dropped: Option<&'a Mended<'a>>,
    },
    /// `"ok":false`: the error, the input as read, the schema violations of an
    /// `invalid_parameters` error, and for `calls` what was found.
    Err {
        error: &'a Error,
        original: &'a [u8],
        violations: &'a [Violation],
        value: Option<WriteJson<'a>>,
    },
}

/// Appends a JSON value with its own serializer (a `calls` value, which `io` does not know).
pub(crate) type WriteJson<'a> = &'a dyn Fn(&mut Vec<u8>);

/// A record's value.
pub(crate) enum Written<'a> {
    /// The mender's output, written from its buffer.
    Mended(&'a Mended<'a>),
    /// JSON text (a value coerced to a schema).
    Text(&'a [u8]),
    /// Written by its own serializer (what `calls` found).
    By(WriteJson<'a>),
}

impl<'a> Record<'a> {
    /// The success record of `mended`.
    pub(crate) fn mended(origin: &'a Origin<'a>, mended: &'a Mended<'a>) -> Record<'a> {
        Record {
            origin: Some(origin),
            outcome: RecordResult::Ok {
                value: Written::Mended(mended),
                repairs: mended.repairs(),
                more: &[],
                dropped: Some(mended),
            },
        }
    }

    /// The error record of `error` for the input `original`.
    pub(crate) fn error(origin: &'a Origin<'a>, error: &'a Error, original: &'a [u8]) -> Self {
        Record {
            origin: Some(origin),
            outcome: RecordResult::Err {
                error,
                original,
                violations: &[],
                value: None,
            },
        }
    }

    /// Appends the record and a newline.
    pub(crate) fn write(&self, buf: &mut Vec<u8>) {
        self.write_head(buf);
        match &self.outcome {
            RecordResult::Ok { value, .. } => match value {
                Written::Mended(mended) => mended.write_value(buf),
                Written::Text(text) => buf.extend_from_slice(text),
                Written::By(write) => write(buf),
            },
            RecordResult::Err { .. } => {}
        }
        self.write_tail(buf);
    }

    /// Writes the record to `out` with a mended value written straight from the mender's
    /// buffer, not copied (for values of many megabytes); `buf` holds the other parts.
    pub(crate) fn write_to<W: Write + ?Sized>(
        &self,
        out: &mut W,
        buf: &mut Vec<u8>,
    ) -> io::Result<()> {
        let RecordResult::Ok {
            value: Written::Mended(mended),
            ..
        } = &self.outcome
        else {
            self.write(buf);
            out.write_all(buf)?;
            buf.clear();
            return Ok(());
        };
        self.write_head(buf);
        out.write_all(buf)?;
        buf.clear();
        mended.write_value_to(out)?;
        self.write_tail(buf);
        out.write_all(buf)?;
        buf.clear();
        Ok(())
    }

    /// Everything before the value of a success record; all but the closing of an error record.
    fn write_head(&self, buf: &mut Vec<u8>) {
        match &self.outcome {
            RecordResult::Ok { .. } => {
                write_head(buf, true, self.origin);
                buf.extend_from_slice(b",\"value\":");
            }
            RecordResult::Err {
                error,
                original,
                violations,
                value,
            } => {
                write_head(buf, false, self.origin);
                buf.push(b',');
                write_error_object(buf, error, original, violations);
                if let Some(value) = value {
                    buf.extend_from_slice(b",\"value\":");
                    value(buf);
                }
            }
        }
    }

    /// Everything after the value: `repairs` and `dropped` of a success record, the closing
    /// brace and the newline.
    fn write_tail(&self, buf: &mut Vec<u8>) {
        if let RecordResult::Ok {
            repairs,
            more,
            dropped,
            ..
        } = &self.outcome
        {
            buf.extend_from_slice(b",\"repairs\":");
            if more.is_empty() {
                write_repairs(buf, repairs);
            } else {
                write_repairs(buf, &[*repairs, *more].concat());
            }
            if let Some(mended) = dropped {
                write_dropped(buf, mended);
            }
        }
        buf.extend_from_slice(b"}\n");
    }
}

/// The `dropped` list of a success record.
fn write_dropped(buf: &mut Vec<u8>, mended: &Mended<'_>) {
    buf.extend_from_slice(b",\"dropped\":[");
    for (i, value) in mended.dropped().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        buf.extend_from_slice(value.as_bytes());
    }
    buf.push(b']');
}

/// The error object of a failure record: the error's code, message and offset, the input as
/// shown (`original`), and the schema `violations` of an `invalid_parameters` error. The one
/// encoding of it, written into records and into a stream's `end` event.
pub(crate) struct ErrorJson<'a> {
    pub error: &'a Error,
    pub original: &'a [u8],
    pub violations: &'a [Violation],
}

impl serde::Serialize for ErrorJson<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("code", self.error.code.as_str())?;
        map.serialize_entry("message", &self.error.message)?;
        map.serialize_entry("original", &original_text(self.original))?;
        if let Some(offset) = self.error.offset {
            map.serialize_entry("offset", &(offset as u64))?;
        }
        if !self.violations.is_empty() {
            map.serialize_entry("violations", self.violations)?;
        }
        map.end()
    }
}

/// Appends `"error":{…}` (see [`ErrorJson`]).
pub(crate) fn write_error_object(
    buf: &mut Vec<u8>,
    error: &Error,
    original: &[u8],
    violations: &[Violation],
) {
    buf.extend_from_slice(b"\"error\":");
    push_json(
        buf,
        &ErrorJson {
            error,
            original,
            violations,
        },
    );
}

/// Appends `repairs` as a JSON array (each as [`Repair`]'s `Serialize` writes it).
pub fn write_repairs(buf: &mut Vec<u8>, repairs: &[Repair]) {
    push_json(buf, repairs);
}

/// `repairs` as the JSON array [`write_repairs`] writes, as a value (for what is built as
/// values: a call's `repairs` in the packages, a stream's events, the loop's transcript).
pub fn repairs_value(repairs: &[Repair]) -> serde_json::Value {
    to_value(repairs)
}

/// Appends `value` as JSON text.
pub(crate) fn push_json<T: serde::Serialize + ?Sized>(buf: &mut Vec<u8>, value: &T) {
    // Writing into a Vec cannot fail, and nothing written here fails to serialize.
    let _ = serde_json::to_writer(&mut *buf, value);
}

/// `value` as a `serde_json::Value`, built from its one `Serialize` encoding, numbers as
/// written (see [`crate::io::value`]).
pub(crate) fn to_value<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Value {
    crate::io::value::to_value(value)
}

/// The input as shown in an error record: its first 100 characters, `…` when cut. Invalid
/// UTF-8 is shown with U+FFFD.
pub fn original_text(original: &[u8]) -> String {
    // 100 characters are at most 400 bytes; look at a little more to know whether it was cut.
    let head = &original[..original.len().min(404)];
    let text = String::from_utf8_lossy(head);
    let mut cut_text = cut(&text, 100);
    if original.len() > head.len() && !cut_text.ends_with('…') {
        cut_text.push('…');
    }
    cut_text
}

/// Appends `n` in decimal, without allocating.
fn push_u64(buf: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    buf.extend_from_slice(&digits[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values built for records built as values are what the byte writers write.
    #[test]
    fn values_are_what_the_writers_write() {
        use crate::RepairKind;
        let mut repairs = vec![
            Repair::at(RepairKind::TrailingComma, 7),
            Repair {
                kind: RepairKind::Unquote,
                offset: None,
                layers: Some(2),
                text: None,
                path: None,
            },
        ];
        for kind in [
            RepairKind::DuplicateKey,
            RepairKind::SchemaType,
            RepairKind::Prose,
        ] {
            let mut repair = Repair::at(kind, usize::MAX);
            repair.text = Some("a\"\\\u{1}\u{7f}é😀/".into());
            repair.path = Some("/x/0".into());
            repairs.push(repair);
        }
        let mut written = Vec::new();
        write_repairs(&mut written, &repairs);
        let built = serde_json::to_vec(&repairs_value(&repairs)).unwrap();
        assert_eq!(String::from_utf8(built), String::from_utf8(written));

        let violation = Violation {
            path: "/n".into(),
            keyword: "type".into(),
            message: "\"x\" is not of type \"integer\"\n".into(),
        };
        for (error, violations) in [
            (
                Error::at(crate::Code::InvalidJson, 3, "bad \u{2028}"),
                vec![],
            ),
            (
                Error::whole(crate::Code::InvalidParameters, "no"),
                vec![violation.clone(), violation],
            ),
        ] {
            let original = "é\u{0}x".repeat(60);
            let mut written = b"{".to_vec();
            write_error_object(&mut written, &error, original.as_bytes(), &violations);
            written.push(b'}');
            let mut member = serde_json::Map::new();
            member.insert(
                "error".into(),
                to_value(&ErrorJson {
                    error: &error,
                    original: original.as_bytes(),
                    violations: &violations,
                }),
            );
            let built = serde_json::to_vec(&member).unwrap();
            assert_eq!(String::from_utf8(built), String::from_utf8(written));
        }
    }

    #[test]
    fn cuts_at_characters_not_bytes() {
        assert_eq!(original_text(&[b'a'; 500]).chars().count(), 101);
    }
}
