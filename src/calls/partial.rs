//! A JSON value read as it arrives, a byte at a time, that says what is certain so far.
//!
//! [`Reader`] keeps the containers still open on a stack (their finished members as values)
//! and the scalar being read. It accepts JSON as written, plus the two slips that change no
//! value already read: a trailing comma and a raw control character in a string. Anything
//! else the args pipeline would repair (single quotes, bare words, comments, a lone
//! surrogate, a repeated key whose last value wins, …) makes it give up
//! ([`Step::Bail`]): the stream then waits for the whole call, so no value it showed is ever
//! read differently by the pipeline. A number or literal counts only once a delimiter
//! follows it (`12` may become `123`, `t` is no `true` yet); a string counts as it grows and
//! is marked open.

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
        out.push('/');
        match seg {
            Seg::Key(k) => out.push_str(&k.replace('~', "~0").replace('/', "~1")),
            Seg::Index(i) => out.push_str(&i.to_string()),
        }
    }
    out
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
}

impl Reader {
    pub(crate) fn new() -> Reader {
        Reader {
            stack: Vec::new(),
            lex: Lex::None,
            expect: Expect::Value,
            may_end: false,
            value: None,
        }
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
                match crate::exact::number(&text) {
                    Some(n) => match self.deliver(Value::Number(n)) {
                        Step::More => {}
                        other => return other,
                    },
                    None => return Step::Bail,
                }
            }
            Lex::Word(text) => {
                if b.is_ascii_alphanumeric() || b == b'_' {
                    text.push(b as char);
                    return Step::More;
                }
                let value = match text.as_str() {
                    "true" => Value::Bool(true),
                    "false" => Value::Bool(false),
                    "null" => Value::Null,
                    _ => return Step::Bail,
                };
                self.lex = Lex::None;
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
                    self.lex = Lex::Str {
                        bytes: Vec::new(),
                        key: false,
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
        let value = match self.stack.pop() {
            Some(Frame::Object { map, .. }) => Value::Object(map),
            Some(Frame::Array(items)) => Value::Array(items),
            None => return Step::Bail,
        };
        self.deliver(value)
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
        let Lex::Str { bytes, key, escape } = &mut self.lex else {
            return Step::Bail;
        };
        match *escape {
            Escape::No => match b {
                b'\\' => *escape = Escape::Backslash,
                b'"' => {
                    let Ok(text) = String::from_utf8(std::mem::take(bytes)) else {
                        return Step::Bail;
                    };
                    let is_key = *key;
                    self.lex = Lex::None;
                    if is_key {
                        let Some(Frame::Object { map, key }) = self.stack.last_mut() else {
                            return Step::Bail;
                        };
                        // A repeated key: the pipeline keeps the last value, which would change
                        // one already shown.
                        if map.contains_key(&text) {
                            return Step::Bail;
                        }
                        *key = Some(text);
                        self.expect = Expect::Colon;
                        self.may_end = false;
                        return Step::More;
                    }
                    return self.deliver(Value::String(text));
                }
                _ => bytes.push(b),
            },
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
        Step::More
    }

    /// The container at `depth` of the stack as it stands, its open descendants included (an
    /// open string as far as it goes; a number or literal not yet ended is left out), and the
    /// path from it to the deepest value still open.
    pub(crate) fn snapshot(&self, depth: usize) -> Option<(Value, Vec<Seg>)> {
        if depth >= self.stack.len() {
            return None;
        }
        let mut path = Vec::new();
        for frame in &self.stack[depth..] {
            match frame {
                Frame::Object { key: Some(k), .. } => path.push(Seg::Key(k.clone())),
                Frame::Object { key: None, .. } => break,
                Frame::Array(items) => path.push(Seg::Index(items.len())),
            }
        }
        // `path` names the open child of each frame; keep only the children that exist.
        let mut child = self
            .open_string()
            .map(|b| Value::String(String::from_utf8_lossy(b).into_owned()));
        let open_frames = self.stack.len() - depth;
        let mut open_len = if child.is_some() {
            open_frames
        } else {
            open_frames - 1
        };
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
        open_len = open_len.min(path.len());
        path.truncate(open_len);
        child.map(|v| (v, path))
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
        assert_eq!(read(r#"{"a": [1,],}"#).1, Step::Done);
        assert_eq!(read("{\"a\": \"x\ny\"}").1, Step::Done);
    }
}
