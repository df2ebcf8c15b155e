//! The values the parser writes, built as `serde_json::Value`s in the same pass, for callers
//! that need a value rather than text (`calls`): the reply is parsed once, not written and read
//! again.
//!
//! The tree follows the output, not the input: each value is taken when the parser has written
//! it whole (a scalar from its few output bytes, a container when it closes), and remembers
//! where it starts in the output. The parser's few rewrites of what it already wrote (a
//! container opened again, a string element that turns out to be a key, duplicate keys merged)
//! are followed by those offsets: a value starting at or past where the output was cut back to
//! is gone. Numbers keep their text (see [`crate::exact`]).

use serde_json::{Map, Value};

use super::{KeyEntry, Parser};
use crate::args::nesting::Container;

/// The values of one document (and the text after a closing fence), as the parser writes them.
#[derive(Default)]
pub(crate) struct Tree {
    /// Whether values are built at all (off for `args` and `repair`, which write text only).
    pub(crate) on: bool,
    /// The open containers, innermost last: the nesting stack's twin.
    frames: Vec<Frame>,
    /// The top-level values written so far, each with its start in the output and how deep it
    /// nests (1 for `{}`, 0 for a scalar).
    done: Vec<(usize, Value, usize)>,
    /// A step the tree did not follow (none is known): the caller reads the output instead.
    lost: bool,
    /// The deepest nesting opened since the last top-level value was added.
    deepest: usize,
}

/// An open array or object.
struct Frame {
    /// Where it starts in the output.
    start: usize,
    /// What it held before it was closed too early and opened again.
    before: Option<Value>,
    /// Its values so far, each with its start in the output (for an object, the key's entry
    /// ends just before it, at the colon).
    children: Vec<(usize, Value)>,
}

impl Tree {
    /// Forgets the last input's values.
    pub(crate) fn reset(&mut self) {
        self.frames.clear();
        self.done.clear();
        self.lost = false;
        self.deepest = 0;
    }

    /// Readies the tree for a new parser over the same output (its open containers are the
    /// parser's, which starts with none).
    pub(super) fn new_parser(&mut self) {
        self.frames.clear();
    }

    /// The top-level values, each with its start in the output and how deep it nests; `None`
    /// when the tree lost track of the output.
    pub(crate) fn take(&mut self) -> Option<Vec<(usize, Value, usize)>> {
        self.frames.clear();
        if self.lost {
            return None;
        }
        Some(std::mem::take(&mut self.done))
    }

    /// Adds a whole value that starts at `start`: to the open container, or to the document.
    /// A value at or past `start` in the same place was written over.
    fn add(&mut self, start: usize, value: Value) {
        let Some(frame) = self.frames.last_mut() else {
            while self.done.last().is_some_and(|(at, ..)| *at >= start) {
                self.done.pop();
            }
            self.done.push((start, value, self.deepest));
            self.deepest = 0;
            return;
        };
        let place = &mut frame.children;
        while place.last().is_some_and(|(at, _)| *at >= start) {
            place.pop();
        }
        place.push((start, value));
    }
}

