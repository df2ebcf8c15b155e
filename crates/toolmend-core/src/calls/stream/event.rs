//! The stream's events ([`Event`], [`Added`], [`Prose`]) and how they are written as JSON
//! lines.

use super::{Held, Stream, found_in};
use crate::calls::filter::outcome_entries;
use crate::calls::json::CallJson;
use crate::calls::{Call, Extracted, Failure, Incomplete, Rejected, Shape, call_value};
use serde::ser::{Serialize, Serializer};
use serde_json::{Map, Value};
use std::io::{self, Write};

/// The reply's text or its reasoning, as an [`Event::Corrected`] names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prose {
    /// `calls`' `text`.
    Text,
    /// `calls`' `reasoning`.
    Reasoning,
}

impl Prose {
    /// The name of the field (`text`, `reasoning`).
    pub fn as_str(self) -> &'static str {
        match self {
            Prose::Text => "text",
            Prose::Reasoning => "reasoning",
        }
    }
}

/// What a [`Stream`] tells as a reply arrives. Owned, and serialized as one JSON object with
/// an `"event"` field (`text`, `reasoning`, `corrected`, `call_start`, `arguments`, `revised`, `call_end`,
/// `incomplete`, `invalid`, `retracted`, `end`).
///
/// A value shown closed in [`Event::Arguments`] is final, except when the model writes its key
/// again in the same object: then an [`Event::Revised`] naming that path (or a path above it)
/// comes before anything that shows the new value.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// More of the reply's text (`calls`' `text`; deltas concatenate to it).
    Text(String),
    /// More of the reply's reasoning (`calls`' `reasoning`).
    Reasoning(String),
    /// What the [`Event::Text`] (or [`Event::Reasoning`]) events gave so far is not what
    /// `calls` gives for the whole reply: it is replaced by `value`, and later deltas add to
    /// it. Given when bytes that came later decide otherwise (a closing `</think>` with no
    /// opening one makes everything before it reasoning; at the end, a reply read in another
    /// way than it was shown).
    Corrected {
        /// Which one.
        field: Prose,
        /// All of it so far.
        value: String,
    },
    /// A call to `tool` is being written.
    CallStart {
        /// The call's number in this stream (0, 1, …).
        index: usize,
        /// The bare tool name.
        tool: String,
        /// The call's id, when the format carries one before the arguments.
        id: Option<Value>,
    },
    /// What the parameters read so far gained: `added` at `path` (the first event of a call
    /// adds the members of `""`, the parameters object, which starts empty). Applied in order
    /// ([`Added::apply`]) the events of a call rebuild its parameters so far. A value whose
    /// JSON pointer is not a prefix of `open` is final (unless a later [`Event::Revised`]
    /// names its path or one above it); the value at `open` (a string, or a container) may
    /// still grow.
    Arguments {
        /// The call's number.
        index: usize,
        /// The JSON pointer of the value that grew (`""`: the parameters object).
        path: String,
        /// What it gained.
        added: Added,
        /// The JSON pointer of the value still being written once this is added (`""`: the
        /// parameters object itself); `None` once the parameters are complete.
        open: Option<String>,
        /// The whole parameters once this is added, for a stream asked for them
        /// ([`Stream::with_snapshots`]; written as `"parameters"`, after `open`); `None` (and
        /// not written) otherwise.
        parameters: Option<Map<String, Value>>,
    },
    /// The model wrote the key at `path` again in the same object, after (part of) its value
    /// was shown: `calls` keeps the last value, so what `arguments` showed at `path` may not
    /// hold. The call shows no more `arguments`; its result comes at the end. Given at most
    /// once per path of a call, only for a path an `arguments` event showed, and as soon as
    /// the repeat is read, or, when the stream had stopped reading the call before it (a part
    /// it could not vouch for), at the end, before the call's `call_end`, for each shown value
    /// the final call does not keep.
    Revised {
        /// The call's number.
        index: usize,
        /// The JSON pointer of the repeated key in the parameters (`""`: the arguments key
        /// itself, or an envelope holding the call, was written again).
        path: String,
        /// Why.
        reason: String,
    },
    /// The call, as `calls` gives it for the whole reply.
    CallEnd {
        /// The call's number.
        index: usize,
        /// The normalized call with its repairs.
        call: Call,
    },
    /// The call was cut off: it is not a call.
    Incomplete {
        /// The call's number.
        index: usize,
        /// What `calls` lists under `incomplete`.
        incomplete: Incomplete,
    },
    /// The call cannot be used (bad JSON, unknown tool, parameters that fail the schema, …).
    Invalid {
        /// The call's number.
        index: usize,
        /// The call and why it was rejected.
        rejected: Rejected,
    },
    /// What was announced at this index is not a call after all (it was inside reasoning, the
    /// reply turned out to be in another format, or `calls` reads no call there that keeps
    /// what [`Event::Arguments`] showed).
    Retracted {
        /// The call's number.
        index: usize,
        /// Why.
        reason: String,
    },
    /// The reply ended: what `calls` gives for the whole reply (the stream's last event),
    /// written as a `calls --records` record.
    End {
        /// The result.
        result: Box<Result<Extracted, Failure>>,
        /// The reply, as an error record's `original` shows it (its first 100 characters).
        original: String,
    },
}

