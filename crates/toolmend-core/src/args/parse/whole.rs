//! The fast path's first try: a whole top-level array or object proven valid JSON and copied
//! in one tight pass, without the parser's state.
//!
//! The token-by-token fast path ([`super::fast`]) keeps the parser's nesting stack, key list
//! and output offsets up to date at every token, so that the repairing parser can take over at
//! any byte; on clean lines that bookkeeping was most of the time. Here a value that opens at
//! the top level is read with a bit per open container and a tag per key only, its bytes
//! copied in runs (white space between tokens left out), and accepted only when every token is
//! one the token-by-token path copies as written: the same grammar and checks ([`string_end`],
//! [`fast_number_end`]), no key repeated in an object (not even a key whose tag is only equal),
//! not deeper than `--max-nesting` (nor than 64 levels, nor over [`MAX_KEYS`] keys in one
//! object: those are left to the other path). Anything else, and the token-by-token path takes
//! up after the last complete member of the outermost level ([`super::handover`] rebuilds its
//! state there from the pass's), or, when there is none, the output written so far is taken
//! back and it reads the value from its start: the output is the same either way
//! (tests/fast_path.rs compares both with the repairing parser alone).

use super::Parser;
use super::fast::{Resume, fast_number_end, is_ws, string_end_from};
use super::keys::{compared, tag_of, tag_of_word};
use crate::args::simd_avx::{Stops, WithStops, dispatch};
use crate::bytes::append;

/// The most keys one object may have here (each key is compared with every earlier tag of its
/// object); a larger object is read by the token-by-token path, which indexes its keys.
const MAX_KEYS: usize = 32;

/// Open containers tracked here, a bit each.
const MAX_DEPTH: usize = 64;

impl Parser<'_> {
    /// At a top-level `{` or `[` at `at`: when the whole value there is valid JSON that the
    /// fast path copies as written, writes it compact and returns [`Resume::Done`] with `pos`
    /// past it; else the state the token-by-token path takes up in ([`super::handover`]), or
    /// `None` with nothing written.
    #[inline]
    pub(super) fn fast_whole(&mut self, at: usize) -> Option<Resume> {
        let out = &mut self.sink.out;
        let max_depth = self.max_nesting.min(MAX_DEPTH);
        let tags = &mut self.sink.scratch.tags;
        // The clean lane's pass over the same bytes, when it ran: taken, not read again.
        let pending = self.sink.pending.take().filter(|pending| {
            let same = pending.reads(at, self.src.len());
            if !same {
                out.truncate(pending.out_start);
            }
            same
        });
        let (start, result) = match pending {
            Some(pending) => (pending.out_start, pending.result),
            None => {
                let start = out.len();
                let result = copy_valid(
                    self.src,
                    at,
                    out,
                    tags,
                    max_depth,
                    self.lone_surrogates_as_fffd,
                );
                (start, result)
            }
        };
        match result {
            Ok(end) => {
                self.pos = end;
                Some(Resume::Done)
            }
            Err(failed) => {
                // The bytes read since the last run copied: `out` then holds the compact
                // copy of everything before the failing byte.
                append(out, self.src, failed.run, failed.at);
                let resume = self.resume_after_member(at, start, &failed);
                if resume.is_none() {
                    self.sink.out.truncate(start);
                }
                resume
            }
        }
    }
}

impl super::Sink {
    /// The clean lane ([`crate::args::Mender`]'s, for an input that is valid JSON as it
    /// stands): appends the array or object at `src[at]` to `out` compact and returns `None`
    /// when it is valid JSON this pass copies as written and ends where `src` does. What it
    /// appends is what the parser writes for the same bytes: [`copy_valid`] is the fast path's
    /// first try, and on such a value the parser writes nothing else. Else `false`, with what
    /// the pass found in `pending` (`out` as it left it), for the parser to take up without
    /// reading the bytes again.
    pub(crate) fn copy_whole(
        &mut self,
        src: &[u8],
        at: usize,
        max_nesting: usize,
        lone_surrogates_as_fffd: bool,
    ) -> bool {
        let out_start = self.out.len();
        let tags = &mut self.scratch.tags;
        let max_depth = max_nesting.min(MAX_DEPTH);
        match copy_valid(
            src,
            at,
            &mut self.out,
            tags,
            max_depth,
            lone_surrogates_as_fffd,
        ) {
            Ok(end) if end == src.len() => true,
            result => {
                self.pending = Some(Pending {
                    src_len: src.len(),
                    at,
                    out_start,
                    result,
                });
                false
            }
        }
    }
}

