//! The binary's commands (one `*_cmd` file each) and the command-line arguments (clap derive),
//! turned into the library's option structs.

mod aligned;
pub(crate) mod args_cmd;
pub(crate) mod calls_cmd;
pub(crate) mod check_cmd;
#[cfg(unix)] // only the loop asks, and it runs on Unix alone
mod closed_stderr;
mod exit;
mod files;
pub(crate) mod generate_cmd;
pub(crate) mod hints;
pub(crate) mod loop_cmd;
pub(crate) mod stream_cmd;

pub use exit::{ExitCode, Fatal};

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{Args, Parser, Subcommand, ValueEnum};
use toolmend_core::calls::{CallOptions, CallsFilterOptions, Shape};
use toolmend_core::schema::Schema;
use toolmend_core::tools::Tools;
use toolmend_core::{Concat, FilterOptions, Framing, MAX_THREADS, Options, Target, Truncated};

const EXIT_CODES: &str = "\
Exit status:
  0  every input succeeded
  1  at least one input failed (all others were still processed and written)
  2  usage error or unreadable file";

const TOP_EXAMPLES: &str = "\
Examples:
  echo '{\"path\": \"a.txt\",}' | toolmend
  toolmend calls --records reply.txt
  toolmend check fixtures/
  toolmend <command> --help   # more examples for each command";

const ARGS_EXAMPLES: &str = "\
Examples:
  echo '\"{\\\"command\\\":\\\"ls\\\"}\"' | toolmend args
  toolmend args --records calls.txt
  toolmend args --input jsonl --concat all logged.jsonl
  toolmend args --strict --records < arguments.txt
  toolmend args --schema weather.schema.json --records calls.txt";

const REPAIR_EXAMPLES: &str = "\
Examples:
  echo \"{'a': True, 'b': [1, 2,]}\" | toolmend repair
  echo '[1, 2, 3' | toolmend repair --records
  toolmend repair --input whole reply.txt";

/// Mend the JSON that language models emit as tool calls.
///
/// Reads inputs (one per line by default) and writes each as clean, compact JSON, or as an
/// error record that says what was wrong and where. With no command, runs `args`.
#[derive(Debug, Parser)]
#[command(name = "toolmend", version, max_term_width = 98)]
#[command(args_conflicts_with_subcommands = true)]
#[command(after_long_help = format!("{TOP_EXAMPLES}\n\n{EXIT_CODES}"))]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub args: MendArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Mend tool-call arguments into a JSON object (the default command)
    ///
    /// Each input goes through the args pipeline: trim, unquote string layers, split
    /// concatenated values, repair (unless --strict), and check that the result is an object.
    #[command(after_long_help = format!("{ARGS_EXAMPLES}\n\n{EXIT_CODES}"))]
    Args(MendArgs),
    /// Repair almost-JSON into any JSON value
    ///
    /// The same pipeline as `args`, but the value may be of any type, and a string is unquoted
    /// only when it holds an object or an array.
    #[command(after_long_help = format!("{REPAIR_EXAMPLES}\n\n{EXIT_CODES}"))]
    Repair(MendArgs),
    /// Find the tool calls in raw model replies and normalize them
    ///
    /// Each reply (all of the input by default) gives `{"calls": [...], "text", "reasoning",
    /// "incomplete"}`. Each call is `{"tool", "parameters", "terminate"?, "id"?}`, its arguments
    /// mended by the args pipeline. Reasoning (<think>, [THINK], Harmony analysis, ...) is kept
    /// apart and calls inside it are not calls; markers inside a JSON string are text. A call
    /// that was cut off is never healed: it is listed under `incomplete` and the reply fails
    /// with `incomplete_call`.
    ///
    /// A reply that is an API response is read as one, whole or as a jsonl line: an OpenAI chat
    /// completion or its message, an OpenAI Responses `output`, an Anthropic message or content
    /// list, an Ollama /api/chat response, a Gemini response (`functionCall` parts). A stop
    /// reason that says the output was cut (finish_reason "length", stop_reason "max_tokens",
    /// done_reason "length", finishReason "MAX_TOKENS") makes the call written last
    /// incomplete. A reply that is one JSON string holding a call is unquoted.
    #[command(after_long_help = calls_help())]
    Calls(CallsArgs),
    /// Print the system prompt for a tools file
    ///
    /// Lists every tool (name, description, parameters with type, required and description) and
    /// the calling convention `{"tool": ..., "parameters": {...}, "terminate": true|false}`.
    /// The same tools file always gives the same text.
    #[command(after_long_help = format!("{PROMPT_EXAMPLES}\n\n{PROMPT_EXIT}"))]
    Prompt(PromptArgs),
    /// Run a tool-calling agent loop against an LLM command
    ///
    /// Sends the system prompt (every tool's definition and the calling convention) and the
    /// prompt to the LLM command; each reply is either the final answer (plain text) or one
    /// call {"tool", "parameters", "terminate"}, which is approved (when the tool needs it), run
    /// with its parameters as JSON on stdin, and its result sent back, until an answer, a call
    /// with "terminate": true, or a limit. See docs/loop.md for the protocols.
    #[command(name = "loop", after_long_help = LOOP_HELP)]
    Loop(LoopArgs),
    /// Run fixture files (JSONL cases with expected results) as regression tests
    ///
    /// Each line of a fixture is a case: {"input": "...", "expect": <value>} or {"input": "...",
    /// "error": "<code>"}, with optional "name", "command" (args, repair or calls), "options"
    /// (a list of flags), "repairs", "dropped", "offset" and "strict" (the outcome under
    /// --strict). "error" may also be the whole error object. Values are compared as compact
    /// JSON text (key order and number spelling count). Folders are searched for *.jsonl.
    /// Every failing case is shown with a diff, then a summary line.
    #[command(after_long_help = format!("{CHECK_EXAMPLES}\n\n{CHECK_EXIT}"))]
    Check(CheckArgs),
    /// Print shell completions
    #[command(after_long_help = COMPLETIONS_EXAMPLES)]
    Completions(CompletionsArgs),
    /// Print the man page (roff) of toolmend or of one command
    #[command(after_long_help = MAN_EXAMPLES)]
    Man(ManArgs),
}

