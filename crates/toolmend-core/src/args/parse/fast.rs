//! The fast path: valid JSON read and written without the repairing parser's look-aheads.
//!
//! Most inputs are valid JSON already. Here each token is checked against the plain JSON
//! grammar and copied (white space between tokens dropped), on the parser's own state: the
//! nesting stack, the keys of each open object (so duplicate keys are found and merged as the
//! parser does, with the same `duplicate_key` repair) and the `--max-nesting` limit. At the
//! first byte the grammar does not allow, or that the repairing parser reads in a way of its
//! own, the fast path stops at the token boundary before it and says where the parser takes up
//! ([`Resume`]): the repairs start exactly there, and the output is the one the parser alone
//! writes (tests/fast_path.rs compares them over the bench corpus and JSONTestSuite).
//!
//! What it leaves to the parser, besides invalid JSON: white space other than JSON's four bytes
//! (comments, Unicode spaces), a string followed by what makes the parser look further (a word
//! after a comma in an object), a lone surrogate escape when the parser replaces it, a key
//! whose colon is past a line break, and strings at the top level (the unquote stage's).

use super::Parser;
use super::strings::surrogate_pair_or_bmp;
use crate::args::nesting::Container;
use crate::args::simd_avx::{Portable, Stops};
use crate::bytes::{append, hex4};
use crate::error::Error;

/// Where reading stands between two tokens: what the parser (or the fast path) does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Resume {
    /// A value is expected at `pos` (past any white space).
    Value,
    /// A value was written; a comma, a closer or the end comes next.
    After,
    /// After an object's `{` (`None`) or the comma at that offset: a key or `}` comes next.
    Member(Option<usize>),
    /// After an array's `[` (`None`) or the comma at that offset: an element or `]` comes next.
    Element(Option<usize>),
    /// The document's value is complete.
    Done,
}

/// JSON's own white space: what the fast path skips between tokens.
#[inline(always)]
pub(super) fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t')
}

/// Whether `rest` starts with what may follow a scalar inside a container: white space, a
/// comma, a closer, or the end.
#[inline(always)]
fn scalar_ends(rest: &[u8]) -> bool {
    matches!(
        rest.first(),
        None | Some(b' ' | b'\n' | b'\r' | b'\t' | b',' | b'}' | b']')
    )
}

