//! Between the encodings of JavaScript strings (UTF-16, or Latin-1 when every character is
//! below U+0100) and the library's UTF-8.

/// How many of the first units are ASCII (below 0x80), sixteen at a time where it can.
pub fn ascii_run<T: Copy + Into<u32>>(units: &[T]) -> usize {
    let mut n = 0;
    for chunk in units.chunks_exact(16) {
        if chunk.iter().fold(0, |acc, &u| acc | u.into()) >= 0x80 {
            break;
        }
        n += 16;
    }
    n + units[n..].iter().take_while(|&&u| u.into() < 0x80).count()
}

/// UTF-8 holds a character from U+0100 on (one Latin-1 cannot hold) where it holds a byte from
/// this one (a lead byte: 0xC2 and 0xC3 lead U+0080 to U+00FF, continuation bytes are below).
pub const WIDE_FROM: u8 = 0xc4;

/// Whether UTF-8 holds a character from U+0100 on ([`top_byte`], which looks at 32 bytes at
/// a time: a byte-by-byte `any` was a tenth of mendMany's writing of a part).
pub fn wide(utf8: &[u8]) -> bool {
    top_byte(utf8) >= WIDE_FROM
}

/// Appends valid UTF-8 whose characters are all below U+0100 as Latin-1.
pub fn push_latin1(out: &mut Vec<u8>, utf8: &[u8]) {
    out.reserve(utf8.len());
    let mut i = 0;
    while i < utf8.len() {
        let run = ascii_run(&utf8[i..]);
        out.extend_from_slice(&utf8[i..i + run]);
        i += run;
        if let Some(&b) = utf8.get(i) {
            // 0xC2 or 0xC3 and a continuation byte: U+0080 to U+00FF.
            out.push(((b & 0x03) << 6) | (utf8[i + 1] & 0x3f));
            i += 2;
        }
    }
}

/// Appends valid UTF-8 as UTF-16.
pub fn push_utf16(out: &mut Vec<u16>, utf8: &[u8]) {
    out.reserve(utf8.len());
    let mut i = 0;
    while i < utf8.len() {
        // ASCII sixteen bytes at a time, checked and widened in one pass, up to the first byte
        // that is not ASCII (room was reserved: UTF-16 never has more units than UTF-8 has
        // bytes, so 16 units from here fit while 16 bytes are left).
        let done = out.len();
        // SAFETY: `out` has room for `utf8.len() - i` more units; `widen_ascii` writes within
        // that room and says how many of the units it wrote are ASCII widened.
        unsafe {
            let n = widen_ascii(&utf8[i..], out.as_mut_ptr().add(done));
            out.set_len(done + n);
            i += n;
        }
        let run = ascii_run(&utf8[i..]);
        out.extend(utf8[i..i + run].iter().map(|&b| u16::from(b)));
        i += run;
        let Some(&b) = utf8.get(i) else { break };
        // The text is valid UTF-8: a lead byte and its continuation bytes.
        let tail = |k: usize| u32::from(utf8[i + k] & 0x3f);
        let (c, width) = match b {
            0xc0..=0xdf => ((u32::from(b & 0x1f) << 6) | tail(1), 2),
            0xe0..=0xef => ((u32::from(b & 0x0f) << 12) | (tail(1) << 6) | tail(2), 3),
            _ => (
                (u32::from(b & 0x07) << 18) | (tail(1) << 12) | (tail(2) << 6) | tail(3),
                4,
            ),
        };
        if c < 0x10000 {
            out.push(c as u16);
        } else {
            let c = c - 0x10000;
            out.extend_from_slice(&[0xd800 | (c >> 10) as u16, 0xdc00 | (c & 0x3ff) as u16]);
        }
        i += width;
    }
}

/// Appends UTF-16 to `out` as UTF-8; false (and `out` as it was) at a lone surrogate.
pub fn push_utf8(units: &[u16], out: &mut String) -> bool {
    let before = out.len();
    // SAFETY: only whole UTF-8 sequences are appended (ASCII, or a char's encoding), and
    // `out` is cut back to where it was (a char boundary) before returning false.
    let bytes = unsafe { out.as_mut_vec() };
    let mut i = 0;
    while i < units.len() {
        // ASCII sixteen units at a time, checked and narrowed in one pass (a scan for the run
        // and then a copy of it read each unit twice: a third of this function's instructions).
        bytes.reserve(units.len() - i);
        let done = bytes.len();
        // SAFETY: `bytes` has room for `units.len() - i` more bytes; `narrow_ascii` writes
        // within that room and says how many of the bytes it wrote are ASCII narrowed.
        unsafe {
            let n = narrow_ascii(&units[i..], bytes.as_mut_ptr().add(done));
            bytes.set_len(done + n);
            i += n;
        }
        let run = ascii_run(&units[i..]);
        bytes.extend(units[i..i + run].iter().map(|&u| u as u8));
        i += run;
        let Some(&u) = units.get(i) else { break };
        let (c, width) = if (0xd800..0xdc00).contains(&u) {
            match units.get(i + 1) {
                Some(&low) if (0xdc00..0xe000).contains(&low) => {
                    let c = 0x10000 + ((u32::from(u) - 0xd800) << 10) + (u32::from(low) - 0xdc00);
                    (char::from_u32(c), 2)
                }
                _ => (None, 1),
            }
        } else {
            (char::from_u32(u32::from(u)), 1)
        };
        let Some(c) = c else {
            bytes.truncate(before);
            return false;
        };
        let mut buf = [0; 4];
        bytes.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        i += width;
    }
    true
}

