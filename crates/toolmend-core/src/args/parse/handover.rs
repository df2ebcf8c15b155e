//! When the whole-value pass ([`super::whole`]) stops inside a top-level array or object, the
//! token-by-token fast path takes up after the last complete member of the outermost level,
//! not from the value's start: the members before it are not read a second time.
//!
//! The pass keeps no positions (that bookkeeping in its loop cost more on valid lines than it
//! saved on broken ones), and they are not looked for again by reading the value: the state
//! the fast path holds after that member's comma is rebuilt from what the pass has. The comma
//! is found back from the failing byte (strings stepped over by their unescaped opening
//! quote), which also gives its place in the compact copy the pass wrote; the level goes on
//! the nesting stack; its keys are the pass's tags (the same function), and their places in
//! the output are found only when a key is compared with them (`keys::place_keys`: a
//! repeat, or a large object). The fast path reaches that comma in that state itself (every
//! token before it is one both copy as written), so the output is the same (tests/fast_path.rs
//! compares it with the repairing parser alone).

use super::fast::{Resume, is_ws};
use super::keys::REPORTED;
use super::whole::Failed;
use super::{KeyEntry, Parser};
use crate::args::nesting::Container;

/// Where [`KeyEntry`]s taken over from the pass say they are, until placed.
const UNPLACED: usize = 0;

impl Parser<'_> {
    /// The value at `at` (its copy starts at `start` in the output) was proven valid up to
    /// where the pass `failed`, and the output holds its compact copy up to there. Rebuilds
    /// the fast path's state after the outermost level's last comma that some token follows
    /// before that, truncates the output there and returns the state the fast path resumes
    /// in; `None` when there is no such comma (the caller takes the output back to `start`).
    #[cold]
    #[inline(never)]
    pub(super) fn resume_after_member(
        &mut self,
        at: usize,
        start: usize,
        failed: &Failed,
    ) -> Option<Resume> {
        let src = self.src;
        let kind = if src[at] == b'{' {
            Container::Object
        } else {
            Container::Array
        };
        // An object's comma with a token after it precedes its last key the pass read.
        if kind == Container::Object && failed.outer_keys < 2 {
            return None;
        }
        // Back from the failing byte to the comma (a comma right before the failing token is
        // not taken: the fast path may stop at the value before it, `"a": "x", b: 1`, a string
        // the parser reads on), counting the white space left out of the copy.
        let mut depth = failed.depth;
        let mut q = failed.at;
        let mut ws = 0;
        let mut token_after = false;
        let comma = loop {
            if q <= at + 1 {
                return None;
            }
            q -= 1;
            match src[q] {
                b if is_ws(b) => {
                    ws += 1;
                    continue;
                }
                b'"' => q = opening_quote(src, at, q),
                b'}' | b']' => depth += 1,
                b'{' | b'[' => depth -= 1,
                b',' if depth == 1 && token_after => break q,
                _ => {}
            }
            token_after = true;
        };
        let sink = &mut *self.sink;
        let comma_out = sink.out.len() - (failed.at - comma - ws);
        debug_assert_eq!(sink.out.get(comma_out), Some(&b','));
        sink.out.truncate(comma_out);
        let scratch = &mut sink.scratch;
        let keys_base = scratch.keys.len();
        if kind == Container::Object {
            // Every key but the last the pass read: the one after the comma.
            let before = failed.outer_keys - 1;
            scratch
                .keys
                .extend(scratch.tags[..before].iter().map(|&tag| KeyEntry {
                    start: UNPLACED,
                    end: UNPLACED,
                    tag: tag & !REPORTED,
                }));
            scratch.unplaced = before;
            scratch.unplaced_base = keys_base;
            scratch.unplaced_from = start;
        }
        // The level as the fast path opens it (`open`, then `add_member` at its first member).
        scratch.nesting.push(kind, at, true, keys_base);
        match kind {
            Container::Array => self.open_arrays += 1,
            Container::Object => self.open_objects += 1,
        }
        self.pos = comma + 1;
        Some(match kind {
            Container::Object => Resume::Member(Some(comma)),
            Container::Array => Resume::Element(Some(comma)),
        })
    }
}