/// What the clean lane's pass found on an input it did not take as it stands: the parser's
/// first [`Parser::fast_whole`], at the same bytes, takes it instead of reading them again
/// (on a broken line, the pass up to its first fault; on values one after another, the first).
pub(crate) struct Pending {
    /// The pass read `src[at..]` of the input's first `src_len` bytes...
    src_len: usize,
    at: usize,
    /// ...and wrote from here in the sink's output, which still holds what it wrote.
    out_start: usize,
    result: Result<usize, Failed>,
}

impl Pending {
    /// Whether the pass read the text the parser reads: the input's bytes `at..end`.
    pub(crate) fn reads(&self, at: usize, end: usize) -> bool {
        self.at == at && self.src_len == end
    }

    /// Where the pass's output starts (the sink's output is cut back there when the parser
    /// reads other text).
    pub(crate) fn out_start(&self) -> usize {
        self.out_start
    }
}

/// Where [`copy_valid`] stopped: the byte it would not copy as written, and where the bytes
/// not copied yet start.
pub(super) struct Failed {
    pub(super) at: usize,
    run: usize,
    /// The containers open there.
    pub(super) depth: usize,
    /// The tags in the pass's `tags` that are the outermost object's keys (the first ones).
    pub(super) outer_keys: usize,
}

/// How many of the first tags are the outermost object's keys: all up to where the first
/// object open inside it starts its own.
#[cold]
fn outer_keys(objects: u64, depth: usize, bases: &[u32; MAX_DEPTH], tags: usize) -> usize {
    (1..depth)
        .find(|&d| objects >> d & 1 != 0)
        .map_or(tags, |d| bases[d] as usize)
}

/// [`tag_of`] the key `src[p..end]` (no escape in it), whose first eight bytes (some past the
/// key when it is shorter) are `first`: under eight bytes, its bytes; else its first eight
/// bytes and its last eight turned. Both taken and the one that does not apply masked off, so
/// that keys of mixed lengths cost no mispredicted branch.
#[inline(always)]
fn plain_tag(src: &[u8], first: &[u8], p: usize, end: usize) -> u64 {
    let len = end - p;
    let word = |bytes: &[u8]| u64::from_le_bytes(bytes.try_into().expect("eight bytes"));
    let first = word(first) & (u64::MAX >> (64 - 8 * len.min(8)));
    // `end - 8` is at least `p - 6` (a key has its two quotes), and not below 0.
    let at = end.saturating_sub(8);
    let last = word(&src[at..at + 8]).rotate_left(29) & 0u64.wrapping_sub(u64::from(len >= 8));
    tag_of_word(first ^ last, len)
}

/// A key tag's bit in its object's filter: six bits of the tag mixed (a short key's tag is
/// its bytes, whose high bits are zero and whose low byte is its quote).
#[inline(always)]
fn bloom_bit(tag: u64) -> u64 {
    1 << (tag.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58)
}

