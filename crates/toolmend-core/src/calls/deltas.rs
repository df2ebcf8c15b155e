//! Streamed replies as inference servers send them: server-sent events (`--input sse`) or one
//! JSON value per line (`--input jsonl`), turned into [`Stream`] input.
//!
//! Each event's data (or each line) is one of:
//! - an OpenAI chat-completions chunk (`choices[0].delta`: `content`, `reasoning_content` or
//!   `reasoning`, `tool_calls[].{index, id, function.{name, arguments}}`, the older
//!   `function_call`), as OpenAI, vLLM, llama.cpp, SGLang, LM Studio and Ollama's `/v1` send;
//! - an Anthropic Messages event (`content_block_start` with a `text`, `thinking` or
//!   `tool_use` block; `content_block_delta` with `text_delta`, `thinking_delta` or
//!   `input_json_delta`; `error`);
//! - an Ollama `/api/chat` line (`message.{content, thinking, tool_calls}`);
//! - a JSON string, or an object with a `text`, `content` or `delta` string (text), or a
//!   `reasoning` / `reasoning_content` / `thinking` string.
//!
//! `data: [DONE]`, comments, pings, usage-only chunks and the other Anthropic events carry
//! no reply text and are skipped. A line that is not JSON, or an `error` event, ends the reply
//! with `invalid_input`.

use serde_json::Value;

use super::stream::{Event, Stream};
use crate::error::{Code, Error};

/// How deltas are framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeltaFraming {
    /// Server-sent events: `data:` lines, events separated by a blank line.
    Sse,
    /// One JSON value per line.
    Jsonl,
}

/// Reads framed deltas line by line into a [`Stream`].
///
/// ```
/// use toolmend_core::calls::{CallOptions, DeltaFraming, Deltas, Event, Stream};
///
/// let mut stream = Stream::new(CallOptions::default());
/// let mut deltas = Deltas::new(DeltaFraming::Sse);
/// let sse = r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}
///
/// data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": \"Oslo\"}"}}]}}]}
///
/// data: [DONE]
/// "#;
/// let mut events = Vec::new();
/// for line in sse.lines() {
///     events.extend(deltas.line(line, &mut stream).unwrap());
/// }
/// events.extend(stream.finish());
/// assert!(events.iter().any(|e| matches!(e, Event::CallEnd { call, .. } if call.parameters["city"] == "Oslo")));
/// ```
#[derive(Debug)]
pub struct Deltas {
    framing: DeltaFraming,
    /// The `data:` lines of the event being read.
    data: String,
    has_data: bool,
    line: u64,
    done: bool,
}

impl Deltas {
    /// A reader of deltas framed this way.
    pub fn new(framing: DeltaFraming) -> Deltas {
        Deltas {
            framing,
            data: String::new(),
            has_data: false,
            line: 0,
            done: false,
        }
    }

    /// Reads one line (without its line break; a trailing `\r` is dropped).
    ///
    /// # Errors
    /// `invalid_input` for data that is not JSON or an `error` event; the caller should end
    /// the reply with [`Stream::abort`].
    pub fn line(&mut self, line: &str, stream: &mut Stream) -> Result<Vec<Event>, Error> {
        self.line += 1;
        let line = line.strip_suffix('\r').unwrap_or(line);
        if self.done {
            return Ok(Vec::new());
        }
        match self.framing {
            DeltaFraming::Jsonl => {
                if line.trim().is_empty() {
                    return Ok(Vec::new());
                }
                self.value(line, stream)
            }
            DeltaFraming::Sse => {
                if line.is_empty() {
                    return self.dispatch(stream);
                }
                if let Some(data) = line.strip_prefix("data:") {
                    if self.has_data {
                        self.data.push('\n');
                    }
                    self.data.push_str(data.strip_prefix(' ').unwrap_or(data));
                    self.has_data = true;
                }
                // `event:`, `id:`, `retry:` and `:` comments say nothing about the reply.
                Ok(Vec::new())
            }
        }
    }

    /// The input ended: an event not yet closed by a blank line is read.
    ///
    /// # Errors
    /// As [`Deltas::line`].
    pub fn end(&mut self, stream: &mut Stream) -> Result<Vec<Event>, Error> {
        match self.framing {
            DeltaFraming::Sse => self.dispatch(stream),
            DeltaFraming::Jsonl => Ok(Vec::new()),
        }
    }

