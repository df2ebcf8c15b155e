//! The values the parser writes, built as `serde_json::Value`s in the same pass, for callers
//! that need a value rather than text (`calls`): the reply is parsed once, not written and read
//! again.
//!
//! The tree follows the output, not the input: each value is taken when the parser has written
//! it whole (a scalar from its few output bytes, or from the input when it was copied from
//! there, a container when it closes), and remembers where it starts in the output. The
//! parser's few rewrites of what it already wrote (a container opened again, a string element
//! that turns out to be a key, duplicate keys merged) are followed by those offsets: a value
//! starting at or past where the output was cut back to is gone. Numbers keep their text (see
//! [`crate::exact`]).

use std::ops::Range;

use serde_json::{Map, Number, Value};

use super::Parser;
use crate::args::nesting::Container;

/// The values of one document (and the text after a closing fence), as the parser writes them.
///
/// The values of every open array sit on one stack (the document's at its bottom), each with
/// its start in the output: an array closing takes its own off the top, so no array needs a
/// buffer of its own while it is open. An object's members go straight into its map.
#[derive(Default)]
pub(crate) struct Tree {
    /// Whether values are built at all (off for `args` and `repair`, which write text only).
    pub(crate) on: bool,
    /// The open containers, innermost last: the nesting stack's twin.
    frames: Vec<Frame>,
    starts: Vec<usize>,
    values: Vec<Value>,
    /// How deep each top-level value nests (1 for `{}`, 0 for a scalar).
    depths: Vec<usize>,
    /// A step the tree did not follow (none is known): the caller reads the output instead.
    lost: bool,
    /// The deepest nesting opened since the last top-level value was added.
    deepest: usize,
    /// The last string value, and the last key, copied from the input as it stands: where it
    /// starts in the output and where its text is in the input (taken from there, it needs no
    /// decoding).
    copied: Option<(usize, Range<usize>)>,
    copied_key: Option<(usize, Range<usize>)>,
}

/// An open array or object.
struct Frame {
    kind: Container,
    /// Where it starts in the output.
    start: usize,
    /// What it held before it was closed too early and opened again.
    before: Option<Value>,
    /// Where an array's values start on the stack.
    values: usize,
    /// An object's members so far (a repeated key keeps its first place and takes the last
    /// value, as merging the duplicates in the output does), and where its last value starts.
    members: Map<String, Value>,
    last: Option<usize>,
}

impl Tree {
    /// Forgets the last input's values.
    pub(crate) fn reset(&mut self) {
        self.frames.clear();
        self.starts.clear();
        self.values.clear();
        self.depths.clear();
        self.lost = false;
        self.deepest = 0;
        self.copied = None;
        self.copied_key = None;
    }

    /// Readies the tree for a new parser over the same output (its open containers are the
    /// parser's, which starts with none).
    pub(super) fn new_parser(&mut self) {
        if let Some(outer) = self.frames.first() {
            let values = outer.values;
            self.starts.truncate(values);
            self.values.truncate(values);
            self.frames.clear();
        }
    }

    /// The top-level values, each with its start in the output and how deep it nests; `None`
    /// when the tree lost track of the output.
    pub(crate) fn take(&mut self) -> Option<Vec<(usize, Value, usize)>> {
        self.new_parser();
        if self.lost || self.depths.len() != self.values.len() {
            return None;
        }
        let values = std::mem::take(&mut self.values);
        Some(
            self.starts
                .drain(..)
                .zip(values)
                .zip(self.depths.drain(..))
                .map(|((start, value), depth)| (start, value, depth))
                .collect(),
        )
    }

    /// Drops the values of the innermost array (or the document's) at or past `end` in the
    /// output (written over). An object's values are never written over (the tree is lost if
    /// one were).
    #[inline]
    fn cut(&mut self, end: usize) {
        let base = match self.frames.last() {
            Some(frame) if frame.kind == Container::Object => {
                if frame.last.is_some_and(|at| at >= end) {
                    self.lost = true;
                }
                return;
            }
            Some(frame) => frame.values,
            None => 0,
        };
        while self.starts.len() > base && self.starts.last().is_some_and(|&at| at >= end) {
            self.pop();
        }
    }

    fn pop(&mut self) -> Option<(usize, Value)> {
        let start = self.starts.pop()?;
        let value = self.values.pop()?;
        if self.frames.is_empty() {
            self.depths.truncate(self.values.len());
        }
        Some((start, value))
    }
}

