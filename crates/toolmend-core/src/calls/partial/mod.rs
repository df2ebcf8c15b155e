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

mod path;
mod same;
mod string;
mod text;

use serde_json::{Map, Value};

pub(crate) use path::{Seg, pointer};
pub(crate) use same::{is_object, is_object_in_string};
use string::Escape;
pub(crate) use text::Text;

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
        /// In a text-only frame ([`Reader::record`]): its bytes are not kept (only its text).
        text_only: bool,
        /// `\` seen; `Some(n)` while reading the n hex digits of `\u` (`code` so far).
        escape: Escape,
    },
    Num(String),
    Word(String),
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
                let value = if self.scalar_not_kept() {
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
                let value = if self.scalar_not_kept() {
                    Value::Null
                } else {
                    value
                };
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
                    let (rec, text_only) = match self.member() {
                        Some(t) => {
                            t.out.push(b'"');
                            (true, t.text_only)
                        }
                        None => (false, false),
                    };
                    self.lex = Lex::Str {
                        bytes: Vec::new(),
                        key: false,
                        rec,
                        text_only,
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
                        text_only: false,
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
        // A text-only frame's containers hold nothing; the recorded one itself, closed, is empty.
        let mut text_only = (false, false);
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
            text_only = (t.text_only, t.done);
        }
        let value = match (self.stack.pop(), text_only) {
            (None, _) => return Step::Bail,
            (Some(_), (true, false)) => Value::Null,
            (Some(Frame::Object { .. }), (true, true)) => Value::Object(Map::new()),
            (Some(Frame::Array(_)), (true, true)) => Value::Array(Vec::new()),
            (Some(Frame::Object { map, .. }), _) => Value::Object(map),
            (Some(Frame::Array(items)), _) => Value::Array(items),
        };
        self.deliver(value)
    }

    /// Whether the value that ends now (a number or literal) is inside a text-only frame
    /// ([`Reader::record`]): it is then not kept.
    fn scalar_not_kept(&self) -> bool {
        self.text
            .as_ref()
            .is_some_and(|t| t.text_only && !t.done && self.stack.len() > t.base)
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
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn read(text: &str) -> (Reader, Step) {
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
