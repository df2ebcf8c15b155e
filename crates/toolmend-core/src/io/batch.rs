//! Many inputs at once, for the Python and Node packages: each input is checked as the
//! filter checks a line (UTF-8, size), mended on up to one thread per core like the CLI, and
//! handed back owned and in order.

use std::borrow::Cow;
use std::num::NonZeroUsize;
use std::ops::Range;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

use crate::args::{Mended, Mender, Options};
use crate::error::{Code, Error};
use crate::io::checked::{SchemaMismatch, apply_schema};
use crate::io::input::too_large;
use crate::io::kept::contained;
use crate::io::record::original_text;
use crate::repair::Repair;

/// What a string holding a lone surrogate is told.
const LONE_SURROGATE: &str = "text holds a lone surrogate, which is not valid Unicode";

/// One input of a batch: text to mend, or what is already wrong with it.
#[derive(Debug, Clone)]
pub enum Input<'a> {
    /// Text to mend.
    Text(&'a str),
    /// An input that failed before mending (not UTF-8, too large, not text at all), and its
    /// `original` as records show it.
    Failed(Error, Cow<'a, str>),
}

impl<'a> Input<'a> {
    /// Bytes as the filter takes a line: longer than `max_bytes` is `too_large`, bytes that
    /// are not UTF-8 are `invalid_utf8` at the first bad byte.
    pub fn from_bytes(bytes: &'a [u8], max_bytes: usize) -> Input<'a> {
        if bytes.len() > max_bytes {
            // The words of the CLI's filter, which reads lines the same way.
            let error = too_large(bytes.len() as u64, max_bytes);
            return Input::Failed(error, Cow::Owned(original_text(bytes)));
        }
        match crate::io::input::utf8(bytes) {
            Ok(text) => Input::Text(text),
            Err(error) => Input::Failed(error, Cow::Owned(original_text(bytes))),
        }
    }

    /// Text already known to be Unicode (a Python `str`, a JavaScript string turned into
    /// UTF-8): only its size is checked, as [`Input::from_bytes`] checks it.
    pub fn from_text(text: &'a str, max_bytes: usize) -> Input<'a> {
        if text.len() > max_bytes {
            Input::from_bytes(text.as_bytes(), max_bytes)
        } else {
            Input::Text(text)
        }
    }

    /// A string that is not valid Unicode because it holds a lone surrogate (a Python `str`
    /// or a JavaScript string can): `invalid_utf8`. `shown` is the string with each lone
    /// surrogate replaced by U+FFFD, for the record's `original`.
    pub fn lone_surrogate(shown: &str) -> Input<'static> {
        Input::Failed(
            Error::whole(Code::InvalidUtf8, LONE_SURROGATE),
            Cow::Owned(original_text(shown.as_bytes())),
        )
    }

    /// [`Input::lone_surrogate`] for a string given as its UTF-16 code units (a Python `str`
    /// or JavaScript string that is not valid Unicode): each lone surrogate is shown as one
    /// U+FFFD, as JavaScript's `toWellFormed` shows it. Only the first 101 characters are
    /// decoded: `original` shows 100 and whether more follow.
    pub fn lone_surrogate_in(units: impl IntoIterator<Item = u16>) -> Input<'static> {
        let shown: String = char::decode_utf16(units)
            .take(101)
            .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
            .collect();
        Input::lone_surrogate(&shown)
    }

    /// The text, or the error the input already is.
    ///
    /// # Errors
    /// The input's own, for [`Input::Failed`].
    pub fn text(&self) -> Result<&'a str, Error> {
        match self {
            Input::Text(text) => Ok(text),
            Input::Failed(error, _) => Err(error.clone()),
        }
    }

    /// The input as an error record's `original` shows it: its first 100 characters.
    pub fn original(&self) -> String {
        match self {
            Input::Text(text) => original_text(text.as_bytes()),
            Input::Failed(_, original) => original.clone().into_owned(),
        }
    }

    /// Mends the input with `mender`.
    ///
    /// # Errors
    /// The input's own error, or the pipeline's.
    pub fn mend(&self, mender: &mut Mender) -> Result<MendedValue, Error> {
        self.mend_kept(mender, |result| result.map(|m| MendedValue::from(&m)))
    }

    /// Mends the input with `mender` and hands the result to `keep`, which makes what the
    /// caller keeps of it (a [`Mended`] borrows the mender until its next input).
    ///
    /// If mending or `keep` panics (a bug in toolmend), `keep` is called again with an
    /// `internal_error` for this input, and `mender` is replaced by a new one with its
    /// settings: one input, one result, and the inputs after it are mended as usual.
    pub fn mend_kept<T>(
        &self,
        mender: &mut Mender,
        mut keep: impl FnMut(Result<Mended<'_>, Error>) -> T,
    ) -> T {
        let (this, kept) = (&mut *mender, &mut keep);
        let done = self.kept(|text| Ok(kept(text.and_then(|text| this.mend(text)))), Err);
        done.unwrap_or_else(|error| {
            *mender = mender.fresh();
            keep(Err(error))
        })
    }

    /// `work` on the input's text (or its error); should it panic (a bug in toolmend),
    /// `failed` makes the result from this input's `internal_error` (see [`contained`]): what
    /// the packages' single calls (calls, a value) go through.
    pub fn kept<T>(
        &self,
        work: impl FnOnce(Result<&'a str, Error>) -> T,
        failed: impl FnOnce(Error) -> T,
    ) -> T {
        let text = match self {
            Input::Text(text) => text.as_bytes(),
            Input::Failed(..) => &[],
        };
        contained(text, || work(self.text())).unwrap_or_else(failed)
    }
}

/// A mended input, owned (a [`Mended`] borrows its mender's buffers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MendedValue {
    /// The value as compact JSON.
    pub value: String,
    /// What was changed to get it.
    pub repairs: Vec<Repair>,
    /// Values that were in the input but are not in the value, as compact JSON.
    pub dropped: Vec<String>,
}

impl From<&Mended<'_>> for MendedValue {
    fn from(mended: &Mended<'_>) -> MendedValue {
        MendedValue {
            value: mended.value().into_owned(),
            repairs: mended.repairs().to_vec(),
            dropped: mended.dropped().map(str::to_owned).collect(),
        }
    }
}

