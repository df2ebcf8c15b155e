//! The reply's text and reasoning as they arrive: the `text`, `reasoning` and `corrected`
//! events of a [`super::Stream`].
//!
//! `calls` makes its text of the parts of the reply between what it cuts out (reasoning
//! blocks, calls), noise tokens removed, each part trimmed, joined with newlines; and its
//! reasoning of the reasoning blocks the same way. [`Live`] reads the reply as it comes and
//! shows at once what it can tell of both. It holds back only:
//! - bytes that may still become a marker: a proper prefix of a call marker of the format
//!   table (or of the stream's own [`super::Markers`]), of a reasoning tag, of a noise token
//!   or of a code fence;
//! - white space that `calls` may trim (at the end of a part);
//! - a `{` or `[` that may open a marker-less call (with the code fence right before it),
//!   until its brackets close and `calls` reads that JSON alone as the text it is.
//!
//! Once a call marker is read it stops: what follows is given at the end, from `calls` on the
//! whole reply. What `calls` decides can depend on bytes that have not arrived: a
//! `</think>` with no opening one makes everything before it reasoning (shown as soon as the
//! close is read), and rarer cases (the reply turns out to be one quoted JSON string, or in
//! another format) are known at the end. Then a `corrected` event replaces what was shown of
//! that field, so that a consumer that applies the events ends with `calls`' text and
//! reasoning.

use std::borrow::Cow;

use super::event::{Event, Prose};
use super::flow::{Flow, Unwritten, append};
use super::markers::{Action, Markers};
use crate::calls::formats::{CODE_FENCE, Kind, TABLE, call_tokens, labelled_open};
use crate::calls::harmony;
use crate::calls::scan::{NOISE, REASONING, reasoning_closes};
use crate::calls::{CallOptions, extract};

/// What a held-back sequence is, once read in full.
#[derive(Debug, Clone, Copy)]
enum Hold {
    /// Opens a reasoning block of this kind (index in `REASONING`).
    Open(usize),
    /// Closes one: the kind of close (index in [`reasoning_closes`]).
    Close(usize),
    /// A noise token: `calls` leaves it out of the text.
    Noise,
    /// A code fence, which `calls` cuts with the marker-less call right after it.
    Fence,
    /// A marker of a call or of a format's markup.
    Marker,
}

/// Where the reader is.
#[derive(Debug, Clone, Copy)]
enum State {
    Text,
    /// In a reasoning block, until `close` (or a call token).
    Think {
        close: &'static str,
    },
    /// In a `{` or `[` at `start`, as [`crate::args::locate::json_extent`] reads brackets.
    Bracket {
        start: usize,
        depth: usize,
        in_string: bool,
        escaped: bool,
    },
    /// A reply that starts with `"` may be one JSON string holding the reply (`calls` reads
    /// what it holds): held while only white space follows its closing quote.
    Quoted {
        escaped: bool,
        closed: bool,
    },
    /// After a call marker: the rest is given at the end.
    Stopped,
}

/// Which source of reasoning is shown live: the reply's own blocks, or a server's
/// `reasoning_content` (`calls` puts the blocks first; the second source waits for the end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Inline,
    Server,
}

