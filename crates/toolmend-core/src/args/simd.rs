//! The scan for the end of a run of plain string bytes, a block at a time: most bytes of tool
//! arguments are string contents, and on valid JSON this scan is most of the parse.
//!
//! On x86_64 (SSE2 is part of its baseline) 16 or 32 bytes are tested per step; the end of the
//! input is tested with one block that overlaps what was already tested, not byte by byte.
//! Elsewhere the crate's word-at-a-time `find_any` does the same job. The scan for a quote or a
//! backslash (`either_stop`) serves the unquote stage's decoding of string layers.

// The unsafe code of this module is the SSE2 scan: unaligned loads within the slice's bounds.
#![allow(unsafe_code)]

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
use crate::bytes::find_any;

/// The first position from `p` holding `"`, `\` or a byte below 0x20 (a control character),
/// or `src.len()` when there is none: where a JSON string's plain bytes stop.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
#[inline(always)]
pub(crate) fn string_stop(src: &[u8], p: usize) -> usize {
    find_any(src, p, [b'"', b'\\', b'"'], true)
}

/// The first position from `p` holding `"`, `\` or a byte below 0x20 (a control character),
/// or `src.len()` when there is none: where a JSON string's plain bytes stop.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
pub(crate) fn string_stop(src: &[u8], p: usize) -> usize {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_min_epu8, _mm_or_si128, _mm_set1_epi8, _mm_xor_si128,
    };
    let stops = |v: __m128i| {
        // SAFETY: SSE2 is enabled for this build (cfg above); no memory is read.
        unsafe {
            // With bit 1 flipped, `"` (0x22) is 0x20 and the bytes below 0x20 stay below it:
            // min(x, 0x20) == x marks both with one compare.
            let flipped = _mm_xor_si128(v, _mm_set1_epi8(0x02));
            let low = _mm_cmpeq_epi8(_mm_min_epu8(flipped, _mm_set1_epi8(0x20)), flipped);
            _mm_or_si128(low, _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8)))
        }
    };
    scan(src, p, stops, |b| matches!(b, b'"' | b'\\' | 0..0x20))
}

/// The first position from `p` holding `"`, `\`, a control character or `quote`, or
/// `src.len()`: where the plain bytes of a string opened by another quote stop.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
#[inline(always)]
pub(crate) fn quoted_stop(src: &[u8], p: usize, quote: u8) -> usize {
    find_any(src, p, [b'"', b'\\', quote], true)
}

/// The first position from `p` holding `"`, `\`, a control character or `quote`, or
/// `src.len()`: where the plain bytes of a string opened by another quote stop.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
pub(crate) fn quoted_stop(src: &[u8], p: usize, quote: u8) -> usize {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_min_epu8, _mm_or_si128, _mm_set1_epi8, _mm_xor_si128,
    };
    let stops = |v: __m128i| {
        // SAFETY: SSE2 is enabled for this build (cfg above); no memory is read.
        unsafe {
            // As in `string_stop`, and the quote.
            let flipped = _mm_xor_si128(v, _mm_set1_epi8(0x02));
            let low = _mm_cmpeq_epi8(_mm_min_epu8(flipped, _mm_set1_epi8(0x20)), flipped);
            let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
            let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(quote as i8));
            _mm_or_si128(_mm_or_si128(low, backslash), quote)
        }
    };
    scan(src, p, stops, |b| {
        matches!(b, b'"' | b'\\' | 0..0x20) || b == quote
    })
}

/// The first position from `p` holding `a` or `b`, or `src.len()` when there is none.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
#[inline(always)]
pub(crate) fn either_stop(src: &[u8], p: usize, a: u8, b: u8) -> usize {
    find_any(src, p, [a, b, b], false)
}

/// The first position from `p` holding `a` or `b`, or `src.len()` when there is none (the
/// end of a run of a string literal's bytes that need no decoding: its quote, or `\`).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
pub(crate) fn either_stop(src: &[u8], p: usize, a: u8, b: u8) -> usize {
    use std::arch::x86_64::{__m128i, _mm_cmpeq_epi8, _mm_or_si128, _mm_set1_epi8};
    let stops = |v: __m128i| {
        // SAFETY: SSE2 is enabled for this build (cfg above); no memory is read.
        unsafe {
            _mm_or_si128(
                _mm_cmpeq_epi8(v, _mm_set1_epi8(a as i8)),
                _mm_cmpeq_epi8(v, _mm_set1_epi8(b as i8)),
            )
        }
    };
    scan(src, p, stops, |byte| byte == a || byte == b)
}

