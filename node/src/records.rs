//! A batch's records as JavaScript gets them: their texts in long strings (segments), each
//! made an external string where Node can (V8 keeps the buffer where it is), with per record
//! a few numbers saying where its parts are (`index.js` makes the records from them).

use std::ffi::c_void;
use std::time::Instant;

use napi::bindgen_prelude::*;

use crate::check;
use crate::text::{push_latin1, push_utf16, wide};

use crate::pool::{external_strings, free_segment, give_back, pool, take_released};

/// What a record's numbers say in [`Records::meta`]: its kind, …
const OK: f64 = 0.0;
const FAILED: f64 = 1.0;
/// …made by `index.js` (not text, or a string with a lone surrogate).
const ELSEWHERE: f64 = 2.0;
/// …ok, its value's text the input string itself (valid compact JSON): not written, `index.js`
/// takes the input (no new string for it).
const SAME: f64 = 3.0;
/// Numbers per record in `meta`: kind, segment, four bounds in the segment, error offset.
pub(crate) const META: usize = 7;

/// Every record of a batch: their texts in long strings (segments: two for each part of the
/// batch a thread takes at once, about 128 KiB of input), and per record [`META`] numbers.
/// An ok record's segment holds its value, its repairs (a JSON array) and what was dropped (a
/// JSON array), one after another; a failed one's its code, message and original. Bounds
/// count UTF-16 units, as JavaScript's `slice` does.
pub struct Records {
    pub(crate) segments: Vec<Segment>,
    pub(crate) meta: Vec<f64>,
}

/// A segment's text: records whose every character is below U+0100 go to a one-byte
/// segment (half the memory, and what V8 makes of such text anyway), the others to UTF-16.
pub(crate) enum Segment {
    Latin1(Vec<u8>),
    Utf16(Vec<u16>),
}

/// The records of one part of a batch, written as UTF-8 into buffers a thread keeps from part
/// to part, then each moved once into a segment allocated at its final size: growing the
/// segments record by record cost reallocations (a copy of all written so far each time) and
/// fresh pages for every copy.
pub(crate) struct Writer {
    /// Every record of the part, one after another: a record's pieces (value, repairs,
    /// dropped; or code, message, original) end at its `ends`.
    utf8: Vec<u8>,
    records: Vec<Written>,
}

/// A record in [`Writer::utf8`].
struct Written {
    kind: f64,
    /// Some character is U+0100 or above: the record goes to the UTF-16 segment.
    wide: bool,
    start: usize,
    ends: [usize; 3],
    offset: f64,
}

impl Writer {
    pub(crate) fn new() -> Writer {
        Writer {
            utf8: Vec::new(),
            records: Vec::new(),
        }
    }

    /// Notes the record written since `start` (its pieces ending at `ends`).
    fn put(&mut self, kind: f64, start: usize, ends: [usize; 3], offset: f64) {
        let wide = wide(&self.utf8[start..]);
        self.records.push(Written {
            kind,
            wide,
            start,
            ends,
            offset,
        });
    }

    /// `text`: the input, when it is a JavaScript string.
    fn ok(&mut self, mended: &toolmend_core::Mended<'_>, text: Option<&str>) {
        let start = self.utf8.len();
        mended.write_value(&mut self.utf8);
        let same = text.is_some_and(|t| t.as_bytes() == &self.utf8[start..]);
        if same {
            self.utf8.truncate(start);
        }
        let value = self.utf8.len();
        toolmend_core::write_repairs(&mut self.utf8, mended.repairs());
        let repairs = self.utf8.len();
        self.utf8.push(b'[');
        for (i, dropped) in mended.dropped().enumerate() {
            if i > 0 {
                self.utf8.push(b',');
            }
            self.utf8.extend_from_slice(dropped.as_bytes());
        }
        self.utf8.push(b']');
        let end = self.utf8.len();
        let kind = if same { SAME } else { OK };
        self.put(kind, start, [value, repairs, end], -1.0);
    }

    fn failed(&mut self, error: &toolmend_core::Error, input: &toolmend_core::Input<'_>) {
        let start = self.utf8.len();
        let mut ends = [0; 3];
        for (k, text) in [error.code.as_str(), &error.message, &input.original()]
            .into_iter()
            .enumerate()
        {
            self.utf8.extend_from_slice(text.as_bytes());
            ends[k] = self.utf8.len();
        }
        self.put(FAILED, start, ends, error.offset.map_or(-1.0, |o| o as f64));
    }

    pub(crate) fn elsewhere(&mut self) {
        let at = self.utf8.len();
        self.records.push(Written {
            kind: ELSEWHERE,
            wide: false,
            start: at,
            ends: [at; 3],
            offset: -1.0,
        });
    }

    /// The record of `input`; `text`: the input, when it is a JavaScript string.
    pub(crate) fn record(
        &mut self,
        input: &toolmend_core::Input<'_>,
        text: Option<&str>,
        mender: &mut toolmend_core::Mender,
    ) {
        // A panic (a bug) on this input gives it an `internal_error` record, as in the CLI.
        input.mend_kept(mender, |result| match result {
            Ok(mended) => self.ok(&mended, text),
            Err(error) => self.failed(&error, input),
        });
    }

