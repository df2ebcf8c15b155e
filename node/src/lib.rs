//! `toolmend.node`: the toolmend library in-process for Node (napi-rs).
//!
//! A thin layer: options in, the library's results out as plain objects holding compact JSON
//! text, which `index.js` parses and wraps (its `Record`, `ToolmendError`). Inputs that are not
//! strings or buffers never get here: `index.js` answers them itself.

// The `#[napi]` exports are called from JavaScript only: in the unit-test build napi-derive
// registers none of them, so they would all be dead code there.
#![cfg_attr(test, allow(dead_code))]

use std::str::FromStr;
use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use toolmend_core::calls::{CallOptions, Extracted, Failure, Shape};
use toolmend_core::schema::Schema;
use toolmend_core::tools::Tools;
use toolmend_core::{Concat, Options, Target, Truncated};

// Node's external strings and napi's raw calls: the unsafe code of the package is in these.
#[allow(unsafe_code)]
mod many;
#[allow(unsafe_code)]
mod pool;
#[allow(unsafe_code)]
mod records;
#[allow(unsafe_code)]
mod text;
#[allow(unsafe_code)]
mod value;

/// The default limit on one input's size, as the CLI's `--max-bytes`.
const MAX_BYTES: f64 = toolmend_core::DEFAULT_MAX_BYTES as f64;

/// Settings of the args and repair pipelines (all optional).
#[napi(object)]
pub struct MendOptions {
    /// "object" (args, the default) or "any" (repair).
    pub target: Option<String>,
    /// "first" (default), "all" or "error".
    pub concat: Option<String>,
    /// Input cut off before its end: "heal" (default, reported as repairs) or "error".
    pub truncated: Option<String>,
    pub strict: Option<bool>,
    pub max_depth: Option<u32>,
    pub max_nesting: Option<u32>,
    pub max_bytes: Option<f64>,
    /// Threads of a batch (0: one per core, at most 8, as the CLI).
    pub threads: Option<u32>,
    /// A JSON Schema for the value, as JSON text (`index.js` writes the object): the value is
    /// coerced to it and checked, as `toolmend args --schema`. `Mender` only.
    pub schema: Option<String>,
}

/// One input's result, with the value and repairs as JSON text.
#[napi(object)]
pub struct RawRecord {
    pub ok: bool,
    pub json: Option<String>,
    pub repairs: Option<String>,
    pub dropped: Option<Vec<String>>,
    pub code: Option<String>,
    pub message: Option<String>,
    pub offset: Option<f64>,
    pub original: Option<String>,
    /// For `invalid_parameters`: the violations as a JSON array of `{path, keyword, message}`.
    pub violations: Option<String>,
}

/// The pipeline's options, the size limit and the thread count.
fn options(o: Option<&MendOptions>) -> Result<(Options, usize, usize)> {
    let target: Target = word(o.and_then(|o| o.target.as_deref()), "object")?;
    let concat: Concat = word(o.and_then(|o| o.concat.as_deref()), "first")?;
    let truncated: Truncated = word(o.and_then(|o| o.truncated.as_deref()), "heal")?;
    let defaults = Options::default();
    let options = Options {
        target,
        concat,
        truncated,
        strict: o.and_then(|o| o.strict).unwrap_or(false),
        max_depth: o.and_then(|o| o.max_depth).unwrap_or(defaults.max_depth),
        max_nesting: o
            .and_then(|o| o.max_nesting)
            .map_or(defaults.max_nesting, |n| n as usize),
    };
    let max_bytes = limit(o.and_then(|o| o.max_bytes));
    let threads = o.and_then(|o| o.threads).unwrap_or(0) as usize;
    Ok((options, max_bytes, threads))
}

/// A size limit from JavaScript: a number of bytes (NaN or negative refuse everything).
fn limit(max_bytes: Option<f64>) -> usize {
    let max_bytes = max_bytes.unwrap_or(MAX_BYTES);
    if max_bytes >= 0.0 {
        max_bytes as usize
    } else {
        0
    }
}

/// The value an option's word names (`default` when none is given).
fn word<T: FromStr<Err = toolmend_core::UnknownWord>>(
    given: Option<&str>,
    default: &str,
) -> Result<T> {
    given
        .unwrap_or(default)
        .parse()
        .map_err(|e: toolmend_core::UnknownWord| invalid_arg(e.to_string()))
}

