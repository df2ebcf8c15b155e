//! The args pipeline, composed: trim, unquote, split, repair, validate.
//!
//! [`Mender`] owns every buffer the stages use and reuses them from one input to the next, so
//! mending a stream of lines allocates nothing per line once the buffers have grown.

// The stages, in the order they run; a stage imports only those above it.

/// 1. Finding the JSON in text with more around it: code fences, prose.
pub(crate) mod locate;

/// 2. Decoding string layers that hold JSON text.
pub(crate) mod unquote;

/// The parser's stack of open arrays and objects.
pub(crate) mod nesting;

/// 3 and 4. Splitting values written one after another and repairing them: one pass that
/// writes compact JSON as it reads.
pub(crate) mod parse;

use std::borrow::Cow;
use std::io::{self, Write};
use std::ops::Range;

use crate::args::locate::locate;
use crate::args::parse::{Parser, Rules, Scratch};
use crate::args::unquote::{Layer, decode, is_bare_escaped};
use crate::error::{Code, Error};
use crate::repair::{Repair, RepairKind, ends_inside_a_value, truncated, truncation};

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

/// Runs the pipeline over one input after another, reusing its buffers.
///
/// ```
/// use toolmend::{Mender, Options};
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
    out: Vec<u8>,
    layers: [Vec<u8>; 2],
    repairs: Vec<Repair>,
    parts: Vec<Range<usize>>,
    scratch: Scratch,
    /// Lone surrogate escapes become U+FFFD (see [`Mender::replacing_lone_surrogates`]).
    lone_surrogates_as_fffd: bool,
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
        self.write_value_to(buf).expect("a Vec takes every write");
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

    /// The options this mender runs with.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Runs the pipeline over one input.
    ///
    /// # Errors
    /// An [`Error`] whose [`Code`] says which stage failed and whose message says where.
    pub fn mend(&mut self, input: &str) -> Result<Mended<'_>, Error> {
        self.out.clear();
        self.repairs.clear();
        self.parts.clear();
        let options = self.options.clone();
        let bytes = input.as_bytes();
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        let shift = input.len() - bytes.len();
        let trimmed = bytes.trim_ascii();
        if trimmed.is_empty() {
            let what = if input.is_empty() {
                "input is empty"
            } else {
                "input is only whitespace"
            };
            return Err(Error::whole(Code::EmptyInput, what));
        }
        // Offsets are in the input as given, BOM and leading whitespace included.
        let lead = shift + (bytes.len() - bytes.trim_ascii_start().len());
        let end = lead + trimmed.len();

        let [mut cur, mut next] = std::mem::take(&mut self.layers);
        let result =
            self.unquote_and_parse(input.as_bytes(), lead, end, &options, &mut cur, &mut next);
        self.layers = [cur, next];
        let layers = match result {
            // Text a strict reader finds ending inside a value was cut off, whatever the
            // repairs could not make of it.
            Err(error)
                if options.truncated == Truncated::Error
                    && !options.strict
                    && error.code == Code::InvalidJson
                    && ends_inside_a_value(input) =>
            {
                return Err(Error {
                    code: Code::Truncated,
                    message: format!(
                        "the input was cut off before its end: it ends inside a JSON value \
                         ({}); --truncated error refuses it",
                        error.message
                    ),
                    offset: Some(end),
                });
            }
            result => result?,
        };

        if options.truncated == Truncated::Error && truncated(&self.repairs, input) {
            let what = match truncation(&self.repairs, input) {
                Some(cut) => format!(
                    "{}{}{}",
                    cut.kind.as_str(),
                    cut.offset
                        .map_or(String::new(), |o| format!(" at byte {o}")),
                    layer_note(layers)
                ),
                None => "it ends inside a JSON value".to_owned(),
            };
            return Err(Error {
                code: Code::Truncated,
                message: format!(
                    "the input was cut off before its end: {what}; --truncated error refuses it"
                ),
                offset: Some(end),
            });
        }

        if self.parts.len() > 1 && options.concat == Concat::Error {
            return Err(Error::whole(
                Code::Concatenated,
                format!(
                    "{} JSON values written one after another{}",
                    self.parts.len(),
                    layer_note(layers)
                ),
            ));
        }
        if options.target == Target::Object {
            let checked = match options.concat {
                Concat::All => self.parts.len(),
                _ => 1,
            };
            for part in &self.parts[..checked] {
                let found = match self.out[part.start] {
                    b'{' => continue,
                    b'[' => "an array",
                    b'"' => "a string",
                    b't' | b'f' => "a boolean",
                    b'n' => "null",
                    _ => "a number",
                };
                return Err(Error::whole(
                    Code::NotAnObject,
                    format!(
                        "expected a JSON object, found {found}{}",
                        layer_note(layers)
                    ),
                ));
            }
        }
        Ok(Mended {
            out: &self.out,
            parts: &self.parts,
            repairs: &self.repairs,
            concat: options.concat,
        })
    }

    /// Stages 2 to 4 over `input[start..end]`: decodes string layers into `cur`/`next` (which
    /// swap roles each layer), then parses the innermost text. Returns the number of layers.
    fn unquote_and_parse(
        &mut self,
        input: &[u8],
        start: usize,
        end: usize,
        options: &Options,
        cur: &mut Vec<u8>,
        next: &mut Vec<u8>,
    ) -> Result<u32, Error> {
        // A valid JSON string given to `repair` is a value as it stands: it is unquoted only
        // when its layers, each a valid literal, end in a whole object or array. Neither the
        // text it holds (`"{}` in `"\"{}"`, a fenced block) nor the input around it is mended.
        let valid_string = options.target == Target::Any
            && !options.strict
            && input[start] == b'"'
            && decode(
                &input[start..end],
                false,
                true,
                !self.lone_surrogates_as_fffd,
                next,
            )
            .is_some();
        let strict = options.strict || valid_string;
        let (mut lo, mut hi) = (start, end);
        let mut in_buffer = false;
        let mut layers = 0u32;
        let mut quoted_layers = 0u32;
        let mut jsonp = false;
        let mut tail = None;
        // Where `tail` is: in the text being parsed, or (a string written with escaped quotes
        // inside a code fence) in the text the last layer was decoded from; `Some(true)` when
        // that was a buffer (now `next`), `Some(false)` when it was the input.
        let mut tail_before: Option<bool> = None;
        let mut escaped_string = false;
        // Where the input's own text was found, to go back to if the layers hold no JSON.
        let mut outer = None;
        loop {
            let text: &[u8] = if in_buffer { cur } else { input };
            if !strict {
                let found = locate(&text[..hi], lo, &mut self.repairs);
                (lo, hi, jsonp, tail) = (found.start, found.end, found.jsonp, found.tail);
                let body = text[lo..hi].trim_ascii_end();
                hi = lo + body.len();
            }
            outer.get_or_insert((lo, hi, jsonp, tail, self.repairs.len()));
            let body = &text[lo..hi];
            if body.is_empty() {
                break;
            }
            let bare = is_bare_escaped(body);
            if bare && valid_string {
                // `{\"a\":1}` held by a valid string is text, not an object.
                break;
            }
            // `\"hello world\"`: a string written with escaped quotes; its value is the string.
            let bare_string = bare && body[0] == b'\\';
            if !matches!(body[0], b'"' | b'\'') && !bare {
                break;
            }
            let keep_lone = !self.lone_surrogates_as_fffd;
            let Some(layer) = decode(body, bare, strict, keep_lone, next) else {
                break;
            };
            let decoded = next.trim_ascii();
            if !holds_json(decoded, options, bare, strict)? {
                break;
            }
            if layers == options.max_depth {
                return Err(Error::whole(
                    Code::DepthExceeded,
                    format!(
                        "still a JSON string after {} unquote layers (--max-depth)",
                        options.max_depth
                    ),
                ));
            }
            if !bare {
                quoted_layers += 1;
            }
            note_layer(&mut self.repairs, &layer, body[0], bare, lo);
            layers += 1;
            let lead = next.len() - next.trim_ascii_start().len();
            lo = lead;
            hi = lead + decoded.len();
            std::mem::swap(cur, next);
            let was_in_buffer = in_buffer;
            in_buffer = true;
            if bare_string {
                if tail.is_some() {
                    tail_before = Some(was_in_buffer);
                }
                escaped_string = true;
                break;
            }
        }
        if layers > 0
            && !escaped_string
            && !matches!(
                self.text_at(in_buffer, input, cur, lo, hi),
                Some(b'{' | b'[')
            )
        {
            // The layers end in a plain string: the value is the string as the input wrote
            // it, not its contents (`"\"hi\""` stays that string).
            let (outer_lo, outer_hi, outer_jsonp, outer_tail, outer_repairs) =
                outer.expect("the loop ran once");
            self.repairs.truncate(outer_repairs);
            (lo, hi, jsonp, tail) = (outer_lo, outer_hi, outer_jsonp, outer_tail);
            (in_buffer, layers, quoted_layers) = (false, 0, 0);
            tail_before = None;
        }
        if quoted_layers > 0 {
            note_unquote(&mut self.repairs, quoted_layers);
        }
        let text: &[u8] = if in_buffer { cur } else { input };
        let rules = Rules {
            strict,
            max_nesting: options.max_nesting,
            lone_surrogates_as_fffd: self.lone_surrogates_as_fffd,
        };
        let mut parser = Parser::new(
            &text[..hi],
            lo,
            &mut self.out,
            &mut self.repairs,
            &mut self.scratch,
            rules,
        );
        let note = |mut err: Error| {
            err.message.push_str(&layer_note(layers));
            err
        };
        parser.document(&mut self.parts, jsonp).map_err(note)?;
        if let Some(tail) = tail {
            // Text after a closing code fence: prose, or more fenced values.
            let text: &[u8] = match tail_before {
                None => text,
                Some(true) => next,
                Some(false) => input,
            };
            Parser::new(
                text,
                tail,
                &mut self.out,
                &mut self.repairs,
                &mut self.scratch,
                rules,
            )
            .more_values(&mut self.parts, false)
            .map_err(note)?;
        }
        Ok(layers)
    }

    fn text_at(
        &self,
        in_buffer: bool,
        input: &[u8],
        cur: &[u8],
        lo: usize,
        hi: usize,
    ) -> Option<u8> {
        let text = if in_buffer { cur } else { input };
        text[lo..hi].first().copied()
    }
}

