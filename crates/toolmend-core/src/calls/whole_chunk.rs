//! A whole response given to a stream as one chunk, of the APIs whose streams never send one
//! (an Anthropic message or content list, an OpenAI Responses API response, an Amazon Bedrock
//! Converse response, a Hugging Face text generation result, Cloudflare Workers AI's REST
//! envelope, a Replicate prediction): read into the pieces
//! [`super::Deltas`] feeds a stream, so that the stream ends as `calls` reads the response
//! (items by `super::content::read_items`, the rule `super::message` reads them by). A server that ignores
//! `"stream": true` sends one, and so does a caller who hands the stream what the client
//! returned.
//!
//! `calls` joins a response's text blocks (and its reasoning blocks) with a line break; the
//! stream adds up its deltas, so each block after the first is given with that break before it.

use serde_json::{Map, Value};

use super::api_shapes::{
    bedrock_message, generated_text, is_anthropic_message, is_responses, replicate_output,
    workers_ai_result,
};
use super::content::{Item, MARKED_INCOMPLETE, read_items};
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
        Value::Object(map) if let Some(output) = replicate_output(map) => {
            // A Replicate prediction: its output, cut when canceled or not finished.
            if let Some(text) = output {
                pieces.text(&text);
            }
            pieces.stop("status", map.get("status"));
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

    /// A content list or Responses output items, by `content::read_items` (the rule
    /// `calls` reads them by).
    fn items(&mut self, items: &[Value]) {
        let _ = read_items(items, &mut |item| {
            match item {
                Item::Text(text) => self.text(text),
                Item::Reasoning(text) => self.reasoning(&text),
                Item::Message(message) => self.assistant(message),
                Item::Call {
                    call,
                    id,
                    incomplete,
                    ..
                } => {
                    let arguments = ["input", "args", "arguments"]
                        .iter()
                        .find_map(|key| call.get(*key));
                    self.call(
                        id.or_else(|| call.get("id")),
                        str_at(call, "name"),
                        arguments,
                    );
                    if incomplete {
                        self.out.push(Delta::Cut(MARKED_INCOMPLETE.into()));
                    }
                }
            }
            Ok::<(), ()>(())
        });
    }

    /// The assistant message a Hugging Face chat pipeline ends its conversation with: an
    /// OpenAI-shaped message, read as a stream reads one given alone.
    fn assistant(&mut self, message: &Map<String, Value>) {
        let mut out = Vec::new();
        super::api_events::message_delta(&Value::Object(message.clone()), &mut out);
        self.out.append(&mut out);
    }
}
