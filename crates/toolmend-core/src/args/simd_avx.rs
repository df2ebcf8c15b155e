//! The whole-value pass ([`super::parse`]'s `whole.rs`) compiled a second time for CPUs with
//! AVX2, picked at run time: the scan for the end of a string's plain bytes then tests 32 bytes
//! per step instead of 16 (SSE2, x86_64's baseline) or a word (`find_any`, elsewhere).
//!
//! The pass is written once, generic over [`Stops`] (how a string's plain bytes are scanned);
//! [`dispatch`] runs it with [`Avx2`] inside a function compiled with AVX2 enabled, so that the
//! pass and the scan are inlined together and the intrinsics compile to single instructions;
//! without AVX2 (or off x86_64) it runs with [`Portable`], the scan of [`super::simd`].
//!
//! That function is compiled with BMI1, BMI2, LZCNT and POPCNT too, which CPUs with AVX2 have
//! (one without them takes the portable pass): the pass's bit operations are then one
//! instruction each (`tzcnt`, not `bsf` and a test for zero; shifts by a register without
//! moving the count to `cl`).

// The unsafe code of this module: the AVX2 loads (within the slice's bounds) and the call of
// the AVX2-compiled function, made only when the CPU has AVX2 (and the bit instructions).
#![allow(unsafe_code)]

/// How the end of a run of a JSON string's plain bytes is found: the first position from `p`
/// holding `"`, `\` or a byte below 0x20, or `src.len()` when there is none.
pub(crate) trait Stops: Copy {
    fn string_stop(self, src: &[u8], p: usize) -> usize;

    /// For the string whose opening quote is at `at`: `Ok` where it ends (past its closing
    /// quote) when that quote comes within the first block tested and before any `\` or
    /// control byte; else `Err` where the caller reads the string on (with
    /// [`Stops::string_stop`]): the first stop byte, or the first byte not tested.
    #[inline(always)]
    fn string_start(self, _src: &[u8], at: usize) -> Result<usize, usize> {
        Err(at + 1)
    }

    /// [`Stops::string_start`] over a wider first block where the scan has one: for string
    /// values, which run longer than keys.
    #[inline(always)]
    fn string_start_wide(self, src: &[u8], at: usize) -> Result<usize, usize> {
        self.string_start(src, at)
    }
}

/// The scan every build has ([`super::simd::string_stop`]).
#[derive(Clone, Copy)]
pub(crate) struct Portable;

impl Stops for Portable {
    #[inline(always)]
    fn string_stop(self, src: &[u8], p: usize) -> usize {
        super::simd::string_stop(src, p)
    }
}

/// A scan with AVX2, 32 bytes a step. A value of this type exists only where the CPU has
/// AVX2, BMI1, BMI2, LZCNT and POPCNT (its one constructor, [`Avx2::detect`], checks), which
/// is what makes its use sound.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub(crate) struct Avx2(());

#[cfg(target_arch = "x86_64")]
impl Avx2 {
    #[inline]
    fn detect() -> Option<Self> {
        use std::arch::is_x86_feature_detected as has;
        (has!("avx2") && has!("bmi1") && has!("bmi2") && has!("lzcnt") && has!("popcnt"))
            .then_some(Avx2(()))
    }

    /// The quotes, and the stop bytes (quotes among them), of the 32 `bytes`, a bit each.
    #[inline(always)]
    fn block(self, bytes: &[u8; 32]) -> (u32, u32) {
        use std::arch::x86_64::{
            __m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_min_epu8, _mm256_movemask_epi8,
            _mm256_or_si256, _mm256_set1_epi8, _mm256_xor_si256,
        };
        // SAFETY: `self` exists only when the CPU has AVX2 ([`Avx2::detect`]); the 32 bytes
        // read are `bytes`, and the load is unaligned.
        unsafe {
            let v = _mm256_loadu_si256(bytes.as_ptr().cast::<__m256i>());
            // As in SSE2's scan: with bit 1 flipped, `"` is 0x20 and the control bytes stay
            // below it, so min(x, 0x20) == x marks both with one compare.
            let flipped = _mm256_xor_si256(v, _mm256_set1_epi8(0x02));
            let low = _mm256_cmpeq_epi8(_mm256_min_epu8(flipped, _mm256_set1_epi8(0x20)), flipped);
            let backslash = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'\\' as i8));
            let quotes = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'"' as i8));
            (
                _mm256_movemask_epi8(quotes) as u32,
                _mm256_movemask_epi8(_mm256_or_si256(low, backslash)) as u32,
            )
        }
    }
}

