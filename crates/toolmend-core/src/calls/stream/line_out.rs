//! Where a writing stream's event lines go: a buffer before the writer, as `BufWriter` is,
//! into which the line of a prose delta (one or two bytes, or up to 16 read from the reply as
//! one word) is written in copies of fixed size, its bytes then set in place.
//!
//! A stream of prose fed a byte at a time writes such a line per byte. Through `BufWriter`
//! each cost two `write_all`s (the head, of one of two lengths, was a call to `memcpy`) and
//! their checks, some 40 instructions where the line's bytes are 30; a delta of a few bytes
//! was written in parts, each looked at for bytes to escape and copied by a call.

use std::io::{self, Write};

use super::event::{REASONING_HEAD, TEXT_HEAD};

/// The bytes the line of a delta of one or two bytes may take: the longer head, the delta
/// and its end, rounded up so that the copy is of whole words.
const LINE: usize = 48;

/// The bytes of a line whose delta is up to 16 bytes (the longer head, 16 bytes, the line's
/// end), rounded up the same way.
const WIDE: usize = 64;

/// The lines of a `text` or `reasoning` event whose delta is one byte or two: constants of
/// one size, each copied whole, its delta's bytes then set in place and the rest cut off.
pub(super) struct DeltaLine {
    /// The head, one byte (`_`) and the line's end.
    byte: [u8; LINE],
    /// The head, two bytes (`__`) and the line's end.
    pair: [u8; LINE],
    /// Where the delta starts: the head's length.
    at: usize,
}

impl DeltaLine {
    const fn of(head: &[u8]) -> DeltaLine {
        DeltaLine {
            byte: line_of(head, b"_\"}\n"),
            pair: line_of(head, b"__\"}\n"),
            at: head.len(),
        }
    }

    /// The line of a `text` (`text`) or `reasoning` event.
    #[inline(always)]
    pub(super) fn of_kind(text: bool) -> &'static DeltaLine {
        if text { &TEXT_LINE } else { &REASONING_LINE }
    }
}

static TEXT_LINE: DeltaLine = DeltaLine::of(TEXT_HEAD);
static REASONING_LINE: DeltaLine = DeltaLine::of(REASONING_HEAD);

/// `head` then `tail`, the rest zeros.
const fn line_of(head: &[u8], tail: &[u8]) -> [u8; LINE] {
    let mut bytes = [0u8; LINE];
    let mut i = 0;
    while i < head.len() {
        bytes[i] = head[i];
        i += 1;
    }
    let mut j = 0;
    while j < tail.len() {
        bytes[i + j] = tail[j];
        j += 1;
    }
    bytes
}

/// A buffer of `capacity` bytes before `inner`, written to it whole on `flush` or when full,
/// as `BufWriter` does; what it holds when dropped is written then, errors ignored (unless a
/// write to `inner` failed: what it holds may have been written in part).
///
/// The buffer is all there (zeros past what it holds, `used`), so that a line of fixed size
/// is one copy into it, with no call: `Vec::extend_from_slice` was a call to `memcpy` or to
/// `append_elements` as the inliner chose.
pub struct LineOut<W: Write> {
    buf: Box<[u8]>,
    /// How many bytes of `buf` it holds.
    used: usize,
    inner: W,
    /// Whether a write to `inner` failed (or panicked): nothing is written when dropped.
    failed: bool,
}

impl<W: Write> LineOut<W> {
    pub(super) fn with_capacity(capacity: usize, inner: W) -> LineOut<W> {
        LineOut {
            buf: vec![0; capacity.max(2 * WIDE)].into_boxed_slice(),
            used: 0,
            inner,
            failed: false,
        }
    }

    /// The writer the lines go to.
    pub(super) fn get_ref(&self) -> &W {
        &self.inner
    }

    /// The `N` bytes after what the buffer holds, to write a line of at most `N` bytes into
    /// (the buffer grown if they are not all there: it then holds more than its capacity until
    /// the next flush, as a line is never split).
    #[inline(always)]
    fn room<const N: usize>(&mut self) -> &mut [u8; N] {
        if self.buf.len() - self.used < N {
            self.grow(N);
        }
        let used = self.used;
        match self
            .buf
            .get_mut(used..used + N)
            .and_then(|r| r.try_into().ok())
        {
            Some(room) => room,
            None => unreachable!("grown to hold N more bytes"),
        }
    }

    #[cold]
    fn grow(&mut self, more: usize) {
        let mut bigger = vec![0; (2 * self.buf.len()).max(self.used + more)];
        bigger[..self.used].copy_from_slice(&self.buf[..self.used]);
        self.buf = bigger.into_boxed_slice();
    }

    /// Writes the line of a delta of one byte, `b`, that needs no escape in JSON.
    #[inline(always)]
    pub(super) fn byte_line(&mut self, line: &DeltaLine, b: u8) {
        let room = self.room::<LINE>();
        *room = line.byte;
        // (`at` is a head's length, well inside the line: the `min` only spares a check.)
        room[line.at.min(LINE - 1)] = b;
        self.used += line.at + 4;
    }

    /// Writes the line of a delta of two bytes, `a` then `b`, that need no escape in JSON.
    #[inline(always)]
    pub(super) fn pair_line(&mut self, line: &DeltaLine, a: u8, b: u8) {
        let room = self.room::<LINE>();
        *room = line.pair;
        let at = line.at.min(LINE - 2);
        room[at] = a;
        room[at + 1] = b;
        self.used += line.at + 5;
    }

