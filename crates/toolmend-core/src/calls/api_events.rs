//! Stream events of APIs whose shapes are their own, read into the pieces [`super::Deltas`]
//! feeds a stream:
//!
//! - OpenAI chat-completions deltas (and Ollama's `message`, an assistant message alone);
//! - Anthropic Messages events and OpenAI Responses events (`type` names the event);
//! - Amazon Bedrock's `ConverseStream` events, as the AWS SDKs give them: one member named for
//!   the event's kind (`{"contentBlockDelta": {"delta": {"text": "Hi"}, "contentBlockIndex":
//!   0}}`), one a `--input jsonl` line or a packages' `feed_chunk`;
//! - Cohere's v2 chat stream (`type`: `content-delta`, `tool-plan-delta`, `tool-call-start`,
//!   `tool-call-delta`, `message-end`), as Cohere and vLLM's `/cohere/v2/chat` send it.
//!
//! Their whole responses are read with the other messages (`super::message`).

use serde_json::{Map, Value};

use super::api_shapes::{REASONING_KEYS, server_error};
use super::delta::{Delta, arguments_of, push_reasoning, push_text, stop, str_at};
use super::formats::json::ARG_KEYS;

/// The pieces of a `ConverseStream` event (`Err`: an exception event's words), or `None` when
/// `map` is not one.
pub(crate) fn converse(map: &Map<String, Value>) -> Option<Result<Vec<Delta>, String>> {
    let mut members = map.iter();
    let (kind, body) = members.next()?;
    if members.next().is_some() {
        return None;
    }
    let index = body
        .get("contentBlockIndex")
        .and_then(Value::as_u64)
        .map(|i| i as usize);
    let mut out = Vec::new();
    match kind.as_str() {
        "messageStart" | "contentBlockStop" | "metadata" => {}
        "contentBlockStart" => {
            if let Some(tool) = body.pointer("/start/toolUse") {
                out.push(call(
                    index,
                    at_pointer(tool, "/toolUseId"),
                    at_pointer(tool, "/name"),
                ));
            }
        }
        "contentBlockDelta" => {
            let delta = body.get("delta")?;
            if let Some(text) = at_pointer(delta, "/text") {
                push_text(&mut out, Some(text));
            } else if let Some(text) = at_pointer(delta, "/toolUse/input") {
                out.push(more(index, text));
            } else {
                push_reasoning(&mut out, at_pointer(delta, "/reasoningContent/text"));
            }
        }
        "messageStop" => stop(&mut out, "stopReason", body.get("stopReason")),
        kind if kind.ends_with("Exception") => {
            let message = at_pointer(body, "/message").unwrap_or(kind);
            return Some(Err(format!("the server sent an error: {kind}: {message}")));
        }
        _ => return None,
    }
    Some(Ok(out))
}

/// The pieces of a Cohere v2 chat stream event of type `kind`, or `None` when it is not one.
pub(crate) fn cohere(kind: &str, map: &Map<String, Value>) -> Option<Result<Vec<Delta>, String>> {
    let message = map.get("delta").and_then(|d| d.get("message"));
    let index = map.get("index").and_then(Value::as_u64).map(|i| i as usize);
    let mut out = Vec::new();
    match kind {
        "message-start" | "content-start" | "content-end" | "tool-call-end" | "citation-start"
        | "citation-end" | "debug" => {}
        "content-delta" => {
            let content = message.and_then(|m| m.get("content"));
            if let Some(text) = content.and_then(|c| at_pointer(c, "/text")) {
                push_text(&mut out, Some(text));
            } else {
                push_reasoning(&mut out, content.and_then(|c| at_pointer(c, "/thinking")));
            }
        }
        // The model's plan before its calls: its reasoning, as the whole message's `tool_plan`.
        "tool-plan-delta" => {
            push_reasoning(&mut out, message.and_then(|m| at_pointer(m, "/tool_plan")))
        }
        "tool-call-start" | "tool-call-delta" => {
            let piece = message.and_then(|m| m.get("tool_calls"))?;
            if kind == "tool-call-start" {
                let name = at_pointer(piece, "/function/name");
                out.push(call(index, at_pointer(piece, "/id"), name));
            }
            match at_pointer(piece, "/function/arguments") {
                Some(text) if !text.is_empty() => out.push(more(index, text)),
                _ => {}
            }
        }
        "message-end" => stop(
            &mut out,
            "finish_reason",
            map.get("delta").and_then(|d| d.get("finish_reason")),
        ),
        _ => return None,
    }
    Some(Ok(out))
}

