//! Tool calls for Python: `CallExtractor`, `extract_calls`, `call_formats` and the `Stream` of a
//! reply read as it arrives. Replies, responses and chunks go to the library as they are; what
//! it finds comes back as Python objects.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use serde_json::Value;
use toolmend_core::calls::{CallOptions, Extracted, Failure, Shape, Stream};
use toolmend_core::tools::Tools;
use toolmend_core::{Input, KeptStream};

use super::{MAX_BYTES, input, json_dumps, to_py_err, usage, value_to_py};

/// Finds the tool calls in model replies, as `toolmend calls`, with one set of tools.
///
/// `tools` is a list of tool definitions (toolmend's, OpenAI's or MCP's), a dict holding
/// them, or the path of a JSON or TOML tools file.
#[pyclass(frozen, module = "toolmend", name = "CallExtractor")]
pub(crate) struct CallExtractor {
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
        if let Some(name) = &format {
            toolmend_core::calls::check_format(name).map_err(PyValueError::new_err)?;
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
        // A panic (a bug in toolmend) is the reply's `internal_error` (`Input::kept`).
        let result = if reply.is_instance_of::<PyDict>() || reply.is_instance_of::<PyList>() {
            let message = json_dumps(reply)?;
            Input::Text(&message).kept(
                |_| toolmend_core::calls::extract_message_text(&message, &self.options),
                |error| Err(Failure::from(error)),
            )
        } else {
            input(reply, self.max_bytes).kept(
                |text| match text {
                    Ok(text) => toolmend_core::calls::extract(text, &self.options),
                    Err(error) => Err(Failure::from(error)),
                },
                |error| Err(Failure::from(error)),
            )
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
        let response = json_dumps(response)?;
        let result = Input::Text(&response).kept(
            |_| toolmend_core::calls::extract_response_text(&response, api, choice, &self.options),
            |error| Err(Failure::from(error)),
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
pub(crate) struct PyStream {
    /// A panic (a bug in toolmend) ends the reply with an `internal_error` `end` event.
    inner: KeptStream,
    /// Reads the chunks given to `feed_chunk` (the library's rules for servers' chunks).
    deltas: toolmend_core::calls::Deltas,
}

#[pymethods]
impl PyStream {
    #[new]
    #[pyo3(signature = (*, tools = None, format = None, require_terminate = false, strict = false, max_depth = 10, max_nesting = 1000, arguments_events = "delta", arguments_step = toolmend_core::calls::ARGUMENTS_STEP as u64))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        tools: Option<&Bound<'_, PyAny>>,
        format: Option<String>,
        require_terminate: bool,
        strict: bool,
        max_depth: u32,
        max_nesting: usize,
        arguments_events: &str,
        arguments_step: u64,
    ) -> PyResult<PyStream> {
        let kind = toolmend_core::calls::ArgumentsEvents::from_name(arguments_events)
            .map_err(PyValueError::new_err)?;
        let arguments_step =
            toolmend_core::calls::arguments_step(arguments_step).map_err(PyValueError::new_err)?;
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
            inner: KeptStream::new(
                toolmend_core::calls::Stream::new(extractor.options)
                    .with_arguments_events(kind)
                    .with_arguments_step(arguments_step),
            ),
            deltas: toolmend_core::calls::Deltas::new(toolmend_core::calls::DeltaFraming::Jsonl),
        })
    }

    /// Reads the next chunk of the reply's text; the events it makes known.
    fn feed(&mut self, py: Python<'_>, chunk: &str) -> PyResult<Py<PyAny>> {
        let events = self.inner.run(chunk, |s| s.feed(chunk));
        events_to_py(py, &events)
    }

    /// Reasoning a server sends apart from the text (`reasoning_content`, `thinking`).
    fn feed_reasoning(&mut self, py: Python<'_>, delta: &str) -> PyResult<Py<PyAny>> {
        let events = self.inner.run(delta, |s| s.feed_reasoning(delta));
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
        let events = self
            .inner
            .run(arguments, |s| s.feed_call(key, id, name, arguments));
        events_to_py(py, &events)
    }

    /// One chunk of a server's stream as a dict (an OpenAI chat-completions chunk, an Anthropic
    /// event, an Ollama line, a Gemini or Responses event: what `calls --stream --input jsonl`
    /// reads a line as). A chunk that is an error ends the reply with it.
    fn feed_chunk(&mut self, py: Python<'_>, chunk: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let chunk = json_dumps(chunk)?;
        let deltas = &mut self.deltas;
        let events = self.inner.run(&chunk, |s| deltas.chunk_text(&chunk, s));
        events_to_py(py, &events)
    }

    /// Ends the reply: the results (`text`, `reasoning`, `call_end`, `incomplete`, …) and the
    /// `end` event, whose record is what `extract_calls` gives for the whole reply. A second
    /// call returns nothing.
    fn finish(&mut self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let events = self.inner.run("", Stream::finish);
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
pub(crate) fn extract_calls(
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
pub(crate) fn call_formats() -> Vec<&'static str> {
    toolmend_core::calls::format_names().collect()
}
