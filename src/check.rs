//! `check`: runs fixture files as regression tests.
//!
//! A fixture file is JSONL; each line is a case:
//!
//! ```text
//! {"name"?, "command"?, "options"?, "input", "expect"?, "dropped"?, "repairs"?, "error"?, "offset"?, "strict"?}
//! ```
//!
//! - `command` is `args` (the default), `repair` or `calls`; `options` is a list of flags as
//!   they would be written on the command line (`["--concat", "all"]`). Relative paths in them
//!   (`--tools`) are taken from the fixture file's folder.
//! - `input` is the raw text (a string), or an object that is one `--input jsonl` line as it is
//!   (`{"arguments": …}`, an OpenAI-style message for `calls`). A `calls` text is read as a
//!   whole document, the way `toolmend calls FILE` reads it.
//! - `expect` is the value the case must give, compared as compact JSON text: key order, the
//!   text of numbers and escapes count, whitespace between tokens does not. `dropped` lists the
//!   values left out (`--concat first`); absent means none, so nothing is lost unnoticed.
//!   `repairs` (a list of `{kind, offset?, layers?, text?, key?}`) is compared the same way,
//!   when present.
//! - `error` is the error code the case must fail with, or the whole error object (`code`,
//!   `message`, `original`, `offset`?, …) compared like `expect`; `offset` is its byte offset
//!   (compared when present). With `error`, `expect` is the value the failure record carries
//!   (`calls` writes the calls it found and the ones it rejected).
//! - `strict` is the outcome of the same input under `--strict` (`"ok"` or an error code). When
//!   present it is compared, and the rule that ties the two runs together is checked: an input
//!   that needed a repair fails under `--strict`, and one that needed none passes.
//!
//! A case with neither `expect` nor `error` fails until `--bless` records what it gives. A case
//! whose fields could not all be compared is malformed, so that it cannot pass unchecked: a
//! field one edit from a known one (`repiars`), `expect` with `error` (but for `calls`),
//! `repairs` or `dropped` with `error`, `offset` without `error`. Other fields are the author's
//! and are kept.
//! Cases are run in-process, in one batch per file, command and options; the [`Runner`] (the
//! binary's own argument parser) turns the command and options into a filter, so options mean
//! exactly what they mean on the command line.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::de::{Deserialize, Deserializer};
use serde_json::Value;
use serde_json::value::RawValue;

use toolmend_core::cut;
use toolmend_core::object_members;
use toolmend_core::{Concat, Mender, Options, Target};

/// Repairs that `--strict` also makes: they change the form of the text, never its grammar.
const ALLOWED_IN_STRICT: &[&str] = &["unquote", "unescape", "duplicate_key"];

/// The fields that hold expectations, in the order `--bless` writes them (after `input`).
const OUTCOME_FIELDS: &[&str] = &["expect", "dropped", "repairs", "error", "offset", "strict"];

/// Every field a case reads. Other fields are the author's own (a note, a ticket number) and
/// are kept, but one within an edit of these is a typo that would go unchecked.
const CASE_FIELDS: &[&str] = &[
    "name", "command", "options", "input", "expect", "dropped", "repairs", "error", "offset",
    "strict",
];

/// The commands a case may run.
const COMMANDS: &[&str] = &["args", "repair", "calls"];

/// How far a value or an input is shown in a report before it is cut.
const SHOW_CHARS: usize = 300;

/// Runs a batch of inputs through a command, the way the binary would.
pub trait Runner {
    /// Runs `toolmend COMMAND ARGS…` over the run's input (its stdin) and returns what it
    /// writes on stdout.
    ///
    /// # Errors
    /// A message when the arguments are not valid for the command.
    fn run(&mut self, run: &Run<'_>) -> Result<Vec<u8>, String>;
}

/// One run of a command over a batch of cases.
#[derive(Debug, Clone, Copy)]
pub struct Run<'a> {
    /// The command: `args`, `repair` or `calls`.
    pub command: &'a str,
    /// `--records` and an `--input` framing, then the cases' options.
    pub args: &'a [String],
    /// The fixture file's folder, for the relative paths in options.
    pub dir: &'a Path,
    /// The cases' inputs, as the command reads them on stdin.
    pub input: &'a [u8],
}

/// Settings of a check run.
#[derive(Debug, Clone, Copy, Default)]
pub struct CheckOptions {
    /// Write the current results back into the fixture files instead of comparing them.
    pub bless: bool,
}

/// Something that keeps the fixtures from being run: an unreadable file, a malformed case,
/// options the command does not take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// `FILE` or `FILE:LINE`.
    pub location: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.message)
    }
}

/// What a check run found.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Cases that gave what they expect.
    pub passed: usize,
    /// Cases that did not (each was written to the report output).
    pub failed: usize,
    /// With `bless`: cases whose expectations were rewritten.
    pub blessed: usize,
    /// With `bless`: files written.
    pub files_written: usize,
    /// Problems that kept fixtures from running; any makes the run a usage error.
    pub problems: Vec<Problem>,
}

