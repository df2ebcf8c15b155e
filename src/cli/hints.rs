//! Hints for a person at a terminal: a mistyped command read as a file name, and a command
//! waiting for input that nobody piped in.

use std::io::{self, IsTerminal, Write};
use std::path::Path;

use clap::CommandFactory;

use crate::cli::Cli;

/// The command that `path` was probably meant to be (`repiar` → `repair`), when it names no
/// file: a bare word within a small edit distance of a command's name.
pub fn command_like(path: &Path) -> Option<String> {
    let word = path.to_str()?;
    if word.is_empty() || word.contains(['/', '.', '\\']) || path.exists() {
        return None;
    }
    let command = Cli::command();
    let names = command
        .get_subcommands()
        .map(|sub| sub.get_name().to_owned())
        .chain(["help".to_owned()]);
    let lower = word.to_ascii_lowercase();
    names
        .map(|name| (edit_distance(&lower, &name), name))
        .filter(|(distance, name)| name != word && *distance <= (name.len() / 3).max(1))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, name)| name)
}

/// Writes `toolmend: NAME: ERROR`, adding the command it looks like when there is one.
pub fn unreadable(err: &mut impl Write, path: &Path, error: &io::Error) -> io::Result<()> {
    let name = path.to_string_lossy();
    match command_like(path).filter(|_| error.kind() == io::ErrorKind::NotFound) {
        Some(command) => writeln!(err, "toolmend: {name}: {error}; did you mean `{command}`?"),
        None => writeln!(err, "toolmend: {name}: {error}"),
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

/// Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
/// neighbours (`repiar` is one swap from `repair`) each count 1.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let width = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * width];
    for i in 0..=a.len() {
        for j in 0..=b.len() {
            d[i * width + j] = if i == 0 || j == 0 {
                i + j
            } else {
                let cost = usize::from(a[i - 1] != b[j - 1]);
                let mut best = (d[(i - 1) * width + j] + 1)
                    .min(d[i * width + j - 1] + 1)
                    .min(d[(i - 1) * width + j - 1] + cost);
                if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                    best = best.min(d[(i - 2) * width + j - 2] + 1);
                }
                best
            };
        }
    }
    d[a.len() * width + b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(edit_distance("repiar", "repair"), 1);
        assert_eq!(edit_distance("calls", "calls"), 0);
        assert_eq!(edit_distance("cals", "calls"), 1);
        assert_eq!(edit_distance("", "man"), 3);
    }

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
