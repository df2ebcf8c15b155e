//! The args pipeline, composed: [`Mender::mend`] runs trim, then unquote (which locates the
//! JSON in each string layer), then split and repair (one parse), then validate, in that order,
//! each once.
//!
//! [`Mender`] owns every buffer the stages use and reuses them from one input to the next, so
//! mending a stream of lines allocates nothing per line once the buffers have grown.

/// The settings every stage reads.
mod options;

/// Block-at-a-time scans of string bytes, which the unquote and parse stages share.
mod simd;
mod simd_avx;

// The stages, in the order they run; a stage imports only those above it.

/// Finding the JSON in text with more around it: code fences, prose, a JSONP wrapper.
pub(crate) mod locate;

/// Decoding the string layers that hold JSON text, locating the JSON in each.
pub(crate) mod unquote;

/// The parser's stack of open arrays and objects.
pub(crate) mod nesting;

/// Splitting values written one after another and repairing them: one pass that writes
/// compact JSON as it reads.
pub(crate) mod parse;

/// Checking the value: cut off, concatenated, not an object.
pub(crate) mod validate;

use std::borrow::Cow;
use std::io::{self, Write};
use std::ops::Range;

use serde_json::Value;

use crate::args::parse::{Parser, Rules, Sink, is_json};
use crate::args::unquote::{Text, Unquoted, layer_note, unquote};
use crate::error::{Code, Error};
use crate::repair::Repair;

pub use options::{
    Concat, DEFAULT_MAX_BYTES, DEFAULT_MAX_DEPTH, DEFAULT_MAX_NESTING, Options, Target, Truncated,
    UnknownWord,
};

/// Runs the pipeline over one input after another, reusing its buffers.
///
/// ```
/// use toolmend_core::{Mender, Options};
///
/// let mut mender = Mender::new(Options::default());
/// let mended = mender.mend(r#""{\"command\":\"brew list\"}""#).unwrap();
/// assert_eq!(mended.value(), r#"{"command":"brew list"}"#);
/// assert_eq!(mended.repairs()[0].kind.as_str(), "unquote");
///
/// let err = mender.mend("[1, 2]").unwrap_err();
/// assert_eq!(err.code.as_str(), "not_an_object");
/// ```
#[derive(Default)]
pub struct Mender {
    options: Options,
    /// What the parser writes: the values and the repairs.
    sink: Sink,
    /// The string layers unquote decodes, the innermost in the first.
    layers: [Vec<u8>; 2],
    /// Where each value is in the sink's output.
    parts: Vec<Range<usize>>,
    /// Lone surrogate escapes become U+FFFD (see [`Mender::replacing_lone_surrogates`]).
    lone_surrogates_as_fffd: bool,
    /// Valid JSON read by the repairing parser too (see [`Mender::without_fast_path`]).
    fast_path_off: bool,
    /// How much of the sink's output is a caller's, kept (see [`Mender::mend_onto`]).
    kept: usize,
}

/// A mended input: the value (as compact JSON text), what was dropped, and what was repaired.
/// It borrows the [`Mender`]'s buffers until the next input.
#[derive(Debug, Clone, Copy)]
pub struct Mended<'m> {
    out: &'m [u8],
    parts: &'m [Range<usize>],
    repairs: &'m [Repair],
    concat: Concat,
}

