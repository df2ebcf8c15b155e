//! Small scanning helpers shared by the decoders: JSON extents, markers, names, reasoning.

use std::ops::Range;

/// The end (exclusive) of the JSON array or object starting at `start` (see
/// [`crate::args::locate::json_extent`]).
pub(crate) fn json_extent(text: &str, start: usize) -> Option<usize> {
    crate::args::locate::json_extent(text.as_bytes(), start)
}

/// Whether `text` is valid JSON as it stands: call markers and reasoning tags inside its
/// strings are text, not markup.
pub(crate) fn is_valid_json(text: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

/// Whether the whole of `text` (but for surrounding whitespace) is one JSON array or object.
pub(crate) fn is_whole_json(text: &str) -> bool {
    whole_brackets(text).is_some_and(|range| {
        #[cfg(test)]
        crate::exact::count_read();
        serde_json::from_str::<serde::de::IgnoredAny>(&text[range]).is_ok()
    })
}

/// Where the brackets of `text` are, when (but for surrounding whitespace) it is one array or
/// object as far as its brackets tell: JSON followed by prose is ruled out without a parse.
pub(crate) fn whole_brackets(text: &str) -> Option<Range<usize>> {
    let start = skip_ws(text, 0);
    let end = text.trim_ascii_end().len();
    (text[start..].starts_with(['{', '[']) && json_extent(text, start) == Some(end))
        .then_some(start..end)
}

/// The index of the first byte at or after `i` that is not ASCII whitespace.
pub(crate) fn skip_ws(text: &str, mut i: usize) -> usize {
    let bytes = text.as_bytes();
    // What a format read is blanked with spaces for the formats after it (`blank`), so a
    // later format may start on a megabyte of them: those go sixteen at a time.
    const SPACES: [u8; 16] = [b' '; 16];
    while bytes.len().saturating_sub(i) >= 16 && bytes[i..i + 16] == SPACES {
        i += 16;
    }
    while i < bytes.len() && bytes[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// A text being scanned for calls (a reply, or a copy of it with what was read blanked) with
/// the insides of the JSON strings in it, where markers are text (see [`super::mask`]): a
/// `{"cmd": "echo <tool_call>"}` starts no call. Every marker search of the decoders goes
/// through [`find_str`] on a `Masked`, so none can forget the strings. It reads as the `str` it
/// views; [`Masked::sub`] views part of it with the same strings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Masked<'t> {
    text: &'t str,
    /// Offsets in the whole text, sorted.
    strings: &'t [Range<usize>],
    /// Where `text` starts in the whole text.
    shift: usize,
}

impl<'t> Masked<'t> {
    /// `text` with the string insides `strings` (offsets in it, sorted) masked.
    pub(crate) fn new(text: &'t str, strings: &'t [Range<usize>]) -> Masked<'t> {
        Masked {
            text,
            strings,
            shift: 0,
        }
    }

    /// `text` with nothing masked.
    pub(crate) fn plain(text: &'t str) -> Masked<'t> {
        Masked::new(text, &[])
    }

    /// The part `range` of this text, with the same strings masked.
    pub(crate) fn sub(self, range: impl std::ops::RangeBounds<usize>) -> Masked<'t> {
        use std::ops::Bound;
        let start = match range.start_bound() {
            Bound::Included(&s) => s,
            Bound::Excluded(&s) => s + 1,
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(&e) => e + 1,
            Bound::Excluded(&e) => e,
            Bound::Unbounded => self.text.len(),
        };
        Masked {
            text: &self.text[start..end],
            strings: self.strings,
            shift: self.shift + start,
        }
    }

    /// The text as a plain `str`, with the lifetime of the text (not of this view).
    pub(crate) fn as_str(self) -> &'t str {
        self.text
    }

    /// Whether the byte at `i` is inside a masked string.
    fn masks(&self, i: usize) -> bool {
        let at = self.shift + i;
        let k = self.strings.partition_point(|s| s.start <= at);
        k > 0 && at < self.strings[k - 1].end
    }
}