/// The text and reasoning of a reply read as it arrives (see the module documentation).
pub(super) struct Live {
    holds: Vec<(Cow<'static, [u8]>, Hold)>,
    /// Where the holds that start with each byte begin in `holds` (they end where the next
    /// byte's begin).
    from: [u16; 257],
    /// Bytes that start a held-back sequence (or a bracket, with `brackets`).
    first: [bool; 256],
    /// A `{` or `[` may open a marker-less call.
    brackets: bool,
    /// Bytes that start a call token ([`call_tokens`]), which ends a reasoning block.
    token_first: [bool; 256],
    options: CallOptions,
    pos: usize,
    state: State,
    /// A code fence (with its tag and white space) read right before, held.
    fence: Option<String>,
    /// Where the reply starts (after a byte order mark), and whether it was looked at for a
    /// quoted reply.
    start: usize,
    quote_checked: bool,
    /// An opening reasoning marker was read.
    opened: bool,
    /// The kinds of closing reasoning markers read (a bit each): `calls` looks at the first
    /// of each kind only.
    closes: u64,
    text: Flow,
    reasoning: Flow,
    source: Option<Source>,
    /// For a writing stream: the deltas not yet written.
    unwritten: Option<Unwritten>,
    /// How many of the first of those came before any event: they have no event of their
    /// own, and are written before the events (see [`Live::lead`]).
    leading: usize,
}

impl Live {
    pub(super) fn new(markers: &Markers, options: &CallOptions) -> Live {
        let forced = options
            .format
            .as_deref()
            .filter(|f| *f != "auto")
            .and_then(|f| TABLE.iter().find(|s| s.name == f));
        let mut holds: Vec<(Cow<'static, [u8]>, Hold)> = Vec::new();
        let mut add = |m: Cow<'static, str>, hold: Hold| {
            if !holds.iter().any(|(h, _)| **h == *m.as_bytes()) {
                let m = match m {
                    Cow::Borrowed(m) => Cow::Borrowed(m.as_bytes()),
                    Cow::Owned(m) => Cow::Owned(m.into_bytes()),
                };
                holds.push((m, hold));
            }
        };
        for (i, (open, _)) in REASONING.iter().enumerate() {
            add(Cow::Borrowed(open), Hold::Open(i));
        }
        for (kind, close) in reasoning_closes().enumerate() {
            add(Cow::Borrowed(close), Hold::Close(kind));
        }
        for noise in NOISE {
            add(Cow::Borrowed(noise), Hold::Noise);
        }
        // The stream's markers (`[TOOL_CALLS]`, `>>>`, …) and every marker of the table.
        for (m, action) in &markers.list {
            if !matches!(action, Action::Think(_) | Action::Unthink)
                && let Ok(m) = std::str::from_utf8(m)
            {
                add(Cow::Borrowed(m), Hold::Marker);
            }
        }
        for spec in forced.map_or(TABLE, std::slice::from_ref) {
            let strings: Vec<&'static str> = match spec.kind {
                Kind::Block { open, close, .. } => open.iter().chain(close).copied().collect(),
                Kind::Prefix { open, lead, .. } => open.iter().chain(lead).copied().collect(),
                Kind::Tagged {
                    open,
                    sep,
                    close,
                    section,
                    ..
                } => [open, sep, close]
                    .into_iter()
                    .chain(section.iter().copied())
                    .collect(),
                Kind::Harmony => [harmony::MESSAGE]
                    .into_iter()
                    .chain(harmony::ENDS.iter().copied())
                    .collect(),
                _ => Vec::new(),
            };
            for m in strings {
                add(Cow::Borrowed(m), Hold::Marker);
                // A tag may carry a label (Hunyuan's `<tool_call:opensource>`).
                if let Some(labelled) = labelled_open(m) {
                    add(Cow::Owned(labelled), Hold::Marker);
                }
            }
        }
        let brackets = forced.is_none_or(|s| matches!(s.kind, Kind::Json | Kind::BarePythonic));
        if brackets {
            add(Cow::Borrowed(CODE_FENCE), Hold::Fence);
        }
        // By first byte, and longest first among those.
        holds.sort_by_key(|(m, _)| (m[0], std::cmp::Reverse(m.len())));
        let mut first = [false; 256];
        let mut from = [0u16; 257];
        for (i, (m, _)) in holds.iter().enumerate() {
            let b = usize::from(m[0]);
            if !first[b] {
                first[b] = true;
                from[b] = u16::try_from(i).unwrap_or(u16::MAX);
            }
        }
        // `from[b]..from[b + 1]`: the holds that start with `b` (none when `b` starts none).
        from[256] = u16::try_from(holds.len()).unwrap_or(u16::MAX);
        for b in (0..256).rev() {
            if !first[b] {
                from[b] = from[b + 1];
            }
        }
        if brackets {
            first[usize::from(b'{')] = true;
            first[usize::from(b'[')] = true;
        }
        // Formats read by decoders of their own, whose markup this reader does not know:
        // their text is given at the end.
        let state = match forced.map(|s| &s.kind) {
            Some(Kind::Harmony | Kind::Hunyuan | Kind::Functionary32) => State::Stopped,
            _ => State::Text,
        };
        let mut token_first = [false; 256];
        for token in call_tokens() {
            token_first[usize::from(token.as_bytes()[0])] = true;
        }
        Live {
            holds,
            from,
            first,
            brackets,
            token_first,
            options: options.clone(),
            pos: 0,
            state,
            fence: None,
            start: 0,
            quote_checked: false,
            opened: false,
            closes: 0,
            text: Flow::default(),
            reasoning: Flow::default(),
            source: None,
            unwritten: None,
            leading: 0,
        }
    }

