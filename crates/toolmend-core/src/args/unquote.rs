//! The unquote stage: decoding the JSON string literals that hold JSON text
//! (`"{\"a\":1}"`, `'{"a": 1}'`, `{\"a\":1}`), layer after layer. Each decoded layer may hold
//! its own framing (a code fence, prose), so the JSON is located in each before it is decoded.

use std::ops::Range;

use crate::args::locate::locate;
use crate::args::options::{Options, Target};
use crate::args::simd::either_stop;
use crate::bytes::hex4;
use crate::error::{Code, Error};
use crate::repair::{Repair, RepairKind};

/// Which text holds what the unquote stage found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Text {
    /// The input as given.
    Input,
    /// The innermost layer decoded (the first of the layer buffers).
    Inner,
    /// The layer the innermost was decoded from (the second buffer): where a code fence's tail
    /// is when the fence held a string written with escaped quotes.
    Outer,
}

/// Where the JSON to parse is once the string layers are decoded.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Unquoted {
    /// The text that holds it, and its range there.
    pub text: Text,
    pub start: usize,
    pub end: usize,
    /// The value is wrapped in `callback(...)`: the parser drops the closing `)`.
    pub jsonp: bool,
    /// Where the text after a closing code fence starts, when there is any (it may hold more
    /// values): which text, and the offset there.
    pub tail: Option<(Text, usize)>,
    /// How many string layers were decoded.
    pub layers: u32,
    /// Whether the rest reads strictly: `--strict`, or a valid JSON string given to `repair`,
    /// which is a value as it stands.
    pub strict: bool,
}

impl Unquoted {
    /// Locates the JSON in `text` (this one's text) from `start`, recording what is left out.
    fn locate(&mut self, text: &[u8], repairs: &mut Vec<Repair>) {
        let found = locate(&text[..self.end], self.start, repairs);
        let body = text[found.start..found.end].trim_ascii_end();
        (self.start, self.end) = (found.start, found.start + body.len());
        self.jsonp = found.jsonp;
        self.tail = found.tail.map(|at| (self.text, at));
    }

    /// Goes into the layer just decoded into `next`, which becomes the first buffer (`cur`).
    fn enter(&mut self, cur: &mut Vec<u8>, next: &mut Vec<u8>) {
        let decoded = next.trim_ascii();
        let lead = next.len() - next.trim_ascii_start().len();
        (self.start, self.end) = (lead, lead + decoded.len());
        std::mem::swap(cur, next);
        self.text = Text::Inner;
        if let Some((Text::Inner, at)) = self.tail {
            // The text the layer was decoded from is the second buffer now.
            self.tail = Some((Text::Outer, at));
        }
        self.layers += 1;
    }
}

