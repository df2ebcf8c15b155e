//! Finding the JSON in text that has more around it (code fences, prose, a JSONP wrapper):
//! the unquote stage runs it on the input and on each string layer it decodes. Runs only when
//! repairing.

use crate::repair::{Repair, RepairKind};

/// Where the JSON is in a text.
pub(crate) struct Located {
    pub start: usize,
    pub end: usize,
    /// The value is wrapped in `callback(...)`; the parser drops the closing `)`.
    pub jsonp: bool,
    /// Where text after a closing code fence starts, when there is any: it may hold more
    /// values (a second fenced block), which the parser reads after the first.
    pub tail: Option<usize>,
}

/// Whether `text` (past trailing whitespace) is one double-quoted string literal: its closing
/// quote, found past escapes, is its last byte.
fn is_one_string_literal(text: &[u8]) -> bool {
    let text = text.trim_ascii_end();
    if text.len() < 2 || text[0] != b'"' {
        return false;
    }
    let mut p = 1;
    while let Some(i) = text.get(p..).and_then(|t| memchr::memchr2(b'"', b'\\', t)) {
        p += i;
        if text[p] == b'\\' {
            p += 2;
            continue;
        }
        return p == text.len() - 1;
    }
    false
}

/// Finds the JSON in `text[from..]` (`from` is at its first non-whitespace byte), recording
/// what is left out.
pub(crate) fn locate(text: &[u8], from: usize, repairs: &mut Vec<Repair>) -> Located {
    // Comments before the JSON are left out first, so `/* c */ callback({...})` and
    // `// note⏎```json ...` are found like the same text without them.
    let mut from = from;
    let mut comments = Vec::new();
    loop {
        let rest = &text[from..];
        let end = if rest.starts_with(b"/*") {
            memchr::memmem::find(&rest[2..], b"*/").map(|i| from + 2 + i + 2)
        } else if rest.starts_with(b"//") || rest.starts_with(b"#") {
            memchr::memchr(b'\n', rest).map(|i| from + i + 1)
        } else {
            None
        };
        let Some(end) = end else { break };
        let next = end + (text[end..].len() - text[end..].trim_ascii_start().len());
        if next >= text.len() {
            break;
        }
        comments.push(Repair::at(RepairKind::Comment, from));
        from = next;
    }
    repairs.extend(comments);
    let whole = Located {
        start: from,
        end: text.len(),
        jsonp: false,
        tail: None,
    };
    let rest = &text[from..];
    if matches!(rest.first(), Some(b'{' | b'[')) && !starts_with_marker(rest) {
        // The common case, decided without a scan: JSON opens before any fence could, and
        // no list marker or prose comes first.
        return whole;
    }
    let fence = find_fence(rest).map(|i| from + i);
    if rest.first() == Some(&b'"') && fence.is_none() {
        // A string with no fence in it is read as it is, literal or not.
        return whole;
    }
    if is_one_string_literal(rest) {
        // `"see ```json {…}``` here"`: fences and prose inside a string are its text; the
        // unquote stage decodes it, and looks for them in what it decodes to.
        return whole;
    }
    if let Some(fence) = fence {
        // A fence counts when no JSON opens before it: "```json\n{...}\n```".
        if memchr::memchr2(b'{', b'[', &text[from..fence]).is_none() {
            return fenced(text, from, fence, repairs);
        }
    }
    if let Some(open) = list_marker(rest) {
        // `- {...}`, `1. [...]`: a markdown list item holding the JSON.
        let mut repair = Repair::at(RepairKind::Prose, from);
        repair.text = Some(crate::bytes::lossy(rest[..open].trim_ascii()).into_owned());
        repairs.push(repair);
        return Located {
            start: from + open,
            ..whole
        };
    }
    let first = rest[0];
    if starts_json(rest) && !starts_with_marker(rest) {
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
        // `ObjectId()`: a call around nothing is the parser's (a constructor: null).
        let empty_call = after.strip_prefix(b"(").is_some_and(|inner| {
            let inner = inner.trim_ascii();
            let inner = inner.strip_suffix(b";").unwrap_or(inner).trim_ascii_end();
            inner == b")"
        });
        if after.first() == Some(&b'(') && !empty_call {
            let open = text.len() - after.len();
            repairs.push(Repair::at(RepairKind::Jsonp, from));
            // With its closing `)` (and `;`) at the end, the call's argument is the text
            // between; otherwise the parser drops a `)` where it finds one.
            let trimmed = text[open + 1..].trim_ascii_end();
            let trimmed = trimmed
                .strip_suffix(b";")
                .unwrap_or(trimmed)
                .trim_ascii_end();
            if let Some(inner) = trimmed.strip_suffix(b")") {
                return Located {
                    start: open + 1 + (inner.len() - inner.trim_ascii_start().len()),
                    end: open + 1 + inner.len(),
                    jsonp: false,
                    tail: None,
                };
            }
            return Located {
                start: open + 1,
                end: text.len(),
                jsonp: true,
                tail: None,
            };
        }
    }
    match json_start(text, from) {
        Some(start) => {
            let mut repair = Repair::at(RepairKind::Prose, from);
            let prose = crate::bytes::lossy(&text[from..start]);
            repair.text = Some(crate::bytes::cut(prose.trim(), 100));
            repairs.push(repair);
            Located {
                start,
                end: text.len(),
                jsonp: false,
                tail: None,
            }
        }
        None => whole,
    }
}

