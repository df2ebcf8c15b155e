//! The `toolmend` binary: parses the command line, runs the library, owns the exit code.

mod cli;

use std::fs::File;
use std::io::{self, BufReader, Write};
use std::path::Path;
use std::process::ExitCode;

use clap::Parser;
use cli::{Cli, Command, MendArgs};
use cli::{calls_cmd, check_cmd, generate_cmd, hints, loop_cmd};
use toolmend::{Filter, Target};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            // Rust ignores SIGPIPE, so `toolmend | head` ends here: quietly, like grep.
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            let _ = writeln!(io::stderr(), "toolmend: {err:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Some(Command::Args(args)) => mend(&args, Target::Object),
        Some(Command::Repair(args)) => mend(&args, Target::Any),
        Some(Command::Calls(args)) => calls_cmd::run(&args),
        Some(Command::Prompt(args)) => calls_cmd::prompt(&args),
        Some(Command::Loop(args)) => loop_cmd::run(&args),
        Some(Command::Check(args)) => check_cmd::run(&args),
        Some(Command::Completions(args)) => generate_cmd::completions(args.shell),
        Some(Command::Man(args)) => generate_cmd::man(args.command.as_deref()),
        None => mend(&cli.args, Target::Object),
    }
}

/// Runs the `args` or `repair` filter over every input file.
fn mend(args: &MendArgs, target: Target) -> anyhow::Result<ExitCode> {
    let mut options = args.filter_options(target);
    options.schema = match args.schema(None) {
        Ok(schema) => schema,
        Err(e) => {
            writeln!(io::stderr(), "toolmend: {e}")?;
            return Ok(ExitCode::from(2));
        }
    };
    let mut filter = Filter::new(options);
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
            hints::if_stdin_is_a_terminal(match target {
                Target::Object => "tool-call arguments, one per line,",
                Target::Any => "almost-JSON documents, one per line,",
            });
            // A larger buffer than stdin's own: fewer reads, longer runs of whole lines.
            let stdin = BufReader::with_capacity(256 << 10, io::stdin().lock());
            filter.run(stdin, file, &mut out, &mut err)
        } else {
            match File::open(path) {
                Ok(f) => filter.run(
                    BufReader::with_capacity(256 << 10, f),
                    file,
                    &mut out,
                    &mut err,
                ),
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

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}
