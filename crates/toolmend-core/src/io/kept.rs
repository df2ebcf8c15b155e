//! One input's work kept from taking its caller down: should a bug in toolmend make it panic,
//! the input gets an `internal_error` (its message names the panic) instead of an abort, an
//! exception of another kind, or a hung batch. The packages' single calls (through
//! [`Input::kept`](crate::Input::kept)), a batch's inputs (through
//! [`Input::mend_kept`](crate::Input::mend_kept)), the CLI's filter (`io::filter::panics`),
//! the packages' streams ([`KeptStream`](crate::KeptStream)) and `calls --stream` all go
//! through [`contained`].

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::error::Error;

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
/// [`KeptStream`](crate::KeptStream) do.
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

#[cfg(test)]
mod tests {
    use super::*;
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
}
