//! Writing text as the body of a JSON string.

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends `text` to `out` as a quoted JSON string, escaping what JSON requires.
pub fn push_json_string(out: &mut Vec<u8>, text: &[u8]) {
    out.push(b'"');
    push_json_string_body(out, text);
    out.push(b'"');
}

/// Appends `text` to `out` escaped for the inside of a JSON string, without the quotes.
///
/// `text` is copied in runs between the bytes that need escaping, so clean text is one copy.
pub fn push_json_string_body(out: &mut Vec<u8>, text: &[u8]) {
    let mut run = 0;
    for (i, &b) in text.iter().enumerate() {
        if b >= 0x20 && b != b'"' && b != b'\\' {
            continue;
        }
        out.extend_from_slice(&text[run..i]);
        push_escape(out, b);
        run = i + 1;
    }
    out.extend_from_slice(&text[run..]);
}

/// Appends the JSON escape for one byte that cannot appear raw in a string.
pub(crate) fn push_escape(out: &mut Vec<u8>, b: u8) {
    match b {
        b'"' => out.extend_from_slice(b"\\\""),
        b'\\' => out.extend_from_slice(b"\\\\"),
        b'\n' => out.extend_from_slice(b"\\n"),
        b'\r' => out.extend_from_slice(b"\\r"),
        b'\t' => out.extend_from_slice(b"\\t"),
        0x08 => out.extend_from_slice(b"\\b"),
        0x0c => out.extend_from_slice(b"\\f"),
        _ => out.extend_from_slice(&[
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX[(b >> 4) as usize],
            HEX[(b & 0xf) as usize],
        ]),
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
}
