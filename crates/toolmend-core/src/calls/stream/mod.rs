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
//! let content = "All work and no play makes Jack a dull boy. ".repeat(4);
//! let reply = format!(
//!     "Writing.<tool_call>{{\"name\": \"write_file\", \"arguments\": \
//!      {{\"path\": \"notes.txt\", \"content\": \"{content}\"}}}}</tool_call>"
//! );
//! let mut events = Vec::new();
//! for chunk in reply.as_bytes().chunks(16) {
//!     events.extend(stream.feed(std::str::from_utf8(chunk).unwrap()));
//! }
//! // The text as it came, then the call.
//! assert!(matches!(&events[0], Event::Text(delta) if delta == "Writing."));
//! assert!(matches!(&events[1], Event::CallStart { index: 0, tool, .. } if tool == "write_file"));
//! // What the parameters gained: here the first of the call, its members so far (once
//! // 128 bytes of them are read), the last one still being written.
//! assert!(matches!(&events[2], Event::Arguments { path, added: Added::Members(members), open: Some(open), .. }
//!     if path.is_empty() && members["path"] == "notes.txt"
//!         && members["content"].as_str().is_some_and(|c| content.starts_with(c))
//!         && open == "/content"));
//! events.extend(stream.finish());
//! assert!(matches!(&events[events.len() - 2], Event::CallEnd { index: 0, call } if call.parameters["content"] == content));
//! ```

mod arguments;
mod call_reader;
mod event;
mod flow;
mod line_out;
mod live;
mod markers;
mod nested;
mod prose;
mod run;
mod scan;
mod server;
mod settle;
mod skim;
mod writer;

pub use arguments::{ARGUMENTS_STEP, arguments_step};
pub use event::{Added, ArgumentsEvents, EVENT_FORMAT, Event, Prose};
pub use writer::EventWriter;

use super::partial::Seg;
use super::{CallOptions, Extracted, Failure, Shape};
use crate::io::record::original_text;
use crate::tools::Tools;
use arguments::Front;
use live::Live;
use markers::Markers;
use nested::{Nested, feed_nested};

#[cfg(test)]
thread_local! {
    /// Chunks `CallReader::nested_chunk` read to their end (in this test thread): the nested
    /// fast path's test checks that it ran.
    static NESTED_CHUNKS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}
use scan::Mode;
use serde_json::{Map, Value};
use server::ServerCall;
use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::Arc;