    /// Whether it stopped reading (after a call marker): nothing more is shown live.
    pub(super) fn stopped(&self) -> bool {
        matches!(self.state, State::Stopped)
    }

    /// What the `text` and `reasoning` events given so far add up to.
    pub(super) fn shown(&self) -> (&str, &str) {
        (
            &self.text.shown[..self.text.flushed],
            &self.reasoning.shown[..self.reasoning.flushed],
        )
    }

    /// Reads what arrived of the reply (`reply`, all of it so far) and adds the events.
    #[inline]
    pub(super) fn read(&mut self, reply: &str, events: &mut Vec<Event>) {
        // Once stopped nothing is read, and nothing is left to flush (every read and every
        // server reasoning flushes what it pushed): the chunks of a call cost no call here.
        if matches!(self.state, State::Stopped) {
            return;
        }
        self.read_on(reply, events);
    }

    #[inline(never)]
    fn read_on(&mut self, reply: &str, events: &mut Vec<Event>) {
        self.scan(reply, events);
        self.flush(events);
    }

    /// Reasoning a server sends apart from the text.
    pub(super) fn server_reasoning(&mut self, delta: &str, events: &mut Vec<Event>) {
        if self.source == Some(Source::Inline) {
            return;
        }
        self.reasoning.push(delta);
        if self.reasoning.any() {
            self.source = Some(Source::Server);
        }
        self.flush(events);
    }

    fn flush(&mut self, events: &mut Vec<Event>) {
        for (flow, kind) in [
            (&mut self.text, Prose::Text),
            (&mut self.reasoning, Prose::Reasoning),
        ] {
            if flow.flushed < flow.shown.len() {
                let delta = match &mut self.unwritten {
                    Some(out) => {
                        append(&mut out.text, flow.delta());
                        out.ends.push((out.text.len(), matches!(kind, Prose::Text)));
                        flow.flushed = flow.shown.len();
                        if out.may_lead
                            && events.is_empty()
                            && out.next + self.leading + 1 == out.ends.len()
                        {
                            // Nothing came before it: written first, with no event.
                            self.leading += 1;
                            continue;
                        }
                        String::new()
                    }
                    None => flow.delta().to_owned(),
                };
                flow.flushed = flow.shown.len();
                events.push(match kind {
                    Prose::Text => Event::Text(delta),
                    Prose::Reasoning => Event::Reasoning(delta),
                });
            }
        }
    }

    /// A writing stream's live text and reasoning events carry empty deltas: the writer takes
    /// each with [`Live::next_unwritten`].
    pub(super) fn writing(&mut self) {
        self.unwritten = Some(Unwritten::default());
    }

    /// For a writing stream that feeds each read with the events not yet written and writes
    /// them after it: the deltas a read gives while those are none need no event (they are
    /// written first, with [`Live::next_leading`]); the `text` or `reasoning` event of each
    /// costs nothing.
    #[inline]
    pub(super) fn lead(&mut self, may: bool) {
        if let Some(out) = &mut self.unwritten {
            out.may_lead = may;
        }
    }

    /// Whether deltas given are not written yet (a writing stream's).
    #[inline]
    pub(super) fn unwritten(&self) -> bool {
        self.unwritten
            .as_ref()
            .is_some_and(|out| out.next < out.ends.len())
    }

    /// How many deltas came before any event (see [`Live::lead`]).
    #[inline]
    pub(super) fn leading(&self) -> usize {
        self.leading
    }

    /// The next delta that came before any event, as its event's line would show it: whether
    /// it is `text`, and its text.
    #[inline]
    pub(super) fn next_leading(&mut self) -> Option<(bool, &str)> {
        let out = self.unwritten.as_mut()?;
        if self.leading == 0 {
            return None;
        }
        self.leading -= 1;
        let (end, text) = *out.ends.get(out.next)?;
        out.next += 1;
        let from = std::mem::replace(&mut out.from, end);
        Some((text, &out.text[from..end]))
    }

