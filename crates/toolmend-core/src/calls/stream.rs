//! A reply read as it arrives: [`Stream`] is fed chunks of any size and yields [`Event`]s.
//!
//! Three layers:
//! - **Progress** (`call_start`, `arguments`, `retracted` for a start that was not a call
//!   after all, and `revised` for a key written again): one scan over the bytes as they come
//!   finds the call markers of every format family and reads the JSON after them
//!   incrementally ([`super::partial`]). A tool name is announced once it is written in full;
//!   partial parameters hold only what no later byte can change, and say which path is still
//!   open. The one exception is a key the model writes twice in an object: `calls` keeps its
//!   last value, and no stream can know that a key will come again, so a `revised` event
//!   names the path whose shown value no longer holds (as soon as the repeat is read, or at
//!   the end when the stream had stopped reading the call before it).
//! - **Text and reasoning** (`text`, `reasoning`, `corrected`) as they arrive, holding back
//!   only what may still start a marker ([`live`]); what the whole reply decides otherwise is
//!   replaced by a `corrected` event, so that the events, applied, give `calls`' text and
//!   reasoning.
//! - **Results** (`call_end`, `incomplete`, `invalid`, `end`, and the rest of the text and
//!   reasoning) come from the same extractor as `calls` ([`super::extract`]), so for any
//!   chunking they equal what `calls` gives for the whole reply. What `calls` decides about a
//!   reply can depend on bytes that have not arrived yet (a closing `</think>` with no opening
//!   one makes everything before it reasoning; the format chosen is the most specific one that
//!   finds a call anywhere), so results are given when the reply ends, with [`Stream::finish`].
//!
//! Each `call_start` index ends with exactly one of `call_end`, `incomplete`, `invalid` or
//! `retracted`; `call_end` events come in the order of `calls`' list.
//!
//! ```
//! use toolmend_core::calls::{Added, CallOptions, Event, Stream};
//!
//! let mut stream = Stream::new(CallOptions::default());
//! let mut events = Vec::new();
//! for chunk in ["Checking.<tool_", "call>{\"name\": \"get_weather\", \"argu", "ments\": {\"city\": \"Os", "lo\"}}</tool_call>"] {
//!     events.extend(stream.feed(chunk));
//! }
//! // The text as it came, then the call.
//! assert!(matches!(&events[0], Event::Text(delta) if delta == "Checking."));
//! assert!(matches!(&events[1], Event::CallStart { index: 0, tool, .. } if tool == "get_weather"));
//! // What the parameters gained: here the first of the call, its members so far.
//! assert!(matches!(&events[2], Event::Arguments { path, added: Added::Members(members), open: Some(open), .. }
//!     if path.is_empty() && members["city"] == "Os" && open == "/city"));
//! events.extend(stream.finish());
//! assert!(matches!(&events[events.len() - 2], Event::CallEnd { index: 0, call } if call.parameters["city"] == "Oslo"));
//! ```

mod live;

use std::sync::Arc;

use live::Live;
use serde::ser::{Serialize, Serializer};
use serde_json::{Map, Value};

use super::filter::outcome_record;
use super::formats::json::{ARG_KEYS, NAME_KEYS, WRAPPERS};
use super::formats::mistral::{ARROWS, ARROWS_TEXT, MISTRAL_OPEN, MISTRAL_TAGS};
use super::formats::{Body, Kind, TABLE, name_follows_open};
use super::partial::{Frame, Reader, Seg, Step, pointer};
use super::scan::{REASONING, bare_name, find_bytes, is_name_byte};
use super::{Call, CallOptions, Extracted, Failure, Incomplete, Rejected, Shape, call_value};
use crate::io::record::original_text;
use crate::schema::Partial;
use crate::tools::Tools;
use crate::{Repair, RepairKind};
use std::collections::VecDeque;
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
    fn field(&self) -> &'static str {
        match self {
            Added::Text(_) => "append",
            Added::Members(_) => "members",
            Added::Items(_) => "items",
        }
    }

    /// Whether it adds nothing.
    fn is_empty(&self) -> bool {
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

    /// What it holds as a JSON value.
    fn to_value(&self) -> Value {
        match self {
            Added::Text(text) => text.clone().into(),
            Added::Members(members) => Value::Object(members.clone()),
            Added::Items(items) => Value::Array(items.clone()),
        }
    }
}

/// Serializes an [`Added`] as its value.
struct AddedValue<'a>(&'a Added);

impl Serialize for AddedValue<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.value_serialize(serializer)
    }
}

impl Event {
    /// The event as JSON, calls written in `shape`.
    pub fn to_value(&self, shape: Shape) -> Value {
        let mut m = Map::new();
        let kind = match self {
            Event::Text(delta) => {
                m.insert("delta".into(), delta.clone().into());
                "text"
            }
            Event::Reasoning(delta) => {
                m.insert("delta".into(), delta.clone().into());
                "reasoning"
            }
            Event::Corrected { field, value } => {
                m.insert("field".into(), field.as_str().into());
                m.insert("value".into(), value.clone().into());
                "corrected"
            }
            Event::CallStart { index, tool, id } => {
                name_call(&mut m, *index, Some(tool), id.as_ref());
                "call_start"
            }
            Event::Arguments {
                index,
                path,
                added,
                open,
            } => {
                m.insert("index".into(), (*index).into());
                m.insert("path".into(), path.clone().into());
                m.insert(added.field().into(), added.to_value());
                m.insert(
                    "open".into(),
                    open.clone().map_or(Value::Null, Value::String),
                );
                "arguments"
            }
            Event::Revised {
                index,
                path,
                reason,
            } => {
                m.insert("index".into(), (*index).into());
                m.insert("path".into(), path.clone().into());
                m.insert("reason".into(), reason.clone().into());
                "revised"
            }
            Event::CallEnd { index, call } => {
                m.insert("index".into(), (*index).into());
                m.insert("call".into(), call_value(call, shape));
                "call_end"
            }
            Event::Incomplete { index, incomplete } => {
                let (tool, id) = (incomplete.tool.as_deref(), incomplete.id.as_ref());
                name_call(&mut m, *index, tool, id);
                m.insert("offset".into(), incomplete.offset.into());
                m.insert("message".into(), incomplete.message.clone().into());
                "incomplete"
            }
            Event::Invalid { index, rejected } => {
                let (tool, id) = (rejected.tool.as_deref(), rejected.id.as_ref());
                name_call(&mut m, *index, tool, id);
                let mut e = Map::new();
                e.insert("code".into(), rejected.error.code.as_str().into());
                e.insert("message".into(), rejected.error.message.clone().into());
                m.insert("error".into(), Value::Object(e));
                "invalid"
            }
            Event::Retracted { index, reason } => {
                m.insert("index".into(), (*index).into());
                m.insert("reason".into(), reason.clone().into());
                "retracted"
            }
            Event::End { result, original } => return end_value(result, original, shape),
        };
        let mut out = Map::new();
        out.insert("event".into(), kind.into());
        out.extend(m);
        Value::Object(out)
    }
}

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // The frequent event is written from what it holds (no copy of the parameters); the
        // fields in `to_value`'s order.
        if let Event::Arguments {
            index,
            path,
            added,
            open,
        } = self
        {
            use serde::ser::SerializeMap;
            let mut m = serializer.serialize_map(Some(5))?;
            m.serialize_entry("event", "arguments")?;
            m.serialize_entry("index", index)?;
            m.serialize_entry("path", path)?;
            m.serialize_entry(added.field(), &AddedValue(added))?;
            m.serialize_entry("open", open)?;
            return m.end();
        }
        self.to_value(Shape::Native).serialize(serializer)
    }
}

