//! A JSON value read as it arrives, a byte at a time, that says what is certain so far.
//!
//! [`Reader`] keeps the containers still open on a stack (their finished members as values)
//! and the scalar being read. It accepts JSON as written, plus the two slips that change no
//! value already read: a trailing comma and a raw control character in a string. Anything
//! else the args pipeline would repair (single quotes, bare words, comments, a lone
//! surrogate, …) makes it give up ([`Step::Bail`]): the stream then waits for the whole call,
//! so no value it showed is ever read differently by the pipeline. A repeated key also makes
//! it give up, but that one can change a value already read (the pipeline keeps the last
//! value), so the reader says which key it was ([`Reader::repeated`]) and the stream tells
//! the caller (`revised`). A number or literal counts only once a delimiter
//! follows it (`12` may become `123`, `t` is no `true` yet); a string counts as it grows and
//! is marked open.

use std::sync::{Mutex, PoisonError};

use serde_json::{Map, Value};

/// Nesting past this is left to the whole-reply pass (each byte costs O(depth) in a snapshot).
const MAX_DEPTH: usize = 64;

/// What the last byte did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// The value goes on.
    More,
    /// The value is complete; the byte that closed it was consumed.
    Done,
    /// Not JSON the reader can vouch for; the byte was not consumed.
    Bail,
}

/// One segment of a path: a member's key or an element's index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seg {
    Key(String),
    Index(usize),
}

/// A JSON pointer (RFC 6901) for `path`.
pub(crate) fn pointer(path: &[Seg]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => push_key(&mut out, k),
            Seg::Index(i) => push_index(&mut out, *i),
        }
    }
    out
}

/// A pointer's segment for the key `k` (`~` and `/` escaped).
fn push_key(out: &mut String, k: &str) {
    out.push('/');
    if k.bytes().any(|b| b == b'~' || b == b'/') {
        out.push_str(&k.replace('~', "~0").replace('/', "~1"));
    } else {
        out.push_str(k);
    }
}

/// A pointer's segment for the index `i`, written without the formatting machinery (it is
/// written for most `arguments` events).
fn push_index(out: &mut String, mut i: usize) {
    out.push('/');
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (i % 10) as u8;
        i /= 10;
        if i == 0 {
            break;
        }
    }
    for &d in &digits[at..] {
        out.push(char::from(d));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// A value (or, right after `[`, the end).
    Value,
    /// A key (or, right after `{` or a comma, the end).
    Key,
    Colon,
    /// A comma or the end of the container.
    Next,
}

#[derive(Debug)]
pub(crate) enum Frame {
    Object {
        map: Map<String, Value>,
        /// The key whose value is being read.
        key: Option<String>,
    },
    Array(Vec<Value>),
}

