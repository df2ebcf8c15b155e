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
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard};
use std::thread;

use napi::JsValue;
use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;
use toolmend_core::Options;

use crate::text::push_utf8;
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
                        let input = toolmend_core::Input::from_text(&self.text, max_bytes);
                        self.writer
                            .record(&input, Some(&self.text), &mut self.mender);
                    } else {
                        self.writer.elsewhere();
                    }
                }
                Span::Bytes(a, b) => {
                    let input = toolmend_core::Input::from_bytes(&slot.bytes[a..b], max_bytes);
                    self.writer.record(&input, None, &mut self.mender);
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

use crate::records::{META, Records, Segment, Writer};

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
