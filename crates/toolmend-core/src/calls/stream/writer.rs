//! A reply's bytes in as they are read, its events out as JSON lines: what `calls --stream`
//! does with its input, for any reader and any writer.

use std::io::{self, Write};

use super::line_out::LineOut;
use super::prose::{Lane, LaneClass, write_byte_line, write_prose_delta, write_prose_line};
use super::run::STRING_PLAIN;
use super::{ArgumentsEvents, Event, Stream};
use crate::calls::{CallOptions, DeltaFraming, Deltas, Extracted, Failure, Shape};
use crate::error::{Code, Error};
use crate::io::input::too_large;

/// A byte order mark starts the input, not the reply, as `calls` reads it.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Every ASCII character, in order: a byte's `str` is sliced from here.
const ASCII: &str = {
    const fn all() -> [u8; 128] {
        let mut bytes = [0u8; 128];
        let mut b = 0;
        while b < 128 {
            bytes[b] = b as u8;
            b += 1;
        }
        bytes
    }
    const BYTES: [u8; 128] = all();
    match std::str::from_utf8(&BYTES) {
        Ok(text) => text,
        Err(_) => panic!("ASCII is UTF-8"),
    }
};

/// The `str` of a byte of ASCII (read the whole way: the slice's checks cost little there).
fn ascii_str(b: u8) -> &'static str {
    let b = usize::from(b & 0x7f);
    &ASCII[b..=b]
}

/// The most bytes of ASCII [`EventWriter::write_bytes`] reads with no call to check them.
const SHORT: usize = 16;

/// How much of the input an error record's `original` looks at (100 characters are at most
/// 400 bytes, and a few more tell whether it was cut).
const ORIGINAL_BYTES: usize = 405;

/// Reads a reply as its bytes arrive and writes its events, one JSON object per line, as
/// `toolmend calls --stream` writes them, flushing after each read that gave any: a reader of
/// `out` sees each event as soon as it is known.
///
/// The input is raw text, or the deltas of a server's stream (`framing`); it is checked as
/// `calls` checks a reply: UTF-8 (a character split between reads waits for its other bytes),
/// at most `max_bytes`, a byte order mark at its start skipped. A reply that fails those ends
/// with the same `end` record as `calls --records` gives for the whole input.
///
/// ```
/// use toolmend_core::calls::{CallOptions, EventWriter, Shape};
///
/// let mut out = Vec::new();
/// let mut writer = EventWriter::new(CallOptions::default(), None, Shape::Native, 1 << 20, &mut out);
/// for piece in ["<tool_call>{\"name\": \"f\", \"argu", "ments\": {\"a\": 1}}</tool_call>"] {
///     writer.write_bytes(piece.as_bytes()).unwrap();
/// }
/// writer.finish().unwrap();
/// assert!(writer.accepted());
/// drop(writer);
/// let text = String::from_utf8(out).unwrap();
/// assert!(text.lines().next().unwrap().starts_with(r#"{"event":"call_start","index":0,"tool":"f""#));
/// assert!(text.lines().last().unwrap().starts_with(r#"{"event":"end","ok":true"#));
/// ```
pub struct EventWriter<W: Write> {
    stream: Stream,
    /// The server's deltas, or `None` for raw text.
    deltas: Option<Deltas>,
    events: Vec<Event>,
    shape: Shape,
    out: LineOut<W>,
    max_bytes: usize,
    /// Bytes read and not fed yet: a character cut between reads; once the input is past
    /// `max_bytes` or not UTF-8, the first bytes of what was not fed, for the `end` record.
    pending: Vec<u8>,
    /// The bytes of the input read so far, a byte order mark left out, but for those read
    /// within [`EventWriter::plain_left`] since it was last set ([`EventWriter::granted`]
    /// less it): a plain read counts down one number, not two.
    total: u64,
    /// What [`EventWriter::plain_left`] was when it was last set.
    granted: u64,
    /// Whether the start of the input was looked at for a byte order mark.
    started: bool,
    state: State,
    /// How many events were written.
    written: u64,
    /// How many bytes more [`EventWriter::write_str`] may feed without a look at anything
    /// but this count: raw text being read, nothing held back, the first bytes past
    /// (`max_bytes` less the total; 0 otherwise).
    plain_left: u64,
    /// Where the stream stood after the last read, if it reads plain prose: a chunk that
    /// starts nothing there is read and written in one go ([`Stream::take_prose`]), until
    /// another comes ([`EventWriter::leave_lane`]).
    lane: Option<Lane>,
    /// How many more one-byte chunks of a quiet string (plain string bytes)
    /// [`EventWriter::write_bytes`] may append to the reply with no other look: the stream's
    /// run ([`Stream::run_left`]) within [`EventWriter::plain_left`], out of the lane, set
    /// after a read that granted one. Neither count is lowered per byte: the bytes taken are
    /// counted in both at the next other read ([`EventWriter::settle_quick`]), so that such a
    /// byte costs its check and its append.
    quick: u64,
    /// What [`EventWriter::quick`] was when it was last set (0: none granted).
    quick_from: u64,
    /// [`EventWriter::plain_left`], held at 0 while quick bytes are granted (so that the one
    /// look at it that lets a byte of prose through lets them by).
    plain_held: u64,
    /// Whether [`EventWriter::quick`] is ever set (off only in tests, to compare).
    quicks: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Reading,
    /// Past `max_bytes`: the rest is counted, so that the error says the input's size as
    /// `calls` says it, and not read.
    TooLarge,
    /// Bytes that are not UTF-8 at this offset of the reply: enough of the rest is kept for
    /// the `end` record's `original`.
    Unreadable(usize),
    /// The `end` event is written: later bytes change nothing.
    Ended,
}