/// Reads the array or object at `src[at]` and appends it to `out` without white space between
/// tokens; where it ends, or where it stopped at the first thing the fast path would not copy
/// as written (the bytes from `run` up to there are not appended). `tags` is scratch space for
/// key tags. Compiled with AVX2's scan for strings where the CPU has it ([`dispatch`]).
fn copy_valid(
    src: &[u8],
    at: usize,
    out: &mut Vec<u8>,
    tags: &mut Vec<u64>,
    max_depth: usize,
    lone_surrogates_as_fffd: bool,
) -> Result<usize, Failed> {
    /// The arguments, for [`dispatch`].
    struct CopyValid<'s, 'o> {
        src: &'s [u8],
        at: usize,
        out: &'o mut Vec<u8>,
        tags: &'o mut Vec<u64>,
        max_depth: usize,
        lone_surrogates_as_fffd: bool,
    }
    impl WithStops for CopyValid<'_, '_> {
        type Out = Result<usize, Failed>;
        #[inline(always)]
        fn run<S: Stops>(self, stops: S) -> Self::Out {
            copy_valid_with(
                stops,
                self.src,
                self.at,
                self.out,
                self.tags,
                self.max_depth,
                self.lone_surrogates_as_fffd,
            )
        }
    }
    dispatch(CopyValid {
        src,
        at,
        out,
        tags,
        max_depth,
        lone_surrogates_as_fffd,
    })
}

