//! Streamed replies as inference servers send them: server-sent events (`--input sse`) or one
//! JSON value per line (`--input jsonl`), turned into [`Stream`] input.
//!
//! Each event's data (or each line) is one of:
//! - an OpenAI text-completions chunk (`/v1/completions`: `choices[0].text`);
//! - an OpenAI chat-completions chunk (`choices[0].delta`: `content` (a string, or a list of
//!   `text` and `thinking` parts as Mistral's reasoning models send), `reasoning_content` or
//!   `reasoning`, `tool_calls[].{index, id, function.{name, arguments}}`, the older
//!   `function_call`), as OpenAI, vLLM, llama.cpp, SGLang, LM Studio and Ollama's `/v1` send;
//! - an Anthropic Messages event (`content_block_start` with a `text`, `thinking` or
//!   `tool_use` block; `content_block_delta` with `text_delta`, `thinking_delta` or
//!   `input_json_delta`; `message_delta` with its `stop_reason`; `error`);
//! - an Ollama `/api/chat` line (`message.{content, thinking, tool_calls}`, `done_reason`),
//!   or `/api/generate` line (`response`, `thinking`, `done_reason`);
//! - an Amazon Bedrock `ConverseStream` event as the AWS SDKs give it (`contentBlockStart` with
//!   a `toolUse`, `contentBlockDelta` with `text`, `toolUse.input` or `reasoningContent.text`,
//!   `messageStop` with its `stopReason`, exception events), or a Cohere v2 chat event
//!   (`content-delta`, `tool-plan-delta`, `tool-call-start`, `tool-call-delta`, `message-end`);
//! - a Gemini `streamGenerateContent` chunk (`candidates[0].content.parts[]`: `text`, `thought`
//!   text, `functionCall {name, args}`; `finishReason`);
//! - an OpenAI Responses event (`response.output_text.delta`, `response.reasoning_*.delta`,
//!   `response.output_item.added` with a `function_call` item,
//!   `response.function_call_arguments.delta`, the whole arguments in `.done` and
//!   `response.output_item.done` (what the deltas did not give), `response.incomplete`,
//!   `response.failed`);
//! - an error chunk a server sends when it fails mid-stream: `{"error": {"message", ...}}`
//!   (OpenAI, vLLM, Gemini) or `{"error": "..."}` (Ollama);
//! - a Hugging Face TGI `/generate_stream` chunk (`token.text`);
//! - a JSON string, or an object with a `text`, `content` or `delta` string (text), or a
//!   `reasoning` / `reasoning_content` / `thinking` string (llama.cpp's `/completion` chunks).
//!
//! - a whole response (`super::whole_chunk`: Anthropic, Responses, Bedrock, Hugging Face,
//!   Cloudflare; the others above read whole as they read a chunk), as a server that ignores
//!   `"stream": true` sends it: under SSE, lines of JSON with no `data:` field are its data.
//!
//! `data: [DONE]`, comments, pings, usage-only chunks and the other events carry no reply
//! text and are skipped. A line that is not JSON, an `error` event or an error chunk ends the
//! reply with `invalid_input` ("the server sent an error: ...").

use serde_json::Value;

use super::api_events;
use super::api_shapes::{REASONING_KEYS, failed_generation, server_error};
use super::call_keys::CallKeys;
use super::delta::{Delta, arguments_of, in_order, push_reasoning, push_text, stop, str_at};
use super::sse_data::{DataScan, SSE_FIELDS};
use super::stream::{Event, Stream};
use crate::error::{Code, Error};

/// How deltas are framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeltaFraming {
    /// Server-sent events: `data:` lines, events separated by a blank line.
    Sse,
    /// One JSON value per line.
    Jsonl,
}

