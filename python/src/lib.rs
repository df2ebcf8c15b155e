//! `toolmend._native`: the toolmend library in-process for Python.
//!
//! A thin layer: Python arguments become the library's options and inputs, and its results
//! become Python objects. Values cross as compact JSON text read by `json.loads`, so big
//! integers keep every digit. The package `toolmend` (python/toolmend/) re-exports all of it;
//! its `.pyi` stubs carry the signatures.

mod cli;

use std::borrow::Cow;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};
use serde_json::Value;
use toolmend_core::calls::{CallOptions, Extracted, Failure, Shape};
use toolmend_core::schema::Schema;
use toolmend_core::tools::Tools;
use toolmend_core::{
    Code, Concat, Input, Mended, Mender as LibMender, Options, Target, Truncated, original_text,
};

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

fn json_loads(py: Python<'_>, text: &str) -> PyResult<Py<PyAny>> {
    static LOADS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    LOADS
        .import(py, "json", "loads")?
        .call1((text,))
        .map(Bound::unbind)
}

fn json_dumps(obj: &Bound<'_, PyAny>) -> PyResult<String> {
    static DUMPS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    DUMPS
        .import(obj.py(), "json", "dumps")?
        .call1((obj,))?
        .extract()
}

/// The Python exception for a library error, with its attributes set.
fn to_py_err(py: Python<'_>, error: &toolmend_core::Error, value: Option<Py<PyAny>>) -> PyErr {
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

fn usage(message: String) -> toolmend_core::Error {
    toolmend_core::Error::whole(Code::InvalidInput, message)
}

/// Reads one Python input: `str`, or `bytes` that must be UTF-8 (checked as the CLI checks a
/// line). `None` is an empty input (as `"arguments": null` is to the CLI); any other type is
/// `invalid_input`.
fn input<'a>(obj: &'a Bound<'_, PyAny>, max_bytes: usize) -> Input<'a> {
    let failed = |error, original: String| Input::Failed(error, Cow::Owned(original));
    if let Ok(s) = obj.cast::<PyString>() {
        match s.to_str() {
            // A str's UTF-8 is valid already: only its size is checked.
            Ok(text) if text.len() <= max_bytes => Input::Text(text),
            Ok(text) => Input::from_bytes(text.as_bytes(), max_bytes),
            Err(_) => {
                let lossy = s.to_string_lossy();
                let error = toolmend_core::Error::whole(
                    Code::InvalidUtf8,
                    "text holds a lone surrogate, which is not valid Unicode",
                );
                failed(error, original_text(lossy.as_bytes()))
            }
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

fn parse_options(
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

/// The texts and repairs of the records of one batch, written once by the thread that mended
/// it and shared by its records: the serial parts of `mend_many` (making the records, and
/// freeing them later) then allocate and free one buffer per batch, not several per record.
#[derive(Default)]
struct Part {
    // Bytes as the parser wrote them, UTF-8; checked only when a record's text is read, so
    // that making a batch does not validate every value it wrote.
    json: Vec<u8>,
    repairs: Vec<toolmend_core::Repair>,
}

/// One mended input, before its record shares its batch's [`Part`].
enum MendedInput {
    Ok {
        json: Range<usize>,
        // Kept as repairs, written as JSON only when asked for: in `mend_many` the records are
        // made one after another with the GIL held, and inputs with hundreds of repairs would
        // make that serial part outweigh the mending.
        repairs: Range<usize>,
        dropped: Vec<String>,
    },
    Failed {
        error: toolmend_core::Error,
        original: String,
    },
}

impl MendedInput {
    /// Mends `input` with its text and repairs appended to `part`.
    fn new(
        part: &mut Part,
        input: &Input<'_>,
        result: Result<Mended<'_>, toolmend_core::Error>,
    ) -> MendedInput {
        match result {
            Ok(mended) => {
                let (json, repairs) = (part.json.len(), part.repairs.len());
                mended.write_value(&mut part.json);
                part.repairs.extend_from_slice(mended.repairs());
                MendedInput::Ok {
                    json: json..part.json.len(),
                    repairs: repairs..part.repairs.len(),
                    dropped: mended.dropped().map(str::to_owned).collect(),
                }
            }
            Err(error) => MendedInput::Failed {
                error,
                original: input.original(),
            },
        }
    }
}

/// One mended input and the part of its batch holding its text.
struct MendedInPart {
    part: Arc<Part>,
    input: MendedInput,
}

impl MendedInPart {
    /// One input on its own, as `Mender.mend` gives it.
    fn new(input: &Input<'_>, result: Result<Mended<'_>, toolmend_core::Error>) -> MendedInPart {
        let mut part = Part {
            json: Vec::new(),
            repairs: Vec::new(),
        };
        let input = MendedInput::new(&mut part, input, result);
        MendedInPart {
            part: Arc::new(part),
            input,
        }
    }

    fn json(&self) -> Option<&str> {
        match &self.input {
            MendedInput::Ok { json, .. } => Some(
                std::str::from_utf8(&self.part.json[json.clone()])
                    .expect("the parser writes UTF-8"),
            ),
            MendedInput::Failed { .. } => None,
        }
    }

    fn repairs(&self) -> &[toolmend_core::Repair] {
        match &self.input {
            MendedInput::Ok { repairs, .. } => &self.part.repairs[repairs.clone()],
            MendedInput::Failed { .. } => &[],
        }
    }
}

/// Repairs as the records' JSON list.
fn repairs_json(repairs: &[toolmend_core::Repair]) -> String {
    let mut out = Vec::new();
    toolmend_core::write_repairs(&mut out, repairs);
    String::from_utf8(out).expect("records are UTF-8")
}

/// One input's result: a value with what was repaired and dropped, or an error.
///
/// The same fields as a record of `toolmend args --records`: `ok`, `value` (the mended value,
/// read from `json` on first use), `repairs`, `dropped`, and for a failure `code`, `message`,
/// `offset` and `original`.
#[pyclass(frozen, module = "toolmend", name = "Record")]
struct Record {
    outcome: MendedInPart,
    value: PyOnceLock<Py<PyAny>>,
    repairs: PyOnceLock<Py<PyAny>>,
}

impl Record {
    fn new(outcome: MendedInPart) -> Record {
        Record {
            outcome,
            value: PyOnceLock::new(),
            repairs: PyOnceLock::new(),
        }
    }
}

#[pymethods]
impl Record {
    /// True when the input gave a value.
    #[getter]
    fn ok(&self) -> bool {
        matches!(self.outcome.input, MendedInput::Ok { .. })
    }

    /// The mended value as Python objects (parsed from `json` on first use); None on failure.
    #[getter]
    fn value(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match self.outcome.json() {
            Some(json) => self
                .value
                .get_or_try_init(py, || json_loads(py, json))
                .map(|v| v.clone_ref(py)),
            None => Ok(py.None()),
        }
    }

    /// The mended value as compact JSON text, every number as the input wrote it; None on
    /// failure.
    #[getter]
    fn json(&self) -> Option<&str> {
        self.outcome.json()
    }

    /// What was changed to get the value: a list of dicts with `kind` and, where it applies,
    /// `offset`, `layers`, `text` or `key`. Empty when the input was clean JSON or failed.
    #[getter]
    fn repairs(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match &self.outcome.input {
            MendedInput::Ok { .. } => self
                .repairs
                .get_or_try_init(py, || json_loads(py, &repairs_json(self.outcome.repairs())))
                .map(|v| v.clone_ref(py)),
            MendedInput::Failed { .. } => Ok(PyList::empty(py).into_any().unbind()),
        }
    }

    /// Values that were in the input but are not in the value (concatenated values).
    #[getter]
    fn dropped(&self, py: Python<'_>) -> PyResult<Vec<Py<PyAny>>> {
        match &self.outcome.input {
            MendedInput::Ok { dropped, .. } => dropped.iter().map(|d| json_loads(py, d)).collect(),
            MendedInput::Failed { .. } => Ok(Vec::new()),
        }
    }

    /// The stable error code (`invalid_json`, `not_an_object`, ...); None on success.
    #[getter]
    fn code(&self) -> Option<&'static str> {
        match &self.outcome.input {
            MendedInput::Failed { error, .. } => Some(error.code.as_str()),
            MendedInput::Ok { .. } => None,
        }
    }

    /// What failed and where; None on success.
    #[getter]
    fn message(&self) -> Option<&str> {
        match &self.outcome.input {
            MendedInput::Failed { error, .. } => Some(&error.message),
            MendedInput::Ok { .. } => None,
        }
    }

    /// The byte offset of the failure, where one applies.
    #[getter]
    fn offset(&self) -> Option<usize> {
        match &self.outcome.input {
            MendedInput::Failed { error, .. } => error.offset,
            MendedInput::Ok { .. } => None,
        }
    }

    /// The input cut to its first 100 characters (with `…` when cut); None on success.
    #[getter]
    fn original(&self) -> Option<&str> {
        match &self.outcome.input {
            MendedInput::Failed { original, .. } => Some(original),
            MendedInput::Ok { .. } => None,
        }
    }

    /// The value, or the failure raised as `toolmend.Error`.
    fn unwrap(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match &self.outcome.input {
            MendedInput::Ok { .. } => self.value(py),
            MendedInput::Failed { error, .. } => Err(to_py_err(py, error, None)),
        }
    }

    /// The record as a dict, as `toolmend args --records` writes it (without `line`).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        match &self.outcome.input {
            MendedInput::Ok { .. } => {
                d.set_item("ok", true)?;
                d.set_item("value", self.value(py)?)?;
                d.set_item("repairs", self.repairs(py)?)?;
                d.set_item("dropped", self.dropped(py)?)?;
            }
            MendedInput::Failed { error, original } => {
                d.set_item("ok", false)?;
                let e = PyDict::new(py);
                e.set_item("code", error.code.as_str())?;
                e.set_item("message", &error.message)?;
                e.set_item("original", original)?;
                if let Some(offset) = error.offset {
                    e.set_item("offset", offset)?;
                }
                d.set_item("error", e)?;
            }
        }
        Ok(d)
    }

    fn __repr__(&self) -> String {
        match &self.outcome.input {
            MendedInput::Ok { .. } => {
                format!(
                    "Record(ok=True, json={}, repairs={})",
                    short(self.outcome.json().unwrap_or_default()),
                    repairs_json(self.outcome.repairs())
                )
            }
            MendedInput::Failed { error, .. } => format!(
                "Record(ok=False, code={:?}, message={:?})",
                error.code.as_str(),
                error.message
            ),
        }
    }
}

fn short(text: &str) -> String {
    format!("{:?}", toolmend_core::cut(text, 60))
}

/// Runs the args (or repair) pipeline over many inputs, keeping its buffers between them.
///
/// `target="object"` is `toolmend args` (the value must be an object); `"any"` is
/// `toolmend repair`. `concat` is `"first"`, `"all"` or `"error"`; `strict` turns repairs off.
#[pyclass(frozen, module = "toolmend", name = "Mender")]
struct Mender {
    options: Options,
    max_bytes: usize,
    inner: Mutex<LibMender>,
}

#[pymethods]
impl Mender {
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (*, target = "object", concat = "first", truncated = "heal", strict = false, max_depth = 10, max_nesting = 1000, max_bytes = 67108864))]
    fn new(
        target: &str,
        concat: &str,
        truncated: &str,
        strict: bool,
        max_depth: u32,
        max_nesting: usize,
        max_bytes: usize,
    ) -> PyResult<Mender> {
        let options = parse_options(target, concat, truncated, strict, max_depth, max_nesting)?;
        Ok(Mender {
            inner: Mutex::new(LibMender::new(options.clone())),
            options,
            max_bytes,
        })
    }

    /// Mends one input (str, or UTF-8 bytes) into a Record; never raises for bad input.
    fn mend(&self, text: &Bound<'_, PyAny>) -> Record {
        let input = input(text, self.max_bytes);
        let mut mender = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let result = input.text().and_then(|text| mender.mend(text));
        Record::new(MendedInPart::new(&input, result))
    }

    /// Mends every input of an iterable into a list of Records, in order, on `threads`
    /// threads (0: one per core, at most 8, as the CLI) with the GIL released.
    #[pyo3(signature = (inputs, *, threads = 0))]
    fn mend_many(
        &self,
        py: Python<'_>,
        inputs: &Bound<'_, PyAny>,
        threads: usize,
    ) -> PyResult<Vec<Py<Record>>> {
        many(py, inputs, &self.options, self.max_bytes, threads)
    }

    fn __repr__(&self) -> String {
        format!("Mender({:?})", self.options)
    }
}

