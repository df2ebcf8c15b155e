//! `toolmend._native`: the toolmend library in-process for Python.
//!
//! A thin layer: Python arguments become the library's options and inputs, and its results
//! become Python objects. Values cross as compact JSON text read by `json.loads`, so big
//! integers keep every digit. The package `toolmend` (python/toolmend/) re-exports all of it;
//! its `.pyi` stubs carry the signatures.

mod args;
mod calls;
mod cli;

use std::borrow::Cow;

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyList, PySlice, PyString};
use serde_json::Value;
use toolmend_core::{Code, Concat, Input, Options, Target, Truncated};

create_exception!(
    toolmend,
    Error,
    PyValueError,
    "An input toolmend could not mend, or a call it could not use.\n\n\
     `code` is the stable error code of the CLI's records (`invalid_json`, `not_an_object`, \
     `incomplete_call`, ...), `message` (also `str(error)`) says what failed and where, `offset` is the byte \
     offset of the failure or None. From `extract_calls`, `value` holds what the reply held \
     (`calls`, `text`, `reasoning`, `incomplete`, `rejected`) and `violations` the schema \
     violations of an `invalid_parameters` call."
);

/// The library's defaults (the CLI's too). The signatures write them as literals, because
/// `help()` shows a literal default (a constant's name shows as `Ellipsis`); these assertions
/// tie each literal to the library's constant, so that they cannot drift apart.
const MAX_BYTES: usize = toolmend_core::DEFAULT_MAX_BYTES;
const _: () = assert!(MAX_BYTES == 67108864);
const _: () = assert!(toolmend_core::DEFAULT_MAX_DEPTH == 10);
const _: () = assert!(toolmend_core::DEFAULT_MAX_NESTING == 1000);

pub(crate) fn json_loads(py: Python<'_>, text: &str) -> PyResult<Py<PyAny>> {
    static LOADS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    LOADS
        .import(py, "json", "loads")?
        .call1((text,))
        .map(Bound::unbind)
}

pub(crate) fn json_dumps(obj: &Bound<'_, PyAny>) -> PyResult<String> {
    static DUMPS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    DUMPS
        .import(obj.py(), "json", "dumps")?
        .call1((obj,))?
        .extract()
}

/// The Python exception for a library error, with its attributes set.
pub(crate) fn to_py_err(
    py: Python<'_>,
    error: &toolmend_core::Error,
    value: Option<Py<PyAny>>,
) -> PyErr {
    // The text is the message alone, as the Node package's `ToolmendError.message`: the code
    // is `code` in both.
    let err = Error::new_err(error.message.clone());
    let exc = err.value(py);
    let set = || -> PyResult<()> {
        exc.setattr("code", error.code.as_str())?;
        exc.setattr("message", &error.message)?;
        exc.setattr("offset", error.offset)?;
        exc.setattr("value", value)?;
        exc.setattr("violations", PyList::empty(py))?;
        Ok(())
    };
    match set() {
        Ok(()) => err,
        Err(e) => e,
    }
}

/// The input error of a `str` holding lone surrogates: its first 101 characters as UTF-16 code
/// units (a lone surrogate is one unit with `surrogatepass`), for the library to show.
fn lone_surrogate(s: &Bound<'_, PyString>) -> Input<'static> {
    let head = PySlice::new(s.py(), 0, 101, 1);
    let units = s
        .get_item(head)
        .and_then(|head| head.call_method1("encode", ("utf-16-le", "surrogatepass")))
        .ok()
        .and_then(|b| b.cast_into::<PyBytes>().ok());
    match units {
        Some(bytes) => Input::lone_surrogate_in(
            bytes
                .as_bytes()
                .chunks_exact(2)
                .map(|pair| u16::from_le_bytes([pair[0], pair[1]])),
        ),
        None => Input::lone_surrogate(&s.to_string_lossy()),
    }
}

pub(crate) fn usage(message: String) -> toolmend_core::Error {
    toolmend_core::Error::whole(Code::InvalidInput, message)
}

/// Reads one Python input: `str`, or `bytes` that must be UTF-8 (checked as the CLI checks a
/// line). `None` is an empty input (as `"arguments": null` is to the CLI); any other type is
/// `invalid_input`.
pub(crate) fn input<'a>(obj: &'a Bound<'_, PyAny>, max_bytes: usize) -> Input<'a> {
    let failed = |error, original: String| Input::Failed(error, Cow::Owned(original));
    if let Ok(s) = obj.cast::<PyString>() {
        match s.to_str() {
            Ok(text) => Input::from_text(text, max_bytes),
            Err(_) => lone_surrogate(s),
        }
    } else if let Ok(b) = obj.cast::<PyBytes>() {
        Input::from_bytes(b.as_bytes(), max_bytes)
    } else if obj.is_none() {
        failed(
            toolmend_core::Error::whole(Code::EmptyInput, "input is None"),
            String::new(),
        )
    } else {
        let kind = obj
            .get_type()
            .name()
            .map_or_else(|_| "?".to_owned(), |n| n.to_string());
        failed(
            usage(format!("expected str or bytes, found {kind}")),
            String::new(),
        )
    }
}

pub(crate) fn parse_options(
    target: &str,
    concat: &str,
    truncated: &str,
    strict: bool,
    max_depth: u32,
    max_nesting: usize,
) -> PyResult<Options> {
    let word = |e: toolmend_core::UnknownWord| PyValueError::new_err(e.to_string());
    let truncated: Truncated = truncated.parse().map_err(word)?;
    let target: Target = target.parse().map_err(word)?;
    let concat: Concat = concat.parse().map_err(word)?;
    Ok(Options {
        target,
        concat,
        truncated,
        strict,
        max_depth,
        max_nesting,
    })
}

pub(crate) fn value_to_py(py: Python<'_>, value: &Value) -> PyResult<Py<PyAny>> {
    json_loads(py, &value.to_string())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("Error", m.py().get_type::<Error>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // Tests only (the `panic-trigger` feature): input holding it panics, to show what a bug's
    // panic gives.
    #[cfg(feature = "panic-trigger")]
    m.add("_PANIC_TRIGGER", toolmend_core::PANIC_TRIGGER)?;
    m.add_class::<args::Record>()?;
    m.add_class::<args::Mender>()?;
    m.add_class::<calls::CallExtractor>()?;
    m.add_class::<calls::PyStream>()?;
    m.add_function(wrap_pyfunction!(args::mend_args, m)?)?;
    m.add_function(wrap_pyfunction!(args::repair, m)?)?;
    m.add_function(wrap_pyfunction!(args::mend_many, m)?)?;
    m.add_function(wrap_pyfunction!(calls::extract_calls, m)?)?;
    m.add_function(wrap_pyfunction!(calls::call_formats, m)?)?;
    m.add_function(wrap_pyfunction!(cli::run_cli, m)?)?;
    Ok(())
}