const CHECK_EXAMPLES: &str = "\
Examples:
  toolmend check fixtures/
  toolmend check tests/tool_calls.jsonl
  toolmend check --bless fixtures/   # record what every case gives now; review the diff
  echo '{\"input\":\"{a: 1,}\",\"expect\":{\"a\":1}}' > case.jsonl && toolmend check case.jsonl";

const CHECK_EXIT: &str = "\
Exit status:
  0  every case passed (or, with --bless, the results were written)
  1  at least one case failed
  2  usage error, unreadable file, or malformed fixture (its file:line is shown)";

const COMPLETIONS_EXAMPLES: &str = "\
Examples:
  toolmend completions bash > ~/.local/share/bash-completion/completions/toolmend
  toolmend completions zsh > ~/.zfunc/_toolmend
  toolmend completions fish > ~/.config/fish/completions/toolmend.fish";

const MAN_EXAMPLES: &str = "\
Examples:
  toolmend man > toolmend.1
  toolmend man check > toolmend-check.1
  toolmend man | man -l -";

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Fixture files, or folders to search for *.jsonl
    #[arg(value_name = "FILE|DIR", required = true)]
    pub paths: Vec<PathBuf>,

    /// Write the current results into the fixtures (keeps other fields and their order)
    #[arg(long)]
    pub bless: bool,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// The command whose page to print (default: toolmend's own page)
    #[arg(value_name = "COMMAND")]
    pub command: Option<String>,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to write completions for
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

const CALLS_EXAMPLES: &str = "\
Examples:
  ollama run qwen3 \"...\" | toolmend calls
  toolmend calls --tools tools.json --records reply.txt
  toolmend calls --input jsonl --shape openai --records replies.jsonl
  toolmend calls --format mistral --require-terminate reply.txt
  echo '<tool_call>{\"name\":\"ls\",\"arguments\":\"{}\"}</tool_call>' | toolmend calls
  curl -sN http://localhost:8080/v1/chat/completions -d @req.json | toolmend calls --stream --input sse
  toolmend calls --list-formats   # docs/formats.md has an example of each";