/// The opening quote of the string whose closing quote is at `close`, in text proven valid
/// JSON from `at`: the nearest quote before it that an even number of backslashes precedes.
fn opening_quote(src: &[u8], at: usize, close: usize) -> usize {
    let mut end = close;
    loop {
        let Some(quote) = memchr::memrchr(b'"', &src[at..end]) else {
            return at;
        };
        let quote = at + quote;
        let backslashes = src[at..quote]
            .iter()
            .rev()
            .take_while(|&&b| b == b'\\')
            .count();
        if backslashes % 2 == 0 {
            return quote;
        }
        end = quote;
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Rules, Sink};
    use super::*;

    /// Where the fast path takes up after the whole-value pass stopped, and what the output
    /// holds then.
    fn taken_up(src: &str) -> (Option<Resume>, usize, String, usize) {
        let mut sink = Sink::default();
        let rules = Rules {
            max_nesting: 100,
            ..Rules::default()
        };
        let mut parser = Parser::new(src.as_bytes(), 0, &mut sink, rules);
        let resume = parser.fast_whole(0);
        let pos = parser.pos;
        let keys = parser.sink.scratch.keys.len();
        (resume, pos, String::from_utf8(sink.out).unwrap(), keys)
    }

    /// The members before the last complete one are not read again: the fast path takes up
    /// after the comma that ends it, with the output and the keys up to there.
    #[test]
    fn a_broken_value_is_taken_up_after_its_last_complete_member() {
        let src = r#"{"a": 1, "b": [2, {"c": 3}], "d": "x", "e": True}"#;
        let comma = src.find(r#", "e""#).unwrap();
        assert_eq!(
            taken_up(src),
            (
                Some(Resume::Member(Some(comma))),
                comma + 1,
                r#"{"a":1,"b":[2,{"c":3}],"d":"x""#.to_owned(),
                3
            )
        );
        let src = "[1, \"x\", [2, 3], true, tru]";
        let comma = src.find(", tru").unwrap();
        assert_eq!(
            taken_up(src),
            (
                Some(Resume::Element(Some(comma))),
                comma + 1,
                "[1,\"x\",[2,3]".to_owned(),
                0
            )
        );
        // A comma right before the failing token is not taken (the string before it may be
        // the parser's); with no other, the value is read again from its start.
        let src = r#"{"a": 1, "b": "x", c: 2}"#;
        let comma = src.find(r#", "b""#).unwrap();
        assert_eq!(taken_up(src).0, Some(Resume::Member(Some(comma))));
        assert_eq!(taken_up(r#"{"a": "x", b: 1}"#), (None, 0, String::new(), 0));
        assert_eq!(taken_up(r#"{"a": {"b": 1, 'c': 2}}"#).0, None);
    }

    /// The keys taken over are placed when compared (a repeat of one, a large object), and
    /// only in their own object: the output and repairs are the parser's alone.
    #[test]
    fn taken_up_values_mend_as_the_parser_alone_does() {
        let mend = |src: &str, fast_path_off: bool| {
            let mut sink = Sink::default();
            let rules = Rules {
                max_nesting: 100,
                fast_path_off,
                ..Rules::default()
            };
            let mut parts = Vec::new();
            let result = Parser::new(src.as_bytes(), 0, &mut sink, rules)
                .document(&mut parts, false)
                .map_err(|e| format!("{e:?}"));
            let out = String::from_utf8(sink.out).unwrap();
            (result, out, parts, format!("{:?}", sink.repairs))
        };
        let keys: String = (0..30).map(|i| format!("\"k{i}\": {i}, ")).collect();
        for src in [
            r#"{"a": 1, "b": 2, 'c': 3, "a": 4}"#.to_owned(),
            r#"{"a": {"x": 1}, "b": 2, "c": {"a": 1, "b": 2, "a": 3}, 'd': 4, "b": 5}"#.to_owned(),
            r#"{"\u0061": 1, "b": 2, "c": 3, 'd': 4, "a": 5}"#.to_owned(),
            r#"{"a": 1, "b": 2, 'c': 3, "d": 4} {"a": 1, "a": 2}"#.to_owned(),
            r#"{"a": 1, "b": 2, 'c': 3} {"a": 1, "b": 2, 'c': 3, "b": 4}"#.to_owned(),
            r#"[{"a": 1}, {"b": 2}, [3], tru, "x"]"#.to_owned(),
            r#"{"a": "x\\", "b": "y\"z", "c": "\\\\", "d": True, "a": 0}"#.to_owned(),
            r#"{"a": "x, \"b\": [", "b": "]}", "c": None}"#.to_owned(),
            format!("{{{keys}\"z\": tru, \"k1\": 5}}"),
            format!("{{{keys}\"z\": [1, 2, 'x'], \"y\": 5}}"),
            r#"{"a": 1, "b": 2, "c": 3"#.to_owned(),
            r#"{"a": 1, "b": 2, "a": 3,}"#.to_owned(),
            "{\"a\": 1,\n  \"b\" :  [1, 2] ,\n  \"c\": 3,\n}".to_owned(),
        ] {
            assert_eq!(mend(&src, false), mend(&src, true), "{src}");
        }
    }
}