impl std::ops::Deref for Masked<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        self.text
    }
}

/// Where `needle` (a short marker) first occurs in `hay`: its first byte found with memchr,
/// then compared. Building a substring searcher per call (`str::find`, `memmem::find`) cost
/// more than the search itself on replies of a few KB: a third of the time `calls` spent.
/// Markers are a few dozen bytes at most, so this stays linear in `hay`. A match that starts
/// inside one of the masked JSON strings is skipped: markers there are text.
pub(crate) fn find_str(hay: Masked<'_>, needle: &str) -> Option<usize> {
    let masked = !hay.strings.is_empty();
    let (bytes, needle_bytes) = (hay.text.as_bytes(), needle.as_bytes());
    let Some(&first) = needle_bytes.first() else {
        return Some(0);
    };
    let mut from = 0;
    while let Some(i) = memchr::memchr(first, &bytes[from..]) {
        let at = from + i;
        if bytes[at..].starts_with(needle_bytes) && !(masked && hay.masks(at)) {
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

/// Finds markers in one text for a loop that asks again and again from further on: what each
/// search found (or that a needle is absent up to some point) is remembered, so no byte is
/// searched twice for the same needle. A plain search per question rescans the rest of the
/// text for every marker that is not there: `<tool_call>` repeated 30,000 times took seconds.
pub(crate) struct Finder<'t> {
    text: Masked<'t>,
    seen: Vec<Seen>,
}

/// What is known of one needle.
struct Seen {
    needle: Box<str>,
    from: usize,
    /// `Some`: the first occurrence at or after `from`. `None`: no occurrence at or after
    /// `from` ends by `upto`.
    at: Option<usize>,
    upto: usize,
}

impl<'t> Finder<'t> {
    pub(crate) fn new(text: Masked<'t>) -> Finder<'t> {
        Finder {
            text,
            seen: Vec::new(),
        }
    }

    /// Where `needle` first occurs at or after `from`, ending by `limit`.
    pub(crate) fn find(&mut self, from: usize, limit: usize, needle: &str) -> Option<usize> {
        let text = self.text;
        let limit = limit.min(text.len());
        let len = needle.len();
        if from + len > limit {
            return None;
        }
        // Occurrences that lie wholly in text[a..b].
        let search = |a: usize, b: usize| {
            (a + len <= b)
                .then(|| find_str(text.sub(a..b), needle).map(|i| a + i))
                .flatten()
        };
        let Some(slot) = self.seen.iter().position(|s| &*s.needle == needle) else {
            let at = search(from, limit);
            self.seen.push(Seen {
                needle: needle.into(),
                from,
                at,
                upto: limit,
            });
            return at;
        };
        let seen = &mut self.seen[slot];
        // Before what is known: only the bytes where an occurrence would start before it.
        let before = (from < seen.from)
            .then(|| search(from, (seen.from + len - 1).min(limit)))
            .flatten();
        let at = before.or_else(|| {
            let f = from.max(seen.from);
            match seen.at {
                Some(a) if a >= f => (a + len <= limit).then_some(a),
                Some(_) => search(f, limit),
                None if limit <= seen.upto => None,
                None => search(f.max((seen.upto + 1).saturating_sub(len)), limit),
            }
        });
        // Keep the most that is known from `from` on.
        let (known_at, upto) = match (at, seen.at) {
            (Some(a), _) => (Some(a), limit),
            (None, Some(a)) if from >= seen.from && a >= from => (Some(a), limit),
            (None, None) if from >= seen.from => (None, limit.max(seen.upto)),
            (None, _) => (None, limit),
        };
        seen.from = from;
        seen.at = known_at;
        seen.upto = upto;
        at
    }

    /// The first of `needles` at or after `from` that ends by `limit`: `(start, length)`, the
    /// longest at a tie.
    pub(crate) fn find_any(
        &mut self,
        from: usize,
        limit: usize,
        needles: &[&str],
    ) -> Option<(usize, usize)> {
        needles
            .iter()
            .filter(|n| !n.is_empty())
            .filter_map(|n| self.find(from, limit, n).map(|at| (at, n.len())))
            .min_by_key(|&(i, len)| (i, usize::MAX - len))
    }
}

/// `json_extent` over one text, remembered: a scan records the end of every bracket it opens
/// outside a string, so asking at any of them again costs nothing, and a scan that reaches a
/// bracket already known jumps to its end. Without this, each opening bracket of `[[[…` (or each
/// `<tool_call>{` of a repeated marker) cost a pass to the end of the text.
#[derive(Debug, Default)]
pub(crate) struct Extents {
    /// The text these are for (its address and length; cleared for another text).
    text: (usize, usize),
    /// Per byte offset: 0 unknown, `UNCLOSED`, or the end (exclusive) of the value opened there.
    /// Empty until a second value of the text is asked about: most texts are asked about one
    /// value only (perhaps twice), and a table of 4 bytes per byte of the reply, allocated and
    /// cleared for each, cost more than the scan (and its page faults, in a long-lived process).
    known: Vec<u32>,
    /// The first value asked about in this text, its start and end (`UNCLOSED`: none), found by a
    /// scan that kept nothing else.
    first: Option<(usize, u32)>,
}

const UNCLOSED: u32 = u32::MAX;

impl Extents {
    /// The end (exclusive) of the JSON array or object starting at `start` within
    /// `text[..limit]`, as [`json_extent`] gives it.
    pub(crate) fn get(&mut self, text: &str, start: usize, limit: usize) -> Option<usize> {
        let bytes = text.as_bytes();
        // Offsets are kept as u32; a text that does not fit is scanned as it comes.
        if bytes.len() >= UNCLOSED as usize {
            return json_extent(&text[..limit], start);
        }
        let id = (text.as_ptr() as usize, text.len());
        if self.text != id {
            self.text = id;
            self.known.clear();
            self.first = None;
        }
        if self.known.is_empty() {
            match self.first {
                Some((at, end)) if at == start => {
                    return (end != UNCLOSED)
                        .then_some(end as usize)
                        .filter(|&end| end <= limit);
                }
                // Another value of the same text: from here on every bracket's end is kept.
                Some(_) => self.known.resize(bytes.len() + 1, 0),
                None => {
                    let end = self.scan(bytes, start);
                    self.first = Some((start, end.map_or(UNCLOSED, |end| end as u32)));
                    return end.filter(|&end| end <= limit);
                }
            }
        }
        self.scan(bytes, start).filter(|&end| end <= limit)
    }

    /// The end of the value at `start`, each bracket's end kept in `known` when it is built.
    fn scan(&mut self, bytes: &[u8], start: usize) -> Option<usize> {
        let keep = !self.known.is_empty();
        match self.known.get(start).copied().unwrap_or(0) {
            0 => {}
            UNCLOSED => return None,
            end => return Some(end as usize),
        }
        let mut open: Vec<usize> = Vec::new();
        let mut i = start;
        while i < bytes.len() {
            match bytes[i] {
                b'"' => {
                    // To the closing quote, past escapes.
                    let mut j = i + 1;
                    loop {
                        match memchr::memchr2(b'"', b'\\', &bytes[j.min(bytes.len())..]) {
                            Some(k) if bytes[j + k] == b'\\' => j += k + 2,
                            Some(k) => {
                                j += k;
                                break;
                            }
                            None => {
                                j = bytes.len();
                                break;
                            }
                        }
                    }
                    i = j;
                }
                b'{' | b'[' => match if keep { self.known[i] } else { 0 } {
                    0 => open.push(i),
                    UNCLOSED => break,
                    // A value whose end is known: the same bytes follow, so its end is ours.
                    end => {
                        i = end as usize;
                        continue;
                    }
                },
                b'}' | b']' => {
                    if let Some(o) = open.pop()
                        && keep
                    {
                        self.known[o] = (i + 1) as u32;
                    }
                    if open.is_empty() {
                        return Some(i + 1);
                    }
                }
                _ => {}
            }
            i += 1;
        }
        if keep {
            for o in open {
                self.known[o] = UNCLOSED;
            }
        }
        None
    }
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

/// Markers that close reasoning which no marker opens: the chat template opens it in words
/// (Apriel's "Here are my reasoning steps:"), and the model ends it with one of these, its
/// answer after. Read as the closing markers of [`REASONING`] are when no opening one came
/// before; [`NOISE`] has what ends the answer.
pub(crate) const REASONING_ENDS: &[&str] = &["[BEGIN FINAL RESPONSE]"];

/// Every closing reasoning marker: those of [`REASONING`], then [`REASONING_ENDS`]. A kind of
/// close is its index here.
pub(crate) fn reasoning_closes() -> impl Iterator<Item = &'static str> {
    REASONING
        .iter()
        .map(|(_, close)| *close)
        .chain(REASONING_ENDS.iter().copied())
}

/// Reasoning found in a reply.
#[derive(Debug, Default)]
pub(crate) struct Reasoning {
    /// The reasoning text of each block.
    pub parts: Vec<Range<usize>>,
    /// What to leave out of the reply's text: each block with its markers.
    pub spans: Vec<Range<usize>>,
}

/// Finds reasoning blocks. A closing marker with no opening one means the reply started in
/// reasoning (the template opened it); an opening marker with no closing one runs to the end,
/// or to the first of `call_tokens` after it.
pub(crate) fn reasoning(text: Masked<'_>, call_tokens: &[&str]) -> Reasoning {
    let mut found = Reasoning::default();
    // A close before any open: everything before it is reasoning.
    let first_open = REASONING
        .iter()
        .filter_map(|(o, _)| find_str(text, o))
        .min();
    for close in reasoning_closes() {
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
    let mut find = Finder::new(text);
    while let Some((start, open)) = REASONING
        .iter()
        .filter_map(|(o, c)| find.find(pos, text.len(), o).map(|i| (i, (o, c))))
        .min_by_key(|(i, _)| *i)
    {
        let body = start + open.0.len();
        match find.find(body, text.len(), open.1) {
            Some(end) => {
                found.parts.push(body..end);
                found.spans.push(start..end + open.1.len());
                pos = end + open.1.len();
            }
            None => {
                // Never closed: it runs to the end, or to a call format's section or call
                // marker (a special token, never a plain tag a thought may mention): Kimi K2
                // starts its calls with no `</think>` before them.
                let end = find
                    .find_any(body, text.len(), call_tokens)
                    .map_or(text.len(), |(at, _)| at);
                found.parts.push(body..end);
                found.spans.push(start..end);
                break;
            }
        }
    }
    found
}

/// `text` with the bytes of `spans` replaced by spaces, so offsets stay the same.
pub(crate) fn blank(text: &str, spans: &[Range<usize>]) -> String {
    let mut blanked = text.to_owned();
    blank_in_place(&mut blanked, spans);
    blanked
}

/// [`blank`] in place: the reply is not held twice (one reply-sized allocation and copy fewer
/// for every format that reads a call).
pub(crate) fn blank_in_place(text: &mut String, spans: &[Range<usize>]) {
    if spans.is_empty() {
        return;
    }
    let mut bytes = std::mem::take(text).into_bytes();
    for span in spans {
        bytes[span.clone()].fill(b' ');
    }
    // Whole UTF-8 sequences were replaced (spans are at char boundaries), so this is UTF-8.
    *text = String::from_utf8(bytes)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
}

/// Tokens that end a turn or wrap an answer; left out of the text.
pub(crate) const NOISE: &[&str] = &[
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
    "[END FINAL RESPONSE]",
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
    fn blanking_keeps_every_offset_and_only_the_spans_change() {
        let text = "é<t>naïve</t> → {\"a\": 1}";
        let span = text.find("<t>").unwrap()..text.find(" →").unwrap();
        let mut in_place = text.to_owned();
        blank_in_place(&mut in_place, std::slice::from_ref(&span));
        assert_eq!(
            in_place,
            format!("é{} → {{\"a\": 1}}", " ".repeat(span.len()))
        );
        assert_eq!(blank(text, &[span]), in_place);
        assert_eq!(blank(text, &[]), text);
    }

    #[test]
    fn white_space_is_skipped_to_the_same_byte_however_long_the_run_of_spaces() {
        for n in 0..70 {
            for tail in ["x", "\tx", "\n \r x", "", " "] {
                for start in 0..3.min(n + 1) {
                    let text = format!("{}{tail}", " ".repeat(n));
                    let want = start
                        + text.as_bytes()[start..]
                            .iter()
                            .take_while(|b| b.is_ascii_whitespace())
                            .count();
                    assert_eq!(skip_ws(&text, start), want, "{n} {tail:?} {start}");
                }
            }
        }
        assert_eq!(skip_ws("  ", 5), 5);
    }

    #[test]
    fn find_str_matches_str_find() {
        let hay = "a <<tool <tool_call> é<tool_call>";
        for needle in ["<tool_call>", "<", "é<", "tool", "x", "", "<tool_call>x"] {
            assert_eq!(
                find_str(Masked::plain(hay), needle),
                hay.find(needle),
                "{needle:?}"
            );
        }
    }

    /// A small deterministic generator (no dependency for one test).
    fn next(seed: &mut u64) -> usize {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (*seed >> 33) as usize
    }

    /// Up to `max - 1` characters drawn from `alphabet` (all ASCII).
    fn random_text(seed: &mut u64, max: usize, alphabet: &[char]) -> String {
        let len = next(seed) % max;
        (0..len)
            .map(|_| alphabet[next(seed) % alphabet.len()])
            .collect()
    }

    #[test]
    fn a_finder_answers_what_a_fresh_search_answers() {
        let mut seed = 7;
        for _ in 0..300 {
            let text = random_text(&mut seed, 60, &['a', 'b', '<', '>']);
            let len = text.len();
            let needles = ["<a>", "a", "<", "ab", "b<a"];
            let mut finder = Finder::new(Masked::plain(&text));
            for _ in 0..40 {
                let needle = needles[next(&mut seed) % needles.len()];
                let from = next(&mut seed) % (len + 2);
                let limit = from + next(&mut seed) % (len + 2);
                let want = text
                    .get(from..limit.min(len))
                    .and_then(|hay| hay.find(needle))
                    .map(|i| from + i);
                assert_eq!(
                    finder.find(from, limit, needle),
                    want,
                    "{text:?} {needle:?} {from}..{limit}"
                );
            }
        }
    }

    #[test]
    fn remembered_extents_are_those_a_scan_finds() {
        let mut seed = 11;
        for _ in 0..300 {
            let text = random_text(&mut seed, 50, &['{', '}', '[', ']', '"', '\\', 'a']);
            let len = text.len();
            let mut extents = Extents::default();
            for _ in 0..30 {
                let starts: Vec<usize> = text.match_indices(['{', '[']).map(|(i, _)| i).collect();
                let Some(&start) = starts.get(next(&mut seed) % (starts.len() + 1)) else {
                    continue;
                };
                let limit = start + next(&mut seed) % (len + 1);
                let limit = limit.min(len);
                assert_eq!(
                    extents.get(&text, start, limit),
                    json_extent(&text[..limit], start),
                    "{text:?} at {start} within {limit}"
                );
            }
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
        let r = reasoning(Masked::plain("a<think>b</think>c"), &[]);
        assert_eq!((r.parts.len(), r.parts[0].clone()), (1, 8..9));
        let r = reasoning(Masked::plain("plan</think>go"), &[]);
        assert_eq!((r.parts.len(), r.parts[0].clone()), (1, 0..4));
        let r = reasoning(Masked::plain("x<think>cut off"), &[]);
        assert_eq!((r.spans.len(), r.spans[0].clone()), (1, 1..15));
    }
}