    fn dispatch(&mut self, stream: &mut Stream) -> Result<Vec<Event>, Error> {
        if !self.has_data {
            return Ok(Vec::new());
        }
        let data = std::mem::take(&mut self.data);
        self.has_data = false;
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(Vec::new());
        }
        self.value(&data, stream)
    }

    fn value(&mut self, text: &str, stream: &mut Stream) -> Result<Vec<Event>, Error> {
        // Numbers as the server wrote them (arguments sent whole as an object keep `1E5`).
        let max_nesting = stream.options().nesting();
        let value = crate::exact::parse(text, max_nesting).map_err(|e| {
            // serde_json's words where it fails too (the messages users know), as `calls` does.
            let why = match serde_json::from_str::<serde::de::IgnoredAny>(text) {
                Err(serde) => serde.to_string(),
                Ok(_) => e.into_error(max_nesting).message,
            };
            Error::whole(
                Code::InvalidInput,
                format!("line {}: the streamed delta is not JSON: {why}", self.line),
            )
        })?;
        let mut events = Vec::new();
        for delta in decode(&value).map_err(|message| {
            Error::whole(Code::InvalidInput, format!("line {}: {message}", self.line))
        })? {
            match delta {
                Delta::Text(t) => events.extend(stream.feed(&t)),
                Delta::Reasoning(t) => events.extend(stream.feed_reasoning(&t)),
                Delta::Call {
                    key,
                    id,
                    name,
                    arguments,
                } => {
                    events.extend(stream.feed_call(key, id.as_deref(), name.as_deref(), &arguments))
                }
            }
        }
        Ok(events)
    }
}

/// One piece of a reply.
#[derive(Debug, Clone, PartialEq)]
enum Delta {
    Text(String),
    Reasoning(String),
    Call {
        key: usize,
        id: Option<String>,
        name: Option<String>,
        arguments: String,
    },
}

fn str_at<'v>(value: &'v Value, key: &str) -> Option<&'v str> {
    value.get(key).and_then(Value::as_str)
}

/// The pieces of reply in one streamed value (see the module doc); `Err` for an error event.
fn decode(value: &Value) -> Result<Vec<Delta>, String> {
    let mut out = Vec::new();
    let text = |out: &mut Vec<Delta>, t: Option<&str>| {
        if let Some(t) = t.filter(|t| !t.is_empty()) {
            out.push(Delta::Text(t.to_owned()));
        }
    };
    let reasoning = |out: &mut Vec<Delta>, t: Option<&str>| {
        if let Some(t) = t.filter(|t| !t.is_empty()) {
            out.push(Delta::Reasoning(t.to_owned()));
        }
    };
    match value {
        Value::String(s) => text(&mut out, Some(s)),
        Value::Object(map) => {
            if let Some(choices) = map.get("choices").and_then(Value::as_array) {
                // `n` > 1 streams several replies at once; the first is the reply.
                let first = choices
                    .iter()
                    .find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0);
                if let Some(delta) = first.and_then(|c| c.get("delta").or_else(|| c.get("message")))
                {
                    message_delta(delta, &mut out);
                }
            } else if let Some(kind) = str_at(value, "type") {
                let index = map.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
                match kind {
                    "content_block_start" => {
                        let block = &map["content_block"];
                        match str_at(block, "type") {
                            Some("text") => text(&mut out, str_at(block, "text")),
                            Some("thinking") => reasoning(&mut out, str_at(block, "thinking")),
                            Some("tool_use") => {
                                // `input` is `{}` here; its JSON text follows in pieces.
                                let input = match block.get("input") {
                                    Some(Value::Object(m)) if !m.is_empty() => {
                                        Value::Object(m.clone()).to_string()
                                    }
                                    _ => String::new(),
                                };
                                out.push(Delta::Call {
                                    key: index,
                                    id: str_at(block, "id").map(str::to_owned),
                                    name: str_at(block, "name").map(str::to_owned),
                                    arguments: input,
                                });
                            }
                            _ => {}
                        }
                    }
                    "content_block_delta" => {
                        let delta = &map["delta"];
                        match str_at(delta, "type") {
                            Some("text_delta") => text(&mut out, str_at(delta, "text")),
                            Some("thinking_delta") => {
                                reasoning(&mut out, str_at(delta, "thinking"));
                            }
                            Some("input_json_delta") => out.push(Delta::Call {
                                key: index,
                                id: None,
                                name: None,
                                arguments: str_at(delta, "partial_json").unwrap_or("").to_owned(),
                            }),
                            _ => {}
                        }
                    }
                    "error" => {
                        let message = value
                            .pointer("/error/message")
                            .and_then(Value::as_str)
                            .unwrap_or("the server sent an error event");
                        return Err(format!("the server sent an error: {message}"));
                    }
                    _ => {}
                }
            } else if let Some(message) = map.get("message").filter(|m| m.is_object()) {
                message_delta(message, &mut out);
            } else {
                for key in ["text", "content", "delta"] {
                    text(&mut out, str_at(value, key));
                }
                for key in ["reasoning_content", "reasoning", "thinking"] {
                    reasoning(&mut out, str_at(value, key));
                }
            }
        }
        _ => {}
    }
    Ok(out)
}