impl<W: Write> EventWriter<W> {
    /// A writer of `calls --stream`'s events for one reply; `framing` `None` reads raw text.
    pub fn new(
        options: CallOptions,
        framing: Option<DeltaFraming>,
        shape: Shape,
        max_bytes: usize,
        out: W,
    ) -> EventWriter<W> {
        let mut stream = Stream::writing(options);
        // Raw text is fed with `self.events` and written after each read: the text and
        // reasoning a read gives before any other event are written first, with no event of
        // their own. (A server's deltas are read into events of their own first.)
        stream.lead(framing.is_none());
        EventWriter {
            stream,
            deltas: framing.map(Deltas::new),
            events: Vec::new(),
            shape,
            // The events of a read go out through a bounded buffer, flushed after each read:
            // the last ones (the results, the reply's text and reasoning in full, the `end`
            // record) are never all held at once.
            out: LineOut::with_capacity(64 << 10, out),
            max_bytes,
            pending: Vec::new(),
            total: 0,
            granted: 0,
            started: false,
            state: State::Reading,
            written: 0,
            plain_left: 0,
            lane: None,
            quick: 0,
            quick_from: 0,
            plain_held: 0,
            quicks: true,
        }
    }

    /// This writer with its `arguments` events as `kind` says (see
    /// [`Stream::with_arguments_events`]).
    pub fn with_arguments_events(mut self, kind: ArgumentsEvents) -> EventWriter<W> {
        self.stream = self.stream.with_arguments_events(kind);
        self
    }

    /// This writer with an `arguments` event due every `bytes` of a call's arguments (see
    /// [`Stream::with_arguments_step`]).
    pub fn with_arguments_step(mut self, bytes: usize) -> EventWriter<W> {
        self.stream = self.stream.with_arguments_step(bytes);
        self
    }

