//! `mendMany`: a batch mended on the CLI's threads while the main thread copies it out of
//! JavaScript, part after part, into a small ring of buffers that the mending threads hand
//! back. The parts are those of `toolmend_core::mend_batches` (about 128 KiB, at most 4096 inputs).
//!
//! Only the main thread may read a JavaScript string, so it copies each part's strings (their
//! UTF-16, which V8 copies without converting) into a free buffer of the ring; a mending thread
//! turns each string into UTF-8, mends it, writes the part's records and gives the buffer
//! back. Copying the whole batch at once cost a fresh buffer twice the batch's size, and on
//! this kind of machine touching fresh memory costs more than copying into it; the ring's few
//! buffers are reused, and the copy overlaps the mending.
//!
//! `mendManySync` copies and mends on the calling thread (and on the others). `mendMany` (a
//! [`Many`]) copies on the main thread in short turns: `feed` fills the free buffers and
//! returns; a mending thread that frees a buffer calls `index.js` back (a thread-safe
//! function) to feed again, so the event loop keeps turning during a batch.

use std::collections::VecDeque;
use std::ffi::c_void;
use std::num::NonZeroUsize;
use std::ops::Range;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, RwLock, RwLockReadGuard};
use std::thread;
use std::time::{Duration, Instant};

use napi::JsValue;
use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;
use toolmend_core::Options;

use crate::text::{push_latin1, push_utf8, push_utf16, wide};
use crate::{MendOptions, check, invalid_arg};

/// A part holds about this many input units (a string's UTF-16 units, a buffer's bytes)…
const PART_SIZE: usize = 128 << 10;
/// …and at most this many inputs: those of `toolmend_core::mend_batches`.
const PART_INPUTS: usize = 4096;

/// A batch has no schema: `mendMany` would otherwise silently not apply it.
fn no_schema(options: Option<&MendOptions>) -> Result<()> {
    if options.is_some_and(|o| o.schema.is_some()) {
        return Err(invalid_arg(
            "schema is not taken by mendMany; use mendArgs or a Mender".into(),
        ));
    }
    Ok(())
}

/// What `index.js` says of each input in `lengths`: a string's length, `-1 - n` for a
/// Uint8Array of `n` bytes, NaN for anything else (whose record `index.js` makes).
#[derive(Clone, Copy)]
enum Given {
    Text(usize),
    Bytes(usize),
    Elsewhere,
}

fn given(length: f64) -> Given {
    if length >= 0.0 {
        Given::Text(length as usize)
    } else if length <= -1.0 {
        Given::Bytes((-1.0 - length) as usize)
    } else {
        Given::Elsewhere
    }
}

/// Where each part starts, and the batch's end: the cuts of `toolmend_core::mend_batches`.
fn plan(lengths: &[f64]) -> Vec<usize> {
    let mut bounds = vec![0];
    let (mut size, mut start) = (0, 0);
    for (i, &length) in lengths.iter().enumerate() {
        size += match given(length) {
            Given::Text(n) | Given::Bytes(n) => n,
            Given::Elsewhere => 0,
        };
        if size >= PART_SIZE || i + 1 - start >= PART_INPUTS {
            bounds.push(i + 1);
            (size, start) = (0, i + 1);
        }
    }
    if start < lengths.len() {
        bounds.push(lengths.len());
    }
    bounds
}

/// The threads of a batch of `parts` parts, by the CLI's rule (0: one per core, at most 8).
fn thread_count(threads: usize, parts: usize) -> usize {
    match threads {
        0 => thread::available_parallelism()
            .map_or(1, NonZeroUsize::get)
            .min(8),
        n => n.min(toolmend_core::MAX_THREADS),
    }
    .clamp(1, parts.max(1))
}

/// Where one input of a part is in its [`RingBuffer`].
#[derive(Clone, Copy)]
enum Span {
    /// A string: these UTF-16 units of `RingBuffer::units`.
    Text(usize, usize),
    /// A Uint8Array: these bytes of `RingBuffer::bytes`.
    Bytes(usize, usize),
    /// Not text: `index.js` makes its record.
    Elsewhere,
}

