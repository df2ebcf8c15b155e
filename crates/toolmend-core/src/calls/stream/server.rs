//! Deltas a server parsed itself: tool calls and reasoning sent apart from the text.

use super::Stream;
use super::call_reader::{CallReader, Ctx};
use super::event::Event;
use crate::calls::partial::Step;
use crate::calls::scan::bare_name;
use serde_json::{Map, Value};

/// A tool call a server parsed and streams in pieces (OpenAI `tool_calls[].function`,
/// Anthropic `tool_use` blocks).
pub(super) struct ServerCall {
    key: usize,
    id: Option<String>,
    name: String,
    pub(super) arguments: String,
    /// Its slot, once announced.
    pub(super) slot: Option<usize>,
    reader: Option<CallReader>,
}

impl Stream {
    /// Reasoning that a server sends apart from the text (OpenAI-style `reasoning_content`,
    /// Anthropic `thinking` blocks). The reply is then an assistant message (see
    /// [`Stream::message`]); its reasoning is shown as it arrives (see [`Event::Corrected`]).
    pub fn feed_reasoning(&mut self, delta: &str) -> Vec<Event> {
        self.catch_up();
        let mut events = Vec::new();
        if self.result.is_none() {
            self.server_reasoning
                .get_or_insert_with(String::new)
                .push_str(delta);
            self.live.server_reasoning(delta, &mut events);
        }
        events
    }

    /// A piece of a tool call that a server parsed itself: `key` tells its calls apart
    /// (OpenAI's `tool_calls[].index`, Anthropic's content block index); the id and the name
    /// come with the first pieces, the arguments' JSON text in pieces. The name is complete
    /// once arguments arrive for it (or another call starts); the arguments are read as they
    /// grow, like those of a call in the text.
    pub fn feed_call(
        &mut self,
        key: usize,
        id: Option<&str>,
        name: Option<&str>,
        arguments: &str,
    ) -> Vec<Event> {
        self.catch_up();
        let mut events = Vec::new();
        if self.result.is_some() {
            return events;
        }
        let at = match self.server_calls.iter().position(|c| c.key == key) {
            Some(at) => at,
            None => {
                self.text_last = false;
                // A new call: the ones before it have their whole names.
                for i in 0..self.server_calls.len() {
                    self.announce_server(i, &mut events);
                }
                self.server_calls.push(ServerCall {
                    key,
                    id: None,
                    name: String::new(),
                    arguments: String::new(),
                    slot: None,
                    reader: None,
                });
                self.server_calls.len() - 1
            }
        };
        let call = &mut self.server_calls[at];
        // The id given first is the call's: `call_start` shows it, and a server that gives
        // the call another id in later pieces (Poolside) still has it continue this call.
        if call.id.is_none()
            && let Some(id) = id.filter(|id| !id.is_empty())
        {
            call.id = Some(id.to_owned());
        }
        if let Some(name) = name
            && call.slot.is_none()
        {
            call.name.push_str(name);
        }
        call.arguments.push_str(arguments);
        if !arguments.is_empty() {
            self.announce_server(at, &mut events);
        }
        self.read_server(at, &mut events);
        events
    }

    /// How the server says the reply ended (`field` as its API names it: `finish_reason`,
    /// `stop_reason`, `done_reason`, `finishReason`, `incomplete_details.reason`). A reason
    /// that says the output was cut makes the call written last incomplete, as `calls` does
    /// with the stop reason of a whole response (see [`crate::calls::stop_reasons::cut_by`]).
    pub fn stop_reason(&mut self, field: &str, reason: &str) {
        if self.result.is_none()
            && let Some(why) = crate::calls::stop_reasons::cut_by(field, reason)
        {
            self.cut = Some(why);
        }
    }

    /// Text of an API that keeps its blocks in order came: if calls came before it, a cut
    /// stop reason is the text's, not theirs (`calls` reads the whole response so).
    pub(crate) fn text_after_calls(&mut self) {
        self.text_last = !self.server_calls.is_empty();
    }