/// The `end` event: `calls`' record of the result.
fn end_value(result: &Result<Extracted, Failure>, original: &str, shape: Shape) -> Value {
    let record = outcome_record(result, Map::new(), original.as_bytes(), shape);
    let mut out = Map::new();
    out.insert("event".into(), "end".into());
    out.extend(record);
    Value::Object(out)
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

/// `text` as a JSON string, byte for byte as `serde_json` writes it, by the library's one
/// escaper (eight bytes checked at a time: a `text` or `reasoning` delta can be the whole
/// reply, which the `end` record writes once more).
fn write_str<W: Write>(out: &mut W, text: &str) -> io::Result<()> {
    crate::bytes::escape::write_json_string(out, text.as_bytes())
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
    serde_json::to_writer(&mut *out, &call.parameters)?;
    if let Some(t) = call.terminate {
        write!(out, ",\"terminate\":{t}")?;
    }
    if let Some(id) = &call.id {
        out.write_all(b",\"id\":")?;
        serde_json::to_writer(&mut *out, id)?;
    }
    out.write_all(b",\"repairs\":")?;
    serde_json::to_writer(&mut *out, &super::repairs_value(&call.repairs))?;
    if !call.dropped.is_empty() {
        out.write_all(b",\"dropped\":")?;
        serde_json::to_writer(&mut *out, &call.dropped)?;
    }
    out.write_all(b"}}")
}

/// What a marker starts.
#[derive(Debug, Clone, Copy)]
enum Action {
    /// A reasoning block of this kind (index in `REASONING`).
    Think(usize),
    /// The close of a reasoning block.
    Unthink,
    /// A block or prefix format: its body follows.
    Body(Body),
    /// `open NAME sep ARGS` (Kimi K2, DeepSeek).
    Tagged(&'static str),
    /// `[TOOL_CALLS]`.
    Mistral,
    /// `<function=NAME>`, the arguments then running to the block's close.
    Function(&'static str),
    /// `>>>NAME\n`.
    Arrows,
}

/// The markers a stream looks for, longest first, and which bytes can start one.
struct Markers {
    list: Vec<(&'static [u8], Action)>,
    first: [bool; 256],
    markerless: bool,
    /// Bytes that start nothing in text (neither a marker nor, marker-less, JSON).
    plain: [bool; 256],
}

impl Markers {
    fn new(format: Option<&str>) -> Markers {
        let forced = format.filter(|f| *f != "auto");
        let mut list: Vec<(&'static [u8], Action)> = Vec::new();
        for (i, (open, close)) in REASONING.iter().enumerate() {
            list.push((open.as_bytes(), Action::Think(i)));
            list.push((close.as_bytes(), Action::Unthink));
        }
        let mut markerless = false;
        for spec in TABLE {
            if forced.is_some_and(|f| f != spec.name) || (forced.is_none() && !spec.in_auto()) {
                continue;
            }
            let mut add = |marker: &'static str, action: Action| {
                if !list.iter().any(|(m, _)| *m == marker.as_bytes()) {
                    list.push((marker.as_bytes(), action));
                }
            };
            match spec.kind {
                Kind::Block { open, close, body } => {
                    for marker in open {
                        if name_follows_open(marker) {
                            add(marker, Action::Function(close[0]));
                        } else {
                            add(marker, Action::Body(body));
                        }
                    }
                }
                Kind::Prefix { open, body, .. } => {
                    for marker in open {
                        add(marker, Action::Body(body));
                    }
                }
                Kind::Tagged {
                    open,
                    sep,
                    body: Body::Json { .. },
                    ..
                } => add(open, Action::Tagged(sep)),
                Kind::Mistral => add(MISTRAL_OPEN, Action::Mistral),
                Kind::Functionary32 => add(ARROWS, Action::Arrows),
                Kind::Json => markerless = true,
                _ => {}
            }
        }
        list.sort_by_key(|(m, _)| std::cmp::Reverse(m.len()));
        let mut first = [false; 256];
        for (m, _) in &list {
            first[m[0] as usize] = true;
        }
        let mut plain = [false; 256];
        for (b, plain) in plain.iter_mut().enumerate() {
            *plain = !(first[b] || (markerless && b == usize::from(b'{')));
        }
        Markers {
            list,
            first,
            markerless,
            plain,
        }
    }

    /// The marker at the start of `rest`: `Ok(Some)` when one is there in full, `Err` when
    /// `rest` may still become one.
    fn at(&self, rest: &[u8]) -> Result<Option<(usize, Action)>, ()> {
        sequence_at(&self.list, rest)
    }
}

/// Which of `list`'s byte sequences (longest first) is at the start of `rest`: `Ok(Some)` with
/// its length and tag when one is there in full, `Err` when `rest` may still become one (a
/// prefix of one, and no longer one whole), `Ok(None)` when none can.
fn sequence_at<M: AsRef<[u8]>, T: Copy>(
    list: &[(M, T)],
    rest: &[u8],
) -> Result<Option<(usize, T)>, ()> {
    let mut partial = false;
    for (m, tag) in list {
        let m = m.as_ref();
        // Compared a byte at a time: markers are short and most differ within a few
        // bytes (a call to memcmp per marker cost more, with the start of a marker
        // looked at again at every byte of a small chunk).
        let common = m.iter().zip(rest).take_while(|(a, b)| a == b).count();
        if common < m.len().min(rest.len()) {
            continue;
        }
        if rest.len() >= m.len() {
            return if partial {
                Err(())
            } else {
                Ok(Some((m.len(), *tag)))
            };
        }
        partial = true;
    }
    if partial { Err(()) } else { Ok(None) }
}

/// How the JSON after a marker is read.
#[derive(Debug, Clone, Copy)]
struct Ctx {
    /// Call objects (or lists of them) are read; `None`: the arguments of this slot.
    args_of: Option<usize>,
    /// Apertus: `{NAME: {args}}`.
    name_is_key: bool,
    /// Marker-less JSON: a call needs an argument key (or the `tool` envelope).
    strict: bool,
    /// More JSON values may follow in the body (`;`, `,` or nothing between).
    seq: bool,
    /// Where the block ends, to skip to when its JSON cannot be read.
    close: Option<&'static str>,
}

impl Ctx {
    /// One JSON value that holds whole calls (names and arguments); `strict` for marker-less
    /// JSON.
    fn whole_calls(strict: bool) -> Ctx {
        Ctx {
            args_of: None,
            name_is_key: false,
            strict,
            seq: false,
            close: None,
        }
    }
}

/// What the scan is in the middle of.
enum Mode {
    Text,
    /// Inside a reasoning block, until its close.
    Reasoning(&'static str),
    /// After a body marker: whitespace and a code fence before the JSON.
    Body {
        ctx: Ctx,
        ticks: u8,
        lang: bool,
    },
    /// A name being read after a marker.
    Head(Head),
    /// Reading JSON.
    Json(Box<CallReader>, Ctx),
    /// Skipping to the end of a block whose body could not be read.
    SkipTo(&'static str),
}

impl Mode {
    /// Reading JSON in this context.
    /// Reading JSON in this context, from offset `start` of the reply; the calls it finds get
    /// slots from `first_slot` on.
    fn json(ctx: Ctx, start: usize, first_slot: usize) -> Mode {
        Mode::Json(Box::new(CallReader::new(ctx, start, first_slot)), ctx)
    }
}

enum Head {
    /// `[TOOL_CALLS]`: whitespace, then JSON or `NAME[CALL_ID]id[ARGS]{…}`.
    Mistral {
        name: String,
        id: Option<String>,
        tag: Option<Vec<u8>>,
        in_id: bool,
        spaced: bool,
    },
    /// A name up to `end`: `<function=NAME>` (the arguments then end at `</function>`),
    /// `>>>NAME\n` (functionary, whose `>>>all` opens its text, not a call).
    Name {
        name: String,
        end: u8,
        close: Option<&'static str>,
        /// A name that is no call.
        not_a_call: Option<&'static str>,
    },
    /// `open HEAD sep`: the head, then (for `function`) the name on the next line.
    Tagged {
        sep: &'static str,
        head: Vec<u8>,
        matched: usize,
        line: Option<String>,
    },
}

/// Names are short; a longer run is not a name.
const MAX_NAME: usize = 256;

/// What a frame of a call reader holds.
#[derive(Debug, Clone, Copy)]
enum Role {
    /// A call object (the slot of its call).
    Call(usize),
    /// A list of calls.
    List,
    /// A call's arguments object.
    Args(usize),
    Other,
}

/// A call being read: its announced index and what was shown of its arguments.
#[derive(Debug, Default)]
struct Slot {
    index: Option<usize>,
    tool: Option<String>,
    /// The argument key in use; a second one makes the arguments ambiguous.
    args_key: Option<String>,
    /// Arguments given as a JSON string: read inside it (boxed: it is taken out of the slot
    /// and put back at every refresh).
    nested: Option<Box<Nested>>,
    /// Shown arguments could be contradicted: show no more.
    frozen: bool,
    /// Bytes of arguments read.
    args_bytes: usize,
    /// `args_bytes` when the partial arguments were last built (see [`due`]).
    tried_bytes: Option<usize>,
    /// The call object's size, and whether a key was pending, when it was last looked at
    /// (a call object only grows: the same size is the same object).
    looked: Option<(usize, bool)>,
    /// The [`weight`] of the parameters last shown.
    shown: Option<usize>,
    /// Where the parameters last shown as values were open (see [`growth_of`]).
    front: Option<Front>,
    /// The arguments were read to their end (the last `arguments` event was final).
    args_done: bool,
    /// The call's JSON was read to its end.
    closed: bool,
    /// `retracted` or a result was given.
    ended: bool,
    /// Where the arguments are, to read again what was shown of them.
    args_src: Option<ArgsSrc>,
    /// How much of the arguments the last `arguments` event showed.
    shown_at: Option<Shown>,
    /// The paths (in the parameters) `revised` events named.
    revised: Vec<Vec<Seg>>,
    strict: bool,
    name_is_key: bool,
    /// The tools whose schemas coerce the parameters (`None` without tools or with `strict`
    /// arguments, which are not coerced).
    tools: Option<Arc<Tools>>,
}

/// Where a call's arguments are: their path in the JSON the call is read from (the path of
/// its arguments key's value), and the offset of their first byte (`{`, or the opening quote
/// of arguments written as a JSON string) in the text that holds that JSON (the reply, or a
/// server call's arguments).
#[derive(Debug)]
struct ArgsSrc {
    path: Vec<Seg>,
    at: usize,
    string: bool,
}

/// The open path of the parameters an `arguments` event left, and the size of each value on
/// it (members of a container, bytes of a string), from the parameters object down: what the
/// next event adds to is found from it, without a copy of what was shown.
#[derive(Debug)]
struct Front {
    path: Vec<Seg>,
    sizes: Vec<usize>,
}

/// The size of an open value (`None`: a value that cannot be open).
fn open_size(value: &Value) -> Option<usize> {
    match value {
        Value::String(s) => Some(s.len()),
        Value::Object(m) => Some(m.len()),
        Value::Array(a) => Some(a.len()),
        _ => None,
    }
}

/// The value at `seg` of `parent` (an object or an array).
fn child<'a>(parent: &'a Value, seg: &Seg) -> Option<&'a Value> {
    match (parent, seg) {
        (Value::Object(m), Seg::Key(k)) => m.get(k),
        (Value::Array(a), Seg::Index(i)) => a.get(*i),
        _ => None,
    }
}

/// The [`Front`] of `args` open at the JSON pointer `open`.
fn front_of(args: &Map<String, Value>, open: &str) -> Option<Front> {
    let mut front = Front {
        path: Vec::new(),
        sizes: vec![args.len()],
    };
    let mut tokens = open.split('/').skip(1);
    let Some(first) = tokens.next() else {
        return Some(front);
    };
    let unescape = |t: &str| t.replace("~1", "/").replace("~0", "~");
    let key = unescape(first);
    let mut at = args.get(&key)?;
    front.path.push(Seg::Key(key));
    front.sizes.push(open_size(at)?);
    for token in tokens {
        let seg = match at {
            Value::Array(_) => Seg::Index(token.parse().ok()?),
            _ => Seg::Key(unescape(token)),
        };
        at = child(at, &seg)?;
        front.path.push(seg);
        front.sizes.push(open_size(at)?);
    }
    Some(front)
}

/// What `args` (the parameters now, open at `open`) gained since `front` (`None`: nothing was
/// shown): for each value open then, deepest first, its pointer and what it gained, and the
/// new front. `None` when `args` does not extend what was shown.
#[allow(clippy::type_complexity)]
fn growth_of(
    args: Map<String, Value>,
    open: Option<&str>,
    front: Option<&Front>,
) -> Option<(Vec<(String, Added)>, Option<Front>)> {
    let next = match open {
        Some(open) => Some(front_of(&args, open)?),
        None => None,
    };
    let Some(front) = front else {
        return Some((vec![(String::new(), Added::Members(args))], next));
    };
    let mut values = Vec::with_capacity(front.path.len());
    for (i, seg) in front.path.iter().enumerate() {
        let value = match i {
            0 => match seg {
                Seg::Key(k) => args.get(k)?,
                Seg::Index(_) => return None,
            },
            _ => child(values[i - 1], seg)?,
        };
        values.push(value);
    }
    let mut ops = Vec::new();
    for (i, &size) in front.sizes.iter().enumerate().rev() {
        let added = match i.checked_sub(1).map(|at| values[at]) {
            None => Added::Members(members_after(&args, size)?),
            Some(Value::Object(m)) => Added::Members(members_after(m, size)?),
            Some(Value::Array(a)) => Added::Items(a.get(size..)?.to_vec()),
            Some(Value::String(s)) if i == front.path.len() => {
                Added::Text(s.get(size..)?.to_owned())
            }
            Some(_) => return None,
        };
        if !added.is_empty() {
            ops.push((pointer(&front.path[..i]), added));
        }
    }
    Some((ops, next))
}

/// The members of `map` after its first `size`.
fn members_after(map: &Map<String, Value>, size: usize) -> Option<Map<String, Value>> {
    if map.len() < size {
        return None;
    }
    Some(
        map.iter()
            .skip(size)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    )
}

/// How much of a call's arguments an `arguments` event showed: the partial value after this
/// many bytes (after the `{`; of the string's text for arguments written as a string), or
/// the whole value.
#[derive(Debug, Clone, Copy)]
enum Shown {
    Part(usize),
    Whole,
}

#[derive(Debug)]
struct Nested {
    reader: Reader,
    fed: usize,
}

impl Nested {
    /// A reader of the arguments of `slot` written as a JSON string; writing, it keeps their
    /// text.
    fn new(slot: &Slot, written: &Option<Written>) -> Box<Nested> {
        let mut reader = Reader::new();
        if written.is_some() {
            reader.record(0, text_only(slot, written));
        }
        Box::new(Nested { reader, fed: 0 })
    }
}

/// The parameters object at `depth` of `reader` as it stands, and its open path.
fn object_snapshot(reader: &Reader, depth: usize) -> Option<(Map<String, Value>, Option<String>)> {
    match reader.snapshot(depth)? {
        (Value::Object(args), path) => Some((args, Some(pointer(&path)))),
        _ => None,
    }
}

/// JSON being read for calls.
struct CallReader {
    reader: Reader,
    roles: Vec<Role>,
    ctx: Ctx,
    /// Bytes read, for the size of arguments.
    read: usize,
    /// For each `Args` frame on the stack: `read` when it opened.
    args_from: Vec<usize>,
    /// How many announced calls were read to their end.
    closes: usize,
    /// The offset in its text (the reply, or a server call's arguments) of the first byte read.
    start: usize,
    /// The first slot of the calls it reads (with `ctx.args_of`, that one call's slot).
    first_slot: usize,
    /// While `read` is below this, a refresh would show nothing (see [`CallReader::quiet`]);
    /// set by each refresh, 0 (nothing known) once `push` opens or closes a frame.
    quiet_until: usize,
    /// The slot whose arguments, written as a JSON string, are the string open on top, read
    /// to its end by the slot's nested reader: found by the last refresh, forgotten by `push`
    /// (see [`CallReader::nested_byte`]).
    nested_at: Option<usize>,
}

/// A tool call a server parsed and streams in pieces (OpenAI `tool_calls[].function`,
/// Anthropic `tool_use` blocks).
struct ServerCall {
    key: usize,
    id: Option<String>,
    name: String,
    arguments: String,
    /// Its slot, once announced.
    slot: Option<usize>,
    reader: Option<CallReader>,
}

/// A reply read as it arrives (see the module documentation).
pub struct Stream {
    options: CallOptions,
    /// Calls and reasoning that came apart from the text: the reply is then the assistant
    /// message they make up with the text.
    server_calls: Vec<ServerCall>,
    server_reasoning: Option<String>,
    /// Why the output was cut, when the server's stop reason says it was.
    cut: Option<String>,
    markers: Markers,
    /// The text and reasoning shown as they arrive.
    live: Live,
    buf: String,
    pos: usize,
    mode: Mode,
    slots: Vec<Slot>,
    next_index: usize,
    /// An opening reasoning marker was seen (a closing one can no longer reach back).
    opened: bool,
    result: Option<Box<Result<Extracted, Failure>>>,
    /// Where each call read to its end ends in the reply.
    call_ends: Vec<usize>,
    /// Made by [`Stream::writing`]: the parameters' text of the `arguments` events not yet
    /// written.
    written: Option<Written>,
    /// Whether [`Stream::skim`] may read a chunk, and a refresh that would do nothing be
    /// left out (off only in tests, to compare).
    skims: bool,
}

/// What the `arguments` events given and not yet written added (their `append`, `members` or
/// `items` field, as JSON), in order.
#[derive(Default)]
struct Written {
    text: Vec<u8>,
    ends: VecDeque<usize>,
    from: usize,
    /// The results' events given and not yet written, in order: they are written from the
    /// stream's result, which they would otherwise each copy.
    held: VecDeque<Held>,
}

/// A result event of a writing stream, written from [`Stream::result`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Held {
    /// The text from this byte.
    Text(usize),
    /// The reasoning from this byte.
    Reasoning(usize),
    /// `calls[k]`.
    Call(usize),
    /// The `end` record.
    End,
}

impl Held {
    /// Whether `event` is the one this stands for.
    fn stands_for(self, event: &Event) -> bool {
        matches!(
            (self, event),
            // Live deltas are never empty: an empty one stands for the rest of the result.
            (Held::Text(_), Event::Text(d)) | (Held::Reasoning(_), Event::Reasoning(d)) if d.is_empty())
            || matches!(
                (self, event),
                (Held::Call(_), Event::CallEnd { .. }) | (Held::End, Event::End { .. })
            )
    }
}

/// What a result holds: the results of a failed reply too.
fn found_in(result: &Result<Extracted, Failure>) -> Option<&Extracted> {
    match result {
        Ok(found) => Some(found),
        Err(failure) => failure.extracted.as_deref(),
    }
}

impl Stream {
    /// A stream that reads one reply with these settings (those of [`super::extract`]).
    pub fn new(options: CallOptions) -> Stream {
        let markers = Markers::new(options.format.as_deref());
        let live = Live::new(&markers, &options);
        Stream {
            options,
            server_calls: Vec::new(),
            server_reasoning: None,
            cut: None,
            markers,
            live,
            buf: String::new(),
            pos: 0,
            mode: Mode::Text,
            slots: Vec::new(),
            next_index: 0,
            opened: false,
            result: None,
            call_ends: Vec::new(),
            written: None,
            skims: true,
        }
    }

    /// The options this stream reads with.
    pub(crate) fn options(&self) -> &CallOptions {
        &self.options
    }

    /// A stream whose events are written as JSON lines, as `calls --stream` writes them, with
    /// [`Stream::write_events`]. The parameters of its `arguments` events are written from
    /// the text of the JSON being read, kept as it grows, never built as values: an event
    /// costs a copy of its text. The results given at the end are written from
    /// [`Stream::result`], not copied into their events. In exchange, the events it gives
    /// carry empty values: [`Event::Arguments`] an empty `added`, [`Event::Text`] and
    /// [`Event::Reasoning`] an empty delta, [`Event::CallEnd`] an empty call and
    /// [`Event::End`] an empty result; the stream holds what they stand for until
    /// `write_events` writes them, so every event it gives must be written, in order.
    pub fn writing(options: CallOptions) -> Stream {
        let mut stream = Stream::new(options);
        stream.written = Some(Written::default());
        stream
    }

    /// Writes `events` (drained) as JSON lines, one object each, calls in `shape`: what
    /// `calls --stream` writes. For a stream made by [`Stream::writing`], the `arguments`
    /// events are written with the parameters it holds for them.
    #[inline]
    pub fn write_events<W: Write>(
        &mut self,
        events: &mut Vec<Event>,
        shape: Shape,
        out: &mut W,
    ) -> io::Result<()> {
        if events.is_empty() {
            return Ok(());
        }
        self.write_some(events, shape, out)
    }

    fn write_some<W: Write>(
        &mut self,
        events: &mut Vec<Event>,
        shape: Shape,
        out: &mut W,
    ) -> io::Result<()> {
        for event in events.drain(..) {
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
                        serde_json::to_writer(&mut *out, &end_value(result, original, shape))?;
                    }
                }
                _ => self.write_one(&event, shape, out)?,
            }
            out.write_all(b"\n")?;
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
                _ => serde_json::to_writer(&mut *out, &event.to_value(shape))?,
            }
        }
        Ok(())
    }

    /// Reads the next chunk; returns what it makes known. Chunks may split the reply
    /// anywhere (in a marker, a name, an escape). After [`Stream::finish`] nothing is read.
    pub fn feed(&mut self, chunk: &str) -> Vec<Event> {
        let mut events = Vec::new();
        self.feed_into(chunk, &mut events);
        events
    }

    /// [`Stream::feed`], adding the events to `events`.
    #[inline]
    pub fn feed_into(&mut self, chunk: &str, events: &mut Vec<Event>) {
        if self.result.is_some() || chunk.is_empty() {
            return;
        }
        match chunk.as_bytes() {
            // A byte's chunk (ASCII, as it is a whole `str`): a push, not a copy call.
            &[b] => self.buf.push(char::from(b)),
            _ => self.buf.push_str(chunk),
        }
        self.live.read(&self.buf, events);
        if self.skims && self.skim() {
            #[cfg(test)]
            tests::SKIMMED.with(|n| n.set(n.get() + 1));
            return;
        }
        self.read_on(events);
    }

    /// The scan and the refresh, apart from the skim so that a skimmed chunk costs a call
    /// that does little.
    #[inline(never)]
    fn read_on(&mut self, events: &mut Vec<Event>) {
        self.scan(events);
        if self.skims
            && let Mode::Json(reader, _) = &self.mode
            && reader.quiet(0)
        {
            // The refresh would show and change nothing.
            return;
        }
        self.refresh(events);
    }

    /// The common chunk, read without the byte-by-byte scan: text that starts nothing,
    /// reasoning with no sign of its close, or more of a JSON string whose growth shows
    /// nothing yet. Whether the chunk was read (the scan and refresh would do the same).
    #[inline]
    fn skim(&mut self) -> bool {
        let bytes = &self.buf.as_bytes()[self.pos..];
        match &mut self.mode {
            Mode::Text => {
                if bytes.iter().all(|&b| self.markers.plain[usize::from(b)]) {
                    self.pos = self.buf.len();
                    return true;
                }
                false
            }
            Mode::Reasoning(close) | Mode::SkipTo(close) => {
                let close = close.as_bytes();
                if bytes.contains(&close[0]) {
                    return false;
                }
                // As the scan leaves it: the close could still begin in the last bytes.
                self.pos = self.buf.len().saturating_sub(close.len() - 1).max(self.pos);
                true
            }
            Mode::Json(reader, _) => {
                let n = bytes.len();
                if let &[b] = bytes
                    && reader.nested_at.is_some()
                {
                    // Arguments written as a JSON string, a byte at a time.
                    if !reader.nested_byte(b, &mut self.slots) {
                        return false;
                    }
                    self.pos = self.buf.len();
                    return true;
                }
                if !reader.quiet(n) {
                    return false;
                }
                let taken = match bytes {
                    &[b] => reader.reader.string_plain_byte(b),
                    _ => false,
                } || reader.reader.extend_string(bytes);
                if !taken {
                    return false;
                }
                reader.read += n;
                self.pos = self.buf.len();
                true
            }
            _ => false,
        }
    }

    /// Reasoning that a server sends apart from the text (OpenAI-style `reasoning_content`,
    /// Anthropic `thinking` blocks). The reply is then an assistant message (see
    /// [`Stream::message`]); its reasoning is shown as it arrives (see [`Event::Corrected`]).
    pub fn feed_reasoning(&mut self, delta: &str) -> Vec<Event> {
        let mut events = Vec::new();
        if self.result.is_none() {
            self.server_reasoning
                .get_or_insert_with(String::new)
                .push_str(delta);
            self.live.server_reasoning(delta, &mut events);
        }
        events
    }

    /// A piece of a tool call that a server parsed itself: `key` tells its calls apart
    /// (OpenAI's `tool_calls[].index`, Anthropic's content block index); the id and the name
    /// come with the first pieces, the arguments' JSON text in pieces. The name is complete
    /// once arguments arrive for it (or another call starts); the arguments are read as they
    /// grow, like those of a call in the text.
    pub fn feed_call(
        &mut self,
        key: usize,
        id: Option<&str>,
        name: Option<&str>,
        arguments: &str,
    ) -> Vec<Event> {
        let mut events = Vec::new();
        if self.result.is_some() {
            return events;
        }
        let at = match self.server_calls.iter().position(|c| c.key == key) {
            Some(at) => at,
            None => {
                // A new call: the ones before it have their whole names.
                for i in 0..self.server_calls.len() {
                    self.announce_server(i, &mut events);
                }
                self.server_calls.push(ServerCall {
                    key,
                    id: None,
                    name: String::new(),
                    arguments: String::new(),
                    slot: None,
                    reader: None,
                });
                self.server_calls.len() - 1
            }
        };
        let call = &mut self.server_calls[at];
        if let Some(id) = id.filter(|id| !id.is_empty()) {
            call.id = Some(id.to_owned());
        }
        if let Some(name) = name
            && call.slot.is_none()
        {
            call.name.push_str(name);
        }
        call.arguments.push_str(arguments);
        if !arguments.is_empty() {
            self.announce_server(at, &mut events);
        }
        self.read_server(at, &mut events);
        events
    }

    /// How the server says the reply ended (`field` as its API names it: `finish_reason`,
    /// `stop_reason`, `done_reason`, `finishReason`, `incomplete_details.reason`). A reason
    /// that says the output was cut makes the call written last incomplete, as `calls` does
    /// with the stop reason of a whole response (see [`super::message::cut_by`]).
    pub fn stop_reason(&mut self, field: &str, reason: &str) {
        if self.result.is_none()
            && let Some(why) = super::message::cut_by(field, reason)
        {
            self.cut = Some(why);
        }
    }

    /// Announces a server's call once its name is complete.
    fn announce_server(&mut self, at: usize, events: &mut Vec<Event>) {
        let call = &self.server_calls[at];
        if call.slot.is_some() || call.name.trim().is_empty() {
            return;
        }
        let (tool, id) = bare_name(&call.name);
        let id = call.id.clone().or(id).map(Value::String);
        self.start_call(tool, id, events);
        let slot = self.slots.len() - 1;
        let call = &mut self.server_calls[at];
        call.slot = Some(slot);
        call.reader = Some(CallReader::new(
            Ctx {
                args_of: Some(slot),
                name_is_key: false,
                strict: false,
                seq: false,
                close: None,
            },
            0,
            slot,
        ));
    }

    /// Reads what arrived of a server call's arguments.
    fn read_server(&mut self, at: usize, events: &mut Vec<Event>) {
        let call = &mut self.server_calls[at];
        let (Some(reader), Some(slot)) = (&mut call.reader, call.slot) else {
            return;
        };
        let bytes = call.arguments.as_bytes();
        while reader.read < bytes.len() && !self.slots[slot].frozen {
            let b = bytes[reader.read];
            if reader.reader.stack.is_empty()
                && reader.reader.value.is_none()
                && b.is_ascii_whitespace()
            {
                reader.read += 1;
                continue;
            }
            match reader.push(
                b,
                bytes,
                &mut self.slots,
                &mut self.next_index,
                events,
                &mut self.written,
            ) {
                Step::More | Step::Done => {}
                Step::Bail => {
                    reader.bail(bytes, &mut self.slots, events);
                    break;
                }
            }
        }
        reader.refresh(
            bytes,
            &mut self.slots,
            &mut self.next_index,
            events,
            &mut self.written,
        );
    }

    /// The reply so far: the text, or with calls or reasoning fed apart, the assistant message
    /// they make up (`{"role", "content", "reasoning_content"?, "tool_calls"}`), as
    /// `calls --input jsonl` reads it.
    pub fn message(&self) -> Option<Value> {
        if self.server_calls.is_empty() && self.server_reasoning.is_none() {
            return None;
        }
        let mut m = Map::new();
        m.insert("role".into(), "assistant".into());
        m.insert("content".into(), self.buf.clone().into());
        if let Some(reasoning) = &self.server_reasoning {
            m.insert("reasoning_content".into(), reasoning.clone().into());
        }
        let calls: Vec<Value> = self
            .server_calls
            .iter()
            .map(|c| {
                let mut call = Map::new();
                if let Some(id) = &c.id {
                    call.insert("id".into(), id.clone().into());
                }
                call.insert("type".into(), "function".into());
                let mut function = Map::new();
                function.insert("name".into(), c.name.clone().into());
                function.insert("arguments".into(), c.arguments.clone().into());
                call.insert("function".into(), Value::Object(function));
                Value::Object(call)
            })
            .collect();
        m.insert("tool_calls".into(), Value::Array(calls));
        Some(Value::Object(m))
    }

    /// The text of the reply so far.
    pub fn reply(&self) -> &str {
        &self.buf
    }

    /// Ends the reply with an error that is not about its content (unreadable input, a reply
    /// too large, a stream cut short): every call announced is retracted, and the `end` event
    /// carries the error.
    pub fn abort(&mut self, error: crate::Error) -> Vec<Event> {
        let original = original_text(self.buf.as_bytes());
        self.abort_showing(error, original)
    }

    /// [`Stream::abort`] for a reply that is not text: `unread` is what came after the text fed
    /// so far (the bytes that are not UTF-8, and as much after them as was read), so that the
    /// `end` event's `original` shows the reply as an error record of `calls` shows it (U+FFFD
    /// for what is not UTF-8).
    pub fn abort_unreadable(&mut self, error: crate::Error, unread: &[u8]) -> Vec<Event> {
        let mut head = self.buf.as_bytes()[..self.buf.len().min(405)].to_vec();
        head.extend_from_slice(&unread[..unread.len().min(405)]);
        self.abort_showing(error, original_text(&head))
    }

    fn abort_showing(&mut self, error: crate::Error, original: String) -> Vec<Event> {
        let mut events = Vec::new();
        if self.result.is_some() {
            return events;
        }
        let reason = format!("the reply could not be read to its end: {}", error.message);
        self.retract_all(&reason, &mut events);
        let result = Box::new(Err(Failure {
            error,
            extracted: None,
        }));
        events.push(Event::End {
            result: result.clone(),
            original,
        });
        self.result = Some(result);
        events
    }

    /// How many announced calls have been read to the end of their JSON (not yet checked as
    /// `calls` will check them at the end). The loop's `stop_after_call` stops reading then.
    pub fn closed_calls(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| s.closed && s.index.is_some() && !s.ended)
            .count()
    }

    /// For each call in the text read to the end of its JSON, in order, the byte offset in
    /// [`Stream::reply`] just past it (the loop's `stop_after_call` may end the reply there).
    pub fn call_ends(&self) -> &[usize] {
        &self.call_ends
    }

    /// Ends the reply: the results (`text`, `reasoning`, `call_end`, `incomplete`, `invalid`,
    /// `retracted`) and the `end` event. A second call returns nothing.
    pub fn finish(&mut self) -> Vec<Event> {
        let mut events = Vec::new();
        if self.result.is_some() {
            return events;
        }
        self.refresh(&mut events);
        for i in 0..self.server_calls.len() {
            self.announce_server(i, &mut events);
        }
        let (result, original) = match self.message() {
            Some(message) => (
                super::message::extract_message_cut(&message, self.cut.as_deref(), &self.options),
                original_text(message.to_string().as_bytes()),
            ),
            None => (
                super::extract(&self.buf, &self.options),
                original_text(self.buf.as_bytes()),
            ),
        };
        self.settle(&result, &mut events);
        let result = Box::new(result);
        events.push(Event::End {
            result: if self.hold(Held::End) {
                Box::new(Ok(Extracted::default()))
            } else {
                result.clone()
            },
            original,
        });
        self.result = Some(result);
        events
    }

    /// A writing stream notes that it will write this result event from its result (and the
    /// event carries an empty value); whether it did.
    fn hold(&mut self, held: Held) -> bool {
        match &mut self.written {
            Some(w) => {
                w.held.push_back(held);
                true
            }
            None => false,
        }
    }

    /// What `calls` gives for the whole reply, once finished.
    pub fn result(&self) -> Option<&Result<Extracted, Failure>> {
        self.result.as_deref()
    }

    /// Scans the bytes not yet looked at.
    fn scan(&mut self, events: &mut Vec<Event>) {
        let len = self.buf.len();
        while self.pos < len {
            let bytes = self.buf.as_bytes();
            let p = self.pos;
            let b = bytes[p];
            match &mut self.mode {
                Mode::Text => {
                    if b == b'{' && self.markers.markerless {
                        let ctx = Ctx::whole_calls(true);
                        self.mode = Mode::json(ctx, p, self.slots.len());
                        continue;
                    }
                    if !self.markers.first[b as usize] {
                        let mut q = p + 1;
                        while q < len && !self.markers.first[bytes[q] as usize] && bytes[q] != b'{'
                        {
                            q += 1;
                        }
                        self.pos = q;
                        continue;
                    }
                    match self.markers.at(&bytes[p..]) {
                        Err(()) => return,
                        Ok(None) => self.pos += 1,
                        Ok(Some((n, action))) => {
                            self.pos += n;
                            self.marker(action, p, events);
                        }
                    }
                }
                Mode::Reasoning(close) | Mode::SkipTo(close) => {
                    let close = *close;
                    match find_bytes(&bytes[p..], close.as_bytes()) {
                        Some(i) => {
                            self.pos = p + i + close.len();
                            self.mode = Mode::Text;
                        }
                        None => {
                            self.pos = len.saturating_sub(close.len() - 1).max(p);
                            return;
                        }
                    }
                }
                Mode::Body { ctx, ticks, lang } => {
                    let ctx = *ctx;
                    if *lang {
                        if b == b'\n' {
                            *lang = false;
                            *ticks = 0;
                        }
                        self.pos += 1;
                    } else if b.is_ascii_whitespace() || (ctx.seq && matches!(b, b';' | b',')) {
                        self.pos += 1;
                    } else if b == b'`' {
                        *ticks += 1;
                        if *ticks == 3 {
                            *lang = true;
                        }
                        self.pos += 1;
                    } else if *ticks == 0 && matches!(b, b'{' | b'[') {
                        self.mode = Mode::json(ctx, p, self.slots.len());
                    } else {
                        self.mode = Mode::Text;
                    }
                }
                Mode::Head(_) => self.head(b, events),
                Mode::Json(reader, ctx) => {
                    // The plain run of a string, up to its next quote or backslash, in one go
                    // (its bytes change nothing but the string).
                    if len - p > 1 && b != b'"' && b != b'\\' && reader.reader.in_plain_string() {
                        let run = memchr::memchr2(b'"', b'\\', &bytes[p..]).unwrap_or(len - p);
                        if run > 1 && reader.reader.extend_string(&bytes[p..p + run]) {
                            reader.read += run;
                            self.pos += run;
                            continue;
                        }
                    }
                    let ctx = *ctx;
                    let slots = self.slots.len();
                    let closes = reader.closes;
                    let step = reader.push(
                        b,
                        bytes,
                        &mut self.slots,
                        &mut self.next_index,
                        events,
                        &mut self.written,
                    );
                    if reader.closes > closes {
                        self.call_ends.push(p + 1);
                    }
                    if self.slots.len() > slots {
                        equip(&mut self.slots[slots..], &self.options);
                    }
                    match step {
                        Step::More => self.pos += 1,
                        Step::Done => {
                            self.pos += 1;
                            self.mode = if ctx.seq && ctx.args_of.is_none() {
                                Mode::Body {
                                    ctx,
                                    ticks: 0,
                                    lang: false,
                                }
                            } else {
                                Mode::Text
                            };
                        }
                        Step::Bail => {
                            reader.bail(bytes, &mut self.slots, events);
                            self.mode = match ctx.close {
                                Some(close) => Mode::SkipTo(close),
                                None => Mode::Text,
                            };
                        }
                    }
                }
            }
        }
    }

    /// A marker was read at `at`.
    fn marker(&mut self, action: Action, at: usize, events: &mut Vec<Event>) {
        match action {
            Action::Think(kind) => {
                self.opened = true;
                self.mode = Mode::Reasoning(REASONING[kind].1);
            }
            Action::Unthink => {
                // A close with no open before it: everything before is reasoning (unless the
                // text before is blank, when there is nothing to retract anyway).
                if !self.opened && !self.buf[..at].trim().is_empty() {
                    self.retract_all("it was inside reasoning: a closing marker with no opening one came after it", events);
                }
            }
            Action::Body(body) => {
                let (name_is_key, json) = match body {
                    Body::Json { name_is_key } => (name_is_key, true),
                    Body::ToolCall | Body::PythonicOrJson => (false, true),
                    _ => (false, false),
                };
                if json {
                    let close = TABLE.iter().find_map(|spec| match spec.kind {
                        Kind::Block { open, close, .. }
                            if open.iter().any(|o| self.buf[at..].starts_with(o)) =>
                        {
                            close.first().copied()
                        }
                        _ => None,
                    });
                    self.mode = Mode::Body {
                        ctx: Ctx {
                            args_of: None,
                            name_is_key,
                            strict: false,
                            seq: true,
                            close,
                        },
                        ticks: 0,
                        lang: false,
                    };
                }
            }
            Action::Tagged(sep) => {
                self.mode = Mode::Head(Head::Tagged {
                    sep,
                    head: Vec::new(),
                    matched: 0,
                    line: None,
                });
            }
            Action::Mistral => {
                self.mode = Mode::Head(Head::Mistral {
                    name: String::new(),
                    id: None,
                    tag: None,
                    in_id: false,
                    spaced: false,
                });
            }
            Action::Function(close) => {
                self.mode = Mode::Head(Head::Name {
                    name: String::new(),
                    end: b'>',
                    close: Some(close),
                    not_a_call: None,
                });
            }
            Action::Arrows => {
                self.mode = Mode::Head(Head::Name {
                    name: String::new(),
                    end: b'\n',
                    close: None,
                    not_a_call: Some(ARROWS_TEXT),
                });
            }
        }
    }

    /// One byte of a name after a marker.
    fn head(&mut self, b: u8, events: &mut Vec<Event>) {
        let Mode::Head(head) = &mut self.mode else {
            return;
        };
        // `Some(name, id)`: the arguments' JSON starts at this byte.
        let mut args: Option<(String, Option<String>)> = None;
        let mut give_up = false;
        let mut consume = true;
        match head {
            Head::Mistral {
                name,
                id,
                tag,
                in_id,
                spaced,
            } => {
                if let Some(t) = tag {
                    t.push(b);
                    if b == b']' {
                        let [call_id, args] = MISTRAL_TAGS.map(str::as_bytes);
                        match t.as_slice() {
                            t if t == call_id => *in_id = true,
                            t if t == args => *in_id = false,
                            _ => give_up = true,
                        }
                        *tag = None;
                    } else if t.len() > 9 {
                        give_up = true;
                    }
                } else if *in_id && b.is_ascii_alphanumeric() {
                    id.get_or_insert_with(String::new).push(b as char);
                } else if name.is_empty() && !*spaced && b.is_ascii_whitespace() {
                } else if name.is_empty() && matches!(b, b'[' | b'{') {
                    let ctx = Ctx::whole_calls(false);
                    self.mode = Mode::json(ctx, self.pos, self.slots.len());
                    return;
                } else if !*spaced && is_name_byte(b) && name.len() < MAX_NAME {
                    name.push(b as char);
                } else if !name.is_empty() && b == b'[' {
                    *in_id = false;
                    tag.replace(vec![b]);
                } else if !name.is_empty() && b.is_ascii_whitespace() {
                    *spaced = true;
                    *in_id = false;
                } else if !name.is_empty() && b == b'{' {
                    args = Some((std::mem::take(name), id.take()));
                    consume = false;
                } else {
                    give_up = true;
                }
            }
            Head::Name {
                name,
                end,
                close,
                not_a_call,
            } => {
                if b == *end && !name.is_empty() && Some(name.as_str()) != *not_a_call {
                    let (name, close) = (std::mem::take(name), *close);
                    self.start_call(name, None, events);
                    self.args_body(close);
                    self.pos += 1;
                    return;
                } else if is_name_byte(b) && name.len() < MAX_NAME {
                    name.push(b as char);
                } else {
                    give_up = true;
                }
            }
            Head::Tagged {
                sep,
                head: text,
                matched,
                line,
            } => {
                let sep_bytes: &'static [u8] = (*sep).as_bytes();
                if let Some(line) = line {
                    // DeepSeek V3: `function<sep>NAME\n` then the fenced JSON.
                    if b == b'\n' && !line.trim().is_empty() {
                        let name = bare_name(line).0;
                        self.start_call(name, None, events);
                        self.args_body(None);
                        self.pos += 1;
                        return;
                    } else if line.len() < MAX_NAME && b != b'<' {
                        line.push(b as char);
                    } else {
                        give_up = true;
                    }
                } else if *matched > 0 || b == sep_bytes[0] {
                    if b == sep_bytes[*matched] {
                        *matched += 1;
                        if *matched == sep_bytes.len() {
                            let head = String::from_utf8_lossy(text).trim().to_owned();
                            if head == "function" {
                                *line = Some(String::new());
                            } else if head.is_empty() {
                                give_up = true;
                            } else {
                                let (name, id) = bare_name(&head);
                                self.start_call(name, id.map(Value::String), events);
                                self.args_body(None);
                                self.pos += 1;
                                return;
                            }
                        }
                    } else {
                        give_up = true;
                    }
                } else if text.len() < MAX_NAME && b != b'<' {
                    text.push(b);
                } else {
                    give_up = true;
                }
            }
        }
        if give_up {
            self.mode = Mode::Text;
            return;
        }
        if let Some((name, id)) = args {
            let name = bare_name(&name).0;
            self.start_call(name, id.map(Value::String), events);
            let ctx = self.args_ctx(None);
            self.mode = Mode::json(ctx, self.pos, self.slots.len());
        }
        if consume {
            self.pos += 1;
        }
    }

    /// After a name: whitespace and a fence, then the arguments of the last slot.
    fn args_body(&mut self, close: Option<&'static str>) {
        self.mode = Mode::Body {
            ctx: self.args_ctx(close),
            ticks: 0,
            lang: false,
        };
    }

    /// How the arguments of the last slot's call are read, up to `close` when a marker ends
    /// them.
    fn args_ctx(&self, close: Option<&'static str>) -> Ctx {
        Ctx {
            args_of: Some(self.slots.len() - 1),
            close,
            ..Ctx::whole_calls(false)
        }
    }

    /// A call whose name the marker gave.
    fn start_call(&mut self, tool: String, id: Option<Value>, events: &mut Vec<Event>) {
        let index = self.next_index;
        self.next_index += 1;
        events.push(Event::CallStart {
            index,
            tool: tool.clone(),
            id,
        });
        self.slots.push(Slot {
            index: Some(index),
            tool: Some(tool),
            ..Slot::default()
        });
        let last = self.slots.len() - 1;
        equip(&mut self.slots[last..], &self.options);
    }

    fn retract_all(&mut self, reason: &str, events: &mut Vec<Event>) {
        for slot in &mut self.slots {
            if let (Some(index), false) = (slot.index, slot.ended) {
                slot.ended = true;
                events.push(Event::Retracted {
                    index,
                    reason: reason.to_owned(),
                });
            }
        }
    }

    /// Names and arguments of the calls being read, as far as they are certain.
    fn refresh(&mut self, events: &mut Vec<Event>) {
        if let Mode::Json(reader, _) = &mut self.mode {
            reader.refresh(
                self.buf.as_bytes(),
                &mut self.slots,
                &mut self.next_index,
                events,
                &mut self.written,
            );
        }
    }

    /// The results, from `calls` on the whole reply, matched to the calls announced.
    fn settle(&mut self, result: &Result<Extracted, Failure>, events: &mut Vec<Event>) {
        let Some(found) = found_in(result) else {
            self.settle_prose(Prose::Text, "", events);
            self.settle_prose(Prose::Reasoning, "", events);
            self.retract_all("the reply holds no call", events);
            return;
        };
        self.settle_prose(Prose::Text, found.text.as_deref().unwrap_or(""), events);
        let reasoning = found.reasoning.as_deref().unwrap_or("");
        self.settle_prose(Prose::Reasoning, reasoning, events);
        // The first result of each list not yet matched to a call announced.
        let mut next = [0; 3];
        let open: Vec<usize> = (0..self.slots.len())
            .filter(|&s| self.slots[s].index.is_some() && !self.slots[s].ended)
            .collect();
        for s in open {
            let slot = &self.slots[s];
            let (index, tool) = (slot.index.unwrap_or_default(), slot.tool.clone());
            let tool = tool.as_deref();
            // A closed call is most likely a call; one still open when the reply ended, cut.
            let order = if slot.closed {
                [Ending::Call, Ending::Bad, Ending::Cut]
            } else {
                [Ending::Cut, Ending::Call, Ending::Bad]
            };
            let pick = order.into_iter().find_map(|ending| {
                let mut same = (next[ending as usize]..ending.count(found))
                    .filter(|&k| ending.tool(found, k) == tool);
                let first = same.next()?;
                // A call of the same tool that the stream never announced (it stopped reading
                // its JSON before its name) may come first: then this call is the next one
                // that keeps what its `arguments` showed; and with none, `calls` does not read
                // this call as the stream did.
                if ending == Ending::Call && !self.agrees(s, &found.calls[first]) {
                    return same
                        .find(|&k| self.agrees(s, &found.calls[k]))
                        .map(|k| (ending, k));
                }
                Some((ending, first))
            });
            self.slots[s].ended = true;
            match pick {
                Some((ending, k)) => {
                    if ending == Ending::Call {
                        // Calls before it that no slot announced.
                        for j in next[ending as usize]..k {
                            self.announce_ended(found, ending, j, events);
                        }
                        self.revise_at_end(s, &found.calls[k], events);
                    }
                    let event = self.ending_event(found, ending, k, index);
                    events.push(event);
                    next[ending as usize] = k + 1;
                }
                None => events.push(Event::Retracted {
                    index,
                    reason: "calls does not read a call here in the whole reply".into(),
                }),
            }
        }
        for ending in [Ending::Call, Ending::Cut, Ending::Bad] {
            for k in next[ending as usize]..ending.count(found) {
                self.announce_ended(found, ending, k, events);
            }
        }
    }

    /// The rest of `calls`' text (or reasoning) after what was shown of it; or, when what was
    /// shown is not the start of it, a `corrected` with all of it. A writing stream's delta is
    /// written from the result.
    fn settle_prose(&mut self, field: Prose, want: &str, events: &mut Vec<Event>) {
        let (text, reasoning) = self.live.shown();
        let shown = match field {
            Prose::Text => text,
            Prose::Reasoning => reasoning,
        };
        if !want.starts_with(shown) {
            events.push(Event::Corrected {
                field,
                value: want.to_owned(),
            });
            return;
        }
        if want.len() == shown.len() {
            return;
        }
        let from = shown.len();
        let event = match field {
            Prose::Text if self.hold(Held::Text(from)) => Event::Text(String::new()),
            Prose::Reasoning if self.hold(Held::Reasoning(from)) => Event::Reasoning(String::new()),
            Prose::Text => Event::Text(want[from..].to_owned()),
            Prose::Reasoning => Event::Reasoning(want[from..].to_owned()),
        };
        events.push(event);
    }

    /// The text that holds the JSON of slot `s`'s arguments: a server call's, or the reply.
    fn src_of(&self, s: usize) -> &[u8] {
        self.server_calls
            .iter()
            .find(|c| c.slot == Some(s))
            .map_or(self.buf.as_bytes(), |c| c.arguments.as_bytes())
    }

    /// Whether `call` can be the call slot `s` showed: it keeps what the `arguments` events
    /// showed (read again from their source; the same [`weight`] where that is gone), or a key
    /// of it repeats (see [`Stream::revise_at_end`]).
    fn agrees(&self, s: usize, call: &Call) -> bool {
        let slot = &self.slots[s];
        let shown = match slot.shown_at {
            None => return true,
            Some(_)
                if call
                    .repairs
                    .iter()
                    .any(|r| r.kind == RepairKind::DuplicateKey && repeats_after(slot, r)) =>
            {
                return true;
            }
            // Not by weight when the source is there: two calls of one tool can weigh the same
            // with other values ({"x": 2} and {"x": 1}); the weight tells snapshots of one call.
            Some(Shown::Whole) => match shown_again(slot, self.src_of(s)) {
                None => return slot.shown == Some(weight(&call.parameters)),
                shown => shown,
            },
            Some(Shown::Part(_)) => shown_again(slot, self.src_of(s)),
        };
        let Some((shown, open)) = shown else {
            return true;
        };
        unkept_paths(&shown, &call.parameters, open.as_deref()).is_empty()
    }

    /// Before the `call_end` of slot `s`: when `call` has a repeated key, a `revised` for each
    /// value its `arguments` showed that `call` does not keep (the stream had stopped reading
    /// the call before the repeat). The path named is the repeated key's: the highest one on
    /// the way to the value whose key repeats; or all of the parameters when a key of the
    /// call's envelope repeats (its arguments key, `function`, `tool_calls`, …). A value
    /// changed by anything else gets no `revised`: that would be a bug, which the checks in
    /// tests/stream.rs and the calls fuzz target catch.
    fn revise_at_end(&mut self, s: usize, call: &Call, events: &mut Vec<Event>) {
        let repeated: Vec<&str> = call
            .repairs
            .iter()
            .filter(|r| r.kind == RepairKind::DuplicateKey)
            .filter_map(|r| r.text.as_deref())
            .collect();
        if repeated.is_empty() || self.slots[s].shown_at.is_none() {
            return;
        }
        let Some((shown, open)) = shown_again(&self.slots[s], self.src_of(s)) else {
            return;
        };
        let unkept = unkept_paths(&shown, &call.parameters, open.as_deref());
        let envelope = repeated
            .iter()
            .any(|k| ARG_KEYS.contains(k) || WRAPPERS.contains(k) || *k == "function");
        for mut path in unkept {
            let key = path
                .iter()
                .position(|seg| matches!(seg, Seg::Key(k) if repeated.contains(&k.as_str())));
            match key {
                Some(i) => path.truncate(i + 1),
                None if envelope => path.clear(),
                None => continue,
            }
            push_revised(&mut self.slots[s], path, events);
        }
    }

    /// Result `k` of a list, for a call no slot announced: its `call_start` (when it has a
    /// tool) and its end.
    fn announce_ended(
        &mut self,
        found: &Extracted,
        ending: Ending,
        k: usize,
        events: &mut Vec<Event>,
    ) {
        let index = match ending.tool(found, k) {
            Some(tool) => self.announce(tool.to_owned(), ending.id(found, k).clone(), events),
            None => self.fresh_index(),
        };
        let event = self.ending_event(found, ending, k, index);
        events.push(event);
    }

    /// The event that ends call `index` with result `k` of this list; a writing stream's
    /// `call_end` holds an empty call (the call is written from the result).
    fn ending_event(&mut self, found: &Extracted, ending: Ending, k: usize, index: usize) -> Event {
        if ending == Ending::Call && self.hold(Held::Call(k)) {
            return Event::CallEnd {
                index,
                call: Call {
                    tool: String::new(),
                    parameters: Map::new(),
                    terminate: None,
                    id: None,
                    repairs: Vec::new(),
                    dropped: Vec::new(),
                },
            };
        }
        ending.event(found, k, index)
    }

    fn fresh_index(&mut self) -> usize {
        let index = self.next_index;
        self.next_index += 1;
        index
    }

    /// A `call_start` for a call first seen in the results.
    fn announce(&mut self, tool: String, id: Option<Value>, events: &mut Vec<Event>) -> usize {
        let index = self.fresh_index();
        events.push(Event::CallStart { index, tool, id });
        index
    }
}

