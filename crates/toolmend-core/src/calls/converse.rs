//! Amazon Bedrock's `ConverseStream` events, as the AWS SDKs give them: one member named for
//! the event's kind (`{"contentBlockDelta": {"delta": {"text": "Hi"}, "contentBlockIndex":
//! 0}}`), which `--input jsonl` lines and the packages' `feed_chunk` hand to [`super::Deltas`].
//! The whole `Converse` response (`output.message`) is read with the other messages
//! (`super::message`).

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
    /// `messageStop`'s `stopReason`.
    Stop(&'v Value),
    /// An exception event (`throttlingException`, `modelStreamErrorException`, ...): its message.
    Error(String),
}

/// The pieces of a `ConverseStream` event, or `None` when `map` is not one.
pub(crate) fn event(map: &Map<String, Value>) -> Option<Vec<Piece<'_>>> {
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
                pieces.push(Piece::Stop(reason));
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

/// The string at `pointer` in `value`.
fn str_at<'v>(value: &'v Value, pointer: &str) -> Option<&'v str> {
    value.pointer(pointer).and_then(Value::as_str)
}
