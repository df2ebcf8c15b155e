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
use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

mod case_result;
mod compare;
mod fixture;

use case_result::CaseResult;
use compare::{bless_line, compare, write_failure};
use fixture::{Fixture, load};

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
    /// The arguments are not valid for the command, or the command cannot run.
    fn run(&mut self, run: &Run<'_>) -> Result<Vec<u8>, RunError>;
}

/// Why a [`Runner`] could not run a batch of cases; shown as the case's problem.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The options are not a valid command line for the command (its parser's message).
    #[error("{0}")]
    Usage(String),
    /// The options name input files: a case's input is its own.
    #[error("options may not name input files: the input is the case's")]
    InputFiles,
    /// A command `check` does not run.
    #[error("{0} cannot be checked")]
    NotCheckable(String),
    /// A file the options name (tools, schema) cannot be used.
    #[error("{0}")]
    OptionFile(String),
    /// Reading the input or writing the output failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Why a batch gave no outcomes to compare.
#[derive(Debug, thiserror::Error)]
enum BatchError {
    #[error(transparent)]
    Run(#[from] RunError),
    #[error("output is not UTF-8: {0}")]
    NotUtf8(#[from] std::string::FromUtf8Error),
    /// A record `check` cannot read (the message says what is wrong).
    #[error("{0}")]
    RecordLine(String),
    #[error("{inputs} inputs gave {records} records")]
    Count { inputs: usize, records: usize },
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
    let mut results: Vec<Option<(CaseResult, Option<CaseResult>)>> =
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

fn run_batch(
    runner: &mut dyn Runner,
    run: &Run<'_>,
    count: usize,
) -> Result<Vec<CaseResult>, BatchError> {
    let output = String::from_utf8(runner.run(run)?)?;
    let outcomes = output
        .lines()
        .map(CaseResult::from_record)
        .collect::<Result<Vec<_>, _>>()
        .map_err(BatchError::RecordLine)?;
    if outcomes.len() != count {
        return Err(BatchError::Count {
            inputs: count,
            records: outcomes.len(),
        });
    }
    Ok(outcomes)
}
