//! Python-style calls: `[get_weather(city="Oslo"), get_time(tz='UTC')]` (Llama 3.2 / 4,
//! ToolACE, LFM2), one call per line (Olmo 3), and `brave_search.call(query="x")` (Llama 3.1
//! built-in tools). Only literal arguments are allowed: strings, numbers, `True`/`False`/`None`
//! (and JSON's `true`/`false`/`null`), lists, tuples and dicts of literals.

use serde_json::{Map, Number, Value};

/// One parsed call: its name, its keyword arguments, and where it was in the text.
#[derive(Debug)]
pub(crate) struct PyCall {
    pub name: String,
    pub args: Map<String, Value>,
    pub start: usize,
    /// Where the set literals read as arrays (`{1, 2}`) opened.
    pub sets: Vec<usize>,
    /// Where a line break stood raw inside a one-line string (kept in the value).
    pub line_breaks: Vec<usize>,
}

/// Why the text is not (or not all) Python calls.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum PyError {
    /// The text ended inside a call.
    Truncated,
    /// Not a call: what was expected, at this byte offset.
    Syntax(usize, String),
}

pub(crate) struct Py<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pub pos: usize,
    end: usize,
    depth: usize,
    /// Where each set literal read (as an array) opened.
    pub sets: Vec<usize>,
    /// Where each raw line break in a one-line string stood.
    pub line_breaks: Vec<usize>,
}

impl<'a> Py<'a> {
    pub(crate) fn new(text: &'a str, start: usize, end: usize) -> Py<'a> {
        Py {
            text,
            bytes: text.as_bytes(),
            pos: start,
            end,
            depth: 0,
            sets: Vec::new(),
            line_breaks: Vec::new(),
        }
    }

    fn ws(&mut self) {
        while self.pos < self.end && self.bytes[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        (self.pos < self.end).then(|| self.bytes[self.pos])
    }

    fn err<T>(&self, what: &str) -> Result<T, PyError> {
        if self.pos >= self.end {
            Err(PyError::Truncated)
        } else {
            Err(PyError::Syntax(self.pos, what.to_owned()))
        }
    }

    fn expect(&mut self, b: u8) -> Result<(), PyError> {
        self.ws();
        if self.peek() == Some(b) {
            self.pos += 1;
            Ok(())
        } else {
            self.err(&format!("expected '{}'", b as char))
        }
    }

    fn ident(&mut self) -> Option<&'a str> {
        let start = self.pos;
        while self.pos < self.end {
            let b = self.bytes[self.pos];
            if b.is_ascii_alphabetic() || b == b'_' || (self.pos > start && b.is_ascii_digit()) {
                self.pos += 1;
            } else {
                break;
            }
        }
        (self.pos > start).then(|| &self.text[start..self.pos])
    }

    /// `[call, call, …]`; the position ends after the `]`.
    pub(crate) fn list(&mut self) -> Result<Vec<PyCall>, PyError> {
        self.items(b'[', b']', "expected ',' or ']'", Py::call)
    }

    /// Items read by `item` between `open` and `close`, separated by commas (one may end the
    /// list); `missing` is the error where neither a comma nor `close` follows an item.
    fn items<T>(
        &mut self,
        open: u8,
        close: u8,
        missing: &str,
        mut item: impl FnMut(&mut Self) -> Result<T, PyError>,
    ) -> Result<Vec<T>, PyError> {
        self.expect(open)?;
        let mut items = Vec::new();
        loop {
            self.ws();
            if self.peek() == Some(close) {
                self.pos += 1;
                return Ok(items);
            }
            items.push(item(self)?);
            self.ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(c) if c == close => {}
                _ => return self.err(missing),
            }
        }
    }

    /// `name(k=v, …)` or `name.call(k=v, …)`.
    pub(crate) fn call(&mut self) -> Result<PyCall, PyError> {
        self.ws();
        let start = self.pos;
        let mut name = String::new();
        loop {
            let Some(part) = self.ident() else {
                return self.err("expected a function name");
            };
            if !name.is_empty() {
                name.push('.');
            }
            name.push_str(part);
            if self.peek() == Some(b'.') {
                self.pos += 1;
            } else {
                break;
            }
        }
        if let Some(bare) = name.strip_suffix(".call") {
            name.truncate(bare.len());
        }
        let args = self.items(b'(', b')', "expected ',' or ')'", |py| {
            let key_at = py.pos;
            let Some(key) = py.ident() else {
                return py.err("expected a keyword argument");
            };
            py.ws();
            if py.peek() != Some(b'=') {
                py.pos = key_at;
                return py.err("expected a keyword argument (name=value)");
            }
            py.pos += 1;
            Ok((key.to_owned(), py.literal()?))
        })?;
        let first_set = self.sets.partition_point(|&at| at < start);
        let first_break = self.line_breaks.partition_point(|&at| at < start);
        Ok(PyCall {
            name,
            args: args.into_iter().collect(),
            start,
            sets: self.sets[first_set..].to_vec(),
            line_breaks: self.line_breaks[first_break..].to_vec(),
        })
    }

