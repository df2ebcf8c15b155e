//! Where a writing stream's event lines go: a buffer before the writer, as `BufWriter` is,
//! into which the line of a prose delta of one or two bytes is written in one copy of a
//! constant of fixed size, its bytes then set in place.
//!
//! A stream of prose fed a byte at a time writes such a line per byte. Through `BufWriter`
//! each cost two `write_all`s (the head, of one of two lengths, was a call to `memcpy`) and
//! their checks, some 40 instructions where the line's bytes are 30.

use std::io::{self, Write};

use super::event::{REASONING_HEAD, TEXT_HEAD};

/// The bytes the line of a delta of one or two bytes may take: the longer head, the delta
/// and its end, rounded up so that the copy is of whole words.
const LINE: usize = 48;

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
pub struct LineOut<W: Write> {
    buf: Vec<u8>,
    inner: W,
    /// Whether a write to `inner` failed (or panicked): nothing is written when dropped.
    failed: bool,
}

impl<W: Write> LineOut<W> {
    pub(super) fn with_capacity(capacity: usize, inner: W) -> LineOut<W> {
        LineOut {
            buf: Vec::with_capacity(capacity.max(LINE)),
            inner,
            failed: false,
        }
    }

    /// The writer the lines go to.
    pub(super) fn get_ref(&self) -> &W {
        &self.inner
    }

    /// Writes the line of a delta of one byte, `b`, that needs no escape in JSON.
    #[inline(always)]
    pub(super) fn byte_line(&mut self, line: &DeltaLine, b: u8) {
        let len = self.buf.len();
        self.buf.extend_from_slice(&line.byte);
        self.buf.truncate(len + line.at + 4);
        if let Some(delta) = self.buf.get_mut(len + line.at) {
            *delta = b;
        }
    }

    /// Writes the line of a delta of two bytes, `a` then `b`, that need no escape in JSON.
    #[inline(always)]
    pub(super) fn pair_line(&mut self, line: &DeltaLine, a: u8, b: u8) {
        let len = self.buf.len();
        self.buf.extend_from_slice(&line.pair);
        self.buf.truncate(len + line.at + 5);
        if let Some([first, second]) = self.buf.get_mut(len + line.at..len + line.at + 2) {
            (*first, *second) = (a, b);
        }
    }

    /// Writes what the buffer holds to `inner`.
    #[inline]
    fn write_buffered(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        self.failed = true;
        self.inner.write_all(&self.buf)?;
        self.failed = false;
        self.buf.clear();
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
        if bytes.len() > self.buf.capacity() - self.buf.len() {
            self.write_buffered()?;
            if bytes.len() >= self.buf.capacity() {
                self.failed = true;
                self.inner.write_all(bytes)?;
                self.failed = false;
                return Ok(());
            }
        }
        self.buf.extend_from_slice(bytes);
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
}