/// Reads framed deltas into a [`Stream`]: line by line ([`Deltas::line`]), as text cut
/// anywhere ([`Deltas::text`]), or one parsed chunk at a time ([`Deltas::chunk`], what the
/// packages give it). Every surface reads a server's chunks here, by one rule:
///
/// - `function_call` (the legacy field) is read only while no `tool_calls` were given: servers
///   that fill both for old clients wrote one call;
/// - pieces that carry a call id already seen continue that call, whatever their index or
///   content block (LiteLLM sends one Anthropic block per fragment, each with the call's id);
///   a new id with a name where a named call is starts another call (Gemini gives no index,
///   some proxies index 0 to every call), as does another name or whole arguments once the
///   call has arguments (see `CallKeys::key`); a new id without a name continues the call;
/// - the stop reason (`finish_reason`, `stop_reason`, `done_reason`, `finishReason`,
///   `incomplete_details.reason`) goes to [`Stream::stop_reason`]: a cut output makes the
///   call written last incomplete, as `calls` says of the whole response.
///
/// ```
/// use toolmend_core::calls::{CallOptions, DeltaFraming, Deltas, Event, Stream};
///
/// let mut stream = Stream::new(CallOptions::default());
/// let mut deltas = Deltas::new(DeltaFraming::Sse);
/// let sse = r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}
///
/// data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": \"Oslo\"}"}}]}}]}
///
/// data: [DONE]
/// "#;
/// let mut events = Vec::new();
/// for line in sse.lines() {
///     events.extend(deltas.line(line, &mut stream).unwrap());
/// }
/// events.extend(stream.finish());
/// assert!(events.iter().any(|e| matches!(e, Event::CallEnd { call, .. } if call.parameters["city"] == "Oslo")));
/// ```
#[derive(Debug)]
pub struct Deltas {
    framing: DeltaFraming,
    /// The `data:` lines of the event being read.
    data: String,
    has_data: bool,
    /// `data` came from lines of JSON with no `data:` field (a server that ignored
    /// `"stream": true` and sent its whole response, pretty-printed or not).
    raw: bool,
    /// Whether `data` may be whole JSON yet, scanned as it comes.
    scan: DataScan,
    /// What the `event:` field named the event being read.
    named: Named,
    line: u64,
    done: bool,
    /// [`Deltas::text`]: the line not yet ended, and whether the text so far ended with a CR
    /// (a LF that starts the next piece ends the same line).
    partial: String,
    after_cr: bool,
    keys: CallKeys,
}

/// What an SSE event's `event:` field named it, where the name says how to read its data.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Named {
    /// `error`: the data is the server's error.
    Error,
    /// `output` (Replicate's stream): the data is a piece of the reply's text, not JSON.
    Output,
    /// `done` (Replicate's stream): the reply ended, its data perhaps saying why.
    Done,
    /// `logs` (Replicate's stream): the model's log lines, text, no part of the reply.
    Logs,
    /// Any other name, or none: the data is JSON (or `[DONE]`).
    #[default]
    Other,
}

impl Named {
    fn of(name: &str) -> Named {
        match name {
            "error" => Named::Error,
            "output" => Named::Output,
            "done" => Named::Done,
            "logs" => Named::Logs,
            _ => Named::Other,
        }
    }
}

impl Deltas {
    /// A reader of deltas framed this way.
    pub fn new(framing: DeltaFraming) -> Deltas {
        Deltas {
            framing,
            data: String::new(),
            has_data: false,
            raw: false,
            scan: DataScan::default(),
            named: Named::Other,
            line: 0,
            done: false,
            partial: String::new(),
            after_cr: false,
            keys: CallKeys::default(),
        }
    }

    /// Reads a piece of the framed text, cut anywhere: lines end with LF, CRLF or a bare CR
    /// (all three are SSE line ends).
    ///
    /// # Errors
    /// As [`Deltas::line`].
    pub fn text(&mut self, mut text: &str, stream: &mut Stream) -> Result<Vec<Event>, Error> {
        let mut events = Vec::new();
        if self.after_cr && !text.is_empty() {
            self.after_cr = false;
            text = text.strip_prefix('\n').unwrap_or(text);
        }
        while let Some(at) = text.find(['\n', '\r']) {
            let mut line = std::mem::take(&mut self.partial);
            line.push_str(&text[..at]);
            let crlf = text[at..].starts_with("\r\n");
            let cr_at_end = &text[at..] == "\r";
            text = &text[at + if crlf { 2 } else { 1 }..];
            if cr_at_end {
                self.after_cr = true;
            }
            events.extend(self.line(&line, stream)?);
        }
        self.partial.push_str(text);
        Ok(events)
    }

