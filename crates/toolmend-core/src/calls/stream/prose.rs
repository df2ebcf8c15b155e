//! The usual chunk of a reply fed a byte at a time, read and written in one go: more text or
//! reasoning that starts nothing, while the stream reads plain prose with nothing held back.
//!
//! Read the whole way (the skim, [`super::live::Live`]'s scan and flush, the events and their
//! writing), such a chunk cost some 600 instructions, where its line costs about 16. In a
//! [`Lane`] the chunk is appended to the reply and its line written from there, and the
//! stream's and live reader's bookkeeping for the whole run is done once, when the lane is left
//! ([`Stream::leave_lane`]): the lines are byte for byte those of the whole way
//! (`tests/stream_written_deltas.rs`).

use std::io::{self, Write};

use super::Stream;
use super::event::head;
use super::line_out::{DeltaLine, LineOut};
use super::scan::Mode;
use crate::bytes::escape::{needs_escape, write_json_string_body};

/// Where a writing stream stands while it reads plain prose (see [`Stream::prose_lane`]),
/// and the bytes it took so: the reply's bytes from `from` on.
#[derive(Debug, Clone, Copy)]
pub(super) struct Lane {
    /// The text (else the reasoning), and the first byte of the reasoning's close, to the
    /// live reader.
    live: (bool, u8),
    /// The close the scan looks for (reasoning): its first byte and its length.
    close: Option<(u8, usize)>,
    /// Where the lane's bytes start in the reply.
    from: usize,
    /// Where the next delta starts: after the last byte shown (white space after it waits
    /// for a byte that is not, as the live reader trims a part).
    mark: usize,
    /// Where the bytes held back start, those that may still begin a marker (a text lane's
    /// `f` may begin `functools`): read by neither the scan nor the live reader yet.
    held: Option<usize>,
}

impl Lane {
    /// Whether the lane is the text (else the reasoning).
    #[inline(always)]
    pub(super) fn text(&self) -> bool {
        self.live.0
    }

    /// Whether the lane holds bytes back that may still begin a marker.
    #[inline(always)]
    pub(super) fn holds(&self) -> bool {
        self.held.is_some()
    }
}

/// What a byte is to the lane the stream is in ([`Stream::lane_class`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LaneClass {
    /// It may start something (or is not ASCII): the lane is left.
    Leave,
    /// Plain prose with nothing to escape in JSON, shown with what waited before it.
    Show,
    /// Plain prose to escape in JSON (a quote, a backslash, a control character), shown so.
    Escaped,
    /// White space: plain prose that waits for a byte that is not (the live reader trims a
    /// part's end).
    Space,
    /// A letter of the text that may begin a marker: held back in the lane until the bytes
    /// after it tell ([`Stream::hold_ascii`]).
    Hold,
}

/// The classes of the bytes to a lane, and the lane they are for (its text flag and the
/// bytes that decide: the live reader's close, the scan's close).
#[derive(Debug, Clone)]
pub(super) struct LaneClasses {
    key: Option<(bool, u8, Option<u8>)>,
    class: [LaneClass; 256],
}

impl Default for LaneClasses {
    fn default() -> LaneClasses {
        LaneClasses {
            key: None,
            class: [LaneClass::Leave; 256],
        }
    }
}

/// Whether `b` (ASCII) is white space as `char::is_whitespace` says: what the live reader holds
/// back at the end of a part.
#[inline(always)]
fn ascii_space(b: u8) -> bool {
    matches!(b, b'\t'..=b'\r' | b' ')
}

impl Stream {
    /// Whether the stream reads text or reasoning, where [`Stream::prose_lane`] may give a
    /// lane: a quick look after each read that took none.
    #[inline]
    pub(super) fn may_take_prose(&self) -> bool {
        self.run == 0 && matches!(self.mode, Mode::Text | Mode::Reasoning(_))
    }

