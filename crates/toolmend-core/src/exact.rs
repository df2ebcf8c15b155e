//! JSON text to a [`serde_json::Value`] that keeps every number as it was written.
//!
//! `serde_json::from_str` rewrites numbers (`1E5` as `100000.0` without `arbitrary_precision`,
//! `1e+5` with it; `123456789012345678901234567890` as `1.2345678901234568e+29`; `1e400` is an
//! error) and stops at 128 levels of nesting. A call's parameters are what the model wrote, so
//! the extractor builds its values here: each number keeps its text, and nesting is limited
//! only by the caller (`--max-nesting`). The parser keeps its open containers on a heap stack,
//! not the call stack.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Why text is not one JSON value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Invalid {
    /// Not JSON at this byte offset.
    Syntax(usize, &'static str),
    /// Arrays and objects nest deeper than the limit; the offset of the bracket past it.
    TooDeep(usize),
}

impl Invalid {
    /// As a pipeline error.
    pub(crate) fn into_error(self, max_nesting: usize) -> crate::Error {
        match self {
            Invalid::Syntax(at, what) => crate::Error::at(crate::Code::InvalidJson, at, what),
            Invalid::TooDeep(at) => crate::Error::at(
                crate::Code::TooDeep,
                at,
                format!("arrays and objects nested deeper than {max_nesting} at byte {at}"),
            ),
        }
    }
}

enum Open {
    Array(Vec<Value>),
    /// The members so far and the key whose value is being read.
    Object(Map<String, Value>, String),
}

#[cfg(test)]
thread_local! {
    static READS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Counts one read of a whole JSON text on this thread: [`parse`], and the whole-JSON check of
/// `calls` (for tests that count the reads of a reply).
#[cfg(test)]
pub(crate) fn count_read() {
    READS.with(|n| n.set(n.get() + 1));
}

/// How many whole JSON texts were read on this thread (see [`count_read`]).
#[cfg(test)]
pub(crate) fn reads() -> usize {
    READS.with(std::cell::Cell::get)
}

/// Parses `text` (one JSON value, whitespace around it allowed) with each number's text kept.
pub(crate) fn parse(text: &str, max_nesting: usize) -> Result<Value, Invalid> {
    #[cfg(test)]
    count_read();
    parse_uncounted(text, max_nesting)
}

/// [`parse`], not counted by the tests' `reads`: for debug builds' checks of values built otherwise.
pub(crate) fn parse_uncounted(text: &str, max_nesting: usize) -> Result<Value, Invalid> {
    let mut p = Parser {
        text,
        bytes: text.as_bytes(),
        i: 0,
    };
    let mut stack: Vec<Open> = Vec::new();
    'value: loop {
        p.ws();
        let mut value = match p.peek() {
            Some(open @ (b'{' | b'[')) => {
                if stack.len() >= max_nesting {
                    return Err(Invalid::TooDeep(p.i));
                }
                p.i += 1;
                p.ws();
                if open == b'[' {
                    if p.eat(b']') {
                        Value::Array(Vec::new())
                    } else {
                        stack.push(Open::Array(Vec::new()));
                        continue 'value;
                    }
                } else if p.eat(b'}') {
                    Value::Object(Map::new())
                } else {
                    let key = p.key()?;
                    stack.push(Open::Object(Map::new(), key));
                    continue 'value;
                }
            }
            Some(b'"') => Value::String(p.string()?),
            Some(b't') => p.literal("true", Value::Bool(true))?,
            Some(b'f') => p.literal("false", Value::Bool(false))?,
            Some(b'n') => p.literal("null", Value::Null)?,
            Some(b'-' | b'0'..=b'9') => Value::Number(p.number()?),
            Some(_) => return Err(Invalid::Syntax(p.i, "expected a value")),
            None => return Err(Invalid::Syntax(p.i, "the text ends before its value")),
        };
        // Put the value in its container; close every container that ends after it.
        loop {
            p.ws();
            match stack.last_mut() {
                None => {
                    return if p.i == p.bytes.len() {
                        Ok(value)
                    } else {
                        Err(Invalid::Syntax(p.i, "text after the value"))
                    };
                }
                Some(Open::Array(items)) => {
                    items.push(value);
                    if p.eat(b',') {
                        continue 'value;
                    }
                    if !p.eat(b']') {
                        return Err(Invalid::Syntax(p.i, "expected ',' or ']'"));
                    }
                    let Some(Open::Array(items)) = stack.pop() else {
                        unreachable!("the innermost container is this array")
                    };
                    value = Value::Array(items);
                }
                Some(Open::Object(members, key)) => {
                    members.insert(std::mem::take(key), value);
                    if p.eat(b',') {
                        p.ws();
                        *key = p.key()?;
                        continue 'value;
                    }
                    if !p.eat(b'}') {
                        return Err(Invalid::Syntax(p.i, "expected ',' or '}'"));
                    }
                    let Some(Open::Object(members, _)) = stack.pop() else {
                        unreachable!("the innermost container is this object")
                    };
                    value = Value::Object(members);
                }
            }
        }
    }
}