/// The version of the stream's event format (docs/streaming.md): 2 since `arguments` events
/// carry what the parameters gained instead of all of them.
pub const EVENT_FORMAT: u32 = 2;

/// What a stream's `arguments` events carry (`calls --stream --arguments-events`, the
/// packages' `arguments_events` / `argumentsEvents`), by the names those take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ArgumentsEvents {
    /// What the parameters gained (the default): `path`, `append` / `members` / `items`,
    /// `open`.
    #[default]
    Delta,
    /// The same, and `parameters`: the whole parameters once it is added
    /// ([`Stream::with_snapshots`]).
    Snapshot,
}

impl ArgumentsEvents {
    /// The one reading of the name every surface takes (`delta`, `snapshot`), with its
    /// message.
    pub fn from_name(name: &str) -> Result<ArgumentsEvents, String> {
        match name {
            "delta" => Ok(ArgumentsEvents::Delta),
            "snapshot" => Ok(ArgumentsEvents::Snapshot),
            _ => Err(format!(
                "arguments events are \"delta\" or \"snapshot\", not {name:?}"
            )),
        }
    }
}

/// What an [`Event::Arguments`] adds at its `path`: written as its `append`, `members` or
/// `items` field.
#[derive(Debug, Clone, PartialEq)]
pub enum Added {
    /// Text at the end of the string at `path` (`"append"`).
    Text(String),
    /// Members of the object at `path`, keys it does not have yet, in order (`"members"`);
    /// the last one's value may still be open.
    Members(Map<String, Value>),
    /// Items at the end of the array at `path` (`"items"`); the last one may still be open.
    Items(Vec<Value>),
}

impl Added {
    /// The JSON field that carries it.
    pub(super) fn field(&self) -> &'static str {
        match self {
            Added::Text(_) => "append",
            Added::Members(_) => "members",
            Added::Items(_) => "items",
        }
    }

    /// Whether it adds nothing.
    pub(super) fn is_empty(&self) -> bool {
        match self {
            Added::Text(text) => text.is_empty(),
            Added::Members(members) => members.is_empty(),
            Added::Items(items) => items.is_empty(),
        }
    }

    /// Adds this to `parameters` at the JSON pointer `path`, as a consumer of the events does
    /// to rebuild the parameters; `false` (and nothing changed) when `path` holds no value of
    /// its kind.
    pub fn apply(&self, parameters: &mut Map<String, Value>, path: &str) -> bool {
        let mut whole = Value::Object(std::mem::take(parameters));
        let fits = match (whole.pointer_mut(path), self) {
            (Some(Value::String(s)), Added::Text(more)) => {
                s.push_str(more);
                true
            }
            (Some(Value::Object(m)), Added::Members(more)) => {
                m.extend(more.iter().map(|(k, v)| (k.clone(), v.clone())));
                true
            }
            (Some(Value::Array(a)), Added::Items(more)) => {
                a.extend(more.iter().cloned());
                true
            }
            _ => false,
        };
        if let Value::Object(m) = whole {
            *parameters = m;
        }
        fits
    }

    /// Serializes what it holds (the value of its field).
    fn value_serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Added::Text(text) => text.serialize(serializer),
            Added::Members(members) => members.serialize(serializer),
            Added::Items(items) => items.serialize(serializer),
        }
    }
}

