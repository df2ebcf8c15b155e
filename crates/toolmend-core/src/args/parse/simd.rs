//! The scan for the end of a run of plain string bytes, a block at a time: most bytes of tool
//! arguments are string contents, and on valid JSON this scan is most of the parse.
//!
//! On x86_64 (SSE2 is part of its baseline) 16 or 32 bytes are tested per step; the end of the
//! input is tested with one block that overlaps what was already tested, not byte by byte.
//! Elsewhere the crate's word-at-a-time [`find_any`] does the same job.

// The unsafe code of this module is the SSE2 scan: unaligned loads within the slice's bounds.
#![allow(unsafe_code)]

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
use crate::bytes::find_any;

/// The first position from `p` holding `"`, `\` or a byte below 0x20 (a control character),
/// or `src.len()` when there is none: where a JSON string's plain bytes stop.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
#[inline(always)]
pub(super) fn string_stop(src: &[u8], p: usize) -> usize {
    find_any(src, p, [b'"', b'\\', b'"'], true)
}

/// The first position from `p` holding `"`, `\` or a byte below 0x20 (a control character),
/// or `src.len()` when there is none: where a JSON string's plain bytes stop.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
pub(super) fn string_stop(src: &[u8], p: usize) -> usize {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8, _mm_xor_si128,
    };
    let len = src.len();
    if p >= len {
        return len;
    }
    // Bit i of the mask: byte i of the 16 at `at` stops the string. `at + 16 <= len`.
    let stops = |at: usize| -> u32 {
        debug_assert!(at + 16 <= len);
        // SAFETY: SSE2 is enabled for this build (cfg above); the 16 bytes read from `at` are
        // inside `src` (every caller checks `at + 16 <= len`), and the load is unaligned.
        unsafe {
            let v = _mm_loadu_si128(src.as_ptr().add(at).cast::<__m128i>());
            // With bit 1 flipped, `"` (0x22) is 0x20 and the bytes below 0x20 stay below it:
            // min(x, 0x20) == x marks both with one compare.
            let flipped = _mm_xor_si128(v, _mm_set1_epi8(0x02));
            let low = _mm_cmpeq_epi8(_mm_min_epu8(flipped, _mm_set1_epi8(0x20)), flipped);
            let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
            _mm_movemask_epi8(_mm_or_si128(low, backslash)) as u32
        }
    };
    if len < 16 {
        return (p..len)
            .find(|&i| matches!(src[i], b'"' | b'\\' | 0..0x20))
            .unwrap_or(len);
    }
    let mut at = p;
    // Most keys and many values end within their first 16 bytes.
    if at + 16 <= len {
        let mask = stops(at);
        if mask != 0 {
            return at + mask.trailing_zeros() as usize;
        }
        at += 16;
        while at + 32 <= len {
            let mask = stops(at) | stops(at + 16) << 16;
            if mask != 0 {
                return at + mask.trailing_zeros() as usize;
            }
            at += 32;
        }
        if at + 16 <= len {
            let mask = stops(at);
            if mask != 0 {
                return at + mask.trailing_zeros() as usize;
            }
            at += 16;
        }
    }
    if at >= len {
        return len;
    }
    // The last bytes: the block that ends at the end, without the bytes before `at`.
    let last = len - 16;
    let mask = stops(last) >> (at - last);
    if mask != 0 {
        at + mask.trailing_zeros() as usize
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
}