/// Decodes the string layers of `input[span]` into `layers` (the two buffers swap roles each
/// layer, the innermost ending in the first), locating the JSON in each layer unless strict,
/// and records each layer's repairs and the `unquote` repair. `is_json` says whether text is
/// one JSON value as it stands (a strict parse, which belongs to a later stage).
pub(crate) fn unquote(
    input: &[u8],
    span: Range<usize>,
    options: &Options,
    keep_lone: bool,
    is_json: &dyn Fn(&[u8]) -> bool,
    repairs: &mut Vec<Repair>,
    layers: &mut [Vec<u8>; 2],
) -> Result<Unquoted, Error> {
    let [cur, next] = layers;
    // A valid JSON string given to `repair` is a value as it stands: it is unquoted only
    // when its layers, each a valid literal, end in a whole object or array. Neither the
    // text it holds (`"{}` in `"\"{}"`, a fenced block) nor the input around it is mended.
    let mut checked =
        if options.target == Target::Any && !options.strict && input[span.start] == b'"' {
            decode(&input[span.clone()], false, true, keep_lone, next)
        } else {
            None
        };
    let valid_string = checked.is_some();
    let strict = options.strict || valid_string;
    let mut found = Unquoted {
        text: Text::Input,
        start: span.start,
        end: span.end,
        jsonp: false,
        tail: None,
        layers: 0,
        strict,
    };
    let mut quoted = 0u32;
    // Where the input's own JSON was found, to go back to if the layers hold no JSON.
    let mut outer = None;
    // Whether the layers ended in a string written with escaped quotes (`\"hello world\"`),
    // whose value is the string.
    let escaped_string = loop {
        let text: &[u8] = if found.text == Text::Input {
            input
        } else {
            cur
        };
        if !strict {
            found.locate(text, repairs);
        }
        outer.get_or_insert((found, repairs.len()));
        let body = &text[found.start..found.end];
        if body.is_empty() {
            break false;
        }
        if !strict && let Some(inner) = doubled_quotes(body, is_json) {
            // `{""a"": 1}`: JSON as a CSV cell holds it. Undoubled, the text is read again
            // (it may hold its own layers or framing).
            undouble(&body[inner.clone()], next);
            repairs.push(Repair::at(RepairKind::DoubledQuotes, found.start));
            found.enter(cur, next);
            continue;
        }
        let bare = is_bare_escaped(body);
        if bare && valid_string {
            // `{\"a\":1}` held by a valid string is text, not an object.
            break false;
        }
        if !matches!(body[0], b'"' | b'\'') && !bare {
            break false;
        }
        // The first layer of a valid string was decoded by the check above, into `next`,
        // the same way (strict, nothing located before it): not decoded again.
        let layer = match checked.take() {
            Some(layer) if !bare => Some(layer),
            _ => decode(body, bare, strict, keep_lone, next),
        };
        let Some(layer) = layer else {
            break false;
        };
        let decoded = next.trim_ascii();
        if !holds_json(decoded, options, bare, strict, is_json)? {
            break false;
        }
        if found.layers == options.max_depth {
            return Err(Error::whole(
                Code::DepthExceeded,
                format!(
                    "still a JSON string after {} unquote layers (the max_depth limit)",
                    options.max_depth
                ),
            ));
        }
        if !bare {
            quoted += 1;
        }
        note_layer(repairs, &layer, body[0], bare, found.start);
        let escaped_string = bare && body[0] == b'\\';
        found.enter(cur, next);
        if escaped_string {
            break true;
        }
    };
    if found.layers > 0
        && !escaped_string
        && !matches!(cur[found.start..found.end].first(), Some(b'{' | b'['))
    {
        // The layers end in a plain string: the value is the string as the input wrote
        // it, not its contents (`"\"hi\""` stays that string).
        let (input_found, input_repairs) = outer.expect("the loop ran once");
        repairs.truncate(input_repairs);
        (found, quoted) = (input_found, 0);
    }
    if quoted > 0 {
        note_unquote(repairs, quoted);
    }
    Ok(found)
}

/// Whether a string layer's `decoded` text holds JSON to unquote into (`Err` for a string of
/// only whitespace where an object is wanted).
fn holds_json(
    decoded: &[u8],
    options: &Options,
    bare: bool,
    strict: bool,
    is_json: &dyn Fn(&[u8]) -> bool,
) -> Result<bool, Error> {
    Ok(match decoded.first() {
        // `repair` takes a string for the JSON it holds only when that is JSON as it
        // stands: `"["` or `"{a:b}"` stay strings (as json_repair and jsonrepair keep
        // them), while `args`, which needs an object, also mends what a string holds.
        Some(b'{' | b'[') if options.target == Target::Any && !bare => is_json(decoded),
        Some(b'{' | b'[' | b'"') => true,
        // For `args`, a string that decodes to code-fenced JSON (with or without
        // prose around the block). `repair` keeps such a string: it is a valid value.
        Some(_) => {
            !strict
                && options.target == Target::Object
                && crate::args::locate::find_fence(decoded).is_some()
        }
        None => {
            if options.target == Target::Object {
                return Err(Error::whole(
                    Code::EmptyInput,
                    "input is a JSON string holding only whitespace",
                ));
            }
            false
        }
    })
}

/// The repairs of one string layer decoded at `lo` (its first byte `first`): unescaped text,
/// single quotes, a missing closing quote, a raw quote, a lone surrogate.
fn note_layer(repairs: &mut Vec<Repair>, layer: &Layer, first: u8, bare: bool, lo: usize) {
    if bare {
        repairs.push(Repair::at(RepairKind::Unescape, lo));
    } else if first == b'\'' {
        repairs.push(Repair::at(RepairKind::SingleQuotes, lo));
    }
    if layer.unterminated {
        repairs.push(Repair::at(RepairKind::UnterminatedString, lo));
    }
    if let Some(at) = layer.raw_quote {
        repairs.push(Repair::at(RepairKind::UnescapedQuote, lo + at));
    }
    if let Some(at) = layer.lone_surrogate {
        repairs.push(Repair::at(RepairKind::LoneSurrogate, lo + at));
    }
}

/// The `unquote` repair for `layers` quoted layers, after what locating the text reported
/// (prose, a code fence, JSONP) and before the rest.
fn note_unquote(repairs: &mut Vec<Repair>, layers: u32) {
    let position = repairs
        .iter()
        .position(|r| {
            r.kind != RepairKind::Prose
                && r.kind != RepairKind::CodeFence
                && r.kind != RepairKind::Jsonp
        })
        .unwrap_or(repairs.len());
    repairs.insert(
        position,
        Repair {
            kind: RepairKind::Unquote,
            offset: None,
            layers: Some(layers),
            text: None,
            path: None,
        },
    );
}