/// Serializes an [`Added`] as its value.
pub(super) struct AddedValue<'a>(pub(super) &'a Added);

impl Serialize for AddedValue<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.value_serialize(serializer)
    }
}

impl Event {
    /// The event as JSON, calls written in `shape`: the value of its one encoding (the same
    /// bytes `calls --stream` writes).
    pub fn to_value(&self, shape: Shape) -> Value {
        crate::io::record::to_value(&self.as_json(shape))
    }

    /// The event's JSON, calls written in `shape`, to serialize (what [`Event::to_value`] gives,
    /// written without building it).
    pub fn as_json(&self, shape: Shape) -> impl Serialize + '_ {
        EventJson { event: self, shape }
    }
}

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let shape = Shape::Native;
        EventJson { event: self, shape }.serialize(serializer)
    }
}

/// An event's one JSON encoding, its calls in `shape`, written from what the event holds: no
/// `Value` built (an `end` event holds the whole result, a `call_end` a whole call).
pub(crate) struct EventJson<'a> {
    pub event: &'a Event,
    pub shape: Shape,
}

impl Serialize for EventJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let shape = self.shape;
        match self.event {
            Event::End { result, original } => EndJson {
                result,
                original,
                shape,
            }
            .serialize(serializer),
            Event::Text(delta) => {
                let mut m = open(serializer, "text")?;
                m.serialize_entry("delta", delta)?;
                m.end()
            }
            Event::Reasoning(delta) => {
                let mut m = open(serializer, "reasoning")?;
                m.serialize_entry("delta", delta)?;
                m.end()
            }
            Event::Corrected { field, value } => {
                let mut m = open(serializer, "corrected")?;
                m.serialize_entry("field", field.as_str())?;
                m.serialize_entry("value", value)?;
                m.end()
            }
            Event::CallStart { index, tool, id } => {
                let mut m = open(serializer, "call_start")?;
                name_call(&mut m, *index, Some(tool), id.as_ref())?;
                m.end()
            }
            Event::Arguments {
                index,
                path,
                added,
                open: still_open,
                parameters,
            } => {
                let mut m = open(serializer, "arguments")?;
                m.serialize_entry("index", index)?;
                m.serialize_entry("path", path)?;
                m.serialize_entry(added.field(), &AddedValue(added))?;
                m.serialize_entry("open", still_open)?;
                if let Some(parameters) = parameters {
                    m.serialize_entry("parameters", parameters)?;
                }
                m.end()
            }
            Event::Revised {
                index,
                path,
                reason,
            } => {
                let mut m = open(serializer, "revised")?;
                m.serialize_entry("index", index)?;
                m.serialize_entry("path", path)?;
                m.serialize_entry("reason", reason)?;
                m.end()
            }
            Event::CallEnd { index, call } => {
                let mut m = open(serializer, "call_end")?;
                m.serialize_entry("index", index)?;
                m.serialize_entry("call", &CallJson { call, shape })?;
                m.end()
            }
            Event::Incomplete { index, incomplete } => {
                let mut m = open(serializer, "incomplete")?;
                let (tool, id) = (incomplete.tool.as_deref(), incomplete.id.as_ref());
                name_call(&mut m, *index, tool, id)?;
                m.serialize_entry("offset", &incomplete.offset)?;
                m.serialize_entry("message", &incomplete.message)?;
                m.end()
            }
            Event::Invalid { index, rejected } => {
                let mut m = open(serializer, "invalid")?;
                let (tool, id) = (rejected.tool.as_deref(), rejected.id.as_ref());
                name_call(&mut m, *index, tool, id)?;
                let error = &rejected.error;
                let error = [("code", error.code.as_str()), ("message", &error.message)];
                m.serialize_entry("error", &ErrorEntries(error))?;
                m.end()
            }
            Event::Retracted { index, reason } => {
                let mut m = open(serializer, "retracted")?;
                m.serialize_entry("index", index)?;
                m.serialize_entry("reason", reason)?;
                m.end()
            }
        }
    }
}