impl Mended<'_> {
    /// The value as compact JSON.
    pub fn value(&self) -> Cow<'_, str> {
        match self.concat {
            Concat::All => {
                let mut buf = Vec::new();
                self.write_value(&mut buf);
                Cow::Owned(String::from_utf8(buf).expect("the parser writes UTF-8"))
            }
            _ => Cow::Borrowed(self.part(0)),
        }
    }

    /// Appends the value as compact JSON to `buf`.
    pub fn write_value(&self, buf: &mut Vec<u8>) {
        match self.concat {
            Concat::All => self.write_value_to(buf).expect("a Vec takes every write"),
            // One copy, without the `io::Write` layer: this runs once per line.
            _ => buf.extend_from_slice(&self.out[self.parts[0].clone()]),
        }
    }

    /// Writes the value as compact JSON to `out`.
    ///
    /// # Errors
    /// Those of `out`.
    pub fn write_value_to<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        match self.concat {
            Concat::All => {
                out.write_all(b"[")?;
                for (i, part) in self.parts.iter().enumerate() {
                    if i > 0 {
                        out.write_all(b",")?;
                    }
                    out.write_all(&self.out[part.clone()])?;
                }
                out.write_all(b"]")
            }
            _ => out.write_all(&self.out[self.parts[0].clone()]),
        }
    }

    /// Values that were in the input but are not in the value, as compact JSON.
    pub fn dropped(&self) -> impl Iterator<Item = &str> {
        let skip = match self.concat {
            Concat::All => self.parts.len(),
            _ => 1,
        };
        (skip..self.parts.len()).map(|i| self.part(i))
    }

    /// The values that make up the value, as compact JSON: the one value, or with
    /// [`Concat::All`] each item of the array.
    pub fn parts(&self) -> impl Iterator<Item = &str> {
        let count = match self.concat {
            Concat::All => self.parts.len(),
            _ => 1,
        };
        (0..count).map(|i| self.part(i))
    }

    /// Whether the value is the array of every value written ([`Concat::All`]).
    pub fn is_list(&self) -> bool {
        self.concat == Concat::All
    }

    /// What was changed to get the value; empty when the input was clean JSON.
    pub fn repairs(&self) -> &[Repair] {
        self.repairs
    }

    fn part(&self, i: usize) -> &str {
        std::str::from_utf8(&self.out[self.parts[i].clone()]).expect("the parser writes UTF-8")
    }
}

/// A mended input with its value built as a `serde_json::Value` ([`Mender::mend_value`]).
#[derive(Debug)]
#[non_exhaustive]
pub struct Built<'m> {
    /// The value, or why the text written is not one value.
    pub value: Result<Value, Error>,
    /// What was changed to get the value.
    pub repairs: &'m [Repair],
    /// How deep its arrays and objects nest (1 for `{}`), for a caller with a lower limit.
    pub deepest: usize,
}

impl Mender {
    /// A mender with these options.
    pub fn new(options: Options) -> Mender {
        Mender {
            options,
            ..Mender::default()
        }
    }

    /// A mender that writes a `\u` escape naming half a surrogate pair as U+FFFD, reported
    /// as a `lone_surrogate` repair, for callers that read the value into Unicode text
    /// (`calls`, whose parameters become `serde_json` values). By default such an escape is
    /// valid JSON and kept as written.
    pub(crate) fn replacing_lone_surrogates(mut self) -> Mender {
        self.lone_surrogates_as_fffd = true;
        self
    }

    /// A mender that reads valid JSON with the repairing parser too, not its fast path: the
    /// output is the same (tests/fast_path.rs compares the two), only slower. For tests and
    /// measurements.
    #[doc(hidden)]
    pub fn without_fast_path(mut self) -> Mender {
        self.fast_path_off = true;
        self
    }

    /// A mender that also builds each value as a `serde_json::Value` in the same pass (see
    /// [`Mender::mend_value`]), for callers that need the value rather than its text (`calls`).
    pub fn building_values(mut self) -> Mender {
        self.sink.tree.on = true;
        self
    }

