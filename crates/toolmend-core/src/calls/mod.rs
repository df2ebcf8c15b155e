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

mod deltas;
mod filter;
mod formats;
mod harmony;
mod mask;
mod message;
mod partial;
mod pythonic;
mod scan;
mod stream;

use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::args::{Concat, Mender, Options, Target};
use crate::error::{Code, Error};
use crate::repair::{Repair, RepairKind};
use crate::tools::schema::Violation;
use crate::tools::typing::{convert, enum_member, fits, schema_types};
use crate::tools::{Tool, Tools};

pub use deltas::{DeltaFraming, Deltas};
pub use filter::{CallsFilter, CallsFilterOptions, Shape};
pub use message::{
    Api, cut_by, extract_message, extract_message_text, extract_response, extract_response_text,
};
pub use stream::{Event, Prose, Stream};

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
/// deeper values overflowed the stack of whatever walked them (issue 25.2); they are
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
            return Some(Error {
                code: Code::IncompleteCall,
                message: format!(
                    "{who} starting at byte {} was cut off ({}); it is not healed into a call{more}",
                    cut.offset, cut.message
                ),
                offset: Some(cut.offset),
            });
        }
        self.rejected.first().map(|r| r.error.clone())
    }

    /// The value written for this reply: `{"calls", "text", "reasoning", "incomplete"}`.
    pub fn to_value(&self, shape: Shape) -> Value {
        let calls: Vec<Value> = self.calls.iter().map(|c| call_value(c, shape)).collect();
        let incomplete: Vec<Value> = self
            .incomplete
            .iter()
            .map(|i| {
                let mut m = tool_and_id(i.tool.as_ref(), i.id.as_ref());
                m.insert("offset".into(), i.offset.into());
                m.insert("message".into(), i.message.clone().into());
                Value::Object(m)
            })
            .collect();
        // Built by hand: `json!` passes values through `to_value`, which rewrites numbers.
        let mut m = Map::new();
        m.insert("calls".into(), Value::Array(calls));
        m.insert("text".into(), self.text.clone().into());
        m.insert("reasoning".into(), self.reasoning.clone().into());
        m.insert("incomplete".into(), Value::Array(incomplete));
        Value::Object(m)
    }

    /// [`Extracted::to_value`] with the reply's own repairs (a reply that was one JSON string,
    /// unquoted) as `repairs` when there are any, as a call carries its own: what the Python and
    /// Node packages return, the value and the `repairs` of a `calls --records` record in one.
    pub fn to_value_with_repairs(&self, shape: Shape) -> Value {
        let mut value = self.to_value(shape);
        if let (Value::Object(m), false) = (&mut value, self.repairs.is_empty()) {
            m.insert("repairs".into(), repairs_value(&self.repairs));
        }
        value
    }
}

/// The start of an incomplete or rejected call's object: `tool` (null when unknown) and `id`.
fn tool_and_id(tool: Option<&String>, id: Option<&Value>) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(
        "tool".into(),
        tool.cloned().map_or(Value::Null, Value::String),
    );
    if let Some(id) = id {
        m.insert("id".into(), id.clone());
    }
    m
}

impl Extracted {
    /// The value written for a reply that fails: [`Extracted::to_value`] with the calls that
    /// were found but cannot be used, under `rejected` (`tool`, `id`, `parameters`, `code`,
    /// `message` each).
    pub fn failure_value(&self, shape: Shape) -> Value {
        let mut value = self.to_value(shape);
        let rejected: Vec<Value> = self
            .rejected
            .iter()
            .map(|r| {
                let mut m = tool_and_id(r.tool.as_ref(), r.id.as_ref());
                if let Some(p) = &r.parameters {
                    m.insert("parameters".into(), Value::Object(p.clone()));
                }
                m.insert("code".into(), r.error.code.as_str().into());
                m.insert("message".into(), r.error.message.clone().into());
                Value::Object(m)
            })
            .collect();
        if let Value::Object(v) = &mut value {
            v.insert("rejected".into(), rejected.into());
        }
        value
    }
}

fn call_value(call: &Call, shape: Shape) -> Value {
    let mut m = Map::new();
    match shape {
        Shape::Native => {
            m.insert("tool".into(), call.tool.clone().into());
            m.insert("parameters".into(), Value::Object(call.parameters.clone()));
            if let Some(t) = call.terminate {
                m.insert("terminate".into(), t.into());
            }
            if let Some(id) = &call.id {
                m.insert("id".into(), id.clone());
            }
            // Always, an empty list when none: a caller reads `call["repairs"]` without a check.
            m.insert("repairs".into(), repairs_value(&call.repairs));
            if !call.dropped.is_empty() {
                m.insert("dropped".into(), Value::Array(call.dropped.clone()));
            }
        }
        Shape::OpenAi => {
            if let Some(id) = &call.id {
                m.insert("id".into(), id.clone());
            }
            m.insert("name".into(), call.tool.clone().into());
            let text = serde_json::to_string(&call.parameters).unwrap_or_else(|_| "{}".into());
            m.insert("arguments".into(), text.into());
        }
    }
    Value::Object(m)
}