/// Whether a string layer's `decoded` text holds JSON to unquote into (`Err` for a string of
/// only whitespace where an object is wanted).
fn holds_json(decoded: &[u8], options: &Options, bare: bool, strict: bool) -> Result<bool, Error> {
    Ok(match decoded.first() {
        // `repair` takes a string for the JSON it holds only when that is JSON as it
        // stands: `"["` or `"{a:b}"` stay strings (as json_repair and jsonrepair keep
        // them), while `args`, which needs an object, also mends what a string holds.
        Some(b'{' | b'[') if options.target == Target::Any && !bare => {
            is_json(decoded, options.max_nesting)
        }
        Some(b'{' | b'[' | b'"') => true,
        // For `args`, a string that decodes to code-fenced JSON (with or without
        // prose around the block). `repair` keeps such a string: it is a valid value.
        Some(_) => {
            !strict
                && options.target == Target::Object
                && memchr::memmem::find(decoded, b"```").is_some()
        }
        None => {
            if options.target == Target::Object {
                return Err(Error::whole(
                    Code::EmptyInput,
                    "input is a JSON string holding only whitespace",
                ));
            }
            false
        }
    })
}

/// The repairs of one string layer decoded at `lo` (its first byte `first`): unescaped text,
/// single quotes, a missing closing quote, a raw quote, a lone surrogate.
fn note_layer(repairs: &mut Vec<Repair>, layer: &Layer, first: u8, bare: bool, lo: usize) {
    if bare {
        repairs.push(Repair::at(RepairKind::Unescape, lo));
    } else if first == b'\'' {
        repairs.push(Repair::at(RepairKind::SingleQuotes, lo));
    }
    if layer.unterminated {
        repairs.push(Repair::at(RepairKind::UnterminatedString, lo));
    }
    if let Some(at) = layer.raw_quote {
        repairs.push(Repair::at(RepairKind::UnescapedQuote, lo + at));
    }
    if let Some(at) = layer.lone_surrogate {
        repairs.push(Repair::at(RepairKind::LoneSurrogate, lo + at));
    }
}

