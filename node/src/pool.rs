//! The buffers of segments V8 has let go of, kept for later batches (a fresh page costs more
//! than writing one on this kind of machine), and Node's external-string functions.

use std::ffi::c_void;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::check;

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
pub(crate) fn external_strings() -> Option<(External<u8>, External<u16>)> {
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
pub(crate) struct Pool {
    latin1: Vec<Vec<u8>>,
    utf16: Vec<Vec<u16>>,
    bytes: usize,
    /// When a batch last took segment buffers.
    pub(crate) used: Option<Instant>,
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

pub(crate) fn pool() -> MutexGuard<'static, Pool> {
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
    pub(crate) fn take_latin1(&mut self, need: usize) -> Vec<u8> {
        take(&mut self.latin1, &mut self.bytes, need)
    }

    pub(crate) fn take_utf16(&mut self, need: usize) -> Vec<u16> {
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
pub(crate) fn take_released(env: napi::sys::napi_env) -> usize {
    let mut released = RELEASED.lock().unwrap_or_else(|e| e.into_inner());
    match released.iter().position(|(e, _)| *e == env as usize) {
        Some(i) => released.swap_remove(i).1,
        None => 0,
    }
}

/// Takes back a segment V8 no longer needs (`hint`: its buffer's capacity).
pub(crate) unsafe extern "C" fn free_segment<T: Pooled>(
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
pub(crate) fn give_back<T: Pooled>(mut buffer: Vec<T>) {
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
pub(crate) trait Pooled: Sized {
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
