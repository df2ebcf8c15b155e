//! Hints for a person at a terminal: a mistyped command read as a file name, and a command
//! waiting for input that nobody piped in.

use std::io::{self, IsTerminal, Write};
use std::path::Path;

use clap::CommandFactory;

use toolmend_core::tools::closest;

use crate::cli::Cli;

/// The command that `path` was probably meant to be (`repiar` → `repair`), when it names no
/// file: a bare word within a small edit distance of a command's name.
pub fn command_like(path: &Path) -> Option<String> {
    let word = path.to_str()?;
    if word.is_empty() || word.contains(['/', '.', '\\']) || path.exists() {
        return None;
    }
    let command = Cli::command();
    let names: Vec<String> = command
        .get_subcommands()
        .map(|sub| sub.get_name().to_owned())
        .chain(["help".to_owned()])
        .collect();
    closest(word, names.iter().map(String::as_str)).map(str::to_owned)
}

/// Writes `toolmend: error: NAME: ERROR`, adding the command it looks like when there is one.
pub fn unreadable(err: &mut impl Write, path: &Path, error: &io::Error) -> io::Result<()> {
    let name = path.to_string_lossy();
    match command_like(path).filter(|_| error.kind() == io::ErrorKind::NotFound) {
        Some(command) => writeln!(
            err,
            "toolmend: error: {name}: {error}; did you mean `{command}`?"
        ),
        None => writeln!(err, "toolmend: error: {name}: {error}"),
    }
}

/// Tells a person at a terminal what toolmend is waiting for, once, before it reads stdin:
/// with nothing piped in it would otherwise wait silently.
pub fn if_stdin_is_a_terminal(waiting_for: &str) {
    if io::stdin().is_terminal() {
        let _ = writeln!(
            io::stderr(),
            "toolmend: reading {waiting_for} from the terminal; end with Ctrl-D (toolmend --help for usage)"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_command_names_are_suggested() {
        for (typed, expected) in [
            ("repiar", Some("repair")),
            ("reapir", Some("repair")),
            ("cals", Some("calls")),
            ("lop", Some("loop")),
            ("chekc", Some("check")),
            ("promtp", Some("prompt")),
            ("completion", Some("completions")),
            ("agrs", Some("args")),
            ("Repair", Some("repair")),
            ("notes", None),
            ("input.txt", None),
            ("dir/repiar", None),
            ("xyz", None),
        ] {
            assert_eq!(
                command_like(Path::new(typed)).as_deref(),
                expected,
                "{typed}"
            );
        }
    }
}