/// How an event names its call: `index`, `tool` (`null` when it was not written) and `id`
/// (when there is one).
fn name_call(m: &mut Map<String, Value>, index: usize, tool: Option<&str>, id: Option<&Value>) {
    m.insert("index".into(), index.into());
    m.insert("tool".into(), tool.map_or(Value::Null, Value::from));
    if let Some(id) = id {
        m.insert("id".into(), id.clone());
    }
}

/// The three lists of a reply's results in which a call can end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// `calls`.
    Call = 0,
    /// `incomplete`.
    Cut = 1,
    /// `rejected`.
    Bad = 2,
}

impl Ending {
    fn count(self, found: &Extracted) -> usize {
        match self {
            Ending::Call => found.calls.len(),
            Ending::Cut => found.incomplete.len(),
            Ending::Bad => found.rejected.len(),
        }
    }

    /// The tool of result `k` in this list.
    fn tool(self, found: &Extracted, k: usize) -> Option<&str> {
        match self {
            Ending::Call => Some(found.calls[k].tool.as_str()),
            Ending::Cut => found.incomplete[k].tool.as_deref(),
            Ending::Bad => found.rejected[k].tool.as_deref(),
        }
    }

    fn id(self, found: &Extracted, k: usize) -> &Option<Value> {
        match self {
            Ending::Call => &found.calls[k].id,
            Ending::Cut => &found.incomplete[k].id,
            Ending::Bad => &found.rejected[k].id,
        }
    }

