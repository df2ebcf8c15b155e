//! Tests of the unquote stage's decoding against the decoder it replaced (kept here as it was,
//! `decode_before`, which wrote through `Vec::push`): the same text and the same [`Layer`] for
//! every input, in every mode, on text made of the bytes escapes are made of.

use super::{Layer, decode};
use crate::args::simd::either_stop;
use crate::bytes::{append, hex4};

/// The decoder as it was before the buffer written by index (the reference).
pub(super) fn decode_before(
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
        let i = either_stop(text, p, quote, b'\\');
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
        // The text between two escapes: a few bytes, mostly.
        append(out, text, run, i);
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

/// What a decoding gave: the bytes written, whether the string was left open, and where a
/// lone surrogate and a raw quote were.
type Outcome = Option<(Vec<u8>, bool, Option<usize>, Option<usize>)>;

fn outcome(layer: Option<Layer>, out: &[u8]) -> Outcome {
    layer.map(|l| (out.to_vec(), l.unterminated, l.lone_surrogate, l.raw_quote))
}

/// A small deterministic generator (xorshift), so that a failure reproduces.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// Random texts of escape pieces (every escape, cut ones, lone and paired surrogate halves,
/// raw quotes of both kinds, runs of backslashes, plain runs of every length around the scan's
/// 16-byte blocks), with and without a quote around them, decoded in every mode.
#[test]
fn decode_gives_what_it_gave_before() {
    let pieces: [&[u8]; 26] = [
        b"\\\"",
        b"\\\\",
        b"\\/",
        b"\\b",
        b"\\f",
        b"\\n",
        b"\\r",
        b"\\t",
        b"\\'",
        b"\\u0041",
        b"\\u00e9",
        b"\\u20AC",
        b"\\ud83d\\ude00",
        b"\\ud800",
        b"\\udc00",
        b"\\uD800\\u0041",
        b"\\u12",
        b"\\x",
        b"\\",
        b"\"",
        b"'",
        b"a",
        b"xyz",
        b"0123456789abcdef",
        b"{\\\"k\\\":1}",
        "\u{e9}\u{1F600}".as_bytes(),
    ];
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let (mut new, mut old) = (Vec::new(), Vec::new());
    for round in 0..20_000 {
        let mut text = Vec::new();
        let open = [&b"\""[..], b"'", b""][round % 3];
        text.extend_from_slice(open);
        for _ in 0..next(&mut seed) % 12 {
            let piece = pieces[next(&mut seed) as usize % pieces.len()];
            text.extend_from_slice(piece);
            if next(&mut seed).is_multiple_of(4) {
                let plain = next(&mut seed) as usize % 40;
                text.extend(std::iter::repeat_n(b'p', plain));
            }
        }
        match next(&mut seed) % 4 {
            0 => text.extend_from_slice(open),
            1 => text.extend_from_slice(b"\"  \n"),
            _ => {}
        }
        if text.is_empty() {
            continue;
        }
        for mode in 0..8 {
            let (bare, strict, keep_lone) = (mode & 1 != 0, mode & 2 != 0, mode & 4 != 0);
            if !bare && !matches!(text[0], b'"' | b'\'') {
                continue;
            }
            let a = decode(&text, bare, strict, keep_lone, &mut new);
            let b = decode_before(&text, bare, strict, keep_lone, &mut old);
            assert_eq!(
                outcome(a, &new),
                outcome(b, &old),
                "{:?} bare {bare} strict {strict} keep_lone {keep_lone}",
                String::from_utf8_lossy(&text)
            );
        }
    }
}

/// Layers written by serde_json over text holding every escape (and non-ASCII, control
/// characters, long plain runs): each decodes, strictly, to the text it was written from.
#[test]
fn nested_encodings_decode_layer_by_layer() {
    let long = "p".repeat(70);
    let inner = format!(
        "{{\"a\":\"q\\\"\\\\/\\b\\f\\n\\r\\t\\u0001 \u{e9}\u{1F600} {long}\",\"b\":[1,\"\\u00e9\"]}}"
    );
    serde_json::from_str::<serde_json::Value>(&inner).expect("valid JSON");
    let mut layers = vec![inner];
    for _ in 0..4 {
        let next = serde_json::to_string(layers.last().unwrap()).unwrap();
        layers.push(next);
    }
    let mut out = Vec::new();
    for pair in layers.windows(2) {
        let (decoded, encoded) = (&pair[0], &pair[1]);
        for keep_lone in [false, true] {
            let layer = decode(encoded.as_bytes(), false, true, keep_lone, &mut out).unwrap();
            assert_eq!(String::from_utf8_lossy(&out), *decoded);
            assert!(!layer.unterminated && layer.raw_quote.is_none());
        }
        // The same without the outer quotes, as escaped JSON written bare.
        let bare = &encoded[1..encoded.len() - 1];
        decode(bare.as_bytes(), true, false, false, &mut out).unwrap();
        assert_eq!(String::from_utf8_lossy(&out), *decoded);
    }
}
