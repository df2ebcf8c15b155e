//! Which API's shape a JSON value has: what [`super::message`] reads as a response or a
//! message rather than as a call, and the parts of those shapes more than one reader asks
//! about (Ollama's `/api/generate` lines, Hugging Face's `generated_text`, content blocks).

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::scan::is_name_byte;

/// Where a message holds its reasoning, the first one there read: OpenAI-compatible servers'
/// `reasoning_content` (and vLLM's `reasoning`), Ollama's `thinking`, Cohere's `tool_plan`
/// (its plan before its calls). Whole messages and streamed deltas alike.
pub(super) const REASONING_KEYS: [&str; 4] =
    ["reasoning_content", "reasoning", "thinking", "tool_plan"];

/// An Anthropic message rather than an OpenAI one: its type, its stop reason, or blocks only
/// Anthropic writes.
pub(super) fn is_anthropic(map: &Map<String, Value>) -> bool {
    map.get("type").and_then(Value::as_str) == Some("message")
        || map.contains_key("stop_reason")
        || map
            .get("content")
            .and_then(Value::as_array)
            .is_some_and(|items| {
                items.iter().any(|i| {
                    matches!(
                        i.get("type").and_then(Value::as_str),
                        Some("tool_use" | "thinking" | "redacted_thinking")
                    )
                })
            })
}

/// The reply text of an Ollama `/api/generate` response or stream line: `response`, with
/// `done` beside it (a raw prompt's reply holds the model's tool-call text as written).
pub(super) fn ollama_generate(map: &Map<String, Value>) -> Option<&str> {
    map.get("done")
        .is_some_and(Value::is_boolean)
        .then(|| map.get("response").and_then(Value::as_str))
        .flatten()
}

/// Whether a reply that is one JSON value is an API response or a message (read as one)
/// rather than a call (`{"tool_calls": […]}`, `{"type": "tool_use", …}` alone stay calls).
pub(super) fn is_api_shape(value: &Value) -> bool {
    match value {
        Value::Object(map) => {
            let array = |k: &str| map.get(k).is_some_and(Value::is_array);
            array("choices")
                || array("candidates")
                || is_responses(map)
                || map.get("message").is_some_and(Value::is_object)
                || (map.get("role").is_some_and(Value::is_string)
                    && ["content", "tool_calls", "function_call", "parts"]
                        .iter()
                        .any(|k| map.contains_key(*k)))
                || is_anthropic_message(map)
                // llama.cpp's `/completion` (`content` with its own fields beside it), and
                // Hugging Face TGI's `/generate` (`generated_text`, `details`, nothing else).
                || (map.get("content").is_some_and(Value::is_string)
                    && ["stop_type", "generation_settings", "timings", "tokens_predicted"]
                        .iter()
                        .any(|k| map.contains_key(*k)))
                || (map.get("generated_text").is_some_and(Value::is_string)
                    && map.keys().all(|k| k == "generated_text" || k == "details"))
                // llama.cpp's generic format, whose grammar makes a reply that calls nothing
                // `{"response": "…"}` (llama.cpp reads its text so).
                || (map.len() == 1 && map.get("response").is_some_and(Value::is_string))
                || ollama_generate(map).is_some()
                || workers_ai_result(map).is_some()
                || first_result_text(map).is_some()
                // An error the server sent in place of a reply (or with the reply it refused).
                || server_error(map).is_some()
                || failed_generation(map).is_some()
                || bedrock_message(map).is_some()
                || is_replicate_prediction(map)
        }
        // A content list: every item a typed block, a Gemini part or a Bedrock `toolUse`; or
        // Hugging Face's text generation (`[{"generated_text": …}]`, the Inference API's and
        // `transformers`' pipeline's).
        Value::Array(items) => {
            !items.is_empty()
                && (items.iter().all(|i| {
                    item_type(i).is_some()
                        || i.get("functionCall").is_some()
                        || i.get("toolUse").is_some()
                }) || items.iter().all(|i| generated_text(i).is_some()))
        }
        _ => false,
    }
}

/// An Anthropic Messages API message: `type: "message"` and its content list.
pub(super) fn is_anthropic_message(map: &Map<String, Value>) -> bool {
    map.get("type").and_then(Value::as_str) == Some("message")
        && map.get("content").is_some_and(Value::is_array)
}

/// The message of an Amazon Bedrock Converse response (`output.message`).
pub(super) fn bedrock_message(map: &Map<String, Value>) -> Option<&Map<String, Value>> {
    map.get("output")?.get("message")?.as_object()
}

