//! The `calls` command as a stream filter: replies in, one record (or value) out per reply.

use std::io;
use std::ops::{Deref, DerefMut};

use serde::ser::SerializeMap;
use serde_json::Value;

use super::{CallOptions, Extracted, Failure, extract, extract_message};
use crate::error::{Code, Error};
use crate::io::filter::{Filter, Item, Job, Output, Reading};
use crate::io::input::{Framing, JSONL_TEXT_MEMBERS, RawInput, too_large};
use crate::io::record::{ErrorJson, Origin, Record, RecordResult, Written, push_json};
use crate::tools::schema::Violation;

/// How each call is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Shape {
    /// `{"tool", "parameters", "terminate"?, "id"?, "repairs"?, "dropped"?}`.
    #[default]
    Native,
    /// `{"id"?, "name", "arguments": "<JSON text>"}`, to feed back to an OpenAI-style API.
    OpenAi,
}

/// Settings of the `calls` filter.
#[derive(Debug, Clone)]
pub struct CallsFilterOptions {
    /// The extractor's settings.
    pub calls: CallOptions,
    /// How the stream is cut into replies (`Whole` by default).
    pub framing: Framing,
    /// Write one record per reply on stdout (else values on stdout, error records on stderr).
    pub records: bool,
    /// Flush after every record.
    pub line_buffered: bool,
    /// Replies longer than this fail with `too_large`.
    pub max_bytes: usize,
    /// How calls are written.
    pub shape: Shape,
}

impl Default for CallsFilterOptions {
    fn default() -> CallsFilterOptions {
        CallsFilterOptions {
            calls: CallOptions::default(),
            framing: Framing::Whole,
            records: false,
            line_buffered: false,
            max_bytes: crate::DEFAULT_MAX_BYTES,
            shape: Shape::Native,
        }
    }
}

/// Extracts the calls of every reply in a stream and writes the results.
///
/// A success record is `{"ok":true,"line":N,"id"?,"value":{"calls","text","reasoning",
/// "incomplete"},"repairs":[…]}`. A failure record is `{"ok":false,"line":N,"id"?,"error":
/// {"code","message","original","offset"?,"violations"?},"value"?}`, where `value` (when the
/// reply could be read) also lists the `rejected` calls.
///
/// ```
/// use toolmend_core::calls::{CallsFilter, CallsFilterOptions};
///
/// let mut filter = CallsFilter::new(CallsFilterOptions { records: true, ..Default::default() });
/// let (mut out, mut err) = (Vec::new(), Vec::new());
/// let reply = "[TOOL_CALLS]get_time[ARGS]{\"tz\": \"UTC\"}";
/// filter.run(reply.as_bytes(), None, &mut out, &mut err).unwrap();
/// let out = String::from_utf8(out).unwrap();
/// assert!(out.starts_with(r#"{"ok":true,"line":1,"value":{"calls":[{"tool":"get_time","parameters":{"tz":"UTC"},"repairs":[]}]"#));
/// ```
///
/// It is the stream driver of [`Filter`] (the same framing, output and error handling as
/// `args`) with the calls job, one thread: [`Filter::run`] runs it.
pub struct CallsFilter {
    filter: Filter,
}

impl CallsFilter {
    /// A filter with these settings.
    pub fn new(options: CallsFilterOptions) -> CallsFilter {
        let reading = Reading {
            framing: options.framing,
            max_bytes: options.max_bytes,
            line_buffered: options.line_buffered,
            threads: 1,
        };
        let job = Box::new(Calls { options });
        CallsFilter {
            filter: Filter::with_job(reading, job),
        }
    }
}

impl Deref for CallsFilter {
    type Target = Filter;

    fn deref(&self) -> &Filter {
        &self.filter
    }
}

impl DerefMut for CallsFilter {
    fn deref_mut(&mut self) -> &mut Filter {
        &mut self.filter
    }
}

/// The job of `calls`: extracts the calls of each reply.
struct Calls {
    options: CallsFilterOptions,
}

impl Job for Calls {
    /// Writes to `buf` only: a reply is small next to what extracting its calls holds.
    fn one(&mut self, item: Item<'_>, buf: &mut Output) -> io::Result<Option<bool>> {
        // A blank line between jsonl records is not a reply.
        if self.options.framing == Framing::Jsonl
            && matches!(item.raw, RawInput::Bytes(b) if b.trim_ascii().is_empty())
        {
            return Ok(None);
        }
        let start = buf.out.len();
        let ok = self.record(item, &mut buf.out);
        if !ok && !self.options.records {
            buf.err.extend_from_slice(&buf.out[start..]);
            buf.out.truncate(start);
        }
        Ok(Some(ok))
    }

    fn fresh(&self) -> Box<dyn Job> {
        Box::new(Calls {
            options: self.options.clone(),
        })
    }

    fn records(&self) -> bool {
        self.options.records
    }
}

