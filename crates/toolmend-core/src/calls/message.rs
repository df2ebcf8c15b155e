//! Replies that arrive as structured JSON, from `--input jsonl` lines or as a whole reply:
//!
//! - an OpenAI chat completion (`choices[0].message`, its `finish_reason`), or the assistant
//!   message alone (`content` + `tool_calls[].function.{name, arguments}`, the older
//!   `function_call`, `reasoning_content`, `refusal`);
//! - an OpenAI Responses API response (`output` items: `message`, `reasoning`,
//!   `function_call`; `status: "incomplete"`);
//! - an Anthropic message or content list (`text`, `thinking` and `tool_use` blocks,
//!   `stop_reason`);
//! - an Ollama `/api/chat` response (`message.tool_calls[].function.arguments` as an object,
//!   `message.thinking`, `done_reason`), or `/api/generate` response (`response`, `thinking`);
//! - an Amazon Bedrock Converse response (`output.message.content[]`: `text`, `toolUse
//!   {toolUseId, name, input}`, `reasoningContent`; `stopReason`);
//! - a Cloudflare Workers AI REST response (`{"result": {"response", "tool_calls"}, "success"}`),
//!   IBM watsonx.ai's and KoboldCpp's text generation (`results[0]`'s `generated_text`, `text`);
//! - an error a server sent in place of a reply (see [`super::api_shapes`]'s `server_error`);
//! - a Gemini `generateContent` response (`candidates[0].content.parts[]`: `text`, `thought`
//!   text and `functionCall {name, args}`; `finishReason`);
//! - `{"text": …}`, or a JSON string holding the reply.
//!
//! Of several `choices` or `candidates`, the first (`index` 0) is read: the others are other
//! completions of the same request, not more calls of this one.
//!
//! A stop reason that says the output was cut (`finish_reason: "length"`, `stop_reason:
//! "max_tokens"`, `done_reason: "length"`, `finishReason: "MAX_TOKENS"`, Responses
//! `incomplete_details.reason: "max_output_tokens"`) makes the call written last incomplete
//! when a call is what was written last: its JSON may be whole and still be short of what the
//! model meant to write.

use serde_json::{Map, Value};

use super::content::{Item, MARKED_INCOMPLETE, read_items};
use super::formats::{collect, encoded_arguments};
use super::{CallOptions, Extracted, Failure, Raw, run};
use crate::error::{Code, Error};
use crate::repair::Repair;

use super::api_shapes::{
    REASONING_KEYS, bedrock_message, failed_generation, first_result_text, generated_text,
    is_anthropic, is_responses, ollama_generate, replicate_output, server_error, workers_ai_result,
};
use super::stop_reasons::{cut_by, dropped_by};

/// Finds and normalizes the tool calls of a reply given as a JSON message or API response.
///
/// The message's text parts go through [`super::extract`]'s scan too (a model served without a
/// tool parser leaves its calls in `content`); its structured calls follow them, in order.
///
/// ```
/// use serde_json::json;
/// use toolmend_core::calls::{extract_message, CallOptions};
///
/// let message = json!({"role": "assistant", "content": null, "tool_calls": [
///     {"id": "call_1", "type": "function",
///      "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\",}"}}]});
/// let found = extract_message(&message, &CallOptions::default()).unwrap();
/// assert_eq!(found.calls[0].id, Some(json!("call_1")));
/// assert_eq!(found.calls[0].parameters["city"], "Oslo");
/// assert_eq!(found.calls[0].repairs[0].kind.as_str(), "trailing_comma");
///
/// // A completion cut at max_tokens: its call is not taken, however whole its JSON looks.
/// let response = json!({"content": [{"type": "tool_use", "id": "toolu_1", "name": "rm",
///     "input": {"path": "/tmp/build"}}], "stop_reason": "max_tokens", "role": "assistant"});
/// let failure = extract_message(&response, &CallOptions::default()).unwrap_err();
/// assert_eq!(failure.error.code.as_str(), "incomplete_call");
/// ```
///
/// # Errors
/// As [`super::extract`]; `invalid_input` for a value that is none of the shapes above.
pub fn extract_message(message: &Value, options: &CallOptions) -> Result<Extracted, Failure> {
    extract_message_cut(message, None, false, None, options)
}

