//! Object keys and their colons, and duplicate keys: each key is tagged by hash so a repeated
//! key is found without comparing bytes, linearly for small objects, by index for large ones.
//! Keys are compared as they read, not as they are written: `"a"` and `"\u0061"` are one key
//! ([`compared`]).

use super::strings::skip_plain;
use super::{KeyEntry, Parser, Quote, Scratch};
use crate::args::simd::string_stop;
use crate::bytes::escape::push_json_string;
use crate::error::Error;
use crate::repair::{Repair, RepairKind};
use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;

/// See [`KeyEntry::tag`].
pub(super) const REPORTED: u64 = 1 << 63;

/// Objects with more keys than this look keys up by hash instead of by scanning.
pub(super) const LINEAR_KEYS: usize = 24;

impl<'a> Parser<'a> {
    /// Rewrites the members of the object being closed so each key appears once, at its first
    /// position, with its last value (what `JSON.parse` and Python's `json` keep).
    pub(super) fn merge_duplicates(&mut self, keys_base: usize) {
        if self.sink.scratch.unplaced != 0 {
            place_keys(&mut self.sink.scratch, &self.sink.out);
        }
        let entries = &self.sink.scratch.keys[keys_base..];
        let body_start = entries[0].start;
        let end = self.sink.out.len();
        let value = |i: usize| -> Range<usize> {
            let stop = entries.get(i + 1).map_or(end, |next| next.start - 1);
            entries[i].end + 1..stop
        };
        let out = &self.sink.out;
        let mut last: HashMap<Cow<'_, [u8]>, usize> = HashMap::new();
        for (i, e) in entries.iter().enumerate() {
            last.insert(compared(&out[e.start..e.end]), i);
        }
        let mut merged = Vec::with_capacity(end - body_start);
        for e in entries {
            let key = &out[e.start..e.end];
            // Only the first occurrence writes the member (its key as written there); later
            // ones are folded into it.
            let Some(j) = last.remove(&compared(key)) else {
                continue;
            };
            if !merged.is_empty() {
                merged.push(b',');
            }
            merged.extend_from_slice(key);
            merged.push(b':');
            merged.extend_from_slice(&out[value(j)]);
        }
        self.sink.out.truncate(body_start);
        self.sink.out.extend_from_slice(&merged);
    }

    /// Reads an object key and writes it as a JSON string.
    pub(super) fn key(&mut self) -> Result<(), Error> {
        let at = self.pos;
        if self.sink.scratch.nesting.add_member() {
            self.sink.out.push(b',');
        }
        let start = self.sink.out.len();
        let at = match self.stray_words_before_key(at) {
            Some(key) => {
                // `{"a": 1, COMMENT "b": 2}`: words before a quoted key are left out, rather
                // than made a key that swallows the member after them.
                self.note_prose(at, key);
                self.pos = key;
                key
            }
            None => at,
        };
        // Whether the key as written may hold an escape (not when copied as it reads).
        let mut escaped = true;
        let plain_end = match self.src[at] {
            b'"' => Some(skip_plain(self.src, at + 1, Quote::Double)),
            _ => None,
        };
        if let Some(end) = plain_end.filter(|&end| {
            self.src.get(end) == Some(&b'"')
                && (self.strict || self.src.get(self.skip_spaces_from(end + 1)) == Some(&b':'))
        }) {
            // Most keys: nothing to escape before the closing quote, and a colon after it.
            let start = self.sink.out.len();
            self.sink.out.extend_from_slice(&self.src[at..=end]);
            self.tree_copied(start, at + 1..end, true);
            self.pos = end + 1;
            escaped = false;
        } else if let Some(colon) = self.key_cut_at_colon(at) {
            // `{"key:"value"}`, `{"key:value}`: the key's closing quote is missing before
            // its colon.
            self.fix(RepairKind::MissingQuote, colon)?;
            push_json_string(&mut self.sink.out, &self.src[at + 1..colon]);
            self.pos = colon;
        } else if let Some((quote, len)) = Quote::opening(&self.src[at..]) {
            if quote != Quote::Double {
                self.fix(quote.repair().expect("not a double quote"), at)?;
            }
            if let Some(close) = self.mismatched_key_quote(quote, at + len) {
                // `{"a': 1}`, `{'a": 1}`, `{“a": 1}`: closed by the other kind of quote.
                if quote == Quote::Double {
                    self.fix(RepairKind::SingleQuotes, close)?;
                }
                push_json_string(&mut self.sink.out, &self.src[at + len..close]);
                self.pos = close + 1;
            } else {
                self.sink.out.push(b'"');
                self.string_body(quote, len, true)?;
                self.sink.out.push(b'"');
            }
        } else if !self.strict && is_bare_key_byte(self.src[at]) {
            self.fix(RepairKind::UnquotedKey, at)?;
            let word = self.src[at..]
                .iter()
                .position(|&b| !is_bare_key_byte(b))
                .unwrap_or(self.src.len() - at);
            // `{with space: 1}`: words up to a colon on the same line are one key. The look
            // ahead is bounded so a long run of words without a colon stays linear.
            let ahead = &self.src[at..(at + 64).min(self.src.len())];
            let len = match ahead
                .iter()
                .position(|&b| !is_bare_key_byte(b) && b != b' ')
            {
                Some(colon) if ahead[colon] == b':' => ahead[..colon].trim_ascii_end().len(),
                _ => word,
            };
            push_json_string(&mut self.sink.out, &self.src[at..at + len]);
            self.pos = at + len;
            if let Some(&(b'"' | b'\'')) = self.src.get(self.pos) {
                // `{a":"foo"}`: the key's closing quote is there, its opening one is not.
                self.fix(RepairKind::MissingQuote, self.pos)?;
                self.pos += 1;
            }
        } else {
            return Err(self.invalid(at, "expected a string key"));
        }
        self.note_key(start, at, escaped);
        Ok(())
    }