/// A buffer of the ring, holding one part of the batch while it is copied and mended.
#[derive(Default)]
struct RingBuffer {
    part: usize,
    units: Vec<u16>,
    bytes: Vec<u8>,
    spans: Vec<Span>,
}

/// A part's two segments and its records' numbers.
type Done = ([Segment; 2], Vec<f64>);

/// What the main thread and the mending threads share.
struct Shared {
    options: Options,
    max_bytes: usize,
    /// Part `p` is the inputs `bounds[p]..bounds[p + 1]`.
    bounds: Vec<usize>,
    state: Mutex<State>,
    /// Any change of `state`.
    changed: Condvar,
    /// `mendMany`'s call back to `index.js` (none for `mendManySync`).
    wake: Option<Wake>,
}

struct State {
    /// Buffers no part is in.
    free: Vec<RingBuffer>,
    /// Parts copied, not yet taken by a mending thread.
    ready: VecDeque<RingBuffer>,
    /// How many parts have been copied (in order).
    copied: usize,
    /// Each part's records once mended.
    done: Vec<Option<Done>>,
    finished: usize,
    /// The batch failed: the mending threads leave.
    stopped: bool,
    /// `wake` was called and `feed` has not run since.
    woken: bool,
}

impl Shared {
    fn new(options: Options, max_bytes: usize, bounds: Vec<usize>, slots: usize) -> Shared {
        let parts = bounds.len() - 1;
        Shared {
            options,
            max_bytes,
            bounds,
            state: Mutex::new(State {
                free: (0..slots).map(|_| RingBuffer::default()).collect(),
                ready: VecDeque::new(),
                copied: 0,
                done: (0..parts).map(|_| None).collect(),
                finished: 0,
                stopped: false,
                woken: false,
            }),
            changed: Condvar::new(),
            wake: None,
        }
    }

    fn parts(&self) -> usize {
        self.bounds.len() - 1
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait<'a>(&self, state: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        self.changed.wait(state).unwrap_or_else(|e| e.into_inner())
    }

    /// The next copied part, waiting for one; None once none is left (or the batch failed).
    fn next(&self) -> Option<RingBuffer> {
        let mut state = self.lock();
        loop {
            if state.stopped {
                return None;
            }
            if let Some(slot) = state.ready.pop_front() {
                return Some(slot);
            }
            if state.copied == self.parts() {
                return None;
            }
            state = self.wait(state);
        }
    }

    /// A part's records, and its buffer back in the ring.
    fn finished(&self, slot: RingBuffer, done: Done) {
        let mut state = self.lock();
        state.done[slot.part] = Some(done);
        state.finished += 1;
        state.free.push(slot);
        // `index.js` is called back to copy more, or to take the records.
        let call = state.finished == self.parts() || (state.copied < self.parts() && !state.woken);
        if call {
            state.woken = true;
        }
        drop(state);
        self.changed.notify_all();
        if let (true, Some(wake)) = (call, &self.wake) {
            wake.call();
        }
    }

    /// Ends a failed batch: the mending threads leave after their part.
    fn stop(&self) {
        self.lock().stopped = true;
        self.changed.notify_all();
    }

    /// Every part's records, in order (all parts are done).
    fn records(&self) -> Records {
        let mut state = self.lock();
        let mut records = Records {
            segments: Vec::with_capacity(self.parts() * 2),
            meta: Vec::with_capacity(self.bounds[self.parts()] * META),
        };
        for done in &mut state.done {
            let (segments, meta) = done.take().expect("every part is mended");
            records.segments.extend(segments);
            records.meta.extend_from_slice(&meta);
        }
        records
    }
}

/// A mending thread's buffers, kept from part to part.
struct Hands {
    mender: toolmend_core::Mender,
    writer: Writer,
    text: String,
}

impl Hands {
    fn new(options: &Options) -> Hands {
        Hands {
            mender: toolmend_core::Mender::new(options.clone()),
            writer: Writer::new(),
            text: String::new(),
        }
    }