/// [`extract_message`] for a message whose stop reason came apart from it (a stream's last
/// chunk): `cut` is what [`cut_by`] said, if it said the output was cut, and whether text
/// came after the calls (`text_last`: the stream's message puts its text first, and a cut is
/// then the text's, not its last call's).
pub(crate) fn extract_message_cut(
    message: &Value,
    cut: Option<&str>,
    text_last: bool,
    dropped: Option<&str>,
    options: &CallOptions,
) -> Result<Extracted, Failure> {
    let parts = |cut: Option<&str>| Parts {
        cut: cut.map(str::to_owned),
        text_last,
        ..Parts::default()
    };
    // A call the server dropped comes last, as the stop reason that tells of it.
    let dropped = |mut parts: Parts| {
        if let Some(why) = dropped {
            parts.dropped_call(why.to_owned());
        }
        parts
    };
    match message {
        Value::String(text) => super::reply(text, options),
        Value::Array(items) => {
            let mut parts = parts(cut);
            // Of several generations (`num_return_sequences`), the first is the reply.
            let items = match &items[..] {
                [first, ..] if generated_text(first).is_some() => &items[..1],
                _ => items,
            };
            parts.items(items)?;
            dropped(parts).run(options)
        }
        Value::Object(map) => {
            let mut parts = parts(cut);
            parts.object(map)?;
            dropped(parts).run(options)
        }
        other => Err(invalid(format!(
            "expected a reply string or a message object, found {}",
            super::kind_of(other)
        ))),
    }
}

/// The API a response comes from, for [`extract_response`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// An OpenAI chat completion (`choices[].message`, `finish_reason`), one of its assistant
    /// messages, or a response of OpenAI's Responses API (`output` items, `status`): what the
    /// official `openai` clients return for either API.
    OpenAiChat,
    /// An Anthropic Messages response (`content` blocks, `stop_reason`), or its content list.
    Anthropic,
}

impl std::str::FromStr for Api {
    type Err = String;

    /// `openai` or `anthropic`, as the packages name the API; the error names both.
    fn from_str(name: &str) -> Result<Api, String> {
        match name {
            "openai" => Ok(Api::OpenAiChat),
            "anthropic" => Ok(Api::Anthropic),
            other => Err(format!("unknown api {other:?}; one of: openai, anthropic")),
        }
    }
}

/// `text` read as the JSON of a server's `what` (a message, a response, a chunk): one rule and
/// one message for every surface that is given such a text (`invalid_input`).
pub(crate) fn server_json(text: &str, what: &str) -> Result<Value, Error> {
    serde_json::from_str(text)
        .map_err(|e| Error::whole(Code::InvalidInput, format!("the {what} is not JSON: {e}")))
}

/// [`extract_message`] of an assistant message given as JSON text (what the packages hand
/// over): text that is not JSON is `invalid_input`.
///
/// # Errors
/// As [`extract_message`].
pub fn extract_message_text(text: &str, options: &CallOptions) -> Result<Extracted, Failure> {
    let message = server_json(text, "message").map_err(|error| Failure {
        error,
        extracted: None,
    })?;
    extract_message(&message, options)
}

/// [`extract_response`] of a response given as JSON text (what the packages hand over): text
/// that is not JSON is `invalid_input`.
///
/// # Errors
/// As [`extract_response`].
pub fn extract_response_text(
    text: &str,
    api: Api,
    choice: usize,
    options: &CallOptions,
) -> Result<Extracted, Failure> {
    let response = server_json(text, "response").map_err(|error| Failure {
        error,
        extracted: None,
    })?;
    extract_response(&response, api, choice, options)
}

