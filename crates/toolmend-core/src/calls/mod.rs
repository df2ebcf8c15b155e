//! The `calls` extractor: finds the tool calls in a raw model reply and normalizes each to
//! `{"tool", "parameters", "terminate"?, "id"?}`.
//!
//! A reply goes through these steps:
//! 1. reasoning (`<think>…</think>`, `[THINK]…[/THINK]`, Harmony's `analysis` channel, …) is
//!    set apart; calls written inside it are not calls;
//! 2. the call markup is found: with [`CallOptions::format`] unset, the formats of
//!    [`format_names`] are tried most specific first and the first that finds a call wins;
//!    marker-less JSON comes last. A call marker from which no call can be read is an error
//!    (`invalid_json`, or `incomplete_call` when the reply ends after it), never text; stray
//!    words between a marker and its calls stay text, and no format's markers do;
//! 3. every call's arguments go through the args pipeline ([`crate::Mender`]), so
//!    double-encoded and broken arguments are mended and the repairs reported; values of
//!    XML-style formats are typed by the tool's schema;
//! 4. with tools, each call is checked against its tool.
//!
//! A call that was cut off is never healed into a call: it is listed in
//! [`Extracted::incomplete`] and the reply fails with `incomplete_call`.
//!
//! ```
//! use toolmend_core::calls::{extract, CallOptions};
//!
//! let reply = "<think>The user wants the weather.</think>Checking.\n\
//!              <tool_call>\n{\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Oslo\\\"}\"}\n</tool_call>";
//! let found = extract(reply, &CallOptions::default()).unwrap();
//! assert_eq!(found.calls[0].tool, "get_weather");
//! assert_eq!(found.calls[0].parameters["city"], "Oslo");
//! assert_eq!(found.calls[0].repairs[0].kind.as_str(), "unquote");
//! assert_eq!(found.text.as_deref(), Some("Checking."));
//! assert_eq!(found.reasoning.as_deref(), Some("The user wants the weather."));
//!
//! let cut = extract("<tool_call>{\"name\": \"rm\", \"arguments\": {\"path\": \"/tmp/x\", \"dry", &CallOptions::default());
//! let failure = cut.unwrap_err();
//! assert_eq!(failure.error.code.as_str(), "incomplete_call");
//! assert_eq!(failure.extracted.unwrap().incomplete[0].tool.as_deref(), Some("rm"));
//! ```

mod api_events;
mod api_shapes;
mod call_keys;
mod content;
mod delta;
mod deltas;
mod filter;
mod formats;
mod harmony;
mod json;
mod mask;
mod message;
mod partial;
mod pythonic;
mod scan;
mod sse_data;
mod stop_reasons;
mod stream;
mod whole_chunk;

use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::args::{Concat, Mender, Options, Target};
use crate::error::{Code, Error};
use crate::repair::{Repair, RepairKind};
use crate::tools::Tools;
use crate::tools::schema::Violation;

pub use api_shapes::server_error_reply;
pub use deltas::{DeltaFraming, Deltas};
pub use filter::{CallsFilter, CallsFilterOptions, Shape};
pub use message::{
    Api, extract_message, extract_message_text, extract_response, extract_response_text,
};
pub use sse_data::sse_body;
pub use stop_reasons::cut_by;
pub use stream::{
    ARGUMENTS_STEP, Added, ArgumentsEvents, EVENT_FORMAT, Event, EventWriter, Prose, Stream,
    arguments_step,
};

mod finish;
mod found;

use finish::finish;
pub(crate) use finish::kind_of;
pub(crate) use found::{Args, EnvelopeCheck, Field, Item, Out, Raw, truncated};
use json::{CallJson, ExtractedJson};