/// The message of a call to a tool the tools list lacks, naming the nearest tool if one is
/// near enough to be a slip (`unknown tool "get_wether" (did you mean "get_weather"?)`).
fn unknown_tool(tool: &str, tools: Option<&Tools>) -> String {
    match tools.and_then(|tools| tools.nearest(tool)) {
        Some(near) => format!("unknown tool {tool:?} (did you mean {near:?}?)"),
        None => format!("unknown tool {tool:?}"),
    }
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
        if message::is_api_shape(&value) {
            return extract_message(&value, options);
        }
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
/// (`--require-terminate`) and as the loop reads it ([`CallOptions::any_envelope_shape`]).
#[derive(Debug, Default, Clone)]
pub(crate) struct EnvelopeCheck {
    pub strict: Option<Error>,
    pub any_shape: Option<Error>,
}

/// A call as a decoder found it, before it is normalized.
#[derive(Debug, Default)]
pub(crate) struct Raw {
    /// The name as written (`None` when the call has none).
    pub name: Option<String>,
    pub id: Option<Value>,
    pub args: Args,
    pub terminate: Option<Value>,
    /// For a JSON object: why it is not the envelope, if it is not. `None` for calls that are
    /// not JSON objects.
    pub envelope: Option<EnvelopeCheck>,
    pub repairs: Vec<Repair>,
    pub offset: usize,
    /// Why the call was cut although its JSON may be whole: the API's stop reason said so.
    pub cut: Option<String>,
    /// Values written in the call that it does not use (see [`Call::dropped`]).
    pub dropped: Vec<Value>,
}

/// A call's arguments as the format wrote them.
#[derive(Debug, Default)]
pub(crate) enum Args {
    /// None were written.
    #[default]
    Missing,
    /// A JSON value (an object, or a string holding JSON, or something wrong).
    Value(Value),
    /// JSON text, to be mended.
    Text(String),
    /// JSON text in a string where the format puts it (OpenAI's `function.arguments`): no
    /// `unquote` repair is reported for it.
    Encoded(String),
    /// Named values of an XML-style or Python-style format.
    Fields(Vec<(String, Field)>),
}

/// One named argument value.
#[derive(Debug)]
pub(crate) enum Field {
    /// Plain text: typed by the schema, else kept as a string.
    Text(String),
    /// Plain text: typed by the schema, else JSON if it parses as JSON, else a string.
    TextOrJson(String),
    /// JSON text (DSML `string="false"`).
    Json(String),
    /// An already typed value.
    Value(Value),
}

/// What one format found in (reasoning-blanked) text.
#[derive(Debug, Default)]
pub(crate) struct Out {
    pub items: Vec<Item>,
    /// Markup to leave out of the text.
    pub cut: Vec<std::ops::Range<usize>>,
    pub repairs: Vec<Repair>,
    /// For Harmony: the text and reasoning, taken from its channels.
    pub text: Option<Vec<String>>,
    pub reasoning: Vec<String>,
    /// Call markers from which no call could be read, each an error (or a cut-off call) with
    /// its span: they count when this format found calls, or when no format found any.
    pub unread: Vec<(Item, std::ops::Range<usize>)>,
}

impl Out {
    /// A call whose arguments are JSON text, found at `span`: the span leaves the reply's text.
    fn text_call(
        &mut self,
        name: &str,
        id: Option<Value>,
        args: &str,
        span: std::ops::Range<usize>,
    ) {
        self.items.push(Item::Call(Raw {
            name: Some(name.to_owned()),
            id,
            args: Args::Text(args.to_owned()),
            offset: span.start,
            ..Raw::default()
        }));
        self.cut.push(span);
    }

    /// A call that was cut off at `offset` (its tool when known): `message` says where.
    fn cut_off(&mut self, tool: Option<String>, offset: usize, message: impl Into<String>) {
        self.items.push(Item::Incomplete(Incomplete {
            tool,
            id: None,
            offset,
            message: message.into(),
        }));
    }
}

/// What a decoder found, in reply order.
#[derive(Debug)]
pub(crate) enum Item {
    Call(Raw),
    Incomplete(Incomplete),
    Failed(Rejected),
}

impl Item {
    /// Where in the reply the item starts.
    pub(crate) fn offset(&self) -> usize {
        match self {
            Item::Call(raw) => raw.offset,
            Item::Incomplete(cut) => cut.offset,
            Item::Failed(rejected) => rejected.error.offset.unwrap_or(0),
        }
    }

    /// The item of a part of the reply that starts `by` bytes into it, its offsets moved
    /// there.
    pub(crate) fn shifted(mut self, by: usize) -> Item {
        match &mut self {
            Item::Call(raw) => {
                raw.offset += by;
                for repair in &mut raw.repairs {
                    repair.offset = repair.offset.map(|o| o + by);
                }
            }
            Item::Incomplete(cut) => cut.offset += by,
            Item::Failed(rejected) => {
                let error = &mut rejected.error;
                if let Some(old) = error.offset {
                    // The message names the offset too (`… at byte 3`).
                    let at = format!(" at byte {old}");
                    if error.message.ends_with(&at) {
                        error.message.truncate(error.message.len() - at.len());
                        error.message.push_str(&format!(" at byte {}", old + by));
                    }
                    error.offset = Some(old + by);
                }
            }
        }
        self
    }

    pub(crate) fn failed(name: Option<String>, error: Error) -> Item {
        Item::Failed(Rejected {
            tool: name,
            id: None,
            parameters: None,
            error,
            violations: Vec::new(),
        })
    }
}

/// Whether the repairs say the text was cut off.
pub(crate) fn truncated(repairs: &[Repair], text: &str) -> bool {
    crate::repair::truncated(repairs, text)
}

/// Normalizes one call and adds it (or its failure) to `found`.
fn finish(raw: Raw, ctx: &Ctx<'_>, found: &mut Extracted) {
    let Raw {
        name,
        id,
        args,
        terminate,
        envelope,
        mut repairs,
        offset,
        cut,
        dropped: mut stray,
    } = raw;
    let reject = |tool: Option<String>, id: Option<Value>, error: Error| Rejected {
        tool,
        id,
        parameters: None,
        error,
        violations: Vec::new(),
    };
    if ctx.options.require_terminate {
        let problem = match &envelope {
            Some(check) if ctx.options.any_envelope_shape => check.any_shape.clone(),
            Some(check) => check.strict.clone(),
            // A call in a model's native format or an API's `tool_calls`: the loop calls it,
            // then goes on.
            None if ctx.options.any_envelope_shape => None,
            None => Some(Error::whole(
                Code::MissingField,
                "the call is not a {\"tool\", \"parameters\", \"terminate\"} JSON object, so it has no \"terminate\" (the envelope requires it)",
            )),
        };
        if let Some(error) = problem {
            found.rejected.push(reject(name, id, error));
            return;
        }
    }
    let Some(written) = name.filter(|n| !n.trim().is_empty()) else {
        let error = match envelope.and_then(|check| check.strict) {
            Some(problem) if problem.code == Code::WrongType => problem,
            _ => Error::at(Code::MissingField, offset, "tool call has no tool name"),
        };
        found.rejected.push(reject(None, id, error));
        return;
    };
    let (tool, name_id) = scan::bare_name(&written);
    let id = id.or(name_id.map(Value::String));
    if let Some(message) = cut {
        found.incomplete.push(Incomplete {
            tool: Some(tool),
            id,
            offset,
            message,
        });
        return;
    }
    let terminate = match terminate {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(b),
        Some(other) => {
            found.rejected.push(reject(
                Some(tool.clone()),
                id,
                Error::whole(
                    Code::WrongType,
                    format!(
                        "\"terminate\" of the call to {tool:?} must be true or false, found {}",
                        kind_of(&other)
                    ),
                ),
            ));
            return;
        }
    };
    let definition = ctx.tools.map(|tools| tools.get(&tool));
    if let Some(None) = definition {
        found.rejected.push(reject(
            Some(tool.clone()),
            id,
            Error::at(Code::UnknownTool, offset, unknown_tool(&tool, ctx.tools)),
        ));
        return;
    }
    let definition = definition.flatten();
    let objects = match arguments(args, &tool, definition, ctx, &mut repairs) {
        Ok(Some(objects)) => objects,
        Ok(None) => {
            found.incomplete.push(Incomplete {
                tool: Some(tool),
                id,
                offset,
                message: "its arguments end before their JSON does".into(),
            });
            return;
        }
        Err(error) => {
            found.rejected.push(reject(Some(tool), id, error));
            return;
        }
    };
    // Concatenated argument objects: a read-only tool gets one call per object; any other
    // tool keeps the first and reports the rest as dropped (seed 003's safety rule).
    let mut objects = objects.into_iter();
    let first = objects.next().unwrap_or_default();
    let rest: Vec<Map<String, Value>> = objects.collect();
    let split = definition.is_some_and(|t| t.read_only);
    let mut calls = vec![(first, id)];
    let mut dropped = std::mem::take(&mut stray);
    if split {
        calls.extend(rest.into_iter().map(|o| (o, None)));
    } else {
        dropped.extend(rest.into_iter().map(Value::Object));
    }
    for (i, (mut parameters, id)) in calls.into_iter().enumerate() {
        let mut call_repairs = if i == 0 {
            std::mem::take(&mut repairs)
        } else {
            Vec::new()
        };
        if let Some(definition) = definition {
            // Coercion to the schema is a repair, so --strict only checks.
            let coerce = !ctx.options.strict;
            if let Err(violations) = definition.check(&mut parameters, coerce, &mut call_repairs) {
                let listed: Vec<String> = violations.iter().map(ToString::to_string).collect();
                found.rejected.push(Rejected {
                    tool: Some(tool.clone()),
                    id,
                    error: Error::whole(
                        Code::InvalidParameters,
                        format!(
                            "parameters of {tool:?} do not match its schema: {}",
                            listed.join("; ")
                        ),
                    ),
                    parameters: Some(parameters),
                    violations,
                });
                continue;
            }
        }
        found.calls.push(Call {
            tool: tool.clone(),
            parameters,
            terminate,
            id,
            repairs: call_repairs,
            dropped: if i == 0 {
                std::mem::take(&mut dropped)
            } else {
                Vec::new()
            },
        });
    }
}

/// The argument objects of a call (several when they were concatenated); `None` when the
/// arguments were cut off.
fn arguments(
    args: Args,
    tool: &str,
    definition: Option<&Tool>,
    ctx: &Ctx<'_>,
    repairs: &mut Vec<Repair>,
) -> Result<Option<Vec<Map<String, Value>>>, Error> {
    // Arguments written as a JSON string where an object belongs were encoded once more.
    let mut encoded = false;
    let text = match args {
        Args::Missing | Args::Value(Value::Null) => return Ok(Some(vec![Map::new()])),
        Args::Value(Value::Object(map)) => return Ok(Some(vec![map])),
        Args::Value(Value::String(text)) => {
            encoded = true;
            text
        }
        Args::Text(text) | Args::Encoded(text) => text,
        Args::Value(other) => {
            return Err(Error::whole(
                Code::WrongType,
                format!(
                    "arguments of the call to {tool:?} must be an object, found {}",
                    kind_of(&other)
                ),
            ));
        }
        Args::Fields(fields) => {
            if let Some(objects) = wrapped_arguments(&fields, definition, ctx, repairs) {
                return Ok(Some(objects));
            }
            let mut map = Map::new();
            for (key, field) in fields {
                let schema = definition.and_then(|t| t.param_schema(&key));
                let value = typed(field, schema, &key, ctx, repairs);
                map.insert(key, value);
            }
            return Ok(Some(vec![map]));
        }
    };
    let trimmed = text.trim();
    if trimmed.is_empty() || trimmed == "null" {
        return Ok(Some(vec![Map::new()]));
    }
    let mut mender = ctx.value_mender(Target::Object, Concat::All);
    match mender.mend_value(&text) {
        Ok(mended) => {
            if truncated(mended.repairs, &text) {
                return Ok(None);
            }
            let start = repairs.len();
            repairs.extend_from_slice(mended.repairs);
            if encoded && !text.trim().is_empty() {
                match repairs[start..]
                    .iter_mut()
                    .find(|r| r.kind == RepairKind::Unquote)
                {
                    Some(unquote) => unquote.layers = Some(unquote.layers.unwrap_or(0) + 1),
                    None => repairs.insert(
                        start,
                        Repair {
                            kind: RepairKind::Unquote,
                            offset: None,
                            layers: Some(1),
                            text: None,
                            path: None,
                        },
                    ),
                }
            }
            let parts = match mended.value {
                Ok(Value::Array(parts)) => parts,
                Ok(other) => vec![other],
                Err(e) => {
                    return Err(Error {
                        message: format!("arguments of {tool:?}: {}", e.message),
                        ..e
                    });
                }
            };
            let objects = parts
                .into_iter()
                .map(|part| match part {
                    Value::Object(map) => Ok(map),
                    other => Err(Error::whole(
                        Code::NotAnObject,
                        format!(
                            "arguments of {tool:?} must be an object, found {}",
                            kind_of(&other)
                        ),
                    )),
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Some(objects))
        }
        Err(error) => {
            let starts = trimmed.starts_with(['{', '[']);
            if starts && scan::json_extent(trimmed, 0).is_none() {
                return Ok(None);
            }
            Err(Error {
                code: error.code,
                message: format!("arguments of the call to {tool:?}: {}", error.message),
                offset: error.offset,
            })
        }
    }
}

/// The argument objects of a call whose only named value is `arguments` holding a JSON object
/// (`<parameter name="arguments">{…}</parameter>`), when the tool's schema has no `arguments`
/// property: the model wrapped its arguments. Without a schema the name is kept as written.
fn wrapped_arguments(
    fields: &[(String, Field)],
    definition: Option<&Tool>,
    ctx: &Ctx<'_>,
    repairs: &mut Vec<Repair>,
) -> Option<Vec<Map<String, Value>>> {
    let [(key, field)] = fields else {
        return None;
    };
    if key != "arguments" || definition?.param_schema(key).is_some() {
        return None;
    }
    let unwrap = Repair {
        kind: RepairKind::UnwrapArguments,
        offset: None,
        layers: None,
        text: None,
        path: None,
    };
    let text = match field {
        Field::Value(Value::Object(map)) => {
            repairs.push(unwrap);
            return Some(vec![map.clone()]);
        }
        Field::Value(Value::String(text))
        | Field::Text(text)
        | Field::TextOrJson(text)
        | Field::Json(text) => text,
        Field::Value(_) => return None,
    };
    if !text.trim_start().starts_with(['{', '"']) {
        return None;
    }
    let mut mender = ctx.value_mender(Target::Object, Concat::All);
    let mended = mender.mend_value(text).ok()?;
    // Deeper than serde_json's limit is no object here, as when serde_json read it.
    if truncated(mended.repairs, text) || mended.deepest > formats::SERDE_DEPTH {
        return None;
    }
    // An array of objects (`Target::Object`, `Concat::All`).
    let Ok(Value::Array(parts)) = mended.value else {
        return None;
    };
    let objects = parts
        .into_iter()
        .map(|part| match part {
            Value::Object(map) => Some(map),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    repairs.push(unwrap);
    repairs.extend_from_slice(mended.repairs);
    Some(objects)
}

/// A named value of an XML-style format, given the type its schema declares. The schema
/// decides and nothing else: a value typed `string` stays the text the model wrote (`"42"`),
/// one typed `integer` becomes a number; `null` is read only where the schema allows it. With
/// no type in the schema the field's own default holds (see [`Field`]).
fn typed(
    field: Field,
    schema: Option<&Value>,
    key: &str,
    ctx: &Ctx<'_>,
    repairs: &mut Vec<Repair>,
) -> Value {
    let types = schema.map(schema_types).unwrap_or_default();
    let mut coerced = |value: Value| {
        repairs.push(Repair {
            kind: RepairKind::SchemaType,
            offset: None,
            layers: None,
            text: Some(key.to_owned()),
            path: None,
        });
        value
    };
    let (text, json) = match field {
        Field::Value(value) => return value,
        Field::Json(text) => {
            let value = crate::args::repair_value(&text, ctx.options.nesting());
            (text, value)
        }
        Field::Text(text) => (text, None),
        Field::TextOrJson(text) => {
            let value = if types.is_empty() {
                ctx.value(text.trim()).ok()
            } else {
                None
            };
            (text, value)
        }
    };
    if types.is_empty() {
        return json.unwrap_or(Value::String(text));
    }
    // JSON the format marked as such (DSML `string="false"`) stands when its type is allowed.
    if let Some(value) = &json
        && types.iter().any(|t| fits(value, t))
    {
        return json.unwrap_or_default();
    }
    // JSON of another type than the schema's: its text is read again, as the schema says.
    let retyped = json.as_ref().is_some_and(|v| !v.is_string());
    let text = match json {
        Some(Value::String(decoded)) => decoded,
        _ => text,
    };
    if let Some(member) = schema.and_then(|s| enum_member(s, &text)) {
        return if member.is_string() {
            member
        } else {
            coerced(member)
        };
    }
    if types.contains(&"null") && matches!(text.trim(), "null" | "None") {
        return coerced(Value::Null);
    }
    if types.contains(&"string") {
        return if retyped {
            coerced(Value::String(text))
        } else {
            Value::String(text)
        };
    }
    for t in &types {
        if let Some(value) = convert(&text, t, ctx.options.nesting()) {
            return coerced(value);
        }
    }
    Value::String(text)
}

pub(crate) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

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