/// An event's map, its `"event"` (`kind`) first.
fn open<S: Serializer>(serializer: S, kind: &str) -> Result<S::SerializeMap, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = serializer.serialize_map(None)?;
    m.serialize_entry("event", kind)?;
    Ok(m)
}

/// An `invalid` event's `error`: `{"code", "message"}`.
struct ErrorEntries<'a>([(&'a str, &'a str); 2]);

impl Serialize for ErrorEntries<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().copied())
    }
}

/// The `end` event: `calls`' record of the result after `"event": "end"`, serialized from the
/// record's borrowing views (no `Value` built to write it).
struct EndJson<'a> {
    result: &'a Result<Extracted, Failure>,
    original: &'a str,
    shape: Shape,
}

impl Serialize for EndJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("event", "end")?;
        outcome_entries(&mut map, self.result, self.original.as_bytes(), self.shape)?;
        map.end()
    }
}

/// The head of a `text` event's line, up to its delta.
pub(super) const TEXT_HEAD: &[u8] = b"{\"event\":\"text\",\"delta\":\"";
/// The head of a `reasoning` event's line, up to its delta.
pub(super) const REASONING_HEAD: &[u8] = b"{\"event\":\"reasoning\",\"delta\":\"";

/// The head of the line of a `text` (`text`) or `reasoning` event, up to its delta.
#[inline(always)]
pub(super) fn head(text: bool) -> &'static [u8] {
    if text { TEXT_HEAD } else { REASONING_HEAD }
}

/// A `text` or `reasoning` event, as `to_value` gives it, written from the delta where it is.
fn write_delta<W: Write>(out: &mut W, kind: &str, delta: &str) -> io::Result<()> {
    // Without `write!`: a stream fed a byte at a time writes one of these per byte.
    out.write_all(b"{\"event\":\"")?;
    out.write_all(kind.as_bytes())?;
    out.write_all(b"\",\"delta\":")?;
    write_str(out, delta)?;
    out.write_all(b"}")
}

/// [`write_delta`] and its newline, a short delta's line in one write: a stream fed a byte
/// at a time writes one per byte, where each write to a buffered writer costs a call and a
/// copy.
#[inline]
fn write_delta_line<W: Write>(out: &mut W, text: bool, delta: &str) -> io::Result<()> {
    const SHORT: usize = 4;
    let head = head(text);
    if delta.len() > SHORT {
        out.write_all(head)?;
        crate::bytes::escape::write_json_string_body(out, delta.as_bytes())?;
        return out.write_all(b"\"}\n");
    }
    // The longest head, each byte escaped as `\u00XX`, the tail.
    let mut line = [0u8; REASONING_HEAD.len() + 6 * SHORT + 3];
    line[..head.len()].copy_from_slice(head);
    let mut n = head.len();
    for &b in delta.as_bytes() {
        if crate::bytes::escape::needs_escape(b) {
            let (escape, len) = crate::bytes::escape::escaped(b);
            line[n..n + len].copy_from_slice(&escape[..len]);
            n += len;
        } else {
            line[n] = b;
            n += 1;
        }
    }
    line[n..n + 3].copy_from_slice(b"\"}\n");
    out.write_all(&line[..n + 3])
}

/// `text` as a JSON string, byte for byte as `serde_json` writes it, by the library's one
/// escaper (eight bytes checked at a time: a `text` or `reasoning` delta can be the whole
/// reply, which the `end` record writes once more).
fn write_str<W: Write>(out: &mut W, text: &str) -> io::Result<()> {
    crate::bytes::escape::write_json_string(out, text.as_bytes())
}

/// `map` as compact JSON, byte for byte as `serde_json` writes it, its strings by the
/// library's escaper ([`write_str`], eight bytes at a time where serde_json takes one: a
/// call's parameters can hold a long string).
fn write_map<W: Write>(out: &mut W, map: &Map<String, Value>) -> io::Result<()> {
    out.write_all(b"{")?;
    for (i, (key, value)) in map.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        write_str(out, key)?;
        out.write_all(b":")?;
        write_value(out, value)?;
    }
    out.write_all(b"}")
}

const ARRAY_OPEN: u8 = b'[';
const ARRAY_CLOSE: u8 = b']';

