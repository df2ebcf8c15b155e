//! Text generated from the command-line definition: completions, man pages, `--version`, and
//! the examples in every `--help`.

use predicates::prelude::*;

mod common;
use common::toolmend;

/// Every command a user can type (the clap-made `help` aside).
const COMMANDS: &[&str] = &[
    "args",
    "repair",
    "calls",
    "prompt",
    "check",
    "completions",
    "man",
];

fn stdout_of(args: &[&str]) -> String {
    let out = toolmend().args(args).output().unwrap();
    assert!(out.status.success(), "toolmend {args:?} failed");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn completions_name_every_command() {
    for shell in ["bash", "zsh", "fish"] {
        let script = stdout_of(&["completions", shell]);
        for command in COMMANDS {
            assert!(
                script.contains(command),
                "{shell} completions lack {command}"
            );
        }
        assert!(script.contains("concat"), "{shell} completions lack flags");
    }
    assert!(stdout_of(&["completions", "bash"]).contains("complete -F _toolmend"));
    assert!(stdout_of(&["completions", "fish"]).contains("complete -c toolmend"));
    assert!(stdout_of(&["completions", "zsh"]).starts_with("#compdef toolmend"));
    toolmend()
        .args(["completions", "tcsh"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("invalid value 'tcsh'"));
}

/// The page as roff: its title line (`.TH`) comes before any section.
fn title_line(page: &str) -> &str {
    let first_macro = page
        .lines()
        .find(|l| l.starts_with(".TH") || l.starts_with(".SH"))
        .unwrap_or_default();
    assert!(first_macro.starts_with(".TH"), "no .TH first: {page}");
    first_macro
}

#[test]
fn man_pages_for_toolmend_and_each_command() {
    let page = stdout_of(&["man"]);
    assert!(
        title_line(&page).starts_with(&format!(
            ".TH toolmend 1  \"toolmend {}\"",
            env!("CARGO_PKG_VERSION")
        )),
        "{page}"
    );
    assert!(page.contains(".SH SUBCOMMANDS"));
    for command in &listed_commands() {
        assert!(page.contains(&format!("toolmend\\-{command}")), "{command}");
        let sub = stdout_of(&["man", command]);
        assert!(
            title_line(&sub).starts_with(&format!(".TH toolmend-{command} 1")),
            "{sub}"
        );
        assert!(sub.contains(".SH OPTIONS"), "{command}");
        assert!(
            sub.contains("Examples:"),
            "{command}: no examples in the page"
        );
    }
    toolmend()
        .args(["man", "nope"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no command \"nope\""));
}

#[test]
fn version_is_the_crate_version() {
    toolmend()
        .arg("--version")
        .assert()
        .success()
        .stdout(format!("toolmend {}\n", env!("CARGO_PKG_VERSION")));
}

/// The commands `toolmend --help` lists (commands added later are held to the same rules).
fn listed_commands() -> Vec<String> {
    let help = stdout_of(&["--help"]);
    let listed: Vec<String> = help
        .split_once("Commands:\n")
        .expect("a Commands section")
        .1
        .lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect();
    for command in COMMANDS {
        assert!(listed.iter().any(|l| l == command), "{command} not listed");
    }
    listed
}

#[test]
fn every_help_has_examples() {
    let mut helps = vec![vec!["--help".to_owned()]];
    for command in &listed_commands() {
        helps.push(vec![command.to_string(), "--help".into()]);
        helps.push(vec!["help".into(), command.to_string()]);
    }
    for args in helps {
        let help = stdout_of(&args.iter().map(String::as_str).collect::<Vec<_>>());
        let examples = help
            .split_once("Examples:\n")
            .unwrap_or_else(|| panic!("no examples in toolmend {args:?}:\n{help}"))
            .1;
        assert!(
            examples
                .lines()
                .next()
                .unwrap()
                .trim()
                .starts_with("toolmend")
                || examples.lines().next().unwrap().contains("| toolmend"),
            "toolmend {args:?}: the examples do not start with a command"
        );
    }
}