    /// For a writing stream ([`Stream::writing`]) whose events are all written: whether it
    /// reads plain prose, so that a chunk of bytes that start nothing ([`Stream::takes_prose`])
    /// makes nothing known but more of it. The lane then holds as long as such chunks come,
    /// each taken with [`Stream::take_prose`]; anything else reads the stream only after
    /// [`Stream::leave_lane`].
    #[inline(never)]
    pub(super) fn prose_lane(&mut self) -> Option<Lane> {
        if self.result.is_some() || self.run != 0 || self.running || !self.skims {
            return None;
        }
        // Where the skim takes a chunk whole, and the scan would find nothing in it either.
        let close = match &self.mode {
            Mode::Text if self.pos == self.buf.len() => None,
            Mode::Reasoning(close) => {
                let first = close.as_bytes()[0];
                if self.buf.as_bytes()[self.pos..].contains(&first) {
                    return None;
                }
                Some((first, close.len()))
            }
            _ => return None,
        };
        let live = self.live.lane(self.buf.len())?;
        let key = Some((live.0, live.1, close.map(|(first, _)| first)));
        if self.lane_classes.key != key {
            self.lane_classes.key = key;
            for b in 0..=255u8 {
                let plain = self.live.plain_byte(live, b)
                    && match close {
                        None => self.markers.plain[usize::from(b)],
                        Some((first, _)) => b != first,
                    };
                self.lane_classes.class[usize::from(b)] = match plain {
                    false if live.0 && b.is_ascii_alphabetic() => LaneClass::Hold,
                    false => LaneClass::Leave,
                    true if ascii_space(b) => LaneClass::Space,
                    true if needs_escape(b) => LaneClass::Escaped,
                    true => LaneClass::Show,
                };
            }
        }
        let at = self.buf.len();
        Some(Lane {
            live,
            close,
            from: at,
            mark: at,
            held: None,
        })
    }

    /// What `b` is to the lane the stream is in (the one [`Stream::prose_lane`] gave last).
    #[inline(always)]
    pub(super) fn lane_class(&self, b: u8) -> LaneClass {
        self.lane_classes.class[usize::from(b)]
    }

    /// Whether `b` is plain prose in the lane: a byte that starts nothing, to the scan and to
    /// the live reader, and needs no escape ([`LaneClass::Show`], [`LaneClass::Space`]).
    #[inline(always)]
    fn plain_prose(&self, b: u8) -> bool {
        matches!(self.lane_class(b), LaneClass::Show | LaneClass::Space)
    }

    /// Whether `chunk` is plain prose in the lane ([`Stream::plain_prose`], every byte).
    #[inline(always)]
    pub(super) fn takes_prose(&self, lane: &Lane, chunk: &[u8]) -> bool {
        lane.held.is_none() && !chunk.is_empty() && chunk.iter().all(|&b| self.plain_prose(b))
    }

    /// Reads `b`, a byte of ASCII, in a text `lane` that holds bytes back or where `b` may
    /// begin a marker ([`LaneClass::Hold`]), as the scan and the live reader would: `None`
    /// when the lane is to be left (a marker there, or what the lane does not decide), `b`
    /// not taken; else `b` taken, with the delta of the event it makes known, if any: bytes
    /// held back that can begin nothing after all are shown with it.
    #[inline(never)]
    pub(super) fn hold_ascii(&mut self, lane: &mut Lane, b: u8) -> Option<Option<&[u8]>> {
        let start = lane.held.unwrap_or(self.buf.len());
        self.buf.push(char::from(b & 0x7f));
        let seq = &self.buf.as_bytes()[start..];
        match (self.live.holds_at(seq), self.markers.at(seq)) {
            // The live reader holds it back (no event) and the scan waits or passes on.
            (Err(()), Err(()) | Ok(None)) => {
                lane.held = Some(start);
                return Some(None);
            }
            // Neither can begin anything there: shown with `b` if the rest are plain bytes
            // that begin nothing either.
            (Ok(false), Ok(None))
                if lane.held.is_some()
                    && seq[1..seq.len() - 1]
                        .iter()
                        .all(|&c| self.lane_class(c) == LaneClass::Show) =>
            {
                let end = match self.lane_class(b) {
                    LaneClass::Show | LaneClass::Escaped => self.buf.len(),
                    // Waits, the bytes before it shown.
                    LaneClass::Space => self.buf.len() - 1,
                    _ => {
                        self.buf.pop();
                        return None;
                    }
                };
                lane.held = None;
                let from = std::mem::replace(&mut lane.mark, end);
                return Some(Some(&self.buf.as_bytes()[from..end]));
            }
            _ => {}
        }
        self.buf.pop();
        None
    }