impl Parser<'_> {
    /// A container opened at `start` in the output.
    pub(super) fn tree_open(&mut self, start: usize) {
        let tree = &mut self.scratch.tree;
        if tree.on {
            tree.frames.push(Frame {
                start,
                before: None,
                children: Vec::new(),
            });
            tree.deepest = tree.deepest.max(tree.frames.len());
        }
    }

    /// The container of `kind` that was the last value written is opened again (its closing
    /// bracket was taken out of the output).
    pub(super) fn tree_reopen(&mut self, kind: Container) {
        let tree = &mut self.scratch.tree;
        if !tree.on {
            return;
        }
        let popped = match tree.frames.last_mut() {
            Some(frame) => frame.children.pop(),
            None => tree.done.pop().map(|(start, value, deepest)| {
                tree.deepest = tree.deepest.max(deepest);
                (start, value)
            }),
        };
        let frame = match popped {
            Some((start, before @ Value::Array(_))) if kind == Container::Array => Frame {
                start,
                before: Some(before),
                children: Vec::new(),
            },
            Some((start, before @ Value::Object(_))) if kind == Container::Object => Frame {
                start,
                before: Some(before),
                children: Vec::new(),
            },
            _ => {
                tree.lost = true;
                Frame {
                    start: self.out.len(),
                    before: None,
                    children: Vec::new(),
                }
            }
        };
        tree.frames.push(frame);
    }

    /// The innermost container closes, before its bracket is written and (for an object) before
    /// its duplicate keys are merged; `keys` are its members' keys.
    pub(super) fn tree_close(&mut self, kind: Container, keys_base: usize) {
        let tree = &mut self.scratch.tree;
        if !tree.on {
            return;
        }
        let Some(Frame {
            start,
            before,
            mut children,
        }) = tree.frames.pop()
        else {
            tree.lost = true;
            return;
        };
        // Values the output was cut back over (a string element that became a key).
        let end = self.out.len();
        while children.last().is_some_and(|(at, _)| *at >= end) {
            children.pop();
        }
        let value = match kind {
            Container::Array => {
                let mut items = match before {
                    Some(Value::Array(items)) => items,
                    _ => Vec::with_capacity(children.len()),
                };
                items.extend(children.into_iter().map(|(_, v)| v));
                Value::Array(items)
            }
            Container::Object => {
                let mut members = match before {
                    Some(Value::Object(members)) => members,
                    _ => Map::new(),
                };
                let keys = &self.scratch.keys[keys_base..];
                if !pair_members(self.out, keys, children, &mut members) {
                    tree.lost = true;
                }
                Value::Object(members)
            }
        };
        tree.add(start, value);
    }

    /// A whole value was written at `out[start..]`: a scalar is added (a container was added
    /// when it closed; nothing was written when the output is no longer than `start`).
    pub(super) fn tree_scalar(&mut self, start: usize) {
        let tree = &mut self.scratch.tree;
        if !tree.on || self.out.len() <= start || matches!(self.out[start], b'{' | b'[') {
            return;
        }
        match scalar(&self.out[start..]) {
            Some(value) => tree.add(start, value),
            None => tree.lost = true,
        }
    }
}

/// Puts each value of an object under its key (the entry that ends at the colon before the
/// value); a repeated key keeps its first place and takes the last value, as merging does.
fn pair_members(
    out: &[u8],
    keys: &[KeyEntry],
    children: Vec<(usize, Value)>,
    members: &mut Map<String, Value>,
) -> bool {
    let mut k = 0;
    for (start, value) in children {
        while keys.get(k).is_some_and(|e| e.end + 1 < start) {
            k += 1;
        }
        let Some(entry) = keys.get(k).filter(|e| e.end + 1 == start) else {
            return false;
        };
        if out.get(entry.end) != Some(&b':') {
            return false;
        }
        let Some(key) = string(&out[entry.start..entry.end]) else {
            return false;
        };
        members.insert(key, value);
        k += 1;
    }
    true
}

/// The value of one scalar as the parser wrote it.
fn scalar(written: &[u8]) -> Option<Value> {
    Some(match written {
        b"true" => Value::Bool(true),
        b"false" => Value::Bool(false),
        b"null" => Value::Null,
        [b'"', ..] => Value::String(string(written)?),
        _ => Value::Number(crate::exact::number(std::str::from_utf8(written).ok()?)?),
    })
}

/// The text of a JSON string the parser wrote (quotes included).
fn string(written: &[u8]) -> Option<String> {
    let body = written.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    if memchr::memchr(b'\\', body).is_none() {
        // Most strings: nothing escaped, the text is the body.
        return std::str::from_utf8(body).ok().map(str::to_owned);
    }
    crate::exact::string(std::str::from_utf8(written).ok()?)
}