    /// [`Mender::mend`], with the value as a `serde_json::Value` built while it was parsed (each
    /// number as written; with [`Concat::All`] the array of the values), not read back from the
    /// text written. A mender made with [`Mender::building_values`] builds them from its first
    /// input; another starts building at its first call of this method.
    ///
    /// ```
    /// use toolmend_core::{Mender, Options, RepairKind};
    ///
    /// let mut mender = Mender::new(Options::default());
    /// let built = mender.mend_value("{'n': 1.50, 'ok': True,}").unwrap();
    /// assert!(built.repairs.iter().any(|r| r.kind() == RepairKind::TrailingComma));
    /// // The number as written: `1.50`, not `1.5`.
    /// assert_eq!(built.value.unwrap().to_string(), r#"{"n":1.50,"ok":true}"#);
    /// ```
    ///
    /// # Errors
    /// Those of [`Mender::mend`]; [`Built::value`] holds the error of a value that is not one
    /// (`too_deep`, `invalid_json`), as reading the text would have given.
    pub fn mend_value(&mut self, input: &str) -> Result<Built<'_>, Error> {
        self.sink.tree.on = true;
        self.mend(input)?;
        let built = self.sink.tree.take().filter(|values| {
            values.len() == self.parts.len()
                && values
                    .iter()
                    .zip(&self.parts)
                    .all(|((at, ..), part)| *at == part.start)
        });
        let concat = self.options.concat;
        let text = || {
            let mut buf = Vec::new();
            Mended {
                out: &self.sink.out,
                parts: &self.parts,
                repairs: &self.sink.repairs,
                concat,
            }
            .write_value(&mut buf);
            String::from_utf8(buf).expect("the parser writes UTF-8")
        };
        let mut deepest = 0;
        let value = match built {
            Some(values) => {
                let mut values = values.into_iter().map(|(_, value, depth)| {
                    deepest = deepest.max(depth);
                    value
                });
                let value = match concat {
                    Concat::All => {
                        let all = Value::Array(values.collect());
                        deepest += 1;
                        all
                    }
                    _ => values.next().expect("a value was written"),
                };
                #[cfg(debug_assertions)]
                {
                    // Debug builds check the value built against the text written.
                    let read = crate::exact::parse_uncounted(&text(), self.options.max_nesting);
                    assert_eq!(
                        read.map(|v| v.to_string()).ok(),
                        Some(value.to_string()),
                        "the value built differs from the text written"
                    );
                }
                Ok(value)
            }
            None => {
                // The text written holds what is not a value (a lone surrogate kept as written),
                // or the tree lost track of the output (not known to happen): the text is read,
                // for the error or the value.
                let read = crate::exact::parse(&text(), self.options.max_nesting);
                deepest = read.as_ref().map_or(0, depth);
                read.map_err(|e| e.into_error(self.options.max_nesting))
            }
        };
        Ok(Built {
            value,
            repairs: &self.sink.repairs,
            deepest,
        })
    }

    /// The options this mender runs with.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// A new mender with this one's settings, to take the place of one that a panic (a bug)
    /// left part-way through an input.
    pub(crate) fn fresh(&self) -> Mender {
        let mut fresh = Mender::new(self.options.clone());
        fresh.lone_surrogates_as_fffd = self.lone_surrogates_as_fffd;
        fresh.fast_path_off = self.fast_path_off;
        fresh
    }

    /// [`Mender::mend`], with the value appended to `buf` as [`Mended::write_value`] writes it,
    /// and nothing appended on an error. The parser writes the value straight after what `buf`
    /// holds (its output buffer is `buf`, lent for the call), so a value is written once, where
    /// it goes, not written then copied: `args` and `repair` do this once per line.
    pub(crate) fn mend_onto(&mut self, input: &str, buf: &mut Vec<u8>) -> Result<(), Error> {
        if self.options.concat == Concat::All {
            // The value is `[`, the values, `]`: written from the parts.
            return self.mend(input).map(|mended| mended.write_value(buf));
        }
        std::mem::swap(&mut self.sink.out, buf);
        let kept = self.sink.out.len();
        // A clean input's value is where it goes already: nothing else is set up for it.
        let lane = self.clean_lane(input.as_bytes());
        if lane == Lane::Clean {
            std::mem::swap(&mut self.sink.out, buf);
            return Ok(());
        }
        self.kept = kept;
        let value = self
            .mend_from(input, lane)
            .map(|mended| mended.parts[0].clone());
        self.kept = 0;
        let out = &mut self.sink.out;
        match &value {
            Ok(part) => {
                // Values after the first (dropped) go. The first starts where `buf` ended (no
                // input is known where it does not; the move is a guard, never taken by tests).
                if part.start != kept {
                    out.copy_within(part.clone(), kept);
                }
                out.truncate(kept + part.len());
            }
            Err(_) => out.truncate(kept),
        }
        std::mem::swap(&mut self.sink.out, buf);
        value.map(|_| ())
    }

    /// The clean lane of [`Mender::mend`]: an input that is one valid JSON object (or, for
    /// [`Target::Any`], array) with only white space around it is mended into its compact
    /// copy, appended to the sink's output ([`Lane::Clean`]). No stage changes such an input
    /// but for that (locate finds it where it opens, unquote has no layer to take off, the
    /// parser's fast path copies it, validate finds nothing wrong), so the stages are skipped:
    /// their setup per input was a fifth of the time on clean lines.
    #[inline]
    fn clean_lane(&mut self, input: &[u8]) -> Lane {
        if self.fast_path_off || self.sink.tree.on {
            return Lane::Closed;
        }
        // Most inputs open at their first byte; white space and a byte order mark are looked
        // past, and nothing else is wanted.
        let span = match input.first() {
            Some(b'{' | b'[') => 0..input.trim_ascii_end().len(),
            Some(b' ' | b'\t' | b'\n' | b'\r' | b'\x0C' | 0xEF) => trimmed(input),
            _ => return Lane::Closed,
        };
        let wanted = match input.get(span.start) {
            Some(b'{') => true,
            Some(b'[') => self.options.target == Target::Any,
            _ => false,
        };
        if !wanted {
            return Lane::Closed;
        }
        let clean = self.sink.copy_whole(
            &input[..span.end],
            span.start,
            self.options.max_nesting,
            self.lone_surrogates_as_fffd,
        );
        if clean { Lane::Clean } else { Lane::Pending }
    }

    /// Runs the pipeline over one input.
    ///
    /// # Errors
    /// An [`Error`] whose [`Code`] says which stage failed and whose message says where.
    pub fn mend(&mut self, input: &str) -> Result<Mended<'_>, Error> {
        self.sink.out.truncate(self.kept);
        let lane = self.clean_lane(input.as_bytes());
        self.mend_from(input, lane)
    }

    /// [`Mender::mend`] once the clean lane made `lane` of the input.
    fn mend_from(&mut self, input: &str, lane: Lane) -> Result<Mended<'_>, Error> {
        // The tree holds nothing while values are not built (`mend_value` turns it on before
        // it mends): clearing it per input would be a call per line for nothing.
        if self.sink.tree.on {
            self.sink.tree.reset();
        }
        self.sink.repairs.clear();
        self.parts.clear();
        match lane {
            Lane::Clean => {
                self.parts.push(self.kept..self.sink.out.len());
                return Ok(Mended {
                    out: &self.sink.out,
                    parts: &self.parts,
                    repairs: &self.sink.repairs,
                    concat: self.options.concat,
                });
            }
            // Left for the parser, which takes it up.
            Lane::Pending => {}
            // A pass left by an input a stage failed before the parser took it up: dropped.
            Lane::Closed => self.sink.pending = None,
        }
        let span = trim(input)?;
        // The fields are borrowed one by one (no copy of the options, no move of the layers
        // out and back): this runs once per line.
        let options = &self.options;
        let rules = Rules {
            strict: false,
            max_nesting: options.max_nesting,
            lone_surrogates_as_fffd: self.lone_surrogates_as_fffd,
            fast_path_off: self.fast_path_off,
        };
        let is_json = |text: &[u8]| is_json(text, rules.max_nesting, rules.fast_path_off);
        let found = unquote(
            input.as_bytes(),
            span.clone(),
            options,
            !rules.lone_surrogates_as_fffd,
            &is_json,
            &mut self.sink.repairs,
            &mut self.layers,
        );
        let layers = found
            .and_then(|found| {
                parse(
                    input,
                    &found,
                    &self.layers,
                    &mut self.sink,
                    &mut self.parts,
                    rules,
                )
                .map(|()| found.layers)
            })
            .map_err(|error| validate::failed(error, input, span.end, options))?;
        validate::validate(
            &self.sink.out,
            &self.parts,
            &self.sink.repairs,
            input,
            span.end,
            layers,
            options,
        )?;
        Ok(Mended {
            out: &self.sink.out,
            parts: &self.parts,
            repairs: &self.sink.repairs,
            concat: options.concat,
        })
    }
}