/// Settings of the extractor.
#[derive(Debug, Clone)]
pub struct CallOptions {
    /// The format to decode (one of [`format_names`]); `None` detects it by its markers.
    pub format: Option<String>,
    /// The tools calls are checked against: unknown names fail with `unknown_tool`, parameters
    /// are validated against the tool's schema, and marker-less JSON counts only when it names
    /// a known tool.
    pub tools: Option<Arc<Tools>>,
    /// Each call must be the envelope `{"tool": string, "parameters": object, "terminate":
    /// boolean}`; anything else fails with `missing_field` or `wrong_type`.
    pub require_terminate: bool,
    /// With `require_terminate`, the loop's reading of the envelope: the name and parameters
    /// under any key a call is read from (`name`, `arguments` …) and parameters written as JSON
    /// text (decoded, reported as `unquote`), as `calls` normalises them; `terminate` is
    /// required of the envelope (`tool`), not of a model's native call (`name` and
    /// `arguments`, call markers, an API's `tool_calls`), which means "call, then go on".
    pub any_envelope_shape: bool,
    /// No repairs of arguments (see [`Options::strict`]).
    pub strict: bool,
    /// See [`Options::max_depth`].
    pub max_depth: u32,
    /// See [`Options::max_nesting`]. A call's values are held in memory as trees, which
    /// every reader of them (serializers, destructors, the packages' converters) walks
    /// recursively: they nest at most [`MAX_CALL_NESTING`] levels, whatever this says.
    pub max_nesting: usize,
}

/// How deep a call's arrays and objects may nest, whatever [`CallOptions::max_nesting`] asks:
/// deeper values overflowed the stack of whatever walked them; they are
/// `too_deep` errors. The default `--max-nesting` is this limit.
pub const MAX_CALL_NESTING: usize = 1000;

impl CallOptions {
    /// The nesting limit in force: [`CallOptions::max_nesting`], at most [`MAX_CALL_NESTING`].
    pub(crate) fn nesting(&self) -> usize {
        self.max_nesting.min(MAX_CALL_NESTING)
    }
}

impl Default for CallOptions {
    fn default() -> CallOptions {
        let defaults = Options::default();
        CallOptions {
            format: None,
            tools: None,
            require_terminate: false,
            any_envelope_shape: false,
            strict: false,
            max_depth: defaults.max_depth,
            max_nesting: defaults.max_nesting,
        }
    }
}

/// The names `--format` accepts, most specific first (the order `auto` tries them in).
pub fn format_names() -> impl Iterator<Item = &'static str> {
    formats::TABLE.iter().map(|spec| spec.name)
}

/// Whether `name` is a format `--format` (and the packages' `format`) takes: `auto` or a name
/// of [`format_names`]. The one check of every surface, with its one message.
///
/// # Errors
/// What names it takes, for any other.
///
/// ```
/// assert!(toolmend_core::calls::check_format("auto").is_ok());
/// assert!(toolmend_core::calls::check_format("hermes").is_ok());
/// assert!(toolmend_core::calls::check_format("hermes2").unwrap_err().starts_with("unknown format \"hermes2\"; expected auto or one of: harmony, "));
/// ```
pub fn check_format(name: &str) -> Result<(), String> {
    if name == "auto" || format_names().any(|f| f == name) {
        return Ok(());
    }
    let names: Vec<&str> = format_names().collect();
    Err(format!(
        "unknown format {name:?}; expected auto or one of: {}",
        names.join(", ")
    ))
}

/// Every format `--format` takes, in the order `auto` tries them, with the models that emit it.
pub fn formats() -> impl Iterator<Item = (&'static str, &'static str)> {
    formats::TABLE.iter().map(|spec| (spec.name, spec.models))
}

/// The formats with the models that emit them, for `--help`.
pub fn format_help() -> String {
    let mut out = String::new();
    for spec in formats::TABLE {
        out.push_str(&format!("  {:<16} {}\n", spec.name, spec.models));
    }
    out
}

