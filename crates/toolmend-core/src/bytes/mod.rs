//! Byte helpers shared by every stage: JSON string escaping ([`escape`]), the scan for the next
//! stop byte ([`find_any`]), `\uXXXX` digits ([`hex4`]) and cutting text for display ([`cut`]).
//! Nothing here imports another module of the crate, so any stage may use it.

pub(crate) mod escape;

/// The first position from `p` holding one of `bytes` or, with `control`, a byte below 0x20;
/// `src.len()` when there is none. String content is mostly plain, so it is tested eight
/// bytes at a time (a byte loop here was a quarter of the profile, and memchr's set-up costs
/// more than it saves on runs this short).
// One of the two unsafe blocks of the core library (the other is `append`'s fixed-size copy):
// the SSE2 scan below (x86_64 only).
// On x86_64 the string scans are args::simd's; this one serves the other targets.
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
#[allow(unsafe_code)]
#[inline(always)]
pub(crate) fn find_any(src: &[u8], mut p: usize, bytes: [u8; 3], control: bool) -> usize {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    // Lowest set high bit = first zero byte (bits above it may be false hits, never below).
    let zero = |x: u64| x.wrapping_sub(LO) & !x & HI;
    let [a, b, c] = bytes.map(|byte| LO * u64::from(byte));
    let below = if control { LO * 0x20 } else { 0 };
    let stop = |byte: u8| bytes.contains(&byte) || control && byte < 0x20;
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    {
        // SAFETY: SSE2 is enabled for this build (cfg above); it is in every x86_64 CPU.
        match unsafe { find_any_sse2(src, p, bytes, control) } {
            (Some(at), _) => return at,
            (None, from) => p = from,
        }
    }
    while let Some(chunk) = src.get(p..p + 8) {
        let w = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        // The last term marks bytes below 0x20 (none when `below` is 0).
        let hits = zero(w ^ a) | zero(w ^ b) | zero(w ^ c) | (w.wrapping_sub(below) & !w & HI);
        if hits != 0 {
            return p + (hits.trailing_zeros() / 8) as usize;
        }
        p += 8;
    }
    while p < src.len() && !stop(src[p]) {
        p += 1;
    }
    p
}

/// [`find_any`] sixteen bytes at a time, while sixteen remain: the stop byte found, or where
/// the scan ended. Strings are most of the bytes of tool arguments, and this is their scan.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[target_feature(enable = "sse2")]
#[allow(unsafe_code, dead_code)]
fn find_any_sse2(
    src: &[u8],
    mut p: usize,
    bytes: [u8; 3],
    control: bool,
) -> (Option<usize>, usize) {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128, _mm_set_epi64x,
        _mm_set1_epi8,
    };
    let [va, vb, vc] = bytes.map(|byte| _mm_set1_epi8(byte as i8));
    let limit = _mm_set1_epi8(0x1F);
    while let Some(chunk) = src.get(p..p + 16) {
        // Two words make the vector without a raw-pointer load; they compile to one load.
        let word = |i: usize| u64::from_le_bytes(chunk[i..i + 8].try_into().expect("eight bytes"));
        let v = _mm_set_epi64x(word(8) as i64, word(0) as i64);
        let mut hits = _mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(v, va), _mm_cmpeq_epi8(v, vb)),
            _mm_cmpeq_epi8(v, vc),
        );
        if control {
            // max(v, 0x1F) == 0x1F exactly for the bytes below 0x20.
            hits = _mm_or_si128(hits, _mm_cmpeq_epi8(_mm_max_epu8(v, limit), limit));
        }
        let mask = _mm_movemask_epi8(hits);
        if mask != 0 {
            return (Some(p + mask.trailing_zeros() as usize), p);
        }
        p += 16;
    }
    (None, p)
}

/// Appends `src[from..to]` to `out`. Most of what the parsers copy is a short run (a key, a
/// number, the text between two escapes), where a call of `memcpy` for a few bytes cost more
/// than the copy: up to 32 bytes, when 32 can be read from `src`, a fixed 32-byte copy (two
/// vector moves) is made and only the run's bytes kept.
#[allow(unsafe_code)]
#[inline(always)]
pub(crate) fn append(out: &mut Vec<u8>, src: &[u8], from: usize, to: usize) {
    let n = to - from;
    if n <= 32 && from.checked_add(32).is_some_and(|end| end <= src.len()) {
        out.reserve(32);
        let len = out.len();
        // SAFETY: `reserve(32)` leaves at least 32 writable bytes past `len`; `src[from..from
        // + 32]` is in bounds (checked above); `out` is a Vec of its own, which `src`, a shared
        // borrow alive beside the mutable one of `out`, cannot overlap. The first `n <= 32`
        // bytes written are `src[from..to]`, and only they are counted in the new length.
        unsafe {
            std::ptr::copy_nonoverlapping(src.as_ptr().add(from), out.as_mut_ptr().add(len), 32);
            out.set_len(len + n);
        }
    } else {
        out.extend_from_slice(&src[from..to]);
    }
}