    /// Writes the line of a `text` (`text`) or `reasoning` event whose delta is the last `n`
    /// bytes (1 to 16) of `window`, that need no escape in JSON: in copies of fixed size, the
    /// window where it ends the delta, then the head over the window's bytes before the delta,
    /// then the line's end.
    #[inline(always)]
    pub(super) fn window_line(&mut self, text: bool, window: &[u8; 16], n: usize) {
        let n = n.clamp(1, 16);
        let room = self.room::<WIDE>();
        // The head's length as a constant of each kind (not `DeltaLine::at`, a load): the
        // offsets below fold into the two ways (0.7M more instructions on the bench's prose at
        // 4 bytes read from the `DeltaLine`).
        let at = if text {
            TEXT_HEAD.len()
        } else {
            REASONING_HEAD.len()
        };
        // The head is more than 16 bytes: the window starts inside the line.
        let start = at + n - 16;
        room[start..start + 16].copy_from_slice(window);
        if text {
            room[..TEXT_HEAD.len()].copy_from_slice(TEXT_HEAD);
        } else {
            room[..REASONING_HEAD.len()].copy_from_slice(REASONING_HEAD);
        }
        room[at + n..at + n + 3].copy_from_slice(b"\"}\n");
        self.used += at + n + 3;
    }

    /// Writes what the buffer holds to `inner`.
    #[inline]
    fn write_buffered(&mut self) -> io::Result<()> {
        if self.used == 0 {
            return Ok(());
        }
        self.failed = true;
        self.inner.write_all(&self.buf[..self.used])?;
        self.failed = false;
        self.used = 0;
        Ok(())
    }
}

impl<W: Write> Write for LineOut<W> {
    #[inline]
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.write_all(bytes)?;
        Ok(bytes.len())
    }

    #[inline]
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        if bytes.len() > self.buf.len() - self.used {
            self.write_buffered()?;
            if bytes.len() >= self.buf.len() {
                self.failed = true;
                self.inner.write_all(bytes)?;
                self.failed = false;
                return Ok(());
            }
        }
        let used = self.used;
        self.buf[used..used + bytes.len()].copy_from_slice(bytes);
        self.used += bytes.len();
        Ok(())
    }

    #[inline]
    fn flush(&mut self) -> io::Result<()> {
        self.write_buffered()?;
        self.inner.flush()
    }
}

impl<W: Write> Drop for LineOut<W> {
    fn drop(&mut self) {
        if !self.failed {
            let _ = self.write_buffered();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that takes at most `step` bytes a write.
    struct Trickle(Vec<u8>, usize);

    impl Write for Trickle {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            let n = bytes.len().min(self.1);
            self.0.extend_from_slice(&bytes[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Lines of one and two bytes are those written whole, for both kinds; writes smaller and
    /// larger than the buffer come out in order, flushed or dropped.
    #[test]
    fn lines_and_writes_come_out_in_order() {
        let mut expected = Vec::new();
        let mut got = Trickle(Vec::new(), 7);
        {
            let mut out = LineOut::with_capacity(64, &mut got);
            for (i, text) in [true, false, true].into_iter().enumerate() {
                let head = if text { TEXT_HEAD } else { REASONING_HEAD };
                let b = b'a' + i as u8;
                out.byte_line(DeltaLine::of_kind(text), b);
                expected.extend_from_slice(head);
                expected.extend_from_slice(&[b, b'"', b'}', b'\n']);
                out.pair_line(DeltaLine::of_kind(text), b' ', b);
                expected.extend_from_slice(head);
                expected.extend_from_slice(&[b' ', b, b'"', b'}', b'\n']);
                let long = vec![b'x'; 100 * i + 3];
                out.write_all(&long).unwrap();
                expected.extend_from_slice(&long);
                if i == 1 {
                    out.flush().unwrap();
                }
            }
        }
        assert_eq!(
            String::from_utf8_lossy(&got.0),
            String::from_utf8_lossy(&expected)
        );
    }

    /// Lines written with no flush past the buffer's size grow it (a line is never split), and
    /// a window's line is the event's JSON for every length of its delta.
    #[test]
    fn lines_past_the_buffer_grow_it() {
        let mut expected = Vec::new();
        let mut got = Vec::new();
        {
            let mut out = LineOut::with_capacity(0, &mut got);
            let window: [u8; 16] = *b"abcdefghijklmnop";
            for i in 0..200 {
                let text = i % 3 != 0;
                let kind = if text { "text" } else { "reasoning" };
                let n = i % 16 + 1;
                out.window_line(text, &window, n);
                let delta = std::str::from_utf8(&window[16 - n..]).unwrap();
                let json = serde_json::json!({"event": kind, "delta": delta});
                expected.extend_from_slice(format!("{json}\n").as_bytes());
                out.byte_line(DeltaLine::of_kind(text), b'z');
                let json = serde_json::json!({"event": kind, "delta": "z"});
                expected.extend_from_slice(format!("{json}\n").as_bytes());
            }
            assert!(out.buf.len() > 2 * WIDE, "grown to {}", out.buf.len());
        }
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&expected)
        );
    }

    /// A writer whose first write fails; what it takes after that it keeps.
    struct FailsOnce(bool, Vec<u8>);

    impl Write for FailsOnce {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            if !std::mem::replace(&mut self.0, true) {
                return Err(io::Error::other("first write"));
            }
            self.1.extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A flush that failed is an error, and what the buffer held is not written again when it
    /// is dropped (it may have gone out in part).
    #[test]
    fn a_failed_write_is_not_repeated_on_drop() {
        let mut inner = FailsOnce(false, Vec::new());
        {
            let mut out = LineOut::with_capacity(0, &mut inner);
            out.byte_line(DeltaLine::of_kind(true), b'x');
            assert!(out.flush().is_err());
        }
        assert!(inner.0, "the write was tried");
        assert_eq!(inner.1, b"");
    }
}