/// Runs every case in `paths` (files, and folders searched for `*.jsonl`), writes each failing
/// case and a summary line (`N passed, N failed`) to `out`, and with `options.bless` writes the
/// results back into the files.
///
/// # Errors
/// Only errors writing to `out`; everything about the fixtures is in the [`Report`].
pub fn check(
    paths: &[PathBuf],
    options: CheckOptions,
    runner: &mut dyn Runner,
    out: &mut dyn Write,
) -> io::Result<Report> {
    let mut report = Report::default();
    let mut files = Vec::new();
    for path in paths {
        if let Err(e) = fixture_files(path, true, &mut files) {
            report.problems.push(Problem {
                location: path.display().to_string(),
                message: e.to_string(),
            });
        }
    }
    let mut loaded = Vec::new();
    for path in &files {
        match load(path) {
            Ok(fixture) => loaded.push(fixture),
            Err(mut problems) => report.problems.append(&mut problems),
        }
    }
    if !report.problems.is_empty() {
        return Ok(report);
    }
    if loaded.iter().all(|f| f.cases.is_empty()) {
        report.problems.push(Problem {
            location: paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" "),
            message: "no fixture cases found (looked for *.jsonl in folders)".into(),
        });
        return Ok(report);
    }
    for fixture in &mut loaded {
        run_fixture(fixture, options, runner, out, &mut report)?;
    }
    if options.bless {
        writeln!(
            out,
            "{} cases blessed in {} files",
            report.blessed, report.files_written
        )?;
    } else {
        writeln!(out, "{} passed, {} failed", report.passed, report.failed)?;
    }
    out.flush()?;
    Ok(report)
}

/// Adds `path` (a file) or the `*.jsonl` files under it (a folder), sorted, to `found`.
fn fixture_files(path: &Path, given: bool, found: &mut Vec<PathBuf>) -> io::Result<()> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_dir() {
        // A file named on the command line is a fixture whatever its name.
        if given || path.extension().is_some_and(|e| e == "jsonl") {
            found.push(path.to_owned());
        }
        return Ok(());
    }
    let mut entries = std::fs::read_dir(path)?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<io::Result<Vec<_>>>()?;
    entries.sort();
    for entry in entries {
        fixture_files(&entry, false, found)?;
    }
    Ok(())
}

/// A fixture line's fields, in their order, each as its exact JSON text.
struct Fields(Vec<(String, Box<RawValue>)>);

impl<'de> Deserialize<'de> for Fields {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Fields, D::Error> {
        object_members(deserializer, "a JSON object (a fixture case)", true).map(Fields)
    }
}

impl Fields {
    fn get(&self, key: &str) -> Option<&RawValue> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| &**v)
    }

    fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }
}

/// One case of a fixture file.
struct Case {
    /// 1-based line in its file.
    line: usize,
    fields: Fields,
    name: Option<String>,
    command: String,
    options: Vec<String>,
    /// The input as it is shown in a report.
    input_shown: String,
    /// The input as one `--input jsonl` line.
    jsonl: String,
    /// The input text, for a case run as a whole document (`calls` with a text input).
    whole: Option<String>,
}

/// A fixture file and its cases; `lines` keeps every line, to write the file back.
struct Fixture {
    path: PathBuf,
    lines: Vec<String>,
    trailing_newline: bool,
    cases: Vec<Case>,
}

fn load(path: &Path) -> Result<Fixture, Vec<Problem>> {
    let problem = |line: Option<usize>, message: String| Problem {
        location: match line {
            Some(line) => format!("{}:{line}", path.display()),
            None => path.display().to_string(),
        },
        message,
    };
    let bytes = std::fs::read(path).map_err(|e| vec![problem(None, e.to_string())])?;
    let text = String::from_utf8(bytes).map_err(|e| {
        vec![problem(
            None,
            format!("not UTF-8 (byte {})", e.utf8_error().valid_up_to()),
        )]
    })?;
    let lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let mut cases = Vec::new();
    let mut problems = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match parse_case(i + 1, line) {
            Ok(case) => cases.push(case),
            Err(message) => problems.push(problem(Some(i + 1), message)),
        }
    }
    if problems.is_empty() {
        Ok(Fixture {
            path: path.to_owned(),
            lines,
            trailing_newline: text.ends_with('\n'),
            cases,
        })
    } else {
        Err(problems)
    }
}