/// Where an error was found, for a message: in the text decoded from `layers` string layers.
pub(crate) fn layer_note(layers: u32) -> String {
    match layers {
        0 => String::new(),
        1 => " (in the text decoded from 1 string layer)".to_owned(),
        n => format!(" (in the text decoded from {n} string layers)"),
    }
}

/// What decoding one layer found besides the text.
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
    let decoded = decode_into(text, bare, strict, keep_lone, out);
    if decoded.is_none() {
        out.clear();
    }
    decoded
}

/// [`decode`], leaving what it wrote so far in `out` when the text is no literal.
fn decode_into(
    text: &[u8],
    bare: bool,
    strict: bool,
    keep_lone: bool,
    out: &mut Vec<u8>,
) -> Option<Layer> {
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
    // What an escape decodes to is never longer than the escape, so the text decoded so far
    // is never longer than the text read (`w <= p`): the buffer is made long enough once (only
    // what the last layer left short of that is zeroed) and written by index, with `SPARE`
    // bytes past the text's length for a short run copied as one block. Escaped JSON has an
    // escape every few bytes: a `Vec::push` or `extend_from_slice` per escape and per run (a
    // capacity check and a length store each) were a third of this function's cost.
    let len = text.len();
    if out.len() < len + SPARE {
        out.resize(len + SPARE, 0);
    }
    let buf = &mut out[..len + SPARE];
    let mut w = 0;
    let mut layer = Layer::default();
    let mut p = usize::from(!bare);
    // Where the text just after the last `\\` escape is.
    let mut backslash_before = None;
    loop {
        // Escapes come in runs (`\\\"` in a second layer): then there is nothing to scan for
        // or copy before the next one.
        let i = if text.get(p) == Some(&b'\\') {
            p
        } else {
            let i = either_stop(text, p, quote, b'\\');
            w = put(buf, w, text, p, i);
            i
        };
        if i == len {
            if !bare {
                if strict {
                    return None;
                }
                layer.unterminated = true;
            }
            break;
        }
        if text[i] == quote {
            // Bare text holding a raw quote is not escaped JSON (but for a string written with
            // escaped quotes, `\"hello"`, where it is the closing one); a literal must end here.
            // `{\"a\": \"say \\"hi\\"\"}`: `\\` then a raw quote is an escaped quote of the
            // inner JSON written one escape short; it stays escaped.
            if bare && !strict && (text.starts_with(b"\\\"") || backslash_before == Some(i)) {
                layer.raw_quote.get_or_insert(i);
                buf[w] = b'"';
                w += 1;
                p = i + 1;
                continue;
            }
            if bare || !text[i + 1..].iter().all(u8::is_ascii_whitespace) {
                return None;
            }
            break;
        }
        let Some(&e) = text.get(i + 1) else {
            if strict {
                return None;
            }
            // A literal cut just after a backslash: half an escape names nothing, so it is
            // left out (the layer is unterminated). Bare text keeps it as written.
            if bare {
                buf[w] = b'\\';
                w += 1;
            }
            layer.unterminated = !bare;
            p = len;
            continue;
        };
        p = i + 2;
        let decoded = match e {
            b'"' | b'/' => e,
            b'\\' => {
                backslash_before = Some(p);
                e
            }
            b'\'' if quote == b'\'' => e,
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                match hex4(text, i + 2) {
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
                                buf[w..w + 6].copy_from_slice(&text[i..i + 6]);
                                w += 6;
                                continue;
                            }
                            None if strict => return None,
                            None => {
                                layer.lone_surrogate.get_or_insert(i);
                                char::REPLACEMENT_CHARACTER
                            }
                        };
                        w += c.encode_utf8(&mut buf[w..]).len();
                    }
                    None if strict => return None,
                    None => {
                        buf[w..w + 2].copy_from_slice(b"\\u");
                        w += 2;
                    }
                }
                continue;
            }
            _ if strict => return None,
            // Not an escape: keep both characters as they were written.
            _ => {
                p = i + 1;
                b'\\'
            }
        };
        buf[w] = decoded;
        w += 1;
    }
    out.truncate(w);
    Some(layer)
}

/// Bytes past the end of [`decode`]'s buffer, so that a short run is copied as one block.
const SPARE: usize = 16;

