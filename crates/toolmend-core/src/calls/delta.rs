//! One piece of a streamed reply, as [`super::Deltas`] reads it from a server's chunk (and
//! [`super::api_events`] from the events of APIs with shapes of their own), before the stream
//! is fed it.

use serde_json::Value;

/// One piece of a reply.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Delta {
    Text(String),
    /// Text of an API that keeps its content blocks in the order written (Anthropic, Bedrock,
    /// Gemini, the Responses API): after a call, it makes a cut the text's, not the call's,
    /// as `calls` reads the whole response.
    BlockText(String),
    Reasoning(String),
    Call {
        /// Its index as the server numbers calls or blocks (none: a call of its own).
        index: Option<usize>,
        id: Option<String>,
        name: Option<String>,
        arguments: String,
        /// The arguments came whole (an object, as Ollama sends them): the call is complete.
        whole: bool,
        /// From the legacy `function_call`.
        legacy: bool,
    },
    /// More of the arguments of the call a server started at `index` (Anthropic's
    /// `input_json_delta`, Responses' `function_call_arguments.delta`). A block that started
    /// no call (Anthropic's `server_tool_use`, which the server runs itself) is no call, as in
    /// the whole message.
    More {
        index: Option<usize>,
        arguments: String,
    },
    /// The whole arguments of the call a server started at `index`, once they are done
    /// (Responses' `function_call_arguments.done` and `output_item.done`): the deltas gave
    /// them, or a part of them, or (servers that send them only when done) none.
    Done {
        index: Option<usize>,
        arguments: String,
    },
    /// The server dropped a call the model wrote ([`super::stop_reasons::dropped_by`]: why).
    Dropped(String),
    /// A server's error carrying the reply it refused (Groq's `failed_generation`): the
    /// reply's text, and the server's message.
    Refused {
        text: String,
        said: String,
    },
    /// The API marks the call written last as cut (a Responses `function_call` item's
    /// `status: "incomplete"`): why.
    Cut(String),
    /// The server's stop reason.
    Stop {
        field: &'static str,
        reason: String,
    },
}

pub(crate) fn str_at<'v>(value: &'v Value, key: &str) -> Option<&'v str> {
    value.get(key).and_then(Value::as_str)
}

pub(crate) fn stop(out: &mut Vec<Delta>, field: &'static str, reason: Option<&Value>) {
    if let Some(reason) = reason.and_then(Value::as_str) {
        out.push(Delta::Stop {
            field,
            reason: reason.to_owned(),
        });
    }
}

/// Arguments sent whole as an object (Ollama, Gemini), or as JSON text.
pub(crate) fn arguments_of(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(v @ Value::Object(_)) => v.to_string(),
        _ => String::new(),
    }
}

/// Appends `t` as a text delta, unless it is absent or empty.
pub(crate) fn push_text(out: &mut Vec<Delta>, t: Option<&str>) {
    if let Some(t) = t.filter(|t| !t.is_empty()) {
        out.push(Delta::Text(t.to_owned()));
    }
}

/// Appends `t` as a reasoning delta, unless it is absent or empty.
pub(crate) fn push_reasoning(out: &mut Vec<Delta>, t: Option<&str>) {
    if let Some(t) = t.filter(|t| !t.is_empty()) {
        out.push(Delta::Reasoning(t.to_owned()));
    }
}

/// The pieces of an API that keeps text and calls in the order written: its text is
/// [`Delta::BlockText`].
pub(crate) fn in_order(pieces: &mut [Delta]) {
    for piece in pieces {
        if let Delta::Text(text) = piece {
            *piece = Delta::BlockText(std::mem::take(text));
        }
    }
}