/// The four hex digits at `at` as a number.
pub(crate) fn hex4(src: &[u8], at: usize) -> Option<u32> {
    let digits = src.get(at..at + 4)?;
    digits
        .iter()
        .try_fold(0, |value, &d| Some(value * 16 + (d as char).to_digit(16)?))
}

/// Where `part` (a slice of `whole`, as `&whole[a..b]` or a trimmed piece of one gives) starts
/// in `whole`; `None` when it is not a slice of it.
pub(crate) fn offset_in(whole: &str, part: &str) -> Option<usize> {
    let start = (part.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    (start + part.len() <= whole.len()).then_some(start)
}

/// `bytes` as text, invalid UTF-8 replaced by U+FFFD as `String::from_utf8_lossy` does, with
/// core's word-at-a-time check first (the lossy one goes a byte at a time).
pub(crate) fn lossy(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// `text` cut to `max` characters, with `…` when cut.
pub fn cut(text: &str, max: usize) -> String {
    // No more bytes than `max`, so no more characters: most prose noted is a short line.
    if text.len() <= max {
        return text.to_owned();
    }
    match text.char_indices().nth(max) {
        Some((end, _)) => {
            let mut cut = text[..end].to_owned();
            cut.push('…');
            cut
        }
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `append` writes exactly the run, whatever its length and however near the end of `src`
    /// it is (where the fixed-size copy cannot be used), onto outputs of every length.
    #[test]
    fn append_copies_exactly_the_run() {
        let src: Vec<u8> = (0..80).map(|i| i as u8 ^ 0x5a).collect();
        for before in [0, 1, 31, 32, 33] {
            for from in 0..src.len() {
                for to in from..src.len().min(from + 40) {
                    let mut out = vec![7u8; before];
                    append(&mut out, &src, from, to);
                    let mut want = vec![7u8; before];
                    want.extend_from_slice(&src[from..to]);
                    assert_eq!(out, want, "{before} {from}..{to}");
                }
            }
        }
    }

    /// The word-at-a-time scan against a byte loop, at every alignment and for every byte.
    #[test]
    fn find_any_matches_a_byte_loop() {
        let slow = |src: &[u8], p: usize, bytes: [u8; 3], control: bool| {
            (p..src.len())
                .find(|&i| bytes.contains(&src[i]) || control && src[i] < 0x20)
                .unwrap_or(src.len())
        };
        for target in 0..=255u8 {
            for len in 0..20 {
                for at in 0..=len {
                    let mut src = vec![b'a'; len];
                    if at < len {
                        src[at] = target;
                    }
                    // Bytes that could trip the borrow of a neighbouring lane.
                    src.extend_from_slice(&[0x00, 0x80, 0xff, 0x21, 0x1f, b'"']);
                    for p in 0..3.min(src.len()) {
                        for (bytes, control) in
                            [([b'"', b'\\', b'\''], true), ([b'"', b'\\', b'\\'], false)]
                        {
                            let end = slow(&src, p, bytes, control);
                            assert_eq!(find_any(&src, p, bytes, control), end, "{src:?} {p}");
                        }
                    }
                }
            }
        }
    }

    /// The vector, word and byte scans together find what a plain byte loop finds: every
    /// length around their widths, every position of a stop byte, bytes next to the limits.
    #[test]
    fn find_any_finds_what_a_byte_loop_finds() {
        let set = [b'"', b'\\', 0xE2];
        for len in 0..40 {
            for at in 0..=len {
                for (byte, control) in [
                    (b'"', false),
                    (b'\\', true),
                    (0xE2, false),
                    (0x00, true),
                    (0x1F, true),
                    (0x1F, false),
                    (0x20, true),
                    (0x80, true),
                    (0xFF, true),
                ] {
                    let mut src = vec![b'a'; len];
                    if at < len {
                        src[at] = byte;
                    }
                    for from in 0..=len.min(17) {
                        let expect = (from..len)
                            .find(|&i| set.contains(&src[i]) || control && src[i] < 0x20)
                            .unwrap_or(len);
                        assert_eq!(find_any(&src, from, set, control), expect, "{src:?} {from}");
                    }
                }
            }
        }
    }

    #[test]
    fn cuts_at_characters_not_bytes() {
        assert_eq!(cut("ééé", 2), "éé…");
        assert_eq!(cut("abc", 3), "abc");
    }
}
