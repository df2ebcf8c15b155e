//! The text or reasoning the stream shows live (`live.rs`), as it is trimmed (`calls` trims each
//! part), and the deltas a writing stream has not written yet.

/// The shown text or reasoning: what its events added up to, and the part being read.
#[derive(Debug, Default)]
pub(super) struct Flow {
    /// What the events given so far add up to, then what the next event shows (from
    /// `flushed`): a delta is appended where it ends up, not copied there at each event.
    pub(super) shown: String,
    /// How much of `shown` the events given so far show.
    pub(super) flushed: usize,
    /// The current part has shown something (its leading white space is trimmed).
    pub(super) started: bool,
    /// White space after the part's last shown character (trimmed if the part ends there).
    pub(super) pending: String,
    /// Not shown live (its source came second: the end gives it).
    pub(super) muted: bool,
}

impl Flow {
    /// More of the current part.
    #[inline]
    pub(super) fn push(&mut self, s: &str) {
        if self.started && !self.muted {
            match *s.as_bytes() {
                // A byte (ASCII, as it is a whole `str`) of a part that has started, as a
                // stream fed a byte at a time gives them: white space waits, anything else
                // shows what waited and itself.
                [b] if char::from(b).is_whitespace() => {
                    self.pending.push(char::from(b));
                    return;
                }
                [b] => {
                    if !self.pending.is_empty() {
                        self.shown.push_str(&self.pending);
                        self.pending.clear();
                    }
                    self.shown.push(char::from(b));
                    return;
                }
                // More after no white space, ending in a character that is not white space:
                // nothing to trim or hold back.
                [.., last]
                    if self.pending.is_empty()
                        && last.is_ascii()
                        && !char::from(last).is_whitespace() =>
                {
                    self.shown.push_str(s);
                    return;
                }
                _ => {}
            }
        }
        self.push_slow(s);
    }

    /// [`Flow::push`] of any piece: trimmed as `calls` trims a part.
    pub(super) fn push_slow(&mut self, s: &str) {
        if self.muted {
            return;
        }
        let s = if self.started { s } else { s.trim_start() };
        let body = s.trim_end();
        if body.is_empty() {
            self.pending.push_str(s);
            return;
        }
        if !self.started {
            self.started = true;
            if !self.shown.is_empty() {
                self.shown.push('\n');
            }
        }
        self.shown.push_str(&self.pending);
        self.pending.clear();
        self.shown.push_str(body);
        self.pending.push_str(&s[body.len()..]);
    }

    /// The part ended: its trailing white space is trimmed.
    pub(super) fn end_part(&mut self) {
        self.started = false;
        self.pending.clear();
    }

    /// Something visible was given or is about to be.
    pub(super) fn any(&self) -> bool {
        !self.shown.is_empty()
    }

    /// What the next event shows (empty: no event).
    pub(super) fn delta(&self) -> &str {
        &self.shown[self.flushed..]
    }
}

/// Appends `s` to `to`; a byte (ASCII, as it is a whole `str`) as a push, not a copy call: a
/// stream fed a byte at a time appends one at a time.
#[inline]
pub(super) fn append(to: &mut String, s: &str) {
    match s.as_bytes() {
        &[b] => to.push(char::from(b)),
        _ => to.push_str(s),
    }
}

/// The deltas of the `text` and `reasoning` events given and not yet written, for a writing
/// stream (see `Stream::writing`): its events carry empty deltas, and the writer
/// takes each from here, so that an event costs no `String` of its own.
#[derive(Debug, Default)]
pub(super) struct Unwritten {
    pub(super) text: String,
    /// Where each delta ends in `text`, and whether it is text (not reasoning), in order.
    pub(super) ends: Vec<(usize, bool)>,
    /// How many of `ends` were written.
    pub(super) next: usize,
    /// Where the next one starts.
    pub(super) from: usize,
    /// Deltas may lead: the stream is fed with the events not yet written, which are written
    /// after each read, after the deltas that came first.
    pub(super) may_lead: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`Flow::push`]'s shortcuts (a byte, a piece ending in a character that is not white
    /// space) shape the text as [`Flow::push_slow`] does, for every white space `trim` knows
    /// (the vertical tab is not ASCII white space to `u8::is_ascii_whitespace`), in pieces of
    /// 1 to 9 characters, parts ended anywhere.
    #[test]
    fn shortcuts_trim_as_the_slow_push() {
        let text: Vec<char> =
            "  a b\tc\u{b}d\u{c}\r\ne  \u{a0}f\u{2003}\u{3000}g é\u{b} h\u{1f}i\u{85}j  k\u{b}"
                .chars()
                .collect();
        let mut checked = 0;
        for per in 1..=9 {
            for end_at in [None, Some(2), Some(5)] {
                let (mut fast, mut slow) = (Flow::default(), Flow::default());
                for (i, piece) in text.chunks(per).enumerate() {
                    let piece: String = piece.iter().collect();
                    fast.push(&piece);
                    slow.push_slow(&piece);
                    if end_at.is_some_and(|n| i % n == n - 1) {
                        fast.end_part();
                        slow.end_part();
                    }
                    assert_eq!(
                        (&fast.shown, &fast.pending, fast.started),
                        (&slow.shown, &slow.pending, slow.started),
                        "{per} {end_at:?} {i}"
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 100);
    }
}
