//! The args and repair pipeline for Python: `Mender`, `Record`, `mend_args`, `repair` and
//! `mend_many` (many inputs mended with the GIL released, on the CLI's threads).

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};
use serde_json::Value;
use toolmend_core::schema::Schema;
use toolmend_core::{Input, Mended, Mender as LibMender, Options};

use super::{input, json_dumps, json_loads, parse_options, to_py_err, usage, value_to_py};

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
pub(crate) struct Record {
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
pub(crate) struct Mender {
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
        input.mend_kept(&mut mender, |result| {
            Record::new(MendedInPart::new(&input, result))
        })
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
                slots.push(
                    input.mend_kept(mender, |result| MendedInput::new(&mut part, input, result)),
                );
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
pub(crate) fn mend_args(
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
    let mut mender = LibMender::new(options);
    let input = input(text, max_bytes);
    // A panic (a bug in toolmend) in mending or in the schema's check is this input's
    // `internal_error` (`Input::mend_kept`).
    let checked = input.mend_kept(&mut mender, |mended| {
        let mended = mended.map_err(Mismatch::from)?;
        let Some(schema) = &schema else {
            return Ok(mended.value().into_owned());
        };
        toolmend_core::MendedValue::with_schema(&mended, schema, !strict)
            .map(|checked| checked.value)
            .map_err(Mismatch::Schema)
    });
    match checked {
        Ok(value) => json_loads(py, &value),
        Err(Mismatch::Error(error)) => Err(to_py_err(py, &error, None)),
        Err(Mismatch::Schema(mismatch)) => {
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

/// Why `mend_args` fails: the input's error, or the schema's violations.
enum Mismatch {
    Error(toolmend_core::Error),
    Schema(toolmend_core::SchemaMismatch),
}

impl From<toolmend_core::Error> for Mismatch {
    fn from(error: toolmend_core::Error) -> Mismatch {
        Mismatch::Error(error)
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
pub(crate) fn repair(
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
    let mut mender = LibMender::new(options);
    let value = input(text, max_bytes).mend_kept(&mut mender, |mended| {
        mended.map(|mended| mended.value().into_owned())
    });
    match value {
        Ok(value) => json_loads(py, &value),
        Err(error) => Err(to_py_err(py, &error, None)),
    }
}

/// Mends many inputs (an iterable of str or bytes) into a list of Records, in order, with
/// the GIL released and the CLI's threads (`threads=0`: one per core, at most 8). Ctrl-C
/// (a KeyboardInterrupt) stops a long batch.
#[pyfunction]
#[pyo3(signature = (inputs, *, target = "object", concat = "first", truncated = "heal", strict = false, max_depth = 10, max_nesting = 1000, max_bytes = 67108864, threads = 0))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn mend_many(
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