/// An OpenAI `delta` (or Ollama `message`).
fn message_delta(delta: &Value, out: &mut Vec<Delta>) {
    for key in ["reasoning_content", "reasoning", "thinking"] {
        if let Some(t) = str_at(delta, key).filter(|t| !t.is_empty()) {
            out.push(Delta::Reasoning(t.to_owned()));
        }
    }
    if let Some(t) = str_at(delta, "content").filter(|t| !t.is_empty()) {
        out.push(Delta::Text(t.to_owned()));
    }
    let calls = match delta.get("tool_calls") {
        Some(Value::Array(calls)) => calls.iter().collect(),
        _ => Vec::new(),
    };
    for (position, call) in calls.into_iter().enumerate() {
        let function = call.get("function").unwrap_or(call);
        let arguments = match function.get("arguments") {
            Some(Value::String(s)) => s.clone(),
            // Ollama sends the arguments whole, as an object.
            Some(v @ Value::Object(_)) => v.to_string(),
            _ => String::new(),
        };
        out.push(Delta::Call {
            key: call
                .get("index")
                .and_then(Value::as_u64)
                .map_or(position, |i| i as usize),
            id: str_at(call, "id").map(str::to_owned),
            name: str_at(function, "name").map(str::to_owned),
            arguments,
        });
    }
    if let Some(function) = delta.get("function_call").filter(|f| f.is_object()) {
        out.push(Delta::Call {
            key: 0,
            id: None,
            name: str_at(function, "name").map(str::to_owned),
            arguments: str_at(function, "arguments").unwrap_or("").to_owned(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn openai_chunks() {
        let chunk = json!({"choices": [{"index": 0, "delta": {"reasoning_content": "hm", "content": "Hi",
            "tool_calls": [{"index": 1, "id": "c", "function": {"name": "f", "arguments": "{\""}}]}}]});
        assert_eq!(
            decode(&chunk).unwrap(),
            vec![
                Delta::Reasoning("hm".into()),
                Delta::Text("Hi".into()),
                Delta::Call {
                    key: 1,
                    id: Some("c".into()),
                    name: Some("f".into()),
                    arguments: "{\"".into()
                }
            ]
        );
        assert!(
            decode(&json!({"choices": [], "usage": {"total_tokens": 3}}))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn anthropic_events() {
        let start = json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}});
        assert_eq!(
            decode(&start).unwrap(),
            vec![Delta::Call {
                key: 2,
                id: Some("toolu_1".into()),
                name: Some("f".into()),
                arguments: String::new()
            }]
        );
        let delta = json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"a\""}});
        assert!(
            matches!(&decode(&delta).unwrap()[0], Delta::Call { key: 2, arguments, .. } if arguments == "{\"a\"")
        );
        let thinking = json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "so"}});
        assert_eq!(
            decode(&thinking).unwrap(),
            vec![Delta::Reasoning("so".into())]
        );
        assert!(decode(&json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})).is_err());
        assert!(decode(&json!({"type": "ping"})).unwrap().is_empty());
    }
}
