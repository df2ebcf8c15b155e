//! A reply's stream kept from taking its caller down (`io/kept.rs` for one input's work): should
//! a bug in toolmend make the stream panic, the reply ends with an `end` event of code
//! `internal_error`. Above `calls/` (it wraps its [`Stream`]), for the packages' streams and
//! `calls --stream`.

use crate::calls::{Event, Failure, Stream};
use crate::error::Error;
use crate::io::kept::contained;
use crate::io::record::original_text;

/// The `end` event of a reply whose reading panicked (`error`, from [`contained`]): the reply
/// fails with it, and `original` shows `reply`, the text read so far, as a record shows it.
pub fn panicked_end(error: Error, reply: &str) -> Event {
    Event::End {
        result: Box::new(Err(Failure::from(error))),
        original: original_text(reply.as_bytes()),
    }
}

/// A [`Stream`] for the packages: each call on it goes through [`contained`], and one that
/// panics ends the reply with [`panicked_end`]'s `end` event (code `internal_error`) in place
/// of its events. The stream, which the panic may have left half-way through anything, gives
/// no events after that (as a finished one gives none).
pub struct KeptStream {
    stream: Stream,
    /// A call panicked and its `end` event was given.
    ended: bool,
}

impl KeptStream {
    /// `stream`, kept.
    pub fn new(stream: Stream) -> KeptStream {
        KeptStream {
            stream,
            ended: false,
        }
    }

    /// The events of `work` on the stream (`chunk`: the text it feeds, for the test trigger),
    /// or the `end` event of its panic; nothing once a panic ended the reply.
    pub fn run(&mut self, chunk: &str, work: impl FnOnce(&mut Stream) -> Vec<Event>) -> Vec<Event> {
        if self.ended {
            return Vec::new();
        }
        let stream = &mut self.stream;
        match contained(chunk.as_bytes(), || work(stream)) {
            Ok(events) => events,
            Err(error) => {
                self.ended = true;
                vec![panicked_end(error, self.stream.reply())]
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calls::{CallOptions, Shape};
    use crate::io::kept::PANIC_TRIGGER;

    #[test]
    fn a_stream_that_panics_ends_with_internal_error_and_gives_nothing_more() {
        let mut kept = KeptStream::new(Stream::new(CallOptions::default()));
        let events = kept.run("Hello ", |s| s.feed("Hello "));
        assert!(!events.is_empty());
        let chunk = format!("<tool_call>{PANIC_TRIGGER}");
        let events = kept.run(&chunk, |s| s.feed(&chunk));
        assert_eq!(events.len(), 1);
        let end = events[0].to_value(Shape::Native);
        assert_eq!(end["event"], "end");
        assert_eq!(end["ok"], false);
        assert_eq!(end["error"]["code"], "internal_error");
        assert_eq!(end["error"]["original"], "Hello ");
        assert!(kept.run("more", |s| s.feed("more")).is_empty());
        assert!(kept.run("", Stream::finish).is_empty());
    }
}