    /// A server's error carries the whole reply it refused (`failed_generation`), whose
    /// message was `said`: the reply is read from it, with a `failed_generation` repair, when
    /// nothing of the reply came before (else it cannot be told what it repeats: false).
    pub(crate) fn refused_generation(&mut self, said: &str) -> bool {
        let fresh = self.result.is_none()
            && self.buf.is_empty()
            && self.server_calls.is_empty()
            && self.server_reasoning.is_none()
            && self.refused.is_none();
        if fresh {
            self.refused = Some(said.to_owned());
        }
        fresh
    }

    /// The API says the output was cut for `why` (a call it marks incomplete): the call
    /// written last is incomplete, as [`Stream::stop_reason`] makes it.
    pub(crate) fn cut_output(&mut self, why: String) {
        if self.result.is_none() {
            self.cut = Some(why);
        }
    }

    /// The server says it dropped a call the model wrote, for `why`
    /// (`stop_reasons::dropped_by`): the reply's result has it as an incomplete
    /// call, as `calls` says of the whole response.
    pub fn dropped_call(&mut self, why: String) {
        if self.result.is_none() {
            self.dropped = Some(why);
        }
    }

    /// Announces a server's call once its name is complete.
    pub(super) fn announce_server(&mut self, at: usize, events: &mut Vec<Event>) {
        let call = &self.server_calls[at];
        if call.slot.is_some() || call.name.trim().is_empty() {
            return;
        }
        let (tool, id) = bare_name(&call.name);
        let id = call.id.clone().or(id).map(Value::String);
        self.start_call(tool, id, events);
        let slot = self.slots.len() - 1;
        let call = &mut self.server_calls[at];
        call.slot = Some(slot);
        call.reader = Some(CallReader::new(
            Ctx {
                args_of: Some(slot),
                name_is_key: false,
                strict: false,
                seq: false,
                close: None,
            },
            0,
            slot,
        ));
    }

    /// Reads what arrived of a server call's arguments.
    fn read_server(&mut self, at: usize, events: &mut Vec<Event>) {
        let call = &mut self.server_calls[at];
        let (Some(reader), Some(slot)) = (&mut call.reader, call.slot) else {
            return;
        };
        let bytes = call.arguments.as_bytes();
        while reader.read < bytes.len() && !self.slots[slot].frozen {
            let b = bytes[reader.read];
            if reader.reader.stack.is_empty()
                && reader.reader.value.is_none()
                && b.is_ascii_whitespace()
            {
                reader.read += 1;
                continue;
            }
            match reader.push(
                b,
                bytes,
                &mut self.slots,
                &mut self.next_index,
                events,
                &mut self.written,
            ) {
                Step::More | Step::Done => {}
                Step::Bail => {
                    reader.bail(bytes, &mut self.slots, events);
                    break;
                }
            }
        }
        reader.refresh(
            bytes,
            &mut self.slots,
            &mut self.next_index,
            events,
            &mut self.written,
        );
    }

    /// The reply so far: the text, or with calls or reasoning fed apart, the assistant message
    /// they make up (`{"role", "content", "reasoning_content"?, "tool_calls"}`), as
    /// `calls --input jsonl` reads it.
    pub fn message(&self) -> Option<Value> {
        if self.server_calls.is_empty() && self.server_reasoning.is_none() && self.dropped.is_none()
        {
            return None;
        }
        let mut m = Map::new();
        m.insert("role".into(), "assistant".into());
        m.insert("content".into(), self.buf.clone().into());
        if let Some(reasoning) = &self.server_reasoning {
            m.insert("reasoning_content".into(), reasoning.clone().into());
        }
        let calls: Vec<Value> = self
            .server_calls
            .iter()
            .map(|c| {
                let mut call = Map::new();
                if let Some(id) = &c.id {
                    call.insert("id".into(), id.clone().into());
                }
                call.insert("type".into(), "function".into());
                let mut function = Map::new();
                function.insert("name".into(), c.name.clone().into());
                function.insert("arguments".into(), c.arguments.clone().into());
                call.insert("function".into(), Value::Object(function));
                Value::Object(call)
            })
            .collect();
        m.insert("tool_calls".into(), Value::Array(calls));
        Some(Value::Object(m))
    }
}
