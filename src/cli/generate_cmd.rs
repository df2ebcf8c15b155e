//! `completions` and `man`: text generated from the command-line definition, so it never
//! falls out of step with the flags.

use std::io::{self, Write};

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::{Cli, ExitCode};

/// Prints completions for `shell`.
pub fn completions(shell: Shell) -> anyhow::Result<ExitCode> {
    // clap_complete panics when its writer fails (`| true`): it writes to memory, we write
    // that out, so a closed stdout is an error that main ends quietly.
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "toolmend", &mut script);
    let mut out = io::stdout().lock();
    out.write_all(&script)?;
    out.flush()?;
    Ok(ExitCode::Success)
}

/// Prints the man page of toolmend, or of one command (`toolmend-check(1)`), as roff.
pub fn man(command: Option<&str>) -> anyhow::Result<ExitCode> {
    let mut page = Cli::command();
    if let Some(name) = command {
        let Some(sub) = page.find_subcommand(name) else {
            let names: Vec<&str> = page.get_subcommands().map(|s| s.get_name()).collect();
            anyhow::bail!("no command {name:?}; expected one of: {}", names.join(", "));
        };
        let full = format!("toolmend-{name}");
        page = sub
            .clone()
            .display_name(full)
            .version(env!("CARGO_PKG_VERSION"))
            // The version is for the page's footer: the command itself has no -V to list.
            .disable_version_flag(true)
            .bin_name(format!("toolmend {name}"));
    }
    let mut out = io::stdout().lock();
    clap_mangen::Man::new(page).render(&mut out)?;
    out.flush()?;
    Ok(ExitCode::Success)
}