/// [`copy_valid`] with the scan `stops`.
#[inline(always)]
fn copy_valid_with(
    stops: impl Stops,
    src: &[u8],
    at: usize,
    out: &mut Vec<u8>,
    tags: &mut Vec<u64>,
    max_depth: usize,
    lone_surrogates_as_fffd: bool,
) -> Result<usize, Failed> {
    tags.clear();
    let mut p = at;
    // Where the bytes not copied yet start: they are copied in runs, up to white space.
    let mut run = at;
    let mut depth = 0;
    // Bit d: the container open at depth d (0 the outermost) is an object.
    let mut objects: u64 = 0;
    // Where each open object's key tags start in `tags`.
    let mut bases = [0u32; MAX_DEPTH];
    // A bit per key tag of the innermost open object ([`bloom_bit`]): a key whose bit is not
    // set is compared with none of the object's tags. The filters of the objects around it are
    // kept in `blooms` (each saved where the object inside it opens) while it is open.
    let mut blooms = [0u64; MAX_DEPTH];
    let mut bloom = 0u64;

    macro_rules! fail {
        () => {
            return Err(Failed {
                at: p,
                run,
                depth,
                outer_keys: outer_keys(objects, depth, &bases, tags.len()),
            })
        };
    }

    // White space (JSON's four bytes, or with `spaces` only spaces and tabs) skipped, the run
    // before it copied.
    macro_rules! skip {
        ($ws:expr) => {
            if p < src.len() && $ws(src[p]) {
                append(out, src, run, p);
                p += 1;
                while p < src.len() && $ws(src[p]) {
                    p += 1;
                }
                run = p;
            }
        };
    }
    let spaces = |b: u8| b == b' ' || b == b'\t';

    // A key at `p` (white space skipped), its colon (after spaces and tabs, as the parser
    // looks) and the white space after it.
    macro_rules! key {
        () => {
            if src.get(p) != Some(&b'"') {
                fail!();
            }
            // (A `match`, not `Option::or_else`: that call was left out of line.)
            let (end, escaped) = match stops.string_start(src, p) {
                Ok(end) => (end, false),
                Err(from) => match string_end_from(stops, src, from, lone_surrogates_as_fffd) {
                    Some(found) => found,
                    None => fail!(),
                },
            };
            let tag = match src.get(p..p + 8) {
                // A plain key's tag from two loads, whatever its length (no branch on it).
                Some(first) if !escaped => plain_tag(src, first, p, end),
                _ if escaped => tag_of(&compared(&src[p..end])),
                _ => tag_of(&src[p..end]),
            };
            let base = bases[depth - 1] as usize;
            let bit = bloom_bit(tag);
            if tags.len() - base >= MAX_KEYS || (bloom & bit != 0 && tags[base..].contains(&tag)) {
                fail!();
            }
            bloom |= bit;
            tags.push(tag);
            p = end;
            // Most keys are followed by their colon at once.
            if src.get(p) != Some(&b':') {
                skip!(spaces);
                if src.get(p) != Some(&b':') {
                    fail!();
                }
            }
            p += 1;
            skip!(is_ws);
        };
    }

    'value: loop {
        // A value starts at `p`. Strings first: most values are.
        let first = src.get(p).copied().unwrap_or(0);
        if first == b'"' {
            match stops.string_start_wide(src, p) {
                Ok(end) => p = end,
                Err(from) => match string_end_from(stops, src, from, lone_surrogates_as_fffd) {
                    Some((end, _)) => p = end,
                    None => fail!(),
                },
            }
        } else {
            match first {
                open @ (b'{' | b'[') => {
                    if depth >= max_depth {
                        fail!();
                    }
                    p += 1;
                    skip!(is_ws);
                    match (open, src.get(p)) {
                        (b'{', Some(b'}')) | (b'[', Some(b']')) => p += 1,
                        (b'{', _) => {
                            objects |= 1 << depth;
                            bases[depth] = tags.len() as u32;
                            blooms[depth] = bloom;
                            bloom = 0;
                            depth += 1;
                            key!();
                            continue 'value;
                        }
                        _ => {
                            objects &= !(1 << depth);
                            depth += 1;
                            continue 'value;
                        }
                    }
                }
                b'-' | b'0'..=b'9' => match fast_number_end(src, p) {
                    Some(end) => p = end,
                    None => fail!(),
                },
                // Each word compared at a length known here (a load and a compare, not a call).
                b't' if src.get(p..p + 4) == Some(b"true") => p += 4,
                b'f' if src.get(p..p + 5) == Some(b"false") => p += 5,
                b'n' if src.get(p..p + 4) == Some(b"null") => p += 4,
                _ => fail!(),
            }
        }
        // A value was read: a comma, a closer or (at the top) the end of the value comes next.
        loop {
            if depth == 0 {
                append(out, src, run, p);
                return Ok(p);
            }
            skip!(is_ws);
            // A comma first (most values are followed by one), whatever the level's kind.
            if src.get(p) == Some(&b',') {
                p += 1;
                skip!(is_ws);
                if objects >> (depth - 1) & 1 != 0 {
                    key!();
                }
                continue 'value;
            }
            let in_object = objects >> (depth - 1) & 1 != 0;
            match (src.get(p), in_object) {
                (Some(b'}'), true) => {
                    tags.truncate(bases[depth - 1] as usize);
                    bloom = blooms[depth - 1];
                    depth -= 1;
                    p += 1;
                }
                (Some(b']'), false) => {
                    depth -= 1;
                    p += 1;
                }
                _ => fail!(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A short key's tag from one load of the bytes around it (as `copy_valid` takes it) is
    /// the tag of its bytes alone, so that it equals the tag of the same key decoded.
    #[test]
    fn short_keys_tag_alike_however_read() {
        for key in [&b"\"\""[..], b"\"a\"", b"\"abcde\"", b"\"\xc3\xa9\""] {
            let mut src = key.to_vec();
            src.extend_from_slice(b":123456789");
            let word = u64::from_le_bytes(src[..8].try_into().unwrap());
            let masked = word & (u64::MAX >> (64 - 8 * key.len()));
            assert_eq!(tag_of_word(masked, key.len()), tag_of(key), "{key:?}");
        }
        // Every length, the key at the start of its text and after other bytes.
        for len in 2..20 {
            for before in [0, 1, 7, 9] {
                let key: Vec<u8> = (0..len)
                    .map(|i| {
                        if i == 0 || i == len - 1 {
                            b'"'
                        } else {
                            b'a' + i as u8
                        }
                    })
                    .collect();
                let mut src = vec![b'x'; before];
                src.extend_from_slice(&key);
                src.extend_from_slice(b":123456789");
                let (p, end) = (before, before + len);
                let tag = plain_tag(&src, &src[p..p + 8], p, end);
                assert_eq!(tag, tag_of(&key), "{len} {before}");
            }
        }
        assert_ne!(tag_of(b"\"a\""), tag_of(b"\"b\""));
        assert_ne!(tag_of(b"\"content_5\""), tag_of(b"\"content_7\""));
    }
}
