//! The JSON after a marker read for calls: which frame is a call, its arguments, its name.

use super::arguments::{
    next_snapshot_size, object_snapshot, push_arguments_events, snapshot_due, snapshot_due_at,
    text_only,
};
use super::event::Event;
use super::nested::{plain_run, read_nested};
use super::settle::revise;
use super::{ArgsSrc, CallSlot, Nested, Written, feed_nested};
use crate::calls::formats::json::{ARG_KEYS, NAME_KEYS, WRAPPERS};
use crate::calls::partial::{Frame, Reader, Step};
use crate::calls::scan::bare_name;
use serde_json::{Map, Value};

/// How the JSON after a marker is read.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ctx {
    /// Call objects (or lists of them) are read; `None`: the arguments of this slot.
    pub(super) args_of: Option<usize>,
    /// Apertus: `{NAME: {args}}`.
    pub(super) name_is_key: bool,
    /// Marker-less JSON: a call needs an argument key (or the `tool` envelope).
    pub(super) strict: bool,
    /// More JSON values may follow in the body (`;`, `,` or nothing between).
    pub(super) seq: bool,
    /// Where the block ends, to skip to when its JSON cannot be read.
    pub(super) close: Option<&'static str>,
}

impl Ctx {
    /// One JSON value that holds whole calls (names and arguments); `strict` for marker-less
    /// JSON.
    pub(super) fn whole_calls(strict: bool) -> Ctx {
        Ctx {
            args_of: None,
            name_is_key: false,
            strict,
            seq: false,
            close: None,
        }
    }
}

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

/// JSON being read for calls.
pub(super) struct CallReader {
    pub(super) reader: Reader,
    roles: Vec<Role>,
    ctx: Ctx,
    /// Bytes read, for the size of arguments.
    pub(super) read: usize,
    /// For each `Args` frame on the stack: `read` when it opened.
    args_from: Vec<usize>,
    /// How many announced calls were read to their end.
    pub(super) closes: usize,
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
    pub(super) nested_at: Option<usize>,
    /// Plain bytes of the open string that the stream's skim counted in `read` but did not
    /// give to `reader` yet: the last this many bytes before the stream's position. They are
    /// given in one go ([`Stream::catch_up`](super::Stream)) before the reader is used, so
    /// that a string fed a byte at a time costs no append per byte.
    pub(super) deferred: usize,
}

