//! One input's work kept from taking its caller down: should a bug in toolmend make it panic,
//! the input gets an `internal_error` (its message names the panic) instead of an abort, an
//! exception of another kind, or a hung batch. The packages' single calls and streams, and
//! `calls --stream`, go through here; a batch's inputs through
//! [`Input::mend_kept`](crate::Input::mend_kept) (which uses [`contained`]), and the CLI's
//! filter through `io::filter::panics`.

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::calls::{Event, Failure, Stream};
use crate::error::Error;
use crate::io::record::original_text;

/// Text that makes [`contained`] panic when the input it is given holds it, standing in for
/// a bug (none is known) so that tests can show what a panic gives on every surface. Only
/// with the `panic-trigger` feature, which the packages' test builds turn on: a release build
/// has no such check.
#[cfg(any(test, feature = "panic-trigger"))]
pub const PANIC_TRIGGER: &str = "toolmend_test_panic_trigger_7f3a9c";

/// Runs `work`, one input's work (`input` is its text, or the chunk of a stream it reads);
/// should it panic (a bug in toolmend), the input's `internal_error`, whose message names the
/// panic. Only the `panic-trigger` feature looks at `input`.
///
/// Whatever `work` was changing may be left half-way: the caller replaces it (a new mender,
/// a stream that is not fed again), as [`Input::mend_kept`](crate::Input::mend_kept) and
/// [`KeptStream`] do.
///
/// # Errors
/// The `internal_error` of a panic.
pub fn contained<T>(input: &[u8], work: impl FnOnce() -> T) -> Result<T, Error> {
    catch_unwind(AssertUnwindSafe(|| {
        trigger(input);
        work()
    }))
    .map_err(|panic| Error::internal(&*panic))
}

/// Panics on input holding [`PANIC_TRIGGER`]; nothing at all without the feature.
#[inline(always)]
fn trigger(input: &[u8]) {
    #[cfg(any(test, feature = "panic-trigger"))]
    if memchr::memmem::find(input, PANIC_TRIGGER.as_bytes()).is_some() {
        panic!("the test trigger (feature panic-trigger)");
    }
    let _ = input;
}

/// The `end` event of a reply whose reading panicked (`error`, from [`contained`]): the reply
/// fails with it, and `original` shows `reply`, the text read so far, as a record shows it.
pub fn panicked_end(error: Error, reply: &str) -> Event {
    Event::End {
        result: Box::new(Err(Failure {
            error,
            extracted: None,
        })),
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
    use crate::error::Code;

    #[test]
    fn a_panic_is_the_inputs_internal_error() {
        assert_eq!(contained(b"{}", || 7), Ok(7));
        let error = contained(b"{}", || -> u8 { panic!("at {}", 3) }).unwrap_err();
        assert_eq!(error.code, Code::Internal);
        assert_eq!(
            error.message,
            "toolmend failed on this input, a bug in toolmend (please report it with this \
             input): at 3"
        );
        let text = format!("{{\"a\": \"{PANIC_TRIGGER}\"}}");
        let error = contained(text.as_bytes(), || 7).unwrap_err();
        assert!(
            error
                .message
                .ends_with("the test trigger (feature panic-trigger)")
        );
    }

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