const PROMPT_EXAMPLES: &str = "\
Examples:
  toolmend prompt --tools tools.json
  toolmend prompt --tools tools.toml > system.txt";

const PROMPT_EXIT: &str = "\
Exit status:
  0  the prompt was printed
  2  usage error, or the tools file is unreadable or invalid";

fn calls_help() -> String {
    format!(
        "{CALLS_EXAMPLES}\n\nFormats (--format; auto tries them in this order):\n{}\n{EXIT_CODES}, or bad tools file",
        toolmend_core::calls::format_help()
    )
}

#[derive(Debug, Args)]
pub struct CallsArgs {
    /// Files to read (`-` is stdin; default stdin)
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// How the input is cut into replies (with --stream: how the reply's pieces come)
    #[arg(long, value_enum, default_value_t = CallsInputArg::Whole, help_heading = "Input")]
    pub input: CallsInputArg,

    /// Read one reply as it arrives; write one JSON event per line as it goes
    ///
    /// Events: `text` and `reasoning` deltas, `call_start` {index, tool}, `arguments` {index,
    /// `path` and what the value there gained, `open`: the JSON pointer still being written;
    /// with --arguments-events snapshot also `parameters`, all of them so far}, `revised`
    /// {index, path: a key the model wrote again after its value was shown}, `call_end`
    /// {index, call}, `incomplete`, `invalid`, `retracted`, and last `end` (the record
    /// `calls --records` writes for the whole reply). The input is raw text (`whole`, the
    /// default), one delta per line (`jsonl`), or server-sent events (`sse`) of an OpenAI- or
    /// Anthropic-compatible server. The exit status is that of `calls` on the whole reply.
    /// See docs/streaming.md. Not with --records: the `end` event is that record.
    #[arg(long, help_heading = "Input", conflicts_with = "records")]
    pub stream: bool,

    /// With --stream: what each `arguments` event carries
    #[arg(
        long,
        value_enum,
        default_value_t = ArgumentsEventsArg::Delta,
        help_heading = "Output",
        requires = "stream"
    )]
    pub arguments_events: ArgumentsEventsArg,

    /// With --stream: bytes of a call's arguments before its first `arguments` event, and
    /// at least between two (each also at least a quarter more); the final one comes when
    /// they close. 1 shows a short call almost token by token
    #[arg(
        long,
        value_name = "BYTES",
        default_value_t = toolmend_core::calls::ARGUMENTS_STEP,
        value_parser = parse_arguments_step,
        help_heading = "Output",
        requires = "stream"
    )]
    pub arguments_step: usize,

    #[command(flatten)]
    pub io: StreamFlags<true>,

    /// How each call is written
    #[arg(long, value_enum, default_value_t = ShapeArg::Native, help_heading = "Output")]
    pub shape: ShapeArg,

    /// The call format (`auto` detects it by its markers)
    #[arg(long, default_value = "auto", value_parser = FormatParser, help_heading = "Calls")]
    pub format: String,

    /// Print the formats --format takes (in the order auto tries them) and exit
    #[arg(long, help_heading = "Calls")]
    pub list_formats: bool,

    /// Check calls against this tools file (JSON, or TOML by extension)
    ///
    /// The values of XML-style formats (Qwen3-Coder, GLM, MiniMax, DSML, Step-3) are
    /// plain text typed by the parameter's schema and nothing else: a value typed `string` stays
    /// the text written (`42` gives "42"), one typed `integer`, `number`, `boolean`, `array` or
    /// `object` is read as that type, `null` only where the schema allows null, an `enum` or
    /// `const` member as written. Without a type, Qwen3-Coder-style values stay strings and GLM
    /// values are read as JSON when they are JSON.
    #[arg(long, value_name = "FILE", help_heading = "Calls")]
    pub tools: Option<PathBuf>,

    /// Each call must be {"tool": string, "parameters": object, "terminate": boolean}
    #[arg(long, help_heading = "Calls")]
    pub require_terminate: bool,

    /// Make no repairs to arguments: arguments that need one fail
    #[arg(long, help_heading = "Calls")]
    pub strict: bool,

    /// Refuse arrays and objects nested deeper than this (too_deep); a call's values nest at most
    /// 1000 levels whatever this says
    #[arg(long, default_value_t = toolmend_core::DEFAULT_MAX_NESTING, help_heading = "Calls")]
    pub max_nesting: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CallsInputArg {
    /// One reply per line (with --stream: raw text)
    Lines,
    /// One JSON reply or message per line (with --stream: one delta per line)
    Jsonl,
    /// All of the input is one reply
    Whole,
    /// Server-sent events of an OpenAI- or Anthropic-compatible stream (--stream only)
    Sse,
}

