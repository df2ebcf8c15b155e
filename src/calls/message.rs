//! Replies that arrive as structured messages (`--input jsonl`): an OpenAI assistant message
//! (`content` + `tool_calls[].function.{name, arguments}` or the older `function_call`), an
//! Anthropic content list (`text`, `thinking` and `tool_use` blocks, bare or in `content`),
//! `{"text": …}`, or a JSON string holding the reply.

use serde_json::Value;

use super::formats::collect;
use super::{CallOptions, Extracted, Failure, Raw, run};
use crate::error::{Code, Error};

/// Finds and normalizes the tool calls of a reply given as a JSON message.
///
/// The message's text parts go through [`super::extract`]'s scan too (a model served without a
/// tool parser leaves its calls in `content`); its structured calls follow them, in order.
///
/// ```
/// use serde_json::json;
/// use toolmend::calls::{extract_message, CallOptions};
///
/// let message = json!({"role": "assistant", "content": null, "tool_calls": [
///     {"id": "call_1", "type": "function",
///      "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\",}"}}]});
/// let found = extract_message(&message, &CallOptions::default()).unwrap();
/// assert_eq!(found.calls[0].id, Some(json!("call_1")));
/// assert_eq!(found.calls[0].parameters["city"], "Oslo");
/// assert_eq!(found.calls[0].repairs[0].kind.as_str(), "trailing_comma");
/// ```
///
/// # Errors
/// As [`super::extract`]; `invalid_input` for a value that is none of the shapes above.
pub fn extract_message(message: &Value, options: &CallOptions) -> Result<Extracted, Failure> {
    match message {
        Value::String(text) => run(Some(text), Vec::new(), None, options),
        Value::Array(blocks) => content_blocks(blocks, None, options),
        Value::Object(map) => {
            let reasoning = ["reasoning_content", "reasoning"]
                .iter()
                .find_map(|k| map.get(*k).and_then(Value::as_str))
                .map(str::to_owned);
            if map.contains_key("tool_calls") || map.contains_key("function_call") {
                let mut raws = Vec::new();
                for key in ["tool_calls", "function_call"] {
                    match map.get(key) {
                        None | Some(Value::Null) => {}
                        Some(calls @ (Value::Array(_) | Value::Object(_))) => {
                            collect_structured(calls, &mut raws)?;
                        }
                        Some(other) => {
                            return Err(invalid(format!(
                                "\"{key}\" must be a list or an object, found {}",
                                super::kind_of(other)
                            )));
                        }
                    }
                }
                let text = content_text(map.get("content"));
                return run(text.as_deref(), raws, reasoning, options);
            }
            match map.get("content") {
                Some(Value::Array(blocks)) => content_blocks(blocks, reasoning, options),
                _ => {
                    let text = ["text", "content", "arguments"]
                        .iter()
                        .find_map(|k| map.get(*k).and_then(Value::as_str));
                    match text {
                        Some(text) => run(Some(text), Vec::new(), reasoning, options),
                        None => Err(invalid(
                            "jsonl line has no \"text\" or \"content\" string, no \"tool_calls\" and no content list".into(),
                        )),
                    }
                }
            }
        }
        other => Err(invalid(format!(
            "expected a reply string or a message object, found {}",
            super::kind_of(other)
        ))),
    }
}

fn invalid(message: String) -> Failure {
    Failure {
        error: Error::whole(Code::InvalidInput, message),
        extracted: None,
    }
}

fn collect_structured(calls: &Value, raws: &mut Vec<Raw>) -> Result<(), Failure> {
    let items: Vec<&Value> = match calls {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    };
    for item in items {
        let before = raws.len();
        if !collect(item.clone(), false, false, raws) || raws.len() == before {
            raws.truncate(before);
            raws.push(Raw {
                name: None,
                envelope: None,
                ..Raw::default()
            });
        }
    }
    Ok(())
}

/// The text of an OpenAI `content`: a string, or the text parts of a list.
fn content_text(content: Option<&Value>) -> Option<String> {
    match content? {
        Value::String(text) => Some(text.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

/// An Anthropic content list.
fn content_blocks(
    blocks: &[Value],
    reasoning: Option<String>,
    options: &CallOptions,
) -> Result<Extracted, Failure> {
    let mut texts = Vec::new();
    let mut thinking: Vec<String> = reasoning.into_iter().collect();
    let mut raws = Vec::new();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(t) = block.get("text").and_then(Value::as_str) {
                    texts.push(t);
                }
            }
            Some("thinking") => {
                if let Some(t) = block.get("thinking").and_then(Value::as_str) {
                    thinking.push(t.to_owned());
                }
            }
            Some("tool_use") => collect_structured(block, &mut raws)?,
            _ => {}
        }
    }
    let text = texts.join("\n");
    let reasoning = (!thinking.is_empty()).then(|| thinking.join("\n"));
    run(Some(&text), raws, reasoning, options)
}