/// One tool call, normalized.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The bare tool name (`functions.x:0` gives `x`).
    pub tool: String,
    /// The arguments, always an object (`{}` when the reply gave none, `null` or `""`).
    pub parameters: Map<String, Value>,
    /// The envelope's `terminate`, when the reply had one.
    pub terminate: Option<bool>,
    /// The call's id, when the format has one.
    pub id: Option<Value>,
    /// What was repaired to get this call: offsets of the call's JSON are in the reply, those
    /// of arguments given as a string are in that string's text.
    pub repairs: Vec<Repair>,
    /// Argument objects written after the first that this call does not use (concatenated
    /// arguments to a tool that is not read-only), and the members of an object glued to the
    /// arguments inside the call's JSON (`"parameters": {"a": 1}{"b": 2}` drops `{"b": 2}`).
    pub dropped: Vec<Value>,
}

/// A call that was cut off before its end.
#[derive(Debug, Clone, PartialEq)]
pub struct Incomplete {
    /// The tool's name, when it was written before the cut.
    pub tool: Option<String>,
    /// The call's id, when it was written before the cut.
    pub id: Option<Value>,
    /// Byte offset in the reply where the call starts.
    pub offset: usize,
    /// What was missing.
    pub message: String,
}

/// A call that was found but cannot be used.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    /// The tool's name, when there was one.
    pub tool: Option<String>,
    /// The call's id, when there was one.
    pub id: Option<Value>,
    /// The parameters as mended, when they could be.
    pub parameters: Option<Map<String, Value>>,
    /// Why it was rejected.
    pub error: Error,
    /// For `invalid_parameters`: every place the parameters break the tool's schema.
    pub violations: Vec<Violation>,
}

/// What a reply holds.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Extracted {
    /// The calls, in reply order.
    pub calls: Vec<Call>,
    /// The reply's other text (markup and reasoning removed), or `None`.
    pub text: Option<String>,
    /// The reasoning text, or `None`.
    pub reasoning: Option<String>,
    /// Calls that were cut off.
    pub incomplete: Vec<Incomplete>,
    /// Calls that were found but failed (bad JSON, unknown tool, invalid parameters, …).
    pub rejected: Vec<Rejected>,
    /// Repairs to JSON that held several calls at once (a call's own are in [`Call::repairs`]).
    pub repairs: Vec<Repair>,
    /// The format the calls were found in.
    pub format: Option<&'static str>,
}

impl Extracted {
    /// Why the reply fails, if it does: an incomplete call first, else the first rejected one.
    pub fn error(&self) -> Option<Error> {
        if let Some(cut) = self.incomplete.first() {
            let who = match &cut.tool {
                Some(tool) => format!("call to {tool:?}"),
                None => "tool call".to_owned(),
            };
            let more = match self.incomplete.len() {
                1 => String::new(),
                n => format!(" ({n} calls are incomplete)"),
            };
            let message = if cut.message.starts_with(stop_reasons::DROPPED) {
                // Not cut: the server left it out (the model's text may hold it as written).
                format!(
                    "{who} at byte {} is not a call: {}{more}",
                    cut.offset, cut.message
                )
            } else {
                format!(
                    "{who} starting at byte {} was cut off ({}); it is not healed into a call{more}",
                    cut.offset, cut.message
                )
            };
            return Some(Error {
                code: Code::IncompleteCall,
                message,
                offset: Some(cut.offset),
            });
        }
        self.rejected.first().map(|r| r.error.clone())
    }

    /// The value written for this reply: `{"calls", "text", "reasoning", "incomplete"}`.
    pub fn to_value(&self, shape: Shape) -> Value {
        json::value_of(&self.json(shape, false, false))
    }

    /// [`Extracted::to_value`] with the reply's own repairs (a reply that was one JSON string,
    /// unquoted) as `repairs` when there are any, as a call carries its own: what the Python and
    /// Node packages return, the value and the `repairs` of a `calls --records` record in one.
    pub fn to_value_with_repairs(&self, shape: Shape) -> Value {
        json::value_of(&self.json(shape, false, true))
    }

