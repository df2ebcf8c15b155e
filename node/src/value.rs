//! One string in, its value's JSON text out: `mendArgs` and `repair` per call, the way that
//! costs least.
//!
//! The string is copied as UTF-16 (no conversion in V8) and turned into UTF-8 here; the value's
//! JSON text goes back as Latin-1 or UTF-16, or, when it is the input's text unchanged (valid
//! compact JSON, the common case), as the input string itself: no new string is made.
//!
//! [`value_function`] makes a plain JavaScript function over its own mender, called through
//! napi's own function call: a class method of napi-rs pays, per call, for finding the
//! instance, checking its class and registering the borrow of `&mut self` (a tenth of the
//! native time of a short input, measured with `perf`), which a function holding its mender
//! in its data pointer does not need.

use std::ffi::c_void;
use std::ptr;

use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;

use crate::text::{WIDE_FROM, push_latin1, push_utf8, push_utf16, top_byte};
use crate::{Made, MendOptions, RawRecord, check, failed};

/// The buffers kept between calls: the input as UTF-16 and as UTF-8, the value as UTF-8 and
/// as the text of a JavaScript string.
#[derive(Default)]
pub struct Buffers {
    units: Vec<u16>,
    text: String,
    value: Vec<u8>,
    narrow: Vec<u8>,
    wide: Vec<u16>,
}

impl Buffers {
    /// The value of `string` mended by `mender`, as a JavaScript string (its JSON text), a
    /// failed record, or null for a string with a lone surrogate (`index.js` makes that error).
    /// A panic (a bug in toolmend) gives the string's `internal_error` record, as the library
    /// keeps one ([`toolmend_core::contained`]); in mending, `mender` is replaced.
    pub fn mend_string(
        &mut self,
        mender: &mut toolmend_core::Mender,
        max_bytes: usize,
        env: sys::napi_env,
        string: sys::napi_value,
    ) -> Result<sys::napi_value> {
        self.text.clear();
        let done =
            toolmend_core::contained(b"", || self.read_and_mend(mender, max_bytes, env, string));
        done.unwrap_or_else(|error| {
            let original = toolmend_core::original_text(self.text.as_bytes());
            // SAFETY: `env` is this call's.
            unsafe { RawRecord::to_napi_value(env, failed(&error, original)) }
        })
    }

    /// [`Buffers::mend_string`] within its keeping.
    fn read_and_mend(
        &mut self,
        mender: &mut toolmend_core::Mender,
        max_bytes: usize,
        env: sys::napi_env,
        string: sys::napi_value,
    ) -> Result<sys::napi_value> {
        // Most inputs fit in the buffer kept from the last call: one copy, no length asked
        // first. Only one that fills it (it may go on) is asked for its length and copied again.
        self.units.clear();
        self.units.reserve(256);
        let room = self.units.capacity();
        let mut written = 0;
        // SAFETY: room for `room` units (napi writes at most `room - 1` and a NUL); napi says
        // how many it wrote.
        check(unsafe {
            sys::napi_get_value_string_utf16(
                env,
                string,
                self.units.as_mut_ptr(),
                room,
                &mut written,
            )
        })?;
        if written + 1 >= room {
            let mut length = 0;
            // SAFETY: a null buffer asks for the length only.
            check(unsafe {
                sys::napi_get_value_string_utf16(env, string, ptr::null_mut(), 0, &mut length)
            })?;
            self.units.reserve(length + 1);
            // SAFETY: room for `length` units and napi's NUL.
            check(unsafe {
                sys::napi_get_value_string_utf16(
                    env,
                    string,
                    self.units.as_mut_ptr(),
                    length + 1,
                    &mut written,
                )
            })?;
        }
        // SAFETY: napi wrote these `written` units.
        unsafe { self.units.set_len(written) };
        if !push_utf8(&self.units, &mut self.text) {
            let mut made = ptr::null_mut();
            // SAFETY: an out-pointer.
            check(unsafe { sys::napi_get_null(env, &mut made) })?;
            return Ok(made);
        }
        let input = toolmend_core::Input::from_text(&self.text, max_bytes);
        let (text, value, narrow, wide) = (
            &self.text,
            &mut self.value,
            &mut self.narrow,
            &mut self.wide,
        );
        input.mend_kept(mender, |result| {
            let mended = match result {
                Ok(mended) => mended,
                Err(error) => {
                    // SAFETY: `env` is this call's.
                    return unsafe {
                        RawRecord::to_napi_value(env, failed(&error, input.original()))
                    };
                }
            };
            // Copied (a few hundred bytes, in cache): `Mended::value` would check it is UTF-8.
            value.clear();
            mended.write_value(value);
            let value = &value[..];
            if value == text.as_bytes() {
                // Valid compact JSON: its value's text is the input's.
                return Ok(string);
            }
            js_string(env, value, narrow, wide)
        })
    }
}

