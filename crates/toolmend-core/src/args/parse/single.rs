//! The fast path's reading of single-quoted keys and strings (`{'a': 'x'}`, Python's `repr` of a
//! dict): the most common broken line, and one the repairing parser read token by token, with
//! a hand-over between it and the fast path at every key and value.
//!
//! Only the plain case is taken here: nothing between the quotes that the parser reads in a way
//! of its own (a double quote, a backslash, a control character), and after the closing quote
//! what the parser reads there the same way: a colon after a key (past spaces and tabs), and
//! after a value what [`Parser::value_quote_closes`] takes as the string's end, with no `+`
//! joining another string. Then the output and the repairs (a `single_quotes` repair at each
//! opening quote, a duplicate key's) are the parser's own; anything else is left to the parser,
//! with nothing written (tests/fast_path.rs compares both with the parser alone). The same
//! lines' `True`, `False` and `None` are read here too.

use super::Parser;
use crate::args::simd::quoted_stop;
use crate::bytes::append;
use crate::repair::{Repair, RepairKind};

impl Parser<'_> {
    /// For a single-quoted key at `at` in an object: where its closing quote is and where its
    /// value starts (past the colon), when the parser's `key` and `colon` read it plainly.
    #[inline(always)]
    pub(super) fn single_key(&self, at: usize) -> Option<(usize, usize)> {
        if self.strict {
            return None;
        }
        let close = quoted_stop(self.src, at + 1, b'\'');
        if self.src.get(close) != Some(&b'\'') {
            return None;
        }
        let colon = self.skip_spaces_from(close + 1);
        if self.src.get(colon) != Some(&b':') {
            return None;
        }
        // `'a':: 1` is the parser's (a doubled colon).
        let value = self.skip_spaces_from(colon + 1);
        (self.src.get(value) != Some(&b':')).then_some((close, colon + 1))
    }

    /// Writes the key [`Parser::single_key`] found (quoted at `at` and `close`) and the colon,
    /// noting the key as the parser's `key` does; the value starts at `value`.
    #[inline(always)]
    pub(super) fn single_member(&mut self, at: usize, close: usize, value: usize) {
        if self.sink.scratch.nesting.add_member() {
            self.sink.out.push(b',');
        }
        self.sink
            .repairs
            .push(Repair::at(RepairKind::SingleQuotes, at));
        let start = self.sink.out.len();
        self.sink.out.push(b'"');
        append(&mut self.sink.out, self.src, at + 1, close);
        self.sink.out.push(b'"');
        // No backslash in it: the key as written is the key as compared.
        self.note_key(start, at, false);
        self.sink.out.push(b':');
        self.pos = value;
    }

    /// For a single-quoted string value at `at` inside a container: writes it and returns
    /// `true` when the parser's `string_value` reads it plainly, else writes nothing.
    #[inline(always)]
    pub(super) fn single_value(&mut self, at: usize) -> bool {
        if self.strict {
            return false;
        }
        let src = self.src;
        let close = quoted_stop(src, at + 1, b'\'');
        if src.get(close) != Some(&b'\'') {
            return false;
        }
        // Most strings end an item: a closer right after the quote, or a comma and (past
        // spaces) the next item's quote. The parser's look-aheads take those as the end (no
        // inner quote, no prose after the comma, no `+`), so they are not asked.
        let ends_item = match src.get(close + 1) {
            Some(b'}' | b']') => true,
            Some(b',') => matches!(
                src.get(self.skip_spaces_from(close + 2)),
                Some(b'\'' | b'"')
            ),
            _ => false,
        };
        if !ends_item {
            // `'a' + 'b'`: joined strings are the parser's.
            if !self.value_quote_closes(close + 1, true)
                || src.get(self.skip_blank_from(close + 1)) == Some(&b'+')
            {
                return false;
            }
        }
        self.sink
            .repairs
            .push(Repair::at(RepairKind::SingleQuotes, at));
        let out = &mut self.sink.out;
        out.push(b'"');
        append(out, src, at + 1, close);
        out.push(b'"');
        self.pos = close + 1;
        true
    }
}

impl Parser<'_> {
    /// For `True`, `False` or `None` at `at` inside a container (Python's literals, in the
    /// same lines): writes the JSON literal with the parser's `python_literal` repair and
    /// returns `true` when the parser's `word` reads the word so (a whole word, no call after
    /// it), else writes nothing.
    #[inline(always)]
    pub(super) fn python_literal(&mut self, at: usize) -> bool {
        if self.strict {
            return false;
        }
        let rest = &self.src[at..];
        let (word, json): (&[u8], &[u8]) = match rest[0] {
            b'T' => (b"True", b"true"),
            b'F' => (b"False", b"false"),
            _ => (b"None", b"null"),
        };
        let ends = |b: &u8| !(b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'('));
        if !rest.starts_with(word) || !rest.get(word.len()).is_none_or(ends) {
            return false;
        }
        self.sink
            .repairs
            .push(Repair::at(RepairKind::PythonLiteral, at));
        self.sink.out.extend_from_slice(json);
        self.pos = at + word.len();
        true
    }
}