    /// The delta of the next live `text` or `reasoning` event of a writing stream not yet
    /// written, if any is left (the events of the results come after all of them).
    #[inline]
    pub(super) fn next_unwritten(&mut self) -> Option<&str> {
        let out = self.unwritten.as_mut()?;
        let (end, _) = *out.ends.get(out.next)?;
        out.next += 1;
        let from = std::mem::replace(&mut out.from, end);
        Some(&out.text[from..end])
    }

    /// Every delta given was written: their text is let go.
    #[inline]
    pub(super) fn all_written(&mut self) {
        if let Some(out) = &mut self.unwritten
            && out.next == out.ends.len()
        {
            out.text.clear();
            out.ends.clear();
            out.next = 0;
            out.from = 0;
        }
    }

    /// For a writing stream whose deltas are all written, having read the `len` bytes of the
    /// reply so far: whether it is reading a part of prose that has started, with nothing held
    /// back and no white space waiting, so that a chunk of bytes that may start nothing
    /// ([`Live::plain_byte`]) would be read whole as more of that part by [`Live::read`] (see
    /// [`Live::scan`]), with no event but the delta it shows. Then the lane such chunks take:
    /// the text, or the reasoning and the first byte of its close.
    #[inline]
    pub(super) fn lane(&self, len: usize) -> Option<(bool, u8)> {
        let out = self.unwritten.as_ref()?;
        if self.pos != len || self.leading != 0 || out.next != out.ends.len() {
            return None;
        }
        let (text, close, flow) = match self.state {
            // Checked for a quoted reply, no fence held: the scan's run of bytes that start
            // nothing.
            State::Text if self.quote_checked && self.fence.is_none() => (true, 0, &self.text),
            // The scan's run of reasoning: no byte that may begin its close or a call token.
            State::Think { close } => (false, close.as_bytes()[0], &self.reasoning),
            _ => return None,
        };
        // Every read flushes what it shows (see `Live::read`).
        debug_assert!(
            self.text.flushed == self.text.shown.len()
                && self.reasoning.flushed == self.reasoning.shown.len()
        );
        (flow.started && !flow.muted && flow.pending.is_empty()).then_some((text, close))
    }

    /// Whether `b`, in the lane [`Live::lane`] gave, starts nothing: the scan reads it as more
    /// of the part.
    #[inline(always)]
    pub(super) fn plain_byte(&self, (text, close): (bool, u8), b: u8) -> bool {
        if text {
            !self.first[usize::from(b)]
        } else {
            b != close && b != b'<' && !self.token_first[usize::from(b)]
        }
    }

    /// The plain bytes (see [`Live::plain_byte`]) read in a lane since it was given (`run`,
    /// the reply's last bytes), as [`Live::read`] reads them: the part they add to (the text
    /// if `text`) shows them, its white space at the end waiting, all of it written already
    /// (the writer wrote each delta as it came).
    pub(super) fn settle_plain(&mut self, run: &str, text: bool) {
        self.pos += run.len();
        let flow = if text {
            &mut self.text
        } else {
            &mut self.reasoning
        };
        flow.push(run);
        flow.flushed = flow.shown.len();
    }

    /// Whether the text at the start of `rest` is held back ([`Live::at`]): `Err` while it
    /// may still become a sequence held back, `Ok(true)` when one is there in full.
    pub(super) fn holds_at(&self, rest: &[u8]) -> Result<bool, ()> {
        self.at(rest).map(|found| found.is_some())
    }

    /// The sequence held back at the start of `rest`: `Ok(Some)` when one is there in full,
    /// `Err` when `rest` may still become one (longest first, as [`Markers::at`]).
    fn at(&self, rest: &[u8]) -> Result<Option<(usize, Hold)>, ()> {
        let b = usize::from(rest[0]);
        let (start, end) = (usize::from(self.from[b]), usize::from(self.from[b + 1]));
        super::markers::sequence_at(&self.holds[start..end], rest)
    }

