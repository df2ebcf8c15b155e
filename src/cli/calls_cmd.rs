//! The `calls` and `prompt` commands: options from the command line, files in, exit code out.

use std::fs::File;
use std::io::{self, BufReader, Write};
use std::path::Path;
use std::process::ExitCode;

use toolmend::calls::CallsFilter;
use toolmend::tools::Tools;

use crate::cli::hints;
use crate::cli::{CallsArgs, PromptArgs};

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
    let options = match args.filter_options(None) {
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
