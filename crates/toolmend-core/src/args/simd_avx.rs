//! The whole-value pass ([`super::parse`]'s `whole.rs`) compiled a second time for CPUs with
//! AVX2, picked at run time: the scan for the end of a string's plain bytes then tests 32 bytes
//! per step instead of 16 (SSE2, x86_64's baseline) or a word (`find_any`, elsewhere).
//!
//! The pass is written once, generic over [`Stops`] (how a string's plain bytes are scanned);
//! [`dispatch`] runs it with [`Avx2`] inside a function compiled with AVX2 enabled, so that the
//! pass and the scan are inlined together and the intrinsics compile to single instructions;
//! without AVX2 (or off x86_64) it runs with [`Portable`], the scan of [`super::simd`].

// The unsafe code of this module: the AVX2 loads (within the slice's bounds) and the call of
// the AVX2-compiled function, made only when the CPU has AVX2.
#![allow(unsafe_code)]

/// How the end of a run of a JSON string's plain bytes is found: the first position from `p`
/// holding `"`, `\` or a byte below 0x20, or `src.len()` when there is none.
pub(crate) trait Stops: Copy {
    /// Whether the whole-value pass walks from token to token by [`Stops::classify`]'s masks
    /// (`parse/blocks.rs`), or reads byte by byte (where no block classifier pays).
    const BLOCKS: bool = false;

    fn string_stop(self, src: &[u8], p: usize) -> usize;

    /// The classes of the 64 bytes of `block` that the block walk needs, a bit a byte.
    #[inline(always)]
    fn classify(self, block: &[u8; 64]) -> Classes {
        Classes::of(block)
    }

    /// For the string whose opening quote is at `at`: `Ok` where it ends (past its closing
    /// quote) when that quote comes within the first block tested and before any `\` or
    /// control byte; else `Err` where the caller reads the string on (with
    /// [`Stops::string_stop`]): the first stop byte, or the first byte not tested.
    #[inline(always)]
    fn string_start(self, _src: &[u8], at: usize) -> Result<usize, usize> {
        Err(at + 1)
    }
}

/// What each byte of a 64-byte block is, a bit a byte (bit i: byte i), before the strings
/// are known: the walk of `parse/blocks.rs` works out from these which are in strings.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub(crate) struct Classes {
    pub(crate) quote: u64,
    pub(crate) backslash: u64,
    /// A byte below 0x20 (JSON's white space but the space among them).
    pub(crate) control: u64,
    /// JSON's white space: space, tab, line feed, carriage return.
    pub(crate) space: u64,
    /// `{`, `}`, `[`, `]`, `:` and `,`.
    pub(crate) structural: u64,
}

impl Classes {
    /// A byte at a time: the reference the vector classifiers are tested against.
    #[inline]
    pub(crate) fn of(block: &[u8; 64]) -> Classes {
        let mut c = Classes::default();
        for (i, &b) in block.iter().enumerate() {
            let bit = 1u64 << i;
            match b {
                b'"' => c.quote |= bit,
                b'\\' => c.backslash |= bit,
                b' ' | b'\t' | b'\n' | b'\r' => c.space |= bit,
                b'{' | b'}' | b'[' | b']' | b':' | b',' => c.structural |= bit,
                _ => {}
            }
            if b < 0x20 {
                c.control |= bit;
            }
        }
        c
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
/// AVX2 (its one constructor, [`Avx2::detect`], checks), which is what makes its use sound.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub(crate) struct Avx2(());

#[cfg(target_arch = "x86_64")]
impl Avx2 {
    #[inline]
    fn detect() -> Option<Self> {
        std::arch::is_x86_feature_detected!("avx2").then_some(Avx2(()))
    }
}

#[cfg(target_arch = "x86_64")]
impl Stops for Avx2 {
    const BLOCKS: bool = true;

    #[inline(always)]
    fn classify(self, block: &[u8; 64]) -> Classes {
        let (low, high) = (avx2_classes(self, block, 0), avx2_classes(self, block, 32));
        let join = |i: usize| u64::from(low[i]) | u64::from(high[i]) << 32;
        Classes {
            quote: join(0),
            backslash: join(1),
            control: join(2),
            space: join(3),
            structural: join(4),
        }
    }
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
        use std::arch::x86_64::{
            __m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_min_epu8, _mm256_movemask_epi8,
            _mm256_or_si256, _mm256_set1_epi8, _mm256_xor_si256,
        };
        let from = at + 1;
        if from.checked_add(32).is_none_or(|end| end > src.len()) {
            return Err(from);
        }
        // SAFETY: `self` exists only when the CPU has AVX2 ([`Avx2::detect`]); the 32 bytes
        // read from `from` are inside `src` (`from + 32 <= len`, checked above), and the load
        // is unaligned.
        let (quotes, stops) = unsafe {
            let v = _mm256_loadu_si256(src.as_ptr().add(from).cast::<__m256i>());
            let flipped = _mm256_xor_si256(v, _mm256_set1_epi8(0x02));
            let low = _mm256_cmpeq_epi8(_mm256_min_epu8(flipped, _mm256_set1_epi8(0x20)), flipped);
            let backslash = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'\\' as i8));
            let quotes = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'"' as i8));
            (
                _mm256_movemask_epi8(quotes) as u32,
                _mm256_movemask_epi8(_mm256_or_si256(low, backslash)) as u32,
            )
        };
        // The first byte that stops the string (quotes are among `stops`): a quote ends it.
        let first = stops & stops.wrapping_neg();
        if first & quotes != 0 {
            Ok(from + first.trailing_zeros() as usize + 1)
        } else if stops != 0 {
            Err(from + stops.trailing_zeros() as usize)
        } else {
            Err(from + 32)
        }
    }
}