/// The end (exclusive) of the JSON array or object starting at `start`, found by matching
/// brackets outside double-quoted strings; `None` when the text ends first (the value was cut
/// off). Shared by the parser and the call decoders.
pub(crate) fn json_extent(bytes: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut i = start;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
        } else {
            match b {
                b'"' => in_string = true,
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return Some(i + 1);
                    }
                }
                _ => {}
            }
        }
        i += 1;
    }
    None
}

/// Where the object or array starts after a list marker (`-`, `*`, `+`, `1.`, `1)`) and
/// spaces at the start of `text`, if it starts with one.
fn list_marker(text: &[u8]) -> Option<usize> {
    let marker = match text.first()? {
        b'-' | b'*' | b'+' => 1,
        b'0'..=b'9' => {
            let digits = text
                .iter()
                .take(4)
                .take_while(|b| b.is_ascii_digit())
                .count();
            match text.get(digits) {
                Some(b'.' | b')') => digits + 1,
                _ => return None,
            }
        }
        _ => return None,
    };
    let spaces = text[marker..]
        .iter()
        .take_while(|&&b| b == b' ' || b == b'\t')
        .count();
    let open = marker + spaces;
    (spaces > 0 && matches!(text.get(open), Some(b'{' | b'['))).then_some(open)
}

/// Text from `from` with a code fence at `fence`: the JSON is the fence's body.
fn fenced(text: &[u8], from: usize, fence: usize, repairs: &mut Vec<Repair>) -> Located {
    if fence > from {
        let mut repair = Repair::at(RepairKind::Prose, from);
        let prose = crate::bytes::lossy(&text[from..fence]);
        repair.text = Some(crate::bytes::cut(prose.trim(), 100));
        repairs.push(repair);
    }
    repairs.push(Repair::at(RepairKind::CodeFence, fence));
    // "````": a longer run of backticks opens the fence too.
    let after_ticks = fence + text[fence..].iter().take_while(|&&b| b == b'`').count();
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
    let (end, tail) = match closing_fence(text, start) {
        Some(close) => {
            let after = close + 3;
            let tail = (!text[after..].trim_ascii().is_empty()).then_some(after);
            (close, tail)
        }
        None => (text.len(), None),
    };
    let body = &text[start..end];
    let skip = body.len() - body.trim_ascii_start().len();
    Located {
        start: (start + skip).min(end),
        end,
        jsonp: false,
        tail,
    }
}

/// The fence that closes a block whose body starts at `start`: the first ``` alone on its line
/// (a fence inside a string, "```bash" opening an example, or "```\"}" is not one), else the
/// last ``` in the text (a fence on one line: "```json {...} ```").
fn closing_fence(text: &[u8], start: usize) -> Option<usize> {
    let mut last = None;
    // The start of the line the candidate is on, found incrementally so many fences on one
    // long line stay linear. A body starts at a line start unless the fence is on one line.
    let mut line_start = if text[..start].ends_with(b"\n") {
        start
    } else {
        usize::MAX
    };
    let mut scanned = start;
    for at in fences(text, start) {
        if last.is_some_and(|l| at < l + 3) {
            continue; // inside a longer run of backticks
        }
        last = Some(at);
        if let Some(n) = memchr::memrchr(b'\n', &text[scanned..at]) {
            line_start = scanned + n + 1;
        }
        scanned = at;
        // Indentation and trailing spaces are bounded, so each candidate costs O(1).
        let indented = line_start != usize::MAX
            && at - line_start <= 16
            && text[line_start..at]
                .iter()
                .all(|&b| b == b' ' || b == b'\t');
        if !indented {
            continue;
        }
        let after = &text[at..];
        let run = after.iter().take(16).take_while(|&&b| b == b'`').count();
        let rest = &after[run..(run + 16).min(after.len())];
        let alone = match rest.iter().position(|&b| b == b'\n') {
            Some(n) => rest[..n].trim_ascii().is_empty(),
            None => rest.len() < 16 && rest.trim_ascii().is_empty(),
        };
        if alone {
            return Some(at);
        }
    }
    last
}