    fn literal(&mut self) -> Result<Value, PyError> {
        self.ws();
        self.depth += 1;
        if self.depth > 200 {
            return self.err("literals nested too deep");
        }
        let value = match self.peek() {
            None => return Err(PyError::Truncated),
            Some(b'"' | b'\'') => Value::String(self.string()?),
            Some(b'[') => Value::Array(self.seq(b'[', b']')?),
            Some(b'(') => Value::Array(self.seq(b'(', b')')?),
            Some(b'{') => self.dict()?,
            Some(b'-' | b'+' | b'0'..=b'9' | b'.') => self.number()?,
            Some(_) => {
                let at = self.pos;
                match self.ident() {
                    Some("True" | "true") => Value::Bool(true),
                    Some("False" | "false") => Value::Bool(false),
                    Some("None" | "null") => Value::Null,
                    Some(_) if self.pos >= self.end => return Err(PyError::Truncated),
                    _ => {
                        self.pos = at;
                        return self.err("expected a literal value");
                    }
                }
            }
        };
        self.depth -= 1;
        Ok(value)
    }

    fn seq(&mut self, open: u8, close: u8) -> Result<Vec<Value>, PyError> {
        self.items(
            open,
            close,
            "expected ',' or a closing bracket",
            Py::literal,
        )
    }