    /// The value written for a reply that fails: [`Extracted::to_value`] with the calls that
    /// were found but cannot be used, under `rejected` (`tool`, `id`, `parameters`, `code`,
    /// `message` each).
    pub fn failure_value(&self, shape: Shape) -> Value {
        json::value_of(&self.json(shape, true, false))
    }

    /// The one JSON encoding of this reply's value (see [`json::ExtractedJson`]).
    pub(crate) fn json(&self, shape: Shape, rejected: bool, repairs: bool) -> ExtractedJson<'_> {
        ExtractedJson {
            found: self,
            shape,
            rejected,
            repairs,
        }
    }
}

/// A call as a value, in the chosen shape (see [`json::CallJson`]).
fn call_value(call: &Call, shape: Shape) -> Value {
    json::value_of(&CallJson { call, shape })
}

/// Repairs as the JSON array records carry.
pub(crate) use crate::io::record::repairs_value;

/// A reply that fails: the error, and what was found (absent for an empty reply).
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// The first reason the reply fails.
    pub error: Error,
    /// What the reply holds, the failing calls included.
    pub extracted: Option<Box<Extracted>>,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for Failure {}

/// A reply that fails before anything is found in it (its input's own error, or a panic's
/// `internal_error`).
impl From<Error> for Failure {
    fn from(error: Error) -> Failure {
        Failure {
            error,
            extracted: None,
        }
    }
}

/// Finds and normalizes the tool calls in a model reply.
///
/// # Errors
/// A [`Failure`] when the reply is empty, when a call was cut off (`incomplete_call`), or when
/// a call cannot be used (`invalid_json`, `missing_field`, `wrong_type`, `unknown_tool`,
/// `invalid_parameters`, …); it carries what was found.
pub fn extract(text: &str, options: &CallOptions) -> Result<Extracted, Failure> {
    reply(text, options)
}

/// A reply given as text: a JSON string holding the reply is unquoted first (up to
/// `max_depth` layers, when what it holds has a call), and one that is a whole API response
/// or message is read as one ([`extract_message`]).
pub(crate) fn reply(text: &str, options: &CallOptions) -> Result<Extracted, Failure> {
    if let Some(found) = unquoted(text, options) {
        return found;
    }
    if options
        .format
        .as_deref()
        .is_none_or(|f| f == "auto" || f == "json")
        && let Some(range) = scan::whole_brackets(text)
        // One read: what it takes as JSON, serde_json (which checked it first) takes too.
        && let Ok(value) = crate::exact::parse(&text[range], options.nesting())
    {
        if api_shapes::is_api_shape(&value) {
            return extract_message(&value, options);
        }
        // Not held while the format scan reads the text: a reply that is a large JSON value
        // would be in memory as two trees at once.
        drop(value);
        // One JSON value as it stands: the format scan need not check it again.
        return run(Some(text), Vec::new(), None, options, true);
    }
    run(Some(text), Vec::new(), None, options, false)
}

/// The reply inside a reply that is one JSON string literal (the whole reply encoded once
/// more, as arguments often are), with an `unquote` repair; `None` when the reply is not one
/// or what it holds has no call (a quoted answer stays the text it is).
fn unquoted(text: &str, options: &CallOptions) -> Option<Result<Extracted, Failure>> {
    let trimmed = text.trim();
    if !trimmed.starts_with('"') {
        return None;
    }
    let mut inner = serde_json::from_str::<String>(trimmed).ok()?;
    let mut layers = 1;
    while layers < options.max_depth && inner.trim().starts_with('"') {
        match serde_json::from_str::<String>(inner.trim()) {
            Ok(next) => {
                inner = next;
                layers += 1;
            }
            Err(_) => break,
        }
    }
    let result = reply(&inner, options);
    let found = match &result {
        Ok(found) => found,
        Err(failure) => failure.extracted.as_deref()?,
    };
    if found.calls.is_empty() && found.incomplete.is_empty() && found.rejected.is_empty() {
        return None;
    }
    let unquote = Repair {
        kind: RepairKind::Unquote,
        offset: None,
        layers: Some(layers),
        text: None,
        path: None,
    };
    Some(match result {
        Ok(mut found) => {
            found.repairs.insert(0, unquote);
            Ok(found)
        }
        Err(mut failure) => {
            if let Some(found) = failure.extracted.as_deref_mut() {
                found.repairs.insert(0, unquote);
            }
            Err(failure)
        }
    })
}