/// Where each run of three backticks from `from` starts, left to right and not overlapping
/// (as `memmem::find_iter` finds them): a backtick found by memchr, then the two bytes after
/// it, without a searcher built per call (see [`find_fence`]).
fn fences(text: &[u8], from: usize) -> impl Iterator<Item = usize> + '_ {
    let mut next = from;
    std::iter::from_fn(move || {
        while let Some(i) = memchr::memchr(b'`', text.get(next..)?) {
            let at = next + i;
            if text[at..].starts_with(b"```") {
                next = at + 3;
                return Some(at);
            }
            next = at + 1;
        }
        next = text.len();
        None
    })
}

/// `[TOOL_CALLS]`, `[ANSWER]`: a bracketed marker in capitals before the JSON, not an array.
fn starts_with_marker(s: &[u8]) -> bool {
    let Some(inner) = s.strip_prefix(b"[") else {
        return false;
    };
    let len = inner
        .iter()
        .take_while(|&&b| b.is_ascii_uppercase() || b == b'_')
        .count();
    len >= 2 && inner.get(len) == Some(&b']')
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
            | [b'(', b'0'..=b'9' | b'"' | b'\'' | b'[' | b'{' | b'-', ..]
            | [0xE2, 0x80, 0x98 | 0x99 | 0x9C | 0x9D, ..]
    )
}

/// The first `{` or `[` after `from` that opens something JSON-like: prose such as
/// "see \[docs\]" is passed over, and one that opens clearly (`{"`, `[1`) is preferred to an
/// earlier one that would need an unquoted key ("the {braces} below: {\"a\": 1}").
fn json_start(text: &[u8], from: usize) -> Option<usize> {
    let mut weak = None;
    let mut at = from;
    while let Some(i) = memchr::memchr2(b'{', b'[', &text[at..]) {
        let open = at + i;
        match opening_strength(text, open) {
            Strength::Clear => return Some(open),
            Strength::Weak if weak.is_none() => weak = Some(open),
            _ => {}
        }
        at = open + 1;
    }
    weak
}

/// The first `{` or `[` at or after `from` that clearly opens JSON: where the parser looks for
/// more values in the text after the first.
pub(crate) fn next_clear_json_start(text: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    while let Some(i) = memchr::memchr2(b'{', b'[', &text[at..]) {
        let open = at + i;
        if opening_strength(text, open) == Strength::Clear {
            return Some(open);
        }
        at = open + 1;
    }
    None
}

#[derive(PartialEq, Eq)]
enum Strength {
    /// Not JSON: "see \[docs\]".
    None,
    /// JSON only after repair: `{name: 1}`, or an opening bracket at the very end.
    Weak,
    /// `{"`, `{'`, `{}`, `[1`, `["`, `[{`, `[true`...
    Clear,
}

fn opening_strength(text: &[u8], open: usize) -> Strength {
    let next = text[open + 1..].trim_ascii_start();
    let clear = match (text[open], next.first()) {
        (_, None) => return Strength::Weak,
        (b'{', Some(&b)) => {
            if matches!(b, b'"' | b'\'' | b'}' | b'\\') {
                true
            } else if b.is_ascii_alphabetic() || b == b'_' {
                return Strength::Weak;
            } else {
                false
            }
        }
        (_, Some(&b)) => {
            matches!(b, b'"' | b'\'' | b'{' | b'[' | b']' | b'-' | b'\\')
                || b.is_ascii_digit()
                || next.starts_with(b"true")
                || next.starts_with(b"false")
                || next.starts_with(b"null")
        }
    };
    if clear {
        Strength::Clear
    } else {
        Strength::None
    }
}

/// Where the first code fence (three backticks) in `text` starts: a backtick found by memchr,
/// then the two bytes after it. Backticks are rare in JSON, and `memmem::find` built a searcher
/// on every call (a string layer of each encoded line was searched, 12% of the instructions of
/// `args` on encoded lines).
pub(crate) fn find_fence(text: &[u8]) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = memchr::memchr(b'`', &text[from..]) {
        let at = from + i;
        if text[at..].starts_with(b"```") {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::find_fence;

    /// The first fence, as `memmem::find` finds it: runs of one, two, three and more
    /// backticks, at the start, the end and across each other.
    #[test]
    fn find_fence_finds_the_first_three_backticks() {
        let texts: [&[u8]; 10] = [
            b"",
            b"`",
            b"``",
            b"```",
            b"a`b``c```d",
            b"````",
            b"`` ```",
            b"x`\n```json",
            b"no fence at all",
            b"``x``x``",
        ];
        for text in texts {
            assert_eq!(
                find_fence(text),
                memchr::memmem::find(text, b"```"),
                "{text:?}"
            );
        }
    }
}
