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

/// Blocks classed at a time: their token starts are written out (flattened) before the walk
/// reads them, so that the walk keeps only its place in the list.
const WINDOW: usize = 16;

/// The room [`Tokens`] needs in its list: a window's token starts, and the 64 that the last
/// block's flattening may write past them.
pub(super) const TOKENS_ROOM: usize = WINDOW * 64 + 64;

/// Where tokens start in `src` from a given offset, a window of 64-byte blocks classed at a
/// time.
struct Tokens<'s, 'l, S> {
    src: &'s [u8],
    stops: S,
    /// The current window's token starts (`list[read..found]` not yet returned).
    list: &'l mut [u32],
    read: usize,
    found: usize,
    /// Where the current window starts, and where the next one does.
    window: usize,
    next: usize,
    /// The current window's backslashes and control bytes, a mask a block: a string holding
    /// one is read by [`string_end_from`], which checks its escapes.
    special: [u64; WINDOW],
    /// One past the last backslash or control byte of the current window (0: none), and of
    /// the windows before it.
    special_last: usize,
    special_end: usize,
    /// All ones when the last block ended inside a string.
    in_string: u64,
    /// 1 when the first byte of the next block is escaped (the last ended in an odd run of
    /// backslashes).
    escaped: u64,
    /// 1 when the last block ended in a byte of a number or a word.
    other: u64,
}

impl<'s, 'l, S: Stops> Tokens<'s, 'l, S> {
    fn new(stops: S, src: &'s [u8], at: usize, list: &'l mut Vec<u32>) -> Self {
        if list.len() < TOKENS_ROOM {
            list.resize(TOKENS_ROOM, 0);
        }
        Tokens {
            src,
            stops,
            list,
            read: 0,
            found: 0,
            window: at,
            next: at,
            special: [0; WINDOW],
            special_last: 0,
            special_end: 0,
            in_string: 0,
            escaped: 0,
            other: 0,
        }
    }

    /// The next token's first byte, or `src.len()` when only white space is left.
    #[inline(always)]
    fn next(&mut self) -> usize {
        if self.read == self.found {
            self.classify_window();
        }
        let at = self.list[self.read];
        self.read += 1;
        at as usize
    }

    /// Whether the string whose quotes are at `open` and `close` (the last token returned)
    /// holds a backslash or a control byte.
    #[inline(always)]
    fn special_between(&self, open: usize, close: usize) -> bool {
        if self.special_end > open + 1 {
            return true;
        }
        if self.special_last <= open + 1 {
            return false;
        }
        let from = (open + 1).saturating_sub(self.window);
        let to = close - self.window;
        let (first, last) = (from / 64, to / 64);
        let mut any = 0;
        for (block, &special) in self.special[first..=last].iter().enumerate() {
            let mut special = special;
            if block == 0 {
                special &= u64::MAX << (from % 64);
            }
            if block + first == last {
                special &= !(u64::MAX << (to % 64));
            }
            any |= special;
        }
        any != 0
    }

    /// Classes the next window of blocks (past the end, white space) and writes out where
    /// its tokens start; at the end of `src`, its length. `src` has at least 64 bytes.
    #[inline(always)]
    fn classify_window(&mut self) {
        let src = self.src;
        let len = src.len();
        if self.special_last != 0 {
            self.special_end = self.special_last;
        }
        self.read = 0;
        self.found = 0;
        loop {
            if self.next >= len {
                self.list[0] = len as u32;
                self.found = 1;
                return;
            }
            self.window = self.next;
            self.special_last = 0;
            for block in 0..WINDOW {
                let base = self.next;
                if base >= len {
                    self.special[block] = 0;
                    continue;
                }
                let (bits, special) = self.classify(base);
                self.special[block] = special;
                if special != 0 {
                    self.special_last = base + 64 - special.leading_zeros() as usize;
                }
                // Eight written whatever the count (those past it are written over next).
                let count = bits.count_ones() as usize;
                let mut bits = bits;
                let mut at = self.found;
                loop {
                    for slot in &mut self.list[at..at + 8] {
                        *slot = (base + bits.trailing_zeros() as usize) as u32;
                        bits &= bits.wrapping_sub(1);
                    }
                    at += 8;
                    if at >= self.found + count {
                        break;
                    }
                }
                self.found += count;
                self.next = base + 64;
            }
            if self.found != 0 {
                return;
            }
        }
    }

    /// The token starts and the backslashes and control bytes of the block at `base`.
    #[inline(always)]
    fn classify(&mut self, base: usize) -> (u64, u64) {
        let src = self.src;
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
        (
            (classes.structural & !in_string) | quote | starts,
            classes.backslash | classes.control,
        )
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
/// output (the unit tests check both). `src` has at least 64 bytes and
/// fewer than `u32::MAX`.
#[inline(always)]
pub(super) fn copy_valid_blocks(
    stops: impl Stops,
    src: &[u8],
    at: usize,
    out: &mut Vec<u8>,
    tags: &mut Vec<u64>,
    list: &mut Vec<u32>,
    max_depth: usize,
    lone_surrogates_as_fffd: bool,
) -> Result<usize, Failed> {
    tags.clear();
    let len = src.len();
    let mut tokens = Tokens::new(stops, src, at, list);
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
            let next = tokens.next();
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
            let close = tokens.next();
            if close == len {
                fail!(open);
            }
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
            let colon = tokens.next();
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

    let mut p = tokens.next();
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
