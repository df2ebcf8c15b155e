//! The single-pass reader and writer at the heart of the pipeline.
//!
//! It reads the bytes once, checks them against the JSON grammar and writes compact JSON as it
//! goes: numbers and strings are copied as written, and no tree is built unless the caller wants
//! the values (`tree`). With repair on, every place where strict parsing would fail is mended on
//! the spot and recorded as a [`Repair`]; with `strict`, the same place is an `invalid_json` error at that byte. Nesting is tracked on an
//! explicit stack, so depth costs memory, never the call stack, and every decision looks ahead a
//! bounded distance (or over whitespace it then consumes), so the time is linear in the input.

mod containers;
mod fast;
mod guess;
mod handover;
mod keys;
mod numbers;
mod scan;
mod single;
mod strings;
mod tree;
mod whole;
mod words;

use fast::Resume;
pub(crate) use tree::Tree;

use crate::args::nesting::{Container, Nesting};
use crate::bytes::escape::push_json_string;
use crate::error::{Code, Error};
use crate::repair::{Repair, RepairKind};
use std::collections::HashMap;
use std::ops::Range;

/// Where one member's key was written in the output.
struct KeyEntry {
    /// Output offset of the key's opening quote (the start of the member).
    start: usize,
    /// Output offset just past the key's closing quote.
    end: usize,
    /// [`keys::key_tag`] of the key: most keys differ here, without comparing their bytes. The top
    /// bit ([`keys::REPORTED`]) is not part of it: on a key's first entry, it says a `duplicate_key`
    /// repair already names the key in this object.
    tag: u64,
}

/// What parsers write to, kept from one input to the next: the compact JSON, the repairs, and
/// the scratch space they reuse.
#[derive(Default)]
pub(crate) struct Sink {
    /// The values, compact, one after another.
    pub(crate) out: Vec<u8>,
    /// What was repaired, in the order it was found.
    pub(crate) repairs: Vec<Repair>,
    scratch: Scratch,
    /// The values written, built as `serde_json::Value`s when the caller wants them.
    pub(crate) tree: Tree,
    /// The clean lane's pass over an input it did not take as it stands, for the parser's
    /// first value ([`whole::Pending`]); `None` but between the two.
    pub(crate) pending: Option<whole::Pending>,
}

/// Buffers the parser reuses from one input to the next.
#[derive(Default)]
struct Scratch {
    nesting: Nesting,
    keys: Vec<KeyEntry>,
    /// (depth, hash of key) to the first entry with that key, for large objects only.
    key_index: HashMap<(usize, u64), usize>,
    /// The key tags of the objects open in [`whole`]'s pass.
    tags: Vec<u64>,
    /// How many entries of `keys` from `unplaced_base` have their tag but not yet their place
    /// in the output: the keys of an object taken up after its last member ([`handover`]),
    /// found by [`keys::place_keys`] when compared. Its `{` is at `unplaced_from` in the output.
    unplaced: usize,
    unplaced_base: usize,
    unplaced_from: usize,
    /// For each open array opened by `(`, innermost last: where its `[` is in the output.
    paren_outs: Vec<usize>,
    /// How many `[` of the output are [`HOLE`]s, taken out when the value ends.
    holes: usize,
}

/// What stands in the output for the `[` of a Python `(x)` read as `x` ([`Parser::unwrap_paren`])
/// until the value ends: a byte compact JSON never holds as it is (a control byte, escaped in
/// strings), so that no offset into the output moves while the value is read.
pub(super) const HOLE: u8 = 0;

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

/// How a [`Parser`] reads: the same for every parse of one input.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Rules {
    /// No repairs: the first place that needs one fails with `invalid_json`.
    pub(crate) strict: bool,
    /// How deep arrays and objects may nest (`too_deep` past it).
    pub(crate) max_nesting: usize,
    /// Write a `\u` escape naming half a surrogate pair as U+FFFD, a repair (for callers that
    /// need the value as Unicode text); by default it is kept as written, as valid JSON.
    pub(crate) lone_surrogates_as_fffd: bool,
    /// Read everything with the repairing parser, valid JSON too (the tests compare the fast
    /// path, [`fast`], against it).
    pub(crate) fast_path_off: bool,
}

/// Reads one document from `src[pos..]` and writes it, compact, to `out`.
pub(crate) struct Parser<'a> {
    src: &'a [u8],
    pos: usize,
    sink: &'a mut Sink,
    /// The fields of [`Rules`], read on every byte.
    strict: bool,
    max_nesting: usize,
    lone_surrogates_as_fffd: bool,
    /// Whether valid JSON is read by the fast path ([`fast`]).
    fast: bool,
    open_arrays: usize,
    open_objects: usize,
    /// Where the last key read starts in `src`, and whether it added a `duplicate_key` repair.
    key_at: usize,
    key_reported: bool,
    /// Where the last array element started in `out` and in `src`.
    element_out: usize,
    element_at: usize,
    /// `src` as text, when values are built (see `tree`): strings copied from it are sliced,
    /// not checked again.
    src_text: Option<&'a str>,
}