#[derive(Debug)]
enum Lex {
    None,
    Str {
        bytes: Vec<u8>,
        key: bool,
        /// A value inside the recorded frame: its text goes to [`Text`] as it grows.
        rec: bool,
        /// In a light frame ([`Reader::record`]): its bytes are not kept (only its text).
        light: bool,
        /// `\` seen; `Some(n)` while reading the n hex digits of `\u` (`code` so far).
        escape: Escape,
    },
    Num(String),
    Word(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escape {
    No,
    Backslash,
    Hex {
        digits: u8,
        code: u32,
    },
    /// A high surrogate was read; its low half must follow as `\uXXXX`.
    Low {
        high: u32,
        seen: u8,
        code: u32,
    },
    /// A value's closing quote was read. It closes the string only if a comma or a closing
    /// bracket follows (`"1"cccc` is one string to the pipeline, `1"cccc`), so until then the
    /// string is still open.
    Closed,
}

/// One frame of the stack written as JSON while it is read ([`Reader::record`]): the text
/// that serializing its [`Reader::snapshot`] with `serde_json` gives, less the closing that
/// [`Reader::close_text`] adds. What it holds can only grow (a snapshot only grows), so a
/// partial value is written by copying this text, not by building and serializing a copy of
/// the value.
#[derive(Debug, Default)]
pub(crate) struct Text {
    /// The depth of the frame.
    base: usize,
    out: Vec<u8>,
    /// What `stream::weight` gives for the snapshot: values, key bytes and string bytes.
    pub(crate) weight: usize,
    /// The frame was closed: `out` is its whole text.
    pub(crate) done: bool,
    /// Only the text is wanted: the values inside the frame are not kept (see
    /// [`Reader::record`]).
    light: bool,
    /// Where the text stood at the last [`Reader::growth`] (behind a lock, which is never
    /// contended: the stream asks for the growth where it holds the reader shared, and the
    /// packages need the stream `Sync`).
    mark: Mutex<Option<Mark>>,
}

/// Where a recorded frame's text stood at the last `arguments` event ([`Reader::growth`]), to
/// cut what was written since into what each value then open gained.
#[derive(Debug, Default)]
struct Mark {
    /// `out`'s length then.
    len: usize,
    /// The pointer of each container then open, from the recorded frame down, and whether it
    /// is an object.
    frames: Vec<(String, bool)>,
    /// The pointer of the string value then open, if any.
    string: Option<String>,
    /// That string is still open.
    string_open: bool,
    /// The stack's height then, lowered as those containers close: a container that closes
    /// below it is one of them.
    low: usize,
    /// Where in `out` the marked string's closing quote and the marked containers' closing
    /// brackets went, in that order (the deepest container first).
    ends: Vec<usize>,
}

/// An incremental JSON reader (see the module doc).
#[derive(Debug)]
pub(crate) struct Reader {
    pub(crate) stack: Vec<Frame>,
    lex: Lex,
    expect: Expect,
    /// Right after `{` / `[` / `,`: the container may end here.
    may_end: bool,
    /// The whole value, once read.
    pub(crate) value: Option<Value>,
    /// The frame being written as text, if any.
    pub(crate) text: Option<Text>,
    /// The key the reader gave up at because the object on top of the stack already had it.
    pub(crate) repeated: Option<String>,
}

impl Reader {
    pub(crate) fn new() -> Reader {
        Reader {
            stack: Vec::new(),
            lex: Lex::None,
            expect: Expect::Value,
            may_end: false,
            value: None,
            text: None,
            repeated: None,
        }
    }

    /// Writes the frame at `depth` as text from now on ([`Text`]): the frame on the stack at
    /// that depth, which must be empty, or the next one opened there. `light`: only its text
    /// is wanted, so the values inside it are read (checked, and their keys kept for the
    /// repeated ones and the open path) but not kept: a string's bytes go to the text only,
    /// no number or string is built, and each member holds `null`; the frame itself, once
    /// closed, holds nothing. Its [`Reader::snapshot`]s are then unknown.
    pub(crate) fn record(&mut self, depth: usize, light: bool) {
        let mut text = self.text.take().unwrap_or_default();
        text.base = depth;
        text.out.clear();
        text.weight = 0;
        text.done = false;
        text.light = light;
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
        match mark.take() {
            None => {
                into.extend_from_slice(b"\"members\":");
                self.close_text(into);
                ops.push((String::new(), into.len()));
            }
            Some(m) => self.cut(t, &m, into, ops),
        }
        *mark = Some(self.mark_now(t));
    }

    /// [`Reader::growth`] since the mark `m`.
    fn cut(&self, t: &Text, m: &Mark, into: &mut Vec<u8>, ops: &mut Vec<(String, usize)>) {
        let out = &t.out;
        let mut from = m.len;
        let mut ends = m.ends.iter().copied();
        if let Some(path) = &m.string {
            let end = if m.string_open {
                out.len()
            } else {
                ends.next().unwrap_or(out.len())
            };
            if end > from {
                into.extend_from_slice(b"\"append\":\"");
                into.extend_from_slice(&out[from..end]);
                into.push(b'"');
                ops.push((path.clone(), into.len()));
            }
            if m.string_open {
                // Nothing after it can have been written.
                return;
            }
            from = end + 1;
        }
        for (i, (path, object)) in m.frames.iter().enumerate().rev() {
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
                into.extend_from_slice(if *object {
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
                into.push(if *object { b'}' } else { b']' });
                ops.push((path.clone(), into.len()));
            }
            if !closed {
                return;
            }
            from = end + 1;
        }
    }

    /// The mark of the text as it stands: the pointers of the open containers and string.
    fn mark_now(&self, t: &Text) -> Mark {
        let mut frames = Vec::new();
        let mut string = None;
        if !t.done {
            let mut path = String::new();
            let top = self.stack.len();
            let open_string = matches!(self.lex, Lex::Str { rec: true, .. });
            for (depth, frame) in self.stack.iter().enumerate().skip(t.base) {
                frames.push((path.clone(), matches!(frame, Frame::Object { .. })));
                if depth + 1 == top && !open_string {
                    break;
                }
                match frame {
                    Frame::Object { key: Some(k), .. } => push_key(&mut path, k),
                    Frame::Object { key: None, .. } => break,
                    Frame::Array(items) => push_index(&mut path, items.len()),
                }
                if depth + 1 == top {
                    string = Some(path);
                    break;
                }
            }
        }
        Mark {
            len: t.out.len(),
            frames,
            string_open: string.is_some(),
            string,
            low: self.stack.len(),
            ends: Vec::new(),
        }
    }

    /// Whether the values inside the recorded frame are not kept ([`Reader::record`]).
    pub(crate) fn light(&self) -> bool {
        self.text.as_ref().is_some_and(|t| t.light)
    }

    /// The recorded text, when a value starts in the top frame and that frame is recorded:
    /// the comma and key before the value are written, and the value is counted.
    fn member(&mut self) -> Option<&mut Text> {
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

    /// The open string's text when it is a value (not a key), for a snapshot.
    pub(crate) fn open_string(&self) -> Option<&[u8]> {
        match &self.lex {
            Lex::Str {
                bytes, key: false, ..
            } => Some(bytes),
            _ => None,
        }
    }

    /// Whether a string is open and no escape is under way.
    pub(crate) fn in_plain_string(&self) -> bool {
        matches!(
            self.lex,
            Lex::Str {
                escape: Escape::No,
                ..
            }
        )
    }

    /// [`Reader::extend_string`] for the usual chunk, one byte, printable and neither a quote
    /// nor a backslash (anything else: `false`, and the general way reads it).
    #[inline]
    pub(crate) fn string_plain_byte(&mut self, b: u8) -> bool {
        if b < 0x20 || b == b'"' || b == b'\\' {
            return false;
        }
        let Lex::Str {
            bytes,
            rec,
            light,
            escape: Escape::No,
            ..
        } = &mut self.lex
        else {
            return false;
        };
        if !*light {
            bytes.push(b);
        }
        if *rec && let Some(t) = &mut self.text {
            t.out.push(b);
            t.weight += 1;
        }
        true
    }

    /// Reads `chunk` in one go when it only adds to the open string (no quote or backslash,
    /// no escape under way), as pushing its bytes one by one would; whether it did.
    pub(crate) fn extend_string(&mut self, chunk: &[u8]) -> bool {
        let Lex::Str {
            bytes,
            rec,
            light,
            escape: Escape::No,
            ..
        } = &mut self.lex
        else {
            return false;
        };
        // A chunk of a few bytes (the usual one) is looked at a byte at a time.
        let plain = if chunk.len() <= 16 {
            let mut plain = true;
            for &b in chunk {
                if b == b'"' || b == b'\\' {
                    return false;
                }
                plain &= b >= 0x20;
            }
            plain
        } else {
            if memchr::memchr2(b'"', b'\\', chunk).is_some() {
                return false;
            }
            !*rec || chunk.iter().all(|&b| b >= 0x20)
        };
        if !*light {
            extend(bytes, chunk);
        }
        if *rec && let Some(t) = &mut self.text {
            if plain {
                extend(&mut t.out, chunk);
            } else {
                escape_into(&mut t.out, chunk, false);
            }
            t.weight += chunk.len();
        }
        true
    }

    /// Reads one byte.
    pub(crate) fn push(&mut self, b: u8) -> Step {
        if self.value.is_some() {
            return Step::Bail;
        }
        match &mut self.lex {
            Lex::Str { .. } => return self.string_byte(b),
            Lex::Num(text) => {
                if matches!(b, b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-') {
                    text.push(b as char);
                    return Step::More;
                }
                let text = std::mem::take(text);
                self.lex = Lex::None;
                // Read as `calls` reads it, its text kept; what is not JSON's grammar (`01`,
                // `1.`, `.5`, `+1`, `-`), which the pipeline would repair, is refused.
                let value = if self.bare() {
                    if !crate::exact::is_number(&text) {
                        return Step::Bail;
                    }
                    Value::Null
                } else {
                    let Some(n) = crate::exact::number(&text) else {
                        return Step::Bail;
                    };
                    Value::Number(n)
                };
                if let Some(t) = self.member() {
                    t.out.extend_from_slice(text.as_bytes());
                }
                match self.deliver(value) {
                    Step::More => {}
                    other => return other,
                }
            }
            Lex::Word(text) => {
                if b.is_ascii_alphanumeric() || b == b'_' {
                    text.push(b as char);
                    return Step::More;
                }
                let (value, word): (Value, &[u8]) = match text.as_str() {
                    "true" => (Value::Bool(true), b"true"),
                    "false" => (Value::Bool(false), b"false"),
                    "null" => (Value::Null, b"null"),
                    _ => return Step::Bail,
                };
                self.lex = Lex::None;
                let value = if self.bare() { Value::Null } else { value };
                if let Some(t) = self.member() {
                    t.out.extend_from_slice(word);
                }
                match self.deliver(value) {
                    Step::More => {}
                    other => return other,
                }
            }
            Lex::None => {}
        }
        self.structural(b)
    }

    fn structural(&mut self, b: u8) -> Step {
        if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
            return Step::More;
        }
        match self.expect {
            Expect::Value => match b {
                b'{' | b'[' => {
                    if self.stack.len() >= MAX_DEPTH {
                        return Step::Bail;
                    }
                    let opener = b;
                    if let Some(t) = self.member() {
                        t.out.push(opener);
                    } else if let Some(t) = &mut self.text
                        && !t.done
                        && t.base == self.stack.len()
                    {
                        // The recorded frame itself opens.
                        t.out.clear();
                        t.out.push(opener);
                        t.weight = 0;
                    }
                    self.stack.push(if b == b'{' {
                        Frame::Object {
                            map: Map::new(),
                            key: None,
                        }
                    } else {
                        Frame::Array(Vec::new())
                    });
                    self.expect = if b == b'{' {
                        Expect::Key
                    } else {
                        Expect::Value
                    };
                    self.may_end = true;
                    Step::More
                }
                b'"' => {
                    let (rec, light) = match self.member() {
                        Some(t) => {
                            t.out.push(b'"');
                            (true, t.light)
                        }
                        None => (false, false),
                    };
                    self.lex = Lex::Str {
                        bytes: Vec::new(),
                        key: false,
                        rec,
                        light,
                        escape: Escape::No,
                    };
                    Step::More
                }
                b'-' | b'0'..=b'9' => {
                    self.lex = Lex::Num((b as char).to_string());
                    Step::More
                }
                b't' | b'f' | b'n' => {
                    self.lex = Lex::Word((b as char).to_string());
                    Step::More
                }
                b']' if self.may_end && matches!(self.stack.last(), Some(Frame::Array(_))) => {
                    self.close()
                }
                _ => Step::Bail,
            },
            Expect::Key => match b {
                b'"' => {
                    self.lex = Lex::Str {
                        bytes: Vec::new(),
                        key: true,
                        rec: false,
                        light: false,
                        escape: Escape::No,
                    };
                    Step::More
                }
                b'}' if self.may_end => self.close(),
                _ => Step::Bail,
            },
            Expect::Colon => {
                if b == b':' {
                    self.expect = Expect::Value;
                    self.may_end = false;
                    Step::More
                } else {
                    Step::Bail
                }
            }
            Expect::Next => match (b, self.stack.last()) {
                (b',', Some(Frame::Object { .. })) => {
                    self.expect = Expect::Key;
                    self.may_end = true;
                    Step::More
                }
                (b',', Some(Frame::Array(_))) => {
                    self.expect = Expect::Value;
                    self.may_end = true;
                    Step::More
                }
                (b'}', Some(Frame::Object { .. })) | (b']', Some(Frame::Array(_))) => self.close(),
                _ => Step::Bail,
            },
        }
    }

    fn close(&mut self) -> Step {
        let depth = self.stack.len().wrapping_sub(1);
        // A light frame's containers hold nothing; the recorded one itself, closed, is empty.
        let mut light = (false, false);
        if let Some(t) = &mut self.text
            && !t.done
            && depth >= t.base
            && let Some(frame) = self.stack.last()
        {
            if let Ok(Some(m)) = t.mark.get_mut()
                && depth < m.low
            {
                // A container open at the last growth closes here.
                m.ends.push(t.out.len());
                m.low = depth;
            }
            t.out.push(match frame {
                Frame::Object { .. } => b'}',
                Frame::Array(_) => b']',
            });
            t.done = depth == t.base;
            light = (t.light, t.done);
        }
        let value = match (self.stack.pop(), light) {
            (None, _) => return Step::Bail,
            (Some(_), (true, false)) => Value::Null,
            (Some(Frame::Object { .. }), (true, true)) => Value::Object(Map::new()),
            (Some(Frame::Array(_)), (true, true)) => Value::Array(Vec::new()),
            (Some(Frame::Object { map, .. }), _) => Value::Object(map),
            (Some(Frame::Array(items)), _) => Value::Array(items),
        };
        self.deliver(value)
    }

    /// Whether the value that ends now (a number or literal) is inside a light frame
    /// ([`Reader::record`]): it is then not kept.
    fn bare(&self) -> bool {
        self.text
            .as_ref()
            .is_some_and(|t| t.light && !t.done && self.stack.len() > t.base)
    }

    /// Puts a finished value in its container (or makes it the whole value).
    fn deliver(&mut self, value: Value) -> Step {
        match self.stack.last_mut() {
            None => {
                self.value = Some(value);
                Step::Done
            }
            Some(Frame::Array(items)) => {
                items.push(value);
                self.expect = Expect::Next;
                self.may_end = false;
                Step::More
            }
            Some(Frame::Object { map, key }) => {
                let Some(key) = key.take() else {
                    return Step::Bail;
                };
                map.insert(key, value);
                self.expect = Expect::Next;
                self.may_end = false;
                Step::More
            }
        }
    }

    fn string_byte(&mut self, b: u8) -> Step {
        let Lex::Str {
            bytes,
            key,
            rec,
            light,
            escape,
        } = &mut self.lex
        else {
            return Step::Bail;
        };
        // What is added to `bytes` is written to the recorded text too; a light frame's
        // string keeps no bytes (only its text).
        let rec = if *rec { self.text.as_mut() } else { None };
        let light = *light;
        let from = bytes.len();
        match *escape {
            Escape::No => match b {
                b'\\' => *escape = Escape::Backslash,
                b'"' if !*key && !self.stack.is_empty() => {
                    *escape = Escape::Closed;
                    return Step::More;
                }
                b'"' => {
                    let is_key = *key;
                    if let Some(t) = rec {
                        t.out.push(b'"');
                    }
                    let Ok(text) = String::from_utf8(std::mem::take(bytes)) else {
                        return Step::Bail;
                    };
                    self.lex = Lex::None;
                    if is_key {
                        let Some(Frame::Object { map, key }) = self.stack.last_mut() else {
                            return Step::Bail;
                        };
                        // A repeated key: the pipeline keeps the last value, which would change
                        // one already shown.
                        if map.contains_key(&text) {
                            self.repeated = Some(text);
                            return Step::Bail;
                        }
                        *key = Some(text);
                        self.expect = Expect::Colon;
                        self.may_end = false;
                        return Step::More;
                    }
                    return self.deliver(Value::String(text));
                }
                _ => {
                    if !light {
                        bytes.push(b);
                    }
                    if let Some(t) = rec {
                        // `"` and `\\` never come here raw.
                        if b >= 0x20 {
                            t.out.push(b);
                        } else {
                            escape_into(&mut t.out, &[b], false);
                        }
                        t.weight += 1;
                    }
                    return Step::More;
                }
            },
            Escape::Closed => {
                return match b {
                    b' ' | b'\t' | b'\n' | b'\r' => Step::More,
                    b',' | b'}' | b']' => {
                        let value = if light {
                            Value::Null
                        } else {
                            let Ok(text) = String::from_utf8(std::mem::take(bytes)) else {
                                return Step::Bail;
                            };
                            Value::String(text)
                        };
                        if let Some(t) = rec {
                            if let Ok(Some(m)) = t.mark.get_mut()
                                && m.string_open
                            {
                                // The string open at the last growth closes here.
                                m.ends.push(t.out.len());
                                m.string_open = false;
                            }
                            t.out.push(b'"');
                        }
                        self.lex = Lex::None;
                        match self.deliver(value) {
                            Step::More => self.structural(b),
                            other => other,
                        }
                    }
                    _ => Step::Bail,
                };
            }
            Escape::Backslash => {
                let c = match b {
                    b'"' => '"',
                    b'\\' => '\\',
                    b'/' => '/',
                    b'b' => '\u{8}',
                    b'f' => '\u{c}',
                    b'n' => '\n',
                    b'r' => '\r',
                    b't' => '\t',
                    b'u' => {
                        *escape = Escape::Hex { digits: 0, code: 0 };
                        return Step::More;
                    }
                    _ => return Step::Bail,
                };
                push_char(bytes, c);
                *escape = Escape::No;
            }
            Escape::Hex { digits, code } => {
                let Some(d) = (b as char).to_digit(16) else {
                    return Step::Bail;
                };
                let code = code * 16 + d;
                if digits < 3 {
                    *escape = Escape::Hex {
                        digits: digits + 1,
                        code,
                    };
                    return Step::More;
                }
                match code {
                    0xD800..=0xDBFF => {
                        *escape = Escape::Low {
                            high: code,
                            seen: 0,
                            code: 0,
                        }
                    }
                    0xDC00..=0xDFFF => return Step::Bail,
                    _ => {
                        let Some(c) = char::from_u32(code) else {
                            return Step::Bail;
                        };
                        push_char(bytes, c);
                        *escape = Escape::No;
                    }
                }
            }
            Escape::Low { high, seen, code } => {
                // `\`, `u`, then four hex digits of a low surrogate.
                match (seen, b) {
                    (0, b'\\') | (1, b'u') => {
                        *escape = Escape::Low {
                            high,
                            seen: seen + 1,
                            code,
                        }
                    }
                    (2..=5, _) => {
                        let Some(d) = (b as char).to_digit(16) else {
                            return Step::Bail;
                        };
                        let code = code * 16 + d;
                        if seen < 5 {
                            *escape = Escape::Low {
                                high,
                                seen: seen + 1,
                                code,
                            };
                            return Step::More;
                        }
                        if !(0xDC00..=0xDFFF).contains(&code) {
                            return Step::Bail;
                        }
                        let joined = 0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00);
                        let Some(c) = char::from_u32(joined) else {
                            return Step::Bail;
                        };
                        push_char(bytes, c);
                        *escape = Escape::No;
                    }
                    _ => return Step::Bail,
                }
            }
        }
        if let Some(t) = rec
            && bytes.len() > from
        {
            escape_into(&mut t.out, &bytes[from..], false);
            t.weight += bytes.len() - from;
            if light {
                bytes.truncate(from);
            }
        }
        Step::More
    }

    /// Whether a string (a key or a value) is being read.
    pub(crate) fn in_string(&self) -> bool {
        matches!(self.lex, Lex::Str { .. })
    }

    /// The path from the whole value to the frame at `depth` of the stack (to the value being
    /// read in the top frame when `depth` is the stack's height).
    pub(crate) fn path_to(&self, depth: usize) -> Vec<Seg> {
        let mut path = Vec::with_capacity(depth);
        for frame in &self.stack[..depth.min(self.stack.len())] {
            match frame {
                Frame::Object { key: Some(k), .. } => path.push(Seg::Key(k.clone())),
                Frame::Object { key: None, .. } => break,
                Frame::Array(items) => path.push(Seg::Index(items.len())),
            }
        }
        path
    }

    /// The path from the whole value to the key the reader gave up at for being repeated
    /// (its first value is in the object on top of the stack).
    pub(crate) fn repeated_path(&self) -> Option<Vec<Seg>> {
        let key = self.repeated.as_ref()?;
        let top = self.stack.len().checked_sub(1)?;
        let mut path = self.path_to(top);
        path.push(Seg::Key(key.clone()));
        Some(path)
    }

    /// The path from the frame at `depth` to the deepest value still open (`[]`: that frame).
    pub(crate) fn open_path(&self, depth: usize) -> Vec<Seg> {
        let mut path = Vec::new();
        if depth >= self.stack.len() {
            return path;
        }
        for frame in &self.stack[depth..] {
            match frame {
                Frame::Object { key: Some(k), .. } => path.push(Seg::Key(k.clone())),
                Frame::Object { key: None, .. } => break,
                Frame::Array(items) => path.push(Seg::Index(items.len())),
            }
        }
        // `path` names the open child of each frame; keep only the children that exist.
        let open_frames = self.stack.len() - depth;
        let open_len = if self.open_string().is_some() {
            open_frames
        } else {
            open_frames - 1
        };
        path.truncate(open_len.min(path.len()));
        path
    }

    /// [`pointer`] of [`Reader::open_path`], written without building the path.
    pub(crate) fn open_pointer(&self, depth: usize) -> String {
        let mut out = String::new();
        if depth >= self.stack.len() {
            return out;
        }
        // The open child of each frame, as far as it exists (see `open_path`).
        let open_frames = self.stack.len() - depth;
        let open_len = if self.open_string().is_some() {
            open_frames
        } else {
            open_frames - 1
        };
        for frame in self.stack[depth..].iter().take(open_len) {
            match frame {
                Frame::Object { key: Some(k), .. } => push_key(&mut out, k),
                Frame::Object { key: None, .. } => break,
                Frame::Array(items) => push_index(&mut out, items.len()),
            }
        }
        out
    }

    /// The container at `depth` of the stack as it stands, its open descendants included (an
    /// open string as far as it goes; a number or literal not yet ended is left out), and the
    /// path from it to the deepest value still open.
    pub(crate) fn snapshot(&self, depth: usize) -> Option<(Value, Vec<Seg>)> {
        if depth >= self.stack.len() || self.light() {
            return None;
        }
        let mut child = self
            .open_string()
            .map(|b| Value::String(String::from_utf8_lossy(b).into_owned()));
        for frame in self.stack[depth..].iter().rev() {
            let mut value = match frame {
                Frame::Object { map, .. } => Value::Object(map.clone()),
                Frame::Array(items) => Value::Array(items.clone()),
            };
            if let Some(c) = child.take() {
                match (&mut value, frame) {
                    (Value::Object(m), Frame::Object { key: Some(k), .. }) => {
                        m.insert(k.clone(), c);
                    }
                    (Value::Array(items), Frame::Array(_)) => items.push(c),
                    _ => {}
                }
            }
            child = Some(value);
        }
        child.map(|v| (v, self.open_path(depth)))
    }
}

/// Writes `bytes` (UTF-8) as `serde_json` writes a string's content (`quoted`: with its quotes),
/// by the library's one escaper.
fn escape_into(out: &mut Vec<u8>, bytes: &[u8], quoted: bool) {
    if quoted {
        crate::bytes::escape::push_json_string(out, bytes);
    } else {
        crate::bytes::escape::push_json_string_body(out, bytes);
    }
}

/// `bytes.extend_from_slice(more)`, a byte pushed as such (not a copy call).
#[inline]
fn extend(bytes: &mut Vec<u8>, more: &[u8]) {
    match more {
        &[b] => bytes.push(b),
        _ => bytes.extend_from_slice(more),
    }
}

fn push_char(bytes: &mut Vec<u8>, c: char) {
    let mut buf = [0; 4];
    bytes.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> (Reader, Step) {
        let mut r = Reader::new();
        let mut last = Step::More;
        for &b in text.as_bytes() {
            last = r.push(b);
            if last != Step::More {
                break;
            }
        }
        (r, last)
    }

    #[test]
    fn whole_values() {
        let (r, step) =
            read(r#"{"a": [1, "x\u00e9\ud83d\ude00", true, null], "b": {"c": -0.5e3}}"#);
        assert_eq!(step, Step::Done);
        // The number as written (`json!` would write -500.0).
        assert_eq!(
            r.value.unwrap().to_string(),
            r#"{"a":[1,"xé😀",true,null],"b":{"c":-0.5e3}}"#
        );
    }

    #[test]
    fn snapshots_hold_only_what_is_certain() {
        let (r, _) = read(r#"{"a": 12"#);
        assert_eq!(r.snapshot(0).unwrap().0, serde_json::json!({}));
        let (r, _) = read(r#"{"a": 12,"b": tr"#);
        assert_eq!(r.snapshot(0).unwrap().0, serde_json::json!({"a": 12}));
        let (r, _) = read(r#"{"a": 1, "bc"#);
        assert_eq!(
            r.snapshot(0).unwrap(),
            (serde_json::json!({"a": 1}), vec![])
        );
        let (r, _) = read(r#"{"a": {"b": ["x", "hel"#);
        let (value, path) = r.snapshot(0).unwrap();
        assert_eq!(value, serde_json::json!({"a": {"b": ["x", "hel"]}}));
        assert_eq!(pointer(&path), "/a/b/1");
        let (r, _) = read(r#"{"a": {"b": [1, 2"#);
        let (value, path) = r.snapshot(0).unwrap();
        assert_eq!(value, serde_json::json!({"a": {"b": [1]}}));
        assert_eq!(pointer(&path), "/a/b");
        let (r, _) = read(r#"{"a": "x\u00"#);
        assert_eq!(r.snapshot(0).unwrap().0, serde_json::json!({"a": "x"}));
    }

    #[test]
    fn the_open_pointer_is_the_pointer_of_the_open_path() {
        let text = r#"{"a/b": {"c~d": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, "xy", {"": [[], "é"]}]}, "k": "v"}"#;
        let mut r = Reader::new();
        let mut pointers = std::collections::BTreeSet::new();
        for &b in text.as_bytes() {
            r.push(b);
            for depth in 0..=r.stack.len() {
                let open = r.open_pointer(depth);
                assert_eq!(open, pointer(&r.open_path(depth)), "at depth {depth}");
                pointers.insert(open);
            }
        }
        // Escaped keys, indexes of two digits, an empty key, and an open string.
        for p in ["/a~1b/c~0d/11", "/a~1b/c~0d/12//1", "/k"] {
            assert!(pointers.contains(p), "{p} in {pointers:?}");
        }
    }

    #[test]
    fn gives_up_on_what_would_be_repaired() {
        for text in [
            "{'a': 1}",
            "{a: 1}",
            r#"{"a": True}"#,
            r#"{"a": 01}"#,
            r#"{"a": 1, "a": 2}"#,
            r#"{"a": "\q"}"#,
            r#"{"a": "\ud800x"}"#,
            r#"{"a" 1}"#,
            r#"{"a": 1 "b": 2}"#,
        ] {
            assert_eq!(read(text).1, Step::Bail, "{text}");
        }
        // Only a repeated key is named, with its path.
        assert_eq!(read(r#"{"a": 1, "b": 'x'}"#).0.repeated_path(), None);
        let (r, _) = read(r#"{"a": 1, "o": [{"k": 1, "k": 2}]}"#);
        assert_eq!(
            r.repeated_path().map(|p| pointer(&p)).as_deref(),
            Some("/o/0/k")
        );
        let (r, _) = read(r#"{"a": 1, "b": {"c": "x\"a"}, "a": 2}"#);
        assert_eq!(
            r.repeated_path().map(|p| pointer(&p)).as_deref(),
            Some("/a")
        );
        assert_eq!(read(r#"{"a": [1,],}"#).1, Step::Done);
        assert_eq!(read("{\"a\": \"x\ny\"}").1, Step::Done);
    }
}
