//! Whether JSON text is a given object, checked as the text is walked, nothing built.
//!
//! The end of a reply matches each call it read to a call `calls` gives by reading the
//! arguments it showed again from the reply ([`Reader`](super::Reader), which builds them as
//! values) and comparing. For the usual call, shown whole and given back unchanged, that read
//! built a map of owned keys and strings per call only to find it equal: [`is_object`] says so
//! without building anything. It says `true` only where the reader would read the text, to its
//! end, as exactly that object (members in the same order); anything else (a slip the reader
//! accepts, such as a trailing comma, nesting past its limit, a different order) is `false`,
//! and the caller reads the text the slow way.

use serde_json::{Map, Value};

use super::MAX_DEPTH;
use super::string::short_escape;

/// Whether `text` starts with a JSON object that the partial reader reads to its end as
/// exactly `object` (the same members in the same order); what follows it is not looked at.
pub(crate) fn is_object(text: &[u8], object: &Map<String, Value>) -> bool {
    let mut walk = Walk { text, at: 0 };
    walk.object(object, 1)
}

/// Whether `text` starts with a JSON string whose text, decoded as the reader decodes it and
/// its leading white space left out (as the stream reads arguments written as a string), is
/// a JSON object that the reader reads as exactly `object` ([`is_object`]) and nothing after
/// it; what follows the string in `text` is not looked at.
pub(crate) fn is_object_in_string(text: &[u8], object: &Map<String, Value>) -> bool {
    let Some(decoded) = (Walk { text, at: 0 }).decoded_string() else {
        return false;
    };
    let start = decoded
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(decoded.len());
    let mut walk = Walk {
        text: &decoded[start..],
        at: 0,
    };
    walk.object(object, 1) && walk.at == walk.text.len()
}

struct Walk<'a> {
    text: &'a [u8],
    at: usize,
}

