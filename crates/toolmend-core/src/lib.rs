//! toolmend turns the text that language models emit as tool calls into clean, validated JSON,
//! or into a structured error that says exactly what was wrong.
//!
//! The args pipeline runs in stages over each input: trim whitespace and a byte order mark;
//! unquote string layers (`"{\"a\":1}"`, up to [`Options::max_depth`]); split values written
//! one after another (`{..}{..}`, see [`Concat`]); repair what is almost JSON (unless
//! [`Options::strict`]); and validate the result ([`Target`]). Stages 3 to 5 are one pass over
//! the bytes that writes compact JSON as it reads: no tree is built, key order and the text of
//! every number are kept, and every change is reported as a [`Repair`].
//!
//! ```
//! use toolmend_core::{Mender, Options};
//!
//! let mut mender = Mender::new(Options::default());
//! let mended = mender.mend("```json\n{\"path\": 'a.txt', \"force\": True,}\n```").unwrap();
//! assert_eq!(mended.value(), r#"{"path":"a.txt","force":true}"#);
//! let kinds: Vec<_> = mended.repairs().iter().map(|r| r.kind.as_str()).collect();
//! assert_eq!(kinds, ["code_fence", "single_quotes", "python_literal", "trailing_comma"]);
//! ```
//!
//! [`Filter`] runs the pipeline over a stream of inputs and writes one record per input; it is
//! what the `toolmend` binary runs.

#![warn(missing_docs)]

mod args;
mod bytes;
pub mod calls;
mod error;
mod exact;
mod io;
mod kept_stream;
mod prompt;
mod repair;
pub mod tools;

pub use args::{
    Built, Concat, DEFAULT_MAX_BYTES, DEFAULT_MAX_DEPTH, DEFAULT_MAX_NESTING, Mended, Mender,
    Options, Target, Truncated, UnknownWord, mend_args, repair,
};
pub use bytes::cut;
pub use error::{Code, Error};
pub use exact::object_members;
pub use io::batch::{Input, MendedValue, mend_batches, mend_many, mend_many_with};
pub use io::checked::SchemaMismatch;
pub use io::filter::{Filter, FilterOptions, MAX_THREADS, Summary};
pub use io::input::Framing;
#[cfg(feature = "panic-trigger")]
pub use io::kept::PANIC_TRIGGER;
pub use io::kept::contained;
pub use io::record::{original_text, repairs_value, write_repairs};
pub use kept_stream::{KeptStream, panicked_end};
pub use prompt::{native_system_prompt, system_prompt};
pub use repair::{Repair, RepairKind, truncated};
/// JSON Schema: coercion and validation (at home in [`tools`], kept here for its users).
pub use tools::schema;

/// The README's Rust examples run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

/// docs/streaming.md's Rust example runs as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/streaming.md")]
pub struct StreamingDoctests;