/// The `unquote` repair for `layers` quoted layers, after what locating the text reported
/// (prose, a code fence, JSONP) and before the rest.
fn note_unquote(repairs: &mut Vec<Repair>, layers: u32) {
    let position = repairs
        .iter()
        .position(|r| {
            r.kind != RepairKind::Prose
                && r.kind != RepairKind::CodeFence
                && r.kind != RepairKind::Jsonp
        })
        .unwrap_or(repairs.len());
    repairs.insert(
        position,
        Repair {
            kind: RepairKind::Unquote,
            offset: None,
            layers: Some(layers),
            text: None,
            path: None,
        },
    );
}

/// Whether `text` is one JSON value as it stands (a strict parse into scratch buffers; used only
/// for strings that decode to something that opens like JSON).
fn is_json(text: &[u8], max_nesting: usize) -> bool {
    let (mut out, mut repairs, mut parts) = (Vec::new(), Vec::new(), Vec::new());
    let mut scratch = Scratch::default();
    let rules = Rules {
        strict: true,
        max_nesting,
        lone_surrogates_as_fffd: false,
    };
    Parser::new(text, 0, &mut out, &mut repairs, &mut scratch, rules)
        .document(&mut parts, false)
        .is_ok()
        && parts.len() == 1
}

fn layer_note(layers: u32) -> String {
    match layers {
        0 => String::new(),
        1 => " (in the text decoded from 1 string layer)".to_owned(),
        n => format!(" (in the text decoded from {n} string layers)"),
    }
}

/// Mends tool-call arguments with the default options: the object as compact JSON.
///
/// ```
/// assert_eq!(toolmend::mend_args("{'a': True,}").unwrap(), r#"{"a":true}"#);
/// ```
///
/// # Errors
/// See [`Mender::mend`].
pub fn mend_args(input: &str) -> Result<String, Error> {
    let mut mender = Mender::new(Options::default());
    mender.mend(input).map(|m| m.value().into_owned())
}

/// Repairs almost-JSON into any JSON value, as compact JSON.
///
/// ```
/// assert_eq!(toolmend::repair("[1, 2, 3").unwrap(), "[1,2,3]");
/// assert_eq!(toolmend::repair("'text'").unwrap(), r#""text""#);
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