    /// Reads the next bytes of the input, as they came (any split); writes the events they
    /// make known. Whether more of the input is wanted: `false` once the `end` event is
    /// written (bytes that are not UTF-8 end the reply), when reading may stop.
    ///
    /// # Errors
    /// Writing to `out` failed.
    #[inline(always)]
    pub fn write_bytes(&mut self, bytes: &[u8]) -> io::Result<bool> {
        // Raw text read with nothing pending, within the size: one check, then read as
        // `write_str` reads it, so that a reply read a byte at a time costs no more.
        if let &[b] = bytes {
            // Quick bytes hold `plain_left` at 0: a byte of prose pays no look at them.
            if self.plain_left != 0 {
                if b.is_ascii() {
                    return self.write_ascii(b);
                }
            } else if self.take_quick(b) {
                return Ok(true);
            }
        }
        if self.quick_from != 0 {
            self.settle_quick_on();
            if let &[b] = bytes
                && b.is_ascii()
                && self.plain_left != 0
            {
                return self.write_ascii(b);
            }
        }
        if bytes.len() > 1 && bytes.len() as u64 <= self.plain_left {
            if bytes.len() <= SHORT {
                // More of a quiet string fed a few bytes at a time (its bytes plain, so ASCII):
                // appended here, with no call.
                if self.lane.is_none() && self.stream.take_run_ascii(bytes) {
                    self.plain_left -= bytes.len() as u64;
                    return Ok(true);
                }
                // A few bytes of ASCII: no call to check them.
                if bytes.iter().all(u8::is_ascii) {
                    return self.write_short_ascii(bytes);
                }
            }
            if let Ok(text) = std::str::from_utf8(bytes) {
                return self.write_plain(text);
            }
        }
        self.write_bytes_on(bytes)
    }

    /// [`EventWriter::write_bytes`] past its first check.
    #[inline(never)]
    fn write_bytes_on(&mut self, bytes: &[u8]) -> io::Result<bool> {
        self.leave_lane();
        self.count_plain();
        let more = self.read_bytes(bytes);
        self.grant_plain();
        self.lane = self.prose_lane();
        more
    }

    /// Counts in [`EventWriter::total`] what was read within [`EventWriter::plain_left`].
    #[inline]
    fn count_plain(&mut self) {
        self.total += self.granted - self.plain_left;
        self.granted = self.plain_left;
    }

    /// Sets [`EventWriter::plain_left`] after a read ([`EventWriter::count_plain`] first).
    #[inline]
    fn grant_plain(&mut self) {
        self.plain_left = self.plain_budget();
        self.granted = self.plain_left;
    }

    /// What [`EventWriter::plain_left`] is after a read.
    fn plain_budget(&self) -> u64 {
        if self.state == State::Reading
            && self.pending.is_empty()
            && self.started
            && self.deltas.is_none()
        {
            (self.max_bytes as u64).saturating_sub(self.total)
        } else {
            0
        }
    }

    /// [`EventWriter::write_bytes`], but for the count of what may come as plain text.
    fn read_bytes(&mut self, bytes: &[u8]) -> io::Result<bool> {
        match self.state {
            State::Ended => return Ok(false),
            State::TooLarge => {
                self.total += bytes.len() as u64;
                self.keep_for_original(bytes);
                return Ok(true);
            }
            State::Unreadable(at) => {
                self.keep_for_original(bytes);
                if self.pending.len() >= ORIGINAL_BYTES {
                    self.end_unreadable(at)?;
                    return Ok(false);
                }
                return Ok(true);
            }
            State::Reading => {}
        }
        self.total += bytes.len() as u64;
        self.pending.extend_from_slice(bytes);
        if !self.started {
            if self.pending.len() < BOM.len() && BOM.starts_with(&self.pending) {
                return Ok(true);
            }
            self.started = true;
            if self.pending.starts_with(BOM) {
                self.pending.drain(..BOM.len());
                self.total -= BOM.len() as u64;
            }
        }
        if self.total > self.max_bytes as u64 {
            self.state = State::TooLarge;
            self.pending.truncate(ORIGINAL_BYTES);
            return Ok(true);
        }
        let valid = match std::str::from_utf8(&self.pending) {
            Ok(text) => text.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(e) => {
                let at = self.stream.reply().len() + e.valid_up_to();
                self.state = State::Unreadable(at);
                if self.pending.len() >= ORIGINAL_BYTES {
                    self.end_unreadable(at)?;
                    return Ok(false);
                }
                return Ok(true);
            }
        };
        let pending = std::mem::take(&mut self.pending);
        // Checked just above.
        let text = std::str::from_utf8(&pending[..valid]).unwrap_or_default();
        let more = self.feed_and_write(text);
        self.pending = pending;
        self.pending.drain(..valid);
        more
    }