    /// Appends a byte of ASCII to the reply: white space in the lane ([`LaneClass::Space`]).
    #[inline(always)]
    pub(super) fn push_ascii(&mut self, b: u8) {
        self.buf.push(char::from(b & 0x7f));
    }

    /// Reads `b`, a byte of ASCII plain prose in `lane` that is not white space
    /// ([`LaneClass::Show`], [`LaneClass::Escaped`]): the delta of the event it makes known, the white space that
    /// waited and itself.
    #[inline(always)]
    pub(super) fn show_ascii(&mut self, lane: &mut Lane, b: u8) -> &[u8] {
        let from = lane.mark;
        let _ = self.show_byte(lane, b);
        &self.buf.as_bytes()[from..]
    }

    /// [`Stream::show_ascii`] with no look back at the reply where nothing waited before `b`:
    /// `None` then (the delta is `b` alone), else the delta.
    #[inline(always)]
    pub(super) fn show_byte(&mut self, lane: &mut Lane, b: u8) -> Option<&[u8]> {
        let at = self.buf.len();
        self.buf.push(char::from(b & 0x7f));
        let from = std::mem::replace(&mut lane.mark, at + 1);
        (from != at).then(|| &self.buf.as_bytes()[from..])
    }

    /// Reads `chunk`, plain prose in `lane` ([`Stream::takes_prose`]): the delta of the one
    /// event it makes known (of the text if `lane.text()`, else of the reasoning), if any:
    /// the white space that waited and the chunk, to its last character that is not white
    /// space.
    #[inline(always)]
    pub(super) fn take_prose(&mut self, lane: &mut Lane, chunk: &str) -> Option<&[u8]> {
        let end = match *chunk.as_bytes() {
            [b] => {
                // ASCII, as it is a whole `str`: one byte pushed.
                self.buf.push(char::from(b & 0x7f));
                if ascii_space(b) {
                    return None;
                }
                self.buf.len()
            }
            _ => {
                let at = self.buf.len();
                self.buf.push_str(chunk);
                match chunk.trim_end().len() {
                    0 => return None,
                    shown => at + shown,
                }
            }
        };
        let from = std::mem::replace(&mut lane.mark, end);
        Some(&self.buf.as_bytes()[from..end])
    }

    /// [`Stream::take_prose`] of a chunk of ASCII, `bytes`, in one pass that looks at each
    /// byte's class and appends it: `Err` (nothing taken) unless the chunk is plain prose
    /// ([`Stream::takes_prose`]), else where the delta is in the reply, if any (the white space
    /// that waited before the chunk, and the chunk to its last byte that is not white space),
    /// for [`write_prose_delta`].
    #[inline(always)]
    pub(super) fn take_prose_ascii(
        &mut self,
        lane: &mut Lane,
        bytes: &[u8],
    ) -> Result<Option<(usize, usize)>, ()> {
        if lane.held.is_some() || bytes.is_empty() {
            return Err(());
        }
        let at = self.buf.len();
        self.buf.reserve(bytes.len());
        for &b in bytes {
            if !self.plain_prose(b) {
                self.buf.truncate(at);
                return Err(());
            }
            self.buf.push(char::from(b & 0x7f));
        }
        let Some(last) = bytes.iter().rposition(|&b| !ascii_space(b)) else {
            return Ok(None);
        };
        let end = at + last + 1;
        Ok(Some((std::mem::replace(&mut lane.mark, end), end)))
    }