    /// Reads one line (without its line break; a trailing `\r` is dropped).
    ///
    /// # Errors
    /// `invalid_input` for data that is not JSON or an `error` event; the caller should end
    /// the reply with [`Stream::abort`].
    pub fn line(&mut self, line: &str, stream: &mut Stream) -> Result<Vec<Event>, Error> {
        self.line += 1;
        let line = line.strip_suffix('\r').unwrap_or(line);
        if self.done {
            return Ok(Vec::new());
        }
        match self.framing {
            DeltaFraming::Jsonl => {
                if self.has_data {
                    // A value opened on an earlier line (a body pretty-printed, as `jq .`
                    // writes it): read when its brackets close, as the SSE reader reads one.
                    self.data.push('\n');
                    self.data.push_str(line);
                    self.scan.push("\n");
                    self.scan.push(line);
                    if self.scan.open() {
                        return Ok(Vec::new());
                    }
                    let data = self.take_data();
                    return self.value(&data, stream);
                }
                if line.trim().is_empty() {
                    return Ok(Vec::new());
                }
                if let Ok(value) = crate::exact::parse(line, stream.options().nesting()) {
                    return self.decoded(&value, stream, "line");
                }
                // A bracket alone opens a pretty-printed value (every pretty printer writes
                // its first line so); a line cut short is an error at once, as before.
                if matches!(line.trim(), "{" | "[") {
                    self.data.push_str(line);
                    self.has_data = true;
                    self.scan = DataScan::default();
                    self.scan.push(line);
                    return Ok(Vec::new());
                }
                self.value(line, stream)
            }
            DeltaFraming::Sse => {
                // A line that opens a JSON value is no SSE field: the server sent JSON
                // without its `data:` (its whole response), and it is read as data, with the
                // lines that continue it; white space between them is the JSON's own.
                let raw = line.starts_with(['{', '['])
                    || (self.raw && self.has_data && !is_sse_field(line));
                if line.is_empty() && !raw {
                    return self.dispatch(stream);
                }
                let data = match line.strip_prefix("data:") {
                    _ if raw => line,
                    Some(data) => data.strip_prefix(' ').unwrap_or(data),
                    None => {
                        // llama.cpp's server sends a failure in a field of its own
                        // (`error: {"code": 400, "message": …}`), and other servers name the
                        // event (`event: error`, its data the error).
                        if let Some(said) = line.strip_prefix("error:") {
                            return Err(self.server_error(said.trim()));
                        }
                        if let Some(name) = line.strip_prefix("event:") {
                            self.named = Named::of(name.trim());
                        }
                        // `id:`, `retry:`, other events and `:` comments say nothing of the reply.
                        return Ok(Vec::new());
                    }
                };
                self.raw |= raw;
                if self.has_data {
                    self.data.push('\n');
                    self.scan.push("\n");
                }
                self.data.push_str(data);
                self.has_data = true;
                if matches!(self.named, Named::Output | Named::Done | Named::Logs) {
                    // Read whole at the blank line (text, whose lines it ends; or the end).
                    return Ok(Vec::new());
                }
                self.scan.push(data);
                self.whole_data(stream)
            }
        }
    }