    /// The event that ends call `index` with result `k` of this list.
    fn event(self, found: &Extracted, k: usize, index: usize) -> Event {
        match self {
            Ending::Call => Event::CallEnd {
                index,
                call: found.calls[k].clone(),
            },
            Ending::Cut => Event::Incomplete {
                index,
                incomplete: found.incomplete[k].clone(),
            },
            Ending::Bad => Event::Invalid {
                index,
                rejected: found.rejected[k].clone(),
            },
        }
    }
}

impl CallReader {
    fn new(ctx: Ctx, start: usize, first_slot: usize) -> CallReader {
        CallReader {
            reader: Reader::new(),
            roles: Vec::new(),
            ctx,
            read: 0,
            args_from: Vec::new(),
            closes: 0,
            start,
            first_slot,
            quiet_until: 0,
            nested_at: None,
        }
    }

    /// Reads byte `b`; `src` is the text read (the byte is at `self.start + self.read`).
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        b: u8,
        src: &[u8],
        slots: &mut Vec<Slot>,
        next_index: &mut usize,
        events: &mut Vec<Event>,
        written: &mut Option<Written>,
    ) -> Step {
        self.nested_at = None;
        let before = self.reader.stack.len();
        let quote = b == b'"' && !self.reader.in_string();
        let step = self.reader.push(b);
        if step == Step::Bail {
            self.quiet_until = 0;
            return step;
        }
        self.read += 1;
        let after = self.reader.stack.len();
        if after != before {
            // A frame opened or closed (a call object's member may have been added): what a
            // refresh would show is not known. A byte that leaves the stack as it was only
            // adds to the top frame, whose being a call object's makes `quiet_until` 0.
            self.quiet_until = 0;
        }
        if after > before {
            let role = self.role(slots);
            if let Role::Args(s) = role {
                self.args_from.push(self.read);
                if written.is_some() {
                    self.reader.record(after - 1, text_only(&slots[s], written));
                }
                self.found_args(&mut slots[s], after - 1, false);
            }
            self.roles.push(role);
        } else if after < before {
            let role = self.roles.pop().unwrap_or(Role::Other);
            self.closed(role, src, slots, next_index, events, written);
            // An object read to its end that named no call: nothing refers to its slot any
            // more (its frame is gone, and objects inside it closed before it). Dropped, so
            // that a reply of many objects (`{}{}…`) keeps no slot per object.
            if let Role::Call(s) = role
                && s + 1 == slots.len()
                && slots[s].index.is_none()
                && self.ctx.args_of != Some(s)
            {
                slots.pop();
            }
        } else if quote
            && let Some(&Role::Call(s)) = self.roles.last()
            && self.reader.open_string().is_some()
            && let Some(Frame::Object { key: Some(k), .. }) = self.reader.stack.last()
            && ARG_KEYS.contains(&k.as_str())
        {
            // Arguments written as a JSON string start.
            self.found_args(&mut slots[s], after, true);
        }
        step
    }

    /// Notes where a call's arguments start (the first value of an argument key that is an
    /// object or a string: the one its `arguments` events show): at `depth` of the stack,
    /// their first byte just read.
    fn found_args(&self, slot: &mut Slot, depth: usize, string: bool) {
        if slot.args_src.is_none() {
            slot.args_src = Some(ArgsSrc {
                path: self.reader.path_to(depth),
                at: self.start + self.read - 1,
                string,
            });
        }
    }

    /// The role of the frame just opened.
    fn role(&self, slots: &mut Vec<Slot>) -> Role {
        let stack = &self.reader.stack;
        let depth = stack.len() - 1;
        let object = matches!(stack[depth], Frame::Object { .. });
        let ctx = self.ctx;
        let new_call = |slots: &mut Vec<Slot>| {
            slots.push(Slot {
                strict: ctx.strict,
                name_is_key: ctx.name_is_key,
                ..Slot::default()
            });
            Role::Call(slots.len() - 1)
        };
        if depth == 0 {
            return match (self.ctx.args_of, object) {
                (Some(s), true) => Role::Args(s),
                (Some(_), false) => Role::Other,
                (None, true) => new_call(slots),
                (None, false) => Role::List,
            };
        }
        let key = match &stack[depth - 1] {
            Frame::Object { key: Some(k), .. } => Some(k.as_str()),
            _ => None,
        };
        match (self.roles[depth - 1], key) {
            (Role::List, _) => {
                if object {
                    new_call(slots)
                } else {
                    Role::List
                }
            }
            (Role::Call(_), Some(k)) if WRAPPERS.contains(&k) => {
                if object {
                    new_call(slots)
                } else {
                    Role::List
                }
            }
            (Role::Call(_), Some("function")) if object => new_call(slots),
            (Role::Call(s), Some(k)) if object && ARG_KEYS.contains(&k) => {
                let slot = &mut slots[s];
                match &slot.args_key {
                    None => {
                        slot.args_key = Some(k.to_owned());
                        Role::Args(s)
                    }
                    Some(_) => {
                        slot.frozen = true;
                        Role::Other
                    }
                }
            }
            (Role::Call(s), Some(_)) if object && slots[s].name_is_key => {
                // Apertus `{NAME: {args}}`: the key is the name.
                Role::Other
            }
            _ => Role::Other,
        }
    }

    /// A frame was closed; its value is now in its parent (or the reader's value).
    fn closed(
        &mut self,
        role: Role,
        src: &[u8],
        slots: &mut [Slot],
        next_index: &mut usize,
        events: &mut Vec<Event>,
        written: &mut Option<Written>,
    ) {
        match role {
            Role::Args(s) => {
                let from = self.args_from.pop().unwrap_or(self.read);
                let slot = &mut slots[s];
                slot.args_bytes = self.read - from;
                if slot.index.is_some()
                    && let Some(Value::Object(map)) = self.last_value()
                {
                    let depth = self.reader.stack.len();
                    show(
                        slot,
                        Some((&self.reader, depth)),
                        || Some((map.clone(), None)),
                        true,
                        events,
                        written,
                    );
                    slot.args_done = true;
                }
                if self.ctx.args_of == Some(s) {
                    slot.closed = true;
                    self.closes += 1;
                }
            }
            Role::Call(s) => {
                // Borrowed: the call object can be large.
                let Some(Value::Object(map)) = last_value(&self.reader) else {
                    return;
                };
                name(&mut slots[s], map, next_index, events);
                let slot = &mut slots[s];
                if slot.index.is_none() {
                    return;
                }
                slot.closed = true;
                self.closes += 1;
                let args = slot.args_key.as_ref().and_then(|key| map.get(key));
                let args = match args {
                    Some(Value::Object(args)) if !slot.args_done => {
                        show(
                            slot,
                            None,
                            || Some((args.clone(), None)),
                            true,
                            events,
                            written,
                        );
                        slot.args_done = true;
                        None
                    }
                    args => args,
                };
                if !slot.args_done
                    && let Some(Value::String(text)) = args
                {
                    let mut nested = slot
                        .nested
                        .take()
                        .unwrap_or_else(|| Nested::new(slot, written));
                    let ok = feed_nested(&mut nested, text.as_bytes());
                    if let Some(path) = nested.reader.repeated_path() {
                        revise(slot, path, src, events);
                    }
                    if ok && let Some(Value::Object(args)) = &nested.reader.value {
                        slot.args_bytes = text.len();
                        show(
                            slot,
                            Some((&nested.reader, 0)),
                            || Some((args.clone(), None)),
                            true,
                            events,
                            written,
                        );
                        slot.args_done = true;
                    } else if !ok {
                        slot.frozen = true;
                    }
                    slot.nested = Some(nested);
                }
            }
            _ => {}
        }
    }

    /// The value last put in the top container (or the whole value).
    fn last_value(&self) -> Option<&Value> {
        last_value(&self.reader)
    }

    /// Names and partial arguments of the calls still open (`src`: the text read).
    fn refresh(
        &mut self,
        src: &[u8],
        slots: &mut [Slot],
        next_index: &mut usize,
        events: &mut Vec<Event>,
        written: &mut Option<Written>,
    ) {
        let stack = &self.reader.stack;
        let top = stack.len();
        let mut args_seen = 0;
        let mut nested_at = None;
        for (depth, role) in self.roles.iter().enumerate() {
            match *role {
                Role::Call(s) => {
                    let Frame::Object { map, key } = &stack[depth] else {
                        continue;
                    };
                    let state = Some((map.len(), key.is_some()));
                    if slots[s].looked != state {
                        slots[s].looked = state;
                        name(&mut slots[s], map, next_index, events);
                        let slot = &mut slots[s];
                        let pending = key
                            .as_deref()
                            .is_some_and(|k| ARG_KEYS.contains(&k) && !map.contains_key(k));
                        if ARG_KEYS.iter().filter(|k| map.contains_key(**k)).count()
                            + usize::from(pending)
                            > 1
                        {
                            slot.frozen = true;
                        }
                    }
                    let slot = &mut slots[s];
                    // Arguments written as a JSON string, being read.
                    if depth + 1 == top
                        && let Some(k) = key
                        && ARG_KEYS.contains(&k.as_str())
                        && let Some(bytes) = self.reader.open_string()
                        && !slot.frozen
                    {
                        if slot.args_key.is_none() {
                            slot.args_key = Some(k.clone());
                        }
                        if slot.args_key.as_deref() == Some(k.as_str()) {
                            let mut nested = slot
                                .nested
                                .take()
                                .unwrap_or_else(|| Nested::new(slot, written));
                            if feed_nested(&mut nested, bytes) {
                                nested_at = Some(s);
                                slot.args_bytes = nested.fed;
                                if due(slot) {
                                    show(
                                        slot,
                                        Some((&nested.reader, 0)),
                                        || object_snapshot(&nested.reader, 0),
                                        false,
                                        events,
                                        written,
                                    );
                                }
                            } else {
                                slot.frozen = true;
                                if let Some(path) = nested.reader.repeated_path() {
                                    revise(slot, path, src, events);
                                }
                            }
                            slot.nested = Some(nested);
                        }
                    }
                }
                Role::Args(s) => {
                    let from = self.args_from.get(args_seen).copied().unwrap_or(self.read);
                    args_seen += 1;
                    let slot = &mut slots[s];
                    slot.args_bytes = self.read - from;
                    if due(slot) {
                        show(
                            slot,
                            Some((&self.reader, depth)),
                            || object_snapshot(&self.reader, depth),
                            false,
                            events,
                            written,
                        );
                    }
                }
                _ => {}
            }
        }
        self.nested_at = nested_at;
        self.quiet_until = self.quiet_until(slots);
    }

    /// Reads `b` as `push` and a refresh would, when it only adds to a string inside
    /// arguments written as a JSON string ([`CallReader::nested_at`]): a plain byte (neither
    /// a quote nor a backslash, printable), in the plain run of the arguments string, which
    /// is also that of a string in the JSON it holds, and no arguments event due after it.
    /// Whether it did.
    fn nested_byte(&mut self, b: u8, slots: &mut [Slot]) -> bool {
        let Some(slot) = self.nested_at.and_then(|s| slots.get_mut(s)) else {
            return false;
        };
        let Some(nested) = slot.nested.as_deref() else {
            return false;
        };
        let fed = nested.fed + 1;
        // A byte before the nested value (its stack empty) may be blank, which is skipped.
        if slot.frozen
            || nested.reader.stack.is_empty()
            || !nested.reader.in_plain_string()
            || !self.reader.in_plain_string()
            || due_at(slot, fed)
            || b < 0x20
            || b == b'"'
            || b == b'\\'
        {
            return false;
        }
        let Some(nested) = slot.nested.as_deref_mut() else {
            return false;
        };
        if !self.reader.string_plain_byte(b) || !nested.reader.string_plain_byte(b) {
            // Not reached: both strings are plain and so is the byte.
            return false;
        }
        nested.fed = fed;
        slot.args_bytes = fed;
        self.read += 1;
        true
    }

    /// Whether a refresh after `n` more bytes of the open string would show nothing: the
    /// string is not a call object's (a name, or arguments as a string, read in refresh),
    /// and no call's arguments would be due. Known since the last refresh, with no frame
    /// opened or closed by `push` since (and, so, nothing changed in a call object that is not
    /// on top).
    fn quiet(&self, n: usize) -> bool {
        self.read + n < self.quiet_until
    }

    /// The `read` at which a refresh may show something: 0 when the top frame is a call
    /// object's, else when the first call's arguments fall due ([`due_at`]).
    fn quiet_until(&self, slots: &[Slot]) -> usize {
        if matches!(self.roles.last(), Some(Role::Call(_))) {
            return 0;
        }
        let mut until = usize::MAX;
        for (s, size) in self.args_sizes(0) {
            let slot = &slots[s];
            if slot.index.is_none() || slot.frozen || slot.ended || slot.args_done {
                continue;
            }
            let Some(tried) = slot.tried_bytes else {
                return 0;
            };
            // Due once its size reaches this: `read` is then `until`.
            until = until.min((self.read + due_size(tried)).saturating_sub(size));
        }
        until
    }

    /// Each open call's arguments: its slot, and their size once `n` more bytes are read.
    fn args_sizes(&self, n: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
        let args = self.roles.iter().filter_map(|role| match *role {
            Role::Args(s) => Some(s),
            _ => None,
        });
        args.enumerate().map(move |(i, s)| {
            let from = self.args_from.get(i).copied().unwrap_or(self.read);
            (s, self.read + n - from)
        })
    }

    /// The JSON could not be read on: show nothing more for its calls. When it stopped at a
    /// repeated key, a `revised` for each call that showed its first value or is inside it.
    fn bail(&mut self, src: &[u8], slots: &mut [Slot], events: &mut Vec<Event>) {
        for role in &self.roles {
            if let Role::Call(s) | Role::Args(s) = *role {
                slots[s].frozen = true;
            }
        }
        let Some(repeat) = self.reader.repeated_path() else {
            return;
        };
        let mine = match self.ctx.args_of {
            Some(s) => s..s + 1,
            None => self.first_slot..slots.len(),
        };
        for slot in slots.get_mut(mine).unwrap_or_default() {
            let Some(args) = &slot.args_src else {
                continue;
            };
            let path = if repeat.starts_with(&args.path) {
                // In the arguments (or their key itself: all of them).
                repeat[args.path.len()..].to_vec()
            } else if args.path.starts_with(&repeat) {
                // The call is inside the repeated value (an envelope written again).
                Vec::new()
            } else {
                continue;
            };
            revise(slot, path, src, events);
        }
    }
}