/// An Anthropic Messages event, or an OpenAI Responses event.
pub(crate) fn typed_event(
    kind: &str,
    map: &serde_json::Map<String, Value>,
    out: &mut Vec<Delta>,
) -> Result<(), String> {
    let value = |k: &str| map.get(k).unwrap_or(&Value::Null);
    let index = map.get("index").and_then(Value::as_u64).map(|i| i as usize);
    // Responses events number their output items.
    let output_index = map
        .get("output_index")
        .and_then(Value::as_u64)
        .map(|i| i as usize);
    match kind {
        "content_block_start" => {
            let block = value("content_block");
            match str_at(block, "type") {
                Some("text") => push_text(out, str_at(block, "text")),
                Some("thinking") => push_reasoning(out, str_at(block, "thinking")),
                Some("tool_use") => {
                    // `input` is `{}` here; its JSON text follows in pieces.
                    let input = match block.get("input") {
                        Some(Value::Object(m)) if !m.is_empty() => {
                            Value::Object(m.clone()).to_string()
                        }
                        _ => String::new(),
                    };
                    out.push(Delta::Call {
                        index,
                        id: str_at(block, "id").map(str::to_owned),
                        name: str_at(block, "name").map(str::to_owned),
                        arguments: input,
                        whole: false,
                        legacy: false,
                    });
                }
                _ => {}
            }
        }
        "content_block_delta" => {
            let delta = value("delta");
            match str_at(delta, "type") {
                Some("text_delta") => push_text(out, str_at(delta, "text")),
                Some("thinking_delta") => push_reasoning(out, str_at(delta, "thinking")),
                Some("input_json_delta") => out.push(Delta::More {
                    index,
                    arguments: str_at(delta, "partial_json").unwrap_or("").to_owned(),
                }),
                _ => {}
            }
        }
        "message_delta" => stop(out, "stop_reason", value("delta").get("stop_reason")),
        // OpenAI Responses events.
        "response.output_text.delta" | "response.refusal.delta" => {
            push_text(out, map.get("delta").and_then(Value::as_str));
        }
        "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
            push_reasoning(out, map.get("delta").and_then(Value::as_str));
        }
        "response.output_item.added" => {
            let item = value("item");
            if str_at(item, "type") == Some("function_call") {
                out.push(Delta::Call {
                    index: output_index,
                    id: str_at(item, "call_id").map(str::to_owned),
                    name: str_at(item, "name").map(str::to_owned),
                    arguments: arguments_of(item.get("arguments")),
                    whole: false,
                    legacy: false,
                });
            }
        }
        "response.function_call_arguments.delta" => out.push(Delta::More {
            index: output_index,
            arguments: value("delta").as_str().unwrap_or("").to_owned(),
        }),
        "response.function_call_arguments.done" => out.push(Delta::Done {
            index: output_index,
            arguments: value("arguments").as_str().unwrap_or("").to_owned(),
        }),
        "response.output_item.done" if str_at(value("item"), "type") == Some("function_call") => {
            out.push(Delta::Done {
                index: output_index,
                arguments: arguments_of(value("item").get("arguments")),
            });
        }
        "response.incomplete" => stop(
            out,
            "incomplete_details.reason",
            value("response").pointer("/incomplete_details/reason"),
        ),
        // Responses' failed response (its `error` inside), or its error event (`message` at
        // the top; Anthropic's, `{"error": {…}}`, was read before the event's type).
        "error" | "response.failed" => {
            return Err(value("response")
                .as_object()
                .and_then(server_error)
                .unwrap_or_else(|| {
                    let message = map.get("message").and_then(Value::as_str);
                    format!(
                        "the server sent an error: {}",
                        message.unwrap_or("the server sent an error event")
                    )
                }));
        }
        _ => {}
    }
    Ok(())
}