    /// Mends a copied part: each string turned into UTF-8, mended and its record written.
    fn mend(&mut self, slot: &RingBuffer, max_bytes: usize) -> Done {
        for &span in &slot.spans {
            match span {
                Span::Text(a, b) => {
                    self.text.clear();
                    if push_utf8(&slot.units[a..b], &mut self.text) {
                        let input = text_input(&self.text, max_bytes);
                        self.writer.record(&input, &mut self.mender);
                    } else {
                        self.writer.elsewhere();
                    }
                }
                Span::Bytes(a, b) => {
                    let input = toolmend_core::Input::from_bytes(&slot.bytes[a..b], max_bytes);
                    self.writer.record(&input, &mut self.mender);
                }
                Span::Elsewhere => self.writer.elsewhere(),
            }
        }
        self.writer.finish(2.0 * slot.part as f64)
    }
}

/// A mending thread: parts until none is left.
fn mend_parts(shared: &Shared) {
    let mut hands = Hands::new(&shared.options);
    while let Some(slot) = shared.next() {
        let done = hands.mend(&slot, shared.max_bytes);
        shared.finished(slot, done);
    }
}

/// Copies part `part` (the inputs `range` of the JavaScript array) into `slot`; main thread.
fn copy_part(
    env: sys::napi_env,
    array: sys::napi_value,
    lengths: &[f64],
    part: usize,
    range: Range<usize>,
    slot: &mut RingBuffer,
) -> Result<()> {
    slot.part = part;
    slot.units.clear();
    slot.bytes.clear();
    slot.spans.clear();
    for i in range {
        let given = given(lengths[i]);
        if let Given::Elsewhere = given {
            slot.spans.push(Span::Elsewhere);
            continue;
        }
        let mut item = std::ptr::null_mut();
        // SAFETY: `array` is a live array argument of this call, `item` an out-pointer.
        check(unsafe { sys::napi_get_element(env, array, i as u32, &mut item) })?;
        let Given::Text(length) = given else {
            let start = slot.bytes.len();
            slot.bytes.extend_from_slice(typed_array_bytes(env, item)?);
            slot.spans.push(Span::Bytes(start, slot.bytes.len()));
            continue;
        };
        let start = slot.units.len();
        // One more unit: napi ends each copy with a NUL, which the next string overwrites.
        slot.units.reserve(length + 1);
        let mut written = 0;
        // SAFETY: `length + 1` units from `start` are within the capacity; napi writes at
        // most `length` units and the NUL, and says how many it wrote.
        check(unsafe {
            sys::napi_get_value_string_utf16(
                env,
                item,
                slot.units.as_mut_ptr().add(start),
                length + 1,
                &mut written,
            )
        })?;
        // SAFETY: napi wrote these `written` units.
        unsafe { slot.units.set_len(start + written) };
        slot.spans.push(Span::Text(start, start + written));
    }
    Ok(())
}

/// The bytes a Uint8Array (a Buffer) shows, borrowed for this call.
fn typed_array_bytes<'a>(
    env: napi::sys::napi_env,
    value: napi::sys::napi_value,
) -> Result<&'a [u8]> {
    let mut kind = 0;
    let mut length = 0;
    let mut data = std::ptr::null_mut();
    let mut buffer = std::ptr::null_mut();
    let mut offset = 0;
    // SAFETY: out-pointers only.
    check(unsafe {
        napi::sys::napi_get_typedarray_info(
            env,
            value,
            &mut kind,
            &mut length,
            &mut data,
            &mut buffer,
            &mut offset,
        )
    })?;
    if kind != napi::sys::TypedarrayType::uint8_array {
        return Err(invalid_arg(
            "an input of the batch is not a Uint8Array".into(),
        ));
    }
    if data.is_null() || length == 0 {
        return Ok(&[]);
    }
    // SAFETY: napi gives the array's data (already at its byte offset) and its length; the
    // value is held by the caller's array for the whole call, and the slice is copied in it.
    Ok(unsafe { std::slice::from_raw_parts(data.cast::<u8>(), length) })
}

/// What a record's numbers say in [`Records::meta`]: its kind, …
const OK: f64 = 0.0;
const FAILED: f64 = 1.0;
/// …made by `index.js` (not text, or a string with a lone surrogate).
const ELSEWHERE: f64 = 2.0;
/// Numbers per record in `meta`: kind, segment, four bounds in the segment, error offset.
const META: usize = 7;