fn invalid_arg(message: String) -> napi::Error {
    napi::Error::new(Status::InvalidArg, message)
}

fn failed(error: &toolmend_core::Error, original: String) -> RawRecord {
    RawRecord {
        ok: false,
        json: None,
        repairs: None,
        dropped: None,
        code: Some(error.code.as_str().to_owned()),
        message: Some(error.message.clone()),
        offset: error.offset.map(|o| o as f64),
        original: Some(original),
        violations: None,
    }
}

fn record(
    input: &toolmend_core::Input<'_>,
    result: std::result::Result<toolmend_core::MendedValue, toolmend_core::Error>,
) -> RawRecord {
    match result {
        Ok(mended) => {
            let mut repairs = Vec::new();
            toolmend_core::write_repairs(&mut repairs, &mended.repairs);
            RawRecord {
                ok: true,
                json: Some(mended.value),
                repairs: Some(String::from_utf8(repairs).expect("records are UTF-8")),
                dropped: Some(mended.dropped),
                code: None,
                message: None,
                offset: None,
                original: None,
                violations: None,
            }
        }
        Err(error) => failed(&error, input.original()),
    }
}

/// Text or UTF-8 bytes as the library's input (too large or not UTF-8: an error already).
fn input<'a>(text: &'a Either<String, Buffer>, max_bytes: usize) -> toolmend_core::Input<'a> {
    match text {
        Either::A(s) => toolmend_core::Input::from_text(s, max_bytes),
        Either::B(b) => toolmend_core::Input::from_bytes(b, max_bytes),
    }
}

/// The args (or repair) pipeline over one input after another, keeping its buffers.
#[napi]
pub struct Mender {
    inner: toolmend_core::Mender,
    max_bytes: usize,
    schema: Option<Schema>,
    /// `mend_string`'s buffers, kept between calls.
    buffers: value::Buffers,
}

/// A JavaScript value made by hand, returned as it is.
pub struct Made(napi::sys::napi_value);

impl TypeName for Made {
    fn type_name() -> &'static str {
        "unknown"
    }

    fn value_type() -> ValueType {
        ValueType::Unknown
    }
}

#[allow(unsafe_code)]
impl ToNapiValue for Made {
    unsafe fn to_napi_value(_env: napi::sys::napi_env, val: Self) -> Result<napi::sys::napi_value> {
        Ok(val.0)
    }
}

#[napi]
impl Mender {
    #[napi(constructor)]
    pub fn new(options: Option<MendOptions>) -> Result<Mender> {
        let schema = options
            .as_ref()
            .and_then(|o| o.schema.as_deref())
            .map(load_schema)
            .transpose()?;
        let (options, max_bytes, _) = self::options(options.as_ref())?;
        Ok(Mender {
            inner: toolmend_core::Mender::new(options),
            max_bytes,
            schema,
            buffers: value::Buffers::default(),
        })
    }

    /// `mend_value` for a string without a schema, the way that costs least per call (see
    /// `value.rs`; `valueFunction` makes the same call as a plain function). Null for a string
    /// with a lone surrogate (`index.js` makes that error).
    #[napi(ts_return_type = "string | RawRecord | null")]
    pub fn mend_string(&mut self, env: Env, text: napi::JsString) -> Result<Made> {
        let string = text.value().value;
        self.buffers
            .mend_string(&mut self.inner, self.max_bytes, env.raw(), string)
            .map(Made)
    }

    /// One input's record. A panic (a bug in toolmend) gives its `internal_error` record and a
    /// new mender (`Input::mend_kept`).
    #[napi]
    pub fn mend(&mut self, text: Either<String, Buffer>) -> RawRecord {
        let input = input(&text, self.max_bytes);
        let coerce = !self.inner.options().strict;
        let schema = self.schema.as_ref();
        input.mend_kept(&mut self.inner, |result| {
            let mended = match result {
                Ok(mended) => mended,
                Err(error) => return failed(&error, input.original()),
            };
            let Some(schema) = schema else {
                return record(&input, Ok(toolmend_core::MendedValue::from(&mended)));
            };
            match toolmend_core::MendedValue::with_schema(&mended, schema, coerce) {
                Ok(checked) => record(&input, Ok(checked)),
                Err(mismatch) => {
                    let listed: Vec<serde_json::Value> = mismatch
                        .violations
                        .iter()
                        .map(|v| serde_json::json!({"path": v.path, "keyword": v.keyword, "message": v.message}))
                        .collect();
                    let mut raw = failed(&mismatch.error, input.original());
                    raw.violations = Some(serde_json::Value::Array(listed).to_string());
                    raw
                }
            }
        })
    }