impl Parser<'_> {
    /// A container of `kind` opened at `start` in the output.
    pub(super) fn tree_open(&mut self, kind: Container, start: usize) {
        let tree = &mut self.sink.tree;
        if tree.on {
            tree.frames.push(Frame {
                kind,
                start,
                before: None,
                values: tree.values.len(),
                members: Map::new(),
                last: None,
            });
            tree.deepest = tree.deepest.max(tree.frames.len());
        }
    }

    /// The container of `kind` that was the last value written is opened again (its closing
    /// bracket was taken out of the output).
    pub(super) fn tree_reopen(&mut self, kind: Container) {
        let tree = &mut self.sink.tree;
        if !tree.on {
            return;
        }
        if tree.frames.is_empty()
            && let Some(&depth) = tree.depths.last()
        {
            tree.deepest = tree.deepest.max(depth);
        }
        let popped = match tree.frames.last_mut() {
            Some(frame) if frame.kind == Container::Object => {
                // The value of the object's last member (its key is the last one read): its
                // place is kept, and the value put back there when it closes again.
                let start = frame.last.take();
                let key = self
                    .sink
                    .scratch
                    .keys
                    .last()
                    .and_then(|e| string(&self.sink.out[e.start..e.end]));
                start.zip(key.and_then(|k| frame.members.get_mut(&k).map(std::mem::take)))
            }
            Some(frame) if tree.values.len() > frame.values => tree.pop(),
            Some(_) => None,
            None => tree.pop(),
        };
        let (start, before) = match popped {
            Some((start, before @ Value::Array(_))) if kind == Container::Array => (start, before),
            Some((start, before @ Value::Object(_))) if kind == Container::Object => {
                (start, before)
            }
            _ => {
                tree.lost = true;
                (self.sink.out.len(), Value::Null)
            }
        };
        let (before, members) = match before {
            Value::Object(members) => (None, members),
            before => (Some(before), Map::new()),
        };
        tree.frames.push(Frame {
            kind,
            start,
            before,
            values: tree.values.len(),
            members,
            last: None,
        });
    }

    /// The frame of the innermost container, of `kind`, taken off as it closes (what
    /// [`Parser::tree_close`] and [`Parser::tree_unwrap`] share); `None` when no values are
    /// built, or none was open (the tree is then lost).
    fn tree_closing(&mut self, kind: Container) -> Option<Frame> {
        let tree = &mut self.sink.tree;
        if !tree.on {
            return None;
        }
        // Values the output was cut back over (a string element that became a key).
        tree.cut(self.sink.out.len());
        let Some(frame) = tree.frames.pop() else {
            tree.lost = true;
            return None;
        };
        if frame.kind != kind {
            tree.lost = true;
        }
        tree.starts.truncate(frame.values);
        Some(frame)
    }

    /// The innermost container closes, before its bracket is written and (for an object) before
    /// its duplicate keys are merged; `keys_base` is where its keys start (an object's).
    pub(super) fn tree_close(&mut self, kind: Container, keys_base: usize) {
        let Some(frame) = self.tree_closing(kind) else {
            return;
        };
        let tree = &mut self.sink.tree;
        let value = match kind {
            Container::Array => match frame.before {
                Some(Value::Array(mut items)) => {
                    items.extend(tree.values.drain(frame.values..));
                    Value::Array(items)
                }
                _ => Value::Array(tree.values.split_off(frame.values)),
            },
            Container::Object => Value::Object(frame.members),
        };
        // The parent's key, if the parent is an object, is its last before this one's.
        let bound = match kind {
            Container::Object => keys_base,
            Container::Array => self.sink.scratch.keys.len(),
        };
        self.tree_add(frame.start, value, bound);
    }

    /// The innermost container, an array opened by `(` with one element, closes as that
    /// element (`(x)` is `x`): the element is the value added where the array started.
    pub(super) fn tree_unwrap(&mut self) {
        let Some(frame) = self.tree_closing(Container::Array) else {
            return;
        };
        let tree = &mut self.sink.tree;
        let mut items = tree.values.split_off(frame.values);
        let (Some(value), true) = (items.pop(), items.is_empty() && frame.before.is_none()) else {
            tree.lost = true;
            return;
        };
        let bound = self.sink.scratch.keys.len();
        self.tree_add(frame.start, value, bound);
    }

    /// A whole value was written at `out[start..]`: a scalar is added (a container was added
    /// when it closed; nothing was written when the output is no longer than `start`).
    pub(super) fn tree_scalar(&mut self, start: usize) {
        let tree = &mut self.sink.tree;
        if !tree.on || self.sink.out.len() <= start || matches!(self.sink.out[start], b'{' | b'[') {
            return;
        }
        let written = &self.sink.out[start..];
        let copied = tree.copied.take();
        let value = match self.copied_text(copied, start, written) {
            Some(text) => Some(Value::String(text)),
            None => scalar(written),
        };
        match value {
            Some(value) => self.tree_add(start, value, self.sink.scratch.keys.len()),
            None => self.sink.tree.lost = true,
        }
    }

    /// A string value (`key`: a key) written at `out[start..]` as `src[text]` stands in the
    /// input, nothing escaped.
    #[inline]
    pub(super) fn tree_copied(&mut self, start: usize, text: Range<usize>, key: bool) {
        let tree = &mut self.sink.tree;
        if key {
            tree.copied_key = Some((start, text));
        } else {
            tree.copied = Some((start, text));
        }
    }

    /// The text of the string written at `out[start..]` (`written`), when it is the one copied
    /// from the input.
    fn copied_text(
        &self,
        copied: Option<(usize, Range<usize>)>,
        start: usize,
        written: &[u8],
    ) -> Option<String> {
        let (at, range) = copied?;
        let text = self.src_text?.get(range)?;
        (at == start && copy_of(written, text)).then(|| text.to_owned())
    }

    /// Adds a whole value that starts at `start`: to the open container (an object's under the
    /// last of `keys[..bound]`, which ends at the colon before the value), or to the document.
    /// Values at or past `start` in the same place were written over.
    fn tree_add(&mut self, start: usize, value: Value, bound: usize) {
        let tree = &mut self.sink.tree;
        tree.cut(start);
        match tree.frames.last() {
            None => {
                tree.depths.push(tree.deepest);
                tree.deepest = 0;
            }
            Some(frame) if frame.kind == Container::Object => {
                let entry = self.sink.scratch.keys[..bound]
                    .last()
                    .filter(|e| e.end + 1 == start && self.sink.out.get(e.end) == Some(&b':'));
                let copied = tree.copied_key.take();
                let key = entry.and_then(|e| {
                    let written = &self.sink.out[e.start..e.end];
                    self.copied_text(copied, e.start, written)
                        .or_else(|| string(written))
                });
                let tree = &mut self.sink.tree;
                let frame = tree.frames.last_mut().expect("the object");
                match key {
                    Some(key) => {
                        frame.members.insert(key, value);
                        frame.last = Some(start);
                    }
                    None => tree.lost = true,
                }
                return;
            }
            Some(_) => {}
        }
        let tree = &mut self.sink.tree;
        tree.starts.push(start);
        tree.values.push(value);
    }
}