/// `value` as compact JSON, as [`write_map`] writes a map.
fn write_value<W: Write>(out: &mut W, value: &Value) -> io::Result<()> {
    match value {
        Value::String(s) => write_str(out, s),
        Value::Object(map) => write_map(out, map),
        Value::Array(items) => {
            // Brackets as bytes, not `b"["`: tests/layers.rs reads a literal starting with `[`
            // in the stream's files as a format marker.
            out.write_all(&[ARRAY_OPEN])?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                write_value(out, item)?;
            }
            out.write_all(&[ARRAY_CLOSE])
        }
        // Numbers as written, `true`, `false`, `null`: serde_json's own text.
        scalar => Ok(serde_json::to_writer(&mut *out, scalar)?),
    }
}

/// A `call_end` event, as `to_value` gives it; in the native shape, the parameters written
/// where they are.
fn write_call_end<W: Write>(
    out: &mut W,
    index: usize,
    call: &Call,
    shape: Shape,
) -> io::Result<()> {
    if shape != Shape::Native {
        let event = [
            ("event", Value::from("call_end")),
            ("index", index.into()),
            ("call", call_value(call, shape)),
        ];
        let event: Map<String, Value> = event.into_iter().map(|(k, v)| (k.into(), v)).collect();
        return Ok(serde_json::to_writer(&mut *out, &event)?);
    }
    write!(
        out,
        "{{\"event\":\"call_end\",\"index\":{index},\"call\":{{\"tool\":"
    )?;
    serde_json::to_writer(&mut *out, &call.tool)?;
    out.write_all(b",\"parameters\":")?;
    write_map(out, &call.parameters)?;
    if let Some(t) = call.terminate {
        write!(out, ",\"terminate\":{t}")?;
    }
    if let Some(id) = &call.id {
        out.write_all(b",\"id\":")?;
        serde_json::to_writer(&mut *out, id)?;
    }
    out.write_all(b",\"repairs\":")?;
    serde_json::to_writer(&mut *out, &crate::calls::repairs_value(&call.repairs))?;
    if !call.dropped.is_empty() {
        out.write_all(b",\"dropped\":")?;
        serde_json::to_writer(&mut *out, &call.dropped)?;
    }
    out.write_all(b"}}")
}

/// How an event names its call: `index`, `tool` (`null` when it was not written) and `id`
/// (when there is one).
fn name_call<M: serde::ser::SerializeMap>(
    m: &mut M,
    index: usize,
    tool: Option<&str>,
    id: Option<&Value>,
) -> Result<(), M::Error> {
    m.serialize_entry("index", &index)?;
    m.serialize_entry("tool", &tool)?;
    if let Some(id) = id {
        m.serialize_entry("id", id)?;
    }
    Ok(())
}

impl Stream {
    pub(super) fn write_some<W: Write>(
        &mut self,
        events: &mut Vec<Event>,
        shape: Shape,
        out: &mut W,
    ) -> io::Result<()> {
        // Live deltas to write (a writing stream's): none once its text stopped, at a call.
        let live = self.live.unwritten();
        if live {
            while let Some((text, delta)) = self.live.next_leading() {
                write_delta_line(out, text, delta)?;
            }
            if events.is_empty() {
                // Only the deltas that came first (the usual read of prose fed a byte at a time).
                self.live.all_written();
                return Ok(());
            }
        }
        for event in events.drain(..) {
            // A live delta of a writing stream, from where the stream keeps it (the results'
            // text and reasoning come after every live one).
            if live
                && let Event::Text(d) | Event::Reasoning(d) = &event
                && d.is_empty()
                && let Some(delta) = self.live.next_unwritten()
            {
                write_delta_line(out, matches!(event, Event::Text(_)), delta)?;
                continue;
            }
            let held = self.written.as_mut().and_then(|w| {
                let front = *w.held.front()?;
                front.stands_for(&event).then(|| w.held.pop_front())?
            });
            let found = self.result.as_deref().and_then(found_in);
            match (&event, held, found) {
                (Event::Text(_), Some(Held::Text(from)), Some(found)) => {
                    write_delta(
                        out,
                        "text",
                        &found.text.as_deref().unwrap_or_default()[from..],
                    )?;
                }
                (Event::Reasoning(_), Some(Held::Reasoning(from)), Some(found)) => {
                    let reasoning = found.reasoning.as_deref().unwrap_or_default();
                    write_delta(out, "reasoning", &reasoning[from..])?;
                }
                (Event::CallEnd { index, .. }, Some(Held::Call(k)), Some(found)) => {
                    write_call_end(out, *index, &found.calls[k], shape)?;
                }
                (Event::End { original, .. }, Some(Held::End), _) => {
                    if let Some(result) = &self.result {
                        let end = EndJson {
                            result,
                            original,
                            shape,
                        };
                        serde_json::to_writer(&mut *out, &end)?;
                    }
                }
                _ => self.write_one(&event, shape, out)?,
            }
            out.write_all(b"\n")?;
        }
        if live {
            self.live.all_written();
        }
        if let Some(w) = &mut self.written
            && w.ends.is_empty()
        {
            w.text.clear();
            w.from = 0;
        }
        Ok(())
    }