    /// One input's value as compact JSON text, or its failed record: what `mendArgs` and
    /// `repair` need, as one string rather than a record of eight fields.
    #[napi(ts_return_type = "string | RawRecord")]
    pub fn mend_value(&mut self, text: Either<String, Buffer>) -> Either<String, RawRecord> {
        if self.schema.is_some() {
            // The schema's coercions and violations are the record's.
            let mut raw = self.mend(text);
            return match raw.json.take() {
                Some(json) if raw.ok => Either::A(json),
                json => {
                    raw.json = json;
                    Either::B(raw)
                }
            };
        }
        let input = input(&text, self.max_bytes);
        let result = input.mend_kept(&mut self.inner, |result| {
            result.map(|mended| mended.value().into_owned())
        });
        match result {
            Ok(json) => Either::A(json),
            Err(error) => Either::B(failed(&error, input.original())),
        }
    }
}

/// A napi status as a Result.
fn check(status: napi::sys::napi_status) -> Result<()> {
    if status == napi::sys::Status::napi_ok {
        Ok(())
    } else {
        Err(invalid_arg(format!(
            "an input of the batch could not be read (napi status {status})"
        )))
    }
}

/// The schema of `MendOptions.schema` (JSON text).
fn load_schema(text: &str) -> Result<Schema> {
    let document: serde_json::Value =
        serde_json::from_str(text).map_err(|e| invalid_arg(format!("schema: {e}")))?;
    Schema::new(document).map_err(|e| invalid_arg(format!("schema: {e}")))
}

/// Settings of the calls extractor (all optional).
#[napi(object)]
pub struct CallsOptions {
    /// Tool definitions as JSON text (toolmend's, OpenAI's or MCP's).
    pub tools_json: Option<String>,
    /// The path of a JSON or TOML tools file.
    pub tools_path: Option<String>,
    pub format: Option<String>,
    pub require_terminate: Option<bool>,
    pub strict: Option<bool>,
    pub max_depth: Option<u32>,
    pub max_nesting: Option<u32>,
    pub max_bytes: Option<f64>,
}

/// What a reply held (`json`, as `toolmend calls` writes its value), or why it fails.
#[napi(object)]
pub struct RawCalls {
    pub ok: bool,
    /// The value; for a failure, what was found (with `rejected`), when anything was.
    pub json: Option<String>,
    pub code: Option<String>,
    pub message: Option<String>,
    pub offset: Option<f64>,
    /// For `invalid_parameters`: the violations as a JSON array of {path, message}.
    pub violations: Option<String>,
}

/// `toolmend calls` with one set of options and tools (loaded once).
#[napi]
pub struct CallExtractor {
    options: CallOptions,
    max_bytes: usize,
}

#[napi]
impl CallExtractor {
    #[napi(constructor)]
    pub fn new(options: Option<CallsOptions>) -> Result<CallExtractor> {
        let o = options.as_ref();
        let format = o.and_then(|o| o.format.clone());
        if let Some(name) = &format {
            toolmend_core::calls::check_format(name).map_err(invalid_arg)?;
        }
        let tools = match (
            o.and_then(|o| o.tools_path.as_deref()),
            o.and_then(|o| o.tools_json.as_deref()),
        ) {
            (Some(path), _) => Some(Tools::from_path(path.as_ref())),
            (None, Some(json)) => Some(Tools::from_json_str(json)),
            (None, None) => None,
        }
        .transpose()
        .map_err(|e| napi::Error::new(Status::InvalidArg, format!("invalid_input: tools: {e}")))?;
        let defaults = CallOptions::default();
        Ok(CallExtractor {
            options: CallOptions {
                format,
                tools: tools.map(Arc::new),
                require_terminate: o.and_then(|o| o.require_terminate).unwrap_or(false),
                strict: o.and_then(|o| o.strict).unwrap_or(false),
                max_depth: o.and_then(|o| o.max_depth).unwrap_or(defaults.max_depth),
                max_nesting: o
                    .and_then(|o| o.max_nesting)
                    .map_or(defaults.max_nesting, |n| n as usize),
                ..defaults
            },
            max_bytes: limit(o.and_then(|o| o.max_bytes)),
        })
    }