    /// The part's two segments (numbered `first` and `first + 1` in the batch) and its
    /// records' numbers; the writer is empty again.
    pub(crate) fn finish(&mut self, first: f64) -> ([Segment; 2], Vec<f64>) {
        // A character takes at most as many Latin-1 bytes or UTF-16 units as UTF-8 bytes:
        // the segments never grow.
        let (mut narrow_bytes, mut wide_bytes) = (0, 0);
        for r in &self.records {
            let n = r.ends[2] - r.start;
            if r.wide {
                wide_bytes += n;
            } else {
                narrow_bytes += n;
            }
        }
        let (mut narrow, mut wide) = {
            let mut pool = pool();
            pool.used = Some(Instant::now());
            (pool.take_latin1(narrow_bytes), pool.take_utf16(wide_bytes))
        };
        let mut meta = Vec::with_capacity(self.records.len() * META);
        for r in &self.records {
            let mut bounds = [0.0; 4];
            let mut start = r.start;
            if r.wide {
                bounds[0] = wide.len() as f64;
                for (k, &end) in r.ends.iter().enumerate() {
                    push_utf16(&mut wide, &self.utf8[start..end]);
                    bounds[k + 1] = wide.len() as f64;
                    start = end;
                }
            } else {
                bounds[0] = narrow.len() as f64;
                for (k, &end) in r.ends.iter().enumerate() {
                    push_latin1(&mut narrow, &self.utf8[start..end]);
                    bounds[k + 1] = narrow.len() as f64;
                    start = end;
                }
            }
            let segment = first + if r.wide { 1.0 } else { 0.0 };
            meta.extend_from_slice(&[r.kind, segment]);
            meta.extend_from_slice(&bounds);
            meta.push(r.offset);
        }
        self.utf8.clear();
        self.records.clear();
        ([Segment::Latin1(narrow), Segment::Utf16(wide)], meta)
    }
}

impl TypeName for Records {
    fn type_name() -> &'static str {
        "Records"
    }

    fn value_type() -> ValueType {
        ValueType::Object
    }
}

/// A segment as a JavaScript string: external where Node can (its buffer's bytes are added
/// to `external`), else copied.
fn segment(
    env: napi::sys::napi_env,
    segment: Segment,
    external: &mut usize,
) -> Result<napi::sys::napi_value> {
    let mut string = std::ptr::null_mut();
    let mut copied = false;
    // SAFETY: the pointers and lengths are those of live vectors; a leaked vector is taken
    // back by `free_segment`, which Node calls once (at once when it copies instead).
    let status = unsafe {
        match (segment, external_strings()) {
            (Segment::Latin1(b), Some((latin1, _))) if !b.is_empty() => {
                let (len, capacity) = (b.len(), b.capacity());
                *external += capacity;
                latin1(
                    env,
                    std::mem::ManuallyDrop::new(b).as_mut_ptr(),
                    len,
                    Some(free_segment::<u8>),
                    capacity as *mut c_void,
                    &mut string,
                    &mut copied,
                )
            }
            (Segment::Utf16(u), Some((_, utf16))) if !u.is_empty() => {
                let (len, capacity) = (u.len(), u.capacity());
                *external += capacity * 2;
                utf16(
                    env,
                    std::mem::ManuallyDrop::new(u).as_mut_ptr(),
                    len,
                    Some(free_segment::<u16>),
                    capacity as *mut c_void,
                    &mut string,
                    &mut copied,
                )
            }
            // Copied into V8's heap: the buffer is free for the next part at once.
            (Segment::Latin1(b), _) => {
                let status = napi::sys::napi_create_string_latin1(
                    env,
                    b.as_ptr().cast(),
                    b.len() as isize,
                    &mut string,
                );
                give_back(b);
                status
            }
            (Segment::Utf16(u), _) => {
                let status = napi::sys::napi_create_string_utf16(
                    env,
                    u.as_ptr(),
                    u.len() as isize,
                    &mut string,
                );
                give_back(u);
                status
            }
        }
    };
    if status != napi::sys::Status::napi_ok {
        return Err(napi::Error::new(
            Status::GenericFailure,
            "the records are too long for one JavaScript string",
        ));
    }
    Ok(string)
}

impl ToNapiValue for Records {
    /// `[segments, meta]`: an array of strings and a Float64Array.
    unsafe fn to_napi_value(env: napi::sys::napi_env, val: Self) -> Result<napi::sys::napi_value> {
        let mut segments = std::ptr::null_mut();
        // SAFETY: `env` is the live env of this call; out-pointers only.
        check(unsafe {
            napi::sys::napi_create_array_with_length(env, val.segments.len(), &mut segments)
        })?;
        let mut external = 0;
        for (i, s) in val.segments.into_iter().enumerate() {
            let string = segment(env, s, &mut external)?;
            // SAFETY: `segments` was made above with this length.
            check(unsafe { napi::sys::napi_set_element(env, segments, i as u32, string) })?;
        }
        let released = take_released(env);
        let mut total = 0;
        // SAFETY: an out-pointer; V8 is told of the memory its new strings hold and of what
        // it let go of since.
        check(unsafe {
            napi::sys::napi_adjust_external_memory(
                env,
                external as i64 - released as i64,
                &mut total,
            )
        })?;
        // SAFETY: as above.
        let meta = unsafe { Float64Array::to_napi_value(env, Float64Array::new(val.meta))? };
        let mut pair = std::ptr::null_mut();
        // SAFETY: as above.
        unsafe {
            check(napi::sys::napi_create_array_with_length(env, 2, &mut pair))?;
            check(napi::sys::napi_set_element(env, pair, 0, segments))?;
            check(napi::sys::napi_set_element(env, pair, 1, meta))?;
        }
        Ok(pair)
    }
}
