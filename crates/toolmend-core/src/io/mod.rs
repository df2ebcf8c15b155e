//! The input layer: framing of input lines ([`input`]), the stream driver with its threads
//! ([`filter`]), the in-memory batch driver ([`batch`]), record writing ([`record`]), and one
//! input's panic (a bug) kept to that input's error ([`kept`]).

pub(crate) mod batch;
pub(crate) mod checked;
pub(crate) mod filter;
pub(crate) mod input;
pub(crate) mod kept;
pub(crate) mod record;
pub(crate) mod value;