    /// The calls in a reply: text, or (with `message`) an assistant message as JSON text.
    #[napi]
    pub fn extract(&self, reply: Either<String, Buffer>, message: Option<bool>) -> RawCalls {
        let input = input(&reply, self.max_bytes);
        let result = input.kept(
            |text| match text {
                Err(error) => Err(Failure::from(error)),
                Ok(text) if message == Some(true) => {
                    toolmend_core::calls::extract_message_text(text, &self.options)
                }
                Ok(text) => toolmend_core::calls::extract(text, &self.options),
            },
            |error| Err(Failure::from(error)),
        );
        raw_calls(result)
    }

    /// The calls of one API response given as JSON text: `api` is `openai` (a chat completion
    /// or one of its messages; `choice` picks the choice) or `anthropic` (a message or its
    /// content list). Another API's response is `invalid_input`; a stop reason that says the
    /// output was cut makes the call written last `incomplete_call`.
    #[napi]
    pub fn extract_response(&self, response: String, api: String, choice: u32) -> Result<RawCalls> {
        let api = api.parse().map_err(invalid_arg)?;
        let result = toolmend_core::Input::Text(&response).kept(
            |_| {
                toolmend_core::calls::extract_response_text(
                    &response,
                    api,
                    choice as usize,
                    &self.options,
                )
            },
            |error| Err(Failure::from(error)),
        );
        Ok(raw_calls(result))
    }
}

fn raw_calls(result: std::result::Result<Extracted, Failure>) -> RawCalls {
    match result {
        Ok(found) => RawCalls {
            ok: true,
            json: Some(found.to_value_with_repairs(Shape::Native).to_string()),
            code: None,
            message: None,
            offset: None,
            violations: None,
        },
        Err(failure) => failure_record(&failure),
    }
}

/// A reply read as it arrives (`toolmend calls --stream`); each method returns the events it
/// makes known as a JSON array (index.js parses it).
#[napi(js_name = "Stream")]
pub struct NativeStream {
    /// A panic (a bug in toolmend) ends the reply with an `internal_error` `end` event.
    inner: toolmend_core::KeptStream,
    /// Reads the chunks given to `feedChunk` (the library's rules for servers' chunks).
    deltas: toolmend_core::calls::Deltas,
}

#[napi]
impl NativeStream {
    /// `arguments_events`: `delta` (the default) or `snapshot` (each `arguments` event also
    /// carries the whole `parameters` so far); `arguments_step`: bytes of a call's arguments
    /// before its first `arguments` event and at least between two (a whole number, 1 or more;
    /// the library's default when absent).
    #[napi(constructor)]
    pub fn new(
        options: Option<CallsOptions>,
        arguments_events: Option<String>,
        arguments_step: Option<f64>,
    ) -> Result<NativeStream> {
        let kind = toolmend_core::calls::ArgumentsEvents::from_name(
            arguments_events.as_deref().unwrap_or("delta"),
        )
        .map_err(invalid_arg)?;
        // A JS number as a whole number of bytes; what the library takes, the library says.
        let step = match arguments_step {
            None => toolmend_core::calls::ARGUMENTS_STEP,
            Some(n) if n >= 0.0 && n.fract() == 0.0 && n <= 9_007_199_254_740_991.0 => {
                toolmend_core::calls::arguments_step(n as u64).map_err(invalid_arg)?
            }
            Some(n) => {
                return Err(invalid_arg(format!(
                    "argumentsStep must be a whole number of bytes, not {n}"
                )));
            }
        };
        let extractor = CallExtractor::new(options)?;
        Ok(NativeStream {
            inner: toolmend_core::KeptStream::new(
                toolmend_core::calls::Stream::new(extractor.options)
                    .with_arguments_events(kind)
                    .with_arguments_step(step),
            ),
            deltas: toolmend_core::calls::Deltas::new(toolmend_core::calls::DeltaFraming::Jsonl),
        })
    }

