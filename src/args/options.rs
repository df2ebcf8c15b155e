//! The settings every stage of the pipeline reads.

/// What the value must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Target {
    /// A JSON object (tool-call arguments; the `args` command). Anything else is
    /// `not_an_object`, and a string is unquoted while it holds JSON.
    #[default]
    Object,
    /// Any JSON value (the `repair` command). A string is unquoted only when what it decodes
    /// to is an object or an array.
    Any,
}

/// What to do with several values written one after another (`{"a":1}{"b":2}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Concat {
    /// Keep the first; the others are reported in `dropped`.
    #[default]
    First,
    /// Return all of them as an array (an array even when there is only one).
    All,
    /// Fail with `concatenated`.
    Error,
}

/// What to do with input that was cut off before its end (see `repair::truncation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Truncated {
    /// Close what was left open and report it as repairs (`unterminated_container`, ...).
    #[default]
    Heal,
    /// Refuse it with [`Code::Truncated`]: for a caller about to act on the value.
    Error,
}

/// Settings of the pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// What the value must be.
    pub target: Target,
    /// What to do with concatenated values.
    pub concat: Concat,
    /// No repairs: input that needs one fails with `invalid_json` at the place it needs it.
    pub strict: bool,
    /// How many string layers may be unquoted (`depth_exceeded` past it).
    pub max_depth: u32,
    /// How deep arrays and objects may nest (`too_deep` past it).
    pub max_nesting: usize,
    /// Heal input that was cut off, or refuse it.
    pub truncated: Truncated,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            target: Target::Object,
            concat: Concat::First,
            strict: false,
            max_depth: 10,
            max_nesting: 1000,
            truncated: Truncated::Heal,
        }
    }
}
