//! Strings read as they arrive: their bytes, escapes, and the plain runs read in one go.

use serde_json::Value;

use super::{Expect, Frame, Lex, Reader, Step};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Escape {
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

impl Reader {
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
            text_only,
            escape: Escape::No,
            ..
        } = &mut self.lex
        else {
            return false;
        };
        if !*text_only {
            bytes.push(b);
        }
        if *rec && let Some(t) = &mut self.text {
            t.out.push(b);
            t.weight += 1;
        }
        true
    }

    /// Reads `b` as [`Reader::push`] would when the open string (or an escape in it) goes on
    /// with it: anything but its closing quote, and what the reader gives up at. Whether it
    /// did (else nothing changed).
    pub(crate) fn string_inner_byte(&mut self, b: u8) -> bool {
        match self.lex {
            Lex::Str {
                escape: Escape::Closed,
                ..
            } => false,
            Lex::Str {
                escape: Escape::No, ..
            } if b == b'"' => false,
            Lex::Str { .. } => self.value.is_none() && self.string_byte(b) == Step::More,
            _ => false,
        }
    }

    /// [`Reader::extend_string`] for bytes already known plain (no control character, quote
    /// or backslash, as the stream's skim took them a few at a time): not looked at again.
    /// Whether a plain string was open to take them.
    pub(crate) fn extend_plain_string(&mut self, chunk: &[u8]) -> bool {
        debug_assert!(chunk.iter().all(|&b| b >= 0x20 && b != b'"' && b != b'\\'));
        let Lex::Str {
            bytes,
            rec,
            text_only,
            escape: Escape::No,
            ..
        } = &mut self.lex
        else {
            return false;
        };
        if !*text_only {
            extend(bytes, chunk);
        }
        if *rec && let Some(t) = &mut self.text {
            extend(&mut t.out, chunk);
            t.weight += chunk.len();
        }
        true
    }

    /// Reads `chunk` in one go when it only adds to the open string (no quote or backslash,
    /// no escape under way), as pushing its bytes one by one would; whether it did.
    pub(crate) fn extend_string(&mut self, chunk: &[u8]) -> bool {
        let Lex::Str {
            bytes,
            rec,
            text_only,
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
        if !*text_only {
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

    pub(super) fn string_byte(&mut self, b: u8) -> Step {
        let Lex::Str {
            bytes,
            key,
            rec,
            text_only,
            escape,
        } = &mut self.lex
        else {
            return Step::Bail;
        };
        // What is added to `bytes` is written to the recorded text too; a text-only frame's
        // string keeps no bytes (only its text).
        let rec = if *rec { self.text.as_mut() } else { None };
        let text_only = *text_only;
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
                    if !text_only {
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
                        let value = if text_only {
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
                let c = match (b, short_escape(b)) {
                    (_, Some(c)) => c,
                    (b'u', None) => {
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
            if text_only {
                bytes.truncate(from);
            }
        }
        Step::More
    }

    /// Whether a string (a key or a value) is being read.
    pub(crate) fn in_string(&self) -> bool {
        matches!(self.lex, Lex::Str { .. })
    }
}

/// Writes `bytes` (UTF-8) as `serde_json` writes a string's content (`quoted`: with its quotes),
/// by the library's one escaper.
pub(super) fn escape_into(out: &mut Vec<u8>, bytes: &[u8], quoted: bool) {
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

/// The character of a two-byte JSON escape (`\n`, `\"`, …) from the byte after its
/// backslash; `None` for `u` and for what is no escape.
pub(super) fn short_escape(b: u8) -> Option<char> {
    Some(match b {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        _ => return None,
    })
}
