//! A quiet JSON string fed a few bytes at a time: its plain bytes are appended to the reply
//! on a run the skim granted (`Stream::run`), with no look at the call reader, and counted
//! in it when the run ends ([`Stream::settle_run`]).

use super::Stream;
use super::scan::Mode;

/// Whether `bytes` (a small chunk: at most 16 bytes) can only add to an open JSON string
/// without ending it or starting an escape: no quote, backslash or control character.
#[inline]
pub(super) fn plain_string_bytes(bytes: &[u8]) -> bool {
    !bytes.is_empty() && bytes.len() <= 16 && bytes.iter().all(|&b| plain_string_byte(b))
}

/// [`plain_string_byte`] of each byte of ASCII (and `false` for the rest): one load.
pub(super) static STRING_PLAIN: [bool; 256] = {
    let mut plain = [false; 256];
    let mut b = 0;
    while b < 128 {
        plain[b] = plain_string_byte(b as u8);
        b += 1;
    }
    plain
};

/// Whether `b` can only add to an open JSON string (see [`plain_string_bytes`]).
#[inline]
const fn plain_string_byte(b: u8) -> bool {
    b >= 0x20 && b != b'"' && b != b'\\'
}

impl Stream {
    /// Takes `chunk` when it is more plain bytes of a string the skim found quiet (see
    /// `run`): appended to the reply, and nothing else done. Whether it did.
    #[inline]
    pub(crate) fn take_run(&mut self, chunk: &str) -> bool {
        let n = chunk.len();
        if n > self.run {
            return false;
        }
        match chunk.as_bytes() {
            // The usual chunk of a string fed a byte at a time, looked at alone; ASCII, so
            // that its push is a byte's.
            &[b] => {
                if !(plain_string_byte(b) && b.is_ascii()) {
                    return false;
                }
                self.buf.push(char::from(b));
            }
            bytes => {
                if !plain_string_bytes(bytes) {
                    return false;
                }
                self.buf.push_str(chunk);
            }
        }
        self.run -= n;
        #[cfg(test)]
        super::tests::SKIMMED.with(|n| n.set(n.get() + 1));
        true
    }

    /// [`Stream::take_run`] of a one-byte chunk of ASCII, `b`.
    #[inline(always)]
    pub(crate) fn take_run_byte(&mut self, b: u8) -> bool {
        if self.run == 0 || !STRING_PLAIN[usize::from(b)] {
            return false;
        }
        self.buf.push(char::from(b & 0x7f));
        self.run -= 1;
        #[cfg(test)]
        super::tests::SKIMMED.with(|n| n.set(n.get() + 1));
        true
    }

    /// How many more one-byte chunks of plain string bytes the run takes ([`Stream::run`]).
    #[inline]
    pub(crate) fn run_left(&self) -> usize {
        self.run
    }

    /// Counts `n` one-byte chunks of plain string bytes appended to the reply (with
    /// [`Stream::push_ascii`]) as taken on the run, as [`Stream::take_run_byte`] takes each.
    pub(crate) fn ran(&mut self, n: usize) {
        self.run -= n;
        #[cfg(test)]
        super::tests::SKIMMED.with(|c| c.set(c.get() + n));
    }

    /// [`Stream::take_run`] of a chunk of a few bytes of ASCII.
    #[inline(always)]
    pub(crate) fn take_run_ascii(&mut self, bytes: &[u8]) -> bool {
        let n = bytes.len();
        if n > self.run {
            return false;
        }
        // Looked at and appended in one pass (a string's bytes are nearly always plain): the
        // append undone at a byte that is not.
        let len = self.buf.len();
        self.buf.reserve(n);
        for &b in bytes {
            if !STRING_PLAIN[usize::from(b)] {
                self.buf.truncate(len);
                return false;
            }
            self.buf.push(char::from(b & 0x7f));
        }
        self.run -= n;
        #[cfg(test)]
        super::tests::SKIMMED.with(|n| n.set(n.get() + 1));
        true
    }

    /// Counts the bytes `feed_into` took on the `run` in the call reader (as deferred string
    /// bytes), and ends the run: anything but one more plain byte looks at the reader again.
    #[inline]
    pub(super) fn settle_run(&mut self) {
        self.run = 0;
        if self.running {
            self.running = false;
            // `pos` was the reply's end when the run was granted.
            let from = self.pos;
            self.pos = self.buf.len();
            if let Mode::Json(reader, _) = &mut self.mode {
                if reader.nested_at.is_some() {
                    // A run in arguments written as a JSON string: both readers take it now.
                    reader.nested_run(&self.buf.as_bytes()[from..], &mut self.slots);
                } else {
                    let ran = self.pos - from;
                    reader.read += ran;
                    reader.deferred += ran;
                }
            }
        }
    }
}