/// Reads one line into a case; the error says what is malformed.
fn parse_case(line: usize, text: &str) -> Result<Case, String> {
    let fields: Fields =
        serde_json::from_str(text).map_err(|e| format!("not a fixture case: {e}"))?;
    for (key, _) in &fields.0 {
        if let Some(meant) = CASE_FIELDS
            .iter()
            .find(|f| **f != key && one_edit_apart(key, f))
        {
            return Err(format!(
                "the field {key:?} looks like a misspelt {meant:?}, which would go unchecked; a \
                 case reads: {}",
                CASE_FIELDS.join(", ")
            ));
        }
    }
    let string = |key: &str| -> Result<Option<String>, String> {
        fields
            .get(key)
            .map(|v| serde_json::from_str::<String>(v.get()))
            .transpose()
            .map_err(|_| format!("{key:?} must be a string"))
    };
    let name = string("name")?;
    let command = string("command")?.unwrap_or_else(|| "args".into());
    if !COMMANDS.contains(&command.as_str()) {
        return Err(format!(
            "unknown command {command:?}; expected one of: {}",
            COMMANDS.join(", ")
        ));
    }
    let options = fields
        .get("options")
        .map(|v| serde_json::from_str::<Vec<String>>(v.get()))
        .transpose()
        .map_err(|_| "\"options\" must be a list of strings".to_owned())?
        .unwrap_or_default();
    let input = fields
        .get("input")
        .ok_or("a case needs an \"input\"")?
        .get();
    let (jsonl, whole) = match input.as_bytes()[0] {
        b'"' => {
            let text: String = serde_json::from_str(input).map_err(|e| e.to_string())?;
            let jsonl = serde_json::json!({ "text": text }).to_string();
            (jsonl, (command == "calls").then_some(text))
        }
        b'{' => (input.to_owned(), None),
        _ => return Err("\"input\" must be a string (the raw text) or an object".into()),
    };
    if let Some(error) = fields.get("error") {
        let code = match error.get().as_bytes()[0] {
            b'{' => serde_json::from_str::<Value>(error.get())
                .ok()
                .and_then(|e| e.get("code").cloned()),
            _ => serde_json::from_str::<Value>(error.get()).ok(),
        };
        if !code.as_ref().is_some_and(Value::is_string) {
            return Err(
                "\"error\" must be an error code, or a whole error object with a \"code\"".into(),
            );
        }
    }
    // Fields that could never be compared make a case that passes whatever it gives.
    if fields.has("error") {
        if fields.has("expect") && command != "calls" {
            return Err(format!(
                "a case gives a value (\"expect\") or fails (\"error\"), not both: an {command} \
                 failure carries no value (only calls writes one with its error)"
            ));
        }
        if let Some(key) = ["repairs", "dropped"].into_iter().find(|k| fields.has(k)) {
            return Err(format!(
                "{key:?} describes a value, and a case that expects an \"error\" has none"
            ));
        }
    } else if fields.has("offset") {
        return Err("\"offset\" is the offset of an \"error\", and the case has none".into());
    }
    string("strict")?;
    for key in ["repairs", "dropped"] {
        if let Some(v) = fields.get(key)
            && !v.get().starts_with('[')
        {
            return Err(format!("{key:?} must be a list"));
        }
    }
    if let Some(v) = fields.get("offset") {
        serde_json::from_str::<u64>(v.get())
            .map_err(|_| "\"offset\" must be a byte offset (a whole number)".to_owned())?;
    }
    Ok(Case {
        line,
        name,
        command,
        options,
        input_shown: cut(input, SHOW_CHARS),
        jsonl,
        whole,
        fields,
    })
}

/// Whether `a` becomes `b` by one change, case aside: a letter added, dropped or replaced, or
/// two neighbours swapped (`repiars`, `expcet`, `Expect`, `repair`, `errors`).
fn one_edit_apart(a: &str, b: &str) -> bool {
    let a: Vec<char> = a.chars().flat_map(char::to_lowercase).collect();
    let b: Vec<char> = b.chars().flat_map(char::to_lowercase).collect();
    let (short, long) = if a.len() <= b.len() {
        (&a, &b)
    } else {
        (&b, &a)
    };
    let start = short
        .iter()
        .zip(long.iter())
        .take_while(|(x, y)| x == y)
        .count();
    match long.len() - short.len() {
        0 if start == short.len() => true,
        0 => {
            let rest = start + 1;
            short[rest..] == long[rest..]
                || (rest < short.len()
                    && short[start] == long[rest]
                    && short[rest] == long[start]
                    && short[rest + 1..] == long[rest + 1..])
        }
        1 => short[start..] == long[start + 1..],
        _ => false,
    }
}

/// What a case gave: a value (with its repairs and dropped values) or an error, each field as
/// the JSON text it would have in a fixture.
#[derive(Debug)]
enum Outcome {
    Value {
        value: String,
        repairs: String,
        dropped: Option<String>,
    },
    Error {
        code: String,
        offset: Option<u64>,
        message: String,
        /// The whole error object.
        raw: String,
        /// The value a failure record may carry (`calls`: the calls found, the rejected ones).
        value: Option<String>,
    },
}

/// A record as the filters write it, its value and lists kept as their exact text.
#[derive(serde::Deserialize)]
struct Record {
    ok: bool,
    #[serde(default)]
    value: Option<Box<RawValue>>,
    #[serde(default)]
    repairs: Option<Box<RawValue>>,
    #[serde(default)]
    dropped: Option<Box<RawValue>>,
    #[serde(default)]
    error: Option<Box<RawValue>>,
}