impl CallReader {
    pub(super) fn new(ctx: Ctx, start: usize, first_slot: usize) -> CallReader {
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
            deferred: 0,
        }
    }

    /// Reads byte `b`; `src` is the text read (the byte is at `self.start + self.read`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn push(
        &mut self,
        b: u8,
        src: &[u8],
        slots: &mut Vec<CallSlot>,
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

    /// [`CallReader::push`] of a byte that is no bracket, read while [`CallReader::quiet`]:
    /// no frame opens or closes, and the top one is no call object's (a refresh would have
    /// found it, and made the reader not quiet), so the byte only goes to the JSON reader.
    #[inline]
    pub(super) fn push_flat(&mut self, b: u8) -> Step {
        debug_assert!(!matches!(b, b'{' | b'[' | b'}' | b']') && self.nested_at.is_none());
        debug_assert!(!matches!(self.roles.last(), Some(Role::Call(_))));
        let step = self.reader.push(b);
        if step == Step::Bail {
            self.quiet_until = 0;
            return step;
        }
        self.read += 1;
        step
    }

    /// Notes where a call's arguments start (the first value of an argument key that is an
    /// object or a string: the one its `arguments` events show): at `depth` of the stack,
    /// their first byte just read.
    fn found_args(&self, slot: &mut CallSlot, depth: usize, string: bool) {
        if slot.args_src.is_none() {
            slot.args_src = Some(ArgsSrc {
                path: self.reader.path_to(depth),
                at: self.start + self.read - 1,
                string,
            });
        }
    }

    /// The role of the frame just opened.
    fn role(&self, slots: &mut Vec<CallSlot>) -> Role {
        let stack = &self.reader.stack;
        let depth = stack.len() - 1;
        let object = matches!(stack[depth], Frame::Object { .. });
        let ctx = self.ctx;
        let new_call = |slots: &mut Vec<CallSlot>| {
            slots.push(CallSlot {
                strict: ctx.strict,
                name_is_key: ctx.name_is_key,
                ..CallSlot::default()
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
        slots: &mut [CallSlot],
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
                    push_arguments_events(
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
                        push_arguments_events(
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
                        push_arguments_events(
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
                    // Read to their end, the arguments are not read again: their values go
                    // now, not with the stream (memory: a reply of many calls).
                    if !slot.args_done {
                        slot.nested = Some(nested);
                    }
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
    pub(super) fn refresh(
        &mut self,
        src: &[u8],
        slots: &mut [CallSlot],
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
                        if slot.args_key.as_deref() == Some(k.as_str())
                            && read_nested(slot, bytes, src, events, written)
                        {
                            nested_at = Some(s);
                        }
                    }
                }
                Role::Args(s) => {
                    let from = self.args_from.get(args_seen).copied().unwrap_or(self.read);
                    args_seen += 1;
                    let slot = &mut slots[s];
                    slot.args_bytes = self.read - from;
                    if snapshot_due(slot) {
                        push_arguments_events(
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
        self.reader.forget_written();
    }

    /// Whether a refresh after `n` more bytes of the open string would show nothing: the
    /// string is not a call object's (a name, or arguments as a string, read in refresh),
    /// and no call's arguments would be due. Known since the last refresh, with no frame
    /// opened or closed by `push` since (and, so, nothing changed in a call object that is not
    /// on top).
    pub(super) fn quiet(&self, n: usize) -> bool {
        self.read + n < self.quiet_until
    }

    /// How many more single bytes would each be [`CallReader::quiet`] now.
    pub(super) fn quiet_left(&self) -> usize {
        self.quiet_until.saturating_sub(self.read + 1)
    }

    /// The `read` at which a refresh may show something: 0 when the top frame is a call
    /// object's, else when the first call's arguments fall due ([`snapshot_due_at`]).
    fn quiet_until(&self, slots: &[CallSlot]) -> usize {
        if matches!(self.roles.last(), Some(Role::Call(_))) {
            return 0;
        }
        let mut until = usize::MAX;
        for (s, size) in self.args_sizes(0) {
            let slot = &slots[s];
            if slot.index.is_none() || slot.frozen || slot.ended || slot.args_done {
                continue;
            }
            let due = slot
                .tried_bytes
                .map_or(slot.step, |tried| next_snapshot_size(tried, slot.step));
            // Due once its size reaches this: `read` is then `until`.
            until = until.min((self.read + due).saturating_sub(size));
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
    pub(super) fn bail(&mut self, src: &[u8], slots: &mut [CallSlot], events: &mut Vec<Event>) {
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

/// Announces a call once its name is written (and, for marker-less JSON, its shape is a
/// call's).
fn name(
    slot: &mut CallSlot,
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

impl CallReader {
    /// Reads `b` as `push` and a refresh would, when it only adds to a string inside
    /// arguments written as a JSON string ([`CallReader::nested_at`]): a plain byte (neither
    /// a quote nor a backslash, printable), in the plain run of the arguments string, which
    /// is also that of a string in the JSON it holds, and no arguments event due after it.
    /// Whether it did.
    pub(super) fn nested_byte(&mut self, b: u8, slots: &mut [CallSlot]) -> bool {
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
            || snapshot_due_at(slot, fed)
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

    /// How many more plain bytes (printable ASCII, neither a quote nor a backslash) would each
    /// be read by [`CallReader::nested_byte`] now: the stream takes them on a run, and gives
    /// them to both readers when it ends ([`CallReader::nested_run`]).
    pub(super) fn nested_quiet_left(&self, slots: &[CallSlot]) -> usize {
        let Some(slot) = self.nested_at.and_then(|s| slots.get(s)) else {
            return 0;
        };
        let Some(nested) = slot.nested.as_deref() else {
            return 0;
        };
        if slot.frozen
            || nested.reader.stack.is_empty()
            || !nested.reader.in_plain_string()
            || !self.reader.in_plain_string()
        {
            return 0;
        }
        if slot.index.is_none() || slot.ended || slot.args_done {
            // No arguments event is ever due ([`snapshot_due_at`]).
            return usize::MAX;
        }
        let due = slot
            .tried_bytes
            .map_or(slot.step, |tried| next_snapshot_size(tried, slot.step));
        // The bytes up to the one that makes the arguments due.
        due.saturating_sub(nested.fed + 1)
    }

    /// Reads the plain bytes the stream took on a run granted by
    /// [`CallReader::nested_quiet_left`], as [`CallReader::nested_byte`] would have one by one.
    pub(super) fn nested_run(&mut self, bytes: &[u8], slots: &mut [CallSlot]) {
        let Some(slot) = self.nested_at.and_then(|s| slots.get_mut(s)) else {
            debug_assert!(false, "a nested run without its call");
            return;
        };
        let Some(nested) = slot.nested.as_deref_mut() else {
            debug_assert!(false, "a nested run without its reader");
            return;
        };
        let taken =
            self.reader.extend_plain_string(bytes) && nested.reader.extend_plain_string(bytes);
        debug_assert!(taken, "nested run bytes not taken");
        nested.fed += bytes.len();
        slot.args_bytes = nested.fed;
        self.read += bytes.len();
    }

    /// Reads `chunk` as `push` for each byte, then a refresh, would, while its bytes stay in
    /// the arguments string on top ([`CallReader::nested_at`]): an escape, a quote or a bracket
    /// of the JSON inside it, anything but the string's own closing quote. Since the last
    /// refresh nothing but that string grew, so the refresh would only read on in the JSON
    /// inside it ([`read_nested`]), which is all this does after the bytes. How many bytes it
    /// read: all (the refresh done too), or fewer, the rest left to the scan and the refresh.
    pub(super) fn nested_chunk(
        &mut self,
        chunk: &[u8],
        src: &[u8],
        slots: &mut [CallSlot],
        events: &mut Vec<Event>,
        written: &mut Option<Written>,
    ) -> usize {
        let Some(s) = self.nested_at else {
            return 0;
        };
        let Some(slot) = slots.get_mut(s) else {
            return 0;
        };
        // What the refresh reads the string for (it would not read a frozen call's).
        if slot.frozen || slot.nested.is_none() {
            return 0;
        }
        let mut n = 0;
        while n < chunk.len() {
            let b = chunk[n];
            // A plain run, as the scan reads it.
            if chunk.len() - n > 1 && b != b'"' && b != b'\\' && self.reader.in_plain_string() {
                let run = plain_run(&chunk[n..]);
                if run > 1 && self.reader.extend_string(&chunk[n..n + run]) {
                    n += run;
                    self.read += run;
                    continue;
                }
            }
            if !self.reader.string_inner_byte(b) {
                break;
            }
            n += 1;
            self.read += 1;
        }
        if n < chunk.len() {
            // As `push` leaves it: the scan reads on from the byte that ends the string.
            if n > 0 {
                self.nested_at = None;
            }
            return n;
        }
        let Some(bytes) = self.reader.open_string() else {
            // Not reached: the arguments string is still open.
            self.nested_at = None;
            return n;
        };
        let ok = read_nested(slot, bytes, src, events, written);
        self.nested_at = ok.then_some(s);
        #[cfg(test)]
        super::NESTED_CHUNKS.with(|n| n.set(n.get() + 1));
        n
    }
}