/// The value last put in the top container of `reader` (or the whole value).
fn last_value(reader: &Reader) -> Option<&Value> {
    match reader.stack.last() {
        None => reader.value.as_ref(),
        Some(Frame::Object { map, .. }) => map.iter().next_back().map(|(_, v)| v),
        Some(Frame::Array(items)) => items.last(),
    }
}

/// Feeds the text of an arguments string read so far (from where it was left) to its reader.
/// A byte it gives up at is not counted: fed again, it gives up again.
fn feed_nested(nested: &mut Nested, bytes: &[u8]) -> bool {
    while nested.fed < bytes.len() {
        let b = bytes[nested.fed];
        // Whitespace before the object, as the pipeline trims it.
        if nested.reader.stack.is_empty()
            && nested.reader.value.is_none()
            && b.is_ascii_whitespace()
        {
            nested.fed += 1;
            continue;
        }
        match nested.reader.push(b) {
            Step::More | Step::Done => nested.fed += 1,
            Step::Bail => return false,
        }
    }
    true
}

/// Announces a call once its name is written (and, for marker-less JSON, its shape is a
/// call's).
fn name(
    slot: &mut Slot,
    map: &Map<String, Value>,
    next_index: &mut usize,
    events: &mut Vec<Event>,
) {
    if slot.ended {
        return;
    }
    if WRAPPERS.iter().any(|k| map.contains_key(*k))
        || matches!(map.get("function"), Some(Value::Object(_)))
    {
        return;
    }
    let found = NAME_KEYS
        .iter()
        .find_map(|k| map.get(*k).and_then(Value::as_str).map(|n| (*k, n)));
    let Some((key, written)) = found else {
        return;
    };
    let tool = bare_name(written).0;
    match &slot.tool {
        Some(shown) => {
            if *shown != tool {
                slot.frozen = true;
            }
        }
        None => {
            if slot.strict && key != "tool" && !ARG_KEYS.iter().any(|k| map.contains_key(*k)) {
                return;
            }
            let index = *next_index;
            *next_index += 1;
            events.push(Event::CallStart {
                index,
                tool: tool.clone(),
                id: ["id", "tool_call_id", "call_id"]
                    .iter()
                    .find_map(|k| map.get(*k))
                    .cloned(),
            });
            slot.index = Some(index);
            slot.tool = Some(tool);
        }
    }
}