/// What the clean lane made of an input ([`Mender::clean_lane`]).
#[derive(PartialEq, Eq)]
enum Lane {
    /// Not tried: the input does not open like the JSON it takes, or values are built.
    Closed,
    /// The input was valid JSON as it stands: its value was written.
    Clean,
    /// The pass stopped (at a fault, or after a first value with more after it): the parser
    /// takes up there (the sink's `pending`).
    Pending,
}

/// Split and repair: parses the JSON the unquote stage `found` (in the input or in one of the
/// `layers` it decoded), then the text after a closing code fence, writing each value to the
/// sink's output and its range to `parts`. `rules` are the mender's; `found` says if strict.
fn parse(
    input_text: &str,
    found: &Unquoted,
    layers: &[Vec<u8>; 2],
    sink: &mut Sink,
    parts: &mut Vec<Range<usize>>,
    rules: Rules,
) -> Result<(), Error> {
    let input = input_text.as_bytes();
    // The clean lane's pass read the input from where the JSON was found, or its output goes.
    if let Some(pending) = &sink.pending
        && !(found.text == Text::Input && pending.reads(found.start, found.end))
    {
        sink.out.truncate(pending.out_start());
        sink.pending = None;
    }
    let text_of = |text: Text| -> &[u8] {
        match text {
            Text::Input => input,
            Text::Inner => &layers[0],
            Text::Outer => &layers[1],
        }
    };
    let rules = Rules {
        strict: found.strict,
        ..rules
    };
    let note = |mut err: Error| {
        err.message.push_str(&layer_note(found.layers));
        err
    };
    let text = text_of(found.text);
    // The input is text already; a decoded layer is checked once, if values are built.
    let source = match found.text {
        Text::Input => input_text.get(..found.end),
        Text::Inner | Text::Outer => None,
    };
    Parser::new(&text[..found.end], found.start, sink, rules)
        .source_text(source)
        .document(parts, found.jsonp)
        .map_err(note)?;
    if let Some((text, at)) = found.tail {
        // Text after a closing code fence: prose, or more fenced values.
        Parser::new(text_of(text), at, sink, rules)
            .source_text(None)
            .more_values(parts, false)
            .map_err(note)?;
    }
    Ok(())
}