/// Copies `text[from..to]` to `buf` at `w` and returns where the copy ends. A run of up to
/// [`SPARE`] bytes is copied as one block of that size (the bytes past the run are written
/// over later, or cut off): `w <= from`, and `buf` has `SPARE` bytes more than `text`.
#[inline(always)]
fn put(buf: &mut [u8], w: usize, text: &[u8], from: usize, to: usize) -> usize {
    let n = to - from;
    match text.get(from..from + SPARE) {
        Some(block) if n <= SPARE => buf[w..w + SPARE].copy_from_slice(block),
        _ => buf[w..w + n].copy_from_slice(&text[from..to]),
    }
    w + n
}

/// The range of `text` holding an object or array whose every double quote is doubled, as a CSV
/// cell writes JSON: `{""a"": ""x""}`, or `"{""a"": 1}"` with the cell's own quotes around it.
/// Only text that is not JSON as it stands, whose first member or element opens with `""` and
/// whose every run of quotes has an even length, is taken: `[""]` (valid) and `{"a": ""}` (single
/// quotes) are not. A cell's opening quote and a quote run left odd at the very end (the cell's
/// closing quote, or a pair cut in half) are not part of it. The scans run once per input, and
/// only past that opening.
fn doubled_quotes(text: &[u8], is_json: &dyn Fn(&[u8]) -> bool) -> Option<Range<usize>> {
    let start = match text.first() {
        Some(b'"') if matches!(text[1..].trim_ascii_start().first(), Some(b'{' | b'[')) => 1,
        Some(b'{' | b'[') => 0,
        _ => return None,
    };
    let body = text[start..].trim_ascii_start();
    let first = body[1..].trim_ascii_start();
    if !first.starts_with(b"\"\"") {
        return None;
    }
    // Two quotes alone before a colon, comma or closer are an empty string as written
    // (`{"":1}{}`, `["",1][]`): doubled, an empty string is four (`{"""":1}`).
    if first.get(2) != Some(&b'"')
        && matches!(
            first[2..].trim_ascii_start().first(),
            Some(b':' | b',' | b']' | b'}')
        )
    {
        return None;
    }
    let mut end = text.len();
    let mut quotes = memchr::memchr_iter(b'"', &text[start..]).peekable();
    while let Some(at) = quotes.next() {
        let mut run = 1;
        while quotes.next_if_eq(&(at + run)).is_some() {
            run += 1;
        }
        if run % 2 == 1 {
            if start + at + run != text.len() {
                return None;
            }
            end -= 1;
        }
    }
    (!is_json(text)).then_some(start..end)
}

/// Writes `text` into `out` with each pair of double quotes made one.
fn undouble(text: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.reserve(text.len());
    let mut run = 0;
    for at in memchr::memchr_iter(b'"', text) {
        // Every run of quotes is even: keep the first of each pair.
        if at >= run {
            out.extend_from_slice(&text[run..=at]);
            run = at + 2;
        }
    }
    out.extend_from_slice(&text[run.min(text.len())..]);
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
#[path = "unquote_reference.rs"]
mod reference;

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

    #[test]
    fn doubled_quotes_are_found_only_where_every_quote_is_doubled() {
        let not_json = |_: &[u8]| false;
        let found = |text: &str| doubled_quotes(text.as_bytes(), &not_json);
        assert_eq!(found(r#"{""a"": ""x""}"#), Some(0..14));
        // The cell's own quotes are left out, and so is a closing one cut off.
        assert_eq!(found(r#""{""a"": 1}""#), Some(1..11));
        assert_eq!(found(r#""[""a""]"#), Some(1..8));
        // A pair cut in half at the end.
        assert_eq!(found(r#"{""a"": ""x"#), Some(0..11));
        // A single quote inside, or no doubled quote opening the first member: not a cell.
        assert_eq!(found(r#"{""a"": "b"}"#), None);
        assert_eq!(found(r#"{"a": ""}"#), None);
        assert_eq!(found(r#"{1: ""a""}"#), None);
        assert_eq!(found(r#"""{}"#), None);
        // An empty key or string as written, in text that is not one JSON value (values one
        // after another): not doubled. Doubled, an empty string is four quotes.
        assert_eq!(found(r#"{"":null}{}"#), None);
        assert_eq!(found(r#"{"" : 1} {"":2}"#), None);
        assert_eq!(found(r#"["",1][]"#), None);
        assert_eq!(found(r#"[""]]"#), None);
        assert_eq!(found(r#"{"""":1}"#), Some(0..8));
        assert_eq!(found(r#"{"""": ""x""}"#), Some(0..13));
        // Valid JSON as it stands is never undoubled.
        assert_eq!(doubled_quotes(br#"[""]"#, &|_: &[u8]| true), None);
        let mut out = Vec::new();
        undouble(br#"{""a"": """", ""b"": ""\""x\""""}"#, &mut out);
        assert_eq!(out, br#"{"a": "", "b": "\"x\""}"#);
    }
}
