//! The single-pass reader and writer at the heart of the pipeline.
//!
//! It reads the bytes once, checks them against the JSON grammar and writes compact JSON as it
//! goes: no tree is built, numbers and strings are copied as written. With repair on, every place
//! where strict parsing would fail is mended on the spot and recorded as a [`Repair`]; with
//! `strict`, the same place is an `invalid_json` error at that byte. Nesting is tracked on an
//! explicit stack, so depth costs memory, never the call stack, and every decision looks ahead a
//! bounded distance (or over whitespace it then consumes), so the time is linear in the input.

use std::collections::HashMap;
use std::ops::Range;

use crate::args::locate::json_extent;
use crate::args::nesting::{Container, Nesting};
use crate::bytes::escape::{push_escape, push_json_string};
use crate::bytes::{find_any, hex4};
use crate::error::{Code, Error};
use crate::repair::{Repair, RepairKind};

/// Where one member's key was written in the output.
struct KeyEntry {
    /// Output offset of the key's opening quote (the start of the member).
    start: usize,
    /// Output offset just past the key's closing quote.
    end: usize,
    /// [`key_tag`] of the key: most keys differ here, without comparing their bytes. The top
    /// bit ([`REPORTED`]) is not part of it: on a key's first entry, it says a `duplicate_key`
    /// repair already names the key in this object.
    tag: u64,
}

/// See [`KeyEntry::tag`].
const REPORTED: u64 = 1 << 63;

/// Objects with more keys than this look keys up by hash instead of by scanning.
const LINEAR_KEYS: usize = 24;

/// Buffers the parser reuses from one input to the next.
#[derive(Default)]
pub(crate) struct Scratch {
    nesting: Nesting,
    keys: Vec<KeyEntry>,
    /// (depth, hash of key) to the first entry with that key, for large objects only.
    key_index: HashMap<(usize, u64), usize>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Quote {
    Double,
    Single,
    /// “…” (either curly double quote closes it).
    CurlyDouble,
    /// ‘…’ (either curly single quote closes it).
    CurlySingle,
    /// `…` (a JavaScript template literal).
    Backtick,
}

impl Quote {
    /// The quote that opens a string at `s[0..]`, if any, and its length in bytes.
    fn opening(s: &[u8]) -> Option<(Quote, usize)> {
        match s {
            [b'"', ..] => Some((Quote::Double, 1)),
            [b'\'', ..] => Some((Quote::Single, 1)),
            [0xE2, 0x80, 0x9C | 0x9D, ..] => Some((Quote::CurlyDouble, 3)),
            [0xE2, 0x80, 0x98 | 0x99, ..] => Some((Quote::CurlySingle, 3)),
            // Three backticks open a code fence, not a string.
            [b'`', b'`', b'`', ..] => None,
            [b'`', ..] => Some((Quote::Backtick, 1)),
            _ => None,
        }
    }

    /// The length of the closing quote at `s[0..]`, if one is there.
    fn closing(self, s: &[u8]) -> Option<usize> {
        match (self, s) {
            (Quote::Double, [b'"', ..]) | (Quote::Single, [b'\'', ..]) => Some(1),
            (Quote::CurlyDouble, [0xE2, 0x80, 0x9C | 0x9D, ..]) => Some(3),
            (Quote::CurlySingle, [0xE2, 0x80, 0x98 | 0x99, ..]) => Some(3),
            // `foo´ and `foo': a backtick closed by an acute accent or an apostrophe.
            (Quote::Backtick, [b'`' | b'\'', ..]) => Some(1),
            (Quote::Backtick, [0xC2, 0xB4, ..]) => Some(2),
            _ => None,
        }
    }

    fn repair(self) -> Option<RepairKind> {
        match self {
            Quote::Double => None,
            Quote::Single | Quote::Backtick => Some(RepairKind::SingleQuotes),
            Quote::CurlyDouble | Quote::CurlySingle => Some(RepairKind::TypographicQuotes),
        }
    }
}

/// The first position from `p` that holds one of `quote`'s stop bytes (or the end): a double
/// quote, a backslash or a control character, and the bytes that may close this quote.
fn skip_plain(src: &[u8], p: usize, quote: Quote) -> usize {
    // Constant bytes per call, so the scan for a double quote tests two bytes, not three.
    match quote {
        Quote::Double => find_any(src, p, [b'"', b'\\', b'"'], true),
        Quote::Single => find_any(src, p, [b'"', b'\\', b'\''], true),
        Quote::CurlyDouble | Quote::CurlySingle => find_any(src, p, [b'"', b'\\', 0xE2], true),
        // Five stop bytes (`, ' and the acute accent's lead byte close it): a byte loop, as
        // backtick strings are rare.
        Quote::Backtick => src[p..]
            .iter()
            .position(|&b| b < 0x20 || matches!(b, b'"' | b'\\' | b'`' | b'\'' | 0xC2))
            .map_or(src.len(), |i| p + i),
    }
}

/// A number at the start of `s` whose digits are grouped with underscores (`82_461_110`), if
/// it is one followed by a delimiter: its length, and the number without them.
fn grouped_number(s: &[u8]) -> Option<(usize, Vec<u8>)> {
    let len = s
        .iter()
        .position(|&b| {
            !(b.is_ascii_digit() || matches!(b, b'_' | b'.' | b'e' | b'E' | b'+' | b'-'))
        })
        .unwrap_or(s.len());
    let token = &s[..len];
    let grouped = |i: usize| {
        i > 0 && token[i - 1].is_ascii_digit() && token.get(i + 1).is_some_and(u8::is_ascii_digit)
    };
    if !token.contains(&b'_') || !(0..len).all(|i| token[i] != b'_' || grouped(i)) {
        return None;
    }
    let digits: Vec<u8> = token.iter().copied().filter(|&b| b != b'_').collect();
    let number = serde_json::from_slice::<serde_json::Number>(&digits).is_ok();
    (number && is_delimiter(&s[len..])).then_some((len, digits))
}

/// Per string, the repairs already recorded, so a long string full of raw newlines is one
/// repair record, not thousands (the offset is the first one's).
#[derive(Default)]
struct Noted {
    control: bool,
    quote: bool,
    escape: bool,
}

/// Reads one document from `src[pos..]` and writes it, compact, to `out`.
pub(crate) struct Parser<'a> {
    src: &'a [u8],
    pos: usize,
    out: &'a mut Vec<u8>,
    repairs: &'a mut Vec<Repair>,
    scratch: &'a mut Scratch,
    strict: bool,
    max_nesting: usize,
    /// Write a `\u` escape naming half a surrogate pair as U+FFFD, a repair (for callers that
    /// need the value as Unicode text); by default it is kept as written, as valid JSON.
    lone_surrogates_as_fffd: bool,
    open_arrays: usize,
    open_objects: usize,
    /// Where the last key read starts in `src`, and whether it added a `duplicate_key` repair.
    key_at: usize,
    key_reported: bool,
    /// Where the last array element started in `out` and in `src`.
    element_out: usize,
    element_at: usize,
}