#[derive(serde::Deserialize)]
struct RecordError {
    code: String,
    #[serde(default)]
    message: String,
    #[serde(default)]
    offset: Option<u64>,
}

impl Outcome {
    fn from_record(line: &str) -> Result<Outcome, String> {
        let record: Record =
            serde_json::from_str(line).map_err(|e| format!("unreadable record ({e}): {line}"))?;
        if record.ok {
            Ok(Outcome::Value {
                value: record
                    .value
                    .map_or_else(|| "null".into(), |v| v.get().to_owned()),
                repairs: record
                    .repairs
                    .map_or_else(|| "[]".into(), |v| v.get().to_owned()),
                dropped: record
                    .dropped
                    .map(|d| d.get().to_owned())
                    .filter(|d| d != "[]"),
            })
        } else {
            let raw = record.error.ok_or("a failure record without an error")?;
            let error: RecordError = serde_json::from_str(raw.get())
                .map_err(|e| format!("unreadable error ({e}): {line}"))?;
            Ok(Outcome::Error {
                code: error.code,
                offset: error.offset,
                message: error.message,
                raw: raw.get().to_owned(),
                value: record.value.map(|v| v.get().to_owned()),
            })
        }
    }

    /// `"ok"` or the error code, as `strict` is written.
    fn strict_text(&self) -> String {
        match self {
            Outcome::Value { .. } => "\"ok\"".into(),
            Outcome::Error { code, .. } => Value::from(code.as_str()).to_string(),
        }
    }

    /// The outcome fields of a blessed case, as (field, JSON text), in the form `case` uses.
    fn fields(&self, case: &Fields) -> Vec<(&'static str, String)> {
        match self {
            Outcome::Value {
                value,
                repairs,
                dropped,
            } => {
                let mut fields = vec![("expect", value.clone())];
                if let Some(dropped) = dropped {
                    fields.push(("dropped", dropped.clone()));
                }
                fields.push(("repairs", repairs.clone()));
                fields
            }
            Outcome::Error {
                code,
                offset,
                raw,
                value,
                ..
            } => {
                let whole = case.get("error").is_some_and(|e| e.get().starts_with('{'));
                let mut fields = Vec::new();
                if let Some(value) = value.as_ref().filter(|_| case.has("expect")) {
                    fields.push(("expect", value.clone()));
                }
                if whole {
                    fields.push(("error", raw.clone()));
                } else {
                    fields.push(("error", Value::from(code.as_str()).to_string()));
                }
                if let Some(offset) = offset.filter(|_| !whole || case.has("offset")) {
                    fields.push(("offset", offset.to_string()));
                }
                fields
            }
        }
    }
}

fn run_fixture(
    fixture: &mut Fixture,
    options: CheckOptions,
    runner: &mut dyn Runner,
    out: &mut dyn Write,
    report: &mut Report,
) -> io::Result<()> {
    let dir = fixture
        .path
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_owned);
    // Written by --bless when the file already records it for some case.
    let file_has_strict = fixture.cases.iter().any(|c| c.fields.has("strict"));
    let mut groups: BTreeMap<(&str, &[String]), Vec<usize>> = BTreeMap::new();
    for (i, case) in fixture.cases.iter().enumerate() {
        groups
            .entry((&case.command, &case.options))
            .or_default()
            .push(i);
    }
    let mut results: Vec<Option<(Outcome, Option<Outcome>)>> =
        (0..fixture.cases.len()).map(|_| None).collect();
    let mut problems = Vec::new();
    for ((command, case_options), indexes) in groups {
        let wants_strict = indexes
            .iter()
            .any(|&i| fixture.cases[i].fields.has("strict"))
            || (options.bless && file_has_strict);
        // Inputs given as jsonl lines run in one batch; a `calls` reply runs as a whole
        // document, as `toolmend calls FILE` would read it.
        let (whole, jsonl): (Vec<usize>, Vec<usize>) = indexes
            .iter()
            .partition(|&&i| fixture.cases[i].whole.is_some());
        let batches = whole
            .into_iter()
            .map(|i| vec![i])
            .chain((!jsonl.is_empty()).then_some(jsonl));
        for batch in batches {
            let location = format!(
                "{}:{}",
                fixture.path.display(),
                fixture.cases[batch[0]].line
            );
            let (framing, input) = match &fixture.cases[batch[0]].whole {
                Some(text) => ("whole", text.clone()),
                None => (
                    "jsonl",
                    batch
                        .iter()
                        .map(|&i| format!("{}\n", fixture.cases[i].jsonl))
                        .collect(),
                ),
            };
            let args: Vec<String> = ["--records", "--input", framing]
                .into_iter()
                .map(str::to_owned)
                .chain(case_options.iter().cloned())
                .collect();
            let mut run = Run {
                command,
                args: &args,
                dir: &dir,
                input: input.as_bytes(),
            };
            let normal = run_batch(runner, &run, batch.len());
            let strict = if wants_strict {
                let mut strict_args = args.clone();
                if !case_options.iter().any(|o| o == "--strict") {
                    strict_args.push("--strict".into());
                }
                run.args = &strict_args;
                run_batch(runner, &run, batch.len()).map(Some)
            } else {
                Ok(None)
            };
            match (normal, strict) {
                (Ok(normal), Ok(strict)) => {
                    let mut strict = strict.map(Vec::into_iter);
                    for (&i, outcome) in batch.iter().zip(normal) {
                        let strict = strict.as_mut().and_then(Iterator::next);
                        results[i] = Some((outcome, strict));
                    }
                }
                (Err(message), _) | (_, Err(message)) => {
                    problems.push(Problem {
                        location,
                        message: format!("{command} {}: {message}", case_options.join(" ")),
                    });
                    break;
                }
            }
        }
    }
    if !problems.is_empty() {
        report.problems.append(&mut problems);
        return Ok(());
    }
    let mut changed = false;
    for (case, result) in fixture.cases.iter().zip(results) {
        let (outcome, strict) = result.expect("every case was run");
        if options.bless {
            let keep_strict = file_has_strict || case.fields.has("strict");
            if let Some(line) = bless_line(case, &outcome, strict.as_ref().filter(|_| keep_strict))
            {
                fixture.lines[case.line - 1] = line;
                report.blessed += 1;
                changed = true;
            }
            continue;
        }
        let mismatches = compare(case, &outcome, strict.as_ref());
        if mismatches.is_empty() {
            report.passed += 1;
        } else {
            report.failed += 1;
            write_failure(out, &fixture.path, case, &outcome, &mismatches)?;
        }
    }
    if changed {
        let mut text = fixture.lines.join("\n");
        if fixture.trailing_newline {
            text.push('\n');
        }
        if let Err(e) = std::fs::write(&fixture.path, text) {
            report.problems.push(Problem {
                location: fixture.path.display().to_string(),
                message: e.to_string(),
            });
        } else {
            report.files_written += 1;
        }
    }
    Ok(())
}