/// An OpenAI `delta` (or Ollama `message`).
pub(crate) fn message_delta(delta: &Value, out: &mut Vec<Delta>) {
    // One of them, as a whole message is read: servers that send both `reasoning_content`
    // and `reasoning` (vLLM, for old clients) send the same text twice.
    if let Some(t) = REASONING_KEYS
        .iter()
        .find_map(|key| str_at(delta, key))
        .filter(|t| !t.is_empty())
    {
        out.push(Delta::Reasoning(t.to_owned()));
    }
    // Content given as a list of parts (Mistral's reasoning models), read as in a whole
    // message: text parts are text, thinking parts (text chunks) reasoning.
    if let Some(Value::Array(parts)) = delta.get("content") {
        for part in parts {
            match str_at(part, "type") {
                Some("text" | "output_text") => push_text(out, str_at(part, "text")),
                Some("refusal") => push_text(out, str_at(part, "refusal")),
                Some("thinking") => match part.get("thinking") {
                    Some(Value::Array(chunks)) => {
                        for chunk in chunks {
                            push_reasoning(out, str_at(chunk, "text"));
                        }
                    }
                    thinking => push_reasoning(out, thinking.and_then(Value::as_str)),
                },
                _ => {}
            }
        }
    }
    // A refusal is the reply's text, after any content, as in a whole message.
    for key in ["content", "refusal"] {
        if let Some(t) = str_at(delta, key).filter(|t| !t.is_empty()) {
            out.push(Delta::Text(t.to_owned()));
        }
    }
    let calls = match delta.get("tool_calls") {
        Some(Value::Array(calls)) => calls.iter().collect(),
        _ => Vec::new(),
    };
    for (position, call) in calls.into_iter().enumerate() {
        let function = call.get("function").unwrap_or(call);
        let arguments = call_arguments(call, function);
        out.push(Delta::Call {
            // Ollama's `/api/chat` numbers its calls in `function.index`.
            index: Some(
                [call, function]
                    .iter()
                    .find_map(|v| v.get("index").and_then(Value::as_u64))
                    .map_or(position, |i| i as usize),
            ),
            id: str_at(call, "id").map(str::to_owned),
            name: str_at(function, "name").map(str::to_owned),
            // Ollama sends the arguments whole, as an object.
            arguments: arguments_of(arguments),
            whole: arguments.is_some_and(Value::is_object),
            legacy: false,
        });
    }
    if let Some(function) = delta.get("function_call").filter(|f| f.is_object()) {
        out.push(Delta::Call {
            // Apart from the `tool_calls` indexes: never read into one of them.
            index: Some(usize::MAX),
            id: None,
            name: str_at(function, "name").map(str::to_owned),
            arguments: str_at(function, "arguments").unwrap_or("").to_owned(),
            whole: false,
            legacy: true,
        });
    }
}

/// The arguments of a `tool_calls` entry, under the keys and in the places `calls` reads a
/// whole message's (`formats::json::object_call`): in its `function`, else beside it.
fn call_arguments<'v>(call: &'v Value, function: &'v Value) -> Option<&'v Value> {
    let under = |v: &'v Value| ARG_KEYS.iter().find_map(|k| v.get(*k));
    under(function).or_else(|| {
        if std::ptr::eq(call, function) {
            None
        } else {
            under(call)
        }
    })
}

/// A call a server starts at block `index`; its arguments follow in pieces.
fn call(index: Option<usize>, id: Option<&str>, name: Option<&str>) -> Delta {
    Delta::Call {
        index,
        id: id.map(str::to_owned),
        name: name.map(str::to_owned),
        arguments: String::new(),
        whole: false,
        legacy: false,
    }
}

/// More of the arguments of the call at block `index`.
fn more(index: Option<usize>, text: &str) -> Delta {
    Delta::More {
        index,
        arguments: text.to_owned(),
    }
}

/// The string at `pointer` in `value` (a JSON pointer, where `delta::str_at` takes a key).
fn at_pointer<'v>(value: &'v Value, pointer: &str) -> Option<&'v str> {
    value.pointer(pointer).and_then(Value::as_str)
}