/// The tool calls of one API response, as [`extract_message`] reads it, for a caller who
/// knows which API it came from (the packages' `calls_from_openai` and `calls_from_anthropic`):
/// a response of another API is refused (`invalid_input`) rather than read by its rules. Of an
/// OpenAI completion, `choice` picks the choice (by position) whose message and
/// `finish_reason` are read; a Responses API response (OpenAI's other API) has one output, so
/// `choice` must be 0. A stop reason that says the output was cut makes the call written last
/// incomplete.
///
/// ```
/// use serde_json::json;
/// use toolmend_core::calls::{extract_response, Api, CallOptions};
///
/// let completion = json!({"choices": [{"index": 0, "finish_reason": "length", "message": {
///     "role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
///     "function": {"name": "deploy", "arguments": "{\"target\": \"prod\"}"}}]}}]});
/// let failure = extract_response(&completion, Api::OpenAiChat, 0, &CallOptions::default()).unwrap_err();
/// assert_eq!(failure.error.code.as_str(), "incomplete_call");
/// let refused = extract_response(&completion, Api::Anthropic, 0, &CallOptions::default()).unwrap_err();
/// assert_eq!(refused.error.code.as_str(), "invalid_input");
/// ```
///
/// # Errors
/// As [`extract_message`]; `invalid_input` for a response of the other API, or a `choice` it
/// does not have.
pub fn extract_response(
    response: &Value,
    api: Api,
    choice: usize,
    options: &CallOptions,
) -> Result<Extracted, Failure> {
    let Value::Object(map) = response else {
        return match (api, response) {
            (Api::Anthropic, Value::Array(items)) => {
                let mut parts = Parts::default();
                parts.items(items)?;
                parts.run(options)
            }
            _ => Err(invalid(format!(
                "expected {}, found {}",
                api.what(),
                super::kind_of(response)
            ))),
        };
    };
    // Either API's error in place of a response: what the server said, for either helper.
    if let Some(why) = server_error(map) {
        return Err(invalid(why));
    }
    let mut parts = Parts::default();
    match api {
        Api::OpenAiChat => {
            if let Some(Value::Array(choices)) = map.get("choices") {
                let picked = choices.get(choice).ok_or_else(|| {
                    invalid(format!(
                        "the completion has no choice {choice} (it has {})",
                        choices.len()
                    ))
                })?;
                let mut one = Map::new();
                one.insert("choices".into(), Value::Array(vec![picked.clone()]));
                parts.object(&one)?;
            } else if is_responses(map) {
                // OpenAI's other API: one output, no choices to pick from.
                if choice != 0 {
                    return Err(invalid(format!(
                        "a Responses API response has no choices: choice must be 0, not {choice}"
                    )));
                }
                parts.object(map)?;
            } else if is_anthropic(map)
                || map.contains_key("candidates")
                || map.contains_key("output")
            {
                return Err(invalid(format!(
                    "expected {}, found another API's response",
                    api.what()
                )));
            } else {
                parts.message(map)?;
            }
        }
        Api::Anthropic => {
            if [
                "choices",
                "tool_calls",
                "function_call",
                "candidates",
                "output",
            ]
            .iter()
            .any(|k| map.contains_key(*k))
                || !map.get("content").is_some_and(Value::is_array)
            {
                return Err(invalid(format!(
                    "expected {}, found another shape",
                    api.what()
                )));
            }
            parts.message(map)?;
        }
    }
    parts.run(options)
}

impl Api {
    fn what(self) -> &'static str {
        match self {
            Api::OpenAiChat => {
                "an OpenAI chat completion, one of its messages, or a Responses API response"
            }
            Api::Anthropic => "an Anthropic message (with a \"content\" list) or its content list",
        }
    }
}