/// The first position from `p` whose byte `stops` marks (`stop` says the same of one byte), or
/// `src.len()`: 16 bytes first, then 32 per step, then the block that ends at the end.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn scan(
    src: &[u8],
    p: usize,
    stops: impl Fn(std::arch::x86_64::__m128i) -> std::arch::x86_64::__m128i,
    stop: impl Fn(u8) -> bool,
) -> usize {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_movemask_epi8};
    let len = src.len();
    if p >= len {
        return len;
    }
    // Bit i of the mask: byte i of the 16 at `at` stops the scan. `at + 16 <= len`.
    let mask = |at: usize| -> u32 {
        debug_assert!(at + 16 <= len);
        // SAFETY: SSE2 is enabled for this build (cfg above); the 16 bytes read from `at` are
        // inside `src` (every caller checks `at + 16 <= len`), and the load is unaligned.
        unsafe {
            let v = _mm_loadu_si128(src.as_ptr().add(at).cast::<__m128i>());
            _mm_movemask_epi8(stops(v)) as u32
        }
    };
    if len < 16 {
        return (p..len).find(|&i| stop(src[i])).unwrap_or(len);
    }
    let mut at = p;
    // Most keys and many values end within their first 16 bytes.
    if at + 16 <= len {
        let first = mask(at);
        if first != 0 {
            return at + first.trailing_zeros() as usize;
        }
        at += 16;
        while at + 32 <= len {
            let both = mask(at) | mask(at + 16) << 16;
            if both != 0 {
                return at + both.trailing_zeros() as usize;
            }
            at += 32;
        }
        if at + 16 <= len {
            let next = mask(at);
            if next != 0 {
                return at + next.trailing_zeros() as usize;
            }
            at += 16;
        }
    }
    if at >= len {
        return len;
    }
    // The last bytes: the block that ends at the end, without the bytes before `at`.
    let last = len - 16;
    let tail = mask(last) >> (at - last);
    if tail != 0 {
        at + tail.trailing_zeros() as usize
    } else {
        len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The block scan finds what a byte loop finds: every length around the block widths,
    /// every position of a stop byte, every start, and bytes next to the limits.
    #[test]
    fn string_stop_finds_what_a_byte_loop_finds() {
        let stop = |b: u8| matches!(b, b'"' | b'\\' | 0..0x20);
        for len in 0..80 {
            for at in (0..=len).step_by(if len > 40 { 3 } else { 1 }) {
                for byte in [
                    b'"',
                    b'\\',
                    0x00,
                    0x1F,
                    0x20,
                    0x21,
                    0x22 ^ 0x80,
                    0x5D,
                    0x7F,
                    0xFF,
                ] {
                    let mut src: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
                    if at < len {
                        src[at] = byte;
                    }
                    for from in 0..=len.min(40) {
                        let expect = (from..len).find(|&i| stop(src[i])).unwrap_or(len);
                        assert_eq!(string_stop(&src, from), expect, "{src:?} from {from}");
                    }
                }
            }
        }
        assert_eq!(string_stop(b"ab", 5), 2);
    }

    /// The same for the scan of a string opened by another quote.
    #[test]
    fn quoted_stop_finds_what_a_byte_loop_finds() {
        for quote in [b'\'', 0xE2] {
            let stop = |b: u8| matches!(b, b'"' | b'\\' | 0..0x20) || b == quote;
            for len in 0..70 {
                for at in 0..=len {
                    for byte in [quote, b'"', b'\\', 0x00, 0x1F, 0x20, 0x5D, 0xFF] {
                        let mut src: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
                        if at < len {
                            src[at] = byte;
                        }
                        for from in [0, 1, 15, 16, 17, 31, 33].into_iter().filter(|&f| f <= len) {
                            let expect = (from..len).find(|&i| stop(src[i])).unwrap_or(len);
                            assert_eq!(quoted_stop(&src, from, quote), expect, "{src:?} {from}");
                        }
                    }
                }
            }
        }
    }

    /// The same for the scan for either of two bytes.
    #[test]
    fn either_stop_finds_what_a_byte_loop_finds() {
        for (a, b) in [(b'"', b'\\'), (b'\'', b'\\')] {
            for len in 0..80 {
                for at in 0..=len {
                    for byte in [a, b, b'"', b'\'', 0x00, 0x5D, 0x7F, 0xFF] {
                        let mut src: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
                        if at < len {
                            src[at] = byte;
                        }
                        for from in [0, 1, 15, 16, 17, 31, 33].into_iter().filter(|&f| f <= len) {
                            let expect = (from..len)
                                .find(|&i| src[i] == a || src[i] == b)
                                .unwrap_or(len);
                            assert_eq!(either_stop(&src, from, a, b), expect, "{src:?} {from}");
                        }
                    }
                }
            }
        }
    }
}