    /// The input ended: a line not yet ended, and an event not yet closed by a blank line,
    /// are read.
    ///
    /// # Errors
    /// As [`Deltas::line`].
    pub fn end(&mut self, stream: &mut Stream) -> Result<Vec<Event>, Error> {
        let mut events = Vec::new();
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            events.extend(self.line(&line, stream)?);
        }
        match self.framing {
            DeltaFraming::Sse => events.extend(self.dispatch(stream)?),
            // A value still open at the end: its error (it is not JSON).
            DeltaFraming::Jsonl if self.has_data => {
                let data = self.take_data();
                events.extend(self.value(&data, stream)?);
            }
            DeltaFraming::Jsonl => {}
        }
        Ok(events)
    }

    /// Reads one chunk given as JSON text (what the packages' `feed_chunk` hands over), as
    /// [`Deltas::chunk`]; text that is not JSON ends the reply with `invalid_input`.
    pub fn chunk_text(&mut self, text: &str, stream: &mut Stream) -> Vec<Event> {
        match super::message::server_json(text, "chunk") {
            Ok(chunk) => self.chunk(&chunk, stream),
            Err(error) => stream.abort(error),
        }
    }

    /// Reads one chunk already parsed (an OpenAI `ChatCompletionChunk` as a dict, an
    /// Anthropic event, an Ollama line, …: the values the module doc lists). A chunk that is
    /// an error ends the reply with it ([`Stream::abort`]): the events returned then end with
    /// `end`.
    pub fn chunk(&mut self, chunk: &Value, stream: &mut Stream) -> Vec<Event> {
        self.line += 1;
        match self.decoded(chunk, stream, "chunk") {
            Ok(events) => events,
            Err(error) => stream.abort(error),
        }
    }

    /// After a `data:` line: data that is already a whole JSON value (or `[DONE]`) is read
    /// at once. No later `data:` line of the same event could make it valid JSON (a JSON text
    /// is one value), so this reads every event the blank line would, with no wait for that
    /// line; and a server or proxy that leaves the blank line out between events (`data:`
    /// after `data:`, which would join into data that is not JSON) is read event by event.
    /// Data that is not whole yet (JSON split over several `data:` lines) waits for more; it
    /// is parsed only when [`DataScan`] says it may be whole, so each byte is read once.
    fn whole_data(&mut self, stream: &mut Stream) -> Result<Vec<Event>, Error> {
        if self.data.trim() == "[DONE]" {
            return self.dispatch(stream);
        }
        if !self.scan.may_be_whole() {
            return Ok(Vec::new());
        }
        match crate::exact::parse(&self.data, stream.options().nesting()) {
            Ok(value) => {
                // Cleared, not taken: the next event's data reuses the buffer.
                self.data.clear();
                self.data_read();
                if std::mem::take(&mut self.named) == Named::Error {
                    // The data was parsed already: its words, not a second parse.
                    let words = words_of(Some(&value), &value.to_string());
                    return Err(self.placed(words));
                }
                self.decoded(&value, stream, "line")
            }
            Err(_) => {
                self.scan.failed();
                Ok(Vec::new())
            }
        }
    }

    /// The data gathered for the value or event being read, now read: none is gathered.
    fn data_read(&mut self) {
        self.has_data = false;
        self.raw = false;
        self.scan = DataScan::default();
    }

    /// The data gathered, taken to be read ([`Deltas::data_read`]).
    fn take_data(&mut self) -> String {
        self.data_read();
        std::mem::take(&mut self.data)
    }

    fn dispatch(&mut self, stream: &mut Stream) -> Result<Vec<Event>, Error> {
        if !self.has_data {
            // The event's name ends with it, data or none (`event: output` then a blank line
            // names nothing after it).
            self.named = Named::Other;
            return Ok(Vec::new());
        }
        let data = self.take_data();
        match std::mem::take(&mut self.named) {
            Named::Error if !data.trim().is_empty() => return Err(self.server_error(data.trim())),
            // Replicate's `output` event: its data is the text as it is, lines and all.
            Named::Output => return self.decoded(&Value::String(data), stream, "line"),
            Named::Logs => return Ok(Vec::new()),
            // Replicate's `done` event (`{}`, or `{"reason": "canceled"}`): the end, and
            // whether the prediction was stopped before it.
            Named::Done => {
                if let Ok(Value::Object(end)) = serde_json::from_str::<Value>(&data)
                    && end.keys().all(|k| k == "reason")
                {
                    if let Some(reason) = end.get("reason").and_then(Value::as_str) {
                        stream.stop_reason("reason", reason);
                    }
                    self.done = true;
                    return Ok(Vec::new());
                }
            }
            _ => {}
        }
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(Vec::new());
        }
        // An event with empty data (a keep-alive some proxies send) carries nothing.
        if data.trim().is_empty() {
            return Ok(Vec::new());
        }
        self.value(&data, stream)
    }

    /// The `invalid_input` error for what a server sent as its error (`said`: JSON or text).
    fn server_error(&self, said: &str) -> Error {
        self.placed(error_words(said))
    }

    /// `invalid_input` with `words`, at the line being read.
    fn placed(&self, words: String) -> Error {
        Error::whole(Code::InvalidInput, format!("line {}: {words}", self.line))
    }

    fn value(&mut self, text: &str, stream: &mut Stream) -> Result<Vec<Event>, Error> {
        // Numbers as the server wrote them (arguments sent whole as an object keep `1E5`).
        let max_nesting = stream.options().nesting();
        let value = crate::exact::parse(text, max_nesting).map_err(|e| {
            // serde_json's words where it fails too (the messages users know), as `calls` does.
            let why = match serde_json::from_str::<serde::de::IgnoredAny>(text) {
                Err(serde) => serde.to_string(),
                Ok(_) => e.into_error(max_nesting).message,
            };
            Error::whole(
                Code::InvalidInput,
                format!("line {}: the streamed delta is not JSON: {why}", self.line),
            )
        })?;
        self.decoded(&value, stream, "line")
    }

    /// Feeds the pieces of one value; `unit` names what [`Deltas::line`] counts in errors.
    fn decoded(
        &mut self,
        value: &Value,
        stream: &mut Stream,
        unit: &str,
    ) -> Result<Vec<Event>, Error> {
        let mut events = Vec::new();
        let deltas = decode(value).map_err(|message| {
            Error::whole(
                Code::InvalidInput,
                format!("{unit} {}: {message}", self.line),
            )
        })?;
        if deltas
            .iter()
            .any(|d| matches!(d, Delta::Call { legacy: false, .. }))
        {
            self.keys.tool_calls = true;
        }
        for delta in deltas {
            match delta {
                Delta::Text(t) => events.extend(stream.feed(&t)),
                Delta::BlockText(t) => {
                    stream.text_after_calls();
                    events.extend(stream.feed(&t));
                }
                Delta::Reasoning(t) => events.extend(stream.feed_reasoning(&t)),
                Delta::Stop { field, reason } => stream.stop_reason(field, &reason),
                Delta::Dropped(why) => stream.dropped_call(why),
                Delta::Cut(why) => stream.cut_output(why),
                Delta::Refused { text, said } => {
                    // The whole reply, refused: read only where nothing of it came before.
                    if !stream.refused_generation(&said) {
                        return Err(Error::whole(
                            Code::InvalidInput,
                            format!(
                                "{unit} {}: {}",
                                self.line,
                                super::message::refused_words(&said)
                            ),
                        ));
                    }
                    events.extend(stream.feed(&text));
                }
                Delta::Call { legacy: true, .. } if self.keys.tool_calls => {}
                Delta::More { index, arguments } => {
                    if let Some(key) = self.keys.started(index) {
                        self.keys.calls[key].arguments += arguments.len();
                        events.extend(stream.feed_call(key, None, None, &arguments));
                    }
                }
                Delta::Done { index, arguments } => {
                    // What the deltas did not give (all of it, from a server that sends the
                    // arguments only when they are done).
                    if let Some(key) = self.keys.started(index) {
                        let given = &mut self.keys.calls[key].arguments;
                        if let Some(rest) = arguments.get(*given..).filter(|r| !r.is_empty()) {
                            *given = arguments.len();
                            events.extend(stream.feed_call(key, None, None, rest));
                        }
                    }
                }
                Delta::Call {
                    index,
                    id,
                    name,
                    arguments,
                    whole,
                    ..
                } => {
                    let key = self.keys.key(index, id.as_deref(), name.as_deref(), whole);
                    // A piece that names its call again (a block of the same call id) adds
                    // nothing to the name.
                    let given = &mut self.keys.calls[key];
                    let name = name.filter(|n| !n.is_empty() && *n != given.name);
                    if let Some(name) = &name {
                        given.name.push_str(name);
                    }
                    given.arguments += arguments.len();
                    given.whole |= whole;
                    events.extend(stream.feed_call(key, id.as_deref(), name.as_deref(), &arguments))
                }
            }
        }
        Ok(events)
    }
}

