//! The byte scan over the reply: text, reasoning blocks, markers, the names after them and the
//! JSON bodies they start.

use super::arguments::attach_tools;
use super::call_reader::{CallReader, Ctx};
use super::event::Event;
use super::markers::Action;
use super::{CallSlot, Stream};
use crate::calls::formats::mistral::{ARROWS_TEXT, MISTRAL_TAGS};
use crate::calls::formats::{Body, Kind, TABLE};
use crate::calls::partial::Step;
use crate::calls::scan::{REASONING, bare_name, find_bytes, is_name_byte};
use serde_json::Value;

/// What the scan is in the middle of.
pub(super) enum Mode {
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
    /// Reading JSON in this context, from offset `start` of the reply; the calls it finds get
    /// slots from `first_slot` on.
    fn json(ctx: Ctx, start: usize, first_slot: usize) -> Mode {
        Mode::Json(Box::new(CallReader::new(ctx, start, first_slot)), ctx)
    }

    /// The mode after JSON read in this context: read to its end (`done`), or given up.
    pub(super) fn after_json(ctx: Ctx, done: bool) -> Mode {
        match (done, ctx.close) {
            (true, _) if ctx.seq && ctx.args_of.is_none() => Mode::Body {
                ctx,
                ticks: 0,
                lang: false,
            },
            (true, _) | (false, None) => Mode::Text,
            (false, Some(close)) => Mode::SkipTo(close),
        }
    }
}

pub(super) enum Head {
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
        /// `<function=NAME=` or `<function=NAME(` read: the JSON must open next (Groq's
        /// dialect, as `formats::xml::eq_dialect` reads it).
        eq: bool,
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

impl Stream {
    /// Scans the bytes not yet looked at.
    pub(super) fn scan(&mut self, events: &mut Vec<Event>) {
        self.catch_up();
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
                    match self.markers.at_memo(p, &bytes[p..], &mut self.partial) {
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
                        attach_tools(
                            &mut self.slots[slots..],
                            &self.options,
                            self.snapshots,
                            self.arguments_step,
                        );
                    }
                    match step {
                        Step::More => self.pos += 1,
                        Step::Done => {
                            self.pos += 1;
                            self.mode = Mode::after_json(ctx, true);
                        }
                        Step::Bail => {
                            reader.bail(bytes, &mut self.slots, events);
                            self.mode = Mode::after_json(ctx, false);
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
                    eq: false,
                });
            }
            Action::Arrows => {
                self.mode = Mode::Head(Head::Name {
                    name: String::new(),
                    end: b'\n',
                    close: None,
                    not_a_call: Some(ARROWS_TEXT),
                    eq: false,
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
                eq,
            } => {
                // `<function=NAME{`, `<function=NAME={` or `<function=NAME({`: the arguments
                // open here.
                let dialect = *end == b'>' && !name.is_empty() && b == b'{';
                if b == *end && !*eq && !name.is_empty() && Some(name.as_str()) != *not_a_call
                    || dialect
                {
                    let (name, close) = (std::mem::take(name), *close);
                    self.start_call(name, None, events);
                    self.args_body(close);
                    if !dialect {
                        self.pos += 1;
                    }
                    return;
                } else if *eq {
                    give_up = true;
                } else if *end == b'>' && !name.is_empty() && matches!(b, b'=' | b'(') {
                    *eq = true;
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
    pub(super) fn start_call(&mut self, tool: String, id: Option<Value>, events: &mut Vec<Event>) {
        let index = self.next_index;
        self.next_index += 1;
        events.push(Event::CallStart {
            index,
            tool: tool.clone(),
            id,
        });
        self.slots.push(CallSlot {
            index: Some(index),
            tool: Some(tool),
            ..CallSlot::default()
        });
        let last = self.slots.len() - 1;
        attach_tools(
            &mut self.slots[last..],
            &self.options,
            self.snapshots,
            self.arguments_step,
        );
    }

    pub(super) fn retract_all(&mut self, reason: &str, events: &mut Vec<Event>) {
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
    pub(super) fn refresh(&mut self, events: &mut Vec<Event>) {
        self.catch_up();
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
}
