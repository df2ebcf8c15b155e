//! The whole-value pass ([`super::whole`]) walked from token to token, where the CPU has a
//! block classifier ([`Stops::BLOCKS`]: AVX2).
//!
//! Each 64 bytes are classed at once ([`Stops::classify`]: quotes, backslashes, control bytes,
//! white space, structural bytes) and, with a few word operations, the bytes in strings are
//! found (escaped quotes left out, a prefix XOR of the quotes), as simdjson's first stage does.
//! What is left is a mask of where tokens start: the structural bytes outside strings, every
//! unescaped quote, and the first byte of each run of other bytes (a number or a word). The
//! walk goes from one of those to the next instead of byte by byte: white space is never
//! read, a string without a backslash or control byte ends at the next quote, and the runs
//! between white space are copied as they are.
//!
//! It accepts what the byte-by-byte pass accepts and stops where it stops, with the same
//! [`Failed`] (the unit tests compare the two on every input they make), so that the token-by-
//! token path takes up in the same state.

use super::fast::{fast_number_end, scalar_ends, string_end_from};
use super::keys::{compared, tag_of};
use super::whole::{Failed, MAX_DEPTH, MAX_KEYS, bloom_bit, outer_keys, plain_tag};
use crate::args::simd_avx::Stops;
use crate::bytes::append;

/// Where tokens start in `src` from a given offset, a block of 64 bytes classed at a time.
struct Tokens<'s, S> {
    src: &'s [u8],
    stops: S,
    /// The current block's first byte, and where the next starts.
    base: usize,
    next: usize,
    /// The current block's token starts not yet returned.
    bits: u64,
    /// The current block's backslashes and control bytes: a string holding one is read by
    /// [`string_end_from`], which checks its escapes.
    special: u64,
    /// One past the last backslash or control byte of the blocks before the current one (0:
    /// none).
    special_end: usize,
    /// All ones when the last block ended inside a string.
    in_string: u64,
    /// 1 when the first byte of the next block is escaped (the last ended in an odd run of
    /// backslashes).
    escaped: u64,
    /// 1 when the last block ended in a byte of a number or a word.
    other: u64,
}

impl<'s, S: Stops> Tokens<'s, S> {
    fn new(stops: S, src: &'s [u8], at: usize) -> Self {
        Tokens {
            src,
            stops,
            base: at,
            next: at,
            bits: 0,
            special: 0,
            special_end: 0,
            in_string: 0,
            escaped: 0,
            other: 0,
        }
    }

    /// The next token's first byte, or `None` when only white space is left.
    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        while self.bits == 0 {
            if self.next >= self.src.len() {
                return None;
            }
            self.classify_next();
        }
        let i = self.bits.trailing_zeros() as usize;
        self.bits &= self.bits - 1;
        Some(self.base + i)
    }

    /// Whether the string whose quotes are at `open` and `close` (the last token returned)
    /// holds a backslash or a control byte.
    #[inline(always)]
    fn special_between(&self, open: usize, close: usize) -> bool {
        debug_assert!(open < close && close >= self.base && close < self.base + 64);
        let from = (open + 1).saturating_sub(self.base);
        let to = close - self.base;
        let inside = (u64::MAX << from) & !(u64::MAX << to);
        self.special & inside != 0 || self.special_end > open + 1
    }

    /// Classes the next block (past the end, white space) and finds its token starts. `src`
    /// has at least 64 bytes.
    #[inline(always)]
    fn classify_next(&mut self) {
        let src = self.src;
        let base = self.next;
        // The last bytes: the 64 that end where `src` does, those before `base` shifted out
        // and white space shifted in (a padded copy of the bytes cost more than this).
        let (from, shift) = match base.checked_add(64) {
            Some(end) if end <= src.len() => (base, 0),
            _ => (src.len() - 64, base - (src.len() - 64)),
        };
        let block = src[from..from + 64].try_into().expect("64 bytes");
        let mut classes = self.stops.classify(block);
        if shift != 0 {
            classes.quote >>= shift;
            classes.backslash >>= shift;
            classes.control >>= shift;
            classes.structural >>= shift;
            classes.space = classes.space >> shift | !(u64::MAX >> shift);
        }
        if self.special != 0 {
            self.special_end = self.base + 64 - self.special.leading_zeros() as usize;
        }
        self.base = base;
        self.next = base + 64;
        let escaped = if classes.backslash | self.escaped == 0 {
            0
        } else {
            escaped_bytes(classes.backslash, &mut self.escaped)
        };
        let quote = classes.quote & !escaped;
        // Bit i: byte i is in a string (its opening quote counted, its closing quote not).
        let in_string = prefix_xor(quote) ^ self.in_string;
        self.in_string = ((in_string as i64) >> 63) as u64;
        let other = !(classes.space | classes.structural | quote | in_string);
        let starts = other & !(other << 1 | self.other);
        self.other = other >> 63;
        self.bits = (classes.structural & !in_string) | quote | starts;
        self.special = classes.backslash | classes.control;
    }
}

