//! The `calls` and `prompt` commands: options from the command line, files in, exit code out.

use std::io::{self, Write};

use toolmend_core::calls::CallsFilter;
use toolmend_core::tools::Tools;

use crate::cli::files::each_input;
use crate::cli::{CallsArgs, ExitCode, PromptArgs};

/// Runs `calls` over every input file.
pub fn run(args: &CallsArgs) -> anyhow::Result<ExitCode> {
    if args.list_formats {
        let mut out = io::stdout().lock();
        for (name, models) in toolmend_core::calls::formats() {
            writeln!(out, "{name:<16} {models}")?;
        }
        out.flush()?;
        return Ok(ExitCode::Success);
    }
    if args.stream {
        return crate::cli::stream_cmd::run(args);
    }
    let mut filter = CallsFilter::new(args.filter_options(None).map_err(anyhow::Error::msg)?);
    each_input(&args.files, "model replies", |input, file, out, err| {
        Ok(filter.run(input, file, out, err)?.failed > 0)
    })
}

/// Prints the system prompt of a tools file.
pub fn prompt(args: &PromptArgs) -> anyhow::Result<ExitCode> {
    let tools = Tools::from_path(&args.tools).map_err(|e| anyhow::anyhow!("tools file {e}"))?;
    let mut out = io::stdout().lock();
    out.write_all(toolmend_core::system_prompt(&tools).as_bytes())?;
    out.flush()?;
    Ok(ExitCode::Success)
}