    /// For a double-quoted key at `at` whose closing quote is missing before its colon, where
    /// that colon is: the key's text ends with a colon and a quote that no colon follows
    /// (`"key:"value"`), or no quote closes it at all (`"key:value}`). A key that holds a
    /// colon and is closed (`"a:b": 1`) is not one. The look ahead is bounded.
    fn key_cut_at_colon(&self, at: usize) -> Option<usize> {
        if self.strict || self.src[at] != b'"' {
            return None;
        }
        let end = (at + 1 + 256).min(self.src.len());
        let ahead = &self.src[at + 1..end];
        let stop = ahead
            .iter()
            .position(|&b| matches!(b, b'"' | b'\'' | b'\n' | b'\\'));
        let colon = match stop.map(|i| (i, ahead[i])) {
            Some((i, b'"')) if i > 0 && ahead[i - 1] == b':' => {
                let next = self.skip_spaces_from(at + 1 + i + 1);
                if self.src.get(next) == Some(&b':') {
                    return None;
                }
                i - 1
            }
            None if end == self.src.len() => ahead.iter().position(|&b| b == b':')?,
            _ => return None,
        };
        let key = &ahead[..colon];
        (!key.is_empty() && !key.contains(&b':')).then_some(at + 1 + colon)
    }

    /// Where a key opened by `quote` (its text starting at `from`) is closed by the other kind
    /// of ASCII quote followed by a colon, when that comes before any quote of its own kind on
    /// the same line. The look ahead is bounded, so keys stay linear.
    fn mismatched_key_quote(&self, quote: Quote, from: usize) -> Option<usize> {
        if self.strict {
            return None;
        }
        let other = match quote {
            Quote::Double => b'\'',
            Quote::Single | Quote::CurlyDouble => b'"',
            Quote::CurlySingle | Quote::Backtick => return None,
        };
        let ahead = &self.src[from..(from + 256).min(self.src.len())];
        let i = ahead
            .iter()
            .position(|&b| b == b'"' || b == b'\'' || b == b'\\' || b == b'\n' || b == 0xE2)?;
        let close = from + i;
        let next = self.skip_spaces_from(close + 1);
        if ahead[i] != other || self.src.get(next) != Some(&b':') {
            return None;
        }
        // `{"':\"": 1}` is valid JSON: a key its own quote closes (past escapes) before a
        // colon is not closed by the other quote inside it. Looked for past the window, as a
        // valid key may be long: the scan stops at the first unescaped `"`, so each byte is
        // looked at by one key at most and keys stay linear.
        if quote == Quote::Double {
            let rest = &self.src[from..];
            let mut p = i + 1;
            while let Some(j) = rest.get(p..).and_then(|t| memchr::memchr2(b'"', b'\\', t)) {
                p += j;
                if rest[p] == b'\\' {
                    p += 2;
                    continue;
                }
                if self.src.get(self.skip_spaces_from(from + p + 1)) == Some(&b':') {
                    return None;
                }
                break;
            }
        }
        Some(close)
    }