/// The shared body of [`extract`] and [`extract_message`]: scans `text` and finishes its calls
/// and the structured ones (`extra`) of a message. `whole_json`: `text` was read as one JSON
/// value already.
pub(crate) fn run(
    text: Option<&str>,
    extra: Vec<Raw>,
    extra_reasoning: Option<String>,
    options: &CallOptions,
    whole_json: bool,
) -> Result<Extracted, Failure> {
    let text = text.unwrap_or_default();
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    if text.trim().is_empty() && extra.is_empty() {
        return Err(Failure {
            error: Error::whole(Code::EmptyInput, "reply is empty"),
            extracted: None,
        });
    }
    let ctx = Ctx::new(options);
    let scanned = formats::scan(text, &ctx, whole_json);
    let mut found = Extracted {
        text: scanned.text,
        reasoning: scan::join_parts(
            scanned
                .reasoning
                .iter()
                .map(String::as_str)
                .chain(extra_reasoning.as_deref()),
        ),
        repairs: scanned.repairs,
        format: scanned.format,
        ..Extracted::default()
    };
    for item in scanned
        .items
        .into_iter()
        .chain(extra.into_iter().map(Item::Call))
    {
        match item {
            Item::Call(raw) => finish(raw, &ctx, &mut found),
            Item::Incomplete(cut) => found.incomplete.push(cut),
            Item::Failed(rejected) => found.rejected.push(rejected),
        }
    }
    match found.error() {
        Some(error) => Err(Failure {
            error,
            extracted: Some(Box::new(found)),
        }),
        None => Ok(found),
    }
}

/// What the decoders see: the options and the tools.
pub(crate) struct Ctx<'o> {
    pub options: &'o CallOptions,
    pub tools: Option<&'o Tools>,
    /// The JSON extents found so far in the text being scanned.
    extents: RefCell<scan::Extents>,
}

impl<'o> Ctx<'o> {
    fn new(options: &'o CallOptions) -> Ctx<'o> {
        Ctx {
            options,
            tools: options.tools.as_deref(),
            extents: RefCell::default(),
        }
    }

    /// The end of the JSON array or object at `start` within `text[..limit]` (see
    /// [`scan::Extents`]: each bracket of a text is scanned a bounded number of times).
    pub(crate) fn json_extent(&self, text: &str, start: usize, limit: usize) -> Option<usize> {
        self.extents.borrow_mut().get(text, start, limit)
    }

    /// Whether a name may be a call in marker-less text: any name without tools, only a
    /// known one with them.
    pub(crate) fn knows(&self, name: &str) -> bool {
        self.tools
            .is_none_or(|tools| tools.get(&scan::bare_name(name).0).is_some())
    }

    /// The value of JSON text the mender wrote, each number's text kept (see [`crate::exact`]).
    pub(crate) fn value(&self, text: &str) -> Result<Value, Error> {
        crate::exact::parse(text, self.options.nesting())
            .map_err(|e| e.into_error(self.options.nesting()))
    }

    pub(crate) fn mender(&self, target: Target, concat: Concat) -> Mender {
        Mender::new(Options {
            target,
            concat,
            strict: self.options.strict,
            max_depth: self.options.max_depth,
            max_nesting: self.options.nesting(),
            // A cut call is found from the repairs and listed as incomplete, not refused here.
            ..Options::default()
        })
        // Parameters become serde_json values, which hold Unicode text only.
        .replacing_lone_surrogates()
    }

    /// A mender that builds the value as it parses ([`Mender::mend_value`]), for decoders that
    /// read the value: the reply is parsed once.
    pub(crate) fn value_mender(&self, target: Target, concat: Concat) -> Mender {
        self.mender(target, concat).building_values()
    }
}

/// Why a JSON object is not a `{"tool", "parameters", "terminate"}` envelope, read strictly
#[cfg(test)]
mod tests {
    use super::*;