    /// The next piece of the reply's text.
    #[napi]
    pub fn feed(&mut self, chunk: String) -> String {
        events_json(&self.inner.run(&chunk, |s| s.feed(&chunk)))
    }

    /// Reasoning a server sends apart from the text.
    #[napi]
    pub fn feed_reasoning(&mut self, delta: String) -> String {
        events_json(&self.inner.run(&delta, |s| s.feed_reasoning(&delta)))
    }

    /// A piece of a tool call a server parsed itself (`key`: its index).
    #[napi]
    pub fn feed_call(
        &mut self,
        key: u32,
        id: Option<String>,
        name: Option<String>,
        arguments: Option<String>,
    ) -> String {
        let arguments = arguments.as_deref().unwrap_or("");
        events_json(&self.inner.run(arguments, |s| {
            s.feed_call(key as usize, id.as_deref(), name.as_deref(), arguments)
        }))
    }

    /// One chunk of a server's stream as JSON text (an OpenAI chat-completions chunk, an
    /// Anthropic event, an Ollama line, a Gemini or Responses event), read by the library's
    /// rules. A chunk that is an error ends the reply with it.
    #[napi]
    pub fn feed_chunk(&mut self, chunk: String) -> String {
        let deltas = &mut self.deltas;
        events_json(&self.inner.run(&chunk, |s| deltas.chunk_text(&chunk, s)))
    }

    /// Ends the reply: the results and the `end` event.
    #[napi]
    pub fn finish(&mut self) -> String {
        events_json(&self.inner.run("", toolmend_core::calls::Stream::finish))
    }
}

fn events_json(events: &[toolmend_core::calls::Event]) -> String {
    // Serializing a list of events cannot fail: their keys are strings.
    serde_json::to_string(events).unwrap_or_default()
}

fn failure_record(failure: &Failure) -> RawCalls {
    let found: Option<&Extracted> = failure.extracted.as_deref();
    let violations = found
        .and_then(|f| f.rejected.first())
        .filter(|r| r.error == failure.error)
        .map(|r| {
            let list: Vec<_> = r
                .violations
                .iter()
                .map(|v| {
                    serde_json::json!({"path": v.path, "keyword": v.keyword, "message": v.message})
                })
                .collect();
            serde_json::Value::Array(list).to_string()
        });
    RawCalls {
        ok: false,
        json: found.map(|f| f.failure_value(Shape::Native).to_string()),
        code: Some(failure.error.code.as_str().to_owned()),
        message: Some(failure.error.message.clone()),
        offset: failure.error.offset.map(|o| o as f64),
        violations,
    }
}

/// The names `format` accepts, most specific first.
#[napi]
pub fn call_formats() -> Vec<String> {
    toolmend_core::calls::format_names()
        .map(str::to_owned)
        .collect()
}

/// The test trigger of a panic (`toolmend_core::PANIC_TRIGGER`): only in the test builds
/// (the `panic-trigger` feature), for node/test to show what a panic gives.
#[cfg(feature = "panic-trigger")]
#[napi]
pub fn panic_trigger() -> String {
    toolmend_core::PANIC_TRIGGER.to_owned()
}

/// The version of the toolmend library inside.
#[napi]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_owned()
}

/// The failed record of a string holding a lone surrogate; `shown` is the string with each
/// replaced by U+FFFD (`String.prototype.toWellFormed`).
#[napi]
pub fn lone_surrogate(shown: String) -> RawRecord {
    let input = toolmend_core::Input::lone_surrogate(&shown);
    let error = input.text().expect_err("a lone surrogate is an error");
    failed(&error, input.original())
}

/// What `mendArgs` does with input cut off before its end when no `truncated` is given: the
/// library's rule for tool arguments about to be run (`Options::for_tool_arguments`).
#[napi]
pub fn tool_arguments_truncated() -> String {
    Options::for_tool_arguments().truncated.as_str().to_owned()
}
