//! Small scanning helpers shared by the decoders: JSON extents, markers, names, reasoning.

use std::ops::Range;

/// The end (exclusive) of the JSON array or object starting at `start` (see
/// [`crate::locate::json_extent`]).
pub(crate) fn json_extent(text: &str, start: usize) -> Option<usize> {
    crate::locate::json_extent(text.as_bytes(), start)
}

/// The end of the JSON array or object starting at `start` when it is valid JSON as it stands:
/// call markers and reasoning tags inside its strings are text, not markup.
pub(crate) fn valid_json_end(text: &str, start: usize) -> Option<usize> {
    let end = json_extent(text, start)?;
    serde_json::from_str::<serde::de::IgnoredAny>(&text[start..end]).ok()?;
    Some(end)
}

/// Whether the whole of `text` (but for surrounding whitespace) is one JSON array or object.
pub(crate) fn is_whole_json(text: &str) -> bool {
    let start = skip_ws(text, 0);
    let end = text.trim_ascii_end().len();
    // The bracket scan first: JSON followed by prose is ruled out without a parse.
    text[start..].starts_with(['{', '['])
        && json_extent(text, start) == Some(end)
        && serde_json::from_str::<serde::de::IgnoredAny>(&text[start..end]).is_ok()
}

/// The index of the first byte at or after `i` that is not ASCII whitespace.
pub(crate) fn skip_ws(text: &str, mut i: usize) -> usize {
    let bytes = text.as_bytes();
    while i < bytes.len() && bytes[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// Where `needle` (a short marker) first occurs in `hay`: its first byte found with memchr,
/// then compared. Building a substring searcher per call (`str::find`, `memmem::find`) cost
/// more than the search itself on replies of a few KB: a third of the time `calls` spent.
/// Markers are a few dozen bytes at most, so this stays linear in `hay`.
///
/// While a reply is scanned, a match that starts inside one of its JSON strings is skipped:
/// markers there are text (see [`super::mask`]).
pub(crate) fn find_str(hay: &str, needle: &str) -> Option<usize> {
    let mask = super::mask::InHay::of(hay);
    let (hay, needle) = (hay.as_bytes(), needle.as_bytes());
    let Some(&first) = needle.first() else {
        return Some(0);
    };
    let mut from = 0;
    while let Some(i) = memchr::memchr(first, &hay[from..]) {
        let at = from + i;
        if hay[at..].starts_with(needle) && !mask.as_ref().is_some_and(|m| m.masks(at)) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// [`find_str`] on bytes (the stream scans bytes, and may stop inside a character).
pub(crate) fn find_bytes(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let &first = needle.first()?;
    let mut from = 0;
    while let Some(i) = memchr::memchr(first, &hay[from..]) {
        let at = from + i;
        if hay[at..].starts_with(needle) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// The first of `markers` at or after `from`: `(start, marker length)`.
pub(crate) fn find_any(text: &str, from: usize, markers: &[&str]) -> Option<(usize, usize)> {
    let hay = text.get(from..)?;
    markers
        .iter()
        .filter(|m| !m.is_empty())
        .filter_map(|m| find_str(hay, m).map(|i| (from + i, m.len())))
        .min_by_key(|&(i, len)| (i, usize::MAX - len))
}

/// Whether `b` may be part of a function name (`a-z`, digits, `_`, `-`, `.`, `:`).
pub(crate) fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':')
}

/// The length of the identifier (`[A-Za-z_][A-Za-z0-9_]*`) starting at `i`.
pub(crate) fn ident_len(text: &str, i: usize) -> usize {
    let bytes = text.as_bytes();
    let mut j = i;
    while j < bytes.len()
        && (bytes[j].is_ascii_alphabetic()
            || bytes[j] == b'_'
            || (j > i && bytes[j].is_ascii_digit()))
    {
        j += 1;
    }
    j - i
}

/// A function name as the formats write it, made bare: `functions.get_weather:0` gives
/// `get_weather` and the id `functions.get_weather:0` (an id only when there is a `:N` index).
/// The bare name is [`crate::tools::lookup_key`], the key tools are found by.
pub(crate) fn bare_name(name: &str) -> (String, Option<String>) {
    let trimmed = name.trim();
    let indexed = trimmed
        .rsplit_once(':')
        .is_some_and(|(_, index)| !index.is_empty() && index.bytes().all(|b| b.is_ascii_digit()));
    let id = indexed.then(|| trimmed.to_owned());
    (crate::tools::lookup_key(trimmed).to_owned(), id)
}

/// Pairs of reasoning markers, opening and closing.
pub(crate) const REASONING: &[(&str, &str)] = &[
    ("<think>", "</think>"),
    ("<seed:think>", "</seed:think>"),
    ("[THINK]", "[/THINK]"),
    ("<|START_THINKING|>", "<|END_THINKING|>"),
    ("<|inner_prefix|>", "<|inner_suffix|>"),
    ("<thinking>", "</thinking>"),
];

/// Reasoning found in a reply.
#[derive(Debug, Default)]
pub(crate) struct Reasoning {
    /// The reasoning text of each block.
    pub parts: Vec<Range<usize>>,
    /// What to leave out of the reply's text: each block with its markers.
    pub spans: Vec<Range<usize>>,
}

/// Finds reasoning blocks. A closing marker with no opening one means the reply started in
/// reasoning (the template opened it); an opening marker with no closing one runs to the end.
pub(crate) fn reasoning(text: &str) -> Reasoning {
    let mut found = Reasoning::default();
    // A close before any open: everything before it is reasoning.
    let first_open = REASONING
        .iter()
        .filter_map(|(o, _)| find_str(text, o))
        .min();
    for (_, close) in REASONING {
        if let Some(at) = find_str(text, close)
            && first_open.is_none_or(|o| at < o)
            && !text[..at].trim().is_empty()
        {
            found.parts.push(0..at);
            found.spans.push(0..at + close.len());
            break;
        }
    }
    let mut pos = found.spans.last().map_or(0, |s| s.end);
    while let Some((start, open)) = REASONING
        .iter()
        .filter_map(|(o, c)| find_str(&text[pos..], o).map(|i| (pos + i, (o, c))))
        .min_by_key(|(i, _)| *i)
    {
        let body = start + open.0.len();
        match find_str(&text[body..], open.1) {
            Some(i) => {
                found.parts.push(body..body + i);
                found.spans.push(start..body + i + open.1.len());
                pos = body + i + open.1.len();
            }
            None => {
                found.parts.push(body..text.len());
                found.spans.push(start..text.len());
                break;
            }
        }
    }
    found
}

/// `text` with the bytes of `spans` replaced by spaces, so offsets stay the same.
pub(crate) fn blank(text: &str, spans: &[Range<usize>]) -> String {
    if spans.is_empty() {
        return text.to_owned();
    }
    let mut bytes = text.as_bytes().to_vec();
    for span in spans {
        bytes[span.clone()].fill(b' ');
    }
    // Whole UTF-8 sequences were replaced (spans are at char boundaries), so this is UTF-8.
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Tokens that end a turn or wrap an answer; left out of the text.
const NOISE: &[&str] = &[
    "<|eot_id|>",
    "<|eom_id|>",
    "<|eot|>",
    "<|eom|>",
    "<|end|>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<|im_end|>",
    "<|START_RESPONSE|>",
    "<|END_RESPONSE|>",
    "<｜end▁of▁sentence｜>",
    "</s>",
];

/// The text left when `cut` is removed: the pieces between, trimmed, joined with newlines;
/// `None` when nothing is left.
pub(crate) fn remaining_text(text: &str, cut: &mut [Range<usize>]) -> Option<String> {
    cut.sort_by_key(|r| (r.start, r.end));
    let mut parts = Vec::new();
    let mut pos = 0;
    for span in cut.iter() {
        if span.start > pos {
            parts.push(&text[pos..span.start]);
        }
        pos = pos.max(span.end);
    }
    parts.push(&text[pos.min(text.len())..]);
    let mut out = String::new();
    for part in parts {
        let mut part = part.to_owned();
        for noise in NOISE {
            if part.contains(noise) {
                part = part.replace(noise, "");
            }
        }
        let part = part.trim();
        if !part.is_empty() {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(part);
        }
    }
    (!out.is_empty()).then_some(out)
}

/// Joins reasoning parts like text parts.
pub(crate) fn join_parts<'a>(parts: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let joined: Vec<&str> = parts
        .into_iter()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    (!joined.is_empty()).then(|| joined.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_str_matches_str_find() {
        let hay = "a <<tool <tool_call> é<tool_call>";
        for needle in ["<tool_call>", "<", "é<", "tool", "x", "", "<tool_call>x"] {
            assert_eq!(find_str(hay, needle), hay.find(needle), "{needle:?}");
        }
    }

    #[test]
    fn extents_skip_strings() {
        assert_eq!(json_extent(r#"{"a":"}"}x"#, 0), Some(9));
        assert_eq!(json_extent(r#"[{"a":"\"]"}]"#, 0), Some(13));
        assert_eq!(json_extent(r#"{"a":{"#, 0), None);
    }

    #[test]
    fn names() {
        assert_eq!(
            bare_name("functions.get_weather:0"),
            ("get_weather".into(), Some("functions.get_weather:0".into()))
        );
        assert_eq!(bare_name(" ls "), ("ls".into(), None));
    }

    #[test]
    fn reasoning_blocks() {
        let r = reasoning("a<think>b</think>c");
        assert_eq!((r.parts.len(), r.parts[0].clone()), (1, 8..9));
        let r = reasoning("plan</think>go");
        assert_eq!((r.parts.len(), r.parts[0].clone()), (1, 0..4));
        let r = reasoning("x<think>cut off");
        assert_eq!((r.spans.len(), r.spans[0].clone()), (1, 1..15));
    }
}