/// The values and string bytes in `map`. Partial parameters only grow (a value is added, or
/// the open string gets longer), so two snapshots of one call with the same weight are the
/// same; comparing weights spares a copy of the parameters last shown.
fn weight(map: &Map<String, Value>) -> usize {
    fn of(v: &Value) -> usize {
        1 + match v {
            Value::String(s) => s.len(),
            Value::Array(items) => items.iter().map(of).sum(),
            Value::Object(m) => weight(m),
            _ => 0,
        }
    }
    map.iter().map(|(k, v)| k.len() + of(v)).sum()
}

/// Whether the repeated key of `repair` can have changed what `slot` showed: it comes after
/// the start of the slot's arguments in the reply. A repeat before them is another call's (a
/// broken call of the same tool that `calls` read whole), and excuses nothing here. Arguments
/// written as a string may hold the repeat in their decoded text, whose offsets are not the
/// reply's: there, as where the start is not known, any repeat may.
fn repeats_after(slot: &Slot, repair: &Repair) -> bool {
    match (&slot.args_src, repair.offset) {
        (Some(args), Some(offset)) if !args.string => offset > args.at,
        _ => true,
    }
}

/// Gives new slots the tools whose schemas will coerce their parameters.
fn equip(slots: &mut [Slot], options: &CallOptions) {
    if options.strict {
        return;
    }
    for slot in slots {
        slot.tools.clone_from(&options.tools);
    }
}