impl Parser<'_> {
    /// Reads on from `state` while the input is plain valid JSON; returns the state at which the
    /// repairing parser takes up, with `pos` where it does. Off while values are built (`calls`),
    /// and when the fast path is switched off (the tests' way to compare).
    #[inline]
    pub(super) fn fast(&mut self, state: Resume) -> Result<Resume, Error> {
        if !self.fast || self.sink.tree.on {
            return Ok(state);
        }
        self.fast_run(state)
    }

    fn fast_run(&mut self, mut state: Resume) -> Result<Resume, Error> {
        let src = self.src;
        loop {
            let mut at = self.pos;
            while at < src.len() && is_ws(src[at]) {
                at += 1;
            }
            state = match state {
                Resume::Value => {
                    self.pos = at;
                    let top_level = self.sink.scratch.nesting.is_empty();
                    if top_level
                        && matches!(src.get(at), Some(b'{' | b'['))
                        && let Some(resume) = self.fast_whole(at)
                    {
                        if resume == Resume::Done {
                            return Ok(resume);
                        }
                        // Taken up after the value's last complete member ([`super::handover`]).
                        state = resume;
                        continue;
                    }
                    match src.get(at) {
                        Some(b'{') => {
                            let mut inner = at + 1;
                            while inner < src.len() && is_ws(src[inner]) {
                                inner += 1;
                            }
                            match src.get(inner) {
                                Some(b'}') => {
                                    self.open(Container::Object, at)?;
                                    self.pos = inner + 1;
                                    self.close_frame();
                                    Resume::After
                                }
                                // An object opened only when its first member is a plain one:
                                // inside a container, the parser reads `{"a", "b"}` as a set.
                                Some(b'"') => match self.fast_key(inner) {
                                    Some((end, value, escaped)) => {
                                        self.open(Container::Object, at)?;
                                        self.fast_member(inner, end, value, escaped);
                                        Resume::Value
                                    }
                                    None => return Ok(Resume::Value),
                                },
                                Some(b'\'') => match self.single_key(inner) {
                                    Some((close, value)) => {
                                        self.open(Container::Object, at)?;
                                        self.single_member(inner, close, value);
                                        Resume::Value
                                    }
                                    None => return Ok(Resume::Value),
                                },
                                _ => return Ok(Resume::Value),
                            }
                        }
                        Some(b'[') => {
                            self.open(Container::Array, at)?;
                            self.pos = at + 1;
                            Resume::Element(None)
                        }
                        _ if top_level => return Ok(Resume::Value),
                        Some(b'"') => match self.fast_string_end(at) {
                            Some((end, _)) if self.fast_string_closes(end) => {
                                append(&mut self.sink.out, src, at, end);
                                self.pos = end;
                                Resume::After
                            }
                            _ => return Ok(Resume::Value),
                        },
                        Some(b'\'') if self.single_value(at) => Resume::After,
                        Some(b'T' | b'F' | b'N') if self.python_literal(at) => Resume::After,
                        Some(b'-' | b'0'..=b'9') => match fast_number_end(src, at) {
                            Some(end) => {
                                append(&mut self.sink.out, src, at, end);
                                self.pos = end;
                                Resume::After
                            }
                            None => return Ok(Resume::Value),
                        },
                        Some(b't' | b'f' | b'n') => {
                            let rest = &src[at..];
                            let len = [&b"true"[..], b"false", b"null"]
                                .into_iter()
                                .find(|w| rest.starts_with(w) && scalar_ends(&rest[w.len()..]))
                                .map(<[u8]>::len);
                            let Some(len) = len else {
                                return Ok(Resume::Value);
                            };
                            append(&mut self.sink.out, src, at, at + len);
                            self.pos = at + len;
                            Resume::After
                        }
                        _ => return Ok(Resume::Value),
                    }
                }
                Resume::After => {
                    let Some(level) = self.sink.scratch.nesting.top() else {
                        return Ok(Resume::Done);
                    };
                    self.pos = at;
                    match (src.get(at), level.kind()) {
                        (Some(b','), Container::Object) => {
                            self.pos = at + 1;
                            Resume::Member(Some(at))
                        }
                        (Some(b','), Container::Array) => {
                            self.pos = at + 1;
                            Resume::Element(Some(at))
                        }
                        (Some(b'}'), Container::Object) | (Some(b']'), Container::Array) => {
                            self.pos = at + 1;
                            self.close_frame();
                            Resume::After
                        }
                        // `}` also closes an array the parser opened for a Python set.
                        (Some(b'}'), Container::Array) if level.brace() => {
                            self.pos = at + 1;
                            self.close_frame();
                            Resume::After
                        }
                        _ => return Ok(Resume::After),
                    }
                }
                Resume::Member(comma) => match src.get(at) {
                    Some(b'}') if comma.is_none() => {
                        self.pos = at + 1;
                        self.close_frame();
                        Resume::After
                    }
                    Some(b'"') => match self.fast_key(at) {
                        Some((end, value, escaped)) => {
                            self.fast_member(at, end, value, escaped);
                            Resume::Value
                        }
                        None => return Ok(state),
                    },
                    Some(b'\'') => match self.single_key(at) {
                        Some((close, value)) => {
                            self.single_member(at, close, value);
                            Resume::Value
                        }
                        None => return Ok(state),
                    },
                    _ => return Ok(state),
                },
                Resume::Element(comma) => match src.get(at) {
                    Some(b']') if comma.is_none() => {
                        self.pos = at + 1;
                        self.close_frame();
                        Resume::After
                    }
                    Some(
                        b'"'
                        | b'\''
                        | b'{'
                        | b'['
                        | b'0'..=b'9'
                        | b't'
                        | b'f'
                        | b'n'
                        | b'T'
                        | b'F'
                        | b'N',
                    ) => {
                        self.fast_element(at);
                        Resume::Value
                    }
                    // A sign with no digit after it is the parser's (a lone sign is left out).
                    Some(b'-') if src.get(at + 1).is_some_and(u8::is_ascii_digit) => {
                        self.fast_element(at);
                        Resume::Value
                    }
                    _ => return Ok(state),
                },
                Resume::Done => return Ok(Resume::Done),
            };
        }
    }

    /// Starts an array element at `at`, as the parser's `begin_element` does.
    #[inline(always)]
    fn fast_element(&mut self, at: usize) {
        if self.sink.scratch.nesting.add_element() {
            self.sink.out.push(b',');
        }
        self.element_out = self.sink.out.len();
        self.element_at = at;
        self.pos = at;
    }

    /// Writes the key at `at` (its closing quote ends at `end`; `escaped`: it holds an escape)
    /// and the colon, noting the key as the parser's `key` does; the value starts at `value`.
    #[inline(always)]
    fn fast_member(&mut self, at: usize, end: usize, value: usize, escaped: bool) {
        if self.sink.scratch.nesting.add_member() {
            self.sink.out.push(b',');
        }
        let start = self.sink.out.len();
        append(&mut self.sink.out, self.src, at, end);
        self.note_key(start, at, escaped);
        self.sink.out.push(b':');
        self.pos = value;
    }

    /// For a key whose opening quote is at `at`: where its closing quote ends, where its value
    /// starts and whether it holds an escape, when the key is a valid JSON string followed
    /// (past spaces and tabs, as the parser looks) by one colon. Else `None`: the parser reads it.
    #[inline(always)]
    fn fast_key(&self, at: usize) -> Option<(usize, usize, bool)> {
        let (end, escaped) = self.fast_string_end(at)?;
        let colon = self.skip_spaces_from(end);
        if self.src.get(colon) != Some(&b':') {
            return None;
        }
        // `"a":: 1` is the parser's (a doubled colon).
        let value = self.skip_spaces_from(colon + 1);
        (self.src.get(value) != Some(&b':')).then_some((end, colon + 1, escaped))
    }

    /// Whether the value string that ends at `end` is closed there as the parser reads it:
    /// followed (past spaces and tabs) by a closer, a line break, the end, or a comma that no
    /// bare word follows inside an object (the parser looks further at those).
    #[inline(always)]
    fn fast_string_closes(&self, end: usize) -> bool {
        let next = self.skip_spaces_from(end);
        match self.src.get(next) {
            None | Some(b'}' | b']') => true,
            // Past the line break, a `+` (or a comment before one) joins another string.
            Some(b'\n' | b'\r') => {
                let mut p = next;
                while p < self.src.len() && is_ws(self.src[p]) {
                    p += 1;
                }
                !matches!(self.src.get(p), Some(b'+' | b'/'))
            }
            Some(b',') => {
                self.top() == Container::Array || {
                    let word = self.skip_spaces_from(next + 1);
                    !self
                        .src
                        .get(word)
                        .is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'_')
                }
            }
            _ => false,
        }
    }

    /// Where the string whose opening quote is at `at` ends (past its closing quote), and whether
    /// it holds an escape, when the parser copies it as written (see [`string_end`]).
    #[inline(always)]
    fn fast_string_end(&self, at: usize) -> Option<(usize, bool)> {
        string_end(self.src, at, self.lone_surrogates_as_fffd)
    }
}

