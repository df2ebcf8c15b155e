//! Stage 4's first step: finding the JSON in text that has more around it (code fences,
//! prose, a JSONP wrapper). Runs only when repairing.

use crate::repair::{Repair, RepairKind};

/// Where the JSON is in a text.
pub(crate) struct Located {
    pub start: usize,
    pub end: usize,
    /// The value is wrapped in `callback(...)`; the parser drops the closing `)`.
    pub jsonp: bool,
}

/// Finds the JSON in `text[from..]` (`from` is at its first non-whitespace byte), recording
/// what is left out.
pub(crate) fn locate(text: &[u8], from: usize, repairs: &mut Vec<Repair>) -> Located {
    let whole = Located {
        start: from,
        end: text.len(),
        jsonp: false,
    };
    let rest = &text[from..];
    if let Some(fence) = memchr::memmem::find(rest, b"```").map(|i| from + i) {
        // A fence counts when no JSON opens before it: "```json\n{...}\n```".
        if memchr::memchr2(b'{', b'[', &text[from..fence]).is_none() {
            return fenced(text, from, fence, repairs);
        }
    }
    let first = rest[0];
    if starts_json(rest) {
        return whole;
    }
    if first.is_ascii_alphabetic() || first == b'_' || first == b'$' {
        let word_len = rest
            .iter()
            .position(|&b| !(b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b == b'.'))
            .unwrap_or(rest.len());
        let word = &rest[..word_len];
        if matches!(
            word,
            b"true"
                | b"false"
                | b"null"
                | b"True"
                | b"False"
                | b"None"
                | b"NaN"
                | b"Infinity"
                | b"undefined"
        ) {
            return whole;
        }
        let after = rest[word_len..].trim_ascii_start();
        if after.first() == Some(&b'(') {
            let open = text.len() - after.len();
            repairs.push(Repair::at(RepairKind::Jsonp, from));
            return Located {
                start: open + 1,
                end: text.len(),
                jsonp: true,
            };
        }
    }
    match json_start(text, from) {
        Some(start) => {
            let mut repair = Repair::at(RepairKind::Prose, from);
            let prose = String::from_utf8_lossy(&text[from..start]);
            repair.text = Some(crate::record::cut(prose.trim(), 100));
            repairs.push(repair);
            Located {
                start,
                end: text.len(),
                jsonp: false,
            }
        }
        None => whole,
    }
}

/// Text from `from` with a code fence at `fence`: the JSON is the fence's body.
fn fenced(text: &[u8], from: usize, fence: usize, repairs: &mut Vec<Repair>) -> Located {
    if fence > from {
        let mut repair = Repair::at(RepairKind::Prose, from);
        let prose = String::from_utf8_lossy(&text[from..fence]);
        repair.text = Some(crate::record::cut(prose.trim(), 100));
        repairs.push(repair);
    }
    repairs.push(Repair::at(RepairKind::CodeFence, fence));
    let after_ticks = fence + 3;
    // The info string (`json`) runs to the end of the fence's line.
    let start = match memchr::memchr(b'\n', &text[after_ticks..]) {
        Some(i) => after_ticks + i + 1,
        None => {
            let info = text[after_ticks..]
                .iter()
                .take_while(|b| b.is_ascii_alphanumeric())
                .count();
            after_ticks + info
        }
    };
    let end = match memchr::memmem::find(&text[start..], b"```") {
        Some(i) => {
            let close = start + i;
            let tail = &text[close + 3..];
            if !tail.trim_ascii().is_empty() {
                let mut repair = Repair::at(RepairKind::Prose, close + 3);
                let prose = String::from_utf8_lossy(tail);
                repair.text = Some(crate::record::cut(prose.trim(), 100));
                repairs.push(repair);
            }
            close
        }
        None => text.len(),
    };
    let body = &text[start..end];
    let skip = body.len() - body.trim_ascii_start().len();
    Located {
        start: (start + skip).min(end),
        end,
        jsonp: false,
    }
}

/// Whether `s` opens like a JSON value (or something repair reads as one).
fn starts_json(s: &[u8]) -> bool {
    matches!(
        s,
        [
            b'{' | b'[' | b'"' | b'\'' | b'-' | b'+' | b'0'..=b'9' | b'#',
            ..
        ] | [b'/', b'/' | b'*', ..]
            | [b'.', b'0'..=b'9', ..]
            | [0xE2, 0x80, 0x98 | 0x99 | 0x9C | 0x9D, ..]
    )
}

/// The first `{` or `[` after `from` that opens something JSON-like: prose such as
/// "see [docs]" is passed over.
fn json_start(text: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    while let Some(i) = memchr::memchr2(b'{', b'[', &text[at..]) {
        let open = at + i;
        let next = text[open + 1..].trim_ascii_start();
        let plausible = match (text[open], next.first()) {
            (_, None) => true,
            (b'{', Some(&b)) => {
                matches!(b, b'"' | b'\'' | b'}' | b'\\') || b.is_ascii_alphabetic() || b == b'_'
            }
            (_, Some(&b)) => {
                matches!(b, b'"' | b'\'' | b'{' | b'[' | b']' | b'-' | b'\\')
                    || b.is_ascii_digit()
                    || next.starts_with(b"true")
                    || next.starts_with(b"false")
                    || next.starts_with(b"null")
            }
        };
        if plausible {
            return Some(open);
        }
        at = open + 1;
    }
    None
}