#[cfg(target_arch = "x86_64")]
impl Stops for Avx2 {
    #[inline(always)]
    fn string_stop(self, src: &[u8], p: usize) -> usize {
        use std::arch::x86_64::{
            __m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_min_epu8, _mm256_movemask_epi8,
            _mm256_or_si256, _mm256_set1_epi8, _mm256_xor_si256,
        };
        let len = src.len();
        let mut at = p;
        while at.checked_add(32).is_some_and(|end| end <= len) {
            // SAFETY: `self` exists only when the CPU has AVX2 ([`Avx2::detect`]); the 32
            // bytes read from `at` are inside `src` (`at + 32 <= len`, checked above), and the
            // load is unaligned.
            let mask = unsafe {
                let v = _mm256_loadu_si256(src.as_ptr().add(at).cast::<__m256i>());
                // As in SSE2's scan: with bit 1 flipped, `"` is 0x20 and the control bytes
                // stay below it, so min(x, 0x20) == x marks both with one compare.
                let flipped = _mm256_xor_si256(v, _mm256_set1_epi8(0x02));
                let low =
                    _mm256_cmpeq_epi8(_mm256_min_epu8(flipped, _mm256_set1_epi8(0x20)), flipped);
                let backslash = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'\\' as i8));
                _mm256_movemask_epi8(_mm256_or_si256(low, backslash)) as u32
            };
            if mask != 0 {
                return at + mask.trailing_zeros() as usize;
            }
            at += 32;
        }
        // The last bytes (fewer than 32): the SSE2 scan, which tests them in one block.
        super::simd::string_stop(src, at)
    }

    #[inline(always)]
    fn string_start(self, src: &[u8], at: usize) -> Result<usize, usize> {
        let from = at + 1;
        if from.checked_add(32).is_none_or(|end| end > src.len()) {
            return Err(from);
        }
        let (quotes, stops) = self.block(src[from..from + 32].try_into().expect("32 bytes"));
        first_stop(from, u64::from(quotes), u64::from(stops), 32)
    }

    /// Two blocks (64 bytes) where they are left: a string value longer than 32 bytes then
    /// ends in the first test too, without a branch on whether it did within 32.
    #[inline(always)]
    fn string_start_wide(self, src: &[u8], at: usize) -> Result<usize, usize> {
        let from = at + 1;
        let Some(bytes) = src.get(from..).and_then(|rest| rest.first_chunk::<64>()) else {
            return self.string_start(src, at);
        };
        let (head, tail) = bytes.split_at(32);
        let (q0, s0) = self.block(head.try_into().expect("32 bytes"));
        let (q1, s1) = self.block(tail.try_into().expect("32 bytes"));
        let quotes = u64::from(q0) | u64::from(q1) << 32;
        let stops = u64::from(s0) | u64::from(s1) << 32;
        first_stop(from, quotes, stops, 64)
    }
}

/// Where a string whose bytes start at `from` stops, from the masks of the `width` bytes there
/// (a bit a byte; quotes are among `stops`): the first stop a quote ends it (`Ok` past the
/// quote); another stop first (a backslash, a control byte) at `Err`; none, `Err` past them.
#[inline(always)]
fn first_stop(from: usize, quotes: u64, stops: u64, width: usize) -> Result<usize, usize> {
    let first = stops & stops.wrapping_neg();
    if first & quotes != 0 {
        Ok(from + first.trailing_zeros() as usize + 1)
    } else if stops != 0 {
        Err(from + stops.trailing_zeros() as usize)
    } else {
        Err(from + width)
    }
}