fn run_batch(runner: &mut dyn Runner, run: &Run<'_>, count: usize) -> Result<Vec<Outcome>, String> {
    let output = runner.run(run)?;
    let output = String::from_utf8(output).map_err(|e| format!("output is not UTF-8: {e}"))?;
    let outcomes = output
        .lines()
        .map(Outcome::from_record)
        .collect::<Result<Vec<_>, _>>()?;
    if outcomes.len() != count {
        return Err(format!("{count} inputs gave {} records", outcomes.len()));
    }
    Ok(outcomes)
}

/// What differs between a case and its outcome, one entry per field.
fn compare(case: &Case, got: &Outcome, strict: Option<&Outcome>) -> Vec<String> {
    let mut mismatches = Vec::new();
    let fields = &case.fields;
    match (fields.get("expect"), fields.get("error"), got) {
        (None, None, _) => mismatches.push(
            "the case has no expectation (\"expect\" or \"error\"); run with --bless to record one"
                .into(),
        ),
        (
            Some(expect),
            None,
            Outcome::Value {
                value,
                repairs,
                dropped,
            },
        ) => {
            if let Some(diff) = json_text_diff(expect.get(), value) {
                mismatches.push(format!(
                    "expect:\n    expected {}\n    got      {}\n    {diff}",
                    show(expect.get()),
                    show(value)
                ));
            }
            let want_dropped = fields.get("dropped").map_or("[]", RawValue::get);
            let got_dropped = dropped.as_deref().unwrap_or("[]");
            if let Some(diff) = json_text_diff(want_dropped, got_dropped) {
                mismatches.push(format!(
                    "dropped:\n    expected {}\n    got      {}\n    {diff}",
                    show(want_dropped),
                    show(got_dropped)
                ));
            }
            if let Some(want) = fields.get("repairs")
                && let Some(diff) = json_text_diff(want.get(), repairs)
            {
                mismatches.push(format!(
                    "repairs:\n    expected {}\n    got      {}\n    {diff}",
                    show(want.get()),
                    show(repairs)
                ));
            }
        }
        (Some(expect), None, Outcome::Error { .. }) => mismatches.push(format!(
            "expect:\n    expected {}\n    got      an error (below)",
            show(expect.get())
        )),
        (_, Some(want), Outcome::Value { value, .. }) => mismatches.push(format!(
            "error:\n    expected {}\n    got      a value: {}",
            show(want.get()),
            show(value)
        )),
        (
            expect,
            Some(want),
            Outcome::Error {
                code,
                offset,
                raw,
                value,
                ..
            },
        ) => {
            if want.get().starts_with('{') {
                if let Some(diff) = json_text_diff(want.get(), raw) {
                    mismatches.push(format!(
                        "error:\n    expected {}\n    got      {}\n    {diff}",
                        show(want.get()),
                        show(raw)
                    ));
                }
            } else {
                let want: String = serde_json::from_str(want.get()).unwrap_or_default();
                if want != *code {
                    mismatches.push(format!(
                        "error:\n    expected {want:?}\n    got      {code:?}"
                    ));
                }
            }
            if let Some(want_offset) = fields.get("offset") {
                let got_offset = offset.map_or_else(|| "(none)".into(), |o| o.to_string());
                if want_offset.get() != got_offset {
                    mismatches.push(format!(
                        "offset:\n    expected {}\n    got      {got_offset}",
                        want_offset.get()
                    ));
                }
            }
            // The value written with the error (`calls`: the calls found, the rejected ones).
            if let Some(expect) = expect {
                let got = value.as_deref().unwrap_or("(none)");
                if let Some(diff) = json_text_diff(expect.get(), got) {
                    mismatches.push(format!(
                        "expect (the value written with the error):\n    expected {}\n    got      {}\n    {diff}",
                        show(expect.get()),
                        show(got)
                    ));
                }
            }
        }
    }
    if let (Some(want), Some(strict)) = (fields.get("strict"), strict) {
        let have = strict.strict_text();
        if want.get() != have {
            mismatches.push(format!(
                "strict (the outcome under --strict):\n    expected {}\n    got      {have}",
                want.get()
            ));
        }
        if let Some(problem) = strict_rule(got, strict) {
            mismatches.push(problem);
        }
    }
    mismatches
}