/// Where the string whose opening quote is at `at` ends (past its closing quote), and whether
/// it holds an escape, when it is a valid JSON string the parser copies as written: no control
/// character, every escape valid, and no lone surrogate escape when those are replaced
/// (`lone_surrogates_as_fffd`).
#[inline(always)]
pub(super) fn string_end(
    src: &[u8],
    at: usize,
    lone_surrogates_as_fffd: bool,
) -> Option<(usize, bool)> {
    string_end_from(Portable, src, at + 1, lone_surrogates_as_fffd)
}

/// The bytes that make an escape of two bytes (`\n`, `\"`, ...): one load, not a jump table.
const SHORT_ESCAPES: [bool; 256] = {
    let mut table = [false; 256];
    let bytes = *b"\"\\/bfnrt";
    let mut i = 0;
    while i < bytes.len() {
        table[bytes[i] as usize] = true;
        i += 1;
    }
    table
};

/// [`string_end`] with the scan `stops` (the whole-value pass's, picked for the CPU), read
/// on from `from`: a byte of the string at or before its first `"`, `\` or control byte.
#[inline(always)]
pub(super) fn string_end_from(
    stops: impl Stops,
    src: &[u8],
    from: usize,
    lone_surrogates_as_fffd: bool,
) -> Option<(usize, bool)> {
    let mut p = from;
    let mut escaped = false;
    loop {
        if src.get(p) != Some(&b'\\') {
            p = stops.string_stop(src, p);
        }
        match *src.get(p)? {
            b'"' => return Some((p + 1, escaped)),
            b'\\' => match *src.get(p + 1)? {
                next if SHORT_ESCAPES[usize::from(next)] => {
                    p += 2;
                    escaped = true;
                }
                b'u' => {
                    p = match hex4(src, p + 2)? {
                        0xD800..=0xDFFF => match surrogate_pair_or_bmp(src, p) {
                            Some(end) => end,
                            None if !lone_surrogates_as_fffd => p + 6,
                            None => return None,
                        },
                        _ => p + 6,
                    };
                    escaped = true;
                }
                _ => return None,
            },
            // A control character: the parser escapes it (a repair).
            _ => return None,
        }
    }
}

