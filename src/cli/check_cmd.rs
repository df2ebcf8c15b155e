//! The `check` command: runs fixture cases in-process through the same argument parser and
//! filters as the commands themselves.

use std::io::{self, Write};

use crate::check::{CheckOptions, Run, RunError, Runner, check};
use clap::Parser;
use toolmend_core::Filter;
use toolmend_core::Target;
use toolmend_core::calls::CallsFilter;

use crate::cli::hints;
use crate::cli::{CheckArgs, Cli, Command, ExitCode};

/// Runs every fixture case and reports; exit 0, 1 (a case failed) or 2 (a problem).
pub fn run(args: &CheckArgs) -> anyhow::Result<ExitCode> {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let options = CheckOptions { bless: args.bless };
    let report = check(&args.paths, options, &mut CliRunner, &mut out)?;
    out.flush()?;
    let mut err = io::stderr();
    for problem in &report.problems {
        // A missing path spelled like a command (`toolmend check repiar`) was probably one.
        let command = args
            .paths
            .iter()
            .find(|path| path.display().to_string() == problem.location)
            .and_then(|path| hints::command_like(path));
        match command {
            Some(command) => {
                writeln!(err, "toolmend: error: {problem}; did you mean `{command}`?")?
            }
            None => writeln!(err, "toolmend: error: {problem}")?,
        }
    }
    Ok(ExitCode::of_inputs(
        !report.problems.is_empty(),
        report.failed > 0,
    ))
}

/// Parses a case's command and options exactly as `toolmend COMMAND OPTIONS…` would.
struct CliRunner;

impl Runner for CliRunner {
    fn run(&mut self, run: &Run<'_>) -> Result<Vec<u8>, RunError> {
        let Run {
            command,
            args,
            dir,
            input,
        } = *run;
        let argv = ["toolmend", command]
            .into_iter()
            .map(str::to_owned)
            .chain(args.iter().cloned());
        let cli = Cli::try_parse_from(argv).map_err(|e| {
            // Only clap's first line: the rest is usage text for a command line nobody typed.
            let text = e.to_string();
            let first = text.lines().next().unwrap_or_default();
            RunError::Usage(first.strip_prefix("error: ").unwrap_or(first).to_owned())
        })?;
        let (mut out, mut err) = (Vec::new(), Vec::new());
        match cli.command {
            Some(Command::Args(args) | Command::Repair(args)) if !args.files.is_empty() => {
                Err(RunError::InputFiles)
            }
            Some(Command::Args(args) | Command::Repair(args)) => {
                let target = match command {
                    "repair" => Target::Any,
                    _ => Target::Object,
                };
                let mut options = args.filter_options(target);
                options.schema = args.schema(Some(dir)).map_err(RunError::OptionFile)?;
                Filter::new(options).run(input, None, &mut out, &mut err)?;
                Ok(out)
            }
            Some(Command::Calls(args)) if !args.files.is_empty() => Err(RunError::InputFiles),
            Some(Command::Calls(args)) => {
                let options = args
                    .filter_options(Some(dir))
                    .map_err(RunError::OptionFile)?;
                CallsFilter::new(options).run(input, None, &mut out, &mut err)?;
                Ok(out)
            }
            _ => Err(RunError::NotCheckable(command.to_owned())),
        }
    }
}