/// `value`, UTF-8, as a JavaScript string: Latin-1 where every character fits (through
/// `narrow`), else UTF-16 (through `wide`).
fn js_string(
    env: sys::napi_env,
    value: &[u8],
    narrow: &mut Vec<u8>,
    wide: &mut Vec<u16>,
) -> Result<sys::napi_value> {
    let mut made = ptr::null_mut();
    let top = top_byte(value);
    // SAFETY: pointers and lengths of live slices; V8 copies them.
    let status = unsafe {
        if top < 0x80 {
            sys::napi_create_string_latin1(
                env,
                value.as_ptr().cast(),
                value.len() as isize,
                &mut made,
            )
        } else if top < WIDE_FROM {
            narrow.clear();
            push_latin1(narrow, value);
            sys::napi_create_string_latin1(
                env,
                narrow.as_ptr().cast(),
                narrow.len() as isize,
                &mut made,
            )
        } else {
            wide.clear();
            push_utf16(wide, value);
            sys::napi_create_string_utf16(env, wide.as_ptr(), wide.len() as isize, &mut made)
        }
    };
    check(status)?;
    Ok(made)
}

/// What a function made by [`value_function`] holds.
struct ValueMender {
    mender: toolmend_core::Mender,
    max_bytes: usize,
    buffers: Buffers,
}

/// A function `(text: string) => string | RawRecord | null` over a mender of its own with these
/// options: what `Mender.mendString` does, without the class method's cost per call.
#[napi(ts_return_type = "(text: string) => string | RawRecord | null")]
pub fn value_function(env: Env, options: Option<MendOptions>) -> Result<Made> {
    let (options, max_bytes, _) = crate::options(options.as_ref())?;
    let data = Box::into_raw(Box::new(ValueMender {
        mender: toolmend_core::Mender::new(options),
        max_bytes,
        buffers: Buffers::default(),
    }));
    let mut function = ptr::null_mut();
    // SAFETY: `data` is a live box that only this function's calls and its finalizer use; the
    // name is a NUL-terminated string.
    let made = unsafe {
        let status = sys::napi_create_function(
            env.raw(),
            c"mendValue".as_ptr(),
            usize::MAX as isize,
            Some(call),
            data.cast(),
            &mut function,
        );
        if status == sys::Status::napi_ok {
            // napi_wrap (napi 1; napi_add_finalizer needs napi 5): the function owns the box.
            sys::napi_wrap(
                env.raw(),
                function,
                data.cast(),
                Some(finalize),
                ptr::null_mut(),
                ptr::null_mut(),
            )
        } else {
            status
        }
    };
    if let Err(error) = check(made) {
        // SAFETY: the function (if made) holds no finalizer yet: the box is only ours.
        drop(unsafe { Box::from_raw(data) });
        return Err(error);
    }
    Ok(Made(function))
}

/// A call of a function made by [`value_function`]: its first argument's value, or a thrown
/// error (an argument that is not a string; `index.js` passes only strings).
unsafe extern "C" fn call(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let mut argc = 1;
    let mut argv = [ptr::null_mut(); 1];
    let mut data = ptr::null_mut();
    // SAFETY: room for one argument; napi fills the data pointer given at creation.
    let status = unsafe {
        sys::napi_get_cb_info(
            env,
            info,
            &mut argc,
            argv.as_mut_ptr(),
            ptr::null_mut(),
            &mut data,
        )
    };
    let result = check(status).and_then(|()| {
        // SAFETY: `data` is the function's live box (freed only by its finalizer, once the
        // function is gone); a call runs on the main thread, and mending calls no JavaScript,
        // so no other call can hold it now.
        let state = unsafe { &mut *data.cast::<ValueMender>() };
        let string = if argc >= 1 { argv[0] } else { ptr::null_mut() };
        state
            .buffers
            .mend_string(&mut state.mender, state.max_bytes, env, string)
    });
    match result {
        Ok(value) => value,
        Err(error) => {
            let message = std::ffi::CString::new(error.reason.replace('\0', " "))
                .unwrap_or_else(|_| c"toolmend: an error".to_owned());
            // SAFETY: a NUL-terminated message; a null code.
            unsafe { sys::napi_throw_error(env, ptr::null(), message.as_ptr()) };
            ptr::null_mut()
        }
    }
}

/// Frees the mender of a function made by [`value_function`], once V8 collects the function.
unsafe extern "C" fn finalize(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` is the box made in `value_function`, finalized once.
    drop(unsafe { Box::from_raw(data.cast::<ValueMender>()) });
}