/// An OpenAI Responses API response: `output` items, with `object: "response"` or an item
/// of a known type.
pub(super) fn is_responses(map: &Map<String, Value>) -> bool {
    map.get("output")
        .and_then(Value::as_array)
        .is_some_and(|items| {
            map.get("object").and_then(Value::as_str) == Some("response")
                || items.iter().any(|i| item_type(i).is_some())
        })
}

/// The result in a Cloudflare Workers AI REST response (`{"result": {"response", "tool_calls"},
/// "success": true, "errors", "messages"}`): the model's output, read as a message is.
pub(super) fn workers_ai_result(map: &Map<String, Value>) -> Option<&Map<String, Value>> {
    map.get("success")
        .is_some_and(Value::is_boolean)
        .then(|| map.get("result").and_then(Value::as_object))
        .flatten()
}

/// The text of the first of `results` (IBM watsonx.ai's text generation, `generated_text`;
/// KoboldCpp's native API, `text` beside its `finish_reason`, nothing beside `results`),
/// whole or a streamed chunk's. (A model's own JSON answer with a list of results is left as
/// the text it is.)
pub(super) fn first_result_text(map: &Map<String, Value>) -> Option<&str> {
    let first = map.get("results")?.as_array()?.first()?;
    if let Some(text) = first.get("generated_text").and_then(Value::as_str) {
        return Some(text);
    }
    (map.len() == 1 && first.get("finish_reason").is_some())
        .then(|| first.get("text").and_then(Value::as_str))
        .flatten()
}

/// The statuses of a Replicate prediction.
const REPLICATE_STATUSES: [&str; 6] = [
    "starting",
    "processing",
    "succeeded",
    "failed",
    "canceled",
    "aborted",
];

/// Whether `map` is a Replicate prediction: a known `status`, an `output` (null until there
/// is one), and `urls` or `input` beside them (a model's own `{"status", "output"}` is not).
pub(super) fn is_replicate_prediction(map: &Map<String, Value>) -> bool {
    map.get("status")
        .and_then(Value::as_str)
        .is_some_and(|status| REPLICATE_STATUSES.contains(&status))
        && map.contains_key("output")
        && (map.get("urls").is_some_and(Value::is_object)
            || map.get("input").is_some_and(Value::is_object))
}

/// The output of a Replicate prediction (`{"id", "version", "input", "output", "status",
/// "urls", …}`, as `POST /v1/predictions` with `Prefer: wait` and `GET` on its `urls.get` give
/// it), when `map` is one: `None` inside when it has none yet. A language model's output is
/// the list of the pieces it streamed, joined as written; a string is itself; any other value
/// (a model whose output is JSON) is its JSON text, read as a reply is.
pub(super) fn replicate_output(map: &Map<String, Value>) -> Option<Option<Cow<'_, str>>> {
    let output = map.get("output").filter(|_| is_replicate_prediction(map))?;
    Some(match output {
        Value::Null => None,
        Value::String(text) => Some(Cow::Borrowed(text.as_str())),
        Value::Array(pieces) if pieces.iter().all(Value::is_string) => Some(Cow::Owned(
            pieces.iter().filter_map(Value::as_str).collect(),
        )),
        other => Some(Cow::Owned(other.to_string())),
    })
}

/// What a Hugging Face text generation result (`{"generated_text": …}`) generated: the text,
/// or (a chat pipeline's, the conversation with the reply last) the reply's message.
pub(super) fn generated_text(item: &Value) -> Option<&Value> {
    match item.get("generated_text")? {
        text @ Value::String(_) => Some(text),
        Value::Array(messages) => messages
            .last()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant")),
        _ => None,
    }
}

/// The block types of content lists and Responses output.
fn item_type(item: &Value) -> Option<&str> {
    const TYPES: &[&str] = &[
        "text",
        "output_text",
        "thinking",
        "redacted_thinking",
        "reasoning",
        "refusal",
        "tool_use",
        "function_call",
        "message",
    ];
    item.get("type")
        .and_then(Value::as_str)
        .filter(|t| TYPES.contains(t))
}

/// The model's reply a server refused, and the server's message, when `map` is an error that
/// carries it: Groq answers a call its parser could not read with `{"error": {"code":
/// "tool_use_failed", "failed_generation": "<the reply as written>", "message": ...}}`. That
/// text is what toolmend mends: it is read as the reply (with a `failed_generation` repair),
/// not taken for the server's failure. An empty one is the error it is.
pub(super) fn failed_generation(map: &Map<String, Value>) -> Option<(Cow<'_, str>, &str)> {
    let error = map.get("error")?.as_object()?;
    let text = error.get("failed_generation")?.as_str()?;
    let said = error.get("message").and_then(Value::as_str).unwrap_or("");
    // Groq sometimes puts its own words there, not the model's reply ("Tool use failed: JSON
    // does not match the expected schema for tool calls"): that is the server's error.
    let servers_words = text.starts_with("Tool use failed:");
    (!text.trim().is_empty() && !servers_words).then(|| (with_function_tag(text), said))
}