/// Widens the ASCII bytes that open `utf8` into `out`, sixteen at a time while sixteen are
/// left; how many (up to the first byte that is not ASCII, or a tail of under sixteen that is
/// left to the caller).
///
/// # Safety
/// `out` has room for `utf8.len()` units.
#[cfg(target_arch = "x86_64")]
unsafe fn widen_ascii(utf8: &[u8], out: *mut u16) -> usize {
    use std::arch::x86_64::{
        __m128i, _mm_loadu_si128, _mm_movemask_epi8, _mm_setzero_si128, _mm_storeu_si128,
        _mm_unpackhi_epi8, _mm_unpacklo_epi8,
    };
    let mut i = 0;
    // SAFETY: 16 bytes are read from `i` while `i + 16 <= len`, 16 units written to `out + i`
    // (those past the ASCII lie past the length the caller sets: spare room).
    unsafe {
        let zero = _mm_setzero_si128();
        while i + 16 <= utf8.len() {
            let v = _mm_loadu_si128(utf8.as_ptr().add(i).cast::<__m128i>());
            _mm_storeu_si128(out.add(i).cast::<__m128i>(), _mm_unpacklo_epi8(v, zero));
            _mm_storeu_si128(out.add(i + 8).cast::<__m128i>(), _mm_unpackhi_epi8(v, zero));
            // One bit per byte: set where it is not ASCII.
            let wide = _mm_movemask_epi8(v) as u32;
            if wide != 0 {
                return i + wide.trailing_zeros() as usize;
            }
            i += 16;
        }
    }
    i
}

/// Narrows the ASCII units that open `units` into `out`, sixteen at a time while sixteen are
/// left; how many (up to the first unit that is not ASCII, or a tail of under sixteen that is
/// left to the caller).
///
/// # Safety
/// `out` has room for `units.len()` bytes.
#[cfg(target_arch = "x86_64")]
unsafe fn narrow_ascii(units: &[u16], out: *mut u8) -> usize {
    use std::arch::x86_64::{
        __m128i, _mm_and_si128, _mm_cmpeq_epi16, _mm_loadu_si128, _mm_movemask_epi8,
        _mm_packs_epi16, _mm_packus_epi16, _mm_set1_epi16, _mm_setzero_si128, _mm_storeu_si128,
    };
    let mut i = 0;
    // SAFETY: 16 units are read from `i` while `i + 16 <= len`, 16 bytes written to `out + i`
    // (those past the ASCII lie past the length the caller sets: spare room).
    unsafe {
        // SSE2 only (the module's baseline): a unit is ASCII when its bits above 0x7f are 0.
        let high = _mm_set1_epi16(!0x7f);
        let zero = _mm_setzero_si128();
        while i + 16 <= units.len() {
            let a = _mm_loadu_si128(units.as_ptr().add(i).cast::<__m128i>());
            let b = _mm_loadu_si128(units.as_ptr().add(i + 8).cast::<__m128i>());
            _mm_storeu_si128(out.add(i).cast::<__m128i>(), _mm_packus_epi16(a, b));
            // One bit per unit: set where it is ASCII.
            let ascii_a = _mm_cmpeq_epi16(_mm_and_si128(a, high), zero);
            let ascii_b = _mm_cmpeq_epi16(_mm_and_si128(b, high), zero);
            let ascii = _mm_movemask_epi8(_mm_packs_epi16(ascii_a, ascii_b)) as u32;
            if ascii != 0xffff {
                return i + (!ascii).trailing_zeros() as usize;
            }
            i += 16;
        }
    }
    i
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn narrow_ascii(_units: &[u16], _out: *mut u8) -> usize {
    0
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn widen_ascii(_utf8: &[u8], _out: *mut u16) -> usize {
    0
}

/// The greatest byte of `utf8` (0 when empty), 32 bytes at a time (vector instructions): below
/// 0x80 it is ASCII, below [`WIDE_FROM`] every character is below U+0100.
pub fn top_byte(utf8: &[u8]) -> u8 {
    let chunks = utf8.chunks_exact(32);
    let rest = chunks.remainder().iter().copied().fold(0, u8::max);
    chunks
        .map(|chunk| chunk.iter().copied().fold(0, u8::max))
        .fold(rest, u8::max)
}
