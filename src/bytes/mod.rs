//! Byte helpers shared by every stage: JSON string escaping ([`escape`]). Nothing here imports
//! another module of the crate.

pub(crate) mod escape;