/// An input that needed a repair must fail under `--strict`; one that needed none must pass.
fn strict_rule(got: &Outcome, strict: &Outcome) -> Option<String> {
    let Outcome::Value { repairs, value, .. } = got else {
        return None;
    };
    let mut list: Vec<Value> = serde_json::from_str(repairs).unwrap_or_default();
    // A call's own repairs (`calls`) count as the record's.
    if let Ok(Value::Object(found)) = serde_json::from_str::<Value>(value)
        && let Some(Value::Array(calls)) = found.get("calls")
    {
        for call in calls {
            if let Some(Value::Array(own)) = call.get("repairs") {
                list.extend(own.iter().cloned());
            }
        }
    }
    let needs_repair = list
        .iter()
        .any(|r| !ALLOWED_IN_STRICT.contains(&r["kind"].as_str().unwrap_or("")));
    let strict_ok = matches!(strict, Outcome::Value { .. });
    (needs_repair == strict_ok).then(|| {
        format!(
            "strict rule: the repairs {} {}, but --strict gave {}",
            show(repairs),
            if needs_repair {
                "change the grammar so --strict must fail"
            } else {
                "are all allowed under --strict so it must pass"
            },
            strict.strict_text()
        )
    })
}

fn write_failure(
    out: &mut dyn Write,
    path: &Path,
    case: &Case,
    got: &Outcome,
    mismatches: &[String],
) -> io::Result<()> {
    let mut text = format!("FAIL {}:{}", path.display(), case.line);
    if let Some(name) = &case.name {
        let _ = write!(text, " {name}");
    }
    let _ = write!(text, "\n  command: {}", case.command);
    for option in &case.options {
        let _ = write!(text, " {option}");
    }
    let _ = write!(text, "\n  input:   {}", case.input_shown);
    for mismatch in mismatches {
        let _ = write!(text, "\n  {mismatch}");
    }
    if let Outcome::Error {
        code,
        offset,
        message,
        ..
    } = got
    {
        let at = offset.map_or_else(String::new, |o| format!(" at byte {o}"));
        let _ = write!(text, "\n  the error: {code}{at}: {message}");
    }
    writeln!(out, "{text}\n")
}

/// Shows JSON text in a report, cut when long.
fn show(text: &str) -> String {
    cut(text, SHOW_CHARS)
}