    /// Reads the next text of the input, already known to be UTF-8 (a reply read as text,
    /// split anywhere but inside a character): [`EventWriter::write_bytes`] without the check.
    ///
    /// # Errors
    /// Writing to `out` failed.
    #[inline(always)]
    pub fn write_str(&mut self, text: &str) -> io::Result<bool> {
        if let &[b] = text.as_bytes()
            && self.plain_left == 0
            && self.take_quick(b)
        {
            return Ok(true);
        }
        self.settle_quick();
        match *text.as_bytes() {
            // A one-byte `str` is ASCII.
            [b] if self.plain_left != 0 => self.write_ascii(b),
            _ if text.len() as u64 <= self.plain_left => self.write_plain(text),
            _ => self.write_str_on(text),
        }
    }

    /// Reads one byte of ASCII of raw text within the size, nothing pending (the usual read
    /// of a reply fed a byte at a time): plain prose in the lane, more of a quiet string on
    /// its run, else read the whole way.
    #[inline(always)]
    fn write_ascii(&mut self, b: u8) -> io::Result<bool> {
        self.plain_left -= 1;
        if let Some(lane) = &mut self.lane {
            let class = match lane.holds() {
                true => LaneClass::Hold,
                false => self.stream.lane_class(b),
            };
            // The two usual bytes of prose tested here, the others apart: a `match` on all five
            // classes was a jump through a table, whose target each word's end mispredicted
            // (some 18% of what a stream of prose fed a byte at a time cost).
            if class == LaneClass::Show {
                self.written += 1;
                match self.stream.show_byte(lane, b) {
                    None => write_byte_line(&mut self.out, lane.text(), b)?,
                    Some(delta) => write_prose_line(&mut self.out, lane.text(), delta)?,
                }
                self.out.flush()?;
                return Ok(true);
            }
            if class == LaneClass::Space {
                // Held back (trimmed if the part ends there): shown with the next byte.
                self.stream.push_ascii(b);
                return Ok(true);
            }
            if self.write_lane_byte(class, b)? {
                return Ok(true);
            }
        }
        if self.stream.take_run_byte(b) {
            // More of a quiet string: no event, nothing to write.
            return Ok(true);
        }
        self.feed_plain(ascii_str(b))
    }

    /// [`EventWriter::write_ascii`] of a byte of the lane's class `class` that is neither
    /// [`LaneClass::Show`] nor [`LaneClass::Space`]: whether it was taken in the lane (else the
    /// lane is left, the byte not taken).
    #[inline(never)]
    fn write_lane_byte(&mut self, class: LaneClass, b: u8) -> io::Result<bool> {
        let Some(lane) = &mut self.lane else {
            return Ok(false);
        };
        match class {
            // (`write_ascii` reads these two itself.)
            LaneClass::Space => {
                self.stream.push_ascii(b);
                Ok(true)
            }
            LaneClass::Show | LaneClass::Escaped => {
                let delta = self.stream.show_ascii(lane, b);
                self.written += 1;
                write_prose_line(&mut self.out, lane.text(), delta)?;
                self.out.flush()?;
                Ok(true)
            }
            LaneClass::Hold => match self.stream.hold_ascii(lane, b) {
                Some(None) => Ok(true),
                Some(Some(delta)) => {
                    self.written += 1;
                    write_prose_line(&mut self.out, lane.text(), delta)?;
                    self.out.flush()?;
                    Ok(true)
                }
                None => {
                    self.leave_lane();
                    Ok(false)
                }
            },
            LaneClass::Leave => {
                self.leave_lane();
                Ok(false)
            }
        }
    }