/// A call being read: its announced index and what was shown of its arguments.
#[derive(Debug, Default)]
struct CallSlot {
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
    /// `args_bytes` when the partial arguments were last built (see [`arguments::snapshot_due`]).
    tried_bytes: Option<usize>,
    /// The stream's [`Stream::with_arguments_step`].
    step: usize,
    /// The call object's size, and whether a key was pending, when it was last looked at
    /// (a call object only grows: the same size is the same object).
    looked: Option<(usize, bool)>,
    /// The [`arguments::weight`] of the parameters last shown.
    shown: Option<usize>,
    /// Where the parameters last shown as values were open (see `growth_of` in [`arguments`]).
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
    /// For a stream made [`Stream::with_snapshots`]: the parameters its `arguments` events
    /// showed, whole (what each next one carries, with what it adds applied).
    parameters: Option<Map<String, Value>>,
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

/// How much of a call's arguments an `arguments` event showed: the partial value after this
/// many bytes (after the `{`; of the string's text for arguments written as a string), or
/// the whole value.
#[derive(Debug, Clone, Copy)]
enum Shown {
    Part(usize),
    Whole,
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
    /// Text of an API that keeps blocks in order came after the last call
    /// ([`Stream::text_after_calls`]): a cut is not the call's.
    text_last: bool,
    /// The reply came in a server's error that refused it (`failed_generation`): its message.
    refused: Option<String>,
    /// Why a call is missing, when the server says it dropped one.
    dropped: Option<String>,
    markers: Markers,
    /// Where the scan's last look for a marker stopped, when more bytes could still make one.
    partial: markers::Partial,
    /// The text and reasoning shown as they arrive.
    live: Live,
    buf: String,
    pos: usize,
    mode: Mode,
    slots: Vec<CallSlot>,
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
    /// Each `arguments` event carries the whole parameters too ([`Stream::with_snapshots`]).
    snapshots: bool,
    /// [`Stream::with_arguments_step`].
    arguments_step: usize,
    /// How many more one-byte chunks `feed_into` may take as plain bytes of the open JSON
    /// string without a look at the call reader: set by the skim when it took one (the live
    /// text stopped, the reader quiet for this many bytes more), 0 once anything else comes.
    /// A string fed a byte at a time then costs little more than the append to the reply.
    run: usize,
    /// A run was granted: the bytes `feed_into` took on it are those of `buf` past `pos`
    /// (neither `pos` nor the reader counts them, so that such a byte costs its append and
    /// the count down of `run`), counted by [`Stream::settle_run`].
    running: bool,
    /// What each byte is to the prose lane given last ([`Stream::prose_lane`]).
    lane_classes: prose::LaneClasses,
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
            // Live deltas are never empty, or (a writing stream's) all written before: an empty
            // one here stands for the rest of the result.
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
            text_last: false,
            refused: None,
            dropped: None,
            markers,
            partial: markers::Partial::default(),
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
            snapshots: false,
            arguments_step: ARGUMENTS_STEP,
            run: 0,
            running: false,
            lane_classes: prose::LaneClasses::default(),
        }
    }

    /// This stream, its `arguments` events each carrying the whole parameters so far as well
    /// (`parameters`, once what the event adds is applied), for a consumer that would rather
    /// not add the deltas up. The events are the same otherwise. It costs a copy of the
    /// parameters per event (the events come at most once per quarter of growth, so linear
    /// in the arguments' size); a writing stream ([`EventWriter`]) then builds and writes the
    /// values of its events as [`Stream::new`]'s do. Call it before the first chunk.
    pub fn with_snapshots(self) -> Stream {
        self.with_arguments_events(ArgumentsEvents::Snapshot)
    }

    /// This stream with an `arguments` event due once `bytes` of a call's arguments are read
    /// (their text as the model writes it, white space too), and after that each time they
    /// grew by a quarter and at least `bytes` (1 at least). The default, [`ARGUMENTS_STEP`]
    /// (128), keeps the events' own bytes (some 80 each) from outweighing what they add, so a
    /// call of under 128 bytes gets only its final event; 1 shows a short call nearly token by
    /// token. The final event, when the arguments close, comes whatever their size. Call it
    /// before the first chunk.
    pub fn with_arguments_step(mut self, bytes: usize) -> Stream {
        self.arguments_step = bytes.max(1);
        self
    }

    /// This stream with its `arguments` events as `kind` says (the default is
    /// [`ArgumentsEvents::Delta`]; [`ArgumentsEvents::Snapshot`] is [`Stream::with_snapshots`]).
    pub fn with_arguments_events(mut self, kind: ArgumentsEvents) -> Stream {
        if kind == ArgumentsEvents::Delta {
            return self;
        }
        self.snapshots = true;
        // The whole parameters are values: they are built, not copied from the text.
        if let Some(w) = &self.written
            && w.ends.is_empty()
            && w.held.is_empty()
        {
            self.written = None;
        }
        self
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
    /// `write_events` writes them, so every event it gives must be written, in order: the
    /// crate's [`EventWriter`] does that, and is what users get.
    pub(crate) fn writing(options: CallOptions) -> Stream {
        let mut stream = Stream::new(options);
        stream.written = Some(Written::default());
        stream.live.writing();
        stream
    }

    /// Writes `events` (drained) as JSON lines, one object each, calls in `shape`: what
    /// `calls --stream` writes ([`EventWriter`] reads and writes a whole reply that way). For
    /// the crate's writing streams, the `arguments` events are written with the parameters the
    /// stream holds for them.
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
        if !self.take_run(chunk) {
            self.feed_on(chunk, events);
        }
    }

    /// [`Stream::feed_into`] past its first check: apart, so that the check is inlined where
    /// the stream is fed a byte at a time.
    #[inline(never)]
    pub(crate) fn feed_on(&mut self, chunk: &str, events: &mut Vec<Event>) {
        self.settle_run();
        if self.result.is_some() || chunk.is_empty() {
            return;
        }
        match chunk.as_bytes() {
            // A byte's chunk (ASCII, as it is a whole `str`): a push, not a copy call.
            &[b] => self.buf.push(char::from(b)),
            _ => self.buf.push_str(chunk),
        }
        self.live.read(&self.buf, events);
        if self.skims && self.skim(events) {
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

    /// See [`Live::lead`].
    #[inline]
    fn lead(&mut self, may: bool) {
        self.live.lead(may);
    }

    /// How many text and reasoning deltas are to be written before the events given.
    #[inline]
    fn leading(&self) -> usize {
        self.live.leading()
    }

    /// The text of the reply so far.
    pub fn reply(&self) -> &str {
        &self.buf
    }

    /// The text of the reply, the stream given up: for a caller done with the stream that
    /// keeps the reply, without a copy of it (a reply may be many MiB).
    pub fn into_reply(self) -> String {
        self.buf
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
        self.catch_up();
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
                super::message::extract_message_cut(
                    &message,
                    self.cut.as_deref(),
                    self.text_last,
                    self.dropped.as_deref(),
                    &self.options,
                ),
                original_text(message.to_string().as_bytes()),
            ),
            // Text alone (or none): a cut is the text's, as `calls` reads the whole response.
            None => (
                super::message::with_output_cut(
                    super::extract(&self.buf, &self.options),
                    self.cut.as_deref(),
                ),
                original_text(self.buf.as_bytes()),
            ),
        };
        let result = match &self.refused {
            Some(said) if self.options.strict => Err(Failure {
                error: crate::error::Error::whole(
                    crate::error::Code::InvalidInput,
                    super::message::refused_words(said),
                ),
                extracted: None,
            }),
            Some(said) => {
                super::message::with_repair(result, crate::repair::Repair::failed_generation(said))
            }
            None => result,
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    thread_local! {
        /// Chunks read by the skim (in this test thread).
        pub(super) static SKIMMED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// Every `calls` fixture case with an input (fixtures/calls/*.jsonl), with its file: for
    /// the tests that feed them all through a fast path and the usual read.
    pub(super) fn calls_fixture_cases() -> Vec<(std::path::PathBuf, Value)> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/calls");
        let mut cases = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "jsonl") {
                continue;
            }
            for line in std::fs::read_to_string(&path).unwrap().lines() {
                if let Ok(case) = serde_json::from_str::<Value>(line)
                    && case["input"].is_string()
                {
                    cases.push((path.clone(), case));
                }
            }
        }
        cases
    }

    /// Every `calls` fixture fed one and three characters at a time, with and without
    /// [`Stream::skim`] and the refreshes left out when quiet: the same events, so the skim reads chunks
    /// exactly as the byte-by-byte scan does, and a refresh left out would have done nothing.
    #[test]
    fn skimming_gives_the_events_of_the_scan() {
        let mut replies = 0;
        for (path, case) in calls_fixture_cases() {
            let input = case["input"].as_str().unwrap_or_default();
            let mut format = None;
            if let Some(flags) = case["options"].as_array() {
                let flags: Vec<_> = flags.iter().filter_map(Value::as_str).collect();
                // Options that change what is read, not how (tools are left out).
                if let Some(i) = flags.iter().position(|f| *f == "--format") {
                    format = flags.get(i + 1).map(|f| (*f).to_owned());
                }
            }
            for (writing, per) in [(false, 1), (true, 1), (false, 3), (true, 3)] {
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
                // A character at a time, or three (a few bytes, as tokens come).
                let chars: Vec<char> = input.chars().collect();
                for piece in chars.chunks(per) {
                    let piece: String = piece.iter().collect();
                    fast.feed_into(&piece, &mut a);
                    slow.feed_into(&piece, &mut b);
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
        assert!(replies > 100, "{replies} replies");
        assert!(
            SKIMMED.with(|n| n.get()) > 1000,
            "the skim read too few characters"
        );
    }
}