/// Where the JSON number at `at` ends, when it is one by the grammar and what follows may end
/// it inside a container; `None` for anything else (the parser mends or reads it).
#[inline(always)]
pub(super) fn fast_number_end(src: &[u8], at: usize) -> Option<usize> {
    let digits = |mut p: usize| {
        // Eight bytes a step while eight are left: a byte is a digit when its high nibble is
        // 3 and adding 6 to it does not carry out of its low nibble (a carry from a byte that
        // is not a digit only reaches the bytes after it, past the first non-digit).
        while let Some(bytes) = src.get(p..p + 8) {
            let word = u64::from_le_bytes(bytes.try_into().expect("eight bytes"));
            const HIGH: u64 = 0xF0F0_F0F0_F0F0_F0F0;
            const THREES: u64 = 0x3030_3030_3030_3030;
            let not_digits = ((word & HIGH) ^ THREES)
                | ((word.wrapping_add(0x0606_0606_0606_0606) & HIGH) ^ THREES);
            if not_digits != 0 {
                return p + (not_digits.trailing_zeros() / 8) as usize;
            }
            p += 8;
        }
        while p < src.len() && src[p].is_ascii_digit() {
            p += 1;
        }
        p
    };
    number_end_by(src, at, digits)
}

/// [`fast_number_end`] by the grammar, `digits(p)` the end of the digits from `p`.
#[inline(always)]
fn number_end_by(src: &[u8], at: usize, digits: impl Fn(usize) -> usize) -> Option<usize> {
    let mut p = at;
    if src[p] == b'-' {
        p += 1;
    }
    match src.get(p)? {
        b'0' => p += 1,
        b'1'..=b'9' => p = digits(p + 1),
        _ => return None,
    }
    if src.get(p) == Some(&b'.') {
        let end = digits(p + 1);
        if end == p + 1 {
            return None;
        }
        p = end;
    }
    if let Some(b'e' | b'E') = src.get(p) {
        p += 1;
        if let Some(b'+' | b'-') = src.get(p) {
            p += 1;
        }
        let end = digits(p);
        if end == p {
            return None;
        }
        p = end;
    }
    scalar_ends(&src[p..]).then_some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The end of a number's digits, read eight bytes a step, is where a byte loop finds it:
    /// runs of every length up to past two steps, ended by every byte (those next to the
    /// digits' range among them) or by the end.
    #[test]
    fn a_numbers_digits_end_where_a_byte_loop_ends_them() {
        // The same grammar with the digits read a byte at a time.
        let reference = |src: &[u8], at: usize| {
            let digits = |mut p: usize| {
                while p < src.len() && src[p].is_ascii_digit() {
                    p += 1;
                }
                p
            };
            number_end_by(src, at, digits)
        };
        for run in 1..20 {
            let digits: String = (0..run).map(|i| char::from(b'1' + (i % 9) as u8)).collect();
            for shape in [
                digits.clone(),
                format!("-{digits}"),
                format!("1.{digits}"),
                format!("{digits}e-{digits}"),
                format!("0.5E{digits}"),
            ] {
                for end in (0..=255u8).map(|b| vec![b]).chain([vec![], b",1".to_vec()]) {
                    let mut src = shape.clone().into_bytes();
                    src.extend_from_slice(&end);
                    src.extend_from_slice(b"]");
                    assert_eq!(fast_number_end(&src, 0), reference(&src, 0), "{src:?}");
                    src.pop();
                    assert_eq!(fast_number_end(&src, 0), reference(&src, 0), "{src:?}");
                }
            }
        }
    }
}
