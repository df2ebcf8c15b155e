//! The end of the reply: `calls`' results matched to the calls announced, and the `revised`
//! events for values a repeated key changed.

use super::arguments::weight;
use super::event::{Event, Prose};
use super::{CallSlot, Held, Nested, Shown, Stream, feed_nested, found_in};
use crate::calls::formats::json::{ARG_KEYS, WRAPPERS};
use crate::calls::partial::{Reader, Seg, Step, is_object, is_object_in_string, pointer};
use crate::calls::{Call, Extracted, Failure};
use crate::{Repair, RepairKind};
use serde_json::{Map, Value};

impl Stream {
    /// The results, from `calls` on the whole reply, matched to the calls announced.
    pub(super) fn settle(&mut self, result: &Result<Extracted, Failure>, events: &mut Vec<Event>) {
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
            // The usual call: shown whole, and `calls` gives it as it was written.
            Some(Shown::Whole) if shown_unchanged(slot, self.src_of(s), &call.parameters) => {
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
    /// tests/stream/ and the calls fuzz target catch.
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

/// Whether the repeated key of `repair` can have changed what `slot` showed: it comes after
/// the start of the slot's arguments in the reply. A repeat before them is another call's (a
/// broken call of the same tool that `calls` read whole), and excuses nothing here. Arguments
/// written as a string may hold the repeat in their decoded text, whose offsets are not the
/// reply's: there, as where the start is not known, any repeat may.
fn repeats_after(slot: &CallSlot, repair: &Repair) -> bool {
    match (&slot.args_src, repair.offset) {
        (Some(args), Some(offset)) if !args.string => offset > args.at,
        _ => true,
    }
}

/// Why a `revised` is given.
const REVISED: &str =
    "the model wrote this key again in the same object: calls keeps its last value";
const REVISED_ALL: &str = "the model wrote the call's arguments again (or an object holding the call): calls keeps the last ones";

/// A `revised` for `path` (in the parameters) of the call `slot` reads, when the arguments it
/// showed hold that path (read again from `src`, the text that holds them).
pub(super) fn revise(slot: &mut CallSlot, path: Vec<Seg>, src: &[u8], events: &mut Vec<Event>) {
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
fn push_revised(slot: &mut CallSlot, path: Vec<Seg>, events: &mut Vec<Event>) {
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
fn shown_again(slot: &CallSlot, src: &[u8]) -> Option<ShownArgs> {
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

/// Whether the arguments `slot` showed whole are `parameters` as they are, to the order of
/// their members: [`shown_again`] would read them so, and they would agree; found without
/// building them. Arguments written as a string are decoded once and their JSON walked the
/// same way (read again byte by byte, they cost the end of an `encoded` reply more than
/// `calls` itself). `false` when that cannot be told so (a schema that coerced what was
/// shown, or any difference): then `shown_again` tells.
fn shown_unchanged(slot: &CallSlot, src: &[u8], parameters: &Map<String, Value>) -> bool {
    let Some(args) = &slot.args_src else {
        return false;
    };
    let coerced =
        matches!((&slot.tools, &slot.tool), (Some(tools), Some(tool)) if tools.get(tool).is_some());
    let Some(text) = src.get(args.at..) else {
        return false;
    };
    !coerced
        && if args.string {
            is_object_in_string(text, parameters)
        } else {
            is_object(text, parameters)
        }
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