    /// Whether the `{` at the current position opens a set (`{1, 2}`, `{"a"}`): its first
    /// member, a string or a bare word, is followed by `,` or `}`, not `:`.
    fn at_set(&self) -> bool {
        let bytes = &self.bytes[..self.end];
        let mut i = self.pos + 1;
        while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        match bytes.get(i) {
            Some(&q @ (b'"' | b'\'')) => {
                i += 1;
                while let Some(&b) = bytes.get(i) {
                    if b == q {
                        break;
                    }
                    i += if b == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            Some(b) if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.' | b'_') => {
                while bytes.get(i).is_some_and(|b| {
                    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.' | b'_')
                }) {
                    i += 1;
                }
            }
            _ => return false,
        }
        while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        matches!(bytes.get(i), Some(b',' | b'}'))
    }

    fn dict(&mut self) -> Result<Value, PyError> {
        if self.at_set() {
            // A Python set is an array.
            self.sets.push(self.pos);
            return Ok(Value::Array(self.seq(b'{', b'}')?));
        }
        let members = self.items(b'{', b'}', "expected ',' or '}'", |py| {
            let key = match py.literal()? {
                Value::String(s) => s,
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                _ => return py.err("expected a string key"),
            };
            py.expect(b':')?;
            Ok((key, py.literal()?))
        })?;
        Ok(Value::Object(members.into_iter().collect()))
    }

    fn number(&mut self) -> Result<Value, PyError> {
        let start = self.pos;
        while self.pos < self.end
            && matches!(
                self.bytes[self.pos],
                b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E' | b'_'
            )
        {
            self.pos += 1;
        }
        if self.pos >= self.end {
            return Err(PyError::Truncated);
        }
        let raw: String = self.text[start..self.pos]
            .chars()
            .filter(|&c| c != '_' && c != '+')
            .collect();
        // Python allows `07`-style leading zeros in some model output; JSON does not.
        let (neg, digits) = match raw.strip_prefix('-') {
            Some(d) => (true, d),
            None => (false, raw.as_str()),
        };
        let trimmed = digits.trim_start_matches('0');
        let digits =
            if trimmed.is_empty() || trimmed.starts_with('.') || trimmed.starts_with(['e', 'E']) {
                format!("0{trimmed}")
            } else {
                trimmed.to_owned()
            };
        let digits = if digits.ends_with('.') {
            format!("{digits}0")
        } else {
            digits
        };
        // A number JSON can write keeps its text (`1E5`, digits past 64 bits).
        let written = &self.text[start..self.pos];
        if let Some(n) = crate::exact::number(written) {
            return Ok(Value::Number(n));
        }
        let text = if neg { format!("-{digits}") } else { digits };
        if let Ok(n) = text.parse::<i64>() {
            return Ok(Value::Number(n.into()));
        }
        match text.parse::<f64>().ok().and_then(Number::from_f64) {
            Some(n) => Ok(Value::Number(n)),
            None => {
                self.pos = start;
                self.err("expected a number")
            }
        }
    }

    fn string(&mut self) -> Result<String, PyError> {
        let quote = self.bytes[self.pos];
        let triple = self.bytes[self.pos..self.end].starts_with(&[quote; 3]);
        self.pos += if triple { 3 } else { 1 };
        let mut out = String::new();
        loop {
            let Some(b) = self.peek() else {
                return Err(PyError::Truncated);
            };
            if b == quote {
                if !triple {
                    self.pos += 1;
                    return Ok(out);
                }
                if self.bytes[self.pos..self.end].starts_with(&[quote; 3]) {
                    self.pos += 3;
                    return Ok(out);
                }
            }
            if b == b'\\' {
                self.pos += 1;
                let Some(e) = self.peek() else {
                    return Err(PyError::Truncated);
                };
                self.pos += 1;
                match e {
                    b'n' => out.push('\n'),
                    b't' => out.push('\t'),
                    b'r' => out.push('\r'),
                    b'0' => out.push('\0'),
                    b'\\' | b'\'' | b'"' => out.push(e as char),
                    b'u' if self.pos + 4 <= self.end => {
                        let hex = &self.text[self.pos..self.pos + 4];
                        match u32::from_str_radix(hex, 16).ok().and_then(char::from_u32) {
                            Some(c) => {
                                out.push(c);
                                self.pos += 4;
                            }
                            None => out.push_str("\\u"),
                        }
                    }
                    b'\n' => {}
                    _ => {
                        out.push('\\');
                        self.pos -= 1;
                    }
                }
                continue;
            }
            if !triple && b == b'\n' {
                // Models write a shell heredoc or code into a one-line string with its line
                // breaks raw (vLLM's LFM2 tests): kept, as the JSON mender keeps one, and
                // reported.
                self.line_breaks.push(self.pos);
            }
            let c = self.text[self.pos..].chars().next().unwrap_or('\u{FFFD}');
            out.push(c);
            self.pos += c.len_utf8();
        }
    }

    /// Whether the text at the position looks like the start of a call list: `[name(`.
    pub(crate) fn looks_like_list(text: &str, at: usize) -> bool {
        let bytes = text.as_bytes();
        if bytes.get(at) != Some(&b'[') {
            return false;
        }
        let i = super::scan::skip_ws(text, at + 1);
        let n = super::scan::ident_len(text, i);
        if n == 0 {
            return false;
        }
        let mut j = i + n;
        while bytes.get(j) == Some(&b'.') {
            j += 1;
            j += super::scan::ident_len(text, j);
        }
        bytes.get(j) == Some(&b'(')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(text: &str) -> Result<Vec<PyCall>, PyError> {
        Py::new(text, 0, text.len()).list()
    }

    #[test]
    fn calls_and_literals() {
        let calls =
            list(r#"[f(a="x", b=2, c=True, d=None, e=[1, 'y'], g={"k": 1.5}), h()]"#).unwrap();
        assert_eq!(calls.len(), 2);
        assert_eq!(
            serde_json::to_string(&calls[0].args).unwrap(),
            r#"{"a":"x","b":2,"c":true,"d":null,"e":[1,"y"],"g":{"k":1.5}}"#
        );
        assert_eq!(calls[1].name, "h");
        let one = Py::new("brave_search.call(query='a\\'b')", 0, 31)
            .call()
            .unwrap();
        assert_eq!(one.name, "brave_search");
        assert_eq!(one.args["query"], "a'b");
    }

    #[test]
    fn truncation_and_errors() {
        assert_eq!(list(r#"[f(a="x"#).unwrap_err(), PyError::Truncated);
        assert_eq!(list("[f(a=1), g(b=").unwrap_err(), PyError::Truncated);
        assert!(matches!(list("[f(1)]").unwrap_err(), PyError::Syntax(..)));
        assert!(matches!(list("[f(a=x)]").unwrap_err(), PyError::Syntax(..)));
        assert!(Py::looks_like_list("[ get.x(", 0));
        assert!(!Py::looks_like_list("[1, 2]", 0));
    }
}