/// The server's words for an error it sent as `said` (an error object, its `message`, a JSON
/// string or plain text), as [`server_error`] words the errors of API shapes.
fn error_words(said: &str) -> String {
    words_of(serde_json::from_str::<Value>(said).ok().as_ref(), said)
}

/// [`error_words`] of data already parsed (`value`, or `None` for text that is not JSON).
fn words_of(value: Option<&Value>, said: &str) -> String {
    let message = match value {
        Some(Value::Object(map)) => match server_error(map) {
            Some(words) => return words,
            None => map
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| said.to_owned(), str::to_owned),
        },
        Some(Value::String(text)) => text.clone(),
        _ => said.to_owned(),
    };
    let message = if message.is_empty() {
        "no message"
    } else {
        &message
    };
    format!("the server sent an error: {message}")
}

/// Whether `line` is an SSE field a server sends (`data`, `event`, `id`, `retry`, with or
/// without a value) or a `:` comment.
fn is_sse_field(line: &str) -> bool {
    line.starts_with(':')
        || SSE_FIELDS.iter().any(|field| {
            line.strip_prefix(field)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(':'))
        })
}

/// The pieces of reply in one streamed value (see the module doc); `Err` for an error event.
fn decode(value: &Value) -> Result<Vec<Delta>, String> {
    // A server that fails says so in a chunk of its own (OpenRouter beside its last
    // `choices`): the reply is not whole.
    if let Value::Object(map) = value {
        if let Some((text, said)) = failed_generation(map) {
            return Ok(vec![Delta::Refused {
                text: text.into_owned(),
                said: said.to_owned(),
            }]);
        }
        if let Some(why) = server_error(map) {
            return Err(why);
        }
    }
    // A whole response no stream sends in pieces (a server that ignored `"stream": true`).
    if let Some(mut pieces) = super::whole_chunk::whole_response(value) {
        in_order(&mut pieces);
        return Ok(pieces);
    }
    let mut out = Vec::new();
    match value {
        Value::String(s) => push_text(&mut out, Some(s)),
        Value::Object(map) => {
            if let Some(found) = api_events::converse(map) {
                return found.map(|mut pieces| {
                    in_order(&mut pieces);
                    pieces
                });
            } else if let Some(choices) = map.get("choices").and_then(Value::as_array) {
                // `n` > 1 streams several replies at once; the first is the reply.
                let first = choices
                    .iter()
                    .find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0);
                if let Some(delta) = first.and_then(|c| c.get("delta").or_else(|| c.get("message")))
                {
                    api_events::message_delta(delta, &mut out);
                } else {
                    // A text completion (`/v1/completions`): the choice's `text`, as whole.
                    push_text(&mut out, first.and_then(|c| str_at(c, "text")));
                }
                stop(
                    &mut out,
                    "finish_reason",
                    first.and_then(|c| c.get("finish_reason")),
                );
            } else if let Some(candidates) = map.get("candidates").and_then(Value::as_array) {
                // Gemini: each chunk a response with the first candidate's new parts.
                let first = candidates
                    .iter()
                    .find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0);
                let parts = first
                    .and_then(|c| c.pointer("/content/parts"))
                    .and_then(Value::as_array);
                for part in parts.into_iter().flatten() {
                    if let Some(call) = part.get("functionCall") {
                        out.push(Delta::Call {
                            index: None,
                            id: str_at(call, "id").map(str::to_owned),
                            name: str_at(call, "name").map(str::to_owned),
                            arguments: arguments_of(call.get("args")),
                            whole: true,
                            legacy: false,
                        });
                    } else if part.get("thought").and_then(Value::as_bool) == Some(true) {
                        push_reasoning(&mut out, str_at(part, "text"));
                    } else {
                        push_text(&mut out, str_at(part, "text"));
                    }
                }
                stop(
                    &mut out,
                    "finishReason",
                    first.and_then(|c| c.get("finishReason")),
                );
                in_order(&mut out);
                if let Some(why) = first.and_then(|c| {
                    let reason = str_at(c, "finishReason")?;
                    super::stop_reasons::dropped_by(
                        "finishReason",
                        reason,
                        str_at(c, "finishMessage"),
                    )
                }) {
                    out.push(Delta::Dropped(why));
                }
            } else if let Some(kind) = str_at(value, "type") {
                if let Some(found) = api_events::cohere(kind, map) {
                    return found;
                }
                api_events::typed_event(kind, map, &mut out)?;
                in_order(&mut out);
            } else if let Some(message) = map.get("message").filter(|m| m.is_object()) {
                // Ollama's `/api/chat` line; Cohere's whole response (`finish_reason`).
                api_events::message_delta(message, &mut out);
                stop(&mut out, "done_reason", map.get("done_reason"));
                stop(&mut out, "finish_reason", map.get("finish_reason"));
            } else if let Some(text) = super::api_shapes::ollama_generate(map) {
                // Ollama's `/api/generate`: `response` a line, `thinking` beside it.
                push_reasoning(&mut out, str_at(value, "thinking"));
                push_text(&mut out, Some(text));
                stop(&mut out, "done_reason", map.get("done_reason"));
            } else if let Some(token) = map.get("token").filter(|t| t.is_object()) {
                // Hugging Face TGI's `/generate_stream`: a token a chunk (its special tokens
                // are not text); the last chunk's `generated_text` repeats the whole reply.
                if token.get("special").and_then(Value::as_bool) != Some(true) {
                    push_text(&mut out, str_at(token, "text"));
                }
            } else if let Some(token) = map.get("token").and_then(Value::as_str) {
                // KoboldCpp's `/api/extra/generate/stream`: `{"token": "…"}`.
                push_text(&mut out, Some(token));
            } else if let Some(text) = super::api_shapes::first_result_text(map) {
                // IBM watsonx.ai's `generation_stream`: `results[0].generated_text` a chunk.
                push_text(&mut out, Some(text));
            } else if ["role", "tool_calls", "function_call"]
                .iter()
                .any(|k| map.contains_key(*k))
            {
                // An assistant message (or its delta) alone: its calls as well as its text.
                api_events::message_delta(value, &mut out);
            } else {
                // (`response`: Cloudflare Workers AI's stream, its text a chunk.)
                for key in ["text", "content", "delta", "response"] {
                    push_text(&mut out, str_at(value, key));
                }
                // The first reasoning key, as in a whole message (servers that fill two
                // send the same text twice).
                push_reasoning(
                    &mut out,
                    REASONING_KEYS.iter().find_map(|key| str_at(value, key)),
                );
            }
        }
        _ => {}
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A chunk given as text reads as the parsed chunk; text that is not JSON ends the reply.
    #[test]
    fn chunk_text_reads_as_the_parsed_chunk() {
        let chunk = json!({"choices": [{"index": 0, "delta": {"content": "Hi"}}]});
        let (mut a, mut b) = (
            Deltas::new(DeltaFraming::Jsonl),
            Deltas::new(DeltaFraming::Jsonl),
        );
        let mut sa = Stream::new(crate::calls::CallOptions::default());
        let mut sb = Stream::new(crate::calls::CallOptions::default());
        assert_eq!(
            a.chunk_text(&chunk.to_string(), &mut sa),
            b.chunk(&chunk, &mut sb)
        );
        assert_eq!(sa.finish(), sb.finish());
        let mut broken = Stream::new(crate::calls::CallOptions::default());
        let events = Deltas::new(DeltaFraming::Jsonl).chunk_text("{nope", &mut broken);
        assert!(
            matches!(broken.result(), Some(Err(f)) if f.error.message.starts_with("the chunk is not JSON")),
            "{events:?}"
        );
    }

    #[test]
    fn openai_chunks() {
        let chunk = json!({"choices": [{"index": 0, "delta": {"reasoning_content": "hm", "content": "Hi",
            "tool_calls": [{"index": 1, "id": "c", "function": {"name": "f", "arguments": "{\""}}]}}]});
        assert_eq!(
            decode(&chunk).unwrap(),
            vec![
                Delta::Reasoning("hm".into()),
                Delta::Text("Hi".into()),
                Delta::Call {
                    index: Some(1),
                    id: Some("c".into()),
                    name: Some("f".into()),
                    arguments: "{\"".into(),
                    whole: false,
                    legacy: false,
                }
            ]
        );
        assert!(
            decode(&json!({"choices": [], "usage": {"total_tokens": 3}}))
                .unwrap()
                .is_empty()
        );
    }

    /// A llama.cpp-style chunk with two reasoning keys gives the text once, as a whole
    /// message does (it gave it twice).
    #[test]
    fn the_first_reasoning_key_only() {
        let chunk = json!({"reasoning_content": "hm", "reasoning": "hm", "content": "Hi"});
        assert_eq!(
            decode(&chunk).unwrap(),
            vec![Delta::Text("Hi".into()), Delta::Reasoning("hm".into())]
        );
    }

    #[test]
    fn anthropic_events() {
        let start = json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}});
        assert_eq!(
            decode(&start).unwrap(),
            vec![Delta::Call {
                index: Some(2),
                id: Some("toolu_1".into()),
                name: Some("f".into()),
                arguments: String::new(),
                whole: false,
                legacy: false,
            }]
        );
        let delta = json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"a\""}});
        assert!(
            matches!(&decode(&delta).unwrap()[0], Delta::More { index: Some(2), arguments } if arguments == "{\"a\"")
        );
        let thinking = json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "so"}});
        assert_eq!(
            decode(&thinking).unwrap(),
            vec![Delta::Reasoning("so".into())]
        );
        assert!(decode(&json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})).is_err());
        assert!(decode(&json!({"type": "ping"})).unwrap().is_empty());
    }
}