/// Batches of at least this many bytes of input are watched for Ctrl-C (about 30 ms of
/// mending on one thread; below it a batch ends sooner than a person notices).
const WATCH_FROM: usize = 8 << 20;

/// Reads every input, then mends them with the GIL released. The texts are borrowed, not
/// copied: `held` keeps each str or bytes alive, and both are immutable, so another thread
/// changing the iterable meanwhile cannot change or free them. The records' contents are
/// built on the mending threads; only the Python objects are made with the GIL.
fn many(
    py: Python<'_>,
    inputs: &Bound<'_, PyAny>,
    options: &Options,
    max_bytes: usize,
    threads: usize,
) -> PyResult<Vec<Py<Record>>> {
    // The batch itself must be an iterable of inputs: `mend_many(None)` is the one Error, not
    // a TypeError, and a str (one input, whose characters would each become a record) is refused.
    let one_input = inputs.is_instance_of::<PyString>() || inputs.is_instance_of::<PyBytes>();
    let items = match inputs.try_iter() {
        Ok(items) if !one_input => items,
        _ => {
            let kind = inputs.get_type().name()?;
            return Err(to_py_err(
                py,
                &usage(format!("expected an iterable of inputs, found {kind}")),
                None,
            ));
        }
    };
    let held = items.collect::<PyResult<Vec<_>>>()?;
    let inputs: Vec<Input<'_>> = held.iter().map(|item| input(item, max_bytes)).collect();
    let size = |i: usize| match &inputs[i] {
        Input::Text(text) => text.len(),
        Input::Failed(..) => 0,
    };
    // Set on Ctrl-C (a KeyboardInterrupt): the parts not begun are skipped.
    let stop = AtomicBool::new(false);
    let mend = || {
        toolmend_core::mend_batches(inputs.len(), size, options, threads, |range, mender| {
            if stop.load(Ordering::Relaxed) {
                return (Arc::new(Part::default()), Vec::new());
            }
            // A value is about as long as its input, so the part is rarely grown.
            let bytes = range.clone().map(size).sum();
            let mut part = Part {
                json: Vec::with_capacity(bytes),
                repairs: Vec::new(),
            };
            let mut slots = Vec::with_capacity(range.len());
            for input in &inputs[range] {
                let result = input.text().and_then(|text| mender.mend(text));
                slots.push(MendedInput::new(&mut part, input, result));
            }
            (Arc::new(part), slots)
        })
    };
    let total: usize = (0..inputs.len()).map(size).sum();
    let parts = py.detach(|| {
        if total < WATCH_FROM {
            return Ok(mend());
        }
        // A long batch is mended on a thread of its own while this one looks at Python's
        // signals (with the GIL, briefly) every 50 ms, so that Ctrl-C stops it.
        let done = &AtomicBool::new(false);
        thread::scope(|scope| {
            let caller = thread::current();
            let job = scope.spawn(move || {
                let parts = mend();
                // Said before the thread ends: the caller joins at once, not at its next look.
                done.store(true, Ordering::Release);
                caller.unpark();
                parts
            });
            while !done.load(Ordering::Acquire) {
                thread::park_timeout(Duration::from_millis(50));
                if !done.load(Ordering::Acquire)
                    && let Err(interrupted) = Python::attach(|py| py.check_signals())
                {
                    stop.store(true, Ordering::Relaxed);
                    drop(job.join());
                    return Err(interrupted);
                }
            }
            Ok(job.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
        })
    })?;
    let mut records = Vec::with_capacity(inputs.len());
    for (part, slots) in parts {
        for input in slots {
            let part = Arc::clone(&part);
            let record = Py::new(py, Record::new(MendedInPart { part, input }))?;
            // PyO3 makes every class collectable, but a Record reports no references to the
            // collector (it visits none), so tracking it only makes each collection that the
            // new records set off walk them all: untracked, as CPython untracks its own
            // containers of atoms. The collector finds the same cycles either way.
            // SAFETY: the record was just made and is a live object.
            #[allow(unsafe_code)]
            unsafe {
                pyo3::ffi::PyObject_GC_UnTrack(record.as_ptr().cast())
            };
            records.push(record);
        }
    }
    Ok(records)
}

/// Mends tool-call arguments into a dict, as `toolmend args`: unquotes encoded JSON, keeps
/// the first of concatenated objects, repairs what is almost JSON. Arguments cut off before
/// their end are about to be run: they raise `toolmend.Error` with code `truncated` unless
/// `truncated="heal"` is given (`repair` heals them; a `Mender`'s records show each repair). With `schema` (a JSON
/// Schema as a dict, or a Pydantic model class), as `toolmend args --schema`: the value is
/// coerced to it where the intent is unambiguous (not under `strict`), and what still breaks
/// it raises `toolmend.Error` with code `invalid_parameters` and `violations`.
#[pyfunction]
#[pyo3(signature = (text, *, schema = None, concat = "first", truncated = None, strict = false, max_depth = 10, max_nesting = 1000, max_bytes = 67108864))]
#[allow(clippy::too_many_arguments)]
fn mend_args(
    py: Python<'_>,
    text: &Bound<'_, PyAny>,
    schema: Option<&Bound<'_, PyAny>>,
    concat: &str,
    truncated: Option<&str>,
    strict: bool,
    max_depth: u32,
    max_nesting: usize,
    max_bytes: usize,
) -> PyResult<Py<PyAny>> {
    let schema = match schema {
        Some(s) if !s.is_none() => Some(load_schema(py, s)?),
        _ => None,
    };
    // Tool arguments are about to be run: cut off, they are refused unless asked to heal.
    let truncated = truncated.unwrap_or(Options::for_tool_arguments().truncated.as_str());
    let options = parse_options("object", concat, truncated, strict, max_depth, max_nesting)?;
    let text = input(text, max_bytes)
        .text()
        .map_err(|error| to_py_err(py, &error, None))?;
    let mut mender = LibMender::new(options);
    let mended = mender
        .mend(text)
        .map_err(|error| to_py_err(py, &error, None))?;
    let Some(schema) = schema else {
        return json_loads(py, &mended.value());
    };
    match toolmend_core::MendedValue::with_schema(&mended, &schema, !strict) {
        Ok(checked) => json_loads(py, &checked.value),
        Err(mismatch) => {
            let err = to_py_err(py, &mismatch.error, None);
            let listed: Vec<Value> = mismatch
                .violations
                .iter()
                .map(|v| serde_json::json!({"path": v.path, "keyword": v.keyword, "message": v.message}))
                .collect();
            value_to_py(py, &Value::Array(listed))
                .and_then(|v| err.value(py).setattr("violations", v))?;
            Err(err)
        }
    }
}

/// A JSON Schema from a dict, or from a class with `model_json_schema()` (a Pydantic model).
fn load_schema(py: Python<'_>, schema: &Bound<'_, PyAny>) -> PyResult<Schema> {
    let document = if schema.is_instance_of::<PyDict>() {
        schema.clone()
    } else if let Ok(method) = schema.getattr("model_json_schema") {
        method.call0()?
    } else {
        let kind = schema
            .get_type()
            .name()
            .map_or_else(|_| "?".to_owned(), |n| n.to_string());
        return Err(to_py_err(
            py,
            &usage(format!(
                "schema: expected a dict or a Pydantic model class, found {kind}"
            )),
            None,
        ));
    };
    let document: Value = serde_json::from_str(&json_dumps(&document)?)
        .map_err(|e| to_py_err(py, &usage(format!("schema: {e}")), None))?;
    Schema::new(document).map_err(|e| to_py_err(py, &usage(format!("schema: {e}")), None))
}

/// Repairs almost-JSON into any JSON value, as `toolmend repair`. Raises `toolmend.Error`.
#[pyfunction]
#[pyo3(signature = (text, *, concat = "first", truncated = "heal", strict = false, max_depth = 10, max_nesting = 1000, max_bytes = 67108864))]
#[allow(clippy::too_many_arguments)]
fn repair(
    py: Python<'_>,
    text: &Bound<'_, PyAny>,
    concat: &str,
    truncated: &str,
    strict: bool,
    max_depth: u32,
    max_nesting: usize,
    max_bytes: usize,
) -> PyResult<Py<PyAny>> {
    let options = parse_options("any", concat, truncated, strict, max_depth, max_nesting)?;
    value_of(py, text, options, max_bytes)
}

fn value_of(
    py: Python<'_>,
    text: &Bound<'_, PyAny>,
    options: Options,
    max_bytes: usize,
) -> PyResult<Py<PyAny>> {
    let text = input(text, max_bytes)
        .text()
        .map_err(|error| to_py_err(py, &error, None))?;
    match LibMender::new(options).mend(text) {
        Ok(mended) => json_loads(py, &mended.value()),
        Err(error) => Err(to_py_err(py, &error, None)),
    }
}

/// Mends many inputs (an iterable of str or bytes) into a list of Records, in order, with
/// the GIL released and the CLI's threads (`threads=0`: one per core, at most 8). Ctrl-C
/// (a KeyboardInterrupt) stops a long batch.
#[pyfunction]
#[pyo3(signature = (inputs, *, target = "object", concat = "first", truncated = "heal", strict = false, max_depth = 10, max_nesting = 1000, max_bytes = 67108864, threads = 0))]
#[allow(clippy::too_many_arguments)]
fn mend_many(
    py: Python<'_>,
    inputs: &Bound<'_, PyAny>,
    target: &str,
    concat: &str,
    truncated: &str,
    strict: bool,
    max_depth: u32,
    max_nesting: usize,
    max_bytes: usize,
    threads: usize,
) -> PyResult<Vec<Py<Record>>> {
    let options = parse_options(target, concat, truncated, strict, max_depth, max_nesting)?;
    many(py, inputs, &options, max_bytes, threads)
}

/// Finds the tool calls in model replies, as `toolmend calls`, with one set of tools.
///
/// `tools` is a list of tool definitions (toolmend's, OpenAI's or MCP's), a dict holding
/// them, or the path of a JSON or TOML tools file.
#[pyclass(frozen, module = "toolmend", name = "CallExtractor")]
struct CallExtractor {
    options: CallOptions,
    max_bytes: usize,
}

#[pymethods]
impl CallExtractor {
    #[new]
    #[pyo3(signature = (*, tools = None, format = None, require_terminate = false, strict = false, max_depth = 10, max_nesting = 1000, max_bytes = 67108864))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        tools: Option<&Bound<'_, PyAny>>,
        format: Option<String>,
        require_terminate: bool,
        strict: bool,
        max_depth: u32,
        max_nesting: usize,
        max_bytes: usize,
    ) -> PyResult<CallExtractor> {
        if let Some(name) = &format
            && !toolmend_core::calls::format_names().any(|n| n == name)
        {
            let names: Vec<_> = toolmend_core::calls::format_names().collect();
            return Err(PyValueError::new_err(format!(
                "unknown format {name:?}; one of: {}",
                names.join(", ")
            )));
        }
        let tools = match tools {
            None => None,
            Some(t) if t.is_none() => None,
            Some(t) => Some(Arc::new(load_tools(py, t)?)),
        };
        Ok(CallExtractor {
            options: CallOptions {
                format,
                tools,
                require_terminate,
                strict,
                max_depth,
                max_nesting,
                ..CallOptions::default()
            },
            max_bytes,
        })
    }

    /// Finds the calls in one reply: text (str or bytes), or an assistant message as a dict
    /// or list (OpenAI `tool_calls`, Anthropic content blocks). Returns `{"calls", "text",
    /// "reasoning", "incomplete"}`; raises `toolmend.Error` when a call was cut off
    /// (`incomplete_call`) or cannot be used, with what was found in `value`.
    fn extract(&self, py: Python<'_>, reply: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let result = if reply.is_instance_of::<PyDict>() || reply.is_instance_of::<PyList>() {
            toolmend_core::calls::extract_message_text(&json_dumps(reply)?, &self.options)
        } else {
            match input(reply, self.max_bytes).text() {
                Ok(text) => toolmend_core::calls::extract(text, &self.options),
                Err(error) => Err(Failure {
                    error,
                    extracted: None,
                }),
            }
        };
        found_to_py(py, result)
    }

    /// The calls of one API response (a dict): `api` is `"openai"` (a chat completion, or one
    /// of its messages; `choice` picks the choice) or `"anthropic"` (a message, or its content
    /// list). A response of the other API raises `invalid_input`; a stop reason that says the
    /// output was cut makes the call written last `incomplete_call`, as `toolmend calls` does.
    #[pyo3(signature = (response, *, api, choice = 0))]
    fn extract_response(
        &self,
        py: Python<'_>,
        response: &Bound<'_, PyAny>,
        api: &str,
        choice: usize,
    ) -> PyResult<Py<PyAny>> {
        let api = api.parse().map_err(PyValueError::new_err)?;
        let result = toolmend_core::calls::extract_response_text(
            &json_dumps(response)?,
            api,
            choice,
            &self.options,
        );
        found_to_py(py, result)
    }
}