/// Whether the partial arguments of `slot` are worth building now (and notes that they are
/// built): a snapshot copies the arguments so far, so after the first one, one is built only
/// when they grew by an eighth (at least a byte) up to 64 bytes, so that a small call shows
/// each token, and by a quarter past that, which keeps the copying (and the `arguments`
/// events) linear in the arguments' size however small the chunks. The final value is shown
/// apart, when the arguments close.
fn due(slot: &mut Slot) -> bool {
    if !due_at(slot, slot.args_bytes) {
        return false;
    }
    slot.tried_bytes = Some(slot.args_bytes);
    true
}

/// [`due`] at `now` bytes of arguments, nothing noted.
fn due_at(slot: &Slot, now: usize) -> bool {
    if slot.index.is_none() || slot.frozen || slot.ended || slot.args_done {
        return false;
    }
    match slot.tried_bytes {
        Some(tried) => now >= due_size(tried),
        None => true,
    }
}

/// The size of arguments at which they are due again, after a snapshot at `tried` bytes.
fn due_size(tried: usize) -> usize {
    tried
        + if tried < 64 {
            (tried / 8).max(1)
        } else {
            tried / 4
        }
}

/// The schema that coerces the parameters of the call `slot` reads, if any.
fn definition(slot: &Slot) -> Option<&crate::tools::Tool> {
    match (&slot.tools, &slot.tool) {
        (Some(tools), Some(tool)) => tools.get(tool),
        _ => None,
    }
}

/// Whether only the text of the arguments of `slot` is wanted, so that their reader keeps
/// no values ([`Reader::record`]): a writing stream, the call announced (its tool known)
/// and no schema to coerce them. Its `arguments` events are then written from the text.
fn text_only(slot: &Slot, written: &Option<Written>) -> bool {
    written.is_some() && slot.index.is_some() && definition(slot).is_none()
}

/// An `arguments` event, if the call is announced, nothing could contradict it and the value
/// changed (the final one, `last`, is always sent). How often partial values come is
/// [`due`]'s rule. `value` builds the parameters and their open path; `text`, the reader
/// and depth of their object, is what a writing stream copies instead when it holds their
/// text and no schema coerces them.
fn show(
    slot: &mut Slot,
    text: Option<(&Reader, usize)>,
    value: impl FnOnce() -> Option<(Map<String, Value>, Option<String>)>,
    last: bool,
    events: &mut Vec<Event>,
    written: &mut Option<Written>,
) {
    let Some(index) = slot.index else {
        return;
    };
    if slot.frozen || slot.ended || slot.args_done {
        return;
    }
    let definition = definition(slot);
    if let Some(w) = written.as_mut()
        && definition.is_none()
        && let Some((reader, depth)) = text
        && let Some(weight) = reader.recorded(depth, last)
    {
        // The same parameters as `value` would build (`weight` included), as text.
        if slot.shown == Some(weight) && !last {
            return;
        }
        slot.shown = Some(weight);
        slot.shown_at = Some(shown_at(slot, last));
        let mut ops = Vec::new();
        reader.growth(&mut w.text, &mut ops);
        if ops.is_empty() && last {
            // Complete, with nothing more: the event that says so.
            w.text.extend_from_slice(b"\"members\":{}");
            ops.push((String::new(), w.text.len()));
        }
        let open = (!last).then(|| reader.open_pointer(depth));
        let paths: Vec<String> = ops
            .into_iter()
            .map(|(path, end)| {
                w.ends.push_back(end);
                path
            })
            .collect();
        push_growth(index, paths, open, events, || Added::Members(Map::new()));
        return;
    }
    if text.is_some_and(|(reader, _)| reader.light()) {
        // Its values are not kept, only its text, which shows nothing now.
        return;
    }
    let Some((mut args, open)) = value() else {
        return;
    };
    if let Some(definition) = definition {
        // What `calls` will coerce at the end is shown coerced already (nothing shown changes).
        match definition.coerce_partial(&mut args, open.as_deref()) {
            Partial::Ready => {}
            Partial::Wait if !last => return,
            Partial::Wait | Partial::Unsure => {
                slot.frozen = true;
                return;
            }
        }
    }
    let weight = weight(&args);
    if slot.shown == Some(weight) && !last {
        return;
    }
    let Some((mut ops, front)) = growth_of(args, open.as_deref(), slot.front.as_ref()) else {
        // Not what was shown, grown (not expected): show no more.
        slot.frozen = true;
        return;
    };
    if ops.is_empty() {
        if !last {
            return;
        }
        ops.push((String::new(), Added::Members(Map::new())));
    }
    slot.shown = Some(weight);
    slot.shown_at = Some(shown_at(slot, last));
    slot.front = front;
    let mut added: VecDeque<Added> = VecDeque::with_capacity(ops.len());
    let mut paths = Vec::with_capacity(ops.len());
    for (path, growth) in ops {
        paths.push(path);
        match written.as_mut() {
            // Written as text all the same (`write_events` takes it from here).
            Some(w) => {
                let _ = write!(w.text, "\"{}\":", growth.field());
                if serde_json::to_writer(&mut w.text, &AddedValue(&growth)).is_ok() {
                    w.ends.push_back(w.text.len());
                }
                added.push_back(Added::Members(Map::new()));
            }
            None => added.push_back(growth),
        }
    }
    push_growth(index, paths, open, events, || {
        added.pop_front().unwrap_or(Added::Members(Map::new()))
    });
}

