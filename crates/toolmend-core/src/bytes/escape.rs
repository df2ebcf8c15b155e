//! Writing text as the body of a JSON string: the library's one JSON string escaper, byte for
//! byte what serde_json writes (`"`, `\` and control bytes escaped, `\n`-style short forms where
//! JSON has them, `\u00XX` with lowercase hex otherwise, everything else as is).
//!
//! Clean text is copied in runs, and eight bytes at a time are checked for anything to escape:
//! most strings a model writes have nothing to escape in long stretches.

use std::io::{self, Write};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends `text` to `out` as a quoted JSON string, escaping what JSON requires.
pub fn push_json_string(out: &mut Vec<u8>, text: &[u8]) {
    out.push(b'"');
    push_json_string_body(out, text);
    out.push(b'"');
}

/// Appends `text` to `out` escaped for the inside of a JSON string, without the quotes.
pub fn push_json_string_body(out: &mut Vec<u8>, text: &[u8]) {
    let mut run = 0;
    each_escape(text, |at, b| {
        out.extend_from_slice(&text[run..at]);
        push_escape(out, b);
        run = at + 1;
    });
    out.extend_from_slice(&text[run..]);
}

/// Writes `text` to `out` as a quoted JSON string (for writers that are not a `Vec`).
///
/// # Errors
/// Those of `out`.
pub fn write_json_string<W: Write + ?Sized>(out: &mut W, text: &[u8]) -> io::Result<()> {
    out.write_all(b"\"")?;
    write_json_string_body(out, text)?;
    out.write_all(b"\"")
}

/// Writes `text` to `out` escaped for the inside of a JSON string, without the quotes.
///
/// # Errors
/// Those of `out`.
pub(crate) fn write_json_string_body<W: Write + ?Sized>(
    out: &mut W,
    text: &[u8],
) -> io::Result<()> {
    let mut run = 0;
    let mut failed = Ok(());
    each_escape(text, |at, b| {
        if failed.is_ok() {
            let (escape, len) = escaped(b);
            failed = out
                .write_all(&text[run..at])
                .and_then(|()| out.write_all(&escape[..len]));
        }
        run = at + 1;
    });
    failed?;
    out.write_all(&text[run..])
}

/// Calls `found` with the offset and value of each byte of `text` that must be escaped, in order.
#[inline]
fn each_escape(text: &[u8], mut found: impl FnMut(usize, u8)) {
    let mut i = 0;
    while i < text.len() {
        if plain_word(text, i) {
            i += 8;
            continue;
        }
        let b = text[i];
        if needs_escape(b) {
            found(i, b);
        }
        i += 1;
    }
}

/// Whether `b` cannot appear raw in a JSON string.
#[inline]
pub(crate) fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// Whether the eight bytes at `at` (all there) hold nothing to escape.
#[inline]
fn plain_word(bytes: &[u8], at: usize) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    /// Whether a byte of `x` is zero.
    fn zero_byte(x: u64) -> bool {
        x.wrapping_sub(ONES) & !x & HIGHS != 0
    }
    let Some(word) = bytes.get(at..at + 8) else {
        return false;
    };
    let x = u64::from_le_bytes(word.try_into().unwrap_or_default());
    // No byte below 0x20, no `"`, no `\`.
    x.wrapping_sub(ONES * 0x20) & !x & HIGHS == 0
        && !zero_byte(x ^ (ONES * u64::from(b'"')))
        && !zero_byte(x ^ (ONES * u64::from(b'\\')))
}

/// Appends the JSON escape for one byte that cannot appear raw in a string.
pub(crate) fn push_escape(out: &mut Vec<u8>, b: u8) {
    let (escape, len) = escaped(b);
    out.extend_from_slice(&escape[..len]);
}

/// The escape for `b`, a quote, a backslash or a control byte: its bytes and how many of them
/// count (`\n`, or `\u001f` for a control byte with no short form).
pub(crate) fn escaped(b: u8) -> ([u8; 6], usize) {
    let short = match b {
        b'"' => b'"',
        b'\\' => b'\\',
        b'\n' => b'n',
        b'\r' => b'r',
        b'\t' => b't',
        0x08 => b'b',
        0x0c => b'f',
        _ => 0,
    };
    if short != 0 {
        ([b'\\', short, 0, 0, 0, 0], 2)
    } else {
        let (hi, lo) = (HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]);
        ([b'\\', b'u', b'0', b'0', hi, lo], 6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_what_json_requires() {
        let mut out = Vec::new();
        push_json_string(&mut out, "a\"b\\c\nd\u{1}é".as_bytes());
        assert_eq!(std::str::from_utf8(&out).unwrap(), r#""a\"b\\c\nd\u0001é""#);
    }

    /// Every byte at every place in words and runs of every length escapes as serde_json
    /// escapes it, through both writers.
    #[test]
    fn escapes_as_serde_json_does_at_every_offset() {
        let specials = [
            '"', '\\', '\n', '\u{0}', '\u{1f}', '\u{7f}', 'é', '\u{8}', '\u{c}',
        ];
        for len in 0..40 {
            for at in 0..len.max(1) {
                for special in specials {
                    let text: String = (0..len)
                        .map(|i| if i == at { special } else { 'a' })
                        .collect();
                    let want = serde_json::to_string(&text).unwrap();
                    let mut pushed = Vec::new();
                    push_json_string(&mut pushed, text.as_bytes());
                    assert_eq!(String::from_utf8(pushed).unwrap(), want);
                    let mut written = Vec::new();
                    write_json_string(&mut written, text.as_bytes()).unwrap();
                    assert_eq!(String::from_utf8(written).unwrap(), want);
                }
            }
        }
    }
}