/// Groq's parser takes the `<function=` that opens a Llama call before it fails on the rest,
/// and `failed_generation` then holds `NAME{JSON}</function>` (smolagents issue #1119): a
/// name that runs into its JSON (`{`, `={` or `({`) or closes its tag (`>`), a `</function>`
/// and no `<function` get the tag back, so that the call is read as the model wrote it (its
/// offsets then count the tag's 10 bytes). Any other text is as it came.
fn with_function_tag(text: &str) -> Cow<'_, str> {
    let rest = text.trim_start();
    let name = rest.bytes().take_while(|&b| is_name_byte(b)).count();
    let runs_into_json = matches!(
        rest.as_bytes().get(name..),
        Some([b'{' | b'>', ..] | [b'=' | b'(', b'{', ..])
    );
    if name > 0 && runs_into_json && rest.contains("</function>") && !rest.contains("<function") {
        Cow::Owned(format!("<function={rest}"))
    } else {
        Cow::Borrowed(text)
    }
}

/// What the server said went wrong, when `map` (a whole response, a stream's chunk or event)
/// is an error rather than a reply: `{"error": {"message", …}}` or `{"error": "…"}` (OpenAI,
/// vLLM, Gemini, Ollama, Azure; OpenRouter's mid-stream error beside its last `choices`), an
/// Anthropic `{"type": "error", "error": {…}}`, a failed Responses API response (`status:
/// "failed"` with its `error`), vLLM's and SGLang's `{"object": "error", "message", …}`, a
/// Gemini response that blocked the prompt (`promptFeedback.blockReason`, no candidates). The
/// one rule for whole responses and streams: the reply is not whole, and its record is
/// `invalid_input` with these words, never `ok` with the error's JSON as the reply's text.
pub(super) fn server_error(map: &Map<String, Value>) -> Option<String> {
    if failed_generation(map).is_some() {
        return None;
    }
    let said = match map.get("error") {
        Some(Value::Object(error)) => {
            let mut said = error.get("message").and_then(Value::as_str).map_or_else(
                || serde_json::to_string(error).unwrap_or_default(),
                str::to_owned,
            );
            // Groq's own words in `failed_generation` (see `failed_generation`) say why.
            if let Some(why) = error
                .get("failed_generation")
                .and_then(Value::as_str)
                .filter(|why| !why.trim().is_empty() && !said.contains(*why))
            {
                said = format!("{said} ({why})");
            }
            Some(said)
        }
        Some(Value::String(message)) => Some(message.clone()),
        // Cloudflare's REST envelope: `success: false` and its `errors`.
        _ if map.get("success") == Some(&Value::Bool(false)) => Some(
            map.get("errors")
                .and_then(Value::as_array)
                .and_then(|errors| errors.first())
                .map_or_else(
                    || "success is false".to_owned(),
                    |e| {
                        e.get("message")
                            .and_then(Value::as_str)
                            .map_or_else(|| e.to_string(), str::to_owned)
                    },
                ),
        ),
        _ if map.get("object").and_then(Value::as_str) == Some("error") => Some(
            map.get("message")
                .and_then(Value::as_str)
                .unwrap_or("no message")
                .to_owned(),
        ),
        // A Replicate prediction that failed with no `error` to say why.
        _ if map.get("status").and_then(Value::as_str) == Some("failed")
            && is_replicate_prediction(map) =>
        {
            Some("the prediction failed (status \"failed\")".to_owned())
        }
        // Gemini refused the prompt itself: no candidate at all.
        _ => map
            .get("promptFeedback")
            .and_then(|f| f.get("blockReason"))
            .and_then(Value::as_str)
            .map(|reason| format!("it blocked the prompt (promptFeedback.blockReason {reason:?})")),
    }?;
    Some(format!("the server sent an error: {said}"))
}

/// What the server said went wrong, when a whole reply is a server's error body rather than a
/// reply (the words `calls` gives it: "the server sent an error: ..."): an LLM command that
/// printed what a failing server answered (a `curl` that exits 0 on an HTTP error) failed, as
/// one that exits non-zero does. Replies that name none of the error fields are not parsed.
pub fn server_error_reply(reply: &str) -> Option<String> {
    let reply = reply.trim_ascii();
    if !reply.starts_with('{')
        || !["\"error\"", "\"success\"", "\"promptFeedback\""]
            .iter()
            .any(|field| reply.contains(field))
    {
        return None;
    }
    let value: Value = serde_json::from_str(reply).ok()?;
    server_error(value.as_object()?)
}