/// Every record of a batch: their texts in long strings (segments: two for each part of the
/// batch a thread takes at once, about 128 KiB of input), and per record [`META`] numbers.
/// An ok record's segment holds its value, its repairs (a JSON array) and what was dropped (a
/// JSON array), one after another; a failed one's its code, message and original. Bounds
/// count UTF-16 units, as JavaScript's `slice` does.
pub struct Records {
    segments: Vec<Segment>,
    meta: Vec<f64>,
}

/// A segment's text: records whose every character is below U+0100 go to a one-byte
/// segment (half the memory, and what V8 makes of such text anyway), the others to UTF-16.
enum Segment {
    Latin1(Vec<u8>),
    Utf16(Vec<u16>),
}

/// The records of one part of a batch, written as UTF-8 into buffers a thread keeps from part
/// to part, then each moved once into a segment allocated at its final size: growing the
/// segments record by record cost reallocations (a copy of all written so far each time) and
/// fresh pages for every copy.
struct Writer {
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
    fn new() -> Writer {
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

    fn ok(&mut self, mended: &toolmend_core::Mended<'_>) {
        let start = self.utf8.len();
        mended.write_value(&mut self.utf8);
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
        self.put(OK, start, [value, repairs, end], -1.0);
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

    fn elsewhere(&mut self) {
        let at = self.utf8.len();
        self.records.push(Written {
            kind: ELSEWHERE,
            wide: false,
            start: at,
            ends: [at; 3],
            offset: -1.0,
        });
    }

    fn record(&mut self, input: &toolmend_core::Input<'_>, mender: &mut toolmend_core::Mender) {
        match input.text().and_then(|text| mender.mend(text)) {
            Ok(mended) => self.ok(&mended),
            Err(error) => self.failed(&error, input),
        }
    }

    /// The part's two segments (numbered `first` and `first + 1` in the batch) and its
    /// records' numbers; the writer is empty again.
    fn finish(&mut self, first: f64) -> ([Segment; 2], Vec<f64>) {
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

/// Text known to be UTF-8 as the library's input (checked for size only).
pub fn text_input(text: &str, max_bytes: usize) -> toolmend_core::Input<'_> {
    if text.len() > max_bytes {
        toolmend_core::Input::from_bytes(text.as_bytes(), max_bytes)
    } else {
        toolmend_core::Input::Text(text)
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

/// `node_api_create_external_string_latin1` and `_utf16` (Node 18.18 and 20.4 on): V8 keeps
/// a segment where it is instead of copying it.
type External<T> = unsafe extern "C" fn(
    napi::sys::napi_env,
    *mut T,
    usize,
    Option<unsafe extern "C" fn(napi::sys::napi_env, *mut c_void, *mut c_void)>,
    *mut c_void,
    *mut napi::sys::napi_value,
    *mut bool,
) -> napi::sys::napi_status;

/// The two functions, looked up when first needed; None in a Node without them (or with
/// `TOOLMEND_NODE_COPY_SEGMENTS` set).
fn external_strings() -> Option<(External<u8>, External<u16>)> {
    static FOUND: OnceLock<Option<(usize, usize)>> = OnceLock::new();
    let found = FOUND.get_or_init(|| {
        // The tests' way to take the path of a Node without them (copies into V8's heap).
        if std::env::var_os("TOOLMEND_NODE_COPY_SEGMENTS").is_some() {
            return None;
        }
        // SAFETY: dlsym with the process's own symbols and NUL-terminated names.
        let (latin1, utf16) = unsafe {
            (
                libc::dlsym(
                    libc::RTLD_DEFAULT,
                    c"node_api_create_external_string_latin1".as_ptr(),
                ),
                libc::dlsym(
                    libc::RTLD_DEFAULT,
                    c"node_api_create_external_string_utf16".as_ptr(),
                ),
            )
        };
        (!latin1.is_null() && !utf16.is_null()).then_some((latin1 as usize, utf16 as usize))
    });
    // SAFETY: the symbols are these functions, with the signature of js_native_api.h.
    found.map(|(latin1, utf16)| unsafe {
        (
            std::mem::transmute::<usize, External<u8>>(latin1),
            std::mem::transmute::<usize, External<u16>>(utf16),
        )
    })
}

/// Segment buffers V8 has let go of, kept for the segments of later batches: their pages are
/// already touched, and on this kind of machine a fresh page costs more than writing it. At
/// most [`POOL_BYTES`]; a buffer is taken for a segment that fills at least half of it. Once
/// no batch has taken from it for [`pool_idle`], it keeps nothing: `index.js` calls
/// [`trim_pool`] after a batch, and buffers V8 lets go of later are freed.
struct Pool {
    latin1: Vec<Vec<u8>>,
    utf16: Vec<Vec<u16>>,
    bytes: usize,
    /// When a batch last took segment buffers.
    used: Option<Instant>,
}

const POOL_BYTES: usize = 128 << 20;

/// How long the pool keeps buffers after a batch: 10 s, as jemalloc keeps freed pages
/// (`dirty_decay_ms`); `TOOLMEND_NODE_POOL_IDLE_MS` sets it (the tests' way to wait less).
fn pool_idle() -> Duration {
    static IDLE: OnceLock<Duration> = OnceLock::new();
    *IDLE.get_or_init(|| {
        let ms = std::env::var("TOOLMEND_NODE_POOL_IDLE_MS").ok();
        Duration::from_millis(ms.and_then(|ms| ms.parse().ok()).unwrap_or(10_000))
    })
}

static POOL: Mutex<Pool> = Mutex::new(Pool {
    latin1: Vec::new(),
    utf16: Vec::new(),
    bytes: 0,
    used: None,
});

impl Pool {
    fn idle(&self) -> bool {
        self.used.is_none_or(|used| used.elapsed() >= pool_idle())
    }
}

/// Frees the pool's buffers if no batch has used it for [`pool_idle`]; `index.js` calls it a
/// little later than that after each batch.
#[napi]
pub fn trim_pool() {
    let mut pool = pool();
    if pool.idle() {
        let buffers = (
            std::mem::take(&mut pool.latin1),
            std::mem::take(&mut pool.utf16),
        );
        pool.bytes = 0;
        drop(pool);
        drop(buffers);
    }
}

/// How long the pool keeps buffers after a batch, in milliseconds: `index.js` trims it a
/// little later than that.
#[napi]
pub fn pool_idle_ms() -> f64 {
    pool_idle().as_millis() as f64
}

/// The bytes the pool holds (for the tests).
#[napi]
pub fn pool_bytes() -> f64 {
    pool().bytes as f64
}

/// The external memory this environment's isolate has been told of (for the tests).
#[napi]
pub fn told_external_memory(env: Env) -> Result<f64> {
    let mut total = 0;
    // SAFETY: `env` is this call's; a change of 0 only reads the total.
    check(unsafe { napi::sys::napi_adjust_external_memory(env.raw(), 0, &mut total) })?;
    Ok(total as f64)
}

fn pool() -> MutexGuard<'static, Pool> {
    POOL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A buffer of `list` with room for `need` items and at most twice that (or a new one).
fn take<T>(list: &mut Vec<Vec<T>>, bytes: &mut usize, need: usize) -> Vec<T> {
    let fits = |b: &Vec<T>| b.capacity() >= need && b.capacity() / 2 <= need.max(1 << 12);
    match list.iter().rposition(fits) {
        Some(i) => {
            let buffer = list.swap_remove(i);
            *bytes -= buffer.capacity() * size_of::<T>();
            buffer
        }
        None => Vec::with_capacity(need),
    }
}

impl Pool {
    fn take_latin1(&mut self, need: usize) -> Vec<u8> {
        take(&mut self.latin1, &mut self.bytes, need)
    }

    fn take_utf16(&mut self, need: usize) -> Vec<u16> {
        take(&mut self.utf16, &mut self.bytes, need)
    }
}

/// Bytes of segments V8 let go of, by the environment whose strings they were (the main
/// thread's or a worker thread's: each its own isolate), since that environment's last batch
/// reported its own: V8 is told how much memory an isolate's strings hold outside its heap, so
/// that it collects them in time, and one isolate must not be told of another's.
static RELEASED: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

fn note_released(env: napi::sys::napi_env, bytes: usize) {
    if env.is_null() {
        // The environment is gone; nothing is left to tell.
        return;
    }
    let mut released = RELEASED.lock().unwrap_or_else(|e| e.into_inner());
    match released.iter_mut().find(|(e, _)| *e == env as usize) {
        Some((_, total)) => *total += bytes,
        None => released.push((env as usize, bytes)),
    }
}

/// What `env`'s strings let go of since it was last asked (and forgets it).
fn take_released(env: napi::sys::napi_env) -> usize {
    let mut released = RELEASED.lock().unwrap_or_else(|e| e.into_inner());
    match released.iter().position(|(e, _)| *e == env as usize) {
        Some(i) => released.swap_remove(i).1,
        None => 0,
    }
}

/// Takes back a segment V8 no longer needs (`hint`: its buffer's capacity).
unsafe extern "C" fn free_segment<T: Pooled>(
    env: napi::sys::napi_env,
    data: *mut c_void,
    hint: *mut c_void,
) {
    let capacity = hint as usize;
    // SAFETY: `data` and `hint` are the pointer and capacity of a vector leaked in `segment`.
    let buffer = unsafe { Vec::from_raw_parts(data.cast::<T>(), 0, capacity) };
    note_released(env, capacity * size_of::<T>());
    give_back(buffer);
}

/// Puts a segment buffer in the pool, while the pool is under its size; else frees it.
fn give_back<T: Pooled>(mut buffer: Vec<T>) {
    if buffer.capacity() == 0 {
        return;
    }
    buffer.clear();
    let bytes = buffer.capacity() * size_of::<T>();
    let mut pool = pool();
    if !pool.idle() && pool.bytes + bytes <= POOL_BYTES {
        pool.bytes += bytes;
        T::list(&mut pool).push(buffer);
    }
}

/// The two kinds of segment buffers in the [`Pool`].
trait Pooled: Sized {
    fn list(pool: &mut Pool) -> &mut Vec<Vec<Self>>;
}

impl Pooled for u8 {
    fn list(pool: &mut Pool) -> &mut Vec<Vec<u8>> {
        &mut pool.latin1
    }
}

impl Pooled for u16 {
    fn list(pool: &mut Pool) -> &mut Vec<Vec<u16>> {
        &mut pool.utf16
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

/// Every input's record, in order (`[segments, meta]`, see [`Records`]; `index.js` makes the
/// records): copied on the calling thread, mended there and on the CLI's other threads.
#[napi(ts_return_type = "[string[], Float64Array]")]
pub fn mend_many_sync(
    texts: Array,
    lengths: Float64Array,
    options: Option<MendOptions>,
) -> Result<Records> {
    no_schema(options.as_ref())?;
    let (options, max_bytes, threads) = crate::options(options.as_ref())?;
    if lengths.len() != texts.len() as usize {
        return Err(invalid_arg("one length per input".into()));
    }
    let bounds = plan(&lengths);
    let threads = thread_count(threads, bounds.len() - 1);
    let shared = Shared::new(options, max_bytes, bounds, 2 * threads + 2);
    let (env, array) = (texts.value().env, texts.value().value);
    let copied = thread::scope(|scope| {
        for _ in 1..threads {
            scope.spawn(|| mend_parts(&shared));
        }
        let copied = copy_and_mend(&shared, env, array, &lengths);
        if copied.is_err() {
            shared.stop();
        }
        copied
    });
    copied?;
    Ok(shared.records())
}

/// `mendManySync`'s calling thread: copies a part whenever a buffer is free, else mends one,
/// until every part is done.
fn copy_and_mend(
    shared: &Shared,
    env: sys::napi_env,
    array: sys::napi_value,
    lengths: &[f64],
) -> Result<()> {
    let parts = shared.parts();
    let mut hands: Option<Hands> = None;
    let mut state = shared.lock();
    loop {
        if state.copied < parts
            && let Some(mut slot) = state.free.pop()
        {
            let part = state.copied;
            drop(state);
            let range = shared.bounds[part]..shared.bounds[part + 1];
            copy_part(env, array, lengths, part, range, &mut slot)?;
            state = shared.lock();
            state.ready.push_back(slot);
            state.copied += 1;
            shared.changed.notify_all();
            continue;
        }
        if let Some(slot) = state.ready.pop_front() {
            drop(state);
            let hands = hands.get_or_insert_with(|| Hands::new(&shared.options));
            let done = hands.mend(&slot, shared.max_bytes);
            shared.finished(slot, done);
            state = shared.lock();
            continue;
        }
        if state.finished == parts {
            return Ok(());
        }
        state = shared.wait(state);
    }
}

/// `mendMany`'s batch: `index.js` makes one with the inputs' lengths and a function to call
/// back, then calls `feed` with the inputs until it returns true, then `finish`.
#[napi]
pub struct Many {
    shared: Arc<Shared>,
    lengths: Vec<f64>,
    /// The call back is released (by `finish` or `abort`).
    released: bool,
    /// The batch's part in its environment's cleanup hooks (until `finish` or `abort`).
    hook: *const Shared,
}

/// `index.js`'s function, called from the mending threads with no arguments.
struct Wake {
    function: sys::napi_threadsafe_function,
    /// False once the environment is torn down (a worker thread that ran the batch ended):
    /// Node frees the function then, whoever still holds it, and before Node 24.14 a call
    /// after that aborts the process. So it is used only under this lock, while true; the
    /// environment's cleanup hook ([`environment_gone`]) takes the lock to set it false.
    live: RwLock<bool>,
}

// SAFETY: a thread-safe function is made to be called from any thread.
unsafe impl Send for Wake {}
// SAFETY: as above.
unsafe impl Sync for Wake {}

impl Wake {
    fn live(&self) -> RwLockReadGuard<'_, bool> {
        self.live.read().unwrap_or_else(|e| e.into_inner())
    }

    fn call(&self) {
        let live = self.live();
        if *live {
            // SAFETY: the calling thread holds the function (acquired) until it ends, and
            // the environment (with the function) lives while `live` is read true.
            unsafe {
                sys::napi_call_threadsafe_function(
                    self.function,
                    std::ptr::null_mut(),
                    sys::ThreadsafeFunctionCallMode::nonblocking,
                )
            };
        }
    }

    fn release(&self) {
        let live = self.live();
        if *live {
            // SAFETY: each holder releases once: a thread as it ends, the batch in
            // finish/abort; the function lives as in `call`.
            unsafe {
                sys::napi_release_threadsafe_function(
                    self.function,
                    sys::ThreadsafeFunctionReleaseMode::release,
                )
            };
        }
    }
}

/// The cleanup hook of a batch's environment, run as it is torn down with the batch still
/// going (a worker thread terminated mid-batch): the mending threads leave after their part
/// and no longer touch the call back. `arg` is the batch's `Arc<Shared>` given to the hook.
unsafe extern "C" fn environment_gone(arg: *mut c_void) {
    // SAFETY: `arg` came from `Arc::into_raw` in `Many::new`, given back here or in
    // `Many::release`, never both (the hook is removed there).
    let shared = unsafe { Arc::from_raw(arg.cast::<Shared>()) };
    if let Some(wake) = &shared.wake {
        *wake.live.write().unwrap_or_else(|e| e.into_inner()) = false;
    }
    shared.stop();
}

#[napi]
impl Many {
    /// Starts the mending threads; `wake` is called (from them, on the main thread) when a
    /// buffer is free to `feed` again or every part is done.
    #[napi(
        constructor,
        ts_args_type = "lengths: Float64Array, options: MendOptions | undefined | null, wake: () => void"
    )]
    pub fn new(
        env: Env,
        lengths: Float64Array,
        options: Option<MendOptions>,
        wake: Function<'_>,
    ) -> Result<Many> {
        no_schema(options.as_ref())?;
        let (options, max_bytes, threads) = crate::options(options.as_ref())?;
        let bounds = plan(&lengths);
        let threads = thread_count(threads, bounds.len() - 1);
        let mut shared = Shared::new(options, max_bytes, bounds, 2 * threads + 2);
        let env = env.raw();
        let mut name = std::ptr::null_mut();
        let mut function = std::ptr::null_mut();
        // SAFETY: `env` and `wake` are this call's; out-pointers only. No call_js: the
        // function is called with no arguments.
        check(unsafe {
            sys::napi_create_string_utf8(env, c"toolmend mendMany".as_ptr(), -1, &mut name)
        })?;
        check(unsafe {
            sys::napi_create_threadsafe_function(
                env,
                wake.value().value,
                std::ptr::null_mut(),
                name,
                0,
                1,
                std::ptr::null_mut(),
                None,
                std::ptr::null_mut(),
                None,
                &mut function,
            )
        })?;
        shared.wake = Some(Wake {
            function,
            live: RwLock::new(true),
        });
        let shared = Arc::new(shared);
        // Registered after the function (hooks run last registered first): the threads are
        // told before Node frees it.
        let hook = Arc::into_raw(Arc::clone(&shared));
        // SAFETY: `env` is this call's; `hook` is given back by the hook or by `release`.
        check(unsafe {
            sys::napi_add_env_cleanup_hook(env, Some(environment_gone), hook.cast_mut().cast())
        })?;
        for _ in 0..threads {
            // SAFETY: the function is live (the batch holds it); the thread releases it.
            unsafe { sys::napi_acquire_threadsafe_function(function) };
            let shared = Arc::clone(&shared);
            thread::spawn(move || {
                mend_parts(&shared);
                if let Some(wake) = &shared.wake {
                    wake.release();
                }
            });
        }
        Ok(Many {
            shared,
            lengths: lengths.to_vec(),
            released: false,
            hook,
        })
    }

    /// Copies parts of `texts` (the batch's inputs) into the free buffers; true once every
    /// part is mended (never after `abort`).
    #[napi]
    pub fn feed(&mut self, texts: Array) -> Result<bool> {
        let shared = &*self.shared;
        if texts.len() as usize != self.lengths.len() {
            return Err(invalid_arg("one length per input".into()));
        }
        let (env, array) = (texts.value().env, texts.value().value);
        let parts = shared.parts();
        let mut state = shared.lock();
        if state.stopped {
            return Ok(false);
        }
        state.woken = false;
        while state.copied < parts
            && let Some(mut slot) = state.free.pop()
        {
            let part = state.copied;
            drop(state);
            let range = shared.bounds[part]..shared.bounds[part + 1];
            let copied = copy_part(env, array, &self.lengths, part, range, &mut slot);
            state = shared.lock();
            if let Err(e) = copied {
                state.free.push(slot);
                return Err(e);
            }
            state.ready.push_back(slot);
            state.copied += 1;
            shared.changed.notify_all();
        }
        Ok(state.finished == parts)
    }

    /// Every input's record, in order (`[segments, meta]`), once `feed` returned true.
    #[napi(ts_return_type = "[string[], Float64Array]")]
    pub fn finish(&mut self, env: Env) -> Result<Records> {
        if self.shared.lock().finished != self.shared.parts() {
            return Err(invalid_arg("the batch is not mended yet".into()));
        }
        self.release(env);
        Ok(self.shared.records())
    }

    /// Ends a batch that failed (an input could not be read): its threads leave.
    #[napi]
    pub fn abort(&mut self, env: Env) {
        self.shared.stop();
        self.release(env);
    }

    /// Lets go of the call back; the mending threads let go as they end. Never "abort": a
    /// thread still holding the function must be able to call it (its calls are then no-ops).
    fn release(&mut self, env: Env) {
        if !self.released {
            self.released = true;
            if let Some(wake) = &self.shared.wake {
                wake.release();
            }
            // SAFETY: the hook added in `new` with this environment and argument, not run
            // (the environment is live: this is one of its calls); its Arc is given back.
            unsafe {
                sys::napi_remove_env_cleanup_hook(
                    env.raw(),
                    Some(environment_gone),
                    self.hook.cast_mut().cast(),
                );
                drop(Arc::from_raw(self.hook));
            }
        }
    }
}