fn invalid(message: String) -> Failure {
    Failure {
        error: Error::whole(Code::InvalidInput, message),
        extracted: None,
    }
}

/// A reply taken apart: text, reasoning and structured calls in the order written.
#[derive(Default)]
struct Parts {
    texts: Vec<String>,
    reasoning: Vec<String>,
    raws: Vec<Raw>,
    /// Whether the last thing written was a call (a cut then cut that call).
    last_is_call: bool,
    /// Why the API says the output was cut, if it does.
    cut: Option<String>,
    /// The text came after the calls, whatever order they were read in (a stream's message).
    text_last: bool,
    /// The reply is the text a server refused (`failed_generation`): the server's message.
    refused: Option<String>,
}

impl Parts {
    fn run(mut self, options: &CallOptions) -> Result<Extracted, Failure> {
        let Some(said) = self.refused.take() else {
            return self.read(options);
        };
        if options.strict {
            return Err(invalid(refused_words(&said)));
        }
        with_repair(self.read(options), Repair::failed_generation(&said))
    }

    fn read(mut self, options: &CallOptions) -> Result<Extracted, Failure> {
        // Empty reasoning is none, as a stream never shows it: a reply that is one JSON string
        // beside it is still unquoted, streamed or whole.
        self.reasoning.retain(|r| !r.is_empty());
        let last_is_call = self.last_is_call && !self.text_last;
        // A cut while the model wrote a call makes that call incomplete; a cut while it wrote
        // text (or reasoning) leaves the text as far as it came, and the record says so.
        let mut text_cut = None;
        if let Some(why) = self.cut.take() {
            match self.raws.last_mut() {
                Some(last) if last_is_call => last.cut = Some(why),
                _ => text_cut = Some(why),
            }
        }
        let text = (!self.texts.is_empty()).then(|| self.texts.join("\n"));
        let result = match &text {
            // Only text: read as a whole reply is (a JSON string holding it is unquoted).
            Some(text) if self.raws.is_empty() && self.reasoning.is_empty() => {
                super::reply(text, options)
            }
            _ => {
                let reasoning = (!self.reasoning.is_empty()).then(|| self.reasoning.join("\n"));
                run(text.as_deref(), self.raws, reasoning, options, false)
            }
        };
        with_output_cut(result, text_cut.as_deref())
    }

    fn text(&mut self, text: &str) {
        self.texts.push(text.to_owned());
        self.last_is_call = false;
    }

    /// A call the server dropped ([`dropped_by`]): a call with no name, cut for `why`.
    fn dropped_call(&mut self, why: String) {
        self.raws.push(Raw {
            name: None,
            envelope: None,
            cut: Some(why),
            ..Raw::default()
        });
        self.last_is_call = true;
    }

    fn cut_when(&mut self, field: &str, value: Option<&Value>) {
        if let Some(why) = value.and_then(Value::as_str).and_then(|r| cut_by(field, r)) {
            self.cut = Some(why);
        }
    }