/// `--arguments-step`: a whole number of bytes, read as the library reads every surface's.
fn parse_arguments_step(text: &str) -> Result<usize, String> {
    let bytes = text
        .parse::<u64>()
        .map_err(|error| format!("a whole number of bytes: {error}"))?;
    toolmend_core::calls::arguments_step(bytes)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ArgumentsEventsArg {
    /// What the parameters gained: `path`, `append`, `members` or `items`, and `open`
    Delta,
    /// The same, and `parameters`: the whole parameters so far, that added
    Snapshot,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ShapeArg {
    /// {"tool", "parameters", "terminate"?, "id"?}
    Native,
    /// {"name", "arguments": "<JSON text>"} for an OpenAI-style API
    Openai,
}

#[derive(Debug, Args)]
pub struct PromptArgs {
    /// The tools file (JSON, or TOML by extension)
    #[arg(long, value_name = "FILE")]
    pub tools: PathBuf,
}

/// `--format`: `auto` or a format's name, which shell completions offer (clap's possible
/// values), with an error that lists them all.
#[derive(Clone)]
struct FormatParser;

impl clap::builder::TypedValueParser for FormatParser {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        let text = value.to_string_lossy();
        parse_format(&text).map_err(|why| {
            let arg = arg.map_or_else(|| "--format".to_owned(), ToString::to_string);
            clap::Error::raw(
                clap::error::ErrorKind::InvalidValue,
                format!("invalid value '{text}' for '{arg}': {why}\n"),
            )
            .with_cmd(cmd)
        })
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        let names = std::iter::once("auto").chain(toolmend_core::calls::format_names());
        Some(Box::new(names.map(clap::builder::PossibleValue::new)))
    }
}

fn parse_format(text: &str) -> Result<String, String> {
    toolmend_core::calls::check_format(text).map(|()| text.to_owned())
}

/// The size and output flags of every filter command: `StreamFlags<false>` for `args` and
/// `repair` (inputs), `StreamFlags<true>` for `calls` (replies).
#[derive(Debug, Args)]
pub struct StreamFlags<const REPLIES: bool> {
    #[arg(long, default_value = "64M", value_parser = parse_size, help_heading = "Input")]
    #[arg(help = format!("Refuse {} longer than this many bytes (K, M, G suffixes)", unit(REPLIES).1))]
    pub max_bytes: usize,

    #[arg(long, help_heading = "Output")]
    #[arg(help = format!("Write one record per {} on stdout", unit(REPLIES).0))]
    pub records: bool,

    /// Flush after every record (for a co-process)
    #[arg(long, help_heading = "Output")]
    pub line_buffered: bool,
}

/// What a filter command calls its inputs: one, and several.
fn unit(replies: bool) -> (&'static str, &'static str) {
    if replies {
        ("reply", "replies")
    } else {
        ("input", "inputs")
    }
}

#[derive(Debug, Args)]
pub struct MendArgs {
    /// Files to read (`-` is stdin; default stdin)
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// How the input is cut into inputs
    #[arg(long, value_enum, default_value_t = InputArg::Lines, help_heading = "Input")]
    pub input: InputArg,

    #[command(flatten)]
    pub io: StreamFlags<false>,

    /// What to do with values written one after another
    #[arg(long, value_enum, default_value_t = ConcatArg::First, help_heading = "Pipeline")]
    pub concat: ConcatArg,

    /// Make no repairs: input that needs one fails
    #[arg(long, help_heading = "Pipeline")]
    pub strict: bool,

    /// Heal input that was cut off, or refuse it (`truncated`)
    ///
    /// Input cut off before its end (a string, array or object left open, `tru`, `{"a":`,
    /// `1.`) is healed by default, each closing reported as a repair. `error` refuses it with
    /// the `truncated` code: for a caller about to run what it gets.
    #[arg(long, value_enum, default_value_t = TruncatedArg::Heal, help_heading = "Pipeline")]
    pub truncated: TruncatedArg,

    /// Unquote at most this many string layers
    #[arg(long, default_value_t = toolmend_core::DEFAULT_MAX_DEPTH, help_heading = "Pipeline")]
    pub max_depth: u32,

    /// Refuse arrays and objects nested deeper than this
    #[arg(long, default_value_t = toolmend_core::DEFAULT_MAX_NESTING, help_heading = "Pipeline")]
    pub max_nesting: usize,

    /// Threads that mend inputs (0, the default: one per core, at most 8; N: at most 256); output order is kept
    #[arg(long, default_value_t = 0, value_name = "N", value_parser = parse_threads, help_heading = "Pipeline")]
    pub threads: usize,

    /// Check each value against this JSON Schema, coercing values to it where the intent is
    /// unambiguous ("3" for an integer; not with --strict); a value that breaks it fails with
    /// invalid_parameters
    #[arg(long, value_name = "FILE", help_heading = "Pipeline")]
    pub schema: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum InputArg {
    /// One input per line
    Lines,
    /// One JSON string, {"text"|"content"|"arguments", "id"} object or API response per line
    Jsonl,
    /// All of the input is one document
    Whole,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum TruncatedArg {
    /// Close what was left open; report it in `repairs`
    Heal,
    /// Fail with `truncated`
    Error,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ConcatArg {
    /// Keep the first value; list the others in `dropped`
    First,
    /// Return all values as an array
    All,
    /// Fail with `concatenated`
    Error,
}

impl MendArgs {
    pub fn filter_options(&self, target: Target) -> FilterOptions {
        FilterOptions {
            mend: Options {
                target,
                concat: match self.concat {
                    ConcatArg::First => Concat::First,
                    ConcatArg::All => Concat::All,
                    ConcatArg::Error => Concat::Error,
                },
                strict: self.strict,
                max_depth: self.max_depth,
                max_nesting: self.max_nesting,
                truncated: match self.truncated {
                    TruncatedArg::Heal => Truncated::Heal,
                    TruncatedArg::Error => Truncated::Error,
                },
            },
            framing: match self.input {
                InputArg::Lines => Framing::Lines,
                InputArg::Jsonl => Framing::Jsonl,
                InputArg::Whole => Framing::Whole,
            },
            records: self.io.records,
            line_buffered: self.io.line_buffered,
            max_bytes: self.io.max_bytes,
            threads: self.threads,
            schema: None,
        }
    }

    /// The `--schema` file, read (its path taken from `dir` when given).
    pub fn schema(&self, dir: Option<&Path>) -> Result<Option<Arc<Schema>>, String> {
        let Some(path) = &self.schema else {
            return Ok(None);
        };
        let path = dir.map_or_else(|| path.clone(), |dir| dir.join(path));
        let schema = Schema::from_path(&path).map_err(|e| format!("schema file {e}"))?;
        Ok(Some(Arc::new(schema)))
    }
}

impl CallsArgs {
    /// The filter's settings from the command line; a relative tools path is taken from `dir`
    /// when given (a fixture's folder).
    pub fn filter_options(&self, dir: Option<&Path>) -> Result<CallsFilterOptions, String> {
        Ok(CallsFilterOptions {
            calls: self.call_options(dir)?,
            framing: match self.input {
                CallsInputArg::Lines => Framing::Lines,
                CallsInputArg::Jsonl => Framing::Jsonl,
                CallsInputArg::Whole => Framing::Whole,
                CallsInputArg::Sse => {
                    return Err("--input sse reads a streamed reply: use it with --stream".into());
                }
            },
            records: self.io.records,
            line_buffered: self.io.line_buffered,
            max_bytes: self.io.max_bytes,
            shape: self.shape(),
        })
    }

    /// How calls are written.
    pub fn shape(&self) -> Shape {
        match self.shape {
            ShapeArg::Native => Shape::Native,
            ShapeArg::Openai => Shape::OpenAi,
        }
    }

    /// The extractor's settings from the command line (see [`CallsArgs::filter_options`]).
    pub fn call_options(&self, dir: Option<&Path>) -> Result<CallOptions, String> {
        let tools = match &self.tools {
            Some(path) => {
                let path = dir.map_or_else(|| path.clone(), |dir| dir.join(path));
                let tools = Tools::from_path(&path).map_err(|e| format!("tools file {e}"))?;
                Some(Arc::new(tools))
            }
            None => None,
        };
        Ok(CallOptions {
            format: (self.format != "auto").then(|| self.format.clone()),
            tools,
            require_terminate: self.require_terminate,
            strict: self.strict,
            max_nesting: self.max_nesting,
            ..CallOptions::default()
        })
    }
}

/// Parses `--threads`: 0 (one per core) up to [`MAX_THREADS`]. More would be refused by the
/// system sooner or later, and cannot be faster.
fn parse_threads(text: &str) -> Result<usize, String> {
    let n: usize = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a whole number of threads"))?;
    if n > MAX_THREADS {
        return Err(format!(
            "{n} threads is more than the limit of {MAX_THREADS} (0 picks one per core)"
        ));
    }
    Ok(n)
}

/// Parses a byte size: a number with an optional K, M or G suffix (powers of 1024).
fn parse_size(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let upper = text.to_ascii_uppercase();
    let digits = upper.trim_end_matches(['B', 'I']);
    let (number, shift) = match digits.chars().last() {
        Some('K') => (&digits[..digits.len() - 1], 10),
        Some('M') => (&digits[..digits.len() - 1], 20),
        Some('G') => (&digits[..digits.len() - 1], 30),
        _ => (digits, 0),
    };
    let n: usize = number
        .trim()
        .parse()
        .map_err(|_| format!("expected a size like 4096, 64K or 64M, got {text:?}"))?;
    n.checked_mul(1 << shift)
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("size out of range: {text:?}"))
}

const LOOP_HELP: &str = "\
Examples:
  toolmend loop --config agent.toml \"What is in notes.txt?\"
  echo \"Summarize the repo\" | toolmend loop --config agent.toml --transcript run.jsonl
  toolmend loop --config agent.toml --dry-run \"hello\"

Exit status:
  0    the model answered, or a tool called with terminate ran
  1    internal error
  2    usage or config error
  3    denied by the approval hook
  4    the approval hook failed (crash, timeout, bad answer): the call was rejected
  5    max_iterations LLM calls without an answer
  6    the run's timeout passed
  7    max_parse_retries malformed replies in a row
  8    the LLM command kept failing
  130  interrupted (SIGINT, SIGTERM or SIGHUP); every child process was killed";

#[derive(Debug, Args)]
pub struct LoopArgs {
    /// The loop's config file (TOML: [loop], [llm], [approval], [[tools]])
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,

    /// The prompt (read from stdin when absent or `-`)
    #[arg(value_name = "PROMPT")]
    pub prompt: Option<String>,

    /// Write the events as JSON Lines to this file
    #[arg(long, value_name = "FILE")]
    pub transcript: Option<PathBuf>,

    /// Write the events to stderr too
    #[arg(long)]
    pub verbose: bool,

    /// Print one JSON record (status, answer, ...) instead of the answer
    #[arg(long)]
    pub json: bool,

    /// Print the system prompt and the first LLM input; run nothing
    #[arg(long)]
    pub dry_run: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64M"), Ok(64 << 20));
        // `--max-bytes`' default, written "64M" for its help, is the library's.
        assert_eq!(parse_size("64M"), Ok(toolmend_core::DEFAULT_MAX_BYTES));
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("100"), Ok(100));
        assert_eq!(parse_size("2k"), Ok(2048));
        assert!(parse_size("x").is_err());
        assert!(parse_size("0").is_err());
    }
}
