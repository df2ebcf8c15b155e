//! The LLM command's stdout read as it comes: the call being formed goes to the events, and a
//! reply that holds a whole call can stop the command early.

use serde_json::Value;
use toolmend_core::calls::{
    self, CallOptions, DeltaFraming, Deltas, Event, Extracted, Failure, Shape, Stream,
};

use super::events::Events;
use super::process::Watch;

/// How an LLM command's stdout is read.
enum Framing {
    /// Its first bytes, until they tell ([`calls::sse_body`]).
    Undecided(String),
    Text,
    /// A server's events, read as `calls --stream --input sse` reads them.
    Sse(Box<Deltas>),
    /// Server-sent events that ended the reply (the server's error, data that is not JSON):
    /// the rest says nothing more.
    Ended,
}

/// What the loop reads from a reply that came as server-sent events: the text the stream put
/// together (the reply a model wrote) and what `calls --stream --input sse` gives for it.
pub(super) struct ServerReply {
    /// The text, when the reply kept ([`Watched::reply`]) is the message the events make;
    /// `None` when the reply kept is the text itself (held once).
    pub(super) text: Option<String>,
    pub(super) result: Result<Extracted, Failure>,
}

/// A reply read as it came ([`Watcher::into_reply`]).
pub(super) struct Watched {
    /// The reply; for server-sent events, the whole message they make (`role`, `content`,
    /// `tool_calls` with their ids, as a chat completion's message), or their text when
    /// they carry only text.
    pub(super) reply: String,
    /// Where the reply was cut at its first call's end (`stop_after_call`).
    pub(super) cut: Option<usize>,
    /// What the reply read so far gave when it was found to hold a call, and the length of
    /// the text it was read from.
    pub(super) found: Option<(usize, Extracted)>,
    /// For server-sent events, what the loop reads from them.
    pub(super) server: Option<ServerReply>,
}

/// Reads an LLM command's stdout as it comes: the call being formed goes to the events
/// (`llm.stream`), and with `stop_after_call` the command is stopped once the reply read so
/// far holds a whole call.
pub(super) struct Watcher<'a> {
    stream: Stream,
    /// How stdout is read: as the model's text, or as a server's stream of server-sent events
    /// (a `curl -N` to a streaming endpoint), which its first bytes tell.
    framing: Framing,
    /// The end of the last piece when it cut a character.
    carry: Vec<u8>,
    events: &'a mut Events,
    iteration: u32,
    stop_after_call: bool,
    options: &'a CallOptions,
    /// The calls closed and the reply's length when the reply was last read whole.
    checked: (usize, usize),
    /// Where the reply ends when it was stopped at its first call's end.
    cut: Option<usize>,
    /// What the reply read so far gave when it was found to hold a call, and the length of
    /// the text it was read from: the loop takes it rather than read the same text again.
    found: Option<(usize, Extracted)>,
}