    /// Remembers the key just written at `out[start..]`, and notes a duplicate; `escaped`: the
    /// key may hold an escape (false only when the caller knows it holds none). Inlined: it
    /// runs for every key, and as a call it cost 5% more instructions.
    #[inline(always)]
    pub(super) fn note_key(&mut self, start: usize, at: usize, escaped: bool) {
        let end = self.sink.out.len();
        let depth = self.sink.scratch.nesting.depth();
        let scratch = &mut self.sink.scratch;
        let level = scratch.nesting.top().expect("an open object");
        let keys_base = scratch.nesting.keys_base();
        let written = &self.sink.out[start..end];
        let read = if escaped {
            compared(written)
        } else {
            Cow::Borrowed(written)
        };
        let key: &[u8] = &read;
        let tag = key_tag(key);
        let out = &self.sink.out;
        if scratch.unplaced != 0 {
            place_keys_if_compared(scratch, out, keys_base, tag);
        }
        let entries = &scratch.keys[keys_base..];
        let same = |e: &KeyEntry| *compared(&out[e.start..e.end]) == *key;
        // The key's first entry in this object, if it has one.
        let first = if entries.len() < LINEAR_KEYS {
            entries
                .iter()
                .position(|e| e.tag & !REPORTED == tag && same(e))
                .map(|i| keys_base + i)
        } else {
            if !level.indexed() {
                scratch.nesting.mark_indexed();
                for (i, e) in entries.iter().enumerate() {
                    let hash = index_hash(&out[e.start..e.end]);
                    scratch
                        .key_index
                        .entry((depth, hash))
                        .or_insert(keys_base + i);
                }
            }
            // `key` is the key as compared already: `index_hash` of its written text.
            let hash = fnv(key);
            match scratch.key_index.get(&(depth, hash)) {
                // Only an entry of this object's keys is one (closing an object removes its
                // entries; this keeps a stale one from ever being read).
                Some(&i) if (keys_base..scratch.keys.len()).contains(&i) => {
                    // A hash collision between different keys falls back to a scan.
                    if same(&scratch.keys[i]) {
                        Some(i)
                    } else {
                        entries.iter().position(same).map(|i| keys_base + i)
                    }
                }
                _ => {
                    scratch.key_index.insert((depth, hash), scratch.keys.len());
                    None
                }
            }
        };
        self.key_at = at;
        self.key_reported = false;
        if let Some(first) = first {
            scratch.nesting.mark_duplicate();
            // One repair per repeated key and object, at its first repeat: a key written a
            // million times is one record, not a million (the value kept is still the last).
            if scratch.keys[first].tag & REPORTED == 0 {
                scratch.keys[first].tag |= REPORTED;
                self.key_reported = true;
                let mut repair = Repair::at(RepairKind::DuplicateKey, at);
                let text = serde_json::from_slice::<String>(written)
                    .unwrap_or_else(|_| String::from_utf8_lossy(written).into_owned());
                repair.text = Some(text);
                self.sink.repairs.push(repair);
            }
        }
        scratch.keys.push(KeyEntry { start, end, tag });
    }

    pub(super) fn colon(&mut self) -> Result<(), Error> {
        self.skip_ws()?;
        let at = self.pos;
        let rest = &self.src[at..];
        if rest.first() == Some(&b':') {
            self.pos += 1;
            if !self.strict {
                // `{"a":: 1}`, `{"a": : 1}`: a doubled colon.
                let next = self.skip_spaces_from(self.pos);
                if self.src.get(next) == Some(&b':') {
                    self.fix(RepairKind::MissingColon, next)?;
                    self.pos = next + 1;
                }
            }
        } else if !self.strict && (rest.starts_with(b"=>") || rest.starts_with(b":=")) {
            self.fix(RepairKind::MissingColon, at)?;
            self.pos += 2;
        } else if !self.strict && matches!(rest.first(), Some(b'=' | b';')) {
            // `{"a" = 1}`, `{"a";1}`: another separator written for the colon.
            self.fix(RepairKind::MissingColon, at)?;
            self.pos += 1;
        } else if !self.strict
            && rest.first() == Some(&b',')
            && self.scalar_ends_item(self.skip_spaces_from(at + 1))
        {
            // `{"a": 1, "b", 2}`: a comma for the colon, as the number or literal that follows,
            // ending the member, cannot be a key (json_repair's reading).
            self.fix(RepairKind::MissingColon, at)?;
            self.pos += 1;
        } else {
            self.fix(RepairKind::MissingColon, at)?;
        }
        self.sink.out.push(b':');
        Ok(())
    }
}