impl Walk<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    /// Skips the white space the reader skips.
    fn blank(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        let hit = self.peek() == Some(b);
        self.at += usize::from(hit);
        hit
    }

    /// The object opening at `self.at`, `depth` containers open with it.
    fn object(&mut self, object: &Map<String, Value>, depth: usize) -> bool {
        if depth > MAX_DEPTH || !self.eat(b'{') {
            return false;
        }
        let mut members = object.iter();
        self.blank();
        if self.eat(b'}') {
            return object.is_empty();
        }
        loop {
            let Some((key, value)) = members.next() else {
                return false;
            };
            self.blank();
            if !self.string(key) {
                return false;
            }
            self.blank();
            if !self.eat(b':') {
                return false;
            }
            self.blank();
            if !self.value(value, depth) {
                return false;
            }
            self.blank();
            if self.eat(b'}') {
                return members.next().is_none();
            }
            if !self.eat(b',') {
                return false;
            }
        }
    }

    fn array(&mut self, items: &[Value], depth: usize) -> bool {
        if depth > MAX_DEPTH || !self.eat(b'[') {
            return false;
        }
        let mut items = items.iter();
        self.blank();
        if self.eat(b']') {
            return items.next().is_none();
        }
        loop {
            let Some(item) = items.next() else {
                return false;
            };
            self.blank();
            if !self.value(item, depth) {
                return false;
            }
            self.blank();
            if self.eat(b']') {
                return items.next().is_none();
            }
            if !self.eat(b',') {
                return false;
            }
        }
    }

    /// A value inside a container (`depth` containers open), then a delimiter must follow.
    fn value(&mut self, value: &Value, depth: usize) -> bool {
        match value {
            Value::Object(m) => self.object(m, depth + 1),
            Value::Array(items) => self.array(items, depth + 1),
            Value::String(s) => self.string(s),
            Value::Number(n) => self.number(n.as_str()),
            Value::Bool(true) => self.word(b"true"),
            Value::Bool(false) => self.word(b"false"),
            Value::Null => self.word(b"null"),
        }
    }

    /// A literal, ended by what ends one for the reader (not a letter, digit or `_`).
    fn word(&mut self, word: &[u8]) -> bool {
        if !self.text[self.at..].starts_with(word) {
            return false;
        }
        self.at += word.len();
        !matches!(self.peek(), Some(b) if b.is_ascii_alphanumeric() || b == b'_')
    }

    /// A number written exactly as `written` (the reader keeps a number's text), ended by
    /// what ends one for the reader.
    fn number(&mut self, written: &str) -> bool {
        let start = self.at;
        while matches!(
            self.peek(),
            Some(b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
        ) {
            self.at += 1;
        }
        // `written` is a JSON number's text (the reader checked it as it read it).
        &self.text[start..self.at] == written.as_bytes()
    }

    /// A string (a key or a value) whose text decodes to `want`, as the reader decodes it: its
    /// escapes, and a raw control character kept as it is.
    fn string(&mut self, want: &str) -> bool {
        if !self.eat(b'"') {
            return false;
        }
        let mut want = want.as_bytes();
        loop {
            let rest = &self.text[self.at..];
            let Some(n) = memchr::memchr2(b'"', b'\\', rest) else {
                return false;
            };
            let Some(tail) = want.strip_prefix(&rest[..n]) else {
                return false;
            };
            want = tail;
            self.at += n + 1;
            if rest[n] == b'"' {
                return want.is_empty();
            }
            let Some(c) = self.escape() else {
                return false;
            };
            let mut buf = [0; 4];
            let Some(tail) = want.strip_prefix(c.encode_utf8(&mut buf).as_bytes()) else {
                return false;
            };
            want = tail;
        }
    }

    /// The text of the string at `self.at`, decoded as the reader decodes it (see
    /// [`Walk::string`]); `None` where the reader gives up or the string does not end.
    fn decoded_string(&mut self) -> Option<Vec<u8>> {
        if !self.eat(b'"') {
            return None;
        }
        let mut decoded = Vec::new();
        loop {
            let rest = &self.text[self.at..];
            let n = memchr::memchr2(b'"', b'\\', rest)?;
            decoded.extend_from_slice(&rest[..n]);
            self.at += n + 1;
            if rest[n] == b'"' {
                return Some(decoded);
            }
            let c = self.escape()?;
            let mut buf = [0; 4];
            decoded.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        }
    }

    /// The character of the escape after a backslash (`None` where the reader gives up: an
    /// unknown escape, a lone surrogate).
    fn escape(&mut self) -> Option<char> {
        let b = self.peek()?;
        self.at += 1;
        if let Some(c) = short_escape(b) {
            return Some(c);
        }
        Some(match b {
            b'u' => {
                let code = self.hex4()?;
                match code {
                    0xD800..=0xDBFF => {
                        if !(self.eat(b'\\') && self.eat(b'u')) {
                            return None;
                        }
                        let low = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return None;
                        }
                        char::from_u32(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00))?
                    }
                    0xDC00..=0xDFFF => return None,
                    _ => char::from_u32(code)?,
                }
            }
            _ => return None,
        })
    }

    fn hex4(&mut self) -> Option<u32> {
        let mut code = 0;
        for _ in 0..4 {
            let d = char::from(self.peek()?).to_digit(16)?;
            self.at += 1;
            code = code * 16 + d;
        }
        Some(code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calls::partial::Step;
    use crate::calls::partial::tests::read;

    /// `is_object` says `true` only where the reader reads the text to that object, and does
    /// for JSON as written (not for the slips the reader takes: the slow way reads those).
    #[test]
    fn is_what_the_reader_reads() {
        let texts = [
            r#"{}"#,
            r#"{"a": 1, "b": [true, false, null, -0.5e3, "x"], "c": {"d": {}}}"#,
            r#" {"a": 1}"#,
            "{\"a\": \"x\\ny\\u00e9\\ud83d\\ude00\\\"q\\\\\\/\"}",
            "{\"a\": \"raw\ncontrol\"}",
            r#"{"a": 1,}"#,
            r#"{"a": [1,]}"#,
            r#"{"a": 01}"#,
            r#"{"a": 1.}"#,
            r#"{"a": 1, "a": 2}"#,
            r#"{"a": "\ud800x"}"#,
            r#"{"a": "\udc00"}"#,
            r#"{"a": "\q"}"#,
            r#"{"a": truex}"#,
            r#"{"a": tru"#,
            r#"{"a": "x"#,
            r#"{"a": 1}tail"#,
            r#"{"é/~": {"k": [[], [{}]]}}"#,
        ];
        for text in texts {
            let (reader, step) = read(text.trim_start());
            let read = (step == Step::Done)
                .then_some(reader.value)
                .flatten()
                .and_then(|v| match v {
                    Value::Object(m) => Some(m),
                    _ => None,
                });
            let slip = text.contains(",}") || text.contains(",]");
            if let Some(object) = &read {
                assert_eq!(
                    is_object(text.trim_start().as_bytes(), object),
                    !slip,
                    "{text}"
                );
            }
            // Against other objects: only the one read.
            for other in [
                serde_json::json!({}),
                serde_json::json!({"a": 1}),
                serde_json::json!({"a": "x\nyé😀\"q\\/"}),
                serde_json::json!({"a": 2}),
                serde_json::json!({"b": 1}),
                serde_json::json!({"a": 1, "b": 2}),
            ] {
                let Value::Object(other) = other else {
                    unreachable!()
                };
                let said = is_object(text.trim_start().as_bytes(), &other);
                let is = read.as_ref() == Some(&other);
                assert_eq!(said, is && !slip, "{text} against {other:?}");
            }
        }
    }

    /// `is_object_in_string` says `true` only where the reader reads the string's text (its
    /// leading white space left out, every byte of it pushed, as the stream reads arguments
    /// written as a string) to that object, and does for JSON as written.
    #[test]
    fn in_a_string_is_what_the_reader_reads() {
        // Every byte of the text, the last ending the object.
        let read_all = |text: &str| -> Option<Map<String, Value>> {
            let mut reader = crate::calls::partial::Reader::new();
            for &b in text
                .trim_start_matches(|c: char| c.is_ascii_whitespace())
                .as_bytes()
            {
                if reader.push(b) == Step::Bail {
                    return None;
                }
            }
            match reader.value {
                Some(Value::Object(m)) => Some(m),
                _ => None,
            }
        };
        let texts = [
            "{}",
            r#"{"a": 1, "b": [true, null, -0.5e3, "x"], "c": {"d": {}}}"#,
            " \u{c}\n{\"a\": 1}",
            "{\"a\": 1} ",
            "{\"a\": 1}x",
            "{\"a\": \"x\\ny\\u00e9\\ud83d\\ude00\\\"q\\\\\\/\"}",
            "{\"a\": \"raw\ncontrol\"}",
            r#"{"a": 1,}"#,
            r#"{"a": 1, "a": 2}"#,
            r#"{"a": "\ud800x"}"#,
            r#"{"a": tru"#,
        ];
        let mut strings: Vec<String> = texts
            .iter()
            .map(|t| serde_json::to_string(t).unwrap() + "tail")
            .collect();
        // Escapes serde_json does not write, and strings that do not end or are not strings.
        strings.extend(
            [
                r#""{\"a\": \u0031}""#,
                r#""{\u0022a\u0022: \"\ud83d\ude00\"}""#,
                r#""{\"a\": 1}"#,
                r#""{\"a\": 1}\q""#,
                r#"{"a": 1}"#,
            ]
            .map(String::from),
        );
        let mut said_true = 0;
        for string in &strings {
            let decoded = (Walk {
                text: string.as_bytes(),
                at: 0,
            })
            .decoded_string();
            let read = decoded
                .as_ref()
                .and_then(|d| read_all(std::str::from_utf8(d).ok()?));
            let slip = string.contains(",}");
            if let Some(object) = &read {
                assert_eq!(
                    is_object_in_string(string.as_bytes(), object),
                    !slip,
                    "{string}"
                );
            }
            for other in [
                serde_json::json!({}),
                serde_json::json!({"a": 1}),
                serde_json::json!({"a": "x\nyé😀\"q\\/"}),
                serde_json::json!({"a": "😀"}),
                serde_json::json!({"a": 2}),
            ] {
                let Value::Object(other) = other else {
                    unreachable!()
                };
                let said = is_object_in_string(string.as_bytes(), &other);
                assert!(
                    !said || read.as_ref() == Some(&other),
                    "{string} against {other:?}"
                );
                said_true += usize::from(said);
            }
        }
        assert!(said_true >= 5, "{said_true}");
    }

    #[test]
    fn order_and_depth_count() {
        let Value::Object(ab) = serde_json::json!({"a": 1, "b": 2}) else {
            unreachable!()
        };
        assert!(is_object(br#"{"a":1,"b":2}"#, &ab));
        // The same members in another order: not said (the slow way tells).
        assert!(!is_object(br#"{"b":2,"a":1}"#, &ab));
        // Nesting the reader takes, and one level more, which it gives up at.
        let nest = |n: usize| format!("{{\"a\":{}1{}}}", "[".repeat(n), "]".repeat(n));
        for (n, ok) in [(MAX_DEPTH - 1, true), (MAX_DEPTH, false)] {
            let text = nest(n);
            let (reader, step) = read(&text);
            assert_eq!(step == Step::Done, ok, "{n}");
            let mut value = Value::from(1);
            for _ in 0..n {
                value = Value::Array(vec![value]);
            }
            let mut object = Map::new();
            object.insert("a".into(), value);
            assert_eq!(is_object(text.as_bytes(), &object), ok, "{n}");
            if ok {
                assert_eq!(reader.value, Some(Value::Object(object)));
            }
        }
    }
}
