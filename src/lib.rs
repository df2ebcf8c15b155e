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
//! use toolmend::{Mender, Options};
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

pub mod agent;
mod batch;
pub mod calls;
pub mod check;
mod error;
mod escape;
mod exact;
mod filter;
mod input;
mod locate;
mod mend;
mod nesting;
mod parse;
mod prompt;
mod record;
mod repair;
pub mod schema;
pub mod tools;
mod unquote;

pub use batch::{Input, MendedValue, mend_many};
pub use error::{Code, Error};
pub use escape::push_json_string;
pub use filter::{Filter, FilterOptions, MAX_THREADS, Summary};
pub use input::{Decoded, Framing, InputReader, RawInput, decode_input};
pub use mend::{Concat, Mended, Mender, Options, Target, Truncated, mend_args, repair};
pub use prompt::system_prompt;
pub use record::{Origin, cut, original_text, write_error, write_ok, write_repairs};
pub use repair::{Repair, RepairKind, truncated};

/// The README's Rust examples run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