/// The `arguments` events of one growth: one per value that grew (`paths`, deepest first),
/// each open at the next one's path (what grows next is still open), the last at `open`.
fn push_growth(
    index: usize,
    paths: Vec<String>,
    open: Option<String>,
    events: &mut Vec<Event>,
    mut added: impl FnMut() -> Added,
) {
    let mut paths = paths.into_iter().peekable();
    while let Some(path) = paths.next() {
        let open = match paths.peek() {
            Some(next) => Some(next.clone()),
            None => open.clone(),
        };
        events.push(Event::Arguments {
            index,
            path,
            added: added(),
            open,
        });
    }
}

/// What an `arguments` event for `slot` shows of its arguments (`last`: the whole of them).
fn shown_at(slot: &Slot, last: bool) -> Shown {
    if last {
        Shown::Whole
    } else {
        Shown::Part(slot.args_bytes)
    }
}

/// Why a `revised` is given.
const REVISED: &str =
    "the model wrote this key again in the same object: calls keeps its last value";
const REVISED_ALL: &str = "the model wrote the call's arguments again (or an object holding the call): calls keeps the last ones";

/// A `revised` for `path` (in the parameters) of the call `slot` reads, when the arguments it
/// showed hold that path (read again from `src`, the text that holds them).
fn revise(slot: &mut Slot, path: Vec<Seg>, src: &[u8], events: &mut Vec<Event>) {
    if slot.ended || slot.index.is_none() {
        return;
    }
    let Some((shown, _)) = shown_again(slot, src) else {
        return;
    };
    if holds(&shown, &path) {
        push_revised(slot, path, events);
    }
}

/// The `revised` event for `path`, unless one named it or a path above it.
fn push_revised(slot: &mut Slot, path: Vec<Seg>, events: &mut Vec<Event>) {
    let Some(index) = slot.index else {
        return;
    };
    if slot.revised.iter().any(|r| path.starts_with(r)) {
        return;
    }
    events.push(Event::Revised {
        index,
        path: pointer(&path),
        reason: if path.is_empty() {
            REVISED_ALL
        } else {
            REVISED
        }
        .to_owned(),
    });
    slot.revised.push(path);
}

/// Whether `map` has a value at `path` (`[]`: the map itself).
fn holds(map: &Map<String, Value>, path: &[Seg]) -> bool {
    let Some((first, rest)) = path.split_first() else {
        return true;
    };
    let mut at = match first {
        Seg::Key(k) => map.get(k),
        Seg::Index(_) => None,
    };
    for seg in rest {
        at = match (at, seg) {
            (Some(Value::Object(m)), Seg::Key(k)) => m.get(k),
            (Some(Value::Array(items)), Seg::Index(i)) => items.get(*i),
            _ => None,
        };
    }
    at.is_some()
}

/// Parameters as an `arguments` event showed them, and their open path (`None`: complete).
type ShownArgs = (Map<String, Value>, Option<Vec<Seg>>);

/// The parameters the last `arguments` event of `slot` showed, and their open path (`None`:
/// complete): the arguments read again from `src` (the text that holds them) as far as they
/// were then, coerced as they were shown. Called once or twice per call, and only for a call
/// whose keys repeat, so events never keep a copy of what they showed.
fn shown_again(slot: &Slot, src: &[u8]) -> Option<ShownArgs> {
    let args = slot.args_src.as_ref()?;
    let shown = slot.shown_at?;
    let text = src.get(args.at..)?;
    let reader = if args.string {
        // The string's text, then the JSON in it, as `feed_nested` read it.
        let mut string = Reader::new();
        for &b in text {
            match string.push(b) {
                Step::More => {}
                Step::Done => break,
                Step::Bail => return None,
            }
            if let (Shown::Part(n), Some(bytes)) = (shown, string.open_string())
                && bytes.len() >= n
            {
                break;
            }
        }
        let bytes = match (&string.value, string.open_string()) {
            (Some(Value::String(s)), _) => s.as_bytes(),
            (None, Some(bytes)) => bytes,
            _ => return None,
        };
        let bytes = match shown {
            Shown::Part(n) => bytes.get(..n)?,
            Shown::Whole => bytes,
        };
        let mut nested = Nested {
            reader: Reader::new(),
            fed: 0,
        };
        if !feed_nested(&mut nested, bytes) {
            return None;
        }
        nested.reader
    } else {
        let end = match shown {
            Shown::Part(n) => (n + 1).min(text.len()),
            Shown::Whole => text.len(),
        };
        let mut reader = Reader::new();
        if !read_value(&mut reader, &text[..end]) {
            return None;
        }
        reader
    };
    let (mut params, open) = match shown {
        Shown::Whole => match reader.value {
            Some(Value::Object(params)) => (params, None),
            _ => return None,
        },
        Shown::Part(_) => match reader.snapshot(0)? {
            (Value::Object(params), path) => (params, Some(path)),
            _ => return None,
        },
    };
    if let (Some(tools), Some(tool)) = (&slot.tools, &slot.tool)
        && let Some(definition) = tools.get(tool)
    {
        let open = open.as_deref().map(pointer);
        definition.coerce_partial(&mut params, open.as_deref());
    }
    Some((params, open))
}

/// Pushes `text` to `reader` up to the end of its value, as a byte at a time would, but a
/// string's plain run (no quote, no backslash) in one go: the end of a reply reads a call's
/// arguments again ([`shown_again`]), and a long string was most of that. `false` where the
/// reader gives up.
fn read_value(reader: &mut Reader, text: &[u8]) -> bool {
    let mut at = 0;
    while at < text.len() {
        if reader.in_plain_string() {
            let run = memchr::memchr2(b'"', b'\\', &text[at..]).unwrap_or(text.len() - at);
            if run > 1 && reader.extend_string(&text[at..at + run]) {
                at += run;
                continue;
            }
        }
        match reader.push(text[at]) {
            Step::More => at += 1,
            Step::Done => return true,
            Step::Bail => return false,
        }
    }
    true
}

/// The paths where `last` does not keep what `shown` showed, `open` being the path still
/// open in it (`None`: all of it closed): a closed value that `last` changes or lacks, an
/// open string it does not extend. Inside an open container, each member is looked at.
fn unkept(
    shown: &Value,
    last: Option<&Value>,
    open: Option<&[Seg]>,
    path: &mut Vec<Seg>,
    out: &mut Vec<Vec<Seg>>,
) {
    let Some(last) = last else {
        out.push(path.clone());
        return;
    };
    let Some(open) = open else {
        if shown != last {
            out.push(path.clone());
        }
        return;
    };
    match (shown, last) {
        (Value::Object(shown), Value::Object(last)) => {
            unkept_map(shown, last, Some(open), path, out)
        }
        (Value::Array(shown), Value::Array(last)) => {
            for (i, v) in shown.iter().enumerate() {
                let inner = match open.split_first() {
                    Some((Seg::Index(j), rest)) if *j == i => Some(rest),
                    _ => None,
                };
                path.push(Seg::Index(i));
                unkept(v, last.get(i), inner, path, out);
                path.pop();
            }
        }
        (Value::String(shown), Value::String(last)) if open.is_empty() => {
            if !last.starts_with(shown.as_str()) {
                out.push(path.clone());
            }
        }
        _ => {
            if shown != last {
                out.push(path.clone());
            }
        }
    }
}

/// The paths of the values `shown` (a call's parameters as its `arguments` showed them, `open`
/// still growing) that `last` does not keep.
fn unkept_paths(
    shown: &Map<String, Value>,
    last: &Map<String, Value>,
    open: Option<&[Seg]>,
) -> Vec<Vec<Seg>> {
    let mut out = Vec::new();
    unkept_map(shown, last, open, &mut Vec::new(), &mut out);
    out
}

/// [`unkept`] for the members of an object.
fn unkept_map(
    shown: &Map<String, Value>,
    last: &Map<String, Value>,
    open: Option<&[Seg]>,
    path: &mut Vec<Seg>,
    out: &mut Vec<Vec<Seg>>,
) {
    for (k, v) in shown {
        let inner = match open.and_then(<[Seg]>::split_first) {
            Some((Seg::Key(j), rest)) if j == k => Some(rest),
            _ => None,
        };
        path.push(Seg::Key(k.clone()));
        unkept(v, last.get(k), inner, path, out);
        path.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    thread_local! {
        /// Chunks read by the skim (in this test thread).
        pub(super) static SKIMMED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// Every `calls` fixture fed a character at a time, with and without [`Stream::skim`]
    /// and the refreshes left out when quiet: the same events, so the skim reads chunks
    /// exactly as the byte-by-byte scan does, and a refresh left out would have done nothing.
    #[test]
    fn skimming_gives_the_events_of_the_scan() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/calls");
        let mut replies = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "jsonl") {
                continue;
            }
            for line in std::fs::read_to_string(&path).unwrap().lines() {
                let Ok(case) = serde_json::from_str::<Value>(line) else {
                    continue;
                };
                let Some(input) = case["input"].as_str() else {
                    continue;
                };
                let mut format = None;
                if let Some(flags) = case["options"].as_array() {
                    let flags: Vec<_> = flags.iter().filter_map(Value::as_str).collect();
                    // Options that change what is read, not how (tools are left out).
                    if let Some(i) = flags.iter().position(|f| *f == "--format") {
                        format = flags.get(i + 1).map(|f| (*f).to_owned());
                    }
                }
                for writing in [false, true] {
                    let options = CallOptions {
                        format: format.clone(),
                        ..CallOptions::default()
                    };
                    let make = || {
                        if writing {
                            Stream::writing(options.clone())
                        } else {
                            Stream::new(options.clone())
                        }
                    };
                    let (mut fast, mut slow) = (make(), make());
                    slow.skims = false;
                    let (mut a, mut b) = (Vec::new(), Vec::new());
                    let mut chars = [0u8; 4];
                    for c in input.chars() {
                        let c = c.encode_utf8(&mut chars);
                        fast.feed_into(c, &mut a);
                        slow.feed_into(c, &mut b);
                    }
                    a.extend(fast.finish());
                    b.extend(slow.finish());
                    let (mut la, mut lb) = (Vec::new(), Vec::new());
                    fast.write_events(&mut a, Shape::Native, &mut la).unwrap();
                    slow.write_events(&mut b, Shape::Native, &mut lb).unwrap();
                    assert_eq!(
                        String::from_utf8_lossy(&la),
                        String::from_utf8_lossy(&lb),
                        "{}: {input:?}",
                        path.display()
                    );
                }
                replies += 1;
            }
        }
        assert!(replies > 100, "{replies} replies");
        assert!(
            SKIMMED.with(|n| n.get()) > 1000,
            "the skim read too few characters"
        );
    }
}
