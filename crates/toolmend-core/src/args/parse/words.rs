//! Unquoted words: literals, bare strings, regexes and constructor calls such as `Date(...)`.

use super::{Parser, Quote};
use crate::args::nesting::Container;
use crate::bytes::escape::push_json_string;
use crate::error::Error;
use crate::repair::{Repair, RepairKind};

impl<'a> Parser<'a> {
    /// Reads `true`, `false`, `null`, or (repairing) another word: a Python or JavaScript
    /// literal, a literal cut off at the end, or a bare string.
    pub(super) fn word(&mut self) -> Result<(), Error> {
        let start = self.pos;
        let len = self.src[start..]
            .iter()
            .position(|&b| !(b.is_ascii_alphanumeric() || b == b'_' || b == b'$'))
            .unwrap_or(self.src.len() - start);
        let end = start + len;
        if !self.strict && self.src.get(end) == Some(&b'(') && self.constructor(start, end)? {
            return Ok(());
        }
        if !self.strict
            && &self.src[start..end] == b"new"
            && let Some(open) = self.new_call_at(end)
            && self.constructor(start, open)?
        {
            // `new ObjectId("...")`, `new Date(0)`: JavaScript's `new` before a constructor.
            return Ok(());
        }
        let w = &self.src[start..end];
        let at_end = end == self.src.len();
        let (text, kind): (&[u8], Option<RepairKind>) = match w {
            b"true" | b"false" | b"null" => (w, None),
            b"True" | b"TRUE" => (b"true", Some(RepairKind::PythonLiteral)),
            b"False" | b"FALSE" => (b"false", Some(RepairKind::PythonLiteral)),
            b"None" | b"NULL" | b"Null" | b"nil" => (b"null", Some(RepairKind::PythonLiteral)),
            b"undefined" => (b"null", Some(RepairKind::Undefined)),
            b"NaN" | b"Infinity" => (b"null", Some(RepairKind::NonFinite)),
            _ if at_end && b"true".starts_with(w) => (b"true", Some(RepairKind::TruncatedLiteral)),
            _ if at_end && b"false".starts_with(w) => {
                (b"false", Some(RepairKind::TruncatedLiteral))
            }
            _ if at_end && b"null".starts_with(w) => (b"null", Some(RepairKind::TruncatedLiteral)),
            _ => {
                if self.strict {
                    return Err(self.invalid(start, "expected a value"));
                }
                return self.bare_string();
            }
        };
        if let Some(kind) = kind {
            self.fix(kind, start)?;
        }
        self.sink.out.extend_from_slice(text);
        self.pos = end;
        Ok(())
    }

