//! The `calls` and `prompt` commands: options from the command line, files in, exit code out.

use std::fs::File;
use std::io::{self, BufReader, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use toolmend::Framing;
use toolmend::calls::{CallOptions, CallsFilter, CallsFilterOptions, Shape};
use toolmend::tools::Tools;

use crate::cli::hints;
use crate::cli::{CallsArgs, CallsInputArg, PromptArgs, ShapeArg};

/// Runs `calls` over every input file.
pub fn run(args: &CallsArgs) -> anyhow::Result<ExitCode> {
    if args.list_formats {
        let mut out = io::stdout().lock();
        for (name, models) in toolmend::calls::formats() {
            writeln!(out, "{name:<16} {models}")?;
        }
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.stream {
        return crate::cli::stream_cmd::run(args);
    }
    let options = match filter_options(args, None) {
        Ok(options) => options,
        Err(e) => {
            writeln!(io::stderr(), "toolmend: {e}")?;
            return Ok(ExitCode::from(2));
        }
    };
    let mut filter = CallsFilter::new(options);
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut err = io::stderr();
    let stdin_only = [Path::new("-").to_path_buf()];
    let files = if args.files.is_empty() {
        &stdin_only[..]
    } else {
        &args.files[..]
    };
    let named = files.len() > 1;
    let (mut failed, mut unreadable) = (false, false);
    for path in files {
        let name = path.to_string_lossy();
        let file = named.then_some(name.as_ref());
        let summary = if path == Path::new("-") {
            hints::if_stdin_is_a_terminal("model replies");
            filter.run(io::stdin().lock(), file, &mut out, &mut err)
        } else {
            match File::open(path) {
                Ok(f) => filter.run(BufReader::new(f), file, &mut out, &mut err),
                Err(e) => {
                    hints::unreadable(&mut err, path, &e)?;
                    unreadable = true;
                    continue;
                }
            }
        };
        match summary {
            Ok(summary) => failed |= summary.failed > 0,
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Err(e.into()),
            Err(e) => {
                out.flush().ok();
                writeln!(err, "toolmend: {name}: {e}")?;
                unreadable = true;
            }
        }
    }
    Ok(if unreadable {
        ExitCode::from(2)
    } else if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The filter's settings from the command line; a relative tools path is taken from `dir`
/// when given (a fixture's folder).
pub fn filter_options(args: &CallsArgs, dir: Option<&Path>) -> Result<CallsFilterOptions, String> {
    Ok(CallsFilterOptions {
        calls: call_options(args, dir)?,
        framing: match args.input {
            CallsInputArg::Lines => Framing::Lines,
            CallsInputArg::Jsonl => Framing::Jsonl,
            CallsInputArg::Whole => Framing::Whole,
            CallsInputArg::Sse => {
                return Err("--input sse reads a streamed reply: use it with --stream".into());
            }
        },
        records: args.records,
        line_buffered: args.line_buffered,
        max_bytes: args.max_bytes,
        shape: shape(args),
    })
}

/// How calls are written.
pub fn shape(args: &CallsArgs) -> Shape {
    match args.shape {
        ShapeArg::Native => Shape::Native,
        ShapeArg::Openai => Shape::OpenAi,
    }
}

/// The extractor's settings from the command line (see [`filter_options`]).
pub fn call_options(args: &CallsArgs, dir: Option<&Path>) -> Result<CallOptions, String> {
    let tools = match &args.tools {
        Some(path) => {
            let path = dir.map_or_else(|| path.clone(), |dir| dir.join(path));
            let tools = Tools::from_path(&path).map_err(|e| format!("tools file {e}"))?;
            Some(Arc::new(tools))
        }
        None => None,
    };
    Ok(CallOptions {
        format: (args.format != "auto").then(|| args.format.clone()),
        tools,
        require_terminate: args.require_terminate,
        strict: args.strict,
        max_nesting: args.max_nesting,
        ..CallOptions::default()
    })
}

/// Prints the system prompt of a tools file.
pub fn prompt(args: &PromptArgs) -> anyhow::Result<ExitCode> {
    let tools = match Tools::from_path(&args.tools) {
        Ok(tools) => tools,
        Err(e) => {
            writeln!(io::stderr(), "toolmend: tools file {e}")?;
            return Ok(ExitCode::from(2));
        }
    };
    let mut out = io::stdout().lock();
    out.write_all(toolmend::system_prompt(&tools).as_bytes())?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
