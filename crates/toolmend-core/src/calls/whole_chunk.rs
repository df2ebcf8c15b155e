//! A whole response given to a stream as one chunk, of the APIs whose streams never send one
//! (an Anthropic message or content list, an OpenAI Responses API response, an Amazon Bedrock
//! Converse response, a Hugging Face text generation result, Cloudflare Workers AI's REST
//! envelope): read into the pieces
//! [`super::Deltas`] feeds a stream, so that the stream ends as `calls` reads the response
//! (`super::message`'s `Parts`, which this follows item by item). A server that ignores
//! `"stream": true` sends one, and so does a caller who hands the stream what the client
//! returned.
//!
//! `calls` joins a response's text blocks (and its reasoning blocks) with a line break; the
//! stream adds up its deltas, so each block after the first is given with that break before it.

use serde_json::{Map, Value};

use super::api_shapes::{
    bedrock_message, generated_text, is_anthropic_message, is_responses, workers_ai_result,
};
use super::delta::{Delta, arguments_of, str_at};

/// The pieces of `value` when it is one of the whole responses above, else `None`.
pub(super) fn whole_response(value: &Value) -> Option<Vec<Delta>> {
    let mut pieces = Pieces::default();
    match value {
        Value::Array(items)
            if !items.is_empty() && items.iter().all(|i| generated_text(i).is_some()) =>
        {
            // Of several generations (`num_return_sequences`), the first is the reply.
            pieces.items(&items[..1]);
        }
        Value::Array(items) if super::api_shapes::is_api_shape(value) => pieces.items(items),
        Value::Object(map) if !map.contains_key("type") && is_responses(map) => {
            pieces.items(map.get("output").and_then(Value::as_array)?);
            if str_at(value, "status") == Some("incomplete") {
                let reason = value.pointer("/incomplete_details/reason");
                pieces.stop("incomplete_details.reason", reason);
            }
        }
        Value::Object(map) if is_anthropic_message(map) => {
            pieces.message(map);
        }
        Value::Object(map) if let Some(result) = workers_ai_result(map) => {
            // Cloudflare Workers AI's REST envelope: its result's `response` is its text.
            if let Some(text) = result.get("response").and_then(Value::as_str) {
                pieces.text(text);
            }
            pieces.assistant(result);
        }
        Value::Object(map) => {
            pieces.message(bedrock_message(map)?);
            pieces.stop("stopReason", map.get("stopReason"));
        }
        _ => return None,
    }
    Some(pieces.out)
}

/// The pieces read so far, and whether text (or reasoning) came already.
#[derive(Default)]
struct Pieces {
    out: Vec<Delta>,
    had_text: bool,
    had_reasoning: bool,
    /// Calls are numbered in the order written, as a stream's blocks are.
    calls: usize,
}

impl Pieces {
    fn text(&mut self, text: &str) {
        let text = if std::mem::replace(&mut self.had_text, true) {
            format!("\n{text}")
        } else {
            text.to_owned()
        };
        if !text.is_empty() {
            self.out.push(Delta::Text(text));
        }
    }

    fn reasoning(&mut self, text: &str) {
        // Empty reasoning is none, whole or streamed.
        if text.is_empty() {
            return;
        }
        let text = if std::mem::replace(&mut self.had_reasoning, true) {
            format!("\n{text}")
        } else {
            text.to_owned()
        };
        self.out.push(Delta::Reasoning(text));
    }

    fn call(&mut self, id: Option<&Value>, name: Option<&str>, arguments: Option<&Value>) {
        self.out.push(Delta::Call {
            index: Some(self.calls),
            id: id.and_then(Value::as_str).map(str::to_owned),
            name: name.map(str::to_owned),
            arguments: arguments_of(arguments),
            whole: true,
            legacy: false,
        });
        self.calls += 1;
    }

    fn stop(&mut self, field: &'static str, reason: Option<&Value>) {
        super::delta::stop(&mut self.out, field, reason);
    }

    /// An Anthropic or Bedrock message: its content list and stop reason.
    fn message(&mut self, map: &Map<String, Value>) {
        if let Some(Value::Array(items)) = map.get("content") {
            self.items(items);
        }
        self.stop("stop_reason", map.get("stop_reason"));
    }

    /// A content list or Responses output items, as `Parts::items` reads them.
    fn items(&mut self, items: &[Value]) {
        for item in items {
            let text = str_at(item, "text");
            match str_at(item, "type") {
                Some("text" | "output_text") => {
                    if let Some(text) = text {
                        self.text(text);
                    }
                }
                Some("refusal") => {
                    if let Some(text) = str_at(item, "refusal") {
                        self.text(text);
                    }
                }
                Some("thinking") => match item.get("thinking") {
                    Some(Value::String(t)) => self.reasoning(t),
                    Some(Value::Array(parts)) => {
                        let text: String = parts.iter().filter_map(|p| str_at(p, "text")).collect();
                        self.reasoning(&text);
                    }
                    _ => {}
                },
                Some("reasoning") => {
                    for key in ["summary", "content"] {
                        for part in item
                            .get(key)
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                        {
                            if let Some(t) = str_at(part, "text") {
                                self.reasoning(t);
                            }
                        }
                    }
                }
                Some("message") => {
                    if let Some(Value::Array(content)) = item.get("content") {
                        self.items(content);
                    }
                }
                Some("tool_use") => {
                    self.call(item.get("id"), str_at(item, "name"), item.get("input"))
                }
                Some("function_call") => {
                    self.call(
                        item.get("call_id"),
                        str_at(item, "name"),
                        item.get("arguments"),
                    );
                    if str_at(item, "status") == Some("incomplete") {
                        self.out.push(Delta::Cut(
                            "the API marks the call incomplete: status \"incomplete\"".into(),
                        ));
                    }
                }
                Some(_) => {}
                None => {
                    if let Some(call) = item.get("functionCall") {
                        self.call(call.get("id"), str_at(call, "name"), call.get("args"));
                    } else if let Some(call) = item.get("toolUse").filter(|c| c.is_object()) {
                        self.call(
                            call.get("toolUseId"),
                            str_at(call, "name"),
                            call.get("input"),
                        );
                    } else if let Some(generated) = generated_text(item) {
                        match generated {
                            Value::String(text) => self.text(text),
                            Value::Object(message) => self.assistant(message),
                            _ => {}
                        }
                    } else if let Some(reasoning) = item.get("reasoningContent") {
                        if let Some(t) = reasoning
                            .pointer("/reasoningText/text")
                            .and_then(Value::as_str)
                        {
                            self.reasoning(t);
                        }
                    } else if let Some(text) = text {
                        if item.get("thought").and_then(Value::as_bool) == Some(true) {
                            self.reasoning(text);
                        } else {
                            self.text(text);
                        }
                    }
                }
            }
        }
    }

    /// The assistant message a Hugging Face chat pipeline ends its conversation with: an
    /// OpenAI-shaped message, read as a stream reads one given alone.
    fn assistant(&mut self, message: &Map<String, Value>) {
        let mut out = Vec::new();
        super::deltas::message_delta(&Value::Object(message.clone()), &mut out);
        self.out.append(&mut out);
    }
}