    /// An API response, a message, or `{"text": …}`.
    fn object(&mut self, map: &Map<String, Value>) -> Result<(), Failure> {
        if let Some((text, said)) = failed_generation(map) {
            self.text(&text);
            self.refused = Some(said.to_owned());
            return Ok(());
        }
        if let Some(why) = server_error(map) {
            return Err(invalid(why));
        }
        if let Some(result) = workers_ai_result(map) {
            return self.object(result);
        }
        if let Some(text) = first_result_text(map) {
            self.text(text);
            return Ok(());
        }
        // A Replicate prediction: its output (a failed one is a server error, above), cut when
        // it was canceled or is not finished yet.
        if let Some(output) = replicate_output(map) {
            if let Some(text) = output {
                self.text(&text);
            }
            self.cut_when("status", map.get("status"));
            return Ok(());
        }
        // OpenAI chat completion: the first choice.
        if let Some(Value::Array(choices)) = map.get("choices") {
            if let Some(choice) = first(choices) {
                let choice = choice
                    .as_object()
                    .ok_or_else(|| invalid("a choice must be an object".into()))?;
                match (choice.get("message"), choice.get("delta")) {
                    (Some(Value::Object(message)), _) | (None, Some(Value::Object(message))) => {
                        self.message(message)?;
                    }
                    _ => {
                        if let Some(text) = choice.get("text").and_then(Value::as_str) {
                            self.text(text);
                        }
                    }
                }
                self.cut_when("finish_reason", choice.get("finish_reason"));
            }
            return Ok(());
        }
        // Gemini: the first candidate's content parts.
        if let Some(Value::Array(candidates)) = map.get("candidates") {
            if let Some(candidate) = first(candidates) {
                if let Some(Value::Array(parts)) =
                    candidate.get("content").and_then(|c| c.get("parts"))
                {
                    self.items(parts)?;
                }
                self.cut_when("finishReason", candidate.get("finishReason"));
                let message = candidate.get("finishMessage").and_then(Value::as_str);
                if let Some(why) = candidate
                    .get("finishReason")
                    .and_then(Value::as_str)
                    .and_then(|reason| dropped_by("finishReason", reason, message))
                {
                    self.dropped_call(why);
                }
            }
            return Ok(());
        }
        // OpenAI Responses: output items.
        if let Some(Value::Array(output)) = map.get("output")
            && is_responses(map)
        {
            self.items(output)?;
            if map.get("status").and_then(Value::as_str) == Some("incomplete") {
                self.cut_when(
                    "incomplete_details.reason",
                    map.get("incomplete_details").and_then(|d| d.get("reason")),
                );
            }
            return Ok(());
        }
        // Amazon Bedrock Converse: `output.message` (content blocks), `stopReason`.
        if let Some(message) = bedrock_message(map) {
            self.message(message)?;
            self.cut_when("stopReason", map.get("stopReason"));
            return Ok(());
        }
        // Ollama /api/generate: the reply in `response` (`thinking` beside it).
        if let Some(text) = ollama_generate(map) {
            if let Some(thinking) = map.get("thinking").and_then(Value::as_str) {
                self.reasoning.push(thinking.to_owned());
            }
            self.text(text);
            self.cut_when("done_reason", map.get("done_reason"));
            return Ok(());
        }
        // Ollama /api/chat, or a choice given alone.
        if let Some(Value::Object(message)) = map.get("message") {
            self.message(message)?;
            self.cut_when("done_reason", map.get("done_reason"));
            self.cut_when("finish_reason", map.get("finish_reason"));
            return Ok(());
        }
        self.message(map)
    }

