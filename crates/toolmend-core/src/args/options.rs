//! The settings every stage of the pipeline reads.

use std::str::FromStr;

/// The default limit on one input's size, in bytes (64 MiB): the CLI's `--max-bytes` and the
/// packages' `max_bytes`.
pub const DEFAULT_MAX_BYTES: usize = 64 << 20;
/// The default of [`Options::max_depth`].
pub const DEFAULT_MAX_DEPTH: u32 = 10;
/// The default of [`Options::max_nesting`].
pub const DEFAULT_MAX_NESTING: usize = 1000;

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
    /// Refuse it with [`crate::Code::Truncated`]: for a caller about to act on the value.
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
            max_depth: DEFAULT_MAX_DEPTH,
            max_nesting: DEFAULT_MAX_NESTING,
            truncated: Truncated::Heal,
        }
    }
}

impl Options {
    /// The settings of [`mend_args`](crate::mend_args), and of the packages' `mend_args` and
    /// `mendArgs` when no `truncated` is given: tool arguments are about to be run, so input cut
    /// off before its end is refused ([`Truncated::Error`], code `truncated`) rather than healed
    /// into a runnable call (`{"cmd": "rm -rf build/x` is not `{"cmd":"rm -rf build/x"}`).
    /// Everything else is [`Options::default`].
    pub fn for_tool_arguments() -> Options {
        Options {
            truncated: Truncated::Error,
            ..Options::default()
        }
    }
}

impl Truncated {
    /// The word that names it (`heal`, `error`), as the packages take it.
    pub fn as_str(self) -> &'static str {
        match self {
            Truncated::Heal => "heal",
            Truncated::Error => "error",
        }
    }
}

/// A word that names none of an option's values, as the Python and Node packages take the
/// options (`target="object"`): `concat must be "first", "all" or "error", not "sometimes"`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{option} must be {choices}, not {word:?}")]
pub struct UnknownWord {
    option: &'static str,
    choices: String,
    word: String,
}

/// The value `word` names among `words`, the words of `option`'s values.
fn from_word<T: Copy>(
    option: &'static str,
    words: &[(&str, T)],
    word: &str,
) -> Result<T, UnknownWord> {
    if let Some(&(_, value)) = words.iter().find(|(w, _)| *w == word) {
        return Ok(value);
    }
    let quoted: Vec<String> = words.iter().map(|(w, _)| format!("{w:?}")).collect();
    let (last, rest) = quoted.split_last().expect("an option has values");
    Err(UnknownWord {
        option,
        choices: format!("{} or {last}", rest.join(", ")),
        word: word.to_owned(),
    })
}

impl FromStr for Target {
    type Err = UnknownWord;
    fn from_str(word: &str) -> Result<Target, UnknownWord> {
        from_word(
            "target",
            &[("object", Target::Object), ("any", Target::Any)],
            word,
        )
    }
}

impl FromStr for Concat {
    type Err = UnknownWord;
    fn from_str(word: &str) -> Result<Concat, UnknownWord> {
        let words = [
            ("first", Concat::First),
            ("all", Concat::All),
            ("error", Concat::Error),
        ];
        from_word("concat", &words, word)
    }
}

impl FromStr for Truncated {
    type Err = UnknownWord;
    fn from_str(word: &str) -> Result<Truncated, UnknownWord> {
        let words = [("heal", Truncated::Heal), ("error", Truncated::Error)];
        from_word("truncated", &words, word)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_words_and_the_error_for_others() {
        assert_eq!("any".parse(), Ok(Target::Any));
        assert_eq!("all".parse(), Ok(Concat::All));
        assert_eq!("error".parse(), Ok(Truncated::Error));
        let err = |e: UnknownWord| e.to_string();
        assert_eq!(
            err("x".parse::<Target>().unwrap_err()),
            r#"target must be "object" or "any", not "x""#
        );
        assert_eq!(
            err("sometimes".parse::<Concat>().unwrap_err()),
            r#"concat must be "first", "all" or "error", not "sometimes""#
        );
        assert_eq!(
            err("".parse::<Truncated>().unwrap_err()),
            r#"truncated must be "heal" or "error", not """#
        );
    }
}
