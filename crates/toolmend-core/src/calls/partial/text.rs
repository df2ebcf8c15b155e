//! A frame written as JSON text while it is read, and what it gained since the last look.

use std::sync::{Mutex, PoisonError};

use super::path::{push_index, push_key};
use super::string::escape_into;
use super::{Frame, Lex, Reader};

/// How much recorded text already written out [`Reader::forget_written`] leaves in place.
const FORGET_FROM: usize = 4096;

/// One frame of the stack written as JSON while it is read ([`Reader::record`]): the text
/// that serializing its [`Reader::snapshot`] with `serde_json` gives, less the closing that
/// [`Reader::close_text`] adds. What it holds can only grow (a snapshot only grows), so a
/// partial value is written by copying this text, not by building and serializing a copy of
/// the value.
#[derive(Debug, Default)]
pub(crate) struct Text {
    /// The depth of the frame.
    pub(super) base: usize,
    pub(super) out: Vec<u8>,
    /// What `stream::weight` gives for the snapshot: values, key bytes and string bytes.
    pub(crate) weight: usize,
    /// The frame was closed: `out` is its whole text.
    pub(crate) done: bool,
    /// Only the text is wanted: the values inside the frame are not kept (see
    /// [`Reader::record`]).
    pub(super) text_only: bool,
    /// Where the text stood at the last [`Reader::growth`] (behind a lock, which is never
    /// contended: the stream asks for the growth where it holds the reader shared, and the
    /// packages need the stream `Sync`).
    pub(super) mark: Mutex<Option<Mark>>,
}

/// Where a recorded frame's text stood at the last `arguments` event ([`Reader::growth`]), to
/// cut what was written since into what each value then open gained.
#[derive(Debug, Default)]
pub(super) struct Mark {
    /// `out`'s length then.
    len: usize,
    /// The pointer of the deepest value then open: each pointer below is a start of it (one
    /// string for all, not one per container, as a mark is taken for every event).
    path: String,
    /// The length in `path` of the pointer of each container then open, from the recorded
    /// frame down, and whether it is an object.
    frames: Vec<(usize, bool)>,
    /// The length in `path` of the pointer of the string value then open, if any.
    string: Option<usize>,
    /// That string is still open.
    pub(super) string_open: bool,
    /// The stack's height then, lowered as those containers close: a container that closes
    /// below it is one of them.
    pub(super) low: usize,
    /// Where in `out` the marked string's closing quote and the marked containers' closing
    /// brackets went, in that order (the deepest container first).
    pub(super) ends: Vec<usize>,
}

impl Reader {
    /// Writes the frame at `depth` as text from now on ([`Text`]): the frame on the stack at
    /// that depth, which must be empty, or the next one opened there. `text_only`: only its text
    /// is wanted, so the values inside it are read (checked, and their keys kept for the
    /// repeated ones and the open path) but not kept: a string's bytes go to the text only,
    /// no number or string is built, and each member holds `null`; the frame itself, once
    /// closed, holds nothing. Its [`Reader::snapshot`]s are then unknown.
    pub(crate) fn record(&mut self, depth: usize, text_only: bool) {
        let mut text = self.text.take().unwrap_or_default();
        text.base = depth;
        text.out.clear();
        text.weight = 0;
        text.done = false;
        text.text_only = text_only;
        *text.mark.get_mut().unwrap_or_else(PoisonError::into_inner) = None;
        match self.stack.get(depth) {
            Some(Frame::Object { .. }) => text.out.push(b'{'),
            Some(Frame::Array(_)) => text.out.push(b'['),
            None => {}
        }
        self.text = Some(text);
    }

    /// The [`Text`] weight of the object at `depth`, when it is recorded: complete (`last`)
    /// or still open.
    pub(crate) fn recorded(&self, depth: usize, last: bool) -> Option<usize> {
        let t = self.text.as_ref()?;
        let open = !t.done && self.stack.len() > depth;
        (t.base == depth && t.out.first() == Some(&b'{') && if last { t.done } else { open })
            .then_some(t.weight)
    }

    /// The recorded frame's text so far (when it is on the stack or complete): a snapshot of
    /// it serialized, its open string and containers closed.
    pub(crate) fn close_text(&self, into: &mut Vec<u8>) -> bool {
        let Some(t) = &self.text else {
            return false;
        };
        if !t.done && self.stack.len() <= t.base {
            return false;
        }
        // (Only before the first growth: nothing was forgotten.)
        into.extend_from_slice(&t.out);
        if t.done {
            return true;
        }
        if matches!(self.lex, Lex::Str { rec: true, .. }) {
            into.push(b'"');
        }
        for frame in self.stack[t.base..].iter().rev() {
            into.push(match frame {
                Frame::Object { .. } => b'}',
                Frame::Array(_) => b']',
            });
        }
        true
    }

    /// Writes what the recorded frame gained since the last call, as the `arguments` events
    /// show it: for each value open then, deepest first, the pointer of that value and
    /// `"append":"…"` (a string), `"members":{…}` (an object) or `"items":[…]` (an array),
    /// its end in `into` pushed with it; nothing for a value that gained nothing. The first
    /// call writes the whole frame, as the members of `""`. Called only when
    /// [`Reader::recorded`] says the frame is (on the stack, or complete).
    pub(crate) fn growth(&self, into: &mut Vec<u8>, ops: &mut Vec<(String, usize)>) {
        let Some(t) = &self.text else {
            return;
        };
        let mut mark = t.mark.lock().unwrap_or_else(PoisonError::into_inner);
        let reuse = match mark.take() {
            None => {
                into.extend_from_slice(b"\"members\":");
                self.close_text(into);
                ops.push((String::new(), into.len()));
                Mark::default()
            }
            Some(m) => {
                self.cut(t, &m, into, ops);
                m
            }
        };
        *mark = Some(self.mark_now(t, reuse));
    }

