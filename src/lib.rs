//! The `toolmend` command as a library: [`run`] parses a command line, runs one command
//! (`src/cli/`), prints its error once and returns the exit status. The binary (`src/main.rs`)
//! calls it, and so do the Python and Node packages' native modules (their `toolmend` command), so
//! one compile of a package builds the library and the CLI together.
//!
//! Not a stable Rust API: the library to build on is `toolmend-core`.

// The agent loop runs child processes in process groups and catches SIGINT/SIGTERM/SIGHUP: Unix
// only. Elsewhere `toolmend loop` says so and ends with status 2.
#[cfg(unix)]
mod agent;
mod check;
mod cli;

use std::ffi::OsString;
use std::io::{self, Write};

use clap::Parser;
use cli::{Cli, Command, ExitCode, Fatal};
use cli::{args_cmd, calls_cmd, check_cmd, generate_cmd, loop_cmd};
use toolmend_core::Target;

/// Runs `toolmend` with `args` (the first one is the program's name, as in
/// [`std::env::args_os`]) on this process's stdin, stdout and stderr, and returns the exit status
/// (0 to 8, or 130: `toolmend --help`). Usage errors, `--help` and `--version` are printed here
/// and returned as their status: nothing here exits the process.
///
/// The host process should ignore SIGPIPE, as Rust, CPython and Node all do, so that a closed
/// stdout (`toolmend | head`) is an error that ends the command quietly, not a signal.
pub fn run<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let code = match Cli::try_parse_from(args) {
        Ok(cli) => match command(cli) {
            Ok(code) => code.number(),
            Err(err) => report(&err).number(),
        },
        // One prefix for every error toolmend writes: clap's own `error: …` becomes
        // `toolmend: error: …`. Help and version go out as clap writes them.
        Err(usage) if usage.use_stderr() => {
            let _ = write!(io::stderr(), "toolmend: {}", usage.render());
            u8::try_from(usage.exit_code()).unwrap_or(2)
        }
        Err(usage) => {
            let _ = usage.print();
            u8::try_from(usage.exit_code()).unwrap_or(2)
        }
    };
    // A binary's stdout is flushed when `main` returns; a package's native module never returns
    // from `main`, so what is still buffered is written here.
    let _ = io::stdout().flush();
    code
}

/// The exit status of a command that failed, its error printed once.
fn report(err: &anyhow::Error) -> ExitCode {
    // Rust ignores SIGPIPE, so `toolmend | head` ends here: quietly, like grep.
    if is_broken_pipe(err) {
        return ExitCode::Success;
    }
    let _ = writeln!(io::stderr(), "toolmend: error: {err:#}");
    err.downcast_ref::<Fatal>()
        .map_or(ExitCode::Usage, |fatal| fatal.code)
}

fn command(cli: Cli) -> anyhow::Result<ExitCode> {
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