    /// Deeper than serde_json's recursion limit (128), and numbers that no `f64` holds.
    fn deep(levels: usize) -> (String, String) {
        let open = r#"{"n":["#.repeat(levels);
        let close = "]}".repeat(levels);
        let written = format!("{open}123456789012345678901234567890.5E-400{close}");
        (written.clone(), written)
    }

    /// Each reply, with how many texts are read as JSON on their own (the reply as a whole
    /// when it is one JSON value, to see whether it is an API message, once): every call's
    /// JSON is read once, by the mender that also repairs it, never again from the text it
    /// wrote.
    #[test]
    fn a_reply_is_parsed_once() {
        let (deep_args, deep_expected) = deep(200);
        let tools = Tools::from_json_str(
            r#"[{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
                "properties": {"a": {"type": "integer"}, "j": {"type": "object"}}}}}]"#,
        )
        .unwrap();
        let with_tools = CallOptions {
            tools: Some(Arc::new(tools)),
            ..CallOptions::default()
        };
        let plain = CallOptions::default();
        let encoded = serde_json::to_string(&deep_args).unwrap();
        let cases: Vec<(String, &CallOptions, usize, &str)> = vec![
            // A call in markers, its JSON broken and its number past f64.
            (
                "<tool_call>{'name': 'f', 'arguments': {'a': 1E5,}}</tool_call>".into(),
                &plain,
                0,
                r#"{"a":1E5}"#,
            ),
            // Stray words before the calls in markers.
            (
                r#"[TOOL_CALLS] Sure: [{"name": "f", "arguments": {"a": -0}}]"#.into(),
                &plain,
                0,
                r#"{"a":-0}"#,
            ),
            // Marker-less JSON in prose, nested past serde_json's limit.
            (
                format!(r#"Calling it: {{"name": "f", "arguments": {deep_args}}}"#),
                &plain,
                0,
                &deep_expected,
            ),
            // Arguments as JSON text (the reply is one JSON value: read once as a whole).
            (
                format!(r#"{{"name": "f", "arguments": {encoded}}}"#),
                &plain,
                1,
                &deep_expected,
            ),
            // Arguments wrapped in an `arguments` parameter; a JSON-typed parameter.
            (
                r#"<function=f><parameter=arguments>{"a": 7, "j": {"x": 1e400}}</parameter></function>"#
                    .into(),
                &with_tools,
                0,
                r#"{"a":7,"j":{"x":1e400}}"#,
            ),
            (
                "<｜DSML｜function_calls><｜DSML｜invoke name=\"f\"><｜DSML｜parameter name=\"j\" string=\"false\">{'x': 2E3,}</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜function_calls>"
                    .into(),
                &with_tools,
                0,
                r#"{"j":{"x":2E3}}"#,
            ),
        ];
        let read = crate::exact::reads;
        for (reply, options, reads, expected) in cases {
            let before = read();
            let found = extract(&reply, options).unwrap_or_else(|f| panic!("{reply}: {f}"));
            assert_eq!(read() - before, reads, "{reply}");
            assert_eq!(found.calls.len(), 1, "{reply}");
            let parameters = Value::Object(found.calls[0].parameters.clone());
            assert_eq!(parameters.to_string(), expected, "{reply}");
        }
        // A call cut off is named from its JSON, healed once to read it.
        let before = read();
        let cut = extract(
            r#"<tool_call>{"name": "rm", "arguments": {"n": 1E5, "path": "/tmp"#,
            &plain,
        )
        .unwrap_err();
        assert_eq!(read() - before, 0);
        assert_eq!(
            cut.extracted.unwrap().incomplete[0].tool.as_deref(),
            Some("rm")
        );
    }
}