    /// A message: OpenAI, Ollama or Anthropic, or a Gemini content.
    fn message(&mut self, map: &Map<String, Value>) -> Result<(), Failure> {
        for key in REASONING_KEYS {
            if let Some(text) = map.get(key).and_then(Value::as_str) {
                self.reasoning.push(text.to_owned());
                break;
            }
        }
        let calls = ["tool_calls", "function_call"];
        let has_calls = calls.iter().any(|k| map.contains_key(*k));
        let mut read = false;
        match map.get("content") {
            Some(Value::Array(items)) => {
                self.items(items)?;
                read = true;
            }
            Some(Value::String(text)) if has_calls => {
                self.text(text);
                read = true;
            }
            // Cloudflare Workers AI's output: its text is `response`.
            None if has_calls => {
                if let Some(text) = map.get("response").and_then(Value::as_str) {
                    self.text(text);
                    read = true;
                }
            }
            _ => {}
        }
        if let Some(refusal) = map.get("refusal").and_then(Value::as_str) {
            self.text(refusal);
            read = true;
        }
        if let Some(Value::Array(parts)) = map.get("parts") {
            self.items(parts)?;
            read = true;
        }
        // Servers that fill the legacy `function_call` with the call also given in
        // `tool_calls` (for old clients) wrote one call, not two.
        let has_tool_calls = match map.get("tool_calls") {
            Some(Value::Array(items)) => !items.is_empty(),
            Some(Value::Object(_)) => true,
            _ => false,
        };
        for key in calls {
            if key == "function_call" && has_tool_calls {
                continue;
            }
            match map.get(key) {
                None | Some(Value::Null) => {}
                Some(found @ (Value::Array(_) | Value::Object(_))) => self.structured(found),
                Some(other) => {
                    return Err(invalid(format!(
                        "\"{key}\" must be a list or an object, found {}",
                        super::kind_of(other)
                    )));
                }
            }
        }
        if !read && !has_calls {
            // (`response`: Cloudflare Workers AI's output.)
            match ["text", "content", "arguments", "generated_text", "response"]
                .iter()
                .find_map(|k| map.get(*k).and_then(Value::as_str))
            {
                Some(text) => self.text(text),
                // A message that says it has no content (`"content": null`, as a reply of only
                // reasoning or an empty one is sent) is an empty reply, as its stream is.
                None if map.get("content").is_some_and(Value::is_null)
                    || map.get("role").is_some_and(Value::is_string) =>
                {
                    self.text("")
                }
                None => {
                    return Err(invalid(
                        "jsonl line has no \"text\" or \"content\" string, no \"tool_calls\" and no content list".into(),
                    ));
                }
            }
        }
        self.cut_when("stop_reason", map.get("stop_reason"));
        Ok(())
    }

    /// A content list (Anthropic blocks, OpenAI content parts, Gemini parts) or Responses
    /// output items, read by `content::read_items`.
    fn items(&mut self, items: &[Value]) -> Result<(), Failure> {
        read_items(items, &mut |item| {
            match item {
                Item::Text(text) => self.text(text),
                Item::Reasoning(text) => self.reasoning.push(text.into_owned()),
                Item::Message(message) => self.message(message)?,
                Item::Call {
                    call,
                    id,
                    encoded,
                    incomplete,
                } => {
                    let before = self.structured_with_id(call, id);
                    if encoded {
                        encoded_arguments(&mut self.raws[before..]);
                    }
                    if let Some(raw) = self.raws.get_mut(before).filter(|_| incomplete) {
                        raw.cut = Some(MARKED_INCOMPLETE.into());
                    }
                }
            }
            Ok(())
        })
    }

    /// [`Parts::structured`] of a call whose id the API names its own way (Responses'
    /// `call_id`, Bedrock's `toolUseId`): that id is the call's. Where in `raws` it went.
    fn structured_with_id(&mut self, call: &Value, id: Option<&Value>) -> usize {
        let before = self.raws.len();
        self.structured(call);
        if let (Some(raw), Some(id)) = (self.raws.get_mut(before), id) {
            raw.id = Some(id.clone());
        }
        before
    }

    /// Calls written as structured JSON: each one a call, or a call with no usable name.
    fn structured(&mut self, calls: &Value) {
        let items: Vec<&Value> = match calls {
            Value::Array(items) => items.iter().collect(),
            other => vec![other],
        };
        for item in items {
            let before = self.raws.len();
            if !collect(item.clone(), false, false, &mut self.raws) || self.raws.len() == before {
                self.raws.truncate(before);
                self.raws.push(Raw {
                    name: None,
                    envelope: None,
                    ..Raw::default()
                });
            }
            self.last_is_call = true;
        }
    }
}

/// Under `--strict`, a reply a server refused is its error: "the server sent an error: ...".
pub(super) fn refused_words(said: &str) -> String {
    format!("the server sent an error: {said}")
}

/// `result` with an `output_cut` repair when the API cut the output, for `why`, while the
/// model wrote text (the one rule for whole responses and a stream's text alone).
pub(super) fn with_output_cut(
    result: Result<Extracted, Failure>,
    why: Option<&str>,
) -> Result<Extracted, Failure> {
    match why {
        Some(why) => with_repair(result, Repair::output_cut(why)),
        None => result,
    }
}