impl Calls {
    /// Appends the record (or value) of one reply to `buf`; whether the reply was accepted.
    fn record(&self, item: Item<'_>, buf: &mut Vec<u8>) -> bool {
        let Item {
            line, file, raw, ..
        } = item;
        let origin = Origin {
            line,
            file,
            id: None,
        };
        let bytes = match raw {
            RawInput::TooLarge { head: start, len } => {
                let error = too_large(len, self.options.max_bytes);
                Record::error(&origin, &error, start).write(buf);
                return false;
            }
            RawInput::Bytes(bytes) => bytes,
        };
        let text = match std::str::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => {
                let error = Error::at(Code::InvalidUtf8, e.valid_up_to(), "invalid UTF-8");
                Record::error(&origin, &error, bytes).write(buf);
                return false;
            }
        };
        // An error record's `original` is the reply's text where the line carries one as text,
        // as for `args`; an assistant message or content list is shown as its line.
        let mut reply_text = None;
        // The line's `id`, as JSON text.
        let mut id = None;
        let result = if self.options.framing == Framing::Jsonl {
            // Numbers keep their text and nesting goes to --max-nesting, as in a whole reply.
            match crate::exact::parse(text, self.options.calls.nesting()) {
                Ok(message) => {
                    id = message.get("id").map(Value::to_string);
                    reply_text = match &message {
                        Value::String(s) => Some(s.clone()),
                        Value::Object(o) => JSONL_TEXT_MEMBERS
                            .iter()
                            .find_map(|k| o.get(*k).and_then(Value::as_str).map(str::to_owned)),
                        _ => None,
                    };
                    extract_message(&message, &self.options.calls)
                }
                Err(e) => Err(Failure {
                    error: Error::whole(
                        Code::InvalidInput,
                        // serde_json's words where it fails too (the messages users know).
                        match serde_json::from_str::<serde::de::IgnoredAny>(text) {
                            Err(serde) => format!("jsonl line is not JSON: {serde}"),
                            Ok(_) => format!(
                                "jsonl line is not JSON: {}",
                                e.into_error(self.options.calls.nesting()).message
                            ),
                        },
                    ),
                    extracted: None,
                }),
            }
        } else {
            extract(text, &self.options.calls)
        };
        match &result {
            Ok(found) if !self.options.records => {
                push_json(buf, &found.json(self.options.shape, false, false));
                buf.push(b'\n');
            }
            _ => {
                let original = reply_text.as_deref().map_or(bytes, str::as_bytes);
                let origin = Origin {
                    id: id.as_deref(),
                    ..origin
                };
                write_outcome(buf, Some(&origin), &result, original, self.options.shape);
            }
        }
        result.is_ok()
    }
}

/// Appends the record of one reply's result, and a newline: `{"ok":true, origin…, "value",
/// "repairs"}`, or `{"ok":false, origin…, "error", "value"?}` with what was found (see
/// `Calls::one`); `original` is the reply as read. The one writer of a calls record.
pub(crate) fn write_outcome(
    buf: &mut Vec<u8>,
    origin: Option<&Origin<'_>>,
    result: &Result<Extracted, Failure>,
    original: &[u8],
    shape: Shape,
) {
    match result {
        Ok(found) => {
            let value = |buf: &mut Vec<u8>| push_json(buf, &found.json(shape, false, false));
            let outcome = RecordResult::Ok {
                value: Written::By(&value),
                repairs: &found.repairs,
                more: &[],
                dropped: None,
            };
            Record { origin, outcome }.write(buf);
        }
        Err(failure) => {
            let (found, violations) = failure_parts(failure);
            let value = |buf: &mut Vec<u8>| {
                if let Some(found) = found {
                    push_json(buf, &found.json(shape, true, false));
                }
            };
            let outcome = RecordResult::Err {
                error: &failure.error,
                original,
                violations,
                value: found.is_some().then_some(&value),
            };
            Record { origin, outcome }.write(buf);
        }
    }
}

/// The entries of the record of one reply's result, as [`write_outcome`] writes them without
/// an origin (`ok`, then `value` and `repairs`, or `error` and `value`?), added to `map` from
/// the same borrowing views (for the `end` event of a stream, which writes `event` before them).
pub(crate) fn outcome_entries<M: SerializeMap>(
    map: &mut M,
    result: &Result<Extracted, Failure>,
    original: &[u8],
    shape: Shape,
) -> Result<(), M::Error> {
    map.serialize_entry("ok", &result.is_ok())?;
    match result {
        Ok(found) => {
            map.serialize_entry("value", &found.json(shape, false, false))?;
            map.serialize_entry("repairs", &found.repairs)?;
        }
        Err(failure) => {
            let (found, violations) = failure_parts(failure);
            let error = ErrorJson {
                error: &failure.error,
                original,
                violations,
            };
            map.serialize_entry("error", &error)?;
            if let Some(found) = found {
                map.serialize_entry("value", &found.json(shape, true, false))?;
            }
        }
    }
    Ok(())
}

/// What a failed reply holds, and the schema violations of its error when the first rejected
/// call is what failed it.
fn failure_parts(failure: &Failure) -> (Option<&Extracted>, &[Violation]) {
    let found = failure.extracted.as_deref();
    let violations = found
        .and_then(|f| f.rejected.first())
        .filter(|r| r.error == failure.error)
        .map_or(&[][..], |r| &r.violations[..]);
    (found, violations)
}