fn found_to_py(py: Python<'_>, result: Result<Extracted, Failure>) -> PyResult<Py<PyAny>> {
    match result {
        Ok(found) => value_to_py(py, &found.to_value_with_repairs(Shape::Native)),
        Err(failure) => Err(failure_to_py(py, &failure)),
    }
}

/// A reply read as it arrives (`toolmend calls --stream`): `feed` it text in chunks of any
/// size, then `finish` it; each returns the events it makes known, as dicts with an
/// `"event"` key (`call_start`, `arguments`, `revised`, `call_end`, `incomplete`, `invalid`,
/// `retracted`, `text`, `reasoning`, `end`). See docs/streaming.md.
#[pyclass(module = "toolmend", name = "Stream")]
struct PyStream {
    inner: toolmend_core::calls::Stream,
    /// Reads the chunks given to `feed_chunk` (the library's rules for servers' chunks).
    deltas: toolmend_core::calls::Deltas,
}

#[pymethods]
impl PyStream {
    #[new]
    #[pyo3(signature = (*, tools = None, format = None, require_terminate = false, strict = false, max_depth = 10, max_nesting = 1000))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        tools: Option<&Bound<'_, PyAny>>,
        format: Option<String>,
        require_terminate: bool,
        strict: bool,
        max_depth: u32,
        max_nesting: usize,
    ) -> PyResult<PyStream> {
        let extractor = CallExtractor::new(
            py,
            tools,
            format,
            require_terminate,
            strict,
            max_depth,
            max_nesting,
            MAX_BYTES,
        )?;
        Ok(PyStream {
            inner: toolmend_core::calls::Stream::new(extractor.options),
            deltas: toolmend_core::calls::Deltas::new(toolmend_core::calls::DeltaFraming::Jsonl),
        })
    }

    /// Reads the next chunk of the reply's text; the events it makes known.
    fn feed(&mut self, py: Python<'_>, chunk: &str) -> PyResult<Py<PyAny>> {
        let events = self.inner.feed(chunk);
        events_to_py(py, &events)
    }

    /// Reasoning a server sends apart from the text (`reasoning_content`, `thinking`).
    fn feed_reasoning(&mut self, py: Python<'_>, delta: &str) -> PyResult<Py<PyAny>> {
        let events = self.inner.feed_reasoning(delta);
        events_to_py(py, &events)
    }

    /// A piece of a tool call a server parsed itself (OpenAI `delta.tool_calls[i]`: `key` is
    /// its `index`, then `id`, `function.name` and a fragment of `function.arguments`).
    #[pyo3(signature = (key, id = None, name = None, arguments = ""))]
    fn feed_call(
        &mut self,
        py: Python<'_>,
        key: usize,
        id: Option<&str>,
        name: Option<&str>,
        arguments: &str,
    ) -> PyResult<Py<PyAny>> {
        let events = self.inner.feed_call(key, id, name, arguments);
        events_to_py(py, &events)
    }

    /// One chunk of a server's stream as a dict (an OpenAI chat-completions chunk, an Anthropic
    /// event, an Ollama line, a Gemini or Responses event: what `calls --stream --input jsonl`
    /// reads a line as). A chunk that is an error ends the reply with it.
    fn feed_chunk(&mut self, py: Python<'_>, chunk: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let events = self.deltas.chunk_text(&json_dumps(chunk)?, &mut self.inner);
        events_to_py(py, &events)
    }

    /// Ends the reply: the results (`text`, `reasoning`, `call_end`, `incomplete`, …) and the
    /// `end` event, whose record is what `extract_calls` gives for the whole reply. A second
    /// call returns nothing.
    fn finish(&mut self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let events = self.inner.finish();
        events_to_py(py, &events)
    }
}