    /// [`Reader::growth`] since the mark `m`.
    fn cut(&self, t: &Text, m: &Mark, into: &mut Vec<u8>, ops: &mut Vec<(String, usize)>) {
        let out = &t.out;
        let mut from = m.len;
        let mut ends = m.ends.iter().copied();
        if let Some(len) = m.string {
            let path = &m.path[..len];
            let end = if m.string_open {
                out.len()
            } else {
                ends.next().unwrap_or(out.len())
            };
            if end > from {
                into.extend_from_slice(b"\"append\":\"");
                into.extend_from_slice(&out[from..end]);
                into.push(b'"');
                ops.push((path.to_owned(), into.len()));
            }
            if m.string_open {
                // Nothing after it can have been written.
                return;
            }
            from = end + 1;
        }
        for (i, &(len, object)) in m.frames.iter().enumerate().rev() {
            let path = &m.path[..len];
            let depth = t.base + i;
            let closed = depth >= m.low;
            let end = if closed {
                ends.next().unwrap_or(out.len())
            } else {
                out.len()
            };
            let mut added = out.get(from..end).unwrap_or_default();
            if let [b',', rest @ ..] = added {
                added = rest;
            }
            if !added.is_empty() {
                into.extend_from_slice(if object {
                    b"\"members\":{"
                } else {
                    b"\"items\":["
                });
                into.extend_from_slice(added);
                if !closed {
                    // Its open descendants, closed as a snapshot closes them.
                    if matches!(self.lex, Lex::Str { rec: true, .. }) {
                        into.push(b'"');
                    }
                    for frame in self.stack[depth + 1..].iter().rev() {
                        into.push(match frame {
                            Frame::Object { .. } => b'}',
                            Frame::Array(_) => b']',
                        });
                    }
                }
                into.push(if object { b'}' } else { b']' });
                ops.push((path.to_owned(), into.len()));
            }
            if !closed {
                return;
            }
            from = end + 1;
        }
    }

    /// Drops the recorded text that the last [`Reader::growth`] wrote out, all of it before
    /// its mark but the frame's opener (which [`Reader::recorded`] looks at): each growth
    /// cuts from the mark on, so no later one reads it, and a long string's text is then not
    /// held twice (here and in the reply). Left where it is while it is short (a drain moves
    /// what follows the mark).
    pub(crate) fn forget_written(&mut self) {
        let Some(t) = &mut self.text else {
            return;
        };
        let Ok(Some(m)) = t.mark.get_mut() else {
            return;
        };
        if m.len < FORGET_FROM {
            return;
        }
        let cut = m.len - 1;
        t.out.drain(1..m.len);
        m.len = 1;
        // Each end was pushed after the mark.
        for end in &mut m.ends {
            *end -= cut;
        }
    }

    /// The mark of the text as it stands: the pointers of the open containers and string
    /// (in the buffers of `reuse`, an earlier mark).
    fn mark_now(&self, t: &Text, reuse: Mark) -> Mark {
        let Mark {
            mut path,
            mut frames,
            mut ends,
            ..
        } = reuse;
        path.clear();
        frames.clear();
        ends.clear();
        let mut string = None;
        if !t.done {
            let top = self.stack.len();
            let open_string = matches!(self.lex, Lex::Str { rec: true, .. });
            for (depth, frame) in self.stack.iter().enumerate().skip(t.base) {
                frames.push((path.len(), matches!(frame, Frame::Object { .. })));
                if depth + 1 == top && !open_string {
                    break;
                }
                match frame {
                    Frame::Object { key: Some(k), .. } => push_key(&mut path, k),
                    Frame::Object { key: None, .. } => break,
                    Frame::Array(items) => push_index(&mut path, items.len()),
                }
                if depth + 1 == top {
                    string = Some(path.len());
                    break;
                }
            }
        }
        Mark {
            len: t.out.len(),
            path,
            frames,
            string_open: string.is_some(),
            string,
            low: self.stack.len(),
            ends,
        }
    }

    /// Whether the values inside the recorded frame are not kept ([`Reader::record`]).
    pub(crate) fn text_only(&self) -> bool {
        self.text.as_ref().is_some_and(|t| t.text_only)
    }

    /// The recorded text, when a value starts in the top frame and that frame is recorded:
    /// the comma and key before the value are written, and the value is counted.
    pub(super) fn member(&mut self) -> Option<&mut Text> {
        let t = self.text.as_mut()?;
        if t.done || self.stack.len() <= t.base {
            return None;
        }
        match self.stack.last() {
            Some(Frame::Object { map, key: Some(k) }) => {
                if !map.is_empty() {
                    t.out.push(b',');
                }
                escape_into(&mut t.out, k.as_bytes(), true);
                t.out.push(b':');
                t.weight += 1 + k.len();
            }
            Some(Frame::Array(items)) => {
                if !items.is_empty() {
                    t.out.push(b',');
                }
                t.weight += 1;
            }
            _ => return None,
        }
        Some(t)
    }
}
