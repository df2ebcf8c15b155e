//! The common chunk read without the byte-by-byte scan ([`Stream::skim`]): text that starts
//! nothing, reasoning with no sign of its close, more of a JSON string whose growth shows
//! nothing yet, or the bytes between a quiet JSON's strings.

use super::event::Event;
use super::run::plain_string_bytes;
use super::scan::Mode;
use super::{Stream, call_reader};
use crate::calls::partial::Step;

/// Gives `reader` the plain string bytes the skim counted and passed over, the last
/// `reader.deferred` bytes of `buf` before `pos`, in one go.
#[inline]
fn catch_up(reader: &mut call_reader::CallReader, buf: &str, pos: usize) {
    if reader.deferred > 0 {
        let from = pos - reader.deferred;
        reader.deferred = 0;
        let taken = reader
            .reader
            .extend_plain_string(&buf.as_bytes()[from..pos]);
        // Each was taken alone as more of the same plain string.
        debug_assert!(taken, "deferred string bytes not taken");
    }
}

impl Stream {
    /// The common chunk, read without the byte-by-byte scan: text that starts nothing,
    /// reasoning with no sign of its close, or more of a JSON string whose growth shows
    /// nothing yet. Whether the chunk was read (the scan and refresh would do the same).
    #[inline]
    pub(super) fn skim(&mut self, events: &mut Vec<Event>) -> bool {
        let bytes = &self.buf.as_bytes()[self.pos..];
        match &mut self.mode {
            Mode::Text => {
                if bytes.iter().all(|&b| self.markers.plain[usize::from(b)]) {
                    self.pos = self.buf.len();
                    return true;
                }
                false
            }
            Mode::Reasoning(close) | Mode::SkipTo(close) => {
                let close = close.as_bytes();
                if bytes.contains(&close[0]) {
                    return false;
                }
                // As the scan leaves it: the close could still begin in the last bytes.
                self.pos = self.buf.len().saturating_sub(close.len() - 1).max(self.pos);
                true
            }
            Mode::Json(reader, ctx) => {
                let n = bytes.len();
                if reader.nested_at.is_none()
                    && reader.quiet(n)
                    && plain_string_bytes(bytes)
                    && (reader.deferred > 0 || reader.reader.in_plain_string())
                {
                    // More of a plain string, a few bytes at a time: counted now, given to
                    // the reader with the bytes after them when it is next used (`catch_up`).
                    reader.deferred += n;
                    reader.read += n;
                    self.pos = self.buf.len();
                    if self.live.stopped() {
                        // The bytes that may follow the same way, without a look at the reader.
                        self.run = reader.quiet_left();
                        self.running = true;
                    }
                    return true;
                }
                catch_up(reader, &self.buf, self.pos);
                if reader.nested_at.is_some() {
                    // Arguments written as a JSON string: a plain byte, or bytes that stay in
                    // the string (its escapes, the quotes and brackets of the JSON in it).
                    if let &[b] = bytes
                        && reader.nested_byte(b, &mut self.slots)
                    {
                        self.pos = self.buf.len();
                        if self.live.stopped() {
                            // The plain bytes that may follow the same way, without a look
                            // at the readers (given to them by `settle_run`).
                            self.run = reader.nested_quiet_left(&self.slots);
                            self.running = self.run > 0;
                        }
                        return true;
                    }
                    let read = reader.nested_chunk(
                        bytes,
                        self.buf.as_bytes(),
                        &mut self.slots,
                        events,
                        &mut self.written,
                    );
                    self.pos += read;
                    if read < n {
                        return false;
                    }
                    if self.live.stopped() {
                        // As after a plain byte: what follows may come on a run.
                        self.run = reader.nested_quiet_left(&self.slots);
                        self.running = self.run > 0;
                    }
                    return true;
                }
                if !reader.quiet(n) {
                    return false;
                }
                if reader.reader.in_plain_string() {
                    let taken = match bytes {
                        &[b] => reader.reader.string_plain_byte(b),
                        _ => false,
                    } || reader.reader.extend_string(bytes);
                    if taken {
                        reader.read += n;
                        self.pos = self.buf.len();
                        return true;
                    }
                }
                // The bytes between strings (and those that end or escape one), pushed as the
                // scan pushes them, but for a bracket: quiet, no frame opens or closes, and
                // the top one is no call object's, so there is nothing else to look at (a
                // byte of them cost some 500 instructions the whole way).
                let mut read = 0;
                for &b in bytes {
                    if matches!(b, b'{' | b'[' | b'}' | b']') {
                        break;
                    }
                    match reader.push_flat(b) {
                        Step::More => read += 1,
                        step => {
                            // (Only `Bail`: nothing but a bracket ends the value.)
                            let ctx = *ctx;
                            self.pos += read;
                            let done = step == Step::Done;
                            if !done {
                                reader.bail(self.buf.as_bytes(), &mut self.slots, events);
                            }
                            self.mode = Mode::after_json(ctx, done);
                            // A bail leaves the byte to the scan, in the mode it gives.
                            self.pos += usize::from(done);
                            return false;
                        }
                    }
                }
                self.pos += read;
                read == n
            }
            _ => false,
        }
    }

    /// Gives the call reader the string bytes the skim counted and passed over (see
    /// `CallReader::deferred`), before anything else reads it.
    pub(super) fn catch_up(&mut self) {
        self.settle_run();
        if let Mode::Json(reader, _) = &mut self.mode {
            catch_up(reader, &self.buf, self.pos);
        }
    }
}