/// Bytes an unquoted key may hold: anything but whitespace and JSON punctuation.
pub(super) fn is_bare_key_byte(b: u8) -> bool {
    !matches!(
        b,
        b' ' | b'\t' | b'\n' | b'\r' | b':' | b',' | b'{' | b'}' | b'[' | b']' | b'"' | b'\''
    )
}

/// A key written as a JSON string (quotes included) as it reads: each escape decoded, so that
/// `"a"` and `"\u0061"` compare equal. Half a surrogate
/// pair is kept as its WTF-8 bytes, which no decoded text holds. Most keys hold no backslash
/// and are compared as written.
pub(super) fn compared(key: &[u8]) -> Cow<'_, [u8]> {
    // Most keys are short: core's search (a byte loop there) costs less than memchr's setup.
    if !key.contains(&b'\\') {
        return Cow::Borrowed(key);
    }
    let hex4 = |at: usize| -> Option<u32> {
        let digits = std::str::from_utf8(key.get(at..at + 4)?).ok()?;
        u32::from_str_radix(digits, 16).ok()
    };
    let mut out = Vec::with_capacity(key.len());
    let mut i = 0;
    while i < key.len() {
        let b = key[i];
        if b != b'\\' {
            out.push(b);
            i += 1;
            continue;
        }
        let decoded = match key.get(i + 1) {
            Some(b'u') => match hex4(i + 2) {
                Some(high @ 0xD800..0xDC00)
                    if key.get(i + 6..i + 8) == Some(b"\\u")
                        && let Some(low @ 0xDC00..0xE000) = hex4(i + 8) =>
                {
                    let c = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                    push_char(&mut out, c);
                    i += 12;
                    continue;
                }
                Some(unit) => {
                    push_char(&mut out, unit);
                    i += 6;
                    continue;
                }
                None => None,
            },
            Some(b'n') => Some(b'\n'),
            Some(b't') => Some(b'\t'),
            Some(b'r') => Some(b'\r'),
            Some(b'b') => Some(0x08),
            Some(b'f') => Some(0x0c),
            Some(&c @ (b'/' | b'"' | b'\\')) => Some(c),
            _ => None,
        };
        match decoded {
            Some(d) => {
                out.push(d);
                i += 2;
            }
            None => {
                out.push(b);
                i += 1;
            }
        }
    }
    Cow::Owned(out)
}

/// Appends code point `c` as UTF-8, or as WTF-8 for half a surrogate pair.
fn push_char(out: &mut Vec<u8>, c: u32) {
    match char::from_u32(c) {
        Some(ch) => out.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes()),
        None => out.extend_from_slice(&[
            0xE0 | (c >> 12) as u8,
            0x80 | ((c >> 6) & 0x3F) as u8,
            0x80 | (c & 0x3F) as u8,
        ]),
    }
}

/// A cheap fingerprint of a key (with its quotes): its length and its first and last eight
/// bytes. Equal keys have equal tags; different keys rarely do. The whole-value pass's tag
/// ([`tag_of`]) without the [`REPORTED`] bit, so that its tags are taken over
/// when the fast path takes up inside an object ([`super::handover`]).
pub(super) fn key_tag(key: &[u8]) -> u64 {
    tag_of(key) & !REPORTED
}

/// A tag of a key as it reads (quotes included, escapes decoded): equal keys have equal tags,
/// different keys rarely do (and a key whose tag repeats one is left to the other path). Its
/// length and its first and last eight bytes; a key under eight bytes is one little-endian
/// word of its bytes.
#[inline(always)]
pub(super) fn tag_of(key: &[u8]) -> u64 {
    let len = key.len();
    if len < 8 {
        let word = key
            .iter()
            .rev()
            .fold(0, |word, &b| word << 8 | u64::from(b));
        return tag_of_word(word, len);
    }
    let word = |bytes: &[u8]| u64::from_le_bytes(bytes.try_into().expect("eight bytes"));
    tag_of_word(word(&key[..8]) ^ word(&key[len - 8..]).rotate_left(29), len)
}