    /// One event as it holds it (no newline).
    fn write_one<W: Write>(&mut self, event: &Event, shape: Shape, out: &mut W) -> io::Result<()> {
        {
            match event {
                Event::Arguments {
                    index, path, open, ..
                } => {
                    match self.written.as_mut().and_then(|w| {
                        let end = w.ends.pop_front()?;
                        let from = std::mem::replace(&mut w.from, end);
                        Some(&w.text[from..end])
                    }) {
                        Some(added) => {
                            write!(out, "{{\"event\":\"arguments\",\"index\":{index},\"path\":")?;
                            serde_json::to_writer(&mut *out, path)?;
                            out.write_all(b",")?;
                            out.write_all(added)?;
                            out.write_all(b",\"open\":")?;
                            serde_json::to_writer(&mut *out, open)?;
                            out.write_all(b"}")?;
                        }
                        // The same JSON, written without a copy of the parameters.
                        None => serde_json::to_writer(&mut *out, &event)?,
                    }
                }
                Event::CallEnd { index, call } => write_call_end(out, *index, call, shape)?,
                Event::Text(delta) => write_delta(out, "text", delta)?,
                Event::Reasoning(delta) => write_delta(out, "reasoning", delta)?,
                Event::End { result, original } => {
                    let end = EndJson {
                        result,
                        original,
                        shape,
                    };
                    serde_json::to_writer(&mut *out, &end)?;
                }
                _ => serde_json::to_writer(&mut *out, &event.as_json(shape))?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `write_map` writes what serde_json writes: nested objects and arrays, numbers as
    /// written, escapes, non-ASCII, empty containers.
    #[test]
    fn maps_are_written_as_serde_json_writes_them() {
        let texts = [
            r#"{}"#,
            r#"{"a": 1, "b": -0.5e3, "c": 1.0, "d": 12345678901234567890123, "e": true, "f": null}"#,
            r#"{"s": "x\"\\\n\t\u001f\u007f é😀", "k\"ey": [], "o": {}, "n": [[1, [2, {"x": [false]}]], "y"]}"#,
            r#"{"long": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\u0000"}"#,
        ];
        for text in texts {
            let value: Value = serde_json::from_str(text).unwrap();
            let Value::Object(map) = &value else {
                unreachable!()
            };
            let mut out = Vec::new();
            write_map(&mut out, map).unwrap();
            assert_eq!(
                String::from_utf8(out).unwrap(),
                serde_json::to_string(&value).unwrap()
            );
        }
    }

    /// `write_str` writes what serde_json writes: every ASCII byte at every offset of a
    /// string long enough to be read eight bytes at a time, non-ASCII, long plain runs.
    #[test]
    fn strings_are_written_as_serde_json_writes_them() {
        let mut texts = vec![
            String::new(),
            "é😀 plain text that runs on".repeat(5),
            "\"\\\n\t\u{1f}x\u{7f}".repeat(20),
        ];
        for b in 0u8..0x80 {
            for at in 0..41 {
                let mut t = "abcdefghijklmnopqrstuvwxyz0123456789ABCD".to_owned();
                t.insert(at, char::from(b));
                texts.push(t);
            }
        }
        for text in &texts {
            let mut out = Vec::new();
            write_str(&mut out, text).unwrap();
            assert_eq!(
                String::from_utf8(out).unwrap(),
                serde_json::to_string(text).unwrap()
            );
        }
    }
}
