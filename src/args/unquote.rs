//! Stage 2: decoding a JSON string literal that holds JSON text (`"{\"a\":1}"`).

/// What decoding one layer found besides the text.
use crate::bytes::{find_any, hex4};

#[derive(Debug, Default)]
pub(crate) struct Layer {
    /// The literal had no closing quote (repair mode only).
    pub unterminated: bool,
    /// Offset of the first `\u` escape naming half a surrogate pair, when it was written as
    /// U+FFFD (`keep_lone` off); kept as the escape it was, it is no repair.
    pub lone_surrogate: Option<usize>,
    /// Offset of the first raw quote kept in text written with escaped quotes (`\"hello"`,
    /// `{\"a\": \"\\"x\\"\"}`; repair mode only).
    pub raw_quote: Option<usize>,
}

/// Decodes `text` into `out` if all of it is one JSON string literal (or, with `bare`, the
/// inside of one: `{\"a\":1}` written without its outer quotes). Returns `None` when it is not,
/// so the caller parses `text` as it is; under `strict` anything short of a valid literal is not.
///
/// A `\u` escape naming half a surrogate pair (`"\ud800"`, valid JSON that `JSON.parse` reads)
/// is written out as the same escape with `keep_lone`, so the text decoded still means what the
/// literal meant; without it, as U+FFFD (a repair, refused under `strict`).
pub(crate) fn decode(
    text: &[u8],
    bare: bool,
    strict: bool,
    keep_lone: bool,
    out: &mut Vec<u8>,
) -> Option<Layer> {
    out.clear();
    // Raw control characters are not allowed inside a JSON string.
    if strict && !bare && text.trim_ascii_end()[1..].iter().any(|&b| b < 0x20) {
        return None;
    }
    // `'{"a": 1}'` (a Python or JavaScript literal) is decoded the same way when repairing.
    let quote = if !bare && text[0] == b'\'' {
        if strict {
            return None;
        }
        b'\''
    } else {
        b'"'
    };
    let mut layer = Layer::default();
    out.reserve(text.len());
    let mut p = usize::from(!bare);
    let mut run = p;
    // Where the text just after the last `\\` escape is.
    let mut backslash_before = None;
    loop {
        // Escaped JSON has an escape every few bytes: an inlined word-at-a-time scan beats a
        // memchr call per run.
        let i = find_any(text, p, [quote, b'\\', quote], false);
        if i == text.len() {
            if !bare {
                if strict {
                    return None;
                }
                layer.unterminated = true;
            }
            out.extend_from_slice(&text[run..]);
            break;
        }
        if text[i] == quote {
            // Bare text holding a raw quote is not escaped JSON (but for a string written with
            // escaped quotes, `\"hello"`, where it is the closing one); a literal must end here.
            if bare && !strict && text.starts_with(b"\\\"") {
                layer.raw_quote.get_or_insert(i);
                out.extend_from_slice(&text[run..=i]);
                p = i + 1;
                run = p;
                continue;
            }
            // `{\"a\": \"say \\"hi\\"\"}`: `\\` then a raw quote is an escaped quote of the
            // inner JSON written one escape short; it stays escaped.
            if bare && !strict && backslash_before == Some(i) {
                layer.raw_quote.get_or_insert(i);
                out.push(b'"');
                p = i + 1;
                run = p;
                continue;
            }
            if bare || !text[i + 1..].iter().all(u8::is_ascii_whitespace) {
                return None;
            }
            out.extend_from_slice(&text[run..i]);
            break;
        }
        out.extend_from_slice(&text[run..i]);
        let Some(&e) = text.get(i + 1) else {
            if strict {
                return None;
            }
            // A literal cut just after a backslash: half an escape names nothing, so it is
            // left out (the layer is unterminated). Bare text keeps it as written.
            if bare {
                out.push(b'\\');
            }
            layer.unterminated = !bare;
            run = text.len();
            p = run;
            continue;
        };
        p = i + 2;
        if e == b'\\' {
            backslash_before = Some(p);
        }
        match e {
            b'"' | b'\\' | b'/' => out.push(e),
            b'\'' if quote == b'\'' => out.push(e),
            b'b' => out.push(0x08),
            b'f' => out.push(0x0c),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'u' => match hex4(text, i + 2) {
                Some(unit) => {
                    p = i + 6;
                    let c = match unit {
                        0xD800..=0xDBFF => {
                            let low = (text.get(p) == Some(&b'\\')
                                && text.get(p + 1) == Some(&b'u'))
                            .then(|| hex4(text, p + 2))
                            .flatten()
                            .filter(|low| (0xDC00..=0xDFFF).contains(low));
                            match low {
                                Some(low) => {
                                    p += 6;
                                    char::from_u32(
                                        0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00),
                                    )
                                }
                                None => None,
                            }
                        }
                        _ => char::from_u32(unit),
                    };
                    let c = match c {
                        Some(c) => c,
                        None if keep_lone => {
                            out.extend_from_slice(&text[i..i + 6]);
                            run = p;
                            continue;
                        }
                        None if strict => return None,
                        None => {
                            layer.lone_surrogate.get_or_insert(i);
                            char::REPLACEMENT_CHARACTER
                        }
                    };
                    let mut utf8 = [0; 4];
                    out.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
                }
                None if strict => return None,
                None => {
                    out.extend_from_slice(b"\\u");
                }
            },
            _ if strict => return None,
            // Not an escape: keep both characters as they were written.
            _ => {
                out.push(b'\\');
                p = i + 1;
            }
        }
        run = p;
    }
    Some(layer)
}

