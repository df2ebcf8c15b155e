//! The `loop` command: config and prompt in, the answer (or a `--json` record) out, the run's
//! status as the exit code.

#[cfg(unix)]
use std::fs::File;
#[cfg(unix)]
use std::io::{self, BufWriter, Read, Write};

#[cfg(unix)]
use crate::agent::{self, Config, Events, Status};
use crate::cli::{ExitCode, LoopArgs};
#[cfg(unix)]
use crate::cli::{Fatal, closed_stderr, hints};
#[cfg(unix)]
use anyhow::anyhow;
use anyhow::bail;

/// The loop runs its commands in process groups and stops them by signal: Unix only.
#[cfg(not(unix))]
pub fn run(_args: &LoopArgs) -> anyhow::Result<ExitCode> {
    bail!("toolmend loop runs on Unix only (Linux, macOS); the other commands run here")
}

/// Runs the agent loop once.
#[cfg(unix)]
pub fn run(args: &LoopArgs) -> anyhow::Result<ExitCode> {
    let mut stderr = io::stderr();
    let config = Config::from_path(&args.config).map_err(|e| anyhow!("config {e}"))?;
    // A dry run starts nothing, so its commands need not exist here.
    if !args.dry_run
        && let Err(e) = config.check_commands()
    {
        bail!("config {}: {e}", args.config.display());
    }
    let prompt = match args.prompt.as_deref() {
        Some(prompt) if prompt != "-" => prompt.to_owned(),
        _ => {
            hints::if_stdin_is_a_terminal("the prompt");
            let mut text = String::new();
            if let Err(e) = io::stdin().read_to_string(&mut text) {
                bail!("reading the prompt from stdin: {e}");
            }
            text
        }
    };
    if prompt.trim().is_empty() {
        bail!("the prompt is empty (give it as an argument or on stdin)");
    }

    let mut out = io::stdout().lock();
    if args.dry_run {
        let messages = agent::first_messages(&config, &prompt);
        let input = agent::render(&config, &messages);
        writeln!(out, "# system prompt")?;
        out.write_all(messages[0].content.as_bytes())?;
        writeln!(
            out,
            "\n# first LLM input (stdin of {:?})",
            config.llm.command
        )?;
        out.write_all(&input)?;
        out.flush()?;
        return Ok(ExitCode::Success);
    }

    let mut sinks: Vec<Box<dyn Write>> = Vec::new();
    if let Some(path) = &args.transcript {
        match File::create(path) {
            Ok(file) => sinks.push(Box::new(BufWriter::new(file))),
            Err(e) => bail!("transcript {}: {e}", path.display()),
        }
    }
    if args.verbose {
        sinks.push(Box::new(io::stderr()));
    }
    let mut events = Events::new(sinks);
    // Events promised on stderr that cannot be shown there: fail closed, nothing runs.
    if args.verbose && closed_stderr::closed_at_start() {
        events.fail("stderr is closed, so --verbose cannot show the events");
    }
    // Installed only now: while the prompt was read, a Ctrl-C should simply end us.
    if let Err(e) = agent::catch_stop_signals() {
        return Err(Fatal {
            code: ExitCode::Loop(Status::Internal),
            message: format!("cannot catch SIGINT, SIGTERM and SIGHUP: {e}"),
        }
        .into());
    }
    let outcome = agent::run(&config, &prompt, &mut events);

    let written = if args.json {
        writeln!(out, "{}", outcome.to_json()).and_then(|()| out.flush())
    } else if let Some(answer) = &outcome.answer {
        out.write_all(answer.as_bytes())
            .and_then(|()| match answer.ends_with('\n') {
                true => Ok(()),
                false => out.write_all(b"\n"),
            })
            .and_then(|()| out.flush())
    } else {
        out.flush()
    };
    // A closed stdout (`| head`) ends quietly, but the run's own status is still the exit code:
    // a denied or timed-out run is never reported as a success.
    match written {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => return Err(e.into()),
        _ => {}
    }
    if let Some(error) = &outcome.error {
        let level = match outcome.status {
            Status::IterationLimit | Status::Timeout | Status::Terminated | Status::Answered => {
                "warning"
            }
            _ => "error",
        };
        // Best effort: stderr may be the very output that failed (a pipe whose reader is
        // gone), and the run's status, not that write, decides the exit code.
        let _ = writeln!(stderr, "toolmend: {level}: {error}");
    }
    // An output that cannot be written is a failure, even when the run itself succeeded (the
    // transcript failed at `run.finished`, say).
    match events.failure() {
        Some(failure) if outcome.status != Status::OutputFailed => {
            let _ = writeln!(
                stderr,
                "toolmend: error: writing the transcript failed: {failure}"
            );
            if outcome.status.succeeded() {
                return Ok(ExitCode::Loop(Status::OutputFailed));
            }
        }
        _ => {}
    }
    Ok(ExitCode::Loop(outcome.status))
}