fn events_to_py(py: Python<'_>, events: &[toolmend_core::calls::Event]) -> PyResult<Py<PyAny>> {
    let list: Vec<Value> = events.iter().map(|e| e.to_value(Shape::Native)).collect();
    value_to_py(py, &Value::Array(list))
}

fn load_tools(py: Python<'_>, tools: &Bound<'_, PyAny>) -> PyResult<Tools> {
    let loaded = if let Ok(path) = tools.extract::<PathBuf>()
        && !tools.is_instance_of::<PyBytes>()
    {
        Tools::from_path(&path)
    } else {
        Tools::from_json_str(&json_dumps(tools)?)
    };
    loaded.map_err(|e| to_py_err(py, &usage(format!("tools: {e}")), None))
}

fn value_to_py(py: Python<'_>, value: &Value) -> PyResult<Py<PyAny>> {
    json_loads(py, &value.to_string())
}

/// The failure of a reply: its error, with what was found (as the CLI's record `value`).
fn failure_to_py(py: Python<'_>, failure: &Failure) -> PyErr {
    let found = failure.extracted.as_deref();
    let value = match found.map(|f| found_value(py, f)).transpose() {
        Ok(value) => value,
        Err(e) => return e,
    };
    let err = to_py_err(py, &failure.error, value);
    if let Some(rejected) = found
        .and_then(|f| f.rejected.first())
        .filter(|r| r.error == failure.error)
    {
        let violations: Vec<Value> = rejected
            .violations
            .iter()
            .map(
                |v| serde_json::json!({"path": v.path, "keyword": v.keyword, "message": v.message}),
            )
            .collect();
        let set = value_to_py(py, &Value::Array(violations))
            .and_then(|v| err.value(py).setattr("violations", v));
        if let Err(e) = set {
            return e;
        }
    }
    err
}