    fn scan(&mut self, reply: &str, events: &mut Vec<Event>) {
        let bytes = reply.as_bytes();
        if self.pos == 0 && reply.starts_with('\u{FEFF}') {
            // `calls` reads the reply without its byte order mark.
            self.pos = '\u{FEFF}'.len_utf8();
            self.start = self.pos;
        }
        if !self.quote_checked && matches!(self.state, State::Text) {
            let Some(q) = bytes[self.pos..]
                .iter()
                .position(|b| !b.is_ascii_whitespace())
            else {
                return;
            };
            self.quote_checked = true;
            if bytes[self.pos + q] == b'"' {
                self.pos += q + 1;
                self.state = State::Quoted {
                    escaped: false,
                    closed: false,
                };
            }
        }
        while self.pos < bytes.len() {
            let p = self.pos;
            let b = bytes[p];
            match self.state {
                State::Stopped => return,
                State::Quoted {
                    mut escaped,
                    mut closed,
                } => {
                    for &c in &bytes[p..] {
                        if closed {
                            if !c.is_ascii_whitespace() {
                                // Not one string: read it as text, from its start.
                                self.pos = self.start;
                                self.state = State::Text;
                                break;
                            }
                        } else if escaped {
                            escaped = false;
                        } else if c == b'\\' {
                            escaped = true;
                        } else if c == b'"' {
                            closed = true;
                        }
                        self.pos += 1;
                    }
                    if let State::Quoted { .. } = self.state {
                        self.state = State::Quoted { escaped, closed };
                    }
                }
                State::Think { close } => {
                    let rest = &bytes[p..];
                    let tokens = call_tokens();
                    if b != close.as_bytes()[0] && !self.token_first[usize::from(b)] {
                        let run = rest
                            .iter()
                            .position(|&c| c == close.as_bytes()[0] || c == b'<')
                            .unwrap_or(rest.len());
                        self.reasoning.push(&reply[p..p + run.max(1)]);
                        self.pos += run.max(1);
                        continue;
                    }
                    let prefix = |m: &str| {
                        let m = m.as_bytes();
                        let n = m.len().min(rest.len());
                        (m[..n] == rest[..n]).then_some(m.len() <= rest.len())
                    };
                    match prefix(close) {
                        Some(true) => {
                            self.reasoning.end_part();
                            self.flush(events);
                            self.pos += close.len();
                            self.state = State::Text;
                            continue;
                        }
                        Some(false) => return,
                        None => {}
                    }
                    match tokens.iter().filter_map(|t| prefix(t)).max() {
                        // A call token ends a block never closed (Kimi K2).
                        Some(true) => {
                            self.reasoning.end_part();
                            self.flush(events);
                            self.state = State::Text;
                        }
                        Some(false) => return,
                        None => {
                            self.reasoning.push(&reply[p..p + 1]);
                            self.pos += 1;
                        }
                    }
                }
                State::Bracket {
                    start,
                    mut depth,
                    mut in_string,
                    mut escaped,
                } => {
                    let mut end = None;
                    for (i, &c) in bytes.iter().enumerate().skip(p) {
                        if in_string {
                            if escaped {
                                escaped = false;
                            } else if c == b'\\' {
                                escaped = true;
                            } else if c == b'"' {
                                in_string = false;
                            }
                        } else {
                            match c {
                                b'"' => in_string = true,
                                b'{' | b'[' => depth += 1,
                                b'}' | b']' => {
                                    depth = depth.saturating_sub(1);
                                    if depth == 0 {
                                        end = Some(i + 1);
                                        break;
                                    }
                                }
                                _ => {}
                            }
                        }
                    }
                    let Some(end) = end else {
                        self.pos = bytes.len();
                        self.state = State::Bracket {
                            start,
                            depth,
                            in_string,
                            escaped,
                        };
                        return;
                    };
                    self.pos = end;
                    self.state = State::Text;
                    let region = &reply[start..end];
                    if self.plain_json(region) {
                        if let Some(fence) = self.fence.take() {
                            self.text.push(&fence);
                        }
                        self.text.push(region);
                    } else {
                        self.state = State::Stopped;
                    }
                }
                State::Text => {
                    if self.fence.is_some() && self.fenced(reply, p) {
                        continue;
                    }
                    if !self.first[usize::from(b)] {
                        let run = bytes[p..]
                            .iter()
                            .position(|&c| self.first[usize::from(c)])
                            .unwrap_or(bytes.len() - p);
                        self.text.push(&reply[p..p + run]);
                        self.pos += run;
                        continue;
                    }
                    match self.at(&bytes[p..]) {
                        Err(()) => return,
                        // Not `[THINK]` or `[TOOL_CALLS]`: JSON, or a list of calls, may start.
                        Ok(None) if self.brackets && matches!(b, b'{' | b'[') => {
                            self.state = State::Bracket {
                                start: p,
                                depth: 0,
                                in_string: false,
                                escaped: false,
                            };
                        }
                        Ok(None) => {
                            self.text.push(&reply[p..p + 1]);
                            self.pos += 1;
                        }
                        Ok(Some((n, hold))) => self.held(hold, reply, p, n, events),
                    }
                }
            }
        }
    }

