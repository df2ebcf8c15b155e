//! Every `$ command` in README.md's shell blocks runs as written and prints what the README shows.

use std::path::Path;
use std::process::Command;

/// (command, expected output) pairs: a `$ ` line and the lines after it up to the next `$ ` or the
/// end of the block.
fn examples(readme: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut in_shell = false;
    let mut current: Option<(String, String)> = None;
    for line in readme.lines() {
        if line.starts_with("```") {
            if let Some(done) = current.take() {
                out.push(done);
            }
            in_shell = line == "```sh";
            continue;
        }
        if !in_shell {
            continue;
        }
        if let Some(command) = line.strip_prefix("$ ") {
            if let Some(done) = current.take() {
                out.push(done);
            }
            current = Some((command.to_string(), String::new()));
        } else if let Some((_, expected)) = current.as_mut() {
            expected.push_str(line);
            expected.push('\n');
        }
    }
    out
}

#[test]
fn readme_examples_run_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_toolmend")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let examples = examples(&readme);
    assert!(examples.len() >= 6, "README lost its examples");
    let mut failures = Vec::new();
    for (command, expected) in &examples {
        let output = Command::new("bash")
            .arg("-c")
            .arg(format!("{command} 2>&1"))
            .current_dir(root)
            .env("PATH", &path)
            .output()
            .unwrap();
        let got = String::from_utf8_lossy(&output.stdout);
        // Lines without a trailing newline in the output still match the README's lines.
        if got.trim_end() != expected.trim_end() {
            failures.push(format!("$ {command}\nexpected:\n{expected}got:\n{got}\n"));
        }
    }
    assert!(
        failures.is_empty(),
        "README examples differ:\n{}",
        failures.join("\n")
    );
}

/// Every relative link and file path the README and docs/ point a user to is in the project
/// (no `../shared/…`, which only the developers have).
#[test]
fn docs_link_only_to_files_in_the_project() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md")];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
    let mut broken = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        assert!(
            !text.contains("../shared/"),
            "{} points to ../shared/",
            page.display()
        );
        // Markdown links: `](target)`.
        for (at, _) in text.match_indices("](") {
            let target = &text[at + 2..];
            let target = &target[..target.find(')').unwrap()];
            let file = target.split('#').next().unwrap();
            if file.is_empty() || file.contains("://") || file.starts_with("mailto:") {
                continue;
            }
            if !page.parent().unwrap().join(file).exists() {
                broken.push(format!("{}: {target}", page.display()));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links to missing files:\n{}",
        broken.join("\n")
    );
}

/// The README's first step works as it says: `make demo` builds `target/release/toolmend`,
/// which the README then puts on PATH (an alias of toolmend to itself would do nothing).
#[test]
fn readme_puts_the_demo_build_on_path() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let makefile = std::fs::read_to_string(root.join("Makefile")).unwrap();
    assert!(makefile.contains("BIN := target/release/toolmend"));
    assert!(makefile.contains("demo: release"));
    assert!(readme.contains(r#"$ export PATH="$PWD/target/release:$PATH""#));
    assert!(readme.contains("cargo install --locked --path ."));
    assert!(
        !readme.contains("alias toolmend="),
        "the README aliases toolmend"
    );
}
