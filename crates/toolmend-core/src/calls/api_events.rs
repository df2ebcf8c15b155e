//! Stream events of APIs whose shapes are their own, read into the pieces [`super::Deltas`]
//! feeds a stream:
//!
//! - Amazon Bedrock's `ConverseStream` events, as the AWS SDKs give them: one member named for
//!   the event's kind (`{"contentBlockDelta": {"delta": {"text": "Hi"}, "contentBlockIndex":
//!   0}}`), one a `--input jsonl` line or a packages' `feed_chunk`;
//! - Cohere's v2 chat stream (`type`: `content-delta`, `tool-plan-delta`, `tool-call-start`,
//!   `tool-call-delta`, `message-end`), as Cohere and vLLM's `/cohere/v2/chat` send it.
//!
//! Their whole responses are read with the other messages (`super::message`).

use serde_json::{Map, Value};

/// What one event gives.
pub(crate) enum Piece<'v> {
    Text(&'v str),
    Reasoning(&'v str),
    /// A `toolUse` block starts: the call at `index`.
    Call {
        index: Option<usize>,
        id: Option<&'v str>,
        name: Option<&'v str>,
    },
    /// More of the `input` JSON text of the call at `index`.
    Arguments {
        index: Option<usize>,
        text: &'v str,
    },
    /// The stop reason, and the field that gave it.
    Stop(&'static str, &'v Value),
    /// An exception event (`throttlingException`, `modelStreamErrorException`, ...): its message.
    Error(String),
}

/// The pieces of a `ConverseStream` event, or `None` when `map` is not one.
pub(crate) fn converse(map: &Map<String, Value>) -> Option<Vec<Piece<'_>>> {
    let mut members = map.iter();
    let (kind, body) = members.next()?;
    if members.next().is_some() {
        return None;
    }
    let index = || {
        body.get("contentBlockIndex")
            .and_then(Value::as_u64)
            .map(|i| i as usize)
    };
    let mut pieces = Vec::new();
    match kind.as_str() {
        "messageStart" | "contentBlockStop" | "metadata" => {}
        "contentBlockStart" => {
            if let Some(tool) = body.pointer("/start/toolUse") {
                pieces.push(Piece::Call {
                    index: index(),
                    id: str_at(tool, "/toolUseId"),
                    name: str_at(tool, "/name"),
                });
            }
        }
        "contentBlockDelta" => {
            let delta = body.get("delta")?;
            if let Some(text) = str_at(delta, "/text") {
                pieces.push(Piece::Text(text));
            } else if let Some(text) = str_at(delta, "/toolUse/input") {
                pieces.push(Piece::Arguments {
                    index: index(),
                    text,
                });
            } else if let Some(text) = str_at(delta, "/reasoningContent/text") {
                pieces.push(Piece::Reasoning(text));
            }
        }
        "messageStop" => {
            if let Some(reason) = body.get("stopReason") {
                pieces.push(Piece::Stop("stopReason", reason));
            }
        }
        kind if kind.ends_with("Exception") => {
            let message = str_at(body, "/message").unwrap_or(kind);
            pieces.push(Piece::Error(format!("{kind}: {message}")));
        }
        _ => return None,
    }
    Some(pieces)
}

/// The pieces of a Cohere v2 chat stream event of type `kind`, or `None` when it is not one.
pub(crate) fn cohere<'v>(kind: &str, map: &'v Map<String, Value>) -> Option<Vec<Piece<'v>>> {
    let message = map.get("delta").and_then(|d| d.get("message"));
    let index = map.get("index").and_then(Value::as_u64).map(|i| i as usize);
    let mut pieces = Vec::new();
    match kind {
        "message-start" | "content-start" | "content-end" | "tool-call-end" | "citation-start"
        | "citation-end" | "debug" => {}
        "content-delta" => {
            let content = message.and_then(|m| m.get("content"));
            if let Some(text) = content.and_then(|c| str_at(c, "/text")) {
                pieces.push(Piece::Text(text));
            } else if let Some(text) = content.and_then(|c| str_at(c, "/thinking")) {
                pieces.push(Piece::Reasoning(text));
            }
        }
        // The model's plan before its calls: its reasoning, as the whole message's `tool_plan`.
        "tool-plan-delta" => {
            if let Some(text) = message.and_then(|m| str_at(m, "/tool_plan")) {
                pieces.push(Piece::Reasoning(text));
            }
        }
        "tool-call-start" => {
            let call = message.and_then(|m| m.get("tool_calls"))?;
            pieces.push(Piece::Call {
                index,
                id: str_at(call, "/id"),
                name: str_at(call, "/function/name"),
            });
            if let Some(text) = str_at(call, "/function/arguments").filter(|t| !t.is_empty()) {
                pieces.push(Piece::Arguments { index, text });
            }
        }
        "tool-call-delta" => {
            let call = message.and_then(|m| m.get("tool_calls"))?;
            if let Some(text) = str_at(call, "/function/arguments") {
                pieces.push(Piece::Arguments { index, text });
            }
        }
        "message-end" => {
            if let Some(reason) = map.get("delta").and_then(|d| d.get("finish_reason")) {
                pieces.push(Piece::Stop("finish_reason", reason));
            }
        }
        _ => return None,
    }
    Some(pieces)
}

/// The string at `pointer` in `value`.
fn str_at<'v>(value: &'v Value, pointer: &str) -> Option<&'v str> {
    value.pointer(pointer).and_then(Value::as_str)
}