    /// Reads `bytes` (ASCII) in `lane` a byte at a time, as a stream fed a byte at a time reads
    /// them in the lane ([`Stream::lane_class`], [`Stream::hold_ascii`]), for a chunk that
    /// [`Stream::takes_prose`] does not take whole (a letter that may begin a marker, a byte to
    /// escape): where the delta of the one event the chunk makes known is in the reply (the
    /// deltas its bytes would each make, end to end), if any. `Err` when the lane is to be
    /// left at one of its bytes: then nothing is taken (the reply and `lane` as they were).
    #[inline(never)]
    pub(super) fn take_prose_bytes(
        &mut self,
        lane: &mut Lane,
        bytes: &[u8],
    ) -> Result<Option<(usize, usize)>, ()> {
        let (len, was) = (self.buf.len(), *lane);
        for &b in bytes {
            let class = if lane.holds() {
                LaneClass::Hold
            } else {
                self.lane_class(b)
            };
            let taken = match class {
                LaneClass::Space => {
                    self.push_ascii(b);
                    true
                }
                LaneClass::Show | LaneClass::Escaped => {
                    self.show_ascii(lane, b);
                    true
                }
                LaneClass::Hold => self.hold_ascii(lane, b).is_some(),
                LaneClass::Leave => false,
            };
            if !taken {
                self.buf.truncate(len);
                *lane = was;
                return Err(());
            }
        }
        Ok((lane.mark != was.mark).then_some((was.mark, lane.mark)))
    }

    /// Ends `lane`: the stream and its live reader as reading its bytes the whole way leaves
    /// them (their deltas all written).
    #[inline(never)]
    pub(super) fn leave_lane(&mut self, lane: Lane) {
        // Bytes held back are read by the scan and the live reader with the next chunk.
        let len = lane.held.unwrap_or(self.buf.len());
        if len > lane.from {
            self.live
                .settle_plain(&self.buf[lane.from..len], lane.text());
        }
        self.pos = match lane.close {
            None => len,
            // As the skim leaves it: the close could still begin in the last bytes.
            Some((_, n)) => len.saturating_sub(n - 1).max(self.pos),
        };
    }
}

/// The line of an event whose delta is the byte `b`, that needs no escape: one copy of a
/// constant line, `b` set in it ([`LineOut::byte_line`]) (the usual delta of a stream fed a
/// byte at a time, written with no look at it).
#[inline(always)]
pub(super) fn write_byte_line<W: Write>(out: &mut LineOut<W>, text: bool, b: u8) -> io::Result<()> {
    out.byte_line(DeltaLine::of_kind(text), b);
    Ok(())
}

/// Defines `$name`: where each byte of `x` is one JSON escapes, its high bit (and maybe that of
/// a byte above it, the borrow of the subtraction: never one below): a quote, a backslash or a
/// control byte. One word of 16 bytes and one of 8 (most deltas fit in the last eight).
macro_rules! escapes_in {
    ($name:ident, $word:ty) => {
        #[inline(always)]
        fn $name(x: $word) -> $word {
            const ONES: $word = <$word>::MAX / 255;
            const HIGHS: $word = ONES * 0x80;
            // The high bit where a byte of `y` is zero (of `x ^ b...`: where one of `x` is `b`).
            let zero = |y: $word| y.wrapping_sub(ONES) & !y & HIGHS;
            (x.wrapping_sub(ONES * 0x20) & !x & HIGHS)
                | zero(x ^ (ONES * <$word>::from(b'"')))
                | zero(x ^ (ONES * <$word>::from(b'\\')))
        }
    };
}
escapes_in!(escapes_in, u128);
escapes_in!(escapes_in8, u64);