impl<'a> Parser<'a> {
    /// A parser of `src` from `pos`, which appends to the sink's `out` and `repairs`.
    pub(crate) fn new(src: &'a [u8], pos: usize, sink: &'a mut Sink, rules: Rules) -> Parser<'a> {
        let scratch = &mut sink.scratch;
        scratch.nesting.clear();
        scratch.keys.clear();
        scratch.key_index.clear();
        scratch.unplaced = 0;
        scratch.paren_outs.clear();
        scratch.holes = 0;
        sink.tree.new_parser();
        Parser {
            src,
            pos,
            sink,
            strict: rules.strict,
            max_nesting: rules.max_nesting,
            lone_surrogates_as_fffd: rules.lone_surrogates_as_fffd,
            fast: !rules.fast_path_off,
            open_arrays: 0,
            open_objects: 0,
            key_at: 0,
            key_reported: false,
            element_out: 0,
            element_at: 0,
            src_text: None,
        }
    }

    /// Takes the [`HOLE`]s out of the value written from `out[start..]`, now that it ended and
    /// no offset into it is needed any more: one pass, and none when it has none.
    fn take_out_holes(&mut self, start: usize) {
        let holes = std::mem::take(&mut self.sink.scratch.holes);
        if holes == 0 {
            return;
        }
        let out = &mut self.sink.out;
        let mut kept = start;
        for read in start..out.len() {
            let byte = out[read];
            out[kept] = byte;
            kept += usize::from(byte != HOLE);
        }
        // Every byte taken out was a hole made in this value (compact JSON holds no 0x00); a
        // hole may be gone already, with the value it was in (a duplicate key's, merged away).
        debug_assert!(out.len() - kept <= holes, "a 0x00 byte that is no hole");
        out.truncate(kept);
    }

    /// `src` as text (`None`: checked here), when values are built (see `tree`).
    pub(crate) fn source_text(mut self, text: Option<&'a str>) -> Parser<'a> {
        if self.sink.tree.on {
            self.src_text = text.or_else(|| std::str::from_utf8(self.src).ok());
        }
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
            // With the clean lane's pass pending, the value starts where that pass wrote it.
            let start = self
                .sink
                .pending
                .as_ref()
                .map_or(self.sink.out.len(), whole::Pending::out_start);
            if parts.is_empty() && !self.strict && self.members_open_document() {
                // `"query": "x"}`: an object's members with its `{` left out (Llama on Groq
                // writes `<function=f>"query": "x"}</function>`); json_repair reads it so too.
                self.fix(RepairKind::MissingBracket, self.pos)?;
                self.open(Container::Object, self.pos)?;
                self.value_from(Resume::Member(None))?;
            } else {
                self.one_value()?;
            }
            debug_assert!(self.sink.pending.is_none(), "the first value took it");
            self.take_out_holes(start);
            parts.push(start..self.sink.out.len());
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
                            self.take_out_holes(part.start);
                            part.end = self.sink.out.len();
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
        if self.sink.out.last() != Some(&b'}') || !self.src[..at].trim_ascii_end().ends_with(b"}") {
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
                self.sink
                    .repairs
                    .push(Repair::at(RepairKind::CodeFence, fence));
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
        let text = crate::bytes::lossy(&self.src[from..to]);
        let mut repair = Repair::at(RepairKind::Prose, from);
        repair.text = Some(crate::bytes::cut(text.trim(), 100));
        self.sink.repairs.push(repair);
    }

    /// Reads one complete value, however deeply nested, without recursion: the fast path reads
    /// what is valid JSON, the repairing parser the rest, each taking up where the other
    /// stopped ([`fast::Resume`]).
    fn one_value(&mut self) -> Result<(), Error> {
        self.value_from(Resume::Value)
    }

    /// Whether the document opens with a quoted key and its colon, not a value.
    fn members_open_document(&self) -> bool {
        self.peek() == Some(b'"') && self.quoted_key_at(self.pos)
    }

    /// Reads on from `state` to the end of the value being read.
    fn value_from(&mut self, mut state: Resume) -> Result<(), Error> {
        loop {
            state = match self.fast(state)? {
                Resume::Done => return Ok(()),
                Resume::Value => {
                    let start = self.sink.out.len();
                    if self.value()? {
                        Resume::Value
                    } else {
                        self.tree_scalar(start);
                        Resume::After
                    }
                }
                Resume::After => {
                    if self.sink.scratch.nesting.is_empty() {
                        return Ok(());
                    }
                    if self.after_value()? {
                        Resume::Value
                    } else {
                        Resume::After
                    }
                }
                Resume::Member(comma) => {
                    if self.begin_member(comma)? {
                        Resume::Value
                    } else {
                        Resume::After
                    }
                }
                Resume::Element(comma) => {
                    if self.begin_element(comma)? {
                        Resume::Value
                    } else {
                        Resume::After
                    }
                }
            };
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
        self.sink.repairs.push(Repair::at(kind, offset));
        Ok(())
    }

    /// Reads a value at the current position. Returns `true` when it opened a container that
    /// now expects a value, `false` when a whole value was written.
    fn value(&mut self) -> Result<bool, Error> {
        self.skip_ws()?;
        let at = self.pos;
        let Some(b) = self.peek() else {
            return match self.sink.scratch.nesting.top() {
                Some(_) if self.strict => Err(self.invalid(at, "unexpected end of input")),
                Some(level) if level.kind() == Container::Object && self.last_key_repeats() => {
                    // `{"a": 1, "a` cut off: a repeated key with no value must not replace the
                    // value the key already has; the member is left out.
                    let entry = self.sink.scratch.keys.pop().expect("the member's key");
                    if self.key_reported {
                        // The key's only repeat is the one left out.
                        if let Some(i) = self
                            .sink
                            .repairs
                            .iter()
                            .rposition(|r| r.kind == RepairKind::DuplicateKey)
                        {
                            self.sink.repairs.remove(i);
                        }
                    }
                    let offset = self.key_at;
                    // A repeated key is never the object's first, so members remain.
                    self.sink.out.truncate(entry.start - 1);
                    self.note_prose(offset, at);
                    Ok(false)
                }
                // `{"a":` cut off: the key is kept, with null for the value it never got.
                Some(_) => {
                    self.fix(RepairKind::MissingValue, at)?;
                    self.sink.out.extend_from_slice(b"null");
                    Ok(false)
                }
                None => Err(self.invalid(at, "expected a value, found the end of input")),
            };
        };
        match b {
            b'{' if self.set_literal(at) => {
                // `{"ids": {1, 2, 3}}`: a Python set is an array, not an object of keys
                // with missing values.
                self.fix(RepairKind::SetLiteral, at)?;
                self.pos += 1;
                self.open(Container::Array, at)?;
                self.sink.scratch.nesting.mark_brace();
                self.begin_element(None)
            }
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
                // `{"a": (1, 2)}`: a Python tuple is an array (and `(1)`, no tuple, is `1`:
                // see [`Parser::close_paren`]).
                self.fix(RepairKind::Parentheses, at)?;
                self.pos += 1;
                self.open(Container::Array, at)?;
                self.sink.scratch.nesting.mark_paren();
                let bracket = self.sink.out.len() - 1;
                self.sink.scratch.paren_outs.push(bracket);
                self.begin_element(None)
            }
            b'"' => self.string_value(Quote::Double, 1).map(|()| false),
            b'-' | b'0'..=b'9' => self.number().map(|()| false),
            _ if !self.strict && self.ellipsis_at(at).is_some() => {
                // `{"a": ...}`: both json_repair and jsonrepair keep the text, so the reader
                // sees that something was elided rather than a made-up value.
                let len = self.ellipsis_at(at).unwrap_or(3);
                self.fix(RepairKind::Ellipsis, at)?;
                self.sink.out.extend_from_slice(b"\"...\"");
                self.pos = at + len;
                Ok(false)
            }
            b'+' | b'.' if !self.strict => self.number().map(|()| false),
            b'/' if !self.strict && regex_len(&self.src[at..]).is_some() => {
                // `{"re": /^a+$/gi}`: a JavaScript regular expression literal is its text.
                let len = regex_len(&self.src[at..]).unwrap_or(1);
                self.fix(RepairKind::UnquotedString, at)?;
                push_json_string(&mut self.sink.out, &self.src[at..at + len]);
                self.pos = at + len;
                Ok(false)
            }
            b',' | b'}' | b']' if !self.strict && !self.sink.scratch.nesting.is_empty() => {
                // `{"a": }`: the key is kept, with null for the value it never got.
                self.fix(RepairKind::MissingValue, at)?;
                self.sink.out.extend_from_slice(b"null");
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
                    && !self.sink.scratch.nesting.is_empty()
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

/// Whether `text` is one JSON value as it stands (a strict parse into scratch buffers; used only
/// for strings that decode to something that opens like JSON).
pub(crate) fn is_json(text: &[u8], max_nesting: usize, fast_path_off: bool) -> bool {
    let (mut sink, mut parts) = (Sink::default(), Vec::new());
    let rules = Rules {
        strict: true,
        max_nesting,
        lone_surrogates_as_fffd: false,
        fast_path_off,
    };
    Parser::new(text, 0, &mut sink, rules)
        .document(&mut parts, false)
        .is_ok()
        && parts.len() == 1
}