    /// [`EventWriter::write_plain`] of a few bytes of ASCII (at most [`SHORT`]), `bytes`: apart,
    /// so that the read of one byte stays small where it is inlined.
    #[inline(never)]
    fn write_short_ascii(&mut self, bytes: &[u8]) -> io::Result<bool> {
        self.plain_left -= bytes.len() as u64;
        if let Some(lane) = &mut self.lane {
            // Taken whole, or (a letter that may begin a marker, a byte to escape) read a byte
            // at a time in the lane, unless one of them leaves it.
            if let Ok(delta) = self.stream.take_prose_ascii(lane, bytes) {
                if let Some((from, end)) = delta {
                    self.written += 1;
                    let reply = self.stream.reply().as_bytes();
                    write_prose_delta(&mut self.out, lane.text(), reply, from, end)?;
                    self.out.flush()?;
                }
                return Ok(true);
            }
            if let Ok(delta) = self.stream.take_prose_bytes(lane, bytes) {
                if let Some((from, end)) = delta {
                    self.written += 1;
                    let reply = self.stream.reply().as_bytes();
                    write_prose_delta(&mut self.out, lane.text(), reply, from, end)?;
                    self.out.flush()?;
                }
                return Ok(true);
            }
            self.leave_lane();
        }
        if self.stream.take_run_ascii(bytes) {
            return Ok(true);
        }
        // ASCII is UTF-8.
        self.feed_plain(std::str::from_utf8(bytes).unwrap_or_default())
    }

    /// Reads raw text within the size, nothing pending.
    #[inline(always)]
    fn write_plain(&mut self, text: &str) -> io::Result<bool> {
        // Raw text, the usual read: fed here, and the writing called only when the read
        // made something known (a string fed a few bytes at a time makes nothing known for
        // most reads, and a call per read was most of what such a stream cost).
        self.plain_left -= text.len() as u64;
        if let Some(lane) = &mut self.lane {
            if self.stream.takes_prose(lane, text.as_bytes()) {
                // Plain prose: its one line (if any) written straight away, and the
                // stream still in the lane.
                if let Some(delta) = self.stream.take_prose(lane, text) {
                    self.written += 1;
                    write_prose_line(&mut self.out, lane.text(), delta)?;
                    self.out.flush()?;
                }
                return Ok(true);
            }
            self.leave_lane();
        }
        if self.stream.take_run(text) {
            // More of a quiet string: no event, nothing to write.
            return Ok(true);
        }
        self.feed_plain(text)
    }

    /// Reads raw text within the size the whole way (neither prose of the lane nor more of
    /// a quiet string), out of the lane: apart, so that what comes before it is inlined
    /// where the writer is fed a byte at a time.
    #[inline(never)]
    fn feed_plain(&mut self, text: &str) -> io::Result<bool> {
        self.stream.feed_on(text, &mut self.events);
        if !self.events.is_empty() || self.stream.leading() > 0 {
            self.write()?;
        }
        if self.stream.may_take_prose() {
            self.lane = self.prose_lane();
        }
        // (Looked at only when a run was granted: most reads grant none.)
        let run = self.stream.run_left() as u64;
        if run != 0 && self.plain_left != 0 && self.lane.is_none() && self.quicks {
            self.quick = self.plain_left.min(run);
            self.quick_from = self.quick;
            (self.plain_held, self.plain_left) = (self.plain_left, 0);
        }
        Ok(true)
    }