/// Trim: the input past a byte order mark and white space, as a range of the input (offsets
/// stay those of the input as given).
fn trim(input: &str) -> Result<Range<usize>, Error> {
    let span = trimmed(input.as_bytes());
    if span.is_empty() {
        let what = if input.is_empty() {
            "input is empty"
        } else {
            "input is only whitespace"
        };
        return Err(Error::whole(Code::EmptyInput, what));
    }
    Ok(span)
}

/// The range of `input` past a byte order mark and white space (empty when nothing is left).
#[inline]
fn trimmed(input: &[u8]) -> Range<usize> {
    let bytes = input.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(input);
    let shift = input.len() - bytes.len();
    let trimmed = bytes.trim_ascii();
    let lead = shift + (bytes.len() - bytes.trim_ascii_start().len());
    lead..lead + trimmed.len()
}

/// How deep a value's arrays and objects nest (1 for `{}`, 0 for a scalar); without recursion,
/// so that no value is too deep to be measured.
pub(crate) fn depth(value: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(value, 0)];
    while let Some((value, above)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match value {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(members) => Box::new(members.values()),
            _ => continue,
        };
        deepest = deepest.max(above + 1);
        stack.extend(children.map(|child| (child, above + 1)));
    }
    deepest
}

/// Mends tool-call arguments ([`Options::for_tool_arguments`]): the object as compact JSON.
/// Arguments cut off before their end are refused with [`Code::Truncated`], never healed into
/// a call that would run; [`repair`] and a [`Mender`] with [`Truncated::Heal`] heal them, and
/// their [`Mended::repairs`] say so.
///
/// ```
/// assert_eq!(toolmend_core::mend_args("{'a': True,}").unwrap(), r#"{"a":true}"#);
/// let cut = toolmend_core::mend_args(r#"{"cmd": "rm -rf build/x"#).unwrap_err();
/// assert_eq!(cut.code, toolmend_core::Code::Truncated);
/// ```
///
/// # Errors
/// See [`Mender::mend`].
pub fn mend_args(input: &str) -> Result<String, Error> {
    let mut mender = Mender::new(Options::for_tool_arguments());
    mender.mend(input).map(|m| m.value().into_owned())
}

