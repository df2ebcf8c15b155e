//! The `arguments` events: when a call's partial parameters are shown, and what they gained.

use super::event::{Added, AddedValue, Event};
use super::{CallSlot, Shown, Written};
use crate::calls::CallOptions;
use crate::calls::partial::{Reader, Seg, pointer};
use crate::schema::Partial;
use serde_json::{Map, Value};
use std::collections::VecDeque;
use std::io::Write;

/// The open path of the parameters an `arguments` event left, and the size of each value on
/// it (members of a container, bytes of a string), from the parameters object down: what the
/// next event adds to is found from it, without a copy of what was shown.
#[derive(Debug)]
pub(super) struct Front {
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

/// The parameters object at `depth` of `reader` as it stands, and its open path.
pub(super) fn object_snapshot(
    reader: &Reader,
    depth: usize,
) -> Option<(Map<String, Value>, Option<String>)> {
    match reader.snapshot(depth)? {
        (Value::Object(args), path) => Some((args, Some(pointer(&path)))),
        _ => None,
    }
}

/// The values and string bytes in `map`. Partial parameters only grow (a value is added, or
/// the open string gets longer), so two snapshots of one call with the same weight are the
/// same; comparing weights spares a copy of the parameters last shown.
pub(super) fn weight(map: &Map<String, Value>) -> usize {
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

/// Gives new slots the tools whose schemas will coerce their parameters, and, when
/// `snapshots`, the parameters shown (none yet) that their `arguments` events carry whole.
pub(super) fn attach_tools(
    slots: &mut [CallSlot],
    options: &CallOptions,
    snapshots: bool,
    step: usize,
) {
    for slot in slots {
        slot.step = step;
        if !options.strict {
            slot.tools.clone_from(&options.tools);
        }
        if snapshots {
            slot.parameters = Some(Map::new());
        }
    }
}

/// Whether the partial arguments of `slot` are worth building now (and notes that they are
/// built): once its step ([`ARGUMENTS_STEP`] unless [`super::Stream::with_arguments_step`]
/// says otherwise) bytes of them are read, and after that when they grew by a quarter, and
/// at least that step. A snapshot copies the arguments so far, so the quarter
/// keeps the copying (and the `arguments` events) linear in the arguments' size however small
/// the chunks; the step keeps the events' own bytes (some 80 each, the delta's path twice)
/// from outweighing what they add: showing a short call token by token made the events of a
/// reply of many small calls five times the reply. The final value is shown apart, when the
/// arguments close.
pub(super) fn snapshot_due(slot: &mut CallSlot) -> bool {
    if !snapshot_due_at(slot, slot.args_bytes) {
        return false;
    }
    slot.tried_bytes = Some(slot.args_bytes);
    true
}

/// [`snapshot_due`] at `now` bytes of arguments, nothing noted.
pub(super) fn snapshot_due_at(slot: &CallSlot, now: usize) -> bool {
    if slot.index.is_none() || slot.frozen || slot.ended || slot.args_done {
        return false;
    }
    match slot.tried_bytes {
        Some(tried) => now >= next_snapshot_size(tried, slot.step),
        None => now >= slot.step,
    }
}

/// By default, the fewest bytes of arguments read before their first `arguments` event, and
/// between two (the final one, when they close, comes whatever their size).
pub const ARGUMENTS_STEP: usize = 128;

/// The one reading of an arguments step that every surface takes (`--arguments-step`, Python's
/// `arguments_step`, Node's `argumentsStep`): bytes, 1 or more, with its message. (The library's
/// own [`super::Stream::with_arguments_step`] makes 0 a byte.)
pub fn arguments_step(bytes: u64) -> Result<usize, String> {
    match bytes {
        0 => Err(
            "the arguments step is the bytes of a call's arguments between two \
                  `arguments` events: 1 or more, not 0"
                .to_owned(),
        ),
        n => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
    }
}

/// The size of arguments at which they are due again, after a snapshot at `tried` bytes with
/// the step `step` (at least a byte).
pub(super) fn next_snapshot_size(tried: usize, step: usize) -> usize {
    tried + (tried / 4).max(step)
}

/// The schema that coerces the parameters of the call `slot` reads, if any.
fn definition(slot: &CallSlot) -> Option<&crate::tools::Tool> {
    match (&slot.tools, &slot.tool) {
        (Some(tools), Some(tool)) => tools.get(tool),
        _ => None,
    }
}

/// Whether only the text of the arguments of `slot` is wanted, so that their reader keeps
/// no values ([`Reader::record`]): a writing stream, the call announced (its tool known)
/// and no schema to coerce them. Its `arguments` events are then written from the text.
pub(super) fn text_only(slot: &CallSlot, written: &Option<Written>) -> bool {
    written.is_some() && slot.index.is_some() && definition(slot).is_none()
}

/// An `arguments` event, if the call is announced, nothing could contradict it and the value
/// changed (the final one, `last`, is always sent). How often partial values come is
/// [`snapshot_due`]'s rule. `value` builds the parameters and their open path; `text`, the reader
/// and depth of their object, is what a writing stream copies instead when it holds their
/// text and no schema coerces them.
pub(super) fn push_arguments_events(
    slot: &mut CallSlot,
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
        push_growth(index, paths, open, events, None, || {
            Added::Members(Map::new())
        });
        return;
    }
    if text.is_some_and(|(reader, _)| reader.text_only()) {
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
    push_growth(index, paths, open, events, slot.parameters.as_mut(), || {
        added.pop_front().unwrap_or(Added::Members(Map::new()))
    });
}

/// The `arguments` events of one growth: one per value that grew (`paths`, deepest first),
/// each open at the next one's path (what grows next is still open), the last at `open`.
/// With `shown` (the whole parameters shown, for a stream that carries them), each event
/// adds its growth to it and carries the result.
fn push_growth(
    index: usize,
    paths: Vec<String>,
    open: Option<String>,
    events: &mut Vec<Event>,
    mut shown: Option<&mut Map<String, Value>>,
    mut added: impl FnMut() -> Added,
) {
    let mut paths = paths.into_iter().peekable();
    while let Some(path) = paths.next() {
        let open = match paths.peek() {
            Some(next) => Some(next.clone()),
            None => open.clone(),
        };
        let added = added();
        // The rule a consumer applies ([`Added::apply`]), applied here once for it.
        let parameters = shown.as_deref_mut().map(|shown| {
            added.apply(shown, &path);
            shown.clone()
        });
        events.push(Event::Arguments {
            index,
            path,
            added,
            open,
            parameters,
        });
    }
}

/// What an `arguments` event for `slot` shows of its arguments (`last`: the whole of them).
fn shown_at(slot: &CallSlot, last: bool) -> Shown {
    if last {
        Shown::Whole
    } else {
        Shown::Part(slot.args_bytes)
    }
}