/// [`write_prose_line`] of the delta `reply[from..end]`: a delta of at most 16 bytes with
/// nothing to escape (a stream fed a few bytes at a time) is written from the 16 bytes of
/// the reply that end it, placed behind the line's head in one copy and checked for
/// anything to escape at once, with no look at each byte and one write.
#[inline(always)]
pub(super) fn write_prose_delta<W: Write>(
    out: &mut LineOut<W>,
    text: bool,
    reply: &[u8],
    from: usize,
    end: usize,
) -> io::Result<()> {
    let n = end - from;
    if let Some(window) = end.checked_sub(16).and_then(|at| reply.get(at..end))
        && let Ok(window) = <[u8; 16]>::try_from(window)
        && (1..=16).contains(&n)
    {
        // The delta is the last `n` bytes of the window (most are in its last eight).
        let [.., h0, h1, h2, h3, h4, h5, h6, h7] = window;
        let last8 = u64::from_le_bytes([h0, h1, h2, h3, h4, h5, h6, h7]);
        let plain = match n {
            ..=8 => escapes_in8(last8) & (u64::MAX << (8 * (8 - n))) == 0,
            _ => escapes_in(u128::from_le_bytes(window)) & (u128::MAX << (8 * (16 - n))) == 0,
        };
        if plain {
            out.window_line(text, &window, n);
            return Ok(());
        }
    }
    write_prose_line(out, text, &reply[from..end])
}

/// The line of a `text` (`text`) or `reasoning` event with this delta and its newline, as
/// the events are written; a delta of one or two bytes with nothing to escape (what a stream
/// fed a byte at a time mostly gives: a byte, or white space that waited and a byte) as the
/// constant head and one word, with no look at each byte.
#[inline(always)]
pub(super) fn write_prose_line<W: Write>(
    out: &mut LineOut<W>,
    text: bool,
    delta: &[u8],
) -> io::Result<()> {
    let plain = |b: u8| !needs_escape(b);
    match *delta {
        [b] if plain(b) => write_byte_line(out, text, b),
        [a, b] if plain(a) && plain(b) => {
            out.pair_line(DeltaLine::of_kind(text), a, b);
            Ok(())
        }
        _ => {
            out.write_all(head(text))?;
            write_json_string_body(out, delta)?;
            out.write_all(b"\"}\n")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A delta written from the window that ends it is the line [`write_prose_line`] writes,
    /// for every length up to past the window, at every place in replies with bytes to
    /// escape (and bytes that are not ASCII) before, in and after the delta.
    #[test]
    fn deltas_from_the_window_are_the_lines_written_byte_by_byte() {
        let specials = [b'"', b'\\', b'\n', 0, 0x1f, 0x7f, 0xc3, b' ', b'!'];
        let mut checked = 0;
        for len in 1..40 {
            for special in specials {
                for at in 0..40 {
                    let mut reply = vec![b'a'; 40];
                    reply[at] = special;
                    for (from, end) in [(40 - len, 40), (0, len), (39 - len.min(39), 39)] {
                        if end > reply.len() || from >= end {
                            continue;
                        }
                        for text in [true, false] {
                            let (mut fast, mut slow) = (Vec::new(), Vec::new());
                            let mut out = LineOut::with_capacity(64, &mut fast);
                            write_prose_delta(&mut out, text, &reply, from, end).unwrap();
                            drop(out);
                            let mut out = LineOut::with_capacity(64, &mut slow);
                            write_prose_line(&mut out, text, &reply[from..end]).unwrap();
                            drop(out);
                            assert_eq!(fast, slow, "{len} {special} {at} {from}..{end}");
                            // The line is the event's JSON, where the delta is text.
                            if let Ok(delta) = std::str::from_utf8(&reply[from..end]) {
                                let kind = if text { "text" } else { "reasoning" };
                                let json = serde_json::json!({"event": kind, "delta": delta});
                                assert_eq!(fast, format!("{json}\n").into_bytes());
                            }
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert!(checked > 1000);
    }
}