/// A computation generic over how strings are scanned, run by [`dispatch`].
pub(crate) trait WithStops {
    type Out;
    /// Must be `#[inline(always)]`, so that it is compiled inside [`dispatch`]'s AVX2 function.
    fn run<S: Stops>(self, stops: S) -> Self::Out;
}

/// Runs `job` with the best scan this CPU has.
#[inline(always)]
pub(crate) fn dispatch<W: WithStops>(job: W) -> W::Out {
    #[cfg(target_arch = "x86_64")]
    if let Some(avx2) = Avx2::detect() {
        // SAFETY: `avx2` exists, so the CPU has what `run_avx2` is compiled for.
        return unsafe { run_avx2(job, avx2) };
    }
    job.run(Portable)
}

/// `job` compiled with AVX2 and the bit instructions enabled (called only when the CPU has
/// them: see [`dispatch`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
fn run_avx2<W: WithStops>(job: W, avx2: Avx2) -> W::Out {
    job.run(avx2)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each scan finds what a byte loop finds: every length around the block widths, every
    /// position of a stop byte, every start, and bytes next to the limits.
    fn finds_what_a_byte_loop_finds(stops: impl Stops) {
        let stop = |b: u8| matches!(b, b'"' | b'\\' | 0..0x20);
        for len in 0..140 {
            for at in (0..=len).step_by(if len > 70 { 5 } else { 1 }) {
                for byte in [b'"', b'\\', 0x00, 0x1F, 0x20, 0x21, 0xA2, 0x5D, 0x7F, 0xFF] {
                    let mut src: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
                    if at < len {
                        src[at] = byte;
                    }
                    for from in 0..=len.min(70) {
                        let expect = (from..len).find(|&i| stop(src[i])).unwrap_or(len);
                        assert_eq!(stops.string_stop(&src, from), expect, "{src:?} {from}");
                    }
                }
            }
        }
        assert_eq!(stops.string_stop(b"ab", 5), 2);
        // A string's end found at once is where the scan finds its closing quote; else it is
        // read on from no further than the first stop byte.
        for len in (0..80).chain([96, 100, 104]) {
            for quote in 0..len {
                for byte in [b'"', b'\\', 0x00, 0x1F, 0x20, 0xA2] {
                    let mut src: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
                    src[quote] = b'"';
                    for other in [None, Some(quote / 2), Some(quote + 3)] {
                        let mut src = src.clone();
                        if let Some(at) = other.filter(|&at| at < len && at != quote) {
                            src[at] = byte;
                        }
                        for at in 0..len {
                            let stop = stops.string_stop(&src, at + 1);
                            let starts = [
                                stops.string_start(&src, at),
                                stops.string_start_wide(&src, at),
                            ];
                            for start in starts {
                                match start {
                                    Ok(end) => assert_eq!(
                                        (src[stop], end),
                                        (b'"', stop + 1),
                                        "{src:?} {at}"
                                    ),
                                    // Read on from the first stop byte, or from before it.
                                    Err(from) => assert!(
                                        from == stop
                                            || from == at + 1
                                            || (from == at + 33 || from == at + 65) && from <= stop,
                                        "{src:?} {at} {from}"
                                    ),
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_portable_scan_finds_what_a_byte_loop_finds() {
        finds_what_a_byte_loop_finds(Portable);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_avx2_scan_finds_what_a_byte_loop_finds() {
        struct Check;
        impl WithStops for Check {
            type Out = ();
            #[inline(always)]
            fn run<S: Stops>(self, stops: S) {
                finds_what_a_byte_loop_finds(stops);
            }
        }
        if Avx2::detect().is_none() {
            eprintln!("no AVX2 on this CPU: its scan is not tested");
            return;
        }
        dispatch(Check);
    }
}