#[inline(always)]
pub(super) fn tag_of_word(word: u64, len: usize) -> u64 {
    word ^ (len as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// Before a key whose tag is `tag` is noted in the object whose keys start at `keys_base`:
/// places the keys taken over from the pass when they are to be compared with it (its tag is
/// one of theirs, or the object is large enough to be indexed by the keys' text).
#[cold]
#[inline(never)]
pub(super) fn place_keys_if_compared(
    scratch: &mut Scratch,
    out: &[u8],
    keys_base: usize,
    tag: u64,
) {
    if keys_base != scratch.unplaced_base {
        return;
    }
    let entries = &scratch.keys[keys_base..];
    if entries.len() >= LINEAR_KEYS || entries.iter().any(|e| e.tag & !REPORTED == tag) {
        place_keys(scratch, out);
    }
}

/// Finds where the keys taken over from the pass are in the output `out`: the outermost
/// level's keys in the compact copy from its `{`, in order.
#[cold]
#[inline(never)]
pub(super) fn place_keys(scratch: &mut Scratch, out: &[u8]) {
    let count = std::mem::take(&mut scratch.unplaced);
    let entries = &mut scratch.keys[scratch.unplaced_base..][..count];
    let mut p = scratch.unplaced_from + 1;
    let mut placed = 0;
    let mut level = 1;
    let mut want_key = true;
    while placed < count && p < out.len() {
        match out[p] {
            b'"' => {
                let end = string_end_in_copy(out, p);
                if want_key && level == 1 {
                    entries[placed].start = p;
                    entries[placed].end = end;
                    placed += 1;
                    want_key = false;
                }
                p = end;
                continue;
            }
            b'{' | b'[' => level += 1,
            b'}' | b']' => level -= 1,
            b',' if level == 1 => want_key = true,
            _ => {}
        }
        p += 1;
    }
    debug_assert_eq!(placed, count, "every key taken over is in the copy");
}

/// Past the closing quote of the string whose opening quote is at `at`, in text proven valid.
fn string_end_in_copy(out: &[u8], at: usize) -> usize {
    let mut end = at + 1;
    loop {
        end = string_stop(out, end);
        match out.get(end) {
            Some(b'"') | None => return end + 1,
            Some(b'\\') => end += 2,
            Some(_) => end += 1,
        }
    }
}

/// The hash a key written as `written` is indexed by: that of the key as compared (escapes
/// read), so that `"a"` and `"\u0061"` meet, and so that closing an object finds each entry it
/// made (see `containers.rs`).
pub(super) fn index_hash(written: &[u8]) -> u64 {
    fnv(&compared(written))
}

/// FNV-1a: a fast hash for short keys; collisions are checked by comparing the keys.
fn fnv(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_compare_as_they_read() {
        for (a, b) in [
            (r#""a""#, r#""\u0061""#),
            (r#""é""#, r#""\u00e9""#),
            (r#""😀""#, r#""\ud83d\ude00""#),
            (r#""a/b""#, r#""a\/b""#),
            ("\"\\n\"", r#""\u000a""#),
            (r#""\ud800""#, r#""\uD800""#),
        ] {
            assert_eq!(compared(a.as_bytes()), compared(b.as_bytes()), "{a} {b}");
        }
        for (a, b) in [
            (r#""\\u0061""#, r#""a""#),
            (r#""\\ud800""#, r#""\ud800""#),
            (r#""a""#, r#""b""#),
        ] {
            assert_ne!(compared(a.as_bytes()), compared(b.as_bytes()), "{a} {b}");
        }
    }

    #[test]
    fn key_tags_of_equal_keys_are_equal() {
        assert_eq!(key_tag(br#""content_5""#), key_tag(br#""content_5""#));
        assert_ne!(key_tag(br#""content_5""#), key_tag(br#""content_7""#));
        assert_ne!(key_tag(br#""""#), key_tag(br#""a""#));
    }
}