/// Whether `text` is one JSON number as JSON writes them (`-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?`).
pub(crate) fn is_number(text: &str) -> bool {
    let mut p = Parser {
        text,
        bytes: text.as_bytes(),
        i: 0,
    };
    p.number().is_ok() && p.i == text.len()
}

/// A JSON number with exactly this text; `None` when `text` is not a JSON number.
pub(crate) fn number(text: &str) -> Option<Number> {
    // `from_string_unchecked` is how serde_json itself builds an arbitrary-precision number
    // from its text; the grammar is checked here first.
    is_number(text).then(|| Number::from_string_unchecked(text.to_owned()))
}

/// The text of `text`, one JSON string (quotes included) and nothing else; `None` when it is not.
pub(crate) fn string(text: &str) -> Option<String> {
    let mut p = Parser {
        text,
        bytes: text.as_bytes(),
        i: 0,
    };
    if p.peek() != Some(b'"') {
        return None;
    }
    let value = p.string().ok()?;
    (p.i == text.len()).then_some(value)
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.i).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        let hit = self.peek() == Some(b);
        self.i += usize::from(hit);
        hit
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn literal(&mut self, word: &str, value: Value) -> Result<Value, Invalid> {
        if self.bytes[self.i..].starts_with(word.as_bytes()) {
            self.i += word.len();
            Ok(value)
        } else {
            Err(Invalid::Syntax(self.i, "expected a value"))
        }
    }

    /// A key and its colon.
    fn key(&mut self) -> Result<String, Invalid> {
        if self.peek() != Some(b'"') {
            return Err(Invalid::Syntax(self.i, "expected a key"));
        }
        let key = self.string()?;
        self.ws();
        if !self.eat(b':') {
            return Err(Invalid::Syntax(self.i, "expected ':'"));
        }
        Ok(key)
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        self.i - start
    }

    fn number(&mut self) -> Result<Number, Invalid> {
        let start = self.i;
        let bad = |at| Invalid::Syntax(at, "invalid number");
        self.eat(b'-');
        match self.peek() {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(bad(self.i)),
        }
        if self.eat(b'.') && self.digits() == 0 {
            return Err(bad(self.i));
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if self.digits() == 0 {
                return Err(bad(self.i));
            }
        }
        Ok(Number::from_string_unchecked(
            self.text[start..self.i].to_owned(),
        ))
    }

    /// The string starting at the quote at `self.i`, decoded.
    fn string(&mut self) -> Result<String, Invalid> {
        self.i += 1;
        let mut out = String::new();
        loop {
            let rest = &self.bytes[self.i..];
            let Some(n) = memchr::memchr2(b'"', b'\\', rest) else {
                return Err(Invalid::Syntax(self.bytes.len(), "unterminated string"));
            };
            if let Some(c) = rest[..n].iter().position(|&b| b < 0x20) {
                return Err(Invalid::Syntax(self.i + c, "control character in a string"));
            }
            out.push_str(&self.text[self.i..self.i + n]);
            self.i += n + 1;
            if rest[n] == b'"' {
                return Ok(out);
            }
            let escape = self.peek();
            self.i += 1;
            match escape {
                Some(b'"') => out.push('"'),
                Some(b'\\') => out.push('\\'),
                Some(b'/') => out.push('/'),
                Some(b'b') => out.push('\u{8}'),
                Some(b'f') => out.push('\u{c}'),
                Some(b'n') => out.push('\n'),
                Some(b'r') => out.push('\r'),
                Some(b't') => out.push('\t'),
                Some(b'u') => {
                    let at = self.i - 2;
                    let high = self.hex4()?;
                    let c = if (0xD800..0xDC00).contains(&high) {
                        if !self.bytes[self.i..].starts_with(b"\\u") {
                            return Err(Invalid::Syntax(at, "lone surrogate in a \\u escape"));
                        }
                        self.i += 2;
                        let low = self.hex4()?;
                        if !(0xDC00..0xE000).contains(&low) {
                            return Err(Invalid::Syntax(at, "lone surrogate in a \\u escape"));
                        }
                        char::from_u32(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
                    } else {
                        char::from_u32(high)
                    };
                    match c {
                        Some(c) => out.push(c),
                        None => {
                            return Err(Invalid::Syntax(at, "lone surrogate in a \\u escape"));
                        }
                    }
                }
                _ => return Err(Invalid::Syntax(self.i - 1, "invalid escape")),
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, Invalid> {
        let digits = self
            .bytes
            .get(self.i..self.i + 4)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .filter(|_| {
                self.bytes[self.i..self.i + 4]
                    .iter()
                    .all(u8::is_ascii_hexdigit)
            });
        match digits {
            Some(v) => {
                self.i += 4;
                Ok(v)
            }
            None => Err(Invalid::Syntax(self.i, "invalid \\u escape")),
        }
    }
}

/// Reads a JSON object's members in their order, for a reader that must see every key as
/// written (serde_json's `Map` keeps only a key's last value). `expecting` names the object in
/// serde's messages; with `unique`, a key written twice fails (`duplicate field "k"`, to which
/// serde_json adds where), else each of its values is kept.
pub fn object_members<'de, D, V>(
    deserializer: D,
    expecting: &'static str,
    unique: bool,
) -> Result<Vec<(String, V)>, D::Error>
where
    D: Deserializer<'de>,
    V: Deserialize<'de>,
{
    struct Members<V> {
        expecting: &'static str,
        unique: bool,
        values: PhantomData<V>,
    }
    impl<'de, V: Deserialize<'de>> Visitor<'de> for Members<V> {
        type Value = Vec<(String, V)>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.expecting)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut members: Vec<(String, V)> = Vec::new();
            while let Some((key, value)) = map.next_entry::<String, V>()? {
                if self.unique && members.iter().any(|(k, _)| *k == key) {
                    return Err(serde::de::Error::custom(format!("duplicate field {key:?}")));
                }
                members.push((key, value));
            }
            Ok(members)
        }
    }
    deserializer.deserialize_map(Members {
        expecting,
        unique,
        values: PhantomData,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_names_its_byte_once() {
        let error = Invalid::Syntax(3, "expected a value").into_error(10);
        assert_eq!(error.message, "expected a value at byte 3");
        assert_eq!(error.offset, Some(3));
    }

    fn exact(text: &str) -> String {
        parse(text, 1000).unwrap().to_string()
    }

    #[test]
    fn numbers_keep_their_text() {
        let text =
            r#"{"id":123456789012345678901234567890,"x":1E5,"z":-0,"f":1.50,"e":1e-7,"n":1e400}"#;
        assert_eq!(exact(text), text);
        assert_eq!(exact(" [ 1 , -2.5E+3 ] "), "[1,-2.5E+3]");
        for bad in ["01", "1.", ".5", "-", "1e", "+1", "0x1", "1e+"] {
            assert!(parse(bad, 10).is_err(), "{bad}");
            assert!(!is_number(bad), "{bad}");
        }
        assert_eq!(number("1E5").unwrap().to_string(), "1E5");
        assert!(number("1E5 ").is_none());
    }

    #[test]
    fn strings_decode_like_serde() {
        for text in [
            r#""a\"b\\c\/d\b\f\n\r\t""#,
            r#""\u00e9\u20ac\ud83d\ude00 é""#,
            r#"{"k\u0041":"v","k\u0041":"w"}"#,
            r#"[[],{},[{}],"",null,true,false]"#,
        ] {
            assert_eq!(
                parse(text, 10).unwrap(),
                serde_json::from_str::<Value>(text).unwrap(),
                "{text}"
            );
        }
        for bad in [
            r#""\ud800""#,
            r#""\udc00x""#,
            "\"a\nb\"",
            r#""\x""#,
            r#""ab"#,
        ] {
            assert!(parse(bad, 10).is_err(), "{bad}");
        }
    }

    #[test]
    fn depth_is_the_callers() {
        let deep = format!("{}{}", "[".repeat(500), "]".repeat(500));
        assert_eq!(exact(&deep), deep);
        assert_eq!(parse(&deep, 499), Err(Invalid::TooDeep(499)));
        let objects = format!("{}1{}", r#"{"a":"#.repeat(300), "}".repeat(300));
        assert_eq!(exact(&objects), objects);
    }

    #[test]
    fn rejects_what_is_not_one_value() {
        for bad in [
            "",
            "  ",
            "[1,]",
            "{\"a\":1,}",
            "[1 2]",
            "{\"a\" 1}",
            "{1:2}",
            "[1]x",
            "tru",
            "[",
            "{\"a\":",
        ] {
            assert!(parse(bad, 10).is_err(), "{bad:?}");
        }
    }
}