fn found_value(py: Python<'_>, found: &Extracted) -> PyResult<Py<PyAny>> {
    value_to_py(py, &found.failure_value(Shape::Native))
}

/// Finds the tool calls in one model reply, as `toolmend calls`. See `CallExtractor`.
#[pyfunction]
#[pyo3(signature = (reply, *, tools = None, format = None, require_terminate = false, strict = false, max_depth = 10, max_nesting = 1000, max_bytes = 67108864))]
#[allow(clippy::too_many_arguments)]
fn extract_calls(
    py: Python<'_>,
    reply: &Bound<'_, PyAny>,
    tools: Option<&Bound<'_, PyAny>>,
    format: Option<String>,
    require_terminate: bool,
    strict: bool,
    max_depth: u32,
    max_nesting: usize,
    max_bytes: usize,
) -> PyResult<Py<PyAny>> {
    CallExtractor::new(
        py,
        tools,
        format,
        require_terminate,
        strict,
        max_depth,
        max_nesting,
        max_bytes,
    )?
    .extract(py, reply)
}

/// The names `format=` accepts, most specific first.
#[pyfunction]
fn call_formats() -> Vec<&'static str> {
    toolmend_core::calls::format_names().collect()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("Error", m.py().get_type::<Error>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<Record>()?;
    m.add_class::<Mender>()?;
    m.add_class::<CallExtractor>()?;
    m.add_class::<PyStream>()?;
    m.add_function(wrap_pyfunction!(mend_args, m)?)?;
    m.add_function(wrap_pyfunction!(repair, m)?)?;
    m.add_function(wrap_pyfunction!(mend_many, m)?)?;
    m.add_function(wrap_pyfunction!(extract_calls, m)?)?;
    m.add_function(wrap_pyfunction!(call_formats, m)?)?;
    m.add_function(wrap_pyfunction!(cli::run_cli, m)?)?;
    Ok(())
}