impl MendedValue {
    /// "Mend, then apply the schema" (`io::checked::apply_schema`), owned: the value
    /// coerced to `schema` unless `coerce` is false; its repairs are the mend's, then the
    /// coercions (`schema_type`).
    ///
    /// # Errors
    /// The violations left, with their `invalid_parameters` error.
    pub fn with_schema(
        mended: &Mended<'_>,
        schema: &crate::schema::Schema,
        coerce: bool,
    ) -> Result<MendedValue, SchemaMismatch> {
        let (value, repairs) = apply_schema(mended, schema, coerce)?;
        Ok(MendedValue {
            value,
            repairs,
            dropped: mended.dropped().map(str::to_owned).collect(),
        })
    }
}

/// A batch of [`mend_many`] holds about this many input bytes, as the CLI's filter.
const BATCH_BYTES: usize = 128 << 10;
/// …and at most this many inputs.
const BATCH_INPUTS: usize = 4096;

/// Mends every input, in order, on `threads` threads (0: one per core, at most 8, as the CLI;
/// at most [`crate::MAX_THREADS`];
/// the calling thread is one of them). Batches of inputs are taken in turn, so a slow input
/// holds up only its own batch.
///
/// ```
/// use toolmend_core::{Input, Options, mend_many};
///
/// let inputs = [Input::Text("{'a': 1,}"), Input::Text("[1]"), Input::from_bytes(b"\xff", 100)];
/// let out = mend_many(&inputs, &Options::default(), 0);
/// assert_eq!(out[0].as_ref().unwrap().value, r#"{"a":1}"#);
/// assert_eq!(out[1].as_ref().unwrap_err().code.as_str(), "not_an_object");
/// assert_eq!(out[2].as_ref().unwrap_err().code.as_str(), "invalid_utf8");
/// ```
pub fn mend_many(
    inputs: &[Input<'_>],
    options: &Options,
    threads: usize,
) -> Vec<Result<MendedValue, Error>> {
    mend_many_with(inputs, options, threads, |_, result| {
        result.map(|mended| MendedValue::from(&mended))
    })
}

/// [`mend_many`], with each result turned into what the caller keeps by `keep`, on the thread
/// that mended it: the bindings build their records there, in parallel, instead of one by one
/// afterwards (`keep` also gets the input, for an error's `original`).
///
/// ```
/// use toolmend_core::{Input, Options, mend_many_with};
///
/// let inputs = [Input::Text("{'a': 1,}"), Input::Text("[1]")];
/// let out = mend_many_with(&inputs, &Options::default(), 0, |_, r| r.map(|m| m.value().len()));
/// assert_eq!(out[0].as_ref().ok(), Some(&7));
/// assert!(out[1].is_err());
/// ```
pub fn mend_many_with<T, F>(
    inputs: &[Input<'_>],
    options: &Options,
    threads: usize,
    keep: F,
) -> Vec<T>
where
    T: Send,
    F: Fn(&Input<'_>, Result<Mended<'_>, Error>) -> T + Sync,
{
    let size = |i: usize| match &inputs[i] {
        Input::Text(text) => text.len(),
        Input::Failed(..) => 0,
    };
    let batches = mend_batches(inputs.len(), size, options, threads, |range, mender| {
        inputs[range]
            .iter()
            .map(|input| input.mend_kept(mender, |result| keep(input, result)))
            .collect::<Vec<_>>()
    });
    batches.into_iter().flatten().collect()
}

/// The threads of [`mend_many`] for callers that hold their inputs in their own form (the Node
/// package keeps them as UTF-16): the inputs `0..count`, `size(i)` about the bytes of input `i`,
/// are cut into the same batches, and `batch` gets each batch's range of inputs and the thread's
/// [`Mender`] (made with `options`), on the thread that takes it. One result per batch, in order.
///
/// ```
/// use toolmend_core::{Mender, Options, mend_batches};
///
/// let inputs = ["{'a': 1,}", "[1]"];
/// let out = mend_batches(inputs.len(), |i| inputs[i].len(), &Options::default(), 0, |range, mender: &mut Mender| {
///     range.map(|i| mender.mend(inputs[i]).is_ok()).collect::<Vec<_>>()
/// });
/// assert_eq!(out.concat(), [true, false]);
/// ```
pub fn mend_batches<T, S, F>(
    count: usize,
    size: S,
    options: &Options,
    threads: usize,
    batch: F,
) -> Vec<T>
where
    T: Send,
    S: Fn(usize) -> usize,
    F: Fn(Range<usize>, &mut Mender) -> T + Sync,
{
    let mut bounds = vec![0];
    let (mut bytes, mut start) = (0, 0);
    for i in 0..count {
        bytes += size(i);
        if bytes >= BATCH_BYTES || i + 1 - start >= BATCH_INPUTS {
            bounds.push(i + 1);
            (bytes, start) = (0, i + 1);
        }
    }
    if start < count {
        bounds.push(count);
    }
    let batches = bounds.len() - 1;
    let threads = match threads {
        0 => thread::available_parallelism()
            .map_or(1, NonZeroUsize::get)
            .min(8),
        n => n.min(crate::io::filter::MAX_THREADS),
    }
    .clamp(1, batches.max(1));
    let next = AtomicUsize::new(0);
    let done = Mutex::new(Vec::with_capacity(batches));
    let work = || {
        let mut mender = Mender::new(options.clone());
        loop {
            let b = next.fetch_add(1, Ordering::Relaxed);
            if b >= batches {
                break;
            }
            let out = batch(bounds[b]..bounds[b + 1], &mut mender);
            done.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((b, out));
        }
    };
    thread::scope(|scope| {
        for _ in 1..threads {
            scope.spawn(work);
        }
        work();
    });
    let mut done = done.into_inner().unwrap_or_else(|e| e.into_inner());
    done.sort_unstable_by_key(|(b, _)| *b);
    done.into_iter().map(|(_, out)| out).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An input that panics gets `internal_error`; the inputs after it, in its batch and in
    /// others, are mended by a new mender as if nothing happened.
    #[test]
    fn an_input_that_panics_gets_internal_error_and_the_rest_are_mended() {
        let texts: Vec<String> = (0..10_000)
            .map(|i| match i % 1_000 {
                7 => "{'boom': [1, 2".to_owned(),
                _ => format!("{{'n': {i},}}"),
            })
            .collect();
        let inputs: Vec<Input<'_>> = texts.iter().map(|t| Input::Text(t)).collect();
        for threads in [1, 2, 3] {
            // `keep` panics on the value of `boom` as a bug would (a mended value the binding
            // cannot convert, say); given the error in its place, it keeps that.
            let out = mend_many_with(&inputs, &Options::default(), threads, |_, result| {
                let value = result.map(|m| m.value().into_owned());
                assert!(!matches!(&value, Ok(v) if v.contains("boom")), "boom");
                value
            });
            assert_eq!(out.len(), texts.len());
            for (i, result) in out.iter().enumerate() {
                match result {
                    Ok(value) => assert_eq!(value, &format!("{{\"n\":{i}}}")),
                    Err(e) => {
                        assert_eq!(i % 1_000, 7, "{e}");
                        assert_eq!(e.code, Code::Internal);
                        assert!(e.message.ends_with("with this input): boom"), "{e}");
                    }
                }
            }
            assert_eq!(out.iter().filter(|r| r.is_err()).count(), 10);
        }
    }

    /// The test trigger (a panic where the input is mended, as a bug would panic) gives the
    /// same, through `mend_many`.
    #[test]
    fn the_panic_trigger_gives_internal_error_in_a_batch() {
        let trigger = crate::io::kept::PANIC_TRIGGER;
        let texts = [
            "{'a': 1}".to_owned(),
            format!("{{'b': \"{trigger}\"}}"),
            "[2".to_owned(),
        ];
        let inputs: Vec<Input<'_>> = texts.iter().map(|t| Input::Text(t)).collect();
        let options = Options {
            target: crate::args::Target::Any,
            ..Options::default()
        };
        let out = mend_many(&inputs, &options, 1);
        assert_eq!(out[0].as_ref().unwrap().value, "{\"a\":1}");
        let error = out[1].as_ref().unwrap_err();
        assert_eq!(error.code, Code::Internal);
        assert!(
            error.message.ends_with("(feature panic-trigger)"),
            "{error}"
        );
        assert_eq!(out[2].as_ref().unwrap().value, "[2]");
    }

    #[test]
    fn many_keeps_order_on_any_thread_count() {
        let texts: Vec<String> = (0..20_000)
            .map(|i| format!("{{\"n\": {i}, \"pad\": \"{}\",}}", "x".repeat(i % 200)))
            .collect();
        let inputs: Vec<Input<'_>> = texts.iter().map(|t| Input::Text(t)).collect();
        let one = mend_many(&inputs, &Options::default(), 1);
        for threads in [0, 2, 5] {
            assert_eq!(mend_many(&inputs, &Options::default(), threads), one);
        }
        assert_eq!(one.len(), texts.len());
        assert_eq!(one[7].as_ref().unwrap().value, r#"{"n":7,"pad":"xxxxxxx"}"#);
        assert!(mend_many(&[], &Options::default(), 0).is_empty());
    }

    /// Text the packages already hold as Unicode gets the size rule of bytes, and nothing else:
    /// the same error and original as `from_bytes` over the limit, the text itself under it.
    #[test]
    fn text_is_checked_for_size_as_bytes_are() {
        let text = "{\"city\": \"Zürich\"}";
        assert!(matches!(Input::from_text(text, text.len()), Input::Text(t) if t == text));
        let (Input::Failed(by_text, original), Input::Failed(by_bytes, original_bytes)) = (
            Input::from_text(text, text.len() - 1),
            Input::from_bytes(text.as_bytes(), text.len() - 1),
        ) else {
            panic!("over the limit is an error");
        };
        assert_eq!(by_text, by_bytes);
        assert_eq!(by_text.code, Code::TooLarge);
        assert_eq!(original, original_bytes);
    }

    #[test]
    fn failed_inputs_keep_their_error_and_original() {
        let big = vec![b'x'; 20];
        let inputs = [
            Input::from_bytes(b"{\"a\": \"\xc3\"}", 100),
            Input::from_bytes(&big, 10),
            Input::Text(""),
        ];
        let out = mend_many(&inputs, &Options::default(), 2);
        let codes: Vec<_> = out.iter().map(|r| r.as_ref().unwrap_err().code).collect();
        assert_eq!(codes, [Code::InvalidUtf8, Code::TooLarge, Code::EmptyInput]);
        assert_eq!(out[0].as_ref().unwrap_err().offset, Some(7));
        assert_eq!(inputs[1].original(), "xxxxxxxxxxxxxxxxxxxx");
    }

    #[test]
    fn a_lone_surrogate_is_invalid_utf8_with_its_original_cut_as_any_other() {
        let long = "\u{FFFD}".repeat(150);
        let input = Input::lone_surrogate(&long);
        let error = input.text().unwrap_err();
        assert_eq!(error.code, Code::InvalidUtf8);
        assert_eq!(error.message, LONE_SURROGATE);
        assert_eq!(input.original(), original_text(long.as_bytes()));
        assert!(input.original().ends_with('…'));
        assert_eq!(input.original().chars().count(), 101);
        // From UTF-16: one U+FFFD for each lone surrogate, a pair kept.
        let units: Vec<u16> = [0xD800, 0x61, 0xD83D, 0xDE00, 0xDC00].into();
        let from_units = Input::lone_surrogate_in(units);
        assert_eq!(from_units.original(), "\u{FFFD}a😀\u{FFFD}");
        let many = Input::lone_surrogate_in(std::iter::repeat_n(0xD800, 500));
        assert_eq!(many.original(), "\u{FFFD}".repeat(100) + "…");
    }
}