/// The white space byte with each low nibble (0 where none has it), for each 16-byte lane: a
/// byte is white space when it is the one its nibble looks up (a byte from 0x80 looks up 0,
/// byte 0 the space).
#[cfg(target_arch = "x86_64")]
#[rustfmt::skip]
static SPACES: [u8; 32] = [
    0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0x09, 0x0A, 0, 0, 0x0D, 0, 0,
    0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0x09, 0x0A, 0, 0, 0x0D, 0, 0,
];

/// The same for the structural bytes with bit 5 set, which makes `[` `{` and `]` `}` one byte
/// each: `:` `{` `,` `}` (the control bytes 0x1A and 0x0C fold to two of them: taken out).
#[cfg(target_arch = "x86_64")]
#[rustfmt::skip]
static STRUCTURALS: [u8; 32] = [
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x3A, 0x7B, 0x2C, 0x7D, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x3A, 0x7B, 0x2C, 0x7D, 0, 0,
];

/// [`Classes`] of the 32 bytes of `block` from `at` (0 or 32), as masks of 32 bits in
/// [`Classes`]' order: five compares, two of them table lookups (`vpshufb` on the low nibble).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn avx2_classes(_: Avx2, block: &[u8; 64], at: usize) -> [u32; 5] {
    use std::arch::x86_64::{
        __m256i, _mm256_andnot_si256, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_min_epu8,
        _mm256_movemask_epi8, _mm256_or_si256, _mm256_set1_epi8, _mm256_shuffle_epi8,
    };
    debug_assert!(at <= 32);
    // SAFETY: an `Avx2` exists only when the CPU has AVX2 ([`Avx2::detect`]); the 32 bytes
    // read from `at <= 32` are inside the 64 of `block`, the tables are 32 bytes, and the
    // loads are unaligned.
    unsafe {
        let v = _mm256_loadu_si256(block.as_ptr().add(at).cast::<__m256i>());
        let quote = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'"' as i8));
        let backslash = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'\\' as i8));
        let control = _mm256_cmpeq_epi8(_mm256_min_epu8(v, _mm256_set1_epi8(0x1F)), v);
        // White space and structural bytes by a lookup of their low nibble ([`SPACES`]).
        let spaces = _mm256_loadu_si256(SPACES.as_ptr().cast::<__m256i>());
        let space = _mm256_cmpeq_epi8(_mm256_shuffle_epi8(spaces, v), v);
        let folded = _mm256_or_si256(v, _mm256_set1_epi8(0x20));
        let structurals = _mm256_loadu_si256(STRUCTURALS.as_ptr().cast::<__m256i>());
        let structural = _mm256_andnot_si256(
            control,
            _mm256_cmpeq_epi8(_mm256_shuffle_epi8(structurals, folded), folded),
        );
        [
            _mm256_movemask_epi8(quote) as u32,
            _mm256_movemask_epi8(backslash) as u32,
            _mm256_movemask_epi8(control) as u32,
            _mm256_movemask_epi8(space) as u32,
            _mm256_movemask_epi8(structural) as u32,
        ]
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
        // SAFETY: `avx2` exists, so the CPU has AVX2, which `run_avx2` is compiled for.
        return unsafe { run_avx2(job, avx2) };
    }
    job.run(Portable)
}

/// `job` compiled with AVX2 enabled (called only when the CPU has it: see [`dispatch`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
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
        for len in 0..80 {
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
                            match stops.string_start(&src, at) {
                                Ok(end) => {
                                    assert_eq!((src[stop], end), (b'"', stop + 1), "{src:?} {at}")
                                }
                                // Read on from the first stop byte, or from before it.
                                Err(from) => assert!(
                                    from == stop
                                        || from == at + 1
                                        || from == at + 33 && from <= stop,
                                    "{src:?} {at} {from}"
                                ),
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