impl<'a> Parser<'a> {
    pub(crate) fn new(
        src: &'a [u8],
        pos: usize,
        out: &'a mut Vec<u8>,
        repairs: &'a mut Vec<Repair>,
        scratch: &'a mut Scratch,
        strict: bool,
        max_nesting: usize,
    ) -> Parser<'a> {
        scratch.nesting.clear();
        scratch.keys.clear();
        scratch.key_index.clear();
        Parser {
            src,
            pos,
            out,
            repairs,
            scratch,
            strict,
            max_nesting,
            lone_surrogates_as_fffd: false,
            open_arrays: 0,
            open_objects: 0,
            key_at: 0,
            key_reported: false,
            element_out: 0,
            element_at: 0,
        }
    }

    /// Writes lone surrogate escapes as U+FFFD, each a `lone_surrogate` repair.
    pub(crate) fn lone_surrogates_as_fffd(mut self, yes: bool) -> Parser<'a> {
        self.lone_surrogates_as_fffd = yes;
        self
    }

    /// Reads every value up to the end of `src`: the first, and any concatenated after it
    /// (`{..}{..}`). Each value's range in `out` is pushed to `parts`. With repair on, text
    /// after the values that is not JSON is left out and recorded as prose; with `jsonp`, a
    /// closing `)` and `;` are expected there and dropped.
    pub(crate) fn document(
        &mut self,
        parts: &mut Vec<Range<usize>>,
        jsonp: bool,
    ) -> Result<(), Error> {
        loop {
            self.skip_ws()?;
            let start = self.out.len();
            self.one_value()?;
            parts.push(start..self.out.len());
            loop {
                self.skip_ws()?;
                let at = self.pos;
                match self.peek() {
                    None => return Ok(()),
                    Some(b'{' | b'[') => break,
                    Some(b'}' | b']') if !self.strict => {
                        self.fix(RepairKind::ExtraBracket, at)?;
                        self.pos += 1;
                    }
                    Some(b')') if jsonp => {
                        self.pos += 1;
                        self.skip_ws()?;
                        if self.peek() == Some(b';') {
                            self.pos += 1;
                        }
                    }
                    Some(b',') if !self.strict && self.members_follow_object(at) => {
                        // `{"a": 1}, "b": 2}`: the object was closed too early and its
                        // members go on; they are read into it.
                        let brace = self.src[..at].trim_ascii_end().len() - 1;
                        self.reopen(Container::Object, brace)?;
                        self.pos = at + 1;
                        if self.begin_member(Some(at))? {
                            self.one_value()?;
                        }
                        if let Some(part) = parts.last_mut() {
                            part.end = self.out.len();
                        }
                    }
                    // `1 2`, `"a" "b"`: more values, which reach `dropped` (or the array),
                    // like `{..}{..}` (splitting is not a repair, so also under `strict`).
                    Some(_) if self.scalar_starts(at) => break,
                    Some(b',')
                        if !self.strict && {
                            let next = self.skip_spaces_from(at + 1);
                            next < self.src.len() && self.scalar_starts(next)
                        } =>
                    {
                        // `1,2,3`: values separated by commas.
                        self.note_prose(at, at + 1);
                        self.pos = at + 1;
                    }
                    Some(_) if !self.strict => {
                        if !self.skip_to_next_value(at) {
                            return Ok(());
                        }
                        break;
                    }
                    Some(_) => return Err(self.invalid(at, "unexpected text after the value")),
                }
            }
        }
    }

    /// After a value that is an object, whether a comma at `at` is followed by a member
    /// (`"key":`).
    fn members_follow_object(&self, at: usize) -> bool {
        if self.out.last() != Some(&b'}') || !self.src[..at].trim_ascii_end().ends_with(b"}") {
            return false;
        }
        let key = self.skip_spaces_from(at + 1);
        self.src.get(key) == Some(&b'"') && self.quoted_key_at(key)
    }

    /// Whether a scalar that can stand as a value of its own starts at `at`: a double-quoted
    /// string, a number, or `true`/`false`/`null` as a whole word (prose words are not).
    fn scalar_starts(&self, at: usize) -> bool {
        let rest = &self.src[at..];
        match rest.first() {
            Some(b'"') => true,
            Some(b'0'..=b'9') => true,
            Some(b'-') => rest.get(1).is_some_and(u8::is_ascii_digit),
            _ => [&b"true"[..], b"false", b"null"].iter().any(|w| {
                rest.starts_with(w)
                    && !rest
                        .get(w.len())
                        .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
            }),
        }
    }

    /// Reads the values in text after the first value's region (the text after a closing code
    /// fence), skipping what is not JSON.
    pub(crate) fn more_values(
        &mut self,
        parts: &mut Vec<Range<usize>>,
        jsonp: bool,
    ) -> Result<(), Error> {
        if self.skip_to_next_value(self.pos) {
            self.document(parts, jsonp)?;
        }
        Ok(())
    }

    /// Text after a value that is not JSON: `{"a":1}, {"b":2}`, `{"a":1}. Also {"b":2}`, a
    /// second fenced block. A later value that clearly opens is read as one more value (so it
    /// reaches `dropped`, or the array with `--concat all`, instead of vanishing into prose);
    /// the text before it is recorded. Returns whether a value follows.
    fn skip_to_next_value(&mut self, at: usize) -> bool {
        match crate::args::locate::next_clear_json_start(self.src, at) {
            Some(start) => {
                self.note_gap(at, start);
                self.pos = start;
                true
            }
            None => {
                self.note_gap(at, self.src.len());
                self.pos = self.src.len();
                false
            }
        }
    }

    /// Records the text between values, except a code fence that closes the block the value
    /// was in (its opening was recorded already).
    fn note_gap(&mut self, from: usize, to: usize) {
        let gap = &self.src[from..to];
        let fence = from + (gap.len() - gap.trim_ascii_start().len());
        let mut from = fence;
        if self.src[fence..to].starts_with(b"```") {
            let run = self.src[fence..to]
                .iter()
                .take_while(|&&b| b == b'`')
                .count();
            let rest = self.src[fence + run..to].trim_ascii();
            if rest.is_empty() {
                return; // the fence that closes the value's block
            }
            if rest.starts_with(b"```") || rest.iter().all(u8::is_ascii_alphanumeric) {
                // A closing fence and the next block's opening one ("```json").
                self.repairs.push(Repair::at(RepairKind::CodeFence, fence));
                return;
            }
            from = to - self.src[fence + run..to].trim_ascii_start().len();
        }
        if !self.src[from..to].trim_ascii().is_empty() {
            self.note_prose(from, to);
        }
    }

    /// Records text left out of the value, with its first characters.
    pub(crate) fn note_prose(&mut self, from: usize, to: usize) {
        let text = String::from_utf8_lossy(&self.src[from..to]);
        let mut repair = Repair::at(RepairKind::Prose, from);
        repair.text = Some(crate::bytes::cut(text.trim(), 100));
        self.repairs.push(repair);
    }

    /// Reads one complete value, however deeply nested, without recursion.
    fn one_value(&mut self) -> Result<(), Error> {
        loop {
            if self.value()? {
                continue;
            }
            loop {
                if self.scratch.nesting.is_empty() {
                    return Ok(());
                }
                if self.after_value()? {
                    break;
                }
            }
        }
    }

    fn peek(&self) -> Option<u8> {
        self.src.get(self.pos).copied()
    }

    fn invalid(&self, offset: usize, what: &str) -> Error {
        Error::at(Code::InvalidJson, offset, what)
    }

    /// A place that needs `kind` of repair: recorded, or under `strict` an error.
    fn fix(&mut self, kind: RepairKind, offset: usize) -> Result<(), Error> {
        if self.strict {
            return Err(self.invalid(offset, kind.strict_message()));
        }
        self.repairs.push(Repair::at(kind, offset));
        Ok(())
    }

    /// Skips whitespace and, when repairing, comments (and stray fences and Unicode spaces).
    #[inline(always)]
    fn skip_ws(&mut self) -> Result<(), Error> {
        // Most calls find nothing to skip, or one space after a comma or colon: those are
        // answered here, inlined, without the loop (skip_ws was a tenth of the profile).
        if self.peek() == Some(b' ') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b' ' | b'\t' | b'\n' | b'\r' | b'/' | b'#' | b'`' | 0xC2 | 0xE2 | 0xE3 | 0xEF) => {
                self.skip_ws_more()
            }
            _ => Ok(()),
        }
    }

    #[inline(never)]
    fn skip_ws_more(&mut self) -> Result<(), Error> {
        loop {
            match self.peek() {
                Some(b' ' | b'\t' | b'\n' | b'\r') => self.pos += 1,
                Some(b'/') if !self.strict => match self.src.get(self.pos + 1) {
                    Some(b'/') => {
                        self.fix(RepairKind::Comment, self.pos)?;
                        self.skip_line();
                    }
                    Some(b'*') => {
                        self.fix(RepairKind::Comment, self.pos)?;
                        let body = self.pos + 2;
                        self.pos = match memchr::memmem::find(&self.src[body..], b"*/") {
                            Some(i) => body + i + 2,
                            None => self.src.len(),
                        };
                    }
                    _ => return Ok(()),
                },
                Some(b'#') if !self.strict => {
                    self.fix(RepairKind::Comment, self.pos)?;
                    self.skip_line();
                }
                Some(b'`') if !self.strict && self.src[self.pos..].starts_with(b"```") => {
                    // `{"a": "b"```: a code fence inside the value is not part of it (recorded
                    // unless it ends the input: a closing fence, counted with its opening one).
                    let fence = self.pos;
                    self.pos += self.src[self.pos..]
                        .iter()
                        .take_while(|&&b| b == b'`')
                        .count();
                    self.pos += self.src[self.pos..]
                        .iter()
                        .take_while(|b| b.is_ascii_alphanumeric())
                        .count();
                    if !self.src[self.pos..].trim_ascii().is_empty() {
                        self.fix(RepairKind::CodeFence, fence)?;
                    }
                }
                Some(0xC2 | 0xE2 | 0xE3 | 0xEF) if !self.strict => {
                    let Some(len) = unicode_space(&self.src[self.pos..]) else {
                        return Ok(());
                    };
                    self.fix(RepairKind::UnicodeSpace, self.pos)?;
                    self.pos += len;
                }
                _ => return Ok(()),
            }
        }
    }

    fn skip_line(&mut self) {
        self.pos = match memchr::memchr(b'\n', &self.src[self.pos..]) {
            Some(i) => self.pos + i + 1,
            None => self.src.len(),
        };
    }

    /// Reads a value at the current position. Returns `true` when it opened a container that
    /// now expects a value, `false` when a whole value was written.
    fn value(&mut self) -> Result<bool, Error> {
        self.skip_ws()?;
        let at = self.pos;
        let Some(b) = self.peek() else {
            return match self.scratch.nesting.top() {
                Some(_) if self.strict => Err(self.invalid(at, "unexpected end of input")),
                Some(level) if level.kind() == Container::Object && self.last_key_repeats() => {
                    // `{"a": 1, "a` cut off: a repeated key with no value must not replace the
                    // value the key already has; the member is left out.
                    let entry = self.scratch.keys.pop().expect("the member's key");
                    if self.key_reported {
                        // The key's only repeat is the one left out.
                        if let Some(i) = self
                            .repairs
                            .iter()
                            .rposition(|r| r.kind == RepairKind::DuplicateKey)
                        {
                            self.repairs.remove(i);
                        }
                    }
                    let offset = self.key_at;
                    // A repeated key is never the object's first, so members remain.
                    self.out.truncate(entry.start - 1);
                    self.note_prose(offset, at);
                    Ok(false)
                }
                // `{"a":` cut off: the key is kept, with null for the value it never got.
                Some(_) => {
                    self.fix(RepairKind::MissingValue, at)?;
                    self.out.extend_from_slice(b"null");
                    Ok(false)
                }
                None => Err(self.invalid(at, "expected a value, found the end of input")),
            };
        };
        match b {
            b'{' => {
                self.pos += 1;
                self.open(Container::Object, at)?;
                self.begin_member(None)
            }
            b'[' => {
                self.pos += 1;
                self.open(Container::Array, at)?;
                self.begin_element(None)
            }
            b'(' if !self.strict => {
                // `{"a": (1, 2)}`: a Python tuple is an array.
                self.fix(RepairKind::Parentheses, at)?;
                self.pos += 1;
                self.open(Container::Array, at)?;
                self.scratch.nesting.mark_paren();
                self.begin_element(None)
            }
            b'"' => self.string_value(Quote::Double, 1).map(|()| false),
            b'-' | b'0'..=b'9' => self.number().map(|()| false),
            _ if !self.strict && self.ellipsis_at(at).is_some() => {
                // `{"a": ...}`: both json_repair and jsonrepair keep the text, so the reader
                // sees that something was elided rather than a made-up value.
                let len = self.ellipsis_at(at).unwrap_or(3);
                self.fix(RepairKind::Ellipsis, at)?;
                self.out.extend_from_slice(b"\"...\"");
                self.pos = at + len;
                Ok(false)
            }
            b'+' | b'.' if !self.strict => self.number().map(|()| false),
            b'/' if !self.strict && regex_len(&self.src[at..]).is_some() => {
                // `{"re": /^a+$/gi}`: a JavaScript regular expression literal is its text.
                let len = regex_len(&self.src[at..]).unwrap_or(1);
                self.fix(RepairKind::UnquotedString, at)?;
                push_json_string(self.out, &self.src[at..at + len]);
                self.pos = at + len;
                Ok(false)
            }
            b',' | b'}' | b']' if !self.strict && !self.scratch.nesting.is_empty() => {
                // `{"a": }`: the key is kept, with null for the value it never got.
                self.fix(RepairKind::MissingValue, at)?;
                self.out.extend_from_slice(b"null");
                Ok(false)
            }
            _ => {
                if let Some((quote, len)) = Quote::opening(&self.src[at..])
                    && !self.strict
                {
                    return self.string_value(quote, len).map(|()| false);
                }
                if b.is_ascii_alphabetic() || b == b'_' || b == b'$' {
                    return self.word().map(|()| false);
                }
                if !self.strict
                    && !self.scratch.nesting.is_empty()
                    && !matches!(b, b':' | b',' | b'{' | b'}' | b'[' | b']' | b'(' | b')')
                {
                    // `{path: /tmp/x}`, `{ключ: значение}`: text no JSON value starts with is
                    // kept as a string.
                    return self.bare_string().map(|()| false);
                }
                Err(self.invalid(at, "expected a value"))
            }
        }
    }

    fn open(&mut self, kind: Container, at: usize) -> Result<(), Error> {
        self.push_frame(kind, at, false)?;
        self.out.push(match kind {
            Container::Array => b'[',
            Container::Object => b'{',
        });
        Ok(())
    }

    /// Opens again the container of `kind` that was closed too early by the bracket at
    /// `bracket` (`{"a": 1}, "b": 2}`, `{"a": [1], [2]}`): the bracket is taken out of the
    /// output and the container goes on where it left off.
    fn reopen(&mut self, kind: Container, bracket: usize) -> Result<(), Error> {
        self.fix(RepairKind::ExtraBracket, bracket)?;
        self.out.pop();
        // `{}, "b": 2}`: an empty container has no member for a comma to follow.
        let empty = matches!(self.out.last(), Some(b'{' | b'['));
        self.push_frame(kind, bracket, !empty)
    }

    /// A string element followed by a colon at `colon`. After other elements of an array that
    /// is a member's value (`{"a": [1, 2 "b": 3}`), the array's `]` was left out and the string
    /// is the object's next key; otherwise (`["key": "value"}]`) an object's `{` was left out
    /// before it (json_repair's readings of both).
    #[cold]
    fn member_in_array(&mut self, colon: usize) -> Result<bool, Error> {
        let first = matches!(self.out.get(self.element_out.wrapping_sub(1)), Some(b'['));
        if first || self.scratch.nesting.parent() != Some(Container::Object) {
            return self.object_from_element(colon);
        }
        let at = self.element_at;
        // `[1, 2 "b": 3`: it was not a comma that was missing before the string.
        if self
            .repairs
            .last()
            .is_some_and(|r| r.kind == RepairKind::MissingComma && r.offset == Some(at))
        {
            self.repairs.pop();
        }
        self.fix(RepairKind::MissingBracket, at)?;
        let key = self.out.split_off(self.element_out);
        let comma = self.out.pop();
        debug_assert_eq!(comma, Some(b','), "the comma before a later element");
        self.close_frame();
        if self.scratch.nesting.add_member() {
            self.out.push(b',');
        }
        let start = self.out.len();
        self.out.extend_from_slice(&key);
        self.note_key(start, at);
        self.out.push(b':');
        self.pos = colon + 1;
        Ok(true)
    }

    /// Makes the string element just written the first key of an object opened before it,
    /// whose `{` was left out; the colon is at `colon`. Returns `true`: a value comes next.
    fn object_from_element(&mut self, colon: usize) -> Result<bool, Error> {
        let at = self.element_at;
        self.push_frame(Container::Object, at, true)?;
        self.fix(RepairKind::MissingBracket, at)?;
        let start = self.element_out;
        self.out.insert(start, b'{');
        self.note_key(start + 1, at);
        self.out.push(b':');
        self.pos = colon + 1;
        Ok(true)
    }

    /// Opens a level for a container whose bracket is (or would be) at `open`, unless that
    /// goes past `--max-nesting`.
    fn push_frame(&mut self, kind: Container, open: usize, nonempty: bool) -> Result<(), Error> {
        if self.scratch.nesting.depth() >= self.max_nesting {
            return Err(Error::at(
                Code::TooDeep,
                open,
                format_args!("arrays and objects nested deeper than {}", self.max_nesting),
            ));
        }
        let keys_base = self.scratch.keys.len();
        self.scratch.nesting.push(kind, open, nonempty, keys_base);
        match kind {
            Container::Array => self.open_arrays += 1,
            Container::Object => self.open_objects += 1,
        }
        Ok(())
    }

    fn top(&self) -> Container {
        self.scratch
            .nesting
            .top()
            .map_or(Container::Array, |level| level.kind())
    }

    /// After `{` or a comma in an object: reads the next key and its colon (`true`), or the
    /// closing brace (`false`). `comma` is where the comma before it was, if any.
    fn begin_member(&mut self, mut comma: Option<usize>) -> Result<bool, Error> {
        loop {
            self.skip_ws()?;
            let at = self.pos;
            match self.peek() {
                None => {
                    self.close_at_end()?;
                    return Ok(false);
                }
                Some(b'}') => {
                    if let Some(comma) = comma {
                        self.fix(RepairKind::TrailingComma, comma)?;
                    }
                    self.pos += 1;
                    self.close_frame();
                    return Ok(false);
                }
                Some(b']') if !self.strict => {
                    if self.closer(b']', at)? {
                        return Ok(false);
                    }
                }
                Some(b',') if !self.strict => {
                    self.fix(RepairKind::ExtraComma, at)?;
                    self.pos += 1;
                    comma = Some(at);
                }
                Some(b'.' | 0xE2) if !self.strict && self.ellipsis_at(at).is_some() => {
                    comma = self.skip_ellipsis(at)?;
                }
                Some(b'[') if !self.strict && comma.is_some() && self.array_closed_early(at) => {
                    // `{"a": [1, 2], [3, 4], "b": 5}`: an array where a key should be, after
                    // a member whose value is an array: that array was closed too early, and
                    // its elements go on (json_repair's reading; it keeps every element).
                    let comma = comma.expect("checked above");
                    let bracket = self.src[..comma].trim_ascii_end().len() - 1;
                    self.reopen(Container::Array, bracket)?;
                    self.pos = at + 1;
                    return self.begin_element(None);
                }
                Some(b'{') if !self.strict && self.object_in_array() => {
                    // `[{"i":1,{"i":2}]`: the next element starts before the object closed.
                    if let Some(comma) = comma {
                        self.fix(RepairKind::TrailingComma, comma)?;
                    }
                    self.fix(RepairKind::MissingBracket, at)?;
                    self.close_frame();
                    return Ok(false);
                }
                Some(b'{') if !self.strict => {
                    // `{"a": 1, {"b": 2}}`: a brace where a key should be; its members are the
                    // object's own (json_repair's reading), and the brace that closes them
                    // closes the object.
                    self.fix(RepairKind::ExtraBracket, at)?;
                    self.pos += 1;
                }
                Some(b'[') if !self.strict => {
                    // `{"a": 1, ["x"], "b": 2}`: an array where a key should be has no key to
                    // be the value of: it is left out, and recorded.
                    let end = json_extent(self.src, at).unwrap_or(self.src.len());
                    self.note_prose(at, end);
                    self.pos = end;
                }
                Some(_) => {
                    self.key()?;
                    self.colon()?;
                    return Ok(true);
                }
            }
        }
    }

    /// After `[` or a comma in an array: positions at the next element (`true`), or reads the
    /// closing bracket (`false`).
    fn begin_element(&mut self, mut comma: Option<usize>) -> Result<bool, Error> {
        loop {
            self.skip_ws()?;
            let at = self.pos;
            match self.peek() {
                None => {
                    self.close_at_end()?;
                    return Ok(false);
                }
                Some(b']') => {
                    if let Some(comma) = comma {
                        self.fix(RepairKind::TrailingComma, comma)?;
                    }
                    self.pos += 1;
                    self.close_frame();
                    return Ok(false);
                }
                Some(b'}') if !self.strict => {
                    if self.closer(b'}', at)? {
                        return Ok(false);
                    }
                }
                Some(b')') if !self.strict => {
                    self.close_paren(at)?;
                    return Ok(false);
                }
                Some(b',') if !self.strict => {
                    self.fix(RepairKind::ExtraComma, at)?;
                    self.pos += 1;
                    comma = Some(at);
                }
                Some(b'.' | 0xE2) if !self.strict && self.ellipsis_at(at).is_some() => {
                    comma = self.skip_ellipsis(at)?;
                }
                Some(b'-' | b'+') if !self.strict && lone_sign_len(&self.src[at..]).is_some() => {
                    // `[1, -]`, `[1, -` cut off: a sign with no digits is no number; the
                    // element is left out (json_repair's reading; not jsonrepair's `-0`).
                    self.fix(RepairKind::NumberFormat, at)?;
                    self.pos = at + lone_sign_len(&self.src[at..]).unwrap_or(1);
                    self.skip_ws()?;
                    if self.peek() == Some(b',') {
                        self.pos += 1;
                    }
                    comma = None;
                }
                Some(_) => {
                    if self.scratch.nesting.add_member() {
                        self.out.push(b',');
                    }
                    self.element_out = self.out.len();
                    self.element_at = at;
                    return Ok(true);
                }
            }
        }
    }

    /// The length of an ellipsis (`...` or `…`) at `at`, if one is there.
    fn ellipsis_at(&self, at: usize) -> Option<usize> {
        let s = &self.src[at..];
        if s.starts_with(b"...") {
            Some(3 + s[3..].iter().take_while(|&&b| b == b'.').count())
        } else if s.starts_with("\u{2026}".as_bytes()) {
            Some(3)
        } else {
            None
        }
    }

    /// Skips `...` (or `…`) standing for elided items, and the comma after it.
    fn skip_ellipsis(&mut self, at: usize) -> Result<Option<usize>, Error> {
        self.fix(RepairKind::Ellipsis, at)?;
        self.pos = at + self.ellipsis_at(at).unwrap_or(3);
        self.skip_ws()?;
        if self.peek() == Some(b',') {
            self.pos += 1;
            return Ok(None);
        }
        Ok(None)
    }

    /// After a value inside a container: reads the comma and what follows it (`true` when a
    /// value is expected next), or the closing bracket (`false`).
    fn after_value(&mut self) -> Result<bool, Error> {
        loop {
            self.skip_ws()?;
            let at = self.pos;
            let top = self.top();
            match self.peek() {
                None => {
                    self.close_at_end()?;
                    return Ok(false);
                }
                Some(b',') => {
                    self.pos += 1;
                    return match top {
                        Container::Object => self.begin_member(Some(at)),
                        Container::Array => self.begin_element(Some(at)),
                    };
                }
                Some(c @ (b'}' | b']')) => {
                    if self.closer(c, at)? {
                        return Ok(false);
                    }
                }
                Some(b')') if !self.strict && top == Container::Array => {
                    self.close_paren(at)?;
                    return Ok(false);
                }
                Some(b'.' | 0xE2) if !self.strict && self.ellipsis_at(at).is_some() => {
                    // `[1, 2 ...]`: the elision stands where a comma would.
                    self.skip_ellipsis(at)?;
                }
                Some(b':') if !self.strict && self.string_element_ended() => {
                    // A member where an element should be.
                    return self.member_in_array(at);
                }
                Some(b'{') if !self.strict && self.object_in_array() => {
                    // `[{"i":1{"i":2}]`: the next element starts before the object closed.
                    self.fix(RepairKind::MissingBracket, at)?;
                    self.close_frame();
                    return Ok(false);
                }
                Some(b'"')
                    if !self.strict
                        && matches!(
                            self.src.get(self.skip_spaces_from(at + 1)),
                            None | Some(b',' | b'}' | b']')
                        ) =>
                {
                    // `{"n": 12345", "m": 1}`: a quote closing a value that never opened one.
                    self.note_prose(at, at + 1);
                    self.pos = at + 1;
                }
                Some(b'+') if !self.strict => {
                    // `{"a": 1 + 2}`, `{"msg": "Hi " + name}`: an expression. Its first operand
                    // is the value; the rest cannot be evaluated and is recorded, not made a key.
                    let closer = match top {
                        Container::Object => b'}',
                        Container::Array => b']',
                    };
                    let rest = &self.src[at..];
                    let len = rest
                        .iter()
                        .position(|&b| b == b',' || b == closer || b == b'\n')
                        .unwrap_or(rest.len());
                    self.note_prose(at, at + len);
                    self.pos = at + len;
                }
                Some(_)
                    if !self.strict
                        && self.out.last() == Some(&b'"')
                        && self.words_end_object(at).is_some() =>
                {
                    // `{"b": "data" AAAA }`: words after a string, up to the brace, are not a
                    // member (no colon): they are left out, and recorded (json_repair drops
                    // them too).
                    let end = self.words_end_object(at).unwrap_or(at);
                    self.note_prose(at, end);
                    self.pos = end;
                }
                Some(_)
                    if !self.strict && top == Container::Object && self.scalar_ends_item(at) =>
                {
                    // `{"b": "x" true}`: a second value where a member should be.
                    let len = self.src[at..]
                        .iter()
                        .position(|&b| matches!(b, b',' | b'}' | b']' | b'\n'))
                        .unwrap_or(self.src.len() - at);
                    self.note_prose(at, at + len);
                    self.pos = at + len;
                }
                Some(_) if !self.strict && self.starts_value(at) => {
                    self.fix(RepairKind::MissingComma, at)?;
                    return match top {
                        Container::Object => self.begin_member(None),
                        Container::Array => self.begin_element(None),
                    };
                }
                Some(_) => {
                    return Err(self.invalid(
                        at,
                        match top {
                            Container::Object => "expected ',' or '}'",
                            Container::Array => "expected ',' or ']'",
                        },
                    ));
                }
            }
        }
    }

    fn starts_value(&self, at: usize) -> bool {
        let s = &self.src[at..];
        match s[0] {
            b'{' | b'[' | b'"' | b'\'' | b'-' | b'+' | b'_' | b'$' => true,
            b if b.is_ascii_alphanumeric() => true,
            _ => Quote::opening(s).is_some(),
        }
    }

    /// Handles a closing bracket `c` at `at`. Returns `true` when it closed the open
    /// container, `false` when it was a stray bracket that was skipped.
    fn closer(&mut self, c: u8, at: usize) -> Result<bool, Error> {
        let wanted = if c == b'}' {
            Container::Object
        } else {
            Container::Array
        };
        if self.top() == wanted {
            self.pos += 1;
            self.close_frame();
            return Ok(true);
        }
        let open_of_kind = match wanted {
            Container::Object => self.open_objects,
            Container::Array => self.open_arrays,
        };
        if open_of_kind > 0 {
            self.fix(RepairKind::MismatchedBracket, at)?;
            let parent_is_object = self.scratch.nesting.parent() == Some(Container::Object);
            if wanted == Container::Object && parent_is_object && self.key_follows(at + 1) {
                // `{"a": [1, 2}, "b": 4}`: more members follow, so the brace was written for
                // the array's `]` (json_repair's reading; closing the object too would leave
                // `"b"` outside it).
                self.pos += 1;
            }
            // Otherwise `{"a": [1, 2}`: the brace closes the array it skipped, then the object.
            self.close_frame();
            Ok(true)
        } else {
            self.fix(RepairKind::ExtraBracket, at)?;
            self.pos += 1;
            Ok(false)
        }
    }

    /// In an object, after a comma before `at`: whether the member before the comma has an
    /// array for its value, closed just before the comma.
    fn array_closed_early(&self, at: usize) -> bool {
        let before = self.src[..at].trim_ascii_end();
        let Some(before) = before.strip_suffix(b",") else {
            return false;
        };
        before.trim_ascii_end().ends_with(b"]") && self.out.last() == Some(&b']')
    }

    /// Whether the last key of the open object appeared earlier in it.
    fn last_key_repeats(&self) -> bool {
        let Some(level) = self.scratch.nesting.top() else {
            return false;
        };
        let keys = &self.scratch.keys[self.scratch.nesting.keys_base()..];
        let Some((last, earlier)) = keys.split_last() else {
            return false;
        };
        let key = &self.out[last.start..last.end];
        level.has_duplicate() && earlier.iter().any(|e| &self.out[e.start..e.end] == key)
    }

    /// Whether the open container is an object directly inside an array.
    fn object_in_array(&self) -> bool {
        let nesting = &self.scratch.nesting;
        nesting.top().map(|level| level.kind()) == Some(Container::Object)
            && nesting.parent() == Some(Container::Array)
    }

    /// `)` closing the open array: the end of a tuple, or (`[1, 2)`) a mismatched bracket.
    fn close_paren(&mut self, at: usize) -> Result<(), Error> {
        let paren = self
            .scratch
            .nesting
            .top()
            .is_some_and(|level| level.paren());
        if !paren {
            self.fix(RepairKind::MismatchedBracket, at)?;
        }
        self.pos = at + 1;
        self.close_frame();
        Ok(())
    }

    /// Whether `, key:` follows at `at` (past spaces): a member of an object comes next.
    fn key_follows(&self, at: usize) -> bool {
        let comma = self.skip_spaces_from(at);
        if self.src.get(comma) != Some(&b',') {
            return false;
        }
        let key = self.skip_spaces_from(comma + 1);
        let ahead = &self.src[key..(key + 128).min(self.src.len())];
        let end = match ahead.first() {
            Some(&q @ (b'"' | b'\'')) => ahead[1..].iter().position(|&b| b == q).map(|i| i + 2),
            Some(&b) if is_bare_key_byte(b) => ahead.iter().position(|&b| !is_bare_key_byte(b)),
            _ => None,
        };
        end.is_some_and(|end| self.src.get(self.skip_spaces_from(key + end)) == Some(&b':'))
    }

    /// The input ended with containers open: close them all (recorded once).
    fn close_at_end(&mut self) -> Result<(), Error> {
        if self.strict {
            return Err(self.invalid(self.src.len(), "unexpected end of input"));
        }
        let open = self.scratch.nesting.open().unwrap_or(self.pos);
        self.fix(RepairKind::UnterminatedContainer, open)?;
        while !self.scratch.nesting.is_empty() {
            self.close_frame();
        }
        Ok(())
    }

    fn close_frame(&mut self) {
        let frame = self.scratch.nesting.pop().expect("an open container");
        match frame.level.kind() {
            Container::Array => {
                self.open_arrays -= 1;
                self.out.push(b']');
            }
            Container::Object => {
                self.open_objects -= 1;
                // The index is cleared first: its entries are found by the keys' text at the
                // offsets in `keys`, which merging duplicates rewrites (an object of more than
                // LINEAR_KEYS keys with a duplicate sliced past the output, or left stale
                // entries for the next object at this depth).
                if frame.level.indexed() {
                    let depth = self.scratch.nesting.depth() + 1;
                    for entry in &self.scratch.keys[frame.keys_base..] {
                        let hash = fnv(&self.out[entry.start..entry.end]);
                        self.scratch.key_index.remove(&(depth, hash));
                    }
                }
                if frame.level.has_duplicate() {
                    self.merge_duplicates(frame.keys_base);
                }
                self.scratch.keys.truncate(frame.keys_base);
                self.out.push(b'}');
            }
        }
    }

    /// Rewrites the members of the object being closed so each key appears once, at its first
    /// position, with its last value (what `JSON.parse` and Python's `json` keep).
    fn merge_duplicates(&mut self, keys_base: usize) {
        let entries = &self.scratch.keys[keys_base..];
        let body_start = entries[0].start;
        let end = self.out.len();
        let value = |i: usize| -> Range<usize> {
            let stop = entries.get(i + 1).map_or(end, |next| next.start - 1);
            entries[i].end + 1..stop
        };
        let out = &self.out;
        let mut last: HashMap<&[u8], usize> = HashMap::new();
        for (i, e) in entries.iter().enumerate() {
            last.insert(&out[e.start..e.end], i);
        }
        let mut merged = Vec::with_capacity(end - body_start);
        for e in entries {
            let key = &out[e.start..e.end];
            // Only the first occurrence writes the member; later ones are folded into it.
            let Some(j) = last.remove(key) else { continue };
            if !merged.is_empty() {
                merged.push(b',');
            }
            merged.extend_from_slice(key);
            merged.push(b':');
            merged.extend_from_slice(&out[value(j)]);
        }
        self.out.truncate(body_start);
        self.out.extend_from_slice(&merged);
    }

    /// Reads an object key and writes it as a JSON string.
    fn key(&mut self) -> Result<(), Error> {
        let at = self.pos;
        if self.scratch.nesting.add_member() {
            self.out.push(b',');
        }
        let start = self.out.len();
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
        let plain_end = match self.src[at] {
            b'"' => Some(skip_plain(self.src, at + 1, Quote::Double)),
            _ => None,
        };
        if let Some(end) = plain_end.filter(|&end| {
            self.src.get(end) == Some(&b'"')
                && (self.strict || self.src.get(self.skip_spaces_from(end + 1)) == Some(&b':'))
        }) {
            // Most keys: nothing to escape before the closing quote, and a colon after it.
            self.out.extend_from_slice(&self.src[at..=end]);
            self.pos = end + 1;
        } else if let Some(colon) = self.key_cut_at_colon(at) {
            // `{"key:"value"}`, `{"key:value}`: the key's closing quote is missing before
            // its colon.
            self.fix(RepairKind::MissingQuote, colon)?;
            push_json_string(self.out, &self.src[at + 1..colon]);
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
                push_json_string(self.out, &self.src[at + len..close]);
                self.pos = close + 1;
            } else {
                self.out.push(b'"');
                self.string_body(quote, len, true)?;
                self.out.push(b'"');
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
            push_json_string(self.out, &self.src[at..at + len]);
            self.pos = at + len;
            if let Some(&(b'"' | b'\'')) = self.src.get(self.pos) {
                // `{a":"foo"}`: the key's closing quote is there, its opening one is not.
                self.fix(RepairKind::MissingQuote, self.pos)?;
                self.pos += 1;
            }
        } else {
            return Err(self.invalid(at, "expected a string key"));
        }
        self.note_key(start, at);
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

    /// Whether a quote that ends at `after` inside a double-quoted key is part of the key: no
    /// colon follows it, and a later quote with a colon after it comes before anything that
    /// ends a member. The look ahead is bounded.
    fn key_quote_is_inner(&self, after: usize) -> bool {
        if self.src.get(self.skip_spaces_from(after)) == Some(&b':') {
            return false;
        }
        let end = (after + 64).min(self.src.len());
        for p in after..end {
            match self.src[p] {
                b'"' if self.src.get(self.skip_spaces_from(p + 1)) == Some(&b':') => return true,
                b',' | b':' | b'{' | b'}' | b'[' | b']' | b'\n' => return false,
                _ => {}
            }
        }
        false
    }

    /// Where a quoted key (`"b":`) starts after bare words at `at` (`COMMENT "b": 2`), if it
    /// does. The look ahead is bounded.
    fn stray_words_before_key(&self, at: usize) -> Option<usize> {
        if self.strict || !is_bare_key_byte(self.src[at]) {
            return None;
        }
        let end = (at + 64).min(self.src.len());
        let mut p = at;
        while p < end && (is_bare_key_byte(self.src[p]) || self.src[p] == b' ') {
            p += 1;
        }
        let words = &self.src[at..p];
        (p < end && words.ends_with(b" ") && self.src[p] == b'"' && self.quoted_key_at(p))
            .then_some(p)
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
        // colon is not closed by the other quote inside it.
        if quote == Quote::Double {
            let mut p = i + 1;
            while let Some(j) = ahead.get(p..).and_then(|t| memchr::memchr2(b'"', b'\\', t)) {
                p += j;
                if ahead[p] == b'\\' {
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

    /// Remembers the key just written at `out[start..]`, and notes a duplicate. Inlined: it
    /// runs for every key, and as a call it cost 5% more instructions.
    #[inline(always)]
    fn note_key(&mut self, start: usize, at: usize) {
        let end = self.out.len();
        let depth = self.scratch.nesting.depth();
        let scratch = &mut *self.scratch;
        let level = scratch.nesting.top().expect("an open object");
        let keys_base = scratch.nesting.keys_base();
        let key = &self.out[start..end];
        let tag = key_tag(key);
        let entries = &scratch.keys[keys_base..];
        // The key's first entry in this object, if it has one.
        let first = if entries.len() < LINEAR_KEYS {
            entries
                .iter()
                .position(|e| e.tag & !REPORTED == tag && &self.out[e.start..e.end] == key)
                .map(|i| keys_base + i)
        } else {
            if !level.indexed() {
                scratch.nesting.mark_indexed();
                for (i, e) in entries.iter().enumerate() {
                    let hash = fnv(&self.out[e.start..e.end]);
                    scratch
                        .key_index
                        .entry((depth, hash))
                        .or_insert(keys_base + i);
                }
            }
            let hash = fnv(key);
            match scratch.key_index.get(&(depth, hash)) {
                Some(&i) => {
                    let e = &scratch.keys[i];
                    // A hash collision between different keys falls back to a scan.
                    if &self.out[e.start..e.end] == key {
                        Some(i)
                    } else {
                        entries
                            .iter()
                            .position(|e| &self.out[e.start..e.end] == key)
                            .map(|i| keys_base + i)
                    }
                }
                None => {
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
                let text = serde_json::from_slice::<String>(key)
                    .unwrap_or_else(|_| String::from_utf8_lossy(key).into_owned());
                repair.text = Some(text);
                self.repairs.push(repair);
            }
        }
        scratch.keys.push(KeyEntry { start, end, tag });
    }

    fn colon(&mut self) -> Result<(), Error> {
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
        self.out.push(b':');
        Ok(())
    }

    /// Reads a string value (and, when repairing, any `+ "..."` joined to it).
    fn string_value(&mut self, quote: Quote, len: usize) -> Result<(), Error> {
        let at = self.pos;
        if let Some(kind) = quote.repair() {
            self.fix(kind, at)?;
        }
        let plain_end = match quote {
            Quote::Double => Some(skip_plain(self.src, at + 1, quote)),
            _ => None,
        };
        if let Some(end) = plain_end.filter(|&end| {
            self.src.get(end) == Some(&b'"')
                && (self.strict || self.value_quote_closes(end + 1, true))
        }) {
            // Most strings: nothing to escape before the quote that closes them.
            self.out.extend_from_slice(&self.src[at..end]);
            self.pos = end + 1;
        } else {
            self.out.push(b'"');
            self.string_body(quote, len, false)?;
        }
        while !self.strict {
            let before = self.pos;
            self.pos = self.skip_blank_from(self.pos);
            if self.peek() != Some(b'+') {
                self.pos = before;
                break;
            }
            self.pos = self.skip_blank_from(self.pos + 1);
            let Some((next, len)) = Quote::opening(&self.src[self.pos..]) else {
                self.pos = before;
                break;
            };
            self.fix(RepairKind::StringConcat, before)?;
            if let Some(kind) = next.repair() {
                self.fix(kind, self.pos)?;
            }
            self.string_body(next, len, false)?;
        }
        self.out.push(b'"');
        Ok(())
    }

    /// Past whitespace and comments from `at`, without recording them (`"a" + /* c */ "b"`:
    /// the joined string is the repair).
    fn skip_blank_from(&self, mut at: usize) -> usize {
        loop {
            let rest = &self.src[at..];
            match rest {
                [b' ' | b'\t' | b'\n' | b'\r', ..] => at += 1,
                [b'/', b'*', ..] => {
                    at = memchr::memmem::find(&rest[2..], b"*/")
                        .map_or(self.src.len(), |i| at + i + 4);
                }
                [b'/', b'/', ..] => {
                    at = memchr::memchr(b'\n', rest).map_or(self.src.len(), |i| at + i + 1);
                }
                _ => return at,
            }
        }
    }

    /// Reads a string from its opening quote (`open_len` bytes) through its closing quote and
    /// writes its content, escaped for a double-quoted JSON string, without the quotes.
    /// A key's string closes at its first closing quote; a value's only where a string can
    /// end (see [`Parser::quote_is_inner`]).
    fn string_body(&mut self, quote: Quote, open_len: usize, key: bool) -> Result<(), Error> {
        let open = self.pos;
        let src = self.src;
        let mut p = open + open_len;
        let mut run = p;
        let mut noted = Noted::default();
        // Places an unterminated string may really have ended, as (source, output) offsets:
        // its last raw newline and its last `\"`.
        let mut last_escaped_quote = None;
        loop {
            // Escapes come in runs (`\\\\`, `\n\n`): the next one needs no word-wide scan.
            if src.get(p) != Some(&b'\\') {
                p = skip_plain(src, p, quote);
            }
            let Some(&c) = src.get(p) else {
                self.out.extend_from_slice(&src[run..p]);
                self.pos = p;
                if !key && self.end_unterminated(open + open_len, last_escaped_quote) {
                    return self.fix(RepairKind::MissingQuote, open);
                }
                return self.fix(RepairKind::UnterminatedString, open);
            };
            if let Some(close_len) = quote.closing(&src[p..]) {
                // A backtick key closed by an apostrophe or an acute accent only before a colon
                // (`{`it's`: 1}`).
                // A double-quoted key is not closed by a quote with more of the key and its own
                // closing quote and colon after it (`{"k"e"y": 1}`).
                let closes_key = key
                    && (quote != Quote::Backtick
                        || c == b'`'
                        || self.src.get(self.skip_spaces_from(p + close_len)) == Some(&b':'))
                    && !(c == b'"' && self.key_quote_is_inner(p + close_len));
                if self.strict
                    || closes_key
                    || (!key && self.value_quote_closes(p + close_len, !noted.quote))
                {
                    self.out.extend_from_slice(&src[run..p]);
                    self.pos = p + close_len;
                    return Ok(());
                }
                if let Some(comma) = self.unclosed_before_member(run, p) {
                    // `{"a": "x', "b": 2}`: this quote opens the next member's key, so the
                    // string ended, unclosed, at the comma before it.
                    self.out.extend_from_slice(src[run..comma].trim_ascii_end());
                    self.pos = comma;
                    return self.fix(RepairKind::MissingQuote, open);
                }
                // `"he said "hi" twice"`: a quote that is not followed by what can follow a
                // string is part of it.
                if !noted.quote {
                    noted.quote = true;
                    self.fix(RepairKind::UnescapedQuote, p)?;
                }
                self.out.extend_from_slice(&src[run..p]);
                if c == b'"' || c == b'\'' {
                    if c == b'"' {
                        self.out.extend_from_slice(b"\\\"");
                    } else {
                        self.out.push(b'\'');
                    }
                } else {
                    self.out.extend_from_slice(&src[p..p + close_len]);
                }
                p += close_len;
                run = p;
                continue;
            }
            match c {
                b'"' => {
                    // A double quote inside a single- or curly-quoted string.
                    self.out.extend_from_slice(&src[run..p]);
                    self.out.extend_from_slice(b"\\\"");
                    p += 1;
                    run = p;
                }
                // The lead byte of a character that can close some quote (a curly quote, the
                // acute accent after a backtick) but not this one here: part of the text. It
                // is stepped over whole with the rest of its character, never escaped.
                0xE2 | 0xC2 => p += 1,
                b'\\' => match src.get(p + 1) {
                    Some(b'"') if !self.strict && !key => {
                        p += 2;
                        self.out.extend_from_slice(&src[run..p]);
                        run = p;
                        last_escaped_quote = Some((p, self.out.len()));
                    }
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => p += 2,
                    Some(b'u') if hex4(src, p + 2).is_some() => {
                        if let Some(end) = surrogate_pair_or_bmp(src, p) {
                            p = end;
                        } else if !self.lone_surrogates_as_fffd {
                            // Half a surrogate pair is valid JSON (`JSON.parse` reads it):
                            // kept as written, so the value is the one the input meant.
                            p += 6;
                        } else {
                            // Half a surrogate pair names no character, and a caller that
                            // needs Unicode text gets U+FFFD (an error under `strict`).
                            self.fix(RepairKind::LoneSurrogate, p)?;
                            self.out.extend_from_slice(&src[run..p]);
                            self.out.extend_from_slice(b"\\ufffd");
                            p += 6;
                            run = p;
                        }
                    }
                    Some(b'\'') if !self.strict => {
                        // `\'` is an escape in Python and JavaScript strings, not in JSON.
                        if quote != Quote::Single && !noted.escape {
                            noted.escape = true;
                            self.fix(RepairKind::InvalidEscape, p)?;
                        }
                        self.out.extend_from_slice(&src[run..p]);
                        self.out.push(b'\'');
                        p += 2;
                        run = p;
                    }
                    _ if !self.strict && is_cut_escape(&src[p..]) => {
                        // `"abc\u00` or `"abc\` at the end of the input: half an escape names
                        // nothing; it is left out (and the string recorded as unterminated).
                        if !noted.escape {
                            noted.escape = true;
                            self.fix(RepairKind::InvalidEscape, p)?;
                        }
                        self.out.extend_from_slice(&src[run..p]);
                        p = src.len();
                        run = p;
                    }
                    _ => {
                        // Keep the backslash as written: the text after it stays as it was.
                        if !noted.escape {
                            noted.escape = true;
                            self.fix(RepairKind::InvalidEscape, p)?;
                        }
                        self.out.extend_from_slice(&src[run..p]);
                        self.out.extend_from_slice(b"\\\\");
                        p += 1;
                        run = p;
                    }
                },
                _ => {
                    if c == b'\n' && !key && !self.strict && self.item_follows(p) {
                        // `{"a": "first⏎"b": 2}`, `["abc,⏎"def"]`: a raw newline and then a
                        // member or an element; the string was never closed (a comma that
                        // ended its line was meant to follow it).
                        let text = src[run..p].trim_ascii_end();
                        let text = text.strip_suffix(b",").unwrap_or(text).trim_ascii_end();
                        self.out.extend_from_slice(text);
                        self.pos = p;
                        return self.fix(RepairKind::MissingQuote, open);
                    }
                    if !noted.control {
                        noted.control = true;
                        self.fix(RepairKind::ControlCharacter, p)?;
                    }
                    self.out.extend_from_slice(&src[run..p]);
                    push_escape(self.out, c);
                    p += 1;
                    run = p;
                }
            }
        }
    }

    /// A string whose text starts at `content` ran to the end of the input. When the input
    /// ends with closing brackets or a fence (with spaces, newlines and commas among them), or
    /// they follow its last `\"`, they belong to the structure and the string ended before
    /// them: `{"msg": "unterminated⏎}`, `["abc  ]`, `{"a": "x", then more}`,
    /// `{"a": "ends with \"}`. Returns whether it found where the string ended.
    fn end_unterminated(
        &mut self,
        content: usize,
        last_escaped_quote: Option<(usize, usize)>,
    ) -> bool {
        let is_structural =
            |b: u8| matches!(b, b'}' | b']' | b',' | b'`' | b' ' | b'\t' | b'\r' | b'\n');
        let closes = |tail: &[u8]| tail.iter().any(|&b| matches!(b, b'}' | b']' | b'`'));
        if let Some((at, out_len)) = last_escaped_quote {
            let tail = &self.src[at..];
            if closes(tail) && tail.iter().all(|&b| is_structural(b)) {
                self.out.truncate(out_len);
                self.pos = at;
                return true;
            }
        }
        let tail_len = self.src[content..]
            .iter()
            .rev()
            .take_while(|&&b| is_structural(b))
            .count();
        let at = self.src.len() - tail_len;
        let tail = &self.src[at..];
        let fenced = tail.contains(&b'`');
        if !closes(tail) || (self.scratch.nesting.is_empty() && !fenced) {
            return false;
        }
        // The tail was written into the string as is, but for raw tabs and line breaks, which
        // were escaped as two bytes.
        let written: usize = tail
            .iter()
            .map(|&b| {
                if matches!(b, b'\t' | b'\r' | b'\n') {
                    2
                } else {
                    1
                }
            })
            .sum();
        self.out.truncate(self.out.len() - written);
        self.pos = at;
        true
    }

    /// When the double quote at `quote` opens a member's key (`"b": ...`) and only spaces
    /// separate it from a comma in the string's unwritten text `src[run..quote]`: that comma.
    fn unclosed_before_member(&self, run: usize, quote: usize) -> Option<usize> {
        if self.src[quote] != b'"'
            || !self
                .scratch
                .nesting
                .top()
                .is_some_and(|level| level.kind() == Container::Object)
        {
            return None;
        }
        let before = self.src[run..quote].trim_ascii_end();
        if before.last() != Some(&b',') {
            return None;
        }
        let ahead = &self.src[quote + 1..(quote + 65).min(self.src.len())];
        let close = ahead.iter().position(|&b| b == b'"' || b == b'\n')?;
        let key = &ahead[..close];
        let is_key = ahead[close] == b'"'
            && !key.is_empty()
            && key
                .iter()
                .all(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        let next = self.skip_spaces_from(quote + 1 + close + 1);
        (is_key && self.src.get(next) == Some(&b':')).then_some(run + before.len() - 1)
    }

    /// Whether the next line starts a member (`"key":`) of the open object or an element
    /// (`"text",`) of the open array. The look ahead is bounded.
    fn item_follows(&self, newline: usize) -> bool {
        let ahead = &self.src[newline..(newline + 160).min(self.src.len())];
        let start = ahead.len() - ahead.trim_ascii_start().len();
        let Some(rest) = ahead[start..].strip_prefix(b"\"") else {
            return false;
        };
        let Some(close) = rest.iter().position(|&b| b == b'"' || b == b'\n') else {
            return false;
        };
        if rest[close] != b'"' || close == 0 {
            return false;
        }
        let next = rest[close + 1..].trim_ascii_start().first().copied();
        match self.scratch.nesting.top().map(|level| level.kind()) {
            Some(Container::Object) => next == Some(b':'),
            Some(Container::Array) => matches!(next, None | Some(b',' | b']')),
            None => false,
        }
    }

    /// Whether a quote that ends at `after` is inside the string rather than closing it: it
    /// closes when what follows (past spaces) can follow a string. Valid JSON always closes.
    fn quote_is_inner(&self, after: usize) -> bool {
        let next = self.skip_spaces_from(after);
        match self.src.get(next) {
            None => false,
            // `"say "x"", ...`: of two quotes in a row, the second closes the string when
            // what follows it can follow a string; then the first is inside it.
            Some(b'"' | b'\'') => {
                let after_second = self.skip_spaces_from(next + 1);
                matches!(
                    self.src.get(after_second),
                    None | Some(b',' | b'}' | b']' | b':' | b'\n' | b'\r')
                )
            }
            // A value's string is never followed by a colon: `"{"inner": 1}"` holds one. In
            // an array, a string followed by a colon and a value is a key whose object lost its
            // `{` (`["key": "value"}]`), unless the string opened like JSON text.
            Some(b':') => !self.key_in_array(after - 1, next),
            // `"say "x", then "y""`: in an object, a comma must lead to a member; a bare word
            // that is not a key means the comma is the string's own.
            Some(b',') => self.prose_follows_comma(next + 1),
            Some(b'`') if self.src[next..].starts_with(b"```") => false,
            // `"[LINK]("https://x")"`: a parenthesis with a quote after it is text.
            Some(b')') => self.src.get(self.skip_spaces_from(next + 1)) == Some(&b'"'),
            Some(b'}' | b']' | b'\n' | b'\r' | b'+' | b'/' | b'#' | b';' | b'{' | b'[') => false,
            // `["a" 2]`, `{"b": "x" true}`: a whole number or literal that ends the item
            // means a comma is missing after a closed string; `"say "hi" there"` holds words,
            // but in an array `"a" b]` is two elements.
            Some(_) => !self.scalar_ends_item(next) && !self.bare_element_follows(next),
        }
    }

    /// Whether the value just written is a string element of the open array. (After a nested
    /// container, `element_out` is stale, but the output then ends with its bracket.)
    fn string_element_ended(&self) -> bool {
        self.top() == Container::Array
            && self.out.get(self.element_out) == Some(&b'"')
            && self.out.last() == Some(&b'"')
    }

    /// Whether the string closed by the quote at `quote`, followed by a colon at `colon`, is an
    /// array element that is really a key: it is directly in an array, it is the string's first
    /// quote, its text does not open like JSON, and a value follows the colon.
    #[cold]
    fn key_in_array(&self, quote: usize, colon: usize) -> bool {
        if self.top() != Container::Array || self.scratch.nesting.is_empty() {
            return false;
        }
        let open = self.element_at;
        let text = &self.src[open + 1..quote];
        let value = self.skip_spaces_from(colon + 1);
        matches!(self.src.get(open), Some(b'"' | b'\''))
            && !text.is_empty()
            && memchr::memchr3(b'"', b'{', b'[', text).is_none()
            && !text.contains(&b'\\')
            && value < self.src.len()
            && self.starts_value(value)
    }

    /// The bounded look ahead at `at`, and the length of the bare words (letters, digits, `_`,
    /// `-` and spaces) it starts with.
    fn words_at(&self, at: usize) -> (&'a [u8], usize) {
        let ahead = &self.src[at..(at + 64).min(self.src.len())];
        let len = ahead
            .iter()
            .take_while(|&&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b' '))
            .count();
        (ahead, len)
    }

    /// Past spaces from `at`, when there are some: words after a closing quote must stand
    /// apart from it to be read as something else (`"5"px` is one string with a quote in it).
    fn after_space(&self, at: usize) -> Option<usize> {
        let at = self.skip_spaces_from(at);
        self.src[..at]
            .last()
            .is_some_and(u8::is_ascii_whitespace)
            .then_some(at)
    }

    /// In an object, where bare words after a space at `at` end when they run to its closing
    /// brace with no colon or quote among them. The look ahead is bounded.
    fn words_end_object(&self, at: usize) -> Option<usize> {
        if self.top() != Container::Object || self.scratch.nesting.is_empty() {
            return None;
        }
        let at = self.after_space(at)?;
        let (ahead, len) = self.words_at(at);
        let words = ahead[..len].trim_ascii_end();
        (!words.is_empty() && ahead.get(len) == Some(&b'}')).then_some(at + words.len())
    }

    /// Whether the quote of a value's string that ends at `after` closes it. `first`: no quote
    /// inside the string came before it; only then are words after it read as the next element
    /// (`["value1" value2", "value3"]`) or as stray text before the object's brace (`"data"
    /// AAAA }`), since after an inner quote (`"say "hi" there"`) they are the string's own.
    fn value_quote_closes(&self, after: usize, first: bool) -> bool {
        !self.quote_is_inner(after)
            || first
                && (self.words_end_object(after).is_some()
                    || self.quoted_word_follows(after)
                    || self.bare_key_follows(after))
    }

    /// In an object, whether an unquoted key and its colon follow at `at` after a space:
    /// `{b: 'hello' c: True}` is two members with the comma left out. Only for a string's first
    /// quote (after an inner one, `"say "hi" note: x"`, the words are the string's own); a
    /// scheme (`http://`) is text. The look ahead is bounded.
    fn bare_key_follows(&self, at: usize) -> bool {
        if self.top() != Container::Object || self.scratch.nesting.is_empty() {
            return false;
        }
        let Some(at) = self.after_space(at) else {
            return false;
        };
        let ahead = &self.src[at..(at + 64).min(self.src.len())];
        let len = ahead
            .iter()
            .take_while(|&&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'-'))
            .count();
        if len == 0 || len == ahead.len() || ahead[0].is_ascii_digit() || ahead[0] == b'-' {
            return false;
        }
        let colon = self.skip_spaces_from(at + len);
        self.src.get(colon) == Some(&b':') && self.src.get(colon + 1) != Some(&b'/')
    }

    /// In an array, whether bare words at `at` run to the closing bracket (with no quote among
    /// them; before a comma they may still be the string's own). The look ahead is bounded.
    fn bare_element_follows(&self, at: usize) -> bool {
        if self.top() != Container::Array || self.scratch.nesting.is_empty() {
            return false;
        }
        let (ahead, len) = self.words_at(at);
        len > 0 && ahead.get(len) == Some(&b']')
    }

    /// In an array, whether a word with a stray closing quote, before a comma or the bracket,
    /// follows at `at` after a space: `["value1" value2", "value3"]` holds three elements
    /// (json_repair's reading). The look ahead is bounded.
    fn quoted_word_follows(&self, at: usize) -> bool {
        if self.top() != Container::Array || self.scratch.nesting.is_empty() {
            return false;
        }
        let Some(at) = self.after_space(at) else {
            return false;
        };
        let (ahead, len) = self.words_at(at);
        len > 0
            && ahead.get(len) == Some(&b'"')
            && matches!(
                self.src.get(self.skip_spaces_from(at + len + 1)),
                Some(b',' | b']')
            )
    }

    /// Whether a number or `true`/`false`/`null` at `at` is followed (past spaces) by what ends
    /// an item: a comma, a closing bracket, a line break or the end. Bounded look ahead.
    fn scalar_ends_item(&self, at: usize) -> bool {
        let ahead = &self.src[at..(at + 64).min(self.src.len())];
        let len = ahead
            .iter()
            .take_while(|&&b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'+'))
            .count();
        let token = &ahead[..len];
        let scalar = matches!(token, b"true" | b"false" | b"null")
            || (token
                .first()
                .is_some_and(|b| b.is_ascii_digit() || *b == b'-')
                && token[1..]
                    .iter()
                    .all(|&b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+')));
        if !scalar || (len == ahead.len() && at + len < self.src.len()) {
            return false;
        }
        let next = self.skip_spaces_from(at + len);
        matches!(
            self.src.get(next),
            None | Some(b',' | b'}' | b']' | b'\n' | b'\r')
        )
    }

    /// In an object, whether the text after a comma at `at - 1` is a word that is not a key
    /// (no colon after it). The look ahead is bounded.
    fn prose_follows_comma(&self, at: usize) -> bool {
        if !self
            .scratch
            .nesting
            .top()
            .is_some_and(|level| level.kind() == Container::Object)
        {
            return false;
        }
        let start = self.skip_spaces_from(at);
        let ahead = &self.src[start..(start + 64).min(self.src.len())];
        let word = ahead
            .iter()
            .take_while(|&&b| b.is_ascii_alphanumeric() || b == b'_')
            .count();
        if word == 0 || word == ahead.len() {
            return false;
        }
        // `b:` is a key, and so is `b":` (its opening quote missing), and `NOTE "b":` is a
        // stray word before one.
        if self.stray_words_before_key(start).is_some() {
            return false;
        }
        let mut after = self.skip_spaces_from(start + word);
        if self.src.get(after) == Some(&b'"') {
            after = self.skip_spaces_from(after + 1);
        }
        self.src.get(after) != Some(&b':')
    }

    fn skip_spaces_from(&self, mut at: usize) -> usize {
        while let Some(b' ' | b'\t') = self.src.get(at) {
            at += 1;
        }
        at
    }

    fn number(&mut self) -> Result<(), Error> {
        let src = self.src;
        let start = self.pos;
        let out_start = self.out.len();
        let repairs_before = self.repairs.len();
        let mut p = start;
        if !self.strict && matches!(src[p], b'-' | b'+') {
            // `-NaN`, `+Infinity`, `- Infinity`: a sign (and spaces) before a word that has no
            // JSON form; null, as for the unsigned word.
            let word = self.skip_spaces_from(p + 1);
            if let Some(len) = non_finite_at(&src[word..]) {
                self.fix(RepairKind::NonFinite, start)?;
                self.out.extend_from_slice(b"null");
                self.pos = word + len;
                return Ok(());
            }
        }
        if !self.strict
            && let Some(len) = lone_sign_len(&src[start..])
        {
            // `{"n": -}`, `{"n": +.`: a sign with no digits is no number; the member keeps its
            // key with null, as `{"n": }` does. Alone, it leaves no value at all.
            if self.scratch.nesting.is_empty() {
                return Err(self.invalid(start, "a sign with no digits is no number"));
            }
            self.fix(RepairKind::MissingValue, start)?;
            self.out.extend_from_slice(b"null");
            self.pos = start + len;
            return Ok(());
        }
        match src[p] {
            b'-' => {
                self.out.push(b'-');
                p += 1;
                if !self.strict {
                    let digit = self.skip_spaces_from(p);
                    if digit > p && src.get(digit).is_some_and(u8::is_ascii_digit) {
                        // `[- 1]`: the sign belongs to the number after the space.
                        self.fix(RepairKind::NumberFormat, p)?;
                        p = digit;
                    } else if is_delimiter(&src[p..]) {
                        // `{"n": -}` or input cut off after the sign: no number was written.
                        self.out.truncate(out_start);
                        self.fix(RepairKind::MissingValue, start)?;
                        self.out.extend_from_slice(b"null");
                        self.pos = p;
                        return Ok(());
                    }
                }
            }
            b'+' => {
                self.fix(RepairKind::NumberFormat, start)?;
                p += 1;
            }
            _ => {}
        }
        if src[p..].starts_with(b"Infinity") {
            // Under `strict` (a repair reads it above): an error.
            self.fix(RepairKind::NonFinite, start)?;
        }
        let int_start = p;
        while p < src.len() && src[p].is_ascii_digit() {
            p += 1;
        }
        let int = &src[int_start..p];
        if int.is_empty() {
            if src.get(p) == Some(&b'.') && src.get(p + 1).is_some_and(u8::is_ascii_digit) {
                self.fix(RepairKind::NumberFormat, start)?;
                self.out.push(b'0');
            } else if self.strict {
                return Err(self.invalid(p, "expected a digit"));
            } else {
                // `--1`, `.e5`: not a number; the text is kept.
                self.out.truncate(out_start);
                self.repairs.truncate(repairs_before);
                self.pos = start;
                return self.bare_string();
            }
        } else if int.len() > 1 && int[0] == b'0' {
            self.fix(RepairKind::NumberFormat, int_start)?;
            let zeros = int
                .iter()
                .take_while(|&&d| d == b'0')
                .count()
                .min(int.len() - 1);
            self.out.extend_from_slice(&int[zeros..]);
        } else {
            self.out.extend_from_slice(int);
        }
        if src.get(p) == Some(&b'.') {
            let dot = p;
            p += 1;
            while p < src.len() && src[p].is_ascii_digit() {
                p += 1;
            }
            if p == dot + 1 {
                self.fix(RepairKind::NumberFormat, dot)?;
                self.out.extend_from_slice(b".0");
            } else {
                self.out.extend_from_slice(&src[dot..p]);
            }
        }
        if let Some(b'e' | b'E') = src.get(p) {
            let e = p;
            let mut q = p + 1;
            if let Some(b'+' | b'-') = src.get(q) {
                q += 1;
            }
            let digits = q;
            while q < src.len() && src[q].is_ascii_digit() {
                q += 1;
            }
            if q == digits {
                // `1e` with no digits: the dangling exponent is dropped.
                self.fix(RepairKind::NumberFormat, e)?;
            } else {
                self.out.extend_from_slice(&src[e..q]);
            }
            p = q;
        }
        self.pos = p;
        if !self.strict && int.len() > 1 && int[0] == b'0' && is_delimiter(&src[p..]) {
            // `0012345`, `001.2`: a number with leading zeros is an id or a code more often
            // than a count; the string keeps every digit (jsonrepair's reading; json_repair
            // drops the zeros).
            self.out.truncate(out_start);
            push_json_string(self.out, &src[start..p]);
            return Ok(());
        }
        if !self.strict && !is_delimiter(&src[p..]) && !statement_end(&src[p..]) {
            self.out.truncate(out_start);
            self.repairs.truncate(repairs_before);
            if let Some((len, digits)) = grouped_number(&src[start..]) {
                // `82_461_110`, `1_234.5`: digits grouped as Python and JavaScript allow.
                self.fix(RepairKind::NumberFormat, start)?;
                self.out.extend_from_slice(&digits);
                self.pos = start + len;
                return Ok(());
            }
            // `12px`, `1.2.3`, `50%`, `1/2`: text that starts with digits, not a number.
            self.pos = start;
            return self.bare_string();
        }
        Ok(())
    }

    /// Reads `true`, `false`, `null`, or (repairing) another word: a Python or JavaScript
    /// literal, a literal cut off at the end, or a bare string.
    fn word(&mut self) -> Result<(), Error> {
        let start = self.pos;
        let len = self.src[start..]
            .iter()
            .position(|&b| !(b.is_ascii_alphanumeric() || b == b'_' || b == b'$'))
            .unwrap_or(self.src.len() - start);
        let end = start + len;
        if !self.strict && self.src.get(end) == Some(&b'(') && self.constructor(start, end)? {
            return Ok(());
        }
        if !self.strict
            && &self.src[start..end] == b"new"
            && let Some(open) = self.new_call_at(end)
            && self.constructor(start, open)?
        {
            // `new ObjectId("...")`, `new Date(0)`: JavaScript's `new` before a constructor.
            return Ok(());
        }
        let w = &self.src[start..end];
        let at_end = end == self.src.len();
        let (text, kind): (&[u8], Option<RepairKind>) = match w {
            b"true" | b"false" | b"null" => (w, None),
            b"True" | b"TRUE" => (b"true", Some(RepairKind::PythonLiteral)),
            b"False" | b"FALSE" => (b"false", Some(RepairKind::PythonLiteral)),
            b"None" | b"NULL" | b"Null" | b"nil" => (b"null", Some(RepairKind::PythonLiteral)),
            b"undefined" => (b"null", Some(RepairKind::Undefined)),
            b"NaN" | b"Infinity" => (b"null", Some(RepairKind::NonFinite)),
            _ if at_end && b"true".starts_with(w) => (b"true", Some(RepairKind::TruncatedLiteral)),
            _ if at_end && b"false".starts_with(w) => {
                (b"false", Some(RepairKind::TruncatedLiteral))
            }
            _ if at_end && b"null".starts_with(w) => (b"null", Some(RepairKind::TruncatedLiteral)),
            _ => {
                if self.strict {
                    return Err(self.invalid(start, "expected a value"));
                }
                return self.bare_string();
            }
        };
        if let Some(kind) = kind {
            self.fix(kind, start)?;
        }
        self.out.extend_from_slice(text);
        self.pos = end;
        Ok(())
    }

    /// After `new` ending at `at`: the opening parenthesis of the constructor call that
    /// follows (`new ObjectId(`, `new Date (`), if one does.
    fn new_call_at(&self, at: usize) -> Option<usize> {
        let name = self.skip_spaces_from(at);
        if name == at || !self.src.get(name)?.is_ascii_alphabetic() {
            return None;
        }
        let len = self.src[name..]
            .iter()
            .position(|&b| !(b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.')))
            .unwrap_or(self.src.len() - name);
        let open = self.skip_spaces_from(name + len);
        (self.src.get(open) == Some(&b'(')).then_some(open)
    }

    /// `ObjectId("123")`, `NumberLong(2)`, `ISODate("...")`, `new Date(0)`: a constructor call
    /// around one string or number (MongoDB shell or JavaScript output) is that value, and
    /// one around nothing (`ObjectId()`) is null, recorded like a JSONP wrapper. A call of
    /// several arguments (`Timestamp(1412180887, 1)`, `BinData(0, "AAAA")`) has no one value:
    /// its text, a string. Returns `false`, having read nothing, when the call is none of these.
    fn constructor(&mut self, start: usize, open: usize) -> Result<bool, Error> {
        let arg = self.skip_spaces_from(open + 1);
        if self.src.get(arg) == Some(&b')') && self.call_ends_value(arg + 1) {
            self.fix(RepairKind::Jsonp, start)?;
            self.out.extend_from_slice(b"null");
            self.pos = arg + 1;
            return Ok(true);
        }
        let is_scalar = matches!(self.src.get(arg), Some(b'"' | b'\'' | b'-' | b'0'..=b'9'));
        if !is_scalar {
            return self.call_text(start, open);
        }
        let (out_len, repairs_len) = (self.out.len(), self.repairs.len());
        self.pos = arg;
        match self.src[arg] {
            b'"' => self.string_value(Quote::Double, 1)?,
            b'\'' => self.string_value(Quote::Single, 1)?,
            _ => self.number()?,
        }
        let close = self.skip_spaces_from(self.pos);
        if self.src.get(close) != Some(&b')') {
            // Not a call of one value after all.
            self.out.truncate(out_len);
            self.repairs.truncate(repairs_len);
            self.pos = start;
            return self.call_text(start, open);
        }
        self.repairs
            .insert(repairs_len, Repair::at(RepairKind::Jsonp, start));
        self.pos = close + 1;
        Ok(true)
    }

    /// Whether a call's closing parenthesis, ending at `at`, ends the value: what follows
    /// (past spaces) ends an item or the input.
    fn call_ends_value(&self, at: usize) -> bool {
        matches!(
            self.src.get(self.skip_spaces_from(at)),
            None | Some(b',' | b'}' | b']' | b')' | b';' | b'\n' | b'\r')
        )
    }

    /// A call `name(a, b)` from `start`, its arguments opening at `open`: when its closing
    /// parenthesis is on the same line (within a bounded distance, strings and brackets
    /// counted) and ends the value, its text is written as a string. Returns `false`, having
    /// read nothing, otherwise.
    fn call_text(&mut self, start: usize, open: usize) -> Result<bool, Error> {
        let ahead = &self.src[open..(open + 1024).min(self.src.len())];
        let mut depth = 0usize;
        let mut quote = None;
        let mut i = 0;
        let close = loop {
            let Some(&b) = ahead.get(i) else {
                return Ok(false);
            };
            match (quote, b) {
                (_, b'\n') => return Ok(false),
                (Some(_), b'\\') => i += 1,
                (Some(q), _) if b == q => quote = None,
                (Some(_), _) => {}
                (None, b'"' | b'\'') => quote = Some(b),
                (None, b'(' | b'[' | b'{') => depth += 1,
                (None, b')' | b']' | b'}') => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        if b != b')' {
                            return Ok(false);
                        }
                        break open + i + 1;
                    }
                }
                (None, _) => {}
            }
            i += 1;
        };
        if !self.call_ends_value(close) {
            return Ok(false);
        }
        self.fix(RepairKind::UnquotedString, start)?;
        push_json_string(self.out, &self.src[start..close]);
        self.pos = close;
        Ok(true)
    }

    /// Writes the bare text from here to the end of the value (`,`, the closing bracket of the
    /// open container, or the end of the line) as a string.
    fn bare_string(&mut self) -> Result<(), Error> {
        let start = self.pos;
        self.fix(RepairKind::UnquotedString, start)?;
        let closer = match self.scratch.nesting.top().map(|level| level.kind()) {
            Some(Container::Object) => b'}',
            Some(Container::Array) => b']',
            None => b'\n',
        };
        let rest = &self.src[start..];
        // Brackets the text opens itself are its own (`{text: words{in brackets}}`); in an
        // object, a quoted key after a space starts the next member (`{"a":value "b":1}`).
        let in_object = closer == b'}';
        let mut depth = 0usize;
        let mut len = rest.len();
        for (i, &b) in rest.iter().enumerate() {
            match b {
                b'{' | b'[' => depth += 1,
                b'}' | b']' if depth > 0 => depth -= 1,
                b'\n' => {
                    len = i;
                    break;
                }
                b',' if depth == 0 => {
                    len = i;
                    break;
                }
                b'"' if in_object
                    && depth == 0
                    && i > 0
                    && rest[i - 1].is_ascii_whitespace()
                    && self.quoted_key_at(start + i) =>
                {
                    len = i;
                    break;
                }
                _ if b == closer && depth == 0 => {
                    len = i;
                    break;
                }
                _ => {}
            }
        }
        let mut text = rest[..len].trim_ascii_end();
        // `abc"`: a closing quote whose opening one is missing.
        if let [body @ .., q @ (b'"' | b'\'')] = text
            && !body.contains(q)
        {
            text = body;
        }
        push_json_string(self.out, text);
        self.pos = start + len;
        Ok(())
    }

    /// Whether `"key":` starts at `at`. Bounded look ahead.
    fn quoted_key_at(&self, at: usize) -> bool {
        let ahead = &self.src[at + 1..(at + 65).min(self.src.len())];
        let Some(close) = ahead.iter().position(|&b| b == b'"' || b == b'\n') else {
            return false;
        };
        ahead[close] == b'"' && self.src.get(self.skip_spaces_from(at + 2 + close)) == Some(&b':')
    }
}

/// Where the `\u` escape at `p` ends: after a BMP character, or after both halves of a
/// surrogate pair; `None` for a lone half.
fn surrogate_pair_or_bmp(src: &[u8], p: usize) -> Option<usize> {
    match hex4(src, p + 2)? {
        0xD800..=0xDBFF => {
            let low = (src.get(p + 6..p + 8) == Some(b"\\u"))
                .then(|| hex4(src, p + 8))
                .flatten()?;
            (0xDC00..=0xDFFF).contains(&low).then_some(p + 12)
        }
        0xDC00..=0xDFFF => None,
        _ => Some(p + 6),
    }
}

/// The length of a Unicode space at the start of `s` that JSON does not count as whitespace:
/// U+00A0, U+2000 to U+200B, U+202F, U+205F, U+3000 and U+FEFF.
fn unicode_space(s: &[u8]) -> Option<usize> {
    match s {
        [0xC2, 0xA0, ..] => Some(2),
        [0xE2, 0x80, 0x80..=0x8B | 0xAF, ..] | [0xE2, 0x81, 0x9F, ..] => Some(3),
        [0xE3, 0x80, 0x80, ..] | [0xEF, 0xBB, 0xBF, ..] => Some(3),
        _ => None,
    }
}

/// `\` or `\u` with fewer than four hex digits, at the end of the input.
fn is_cut_escape(rest: &[u8]) -> bool {
    match rest {
        [b'\\'] => true,
        [b'\\', b'u', digits @ ..] => digits.len() < 4 && digits.iter().all(u8::is_ascii_hexdigit),
        _ => false,
    }
}

/// Whether `rest` starts with a semicolon that ends a JavaScript statement (`1;`, `-2.5;`):
/// nothing but spaces or a comment after it on its line.
fn statement_end(rest: &[u8]) -> bool {
    let Some(after) = rest.strip_prefix(b";") else {
        return false;
    };
    let line = &after[..memchr::memchr(b'\n', after).unwrap_or(after.len())];
    let line = line.trim_ascii();
    line.is_empty() || line.starts_with(b"//")
}

/// The length of the JavaScript regular expression literal (`/[a-z]+/gi`) at the start of `s`,
/// when one is there and ends a value: its closing slash on the same line (not one escaped or
/// in a character class), then flags, then the end of an item. The look ahead is bounded.
fn regex_len(s: &[u8]) -> Option<usize> {
    if matches!(
        s.get(1),
        None | Some(b'/' | b'*' | b' ' | b'\t' | b'\n' | b'\r')
    ) {
        return None;
    }
    let ahead = &s[..s.len().min(1024)];
    let mut class = false;
    let mut i = 1;
    let close = loop {
        match *ahead.get(i)? {
            b'\\' if !matches!(ahead.get(i + 1), None | Some(b'\n' | b'\r')) => i += 1,
            b'\n' | b'\r' | b'\\' => return None,
            b'[' => class = true,
            b']' => class = false,
            b'/' if !class => break i + 1,
            _ => {}
        }
        i += 1;
    };
    let flags = s[close..]
        .iter()
        .take_while(|b| b"dgimsuyv".contains(b))
        .count();
    let end = close + flags;
    let next = end
        + s[end..]
            .iter()
            .take_while(|&&b| b == b' ' || b == b'\t')
            .count();
    let rest = &s[next..];
    let ends = matches!(
        rest,
        [] | [b',' | b'}' | b']' | b')' | b'\n' | b'\r', ..] | [b'/', b'/' | b'*', ..]
    );
    (ends || statement_end(rest)).then_some(end)
}

/// The length of a sign with no digits after it (`-`, `+`, `-.`) at the start of `s`, when what
/// follows ends an item: a number cut at its sign.
fn lone_sign_len(s: &[u8]) -> Option<usize> {
    if !matches!(s.first(), Some(b'-' | b'+')) {
        return None;
    }
    let len = if s.get(1) == Some(&b'.') { 2 } else { 1 };
    let next = len
        + s[len..]
            .iter()
            .take_while(|&&b| b == b' ' || b == b'\t')
            .count();
    matches!(
        &s[next..],
        [] | [b',' | b'}' | b']' | b')' | b'\n' | b'\r', ..] | [b'/', b'/' | b'*', ..]
    )
    .then_some(len)
}

/// The length of `NaN` or `Infinity` as a whole word at the start of `rest`.
fn non_finite_at(rest: &[u8]) -> Option<usize> {
    let len = [&b"NaN"[..], b"Infinity"]
        .into_iter()
        .find(|w| rest.starts_with(w))?
        .len();
    let more = rest
        .get(len)
        .is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'_');
    (!more).then_some(len)
}

/// Whether `b` (`None` at the end) may follow a number: whitespace, punctuation that ends a
/// value, or the start of a comment.
fn is_delimiter(rest: &[u8]) -> bool {
    matches!(
        rest,
        [] | [
            b' ' | b'\t'
                | b'\n'
                | b'\r'
                | b','
                | b'}'
                | b']'
                | b':'
                | b')'
                | b'#'
                | b'{'
                | b'['
                | b'"',
            ..
        ] | [b'/', b'/' | b'*', ..]
    )
}

/// Bytes an unquoted key may hold: anything but whitespace and JSON punctuation.
fn is_bare_key_byte(b: u8) -> bool {
    !matches!(
        b,
        b' ' | b'\t' | b'\n' | b'\r' | b':' | b',' | b'{' | b'}' | b'[' | b']' | b'"' | b'\''
    )
}

/// A cheap fingerprint of a key (with its quotes): its length and its first and last eight
/// bytes. Equal keys have equal tags; different keys rarely do.
fn key_tag(key: &[u8]) -> u64 {
    let word = |bytes: &[u8]| u64::from_le_bytes(bytes.try_into().expect("eight bytes"));
    // Whole words only: a copy of a variable length would be a memcpy call per key.
    let bits = match key.len() {
        0..8 => key.iter().fold(0, |tag, &b| tag << 8 | u64::from(b)),
        len => word(&key[..8]) ^ word(&key[len - 8..]).rotate_left(29),
    };
    (bits ^ (key.len() as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)) & !REPORTED
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
    fn key_tags_of_equal_keys_are_equal() {
        assert_eq!(key_tag(br#""content_5""#), key_tag(br#""content_5""#));
        assert_ne!(key_tag(br#""content_5""#), key_tag(br#""content_7""#));
        assert_ne!(key_tag(br#""""#), key_tag(br#""a""#));
    }
}