/// Bit i set when an odd number of bits at and below i are set.
#[inline(always)]
fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

/// The bytes a backslash escapes (bit 0 when `carry` is 1: the block before ended in an odd
/// run of backslashes); `carry` set to 1 when the last byte is a backslash that escapes the
/// next block's first byte. A loop over the backslashes: few blocks hold any.
#[inline(always)]
fn escaped_bytes(backslash: u64, carry: &mut u64) -> u64 {
    let mut escaped = *carry;
    let mut escaping = backslash & !escaped;
    *carry = 0;
    while escaping != 0 {
        let i = escaping.trailing_zeros();
        if i == 63 {
            *carry = 1;
        } else {
            escaped |= 1 << (i + 1);
        }
        escaping &= escaping - 1;
        // A backslash escaped by this one escapes nothing.
        escaping &= !escaped;
    }
    escaped
}

/// [`super::whole`]'s `copy_valid_with`, walked from token to token: the same result, the same
/// output (the unit tests check both). `src` has at least 64 bytes.
#[inline(always)]
pub(super) fn copy_valid_blocks(
    stops: impl Stops,
    src: &[u8],
    at: usize,
    out: &mut Vec<u8>,
    tags: &mut Vec<u64>,
    max_depth: usize,
    lone_surrogates_as_fffd: bool,
) -> Result<usize, Failed> {
    tags.clear();
    let len = src.len();
    let mut tokens = Tokens::new(stops, src, at);
    // Where the bytes not copied yet start: they are copied in runs, up to white space.
    let mut run = at;
    let mut depth = 0;
    // As in `copy_valid_with`: a bit per open container (set: an object), where each open
    // object's tags start, and the filters of its keys.
    let mut objects: u64 = 0;
    let mut bases = [0u32; MAX_DEPTH];
    let mut blooms = [0u64; MAX_DEPTH];
    let mut bloom = 0u64;

    macro_rules! fail {
        ($at:expr) => {
            return Err(Failed {
                at: $at,
                run,
                depth,
                outer_keys: outer_keys(objects, depth, &bases, tags.len()),
            })
        };
    }

    // The next token from `end` (where the last one ended), or `len`; the white space before
    // it left out of the copy.
    macro_rules! next {
        ($end:expr) => {{
            let end = $end;
            let next = tokens.next().unwrap_or(len);
            if next != end {
                append(out, src, run, end);
                run = next;
            }
            next
        }};
    }

    // The string whose opening quote is at `$open`: where it ends and whether it holds an
    // escape, or the pass stops at its quote.
    macro_rules! string {
        ($open:expr) => {{
            let open = $open;
            let Some(close) = tokens.next() else {
                fail!(open);
            };
            if tokens.special_between(open, close) {
                match string_end_from(stops, src, open + 1, lone_surrogates_as_fffd) {
                    Some((end, escaped)) if end == close + 1 => (end, escaped),
                    _ => fail!(open),
                }
            } else {
                (close + 1, false)
            }
        }};
    }

    // A key at `p`, its colon (after spaces and tabs only, as the parser looks), and `p` set
    // to the token after the colon.
    macro_rules! key {
        ($p:expr) => {{
            let p = $p;
            if src.get(p) != Some(&b'"') {
                fail!(p);
            }
            let (end, escaped) = string!(p);
            let tag = match src.get(p..p + 8) {
                Some(first) if !escaped => plain_tag(src, first, p, end),
                _ if escaped => tag_of(&compared(&src[p..end])),
                _ => tag_of(&src[p..end]),
            };
            let base = bases[depth - 1] as usize;
            let bit = bloom_bit(tag);
            if tags.len() - base >= MAX_KEYS || (bloom & bit != 0 && tags[base..].contains(&tag)) {
                fail!(p);
            }
            bloom |= bit;
            tags.push(tag);
            let colon = tokens.next().unwrap_or(len);
            if colon != end {
                // White space before the colon: a line break there is the parser's.
                let stop = src[end..colon]
                    .iter()
                    .position(|&b| b == b'\n' || b == b'\r')
                    .map_or(colon, |i| end + i);
                if stop != end {
                    append(out, src, run, end);
                    run = stop;
                }
                if stop != colon {
                    fail!(stop);
                }
            }
            if src.get(colon) != Some(&b':') {
                fail!(colon);
            }
            next!(colon + 1)
        }};
    }

    // A word ending at `$end`: what follows must end a scalar.
    macro_rules! word {
        ($end:expr) => {{
            let end = $end;
            if !scalar_ends(&src[end..]) {
                fail!(end);
            }
            end
        }};
    }

    let mut p = tokens.next().unwrap_or(len);
    debug_assert_eq!(p, at);
    'value: loop {
        // A value starts at `p`.
        let first = src.get(p).copied().unwrap_or(0);
        let mut end = if first == b'"' {
            string!(p).0
        } else {
            match first {
                open @ (b'{' | b'[') => {
                    if depth >= max_depth {
                        fail!(p);
                    }
                    let inner = next!(p + 1);
                    match (open, src.get(inner)) {
                        (b'{', Some(b'}')) | (b'[', Some(b']')) => inner + 1,
                        (b'{', _) => {
                            objects |= 1 << depth;
                            bases[depth] = tags.len() as u32;
                            blooms[depth] = bloom;
                            bloom = 0;
                            depth += 1;
                            p = key!(inner);
                            continue 'value;
                        }
                        _ => {
                            objects &= !(1 << depth);
                            depth += 1;
                            p = inner;
                            continue 'value;
                        }
                    }
                }
                b'-' | b'0'..=b'9' => match fast_number_end(src, p) {
                    Some(end) => end,
                    None => fail!(p),
                },
                b't' if src.get(p..p + 4) == Some(b"true") => word!(p + 4),
                b'f' if src.get(p..p + 5) == Some(b"false") => word!(p + 5),
                b'n' if src.get(p..p + 4) == Some(b"null") => word!(p + 4),
                _ => fail!(p),
            }
        };
        // A value was read: a comma, a closer or (at the top) the end of the value comes next.
        loop {
            if depth == 0 {
                append(out, src, run, end);
                return Ok(end);
            }
            let next = next!(end);
            let in_object = objects >> (depth - 1) & 1 != 0;
            match src.get(next) {
                Some(b',') => {
                    let after = next!(next + 1);
                    p = if in_object { key!(after) } else { after };
                    continue 'value;
                }
                Some(b'}') if in_object => {
                    tags.truncate(bases[depth - 1] as usize);
                    bloom = blooms[depth - 1];
                    depth -= 1;
                    end = next + 1;
                }
                Some(b']') if !in_object => {
                    depth -= 1;
                    end = next + 1;
                }
                _ => fail!(next),
            }
        }
    }
}
