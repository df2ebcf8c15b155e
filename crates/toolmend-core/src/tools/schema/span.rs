//! Where the value at a JSON pointer is written in a JSON text, read without building it.

use serde_json::Value;

pub(super) const MAX_NESTING: usize = 1000;

/// The value of one JSON text, each number's text kept.
pub(super) fn parse(text: &str) -> Option<Value> {
    crate::exact::parse(text, MAX_NESTING).ok()
}

/// Where the value at JSON pointer `path` is written in the JSON `text`.
pub(super) fn span(text: &str, path: &str) -> Option<std::ops::Range<usize>> {
    let b = text.as_bytes();
    let mut at = skip_space(b, 0);
    if !path.is_empty() {
        for segment in path.strip_prefix('/')?.split('/') {
            let segment = segment.replace("~1", "/").replace("~0", "~");
            at = match b.get(at)? {
                b'{' => {
                    let mut i = skip_space(b, at + 1);
                    loop {
                        if b.get(i)? != &b'"' {
                            return None;
                        }
                        let key_end = skip_value(b, i)?;
                        let key = &text[i + 1..key_end - 1];
                        let same = if key.contains('\\') {
                            serde_json::from_str::<String>(&text[i..key_end]).ok()? == segment
                        } else {
                            key == segment
                        };
                        i = skip_space(b, key_end);
                        i = skip_space(b, i + usize::from(b.get(i) == Some(&b':')));
                        if same {
                            break i;
                        }
                        i = skip_space(b, skip_value(b, i)?);
                        if b.get(i)? != &b',' {
                            return None;
                        }
                        i = skip_space(b, i + 1);
                    }
                }
                b'[' => {
                    let index: usize = segment.parse().ok()?;
                    let mut i = skip_space(b, at + 1);
                    for _ in 0..index {
                        i = skip_space(b, skip_value(b, i)?);
                        if b.get(i)? != &b',' {
                            return None;
                        }
                        i = skip_space(b, i + 1);
                    }
                    i
                }
                _ => return None,
            };
        }
    }
    Some(at..skip_value(b, at)?)
}

pub(super) fn skip_space(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

/// The end of the JSON value that starts at `i`.
pub(super) fn skip_value(b: &[u8], mut i: usize) -> Option<usize> {
    let mut depth = 0usize;
    loop {
        match b.get(i)? {
            b'"' => {
                i += 1;
                loop {
                    match b.get(i)? {
                        b'\\' => i += 2,
                        b'"' => break,
                        _ => i += 1,
                    }
                }
                i += 1;
            }
            b'{' | b'[' => {
                depth += 1;
                i += 1;
            }
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                i += 1;
            }
            _ if depth == 0 => {
                // A number or literal: up to the next delimiter.
                while b.get(i).is_some_and(|c| {
                    !matches!(c, b',' | b'}' | b']' | b':') && !c.is_ascii_whitespace()
                }) {
                    i += 1;
                }
                return Some(i);
            }
            _ => i += 1,
        }
        if depth == 0 {
            return Some(i);
        }
    }
}