/// Whether `text` is an object, an array or a string written with escaped quotes and no outer
/// quotes: `{\"a\":1}`, `[\"x\"]` or `\"text\"`.
pub(crate) fn is_bare_escaped(text: &[u8]) -> bool {
    if text.starts_with(b"\\\"") {
        return true;
    }
    let Some((&(b'{' | b'['), rest)) = text.split_first() else {
        return false;
    };
    let rest = rest.trim_ascii_start();
    rest.starts_with(b"\\\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(text: &str, bare: bool, strict: bool) -> Option<String> {
        let mut out = Vec::new();
        decode(text.as_bytes(), bare, strict, false, &mut out)
            .map(|_| String::from_utf8(out).unwrap())
    }

    #[test]
    fn decodes_every_escape() {
        assert_eq!(
            dec(r#""a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00""#, false, true).unwrap(),
            "a\"\\/\u{8}\u{c}\n\r\té😀"
        );
    }

    #[test]
    fn a_literal_must_be_all_of_the_text() {
        assert_eq!(dec(r#""a" "b""#, false, true), None);
        assert_eq!(dec(r#""a"  "#, false, true).unwrap(), "a");
    }

    #[test]
    fn strict_rejects_what_repair_keeps() {
        assert_eq!(dec(r#""\ud800""#, false, true), None);
        assert_eq!(dec(r#""\ud800""#, false, false).unwrap(), "\u{fffd}");
        assert_eq!(dec(r#""abc"#, false, true), None);
        assert_eq!(dec(r#""abc"#, false, false).unwrap(), "abc");
        assert_eq!(dec(r#""\x""#, false, false).unwrap(), "\\x");
    }

    #[test]
    fn lone_surrogates_kept_as_escapes() {
        for strict in [true, false] {
            let mut out = Vec::new();
            let layer = decode(
                br#""a\uD800b\udc00\ud800\u0041""#,
                false,
                strict,
                true,
                &mut out,
            );
            assert!(layer.unwrap().lone_surrogate.is_none());
            assert_eq!(out, br#"a\uD800b\udc00\ud800A"#);
        }
    }

    #[test]
    fn bare_escaped_objects() {
        assert!(is_bare_escaped(br#"{\"a\":1}"#));
        assert!(is_bare_escaped(br#"[ \"a\"]"#));
        assert!(!is_bare_escaped(br#"{"a":1}"#));
        assert_eq!(
            dec(r#"{\"a\":\"x\\ny\"}"#, true, true).unwrap(),
            r#"{"a":"x\ny"}"#
        );
    }
}