impl<'a> Watcher<'a> {
    /// A watcher of iteration `iteration`'s reply, its events sent to `events`, an
    /// `arguments` event every `arguments_step` bytes of arguments.
    pub(super) fn new(
        events: &'a mut Events,
        iteration: u32,
        stop_after_call: bool,
        arguments_step: usize,
        options: &'a CallOptions,
    ) -> Watcher<'a> {
        Watcher {
            stream: Stream::new(options.clone()).with_arguments_step(arguments_step),
            framing: Framing::Undecided(String::new()),
            carry: Vec::new(),
            events,
            iteration,
            stop_after_call,
            options,
            checked: (0, 0),
            cut: None,
            found: None,
        }
    }

    pub(super) fn piece(&mut self, bytes: &[u8]) -> Watch {
        self.carry.extend_from_slice(bytes);
        let mut events = Vec::new();
        let mut at = 0;
        while at < self.carry.len() {
            match std::str::from_utf8(&self.carry[at..]) {
                Ok(text) => {
                    self.feed(text.to_owned(), &mut events);
                    at = self.carry.len();
                }
                Err(e) => {
                    let valid = at + e.valid_up_to();
                    let text = String::from_utf8_lossy(&self.carry[at..valid]).into_owned();
                    self.feed(text, &mut events);
                    match e.error_len() {
                        Some(n) => {
                            self.feed("\u{FFFD}".to_owned(), &mut events);
                            at = valid + n;
                        }
                        None => {
                            at = valid;
                            break;
                        }
                    }
                }
            }
        }
        self.carry.drain(..at);
        self.emit(events);
        if self.stop_after_call && matches!(self.framing, Framing::Text) && self.holds_a_call() {
            Watch::Stop
        } else {
            Watch::More
        }
    }

    /// The calls being formed, as `llm.stream` events.
    fn emit(&mut self, events: Vec<Event>) {
        for event in events {
            if matches!(
                event,
                Event::CallStart { .. }
                    | Event::Arguments { .. }
                    | Event::Revised { .. }
                    | Event::Retracted { .. }
            ) && let Value::Object(mut data) = event.to_value(Shape::Native)
            {
                data.insert("iteration".into(), self.iteration.into());
                self.events.emit("llm.stream", Value::Object(data));
            }
        }
    }

    /// The reply as read, once the command has ended.
    pub(super) fn into_reply(mut self) -> Watched {
        let mut events = Vec::new();
        if !self.carry.is_empty() {
            self.feed("\u{FFFD}".to_owned(), &mut events);
        }
        if let Framing::Undecided(held) = &mut self.framing {
            // Too short to tell: the model's text.
            let held = std::mem::take(held);
            self.framing = Framing::Text;
            self.feed(held, &mut events);
        }
        let server = match std::mem::replace(&mut self.framing, Framing::Text) {
            Framing::Text => None,
            framing => {
                if let Framing::Sse(mut deltas) = framing {
                    match deltas.end(&mut self.stream) {
                        Ok(more) => events.extend(more),
                        Err(error) => events.extend(self.stream.abort(error)),
                    }
                }
                events.extend(self.stream.finish());
                self.stream
                    .result()
                    .cloned()
                    .map(|result| ServerReply { text: None, result })
            }
        };
        self.emit(events);
        // Server-sent events are kept as the whole message they make (what an LLM command
        // that prints the whole response gives, and `calls` reads alike), or their text.
        let message = server.as_ref().and_then(|_| self.stream.message());
        // (The stream's own text, moved, not copied: a copy held a second reply's worth of
        // memory.)
        let text = self.stream.into_reply();
        let (reply, server) = match message {
            Some(message) => (
                message.to_string(),
                server.map(|server| ServerReply {
                    text: Some(text),
                    ..server
                }),
            ),
            None => (text, server),
        };
        Watched {
            reply,
            cut: self.cut,
            found: self.found,
            server,
        }
    }

    /// Feeds text; the stream keeps it (`Stream::reply`: the reply so far, invalid UTF-8
    /// replaced as in a whole reply), so it is held once. Server-sent events go to the
    /// server's reader.
    fn feed(&mut self, text: String, events: &mut Vec<Event>) {
        if text.is_empty() {
            return;
        }
        match &mut self.framing {
            Framing::Text => self.stream.feed_into(&text, events),
            Framing::Undecided(held) => {
                held.push_str(&text);
                if let Some(sse) = calls::sse_body(held) {
                    let held = std::mem::take(held);
                    self.framing = if sse {
                        Framing::Sse(Box::new(Deltas::new(DeltaFraming::Sse)))
                    } else {
                        Framing::Text
                    };
                    self.feed(held, events);
                }
            }
            Framing::Sse(deltas) => match deltas.text(&text, &mut self.stream) {
                Ok(more) => events.extend(more),
                Err(error) => {
                    events.extend(self.stream.abort(error));
                    self.framing = Framing::Ended;
                }
            },
            Framing::Ended => {}
        }
    }

    /// Whether the reply so far gives a call: up to the end of its first call's JSON (what
    /// came after in the same piece, such as the start of a second call, is then left out),
    /// else whole. Read when a call's JSON has closed, and then again only after a quarter
    /// more (a Mistral list closes after its first call), so that reading is linear in the
    /// reply.
    fn holds_a_call(&mut self) -> bool {
        let closed = self.stream.closed_calls();
        let (seen, length) = self.checked;
        let reply = self.stream.reply();
        if closed == 0 || (closed == seen && reply.len() < length + length / 4 + 1) {
            return false;
        }
        self.checked = (closed, reply.len());
        let gives_a_call = |text: &str| match calls::extract(text, self.options) {
            Ok(found) if !found.calls.is_empty() => Some((text.len(), found)),
            _ => None,
        };
        if let Some(&end) = self.stream.call_ends().first()
            && end < reply.len()
            && let Some(found) = gives_a_call(&reply[..end])
        {
            self.cut = Some(end);
            self.found = Some(found);
            return true;
        }
        self.found = gives_a_call(reply);
        self.found.is_some()
    }
}
