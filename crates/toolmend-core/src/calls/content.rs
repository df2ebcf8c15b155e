//! The items of a content list (Anthropic blocks, OpenAI content parts, Gemini parts, Bedrock
//! blocks) or of a Responses API response's output, in the order written: one rule for a whole
//! response read by `calls` (`super::message`) and one given to a stream as a chunk
//! (`super::whole_chunk`), so that the two cannot read the same response two ways.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::api_shapes::generated_text;

/// One item of a reply's content.
pub(super) enum Item<'v> {
    Text(&'v str),
    Reasoning(Cow<'v, str>),
    /// A call block (`tool_use`, Responses' `function_call`, Gemini's `functionCall`, Bedrock's
    /// `toolUse`): the call's object, its name and arguments (or input) inside.
    Call {
        call: &'v Value,
        /// The id the API gives the call in a field of its own (Responses' `call_id`,
        /// Bedrock's `toolUseId`); `None` where it is the call's `id`.
        id: Option<&'v Value>,
        /// Responses' `function_call`: its `arguments` are JSON text by the API's definition.
        encoded: bool,
        /// The API marks the call incomplete (`status: "incomplete"`).
        incomplete: bool,
    },
    /// The assistant message a Hugging Face chat pipeline ends its conversation with.
    Message(&'v Map<String, Value>),
}

/// Why the API says a call it marks incomplete is one.
pub(super) const MARKED_INCOMPLETE: &str =
    "the API marks the call incomplete: status \"incomplete\"";

/// Gives each item of `items` to `each` in order (a Responses `message` item's content in its
/// place), stopping at the first error `each` returns.
pub(super) fn read_items<'v, E>(
    items: &'v [Value],
    each: &mut impl FnMut(Item<'v>) -> Result<(), E>,
) -> Result<(), E> {
    for item in items {
        let text = item.get("text").and_then(Value::as_str);
        match item.get("type").and_then(Value::as_str) {
            Some("text" | "output_text") => {
                if let Some(text) = text {
                    each(Item::Text(text))?;
                }
            }
            Some("refusal") => {
                if let Some(text) = item.get("refusal").and_then(Value::as_str) {
                    each(Item::Text(text))?;
                }
            }
            Some("thinking") => match item.get("thinking") {
                Some(Value::String(t)) => each(Item::Reasoning(Cow::Borrowed(t)))?,
                // Mistral's reasoning models: the thinking is a list of text chunks.
                Some(Value::Array(parts)) => {
                    let text = parts.iter().filter_map(|p| p.get("text")?.as_str());
                    each(Item::Reasoning(Cow::Owned(text.collect())))?;
                }
                _ => {}
            },
            Some("reasoning") => {
                // Responses: summaries, and the reasoning text where it is given.
                for key in ["summary", "content"] {
                    let parts = item.get(key).and_then(Value::as_array);
                    for part in parts.into_iter().flatten() {
                        if let Some(t) = part.get("text").and_then(Value::as_str) {
                            each(Item::Reasoning(Cow::Borrowed(t)))?;
                        }
                    }
                }
            }
            Some("message") => {
                if let Some(Value::Array(content)) = item.get("content") {
                    read_items(content, each)?;
                }
            }
            Some("tool_use") => each(call(item, None, false))?,
            Some("function_call") => each(Item::Call {
                call: item,
                id: item.get("call_id"),
                encoded: true,
                incomplete: item.get("status").and_then(Value::as_str) == Some("incomplete"),
            })?,
            Some(_) => {}
            None => {
                if let Some(found) = item.get("functionCall") {
                    each(call(found, None, false))?;
                } else if let Some(found) = item.get("toolUse").filter(|c| c.is_object()) {
                    // Bedrock Converse: `toolUse {toolUseId, name, input}`.
                    each(call(found, found.get("toolUseId"), false))?;
                } else if let Some(generated) = generated_text(item) {
                    match generated {
                        Value::String(text) => each(Item::Text(text))?,
                        Value::Object(message) => each(Item::Message(message))?,
                        _ => {}
                    }
                } else if let Some(reasoning) = item.get("reasoningContent") {
                    // Bedrock Converse (its `redactedContent` is no text).
                    let text = reasoning.pointer("/reasoningText/text");
                    if let Some(text) = text.and_then(Value::as_str) {
                        each(Item::Reasoning(Cow::Borrowed(text)))?;
                    }
                } else if let Some(text) = text {
                    // Gemini: a thought summary is a text part marked `thought`.
                    if item.get("thought").and_then(Value::as_bool) == Some(true) {
                        each(Item::Reasoning(Cow::Borrowed(text)))?;
                    } else {
                        each(Item::Text(text))?;
                    }
                }
            }
        }
    }
    Ok(())
}

fn call<'v>(call: &'v Value, id: Option<&'v Value>, encoded: bool) -> Item<'v> {
    Item::Call {
        call,
        id,
        encoded,
        incomplete: false,
    }
}