/// Repairs almost-JSON into any JSON value, as compact JSON.
///
/// ```
/// assert_eq!(toolmend_core::repair("[1, 2, 3").unwrap(), "[1,2,3]");
/// assert_eq!(toolmend_core::repair("'text'").unwrap(), r#""text""#);
/// ```
///
/// # Errors
/// See [`Mender::mend`].
pub fn repair(input: &str) -> Result<String, Error> {
    let mut mender = Mender::new(Options {
        target: Target::Any,
        ..Options::default()
    });
    mender.mend(input).map(|m| m.value().into_owned())
}

/// Repairs almost-JSON into any JSON value, as [`repair`] does, read as a value in the same
/// pass (numbers as written); `None` when it is none or nests deeper than `max_nesting`.
pub(crate) fn repair_value(input: &str, max_nesting: usize) -> Option<Value> {
    let mut mender = Mender::new(Options {
        target: Target::Any,
        ..Options::default()
    })
    .building_values();
    let built = mender.mend_value(input).ok()?;
    if built.deepest > max_nesting {
        return None;
    }
    built.value.ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `mend_onto` appends what `mend` then `write_value` would, after what the buffer held,
    /// and nothing on an error: values found anywhere in the output (a later one kept, others
    /// dropped, one decoded from a string, one after a code fence) and every `Concat`.
    #[test]
    fn mend_onto_appends_what_write_value_writes() {
        let inputs = [
            r#"{"a": 1}"#,
            r#"{"a":1}{"b":2}{"c":3}"#,
            r#""{\"a\": [1, 2,]}""#,
            "```json\n{\"a\": 1}\n```\nthen\n```json\n{\"b\": 2}\n```",
            "prose {'a': True} more prose",
            "[1, 2]",
            r#"{"cut": "#,
            "",
            "1 2 3",
        ];
        for concat in [Concat::First, Concat::All, Concat::Error] {
            for target in [Target::Object, Target::Any] {
                let options = Options {
                    concat,
                    target,
                    ..Options::default()
                };
                let (mut plain, mut onto) = (Mender::new(options.clone()), Mender::new(options));
                let mut buf = b"held\n".to_vec();
                for input in inputs {
                    let mut want = buf.clone();
                    let expected = plain.mend(input).map(|m| m.write_value(&mut want));
                    let got = onto.mend_onto(input, &mut buf);
                    assert_eq!(got.is_ok(), expected.is_ok(), "{input:?} {concat:?}");
                    assert_eq!(buf, want, "{input:?} {concat:?} {target:?}");
                    buf.push(b'\n');
                    // The same mender, used plainly in between, is not confused.
                    let again = onto.mend(input).map(|m| m.value().into_owned());
                    let first = plain.mend(input).map(|m| m.value().into_owned());
                    assert_eq!(again.ok(), first.ok());
                }
            }
        }
    }
}