    /// A fence is held and the byte at `p` comes after it: its tag and white space are held
    /// too; a bracket keeps it held with the JSON; anything else shows it. Whether the byte
    /// was taken.
    fn fenced(&mut self, reply: &str, p: usize) -> bool {
        let Some(fence) = &mut self.fence else {
            return false;
        };
        let c = reply[p..].chars().next().unwrap_or(' ');
        let spaced = fence.ends_with(char::is_whitespace);
        if c.is_whitespace() || (!spaced && c.is_ascii_alphanumeric()) {
            fence.push(c);
            self.pos += c.len_utf8();
            return true;
        }
        if !matches!(c, '{' | '[') {
            let fence = std::mem::take(fence);
            self.fence = None;
            self.text.push(&fence);
        }
        false
    }

    /// A held-back sequence read in full at `p` (`n` bytes).
    fn held(&mut self, hold: Hold, reply: &str, p: usize, n: usize, events: &mut Vec<Event>) {
        if matches!(hold, Hold::Marker) {
            self.state = State::Stopped;
            return;
        }
        if let Some(fence) = self.fence.take() {
            self.text.push(&fence);
        }
        self.pos += n;
        match hold {
            Hold::Open(kind) => {
                self.opened = true;
                self.text.end_part();
                self.flush(events);
                self.state = State::Think {
                    close: REASONING[kind].1,
                };
                self.inline_reasoning();
            }
            Hold::Close(kind) => {
                let first_of_kind = self.closes & (1 << kind) == 0;
                self.closes |= 1 << kind;
                let before = reply[..p].trim_start_matches('\u{FEFF}');
                if self.opened || !first_of_kind || before.trim().is_empty() {
                    self.text.push(&reply[p..p + n]);
                    return;
                }
                // A close with no open before it: the reply started in reasoning, and all
                // before the close is reasoning, not the text shown.
                self.opened = true;
                self.flush(events);
                if self.text.any() {
                    events.push(Event::Corrected {
                        field: Prose::Text,
                        value: String::new(),
                    });
                }
                self.text = Flow::default();
                self.inline_reasoning();
                self.reasoning.push(before);
                self.reasoning.end_part();
                self.flush(events);
            }
            Hold::Noise => {}
            Hold::Fence => self.fence = Some(CODE_FENCE.into()),
            Hold::Marker => {}
        }
    }

    /// Reasoning of the reply's own blocks comes: shown unless a server's came first.
    fn inline_reasoning(&mut self) {
        if self.source == Some(Source::Server) {
            self.reasoning.muted = true;
        } else {
            self.source = Some(Source::Inline);
        }
    }

    /// Whether `region` (a `{` or `[` to its closing bracket) is text as it stands: `calls`
    /// reads it alone as that text, with no call and nothing held back inside.
    fn plain_json(&self, region: &str) -> bool {
        let bytes = region.as_bytes();
        // With no letter it names no tool (and holds no marker): `{}`, `[1, 2]` need no
        // `calls` of their own, which a reply of a million `{}` would otherwise pay each.
        if !bytes.iter().any(|&b| b.is_ascii_alphabetic() || b >= 0x80) {
            return true;
        }
        let marked = (0..bytes.len()).any(|i| {
            self.first[usize::from(bytes[i])]
                && !matches!(bytes[i], b'{' | b'[')
                && !matches!(self.at(&bytes[i..]), Ok(None))
        });
        if marked {
            return false;
        }
        match extract(region, &self.options) {
            Ok(found) => {
                found.calls.is_empty()
                    && found.incomplete.is_empty()
                    && found.rejected.is_empty()
                    && found.reasoning.is_none()
                    && found.text.as_deref() == Some(region)
            }
            Err(_) => false,
        }
    }
}