    /// Takes `b` when it is one more plain byte of the quiet string the last read granted
    /// ([`EventWriter::quick`]): appended to the reply. Whether it did.
    #[inline(always)]
    fn take_quick(&mut self, b: u8) -> bool {
        // (Plain string bytes are ASCII: the table says no to the rest.)
        if self.quick == 0 || !STRING_PLAIN[usize::from(b)] {
            return false;
        }
        self.quick -= 1;
        self.stream.push_ascii(b);
        true
    }

    /// Counts the bytes taken by [`EventWriter::take_quick`] in [`EventWriter::plain_left`]
    /// and the stream's run, as reading each the usual way would have, before anything else
    /// reads either.
    #[inline(always)]
    fn settle_quick(&mut self) {
        if self.quick_from != 0 {
            self.settle_quick_on();
        }
    }

    /// [`EventWriter::settle_quick`] past its check: apart, as it comes once per run.
    #[inline(never)]
    fn settle_quick_on(&mut self) {
        let taken = self.quick_from - self.quick;
        self.plain_left = self.plain_held - taken;
        self.stream.ran(taken as usize);
        (self.quick, self.quick_from) = (0, 0);
    }

    /// [`EventWriter::write_str`] past the size it may read without a look: apart, so that
    /// the rest is inlined where the writer is fed a byte at a time.
    #[inline(never)]
    fn write_str_on(&mut self, text: &str) -> io::Result<bool> {
        self.leave_lane();
        self.count_plain();
        let more = self.read_str(text);
        self.grant_plain();
        self.lane = self.prose_lane();
        more
    }

    /// Leaves the lane of plain prose, if in one: the stream as if it had read its chunks
    /// the whole way (before anything else reads it).
    #[inline]
    fn leave_lane(&mut self) {
        if let Some(lane) = self.lane.take() {
            self.stream.leave_lane(lane);
        }
    }

    /// Where the stream stands for the next chunk of plain prose, if it reads such ([`Lane`]):
    /// only once all its events are written.
    fn prose_lane(&mut self) -> Option<Lane> {
        if self.plain_left == 0 || !self.events.is_empty() {
            return None;
        }
        self.stream.prose_lane()
    }

    /// [`EventWriter::write_str`] past its first check.
    fn read_str(&mut self, text: &str) -> io::Result<bool> {
        if self.state != State::Reading
            || !self.pending.is_empty()
            || !self.started
            || self.total + text.len() as u64 > self.max_bytes as u64
        {
            return self.write_bytes(text.as_bytes());
        }
        self.total += text.len() as u64;
        self.feed_and_write(text)
    }

    /// The input ended: writes the last events (the results and `end`) and flushes.
    ///
    /// # Errors
    /// Writing to `out` failed.
    pub fn finish(&mut self) -> io::Result<()> {
        self.settle_quick();
        self.leave_lane();
        self.count_plain();
        self.plain_left = 0;
        self.granted = 0;
        match self.state {
            State::Ended => {}
            State::TooLarge => {
                let error = too_large(self.total, self.max_bytes);
                self.events
                    .extend(self.stream.abort_unreadable(error, &self.pending));
            }
            State::Unreadable(at) => return self.end_unreadable(at),
            State::Reading => {
                if !self.pending.is_empty() {
                    // A character cut off by the end of the input (or the first bytes of what
                    // looked like a byte order mark): the words of `calls --records`.
                    let at = self.stream.reply().len();
                    let error = Error::at(Code::InvalidUtf8, at, "invalid UTF-8");
                    self.events
                        .extend(self.stream.abort_unreadable(error, &self.pending));
                } else if let Some(deltas) = &mut self.deltas {
                    match deltas.end(&mut self.stream) {
                        Ok(more) => self.events.extend(more),
                        Err(error) => self.events.extend(self.stream.abort(error)),
                    }
                }
            }
        }
        self.state = State::Ended;
        self.events.extend(self.stream.finish());
        self.write()
    }

    /// What `calls` gives for the whole reply, once it has ended.
    pub fn result(&self) -> Option<&Result<Extracted, Failure>> {
        self.stream.result()
    }