/// `result` with `repair` first in its reply's repairs.
pub(super) fn with_repair(
    mut result: Result<Extracted, Failure>,
    repair: Repair,
) -> Result<Extracted, Failure> {
    let extracted = match &mut result {
        Ok(extracted) => Some(extracted),
        Err(failure) => failure.extracted.as_deref_mut(),
    };
    if let Some(extracted) = extracted {
        extracted.repairs.insert(0, repair);
    }
    result
}

/// The choice or candidate with `index` 0, else the first.
fn first(list: &[Value]) -> Option<&Value> {
    list.iter()
        .find(|c| c.get("index").and_then(Value::as_u64) == Some(0))
        .or_else(|| list.first())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// OpenAI's Responses API is OpenAI's too: the OpenAI helper reads it as `calls` does (it
    /// was refused as another API's), with its cut status; it has no choices but the first.
    #[test]
    fn the_openai_helper_reads_a_responses_api_response() {
        let options = CallOptions::default();
        let response = serde_json::json!({"id": "resp_1", "object": "response",
            "status": "completed", "output": [
                {"type": "message", "role": "assistant",
                 "content": [{"type": "output_text", "text": "On it."}]},
                {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "deploy",
                 "arguments": "{\"target\": \"prod\",}"}]});
        let found = extract_response(&response, Api::OpenAiChat, 0, &options).unwrap();
        assert_eq!(Ok(found.clone()), extract_message(&response, &options));
        assert_eq!(found.calls[0].id, Some(serde_json::json!("call_1")));
        assert_eq!(found.calls[0].parameters["target"], "prod");
        assert_eq!(found.text.as_deref(), Some("On it."));

        let mut cut = response.clone();
        cut["status"] = "incomplete".into();
        cut["incomplete_details"] = serde_json::json!({"reason": "max_output_tokens"});
        let failure = extract_response(&cut, Api::OpenAiChat, 0, &options).unwrap_err();
        assert_eq!(failure.error.code, Code::IncompleteCall);
        let other = extract_response(&response, Api::OpenAiChat, 1, &options).unwrap_err();
        assert_eq!(other.error.code, Code::InvalidInput);
        assert!(
            other.error.message.contains("choice must be 0"),
            "{other:?}"
        );
        let anthropic = extract_response(&response, Api::Anthropic, 0, &options).unwrap_err();
        assert_eq!(anthropic.error.code, Code::InvalidInput);
    }

    /// The text entry points the packages call give what the value entry points give, and one
    /// message for text that is not JSON.
    #[test]
    fn text_entry_points_read_as_the_value_ones() {
        let options = CallOptions::default();
        let completion = r#"{"choices": [{"index": 0, "finish_reason": "length", "message": {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]}}]}"#;
        let value: Value = serde_json::from_str(completion).unwrap();
        let api: Api = "openai".parse().unwrap();
        assert_eq!(
            extract_response_text(completion, api, 0, &options),
            extract_response(&value, api, 0, &options)
        );
        let message = &value["choices"][0]["message"];
        assert_eq!(
            extract_message_text(&message.to_string(), &options),
            extract_message(message, &options)
        );
        let broken = extract_response_text("{nope", Api::Anthropic, 0, &options).unwrap_err();
        assert_eq!(broken.error.code, Code::InvalidInput);
        assert!(
            broken.error.message.starts_with("the response is not JSON"),
            "{broken:?}"
        );
        let broken = extract_message_text("{nope", &options).unwrap_err();
        assert!(
            broken.error.message.starts_with("the message is not JSON"),
            "{broken:?}"
        );
        assert_eq!(
            "gemini".parse::<Api>().unwrap_err(),
            "unknown api \"gemini\"; one of: openai, anthropic"
        );
    }
}