    /// After `new` ending at `at`: the opening parenthesis of the constructor call that
    /// follows (`new ObjectId(`, `new Date (`), if one does.
    fn new_call_at(&self, at: usize) -> Option<usize> {
        let name = self.skip_spaces_from(at);
        if name == at || !self.src.get(name)?.is_ascii_alphabetic() {
            return None;
        }
        let len = self.src[name..]
            .iter()
            .position(|&b| !(b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.')))
            .unwrap_or(self.src.len() - name);
        let open = self.skip_spaces_from(name + len);
        (self.src.get(open) == Some(&b'(')).then_some(open)
    }

    /// `ObjectId("123")`, `NumberLong(2)`, `ISODate("...")`, `new Date(0)`: a constructor call
    /// around one string or number (MongoDB shell or JavaScript output) is that value, and
    /// one around nothing (`ObjectId()`) is null, recorded like a JSONP wrapper. A call of
    /// several arguments (`Timestamp(1412180887, 1)`, `BinData(0, "AAAA")`) has no one value:
    /// its text, a string. Returns `false`, having read nothing, when the call is none of these.
    fn constructor(&mut self, start: usize, open: usize) -> Result<bool, Error> {
        let arg = self.skip_spaces_from(open + 1);
        if self.src.get(arg) == Some(&b')') && self.call_ends_value(arg + 1) {
            self.fix(RepairKind::Jsonp, start)?;
            self.sink.out.extend_from_slice(b"null");
            self.pos = arg + 1;
            return Ok(true);
        }
        let is_scalar = matches!(self.src.get(arg), Some(b'"' | b'\'' | b'-' | b'0'..=b'9'));
        if !is_scalar {
            return self.call_text(start, open);
        }
        let (out_len, repairs_len) = (self.sink.out.len(), self.sink.repairs.len());
        self.pos = arg;
        match self.src[arg] {
            b'"' => self.string_value(Quote::Double, 1)?,
            b'\'' => self.string_value(Quote::Single, 1)?,
            _ => self.number()?,
        }
        let close = self.skip_spaces_from(self.pos);
        if self.src.get(close) != Some(&b')') {
            // Not a call of one value after all.
            self.sink.out.truncate(out_len);
            self.sink.repairs.truncate(repairs_len);
            self.pos = start;
            return self.call_text(start, open);
        }
        self.sink
            .repairs
            .insert(repairs_len, Repair::at(RepairKind::Jsonp, start));
        self.pos = close + 1;
        Ok(true)
    }

    /// Whether a call's closing parenthesis, ending at `at`, ends the value: what follows
    /// (past spaces) ends an item or the input.
    fn call_ends_value(&self, at: usize) -> bool {
        matches!(
            self.src.get(self.skip_spaces_from(at)),
            None | Some(b',' | b'}' | b']' | b')' | b';' | b'\n' | b'\r')
        )
    }

    /// A call `name(a, b)` from `start`, its arguments opening at `open`: when its closing
    /// parenthesis is on the same line (within a bounded distance, strings and brackets
    /// counted) and ends the value, its text is written as a string. Returns `false`, having
    /// read nothing, otherwise.
    fn call_text(&mut self, start: usize, open: usize) -> Result<bool, Error> {
        let ahead = &self.src[open..(open + 1024).min(self.src.len())];
        let mut depth = 0usize;
        let mut quote = None;
        let mut i = 0;
        let close = loop {
            let Some(&b) = ahead.get(i) else {
                return Ok(false);
            };
            match (quote, b) {
                (_, b'\n') => return Ok(false),
                (Some(_), b'\\') => i += 1,
                (Some(q), _) if b == q => quote = None,
                (Some(_), _) => {}
                (None, b'"' | b'\'') => quote = Some(b),
                (None, b'(' | b'[' | b'{') => depth += 1,
                (None, b')' | b']' | b'}') => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        if b != b')' {
                            return Ok(false);
                        }
                        break open + i + 1;
                    }
                }
                (None, _) => {}
            }
            i += 1;
        };
        if !self.call_ends_value(close) {
            return Ok(false);
        }
        self.fix(RepairKind::UnquotedString, start)?;
        push_json_string(&mut self.sink.out, &self.src[start..close]);
        self.pos = close;
        Ok(true)
    }

    /// Writes the bare text from here to the end of the value (`,`, the closing bracket of the
    /// open container, or the end of the line) as a string.
    pub(super) fn bare_string(&mut self) -> Result<(), Error> {
        let start = self.pos;
        self.fix(RepairKind::UnquotedString, start)?;
        let closer = match self.sink.scratch.nesting.top().map(|level| level.kind()) {
            Some(Container::Object) => b'}',
            Some(Container::Array) => b']',
            None => b'\n',
        };
        let rest = &self.src[start..];
        // Brackets the text opens itself are its own (`{text: words{in brackets}}`); in an
        // object, a quoted key after a space starts the next member (`{"a":value "b":1}`).
        let in_object = closer == b'}';
        let mut depth = 0usize;
        let mut len = rest.len();
        for (i, &b) in rest.iter().enumerate() {
            match b {
                b'{' | b'[' => depth += 1,
                b'}' | b']' if depth > 0 => depth -= 1,
                b'\n' => {
                    len = i;
                    break;
                }
                b',' if depth == 0 => {
                    // In an object a comma leads to a member: one followed by a word that is
                    // no key is the value's own (`{"a": red, green}`, `{"a": x, y", "b": 1}`
                    // whose opening quote is missing), as in a quoted string.
                    if in_object && self.prose_follows_comma(start + i + 1) {
                        continue;
                    }
                    len = i;
                    break;
                }
                b'"' if in_object
                    && depth == 0
                    && i > 0
                    && rest[i - 1].is_ascii_whitespace()
                    && self.quoted_key_at(start + i) =>
                {
                    len = i;
                    break;
                }
                _ if b == closer && depth == 0 => {
                    len = i;
                    break;
                }
                _ => {}
            }
        }
        let mut text = rest[..len].trim_ascii_end();
        // `abc"`: a closing quote whose opening one is missing.
        if let [body @ .., q @ (b'"' | b'\'')] = text
            && !body.contains(q)
        {
            text = body;
        }
        push_json_string(&mut self.sink.out, text);
        self.pos = start + len;
        Ok(())
    }
}