    /// Whether the reply has ended and `calls` accepts it (its exit status is 0).
    pub fn accepted(&self) -> bool {
        matches!(self.stream.result(), Some(Ok(_)))
    }

    /// The text of the reply read so far.
    pub fn reply(&self) -> &str {
        self.stream.reply()
    }

    /// How many events were written so far.
    pub fn events_written(&self) -> u64 {
        self.written
    }

    /// The writer the events go to (what was written is flushed to it after each read).
    pub fn get_ref(&self) -> &W {
        self.out.get_ref()
    }

    /// Feeds `text` (the stream's, or the server deltas' in it) and writes what it made
    /// known; an error of the deltas ends the reply. Whether more is wanted.
    fn feed_and_write(&mut self, text: &str) -> io::Result<bool> {
        let fed = match &mut self.deltas {
            None => {
                self.stream.feed_into(text, &mut self.events);
                Ok(())
            }
            Some(deltas) => deltas
                .text(text, &mut self.stream)
                .map(|events| self.events.extend(events)),
        };
        if let Err(error) = fed {
            self.events.extend(self.stream.abort(error));
            self.state = State::Ended;
        }
        self.write()?;
        Ok(self.state != State::Ended)
    }

    /// Keeps the first bytes of what was not fed, for the `end` record's `original`.
    fn keep_for_original(&mut self, bytes: &[u8]) {
        let room = ORIGINAL_BYTES.saturating_sub(self.pending.len());
        self.pending
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// Ends the reply on bytes that are not UTF-8 at `at`, the words of `calls --records`.
    fn end_unreadable(&mut self, at: usize) -> io::Result<()> {
        let error = Error::at(Code::InvalidUtf8, at, "invalid UTF-8");
        self.events
            .extend(self.stream.abort_unreadable(error, &self.pending));
        self.events.extend(self.stream.finish());
        self.state = State::Ended;
        self.write()
    }

    /// Writes the events, one per line, and flushes.
    fn write(&mut self) -> io::Result<()> {
        let leading = self.stream.leading();
        if self.events.is_empty() && leading == 0 {
            return Ok(());
        }
        self.written += (self.events.len() + leading) as u64;
        self.stream
            .write_some(&mut self.events, self.shape, &mut self.out)?;
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `calls` fixture fed a byte at a time, with and without the bytes of quiet strings
    /// taken by [`EventWriter::take_quick`], within limits around its size (the read that
    /// crosses one ends the reply `too_large`) and none: the same lines.
    #[test]
    fn quick_bytes_give_the_lines_of_the_usual_read() {
        let (mut replies, mut quick) = (0, 0);
        for (path, case) in super::super::tests::calls_fixture_cases() {
            let input = case["input"].as_str().unwrap_or_default();
            let n = input.len();
            for limit in [n / 2, n.saturating_sub(1), n, usize::MAX] {
                let (mut a, mut b) = (Vec::new(), Vec::new());
                let new = |out| {
                    EventWriter::new(CallOptions::default(), None, Shape::Native, limit, out)
                        .with_arguments_step(16)
                };
                let (mut fast, mut slow) = (new(&mut a), new(&mut b));
                slow.quicks = false;
                for byte in input.as_bytes() {
                    let more = fast.write_bytes(std::slice::from_ref(byte)).unwrap();
                    assert_eq!(more, slow.write_bytes(std::slice::from_ref(byte)).unwrap());
                    quick += usize::from(fast.quick < fast.quick_from);
                }
                fast.finish().unwrap();
                slow.finish().unwrap();
                drop((fast, slow));
                assert_eq!(
                    String::from_utf8_lossy(&a),
                    String::from_utf8_lossy(&b),
                    "{}: {input:?} within {limit}",
                    path.display()
                );
            }
            replies += 1;
        }
        assert!(replies > 100, "{replies} replies");
        assert!(quick > 1000, "{quick} bytes taken quick");
    }
}