/// Whether two JSON texts hold the same value (key order inside objects aside).
fn same_json(a: &str, b: &str) -> bool {
    match (
        serde_json::from_str::<Value>(a),
        serde_json::from_str::<Value>(b),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// `text` without whitespace between tokens, written the way the pipeline writes values
/// (numbers and escapes kept). Text that is not clean JSON is left as it is.
fn compact(text: &str) -> String {
    let mut mender = Mender::new(Options {
        target: Target::Any,
        concat: Concat::Error,
        strict: true,
        ..Options::default()
    });
    match mender.mend(text) {
        // Any repair (an unquoted string, a merged key) would change the value itself.
        Ok(mended) if mended.repairs().is_empty() => mended.value().into_owned(),
        _ => text.to_owned(),
    }
}

/// `None` when the expected and the actual JSON text are the same value written the same way
/// (whitespace aside); else where they first differ.
fn json_text_diff(expected: &str, got: &str) -> Option<String> {
    let (expected, got) = (compact(expected), compact(got));
    if expected == got {
        return None;
    }
    let parsed = (
        serde_json::from_str::<Value>(&expected),
        serde_json::from_str::<Value>(&got),
    );
    if let (Ok(want), Ok(have)) = parsed
        && let Some(diff) = value_diff("$", &want, &have)
    {
        return Some(format!("first difference: {diff}"));
    }
    // The same value written differently: a number's or an escape's spelling.
    let at = expected
        .bytes()
        .zip(got.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    let at = (0..=at)
        .rev()
        .find(|&i| expected.is_char_boundary(i) && got.is_char_boundary(i))
        .unwrap_or(0);
    // Show a little of what comes before, so the place can be found.
    let from = expected[..at]
        .char_indices()
        .rev()
        .nth(11)
        .map_or(0, |(i, _)| i);
    Some(format!(
        "the text differs at character {}: expected {}, got {} (numbers and escapes are compared as written)",
        expected[..at].chars().count(),
        cut(&expected[from..], at - from + 30),
        cut(&got[from..], at - from + 30)
    ))
}

/// The first place where two values differ, as `PATH: what`.
fn value_diff(path: &str, want: &Value, have: &Value) -> Option<String> {
    match (want, have) {
        (Value::Object(w), Value::Object(h)) => {
            for (key, w_value) in w {
                let child = child_path(path, key);
                match h.get(key) {
                    None => return Some(format!("{child}: missing (expected {})", short(w_value))),
                    Some(h_value) => {
                        if let Some(diff) = value_diff(&child, w_value, h_value) {
                            return Some(diff);
                        }
                    }
                }
            }
            if let Some((key, h_value)) = h.iter().find(|(k, _)| !w.contains_key(*k)) {
                return Some(format!(
                    "{}: not expected (got {})",
                    child_path(path, key),
                    short(h_value)
                ));
            }
            let (w_keys, h_keys): (Vec<_>, Vec<_>) = (w.keys().collect(), h.keys().collect());
            (w_keys != h_keys).then(|| {
                format!(
                    "{path}: the keys are in another order: expected {w_keys:?}, got {h_keys:?}"
                )
            })
        }
        (Value::Array(w), Value::Array(h)) => {
            for (i, (w_item, h_item)) in w.iter().zip(h).enumerate() {
                if let Some(diff) = value_diff(&format!("{path}[{i}]"), w_item, h_item) {
                    return Some(diff);
                }
            }
            (w.len() != h.len())
                .then(|| format!("{path}: expected {} items, got {}", w.len(), h.len()))
        }
        _ if want == have => None,
        // The same number written another way (`10.50` and `10.5`).
        (Value::Number(w), Value::Number(h))
            if w.as_f64().is_some() && w.as_f64() == h.as_f64() =>
        {
            Some(format!(
                "{path}: expected {}, got {} (numbers and escapes are compared as written)",
                short(want),
                short(have)
            ))
        }
        _ => Some(format!(
            "{path}: expected {}, got {}",
            short(want),
            short(have)
        )),
    }
}

fn child_path(path: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && !key.starts_with(|c: char| c.is_ascii_digit())
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        format!("{path}.{key}")
    } else {
        format!("{path}[{}]", Value::from(key))
    }
}

fn short(value: &Value) -> String {
    cut(&value.to_string(), 80)
}

/// The line of a blessed case, or `None` when its expectations already hold.
fn bless_line(case: &Case, outcome: &Outcome, strict: Option<&Outcome>) -> Option<String> {
    let mut new_fields = outcome.fields(&case.fields);
    if let Some(strict) = strict {
        new_fields.push(("strict", strict.strict_text()));
    }
    let mut fields: Vec<(String, String)> = case
        .fields
        .0
        .iter()
        .filter(|(key, _)| {
            !OUTCOME_FIELDS.contains(&key.as_str()) || new_fields.iter().any(|(k, _)| k == key)
        })
        .map(|(k, v)| (k.clone(), v.get().to_owned()))
        .collect();
    for (key, text) in new_fields {
        if let Some(field) = fields.iter_mut().find(|(k, _)| k == key) {
            // Keep the text as written when it already says the same.
            let same = match key {
                "expect" | "dropped" | "repairs" => json_text_diff(&field.1, &text).is_none(),
                _ => same_json(&field.1, &text),
            };
            if !same {
                field.1 = text;
            }
            continue;
        }
        let rank = OUTCOME_FIELDS.iter().position(|k| *k == key);
        let after = fields.iter().rposition(|(k, _)| {
            let field_rank = OUTCOME_FIELDS.iter().position(|o| o == k);
            k == "input" || field_rank.is_some_and(|r| Some(r) < rank)
        });
        let at = after.map_or(fields.len(), |i| i + 1);
        fields.insert(at, (key.to_owned(), text));
    }
    let unchanged = fields.len() == case.fields.0.len()
        && fields
            .iter()
            .zip(&case.fields.0)
            .all(|((k, v), (k0, v0))| k == k0 && v == v0.get());
    if unchanged {
        return None;
    }
    let body: Vec<String> = fields
        .iter()
        .map(|(k, v)| format!("{}:{v}", Value::from(k.as_str())))
        .collect();
    Some(format!("{{{}}}", body.join(",")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_at_the_first_difference() {
        let diff = json_text_diff(r#"{"a": [1, {"b": 2}]}"#, r#"{"a":[1,{"b":3}]}"#).unwrap();
        assert!(diff.contains("$.a[1].b: expected 2, got 3"), "{diff}");
        let diff = json_text_diff(r#"{"a":1}"#, r#"{"a":1,"my key":2}"#).unwrap();
        assert!(diff.contains(r#"$["my key"]: not expected"#), "{diff}");
        let diff = json_text_diff(r#"{"a":1,"b":2}"#, r#"{"b":2,"a":1}"#).unwrap();
        assert!(diff.contains("another order"), "{diff}");
        // Numbers are compared by their text, as toolmend writes them.
        let diff = json_text_diff(r#"{"a":1.50}"#, r#"{"a":1.5}"#).unwrap();
        assert!(diff.contains("$.a: expected 1.50, got 1.5"), "{diff}");
        // The same value written differently: where the text differs.
        let diff = json_text_diff(r#"{"a":"\u0041"}"#, r#"{"a":"A"}"#).unwrap();
        assert!(diff.contains("character 6"), "{diff}");
        assert_eq!(json_text_diff("[1, 2]", "[1,2]"), None);
        // A string that holds JSON is not unquoted by the comparison.
        assert!(json_text_diff(r#""{\"a\":1}""#, r#"{"a":1}"#).is_some());
    }

    #[test]
    fn strict_rule_ties_repairs_to_the_strict_outcome() {
        let value = |repairs: &str| Outcome::Value {
            value: "{}".into(),
            repairs: repairs.into(),
            dropped: None,
        };
        let failed = Outcome::Error {
            code: "invalid_json".into(),
            offset: Some(6),
            message: String::new(),
            raw: String::new(),
            value: None,
        };
        let ok = value("[]");
        let comma = r#"[{"kind":"trailing_comma","offset":6}]"#;
        let unquote = r#"[{"kind":"unquote","layers":1}]"#;
        assert_eq!(strict_rule(&value(comma), &failed), None);
        assert_eq!(strict_rule(&value(unquote), &ok), None);
        assert_eq!(strict_rule(&value("[]"), &ok), None);
        assert!(
            strict_rule(&value(comma), &ok)
                .unwrap()
                .contains("must fail")
        );
        assert!(
            strict_rule(&value(unquote), &failed)
                .unwrap()
                .contains("must pass")
        );
        // An input that failed anyway says nothing about repairs.
        assert_eq!(strict_rule(&failed, &ok), None);
    }

    #[test]
    fn malformed_cases_say_why() {
        let err = |line: &str| parse_case(1, line).err().unwrap();
        assert!(err("[1]").contains("a JSON object"));
        assert!(err(r#"{"expect":{}}"#).contains("\"input\""));
        assert!(err(r#"{"input":"x","command":"nope"}"#).contains("unknown command"));
        assert!(err(r#"{"input":"x","options":"--strict"}"#).contains("list of strings"));
        assert!(err(r#"{"input":"x","error":{"message":"m"}}"#).contains("\"code\""));
        assert!(err(r#"{"input":"x","error":7}"#).contains("error code"));
        assert!(err(r#"{"input":"x","input":"y"}"#).contains("duplicate field"));
        assert!(err(r#"{"input":"x","error":"e","offset":-1}"#).contains("offset"));
        for (line, why) in [
            (r#"{"input":"x","expect":{},"error":"e"}"#, "not both"),
            (
                r#"{"command":"repair","input":"x","expect":1,"error":"e"}"#,
                "not both",
            ),
            (
                r#"{"input":"x","error":"e","repairs":[]}"#,
                "\"repairs\" describes",
            ),
            (
                r#"{"command":"calls","input":"x","error":"e","dropped":[]}"#,
                "\"dropped\" describes",
            ),
            (r#"{"input":"x","expect":{},"offset":3}"#, "has none"),
            (
                r#"{"input":"x","expect":{},"repair":[]}"#,
                "misspelt \"repairs\"",
            ),
            (r#"{"input":"x","expcet":{}}"#, "misspelt \"expect\""),
            (r#"{"input":"x","Expect":{}}"#, "misspelt \"expect\""),
            (
                r#"{"input":"x","expect":{},"offest":1}"#,
                "misspelt \"offset\"",
            ),
            (r#"{"input":"x","eror":"e"}"#, "misspelt \"error\""),
        ] {
            assert!(err(line).contains(why), "{line}: {}", err(line));
        }
        // The author's own fields are kept.
        assert!(parse_case(1, r#"{"input":"x","expect":{},"note":"n","ticket":4}"#).is_ok());
        // With its error, a calls case may give the value the failure record carries.
        assert!(
            parse_case(
                1,
                r#"{"command":"calls","input":"x","expect":{},"error":"e"}"#
            )
            .is_ok()
        );
    }
}