/// Whether the string written (quotes included) at the place a string was copied to is that
/// copy: a string written over it there (a constructor call's text, strings joined by `+`) is
/// longer, so the lengths tell (debug builds compare the bytes).
fn copy_of(written: &[u8], text: &str) -> bool {
    let same = written.len() == text.len() + 2 && written[0] == b'"';
    debug_assert!(!same || &written[1..written.len() - 1] == text.as_bytes());
    same
}

/// The value of one scalar as the parser wrote it.
fn scalar(written: &[u8]) -> Option<Value> {
    Some(match written {
        b"true" => Value::Bool(true),
        b"false" => Value::Bool(false),
        b"null" => Value::Null,
        [b'"', ..] => Value::String(string(written)?),
        _ => Value::Number(number(written)?),
    })
}

/// A number as the parser wrote it, its text kept. The parser writes only JSON numbers (copied
/// as written when valid, mended when not), so the text is not checked again (debug builds do).
fn number(written: &[u8]) -> Option<Number> {
    if !matches!(written.first(), Some(b'-' | b'0'..=b'9')) {
        return None;
    }
    let text = std::str::from_utf8(written).ok()?;
    debug_assert!(crate::exact::is_number(text), "{text}");
    Some(Number::from_string_unchecked(text.to_owned()))
}

/// The text of a JSON string the parser wrote (quotes included).
fn string(written: &[u8]) -> Option<String> {
    let body = written.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    if memchr::memchr(b'\\', body).is_none() {
        // Nothing escaped: the text is the body.
        return std::str::from_utf8(body).ok().map(str::to_owned);
    }
    crate::exact::string(std::str::from_utf8(written).ok()?)
}
