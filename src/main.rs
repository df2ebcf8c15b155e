//! The `toolmend` binary: parses the command line, runs one command (`src/cli/`), prints its
//! error once and ends with its [`ExitCode`](cli::ExitCode).

mod agent;
mod check;
mod cli;

use std::io::{self, Write};

use clap::Parser;
use cli::{Cli, Command, ExitCode, Fatal};
use cli::{args_cmd, calls_cmd, check_cmd, generate_cmd, loop_cmd};
use toolmend_core::Target;

fn main() -> std::process::ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // One prefix for every error toolmend writes: clap's own `error: …` becomes
        // `toolmend: error: …`. Help and version go out as clap writes them.
        Err(e) if e.use_stderr() => {
            let _ = write!(io::stderr(), "toolmend: {}", e.render());
            return std::process::ExitCode::from(e.exit_code() as u8);
        }
        Err(e) => e.exit(),
    };
    match run(cli) {
        Ok(code) => code.into(),
        Err(err) => {
            // Rust ignores SIGPIPE, so `toolmend | head` ends here: quietly, like grep.
            if is_broken_pipe(&err) {
                return ExitCode::Success.into();
            }
            let _ = writeln!(io::stderr(), "toolmend: error: {err:#}");
            err.downcast_ref::<Fatal>()
                .map_or(ExitCode::Usage, |fatal| fatal.code)
                .into()
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Some(Command::Args(args)) => args_cmd::run(&args, Target::Object),
        Some(Command::Repair(args)) => args_cmd::run(&args, Target::Any),
        Some(Command::Calls(args)) => calls_cmd::run(&args),
        Some(Command::Prompt(args)) => calls_cmd::prompt(&args),
        Some(Command::Loop(args)) => loop_cmd::run(&args),
        Some(Command::Check(args)) => check_cmd::run(&args),
        Some(Command::Completions(args)) => generate_cmd::completions(args.shell),
        Some(Command::Man(args)) => generate_cmd::man(args.command.as_deref()),
        None => args_cmd::run(&cli.args, Target::Object),
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}
