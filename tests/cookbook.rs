//! Every example in `docs/cookbook.md` and `docs/streaming.md`, and the tools file examples of
//! `docs/loop.md`, runs as written.
//!
//! The code blocks run in order, in one scratch folder (so a block can use the files an
//! earlier one made), with the debug `toolmend` first on PATH. `sh` blocks run under
//! `bash -euo pipefail`. `python` blocks use the toolmend package, so they run with the
//! interpreter in `TOOLMEND_DOC_PYTHON` (`make test-python` sets it to the fresh venv the wheel
//! was installed into), and `js` blocks with node as ES modules beside the node_modules in
//! `TOOLMEND_DOC_NODE_MODULES` (`make test-node`: the fresh project the tarball was installed
//! into); without those, the blocks are skipped here and said so. A `text` block right after
//! one is the stdout it must print, exactly. Blocks marked `no-run` (the loop, which is built
//! elsewhere) and blocks in other languages (toml, yaml) are not run.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

struct Block {
    line: usize,
    info: String,
    code: String,
    expected: Option<String>,
}

fn blocks(markdown: &str) -> Vec<Block> {
    let mut found: Vec<Block> = Vec::new();
    let mut open: Option<Block> = None;
    let mut since_last = String::new();
    for (i, line) in markdown.lines().enumerate() {
        if let Some(block) = open.as_mut() {
            if line.trim_start() == "```" {
                let block = open.take().unwrap();
                let follows_code = !found.is_empty() && since_last.trim().is_empty();
                if block.info == "text" && follows_code {
                    let last = found.last_mut().unwrap();
                    if last.expected.is_none() {
                        last.expected = Some(block.code);
                        since_last.clear();
                        continue;
                    }
                }
                found.push(block);
                since_last.clear();
            } else {
                block.code.push_str(line);
                block.code.push('\n');
            }
        } else if let Some(info) = line.trim_start().strip_prefix("```") {
            open = Some(Block {
                line: i + 1,
                info: info.trim().to_owned(),
                code: String::new(),
                expected: None,
            });
        } else {
            since_last.push_str(line);
            since_last.push('\n');
        }
    }
    assert!(open.is_none(), "an unclosed code block");
    found
}

fn on_path(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

const ALL: &[&str] = &["sh", "python", "js"];

#[test]
fn cookbook_examples_run_as_written() {
    let ran = run_doc("docs/cookbook.md", "cookbook", ALL);
    assert!(ran.sh >= 10, "only {} cookbook sh blocks ran", ran.sh);
    ran.check_packages(5, 2);
}

#[test]
fn loop_md_tools_file_examples_run_as_written() {
    let ran = run_doc("docs/loop.md", "loop-md", ALL);
    assert!(ran.sh >= 5, "only {} docs/loop.md blocks ran", ran.sh);
}

/// docs/streaming.md: the CLI example with its output, the Python and Node examples with theirs,
/// and the progress display (defined here; python/tests/test_stream.py drives it). Its Rust
/// example is a doc test (src/lib.rs).
#[test]
fn streaming_md_examples_run_as_written() {
    let ran = run_doc("docs/streaming.md", "streaming-md", ALL);
    assert!(
        ran.sh >= 1,
        "only {} docs/streaming.md sh blocks ran",
        ran.sh
    );
    ran.check_packages(2, 1);
}

/// The README's Python and Node examples (its `$ ` shell lines are tests/readme.rs's).
#[test]
fn readme_package_examples_run_as_written() {
    let ran = run_doc("README.md", "readme", &["python", "js"]);
    ran.check_packages(1, 1);
}

/// How many blocks of each kind ran, and how many package blocks there were.
#[derive(Default)]
struct Ran {
    sh: usize,
    python: usize,
    js: usize,
    python_blocks: usize,
    js_blocks: usize,
}

impl Ran {
    /// The doc has at least this many Python and Node blocks, and all of them ran where the
    /// package is installed.
    fn check_packages(&self, python: usize, js: usize) {
        assert!(
            self.python_blocks >= python,
            "only {} python blocks",
            self.python_blocks
        );
        assert!(self.js_blocks >= js, "only {} js blocks", self.js_blocks);
        if std::env::var_os("TOOLMEND_DOC_PYTHON").is_some() {
            assert_eq!(self.python, self.python_blocks);
        }
        if std::env::var_os("TOOLMEND_DOC_NODE_MODULES").is_some() {
            assert_eq!(self.js, self.js_blocks);
        }
    }
}

/// Runs the blocks of `doc` in the `languages` given, in a fresh scratch folder named `scratch`.
fn run_doc(doc: &str, scratch: &str, languages: &[&str]) -> Ran {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let markdown = fs::read_to_string(root.join(doc)).unwrap();
    let dir: PathBuf = Path::new(env!("CARGO_TARGET_TMPDIR")).join(scratch);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    let python = std::env::var_os("TOOLMEND_DOC_PYTHON");
    let node_modules = std::env::var_os("TOOLMEND_DOC_NODE_MODULES");
    if let Some(modules) = &node_modules {
        // ES modules find packages only in a node_modules beside or above them.
        std::os::unix::fs::symlink(modules, dir.join("node_modules")).unwrap();
    }
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_toolmend")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let has_jq = on_path("jq");
    let mut ran = Ran::default();
    for block in blocks(&markdown) {
        let language = block.info.split_whitespace().next().unwrap_or_default();
        if block.info.contains("no-run") || !languages.contains(&language) {
            continue;
        }
        let mut cmd = match language {
            "sh" => {
                let mut cmd = Command::new("bash");
                cmd.args(["-euo", "pipefail", "-c", &block.code]);
                cmd
            }
            "python" => {
                ran.python_blocks += 1;
                let Some(python) = &python else {
                    eprintln!(
                        "{doc}:{}: skipped, TOOLMEND_DOC_PYTHON is not set (make test-python runs it)",
                        block.line
                    );
                    continue;
                };
                fs::write(dir.join("snippet.py"), &block.code).unwrap();
                let mut cmd = Command::new(python);
                cmd.arg("snippet.py");
                cmd
            }
            "js" => {
                ran.js_blocks += 1;
                if node_modules.is_none() {
                    eprintln!(
                        "{doc}:{}: skipped, TOOLMEND_DOC_NODE_MODULES is not set (make test-node runs it)",
                        block.line
                    );
                    continue;
                }
                fs::write(dir.join("snippet.mjs"), &block.code).unwrap();
                let mut cmd = Command::new("node");
                cmd.arg("snippet.mjs");
                cmd
            }
            _ => continue,
        };
        if block.code.contains("jq ") && !has_jq {
            // CI installs jq (.ci/run); elsewhere a missing jq only skips these blocks.
            assert!(
                std::env::var_os("CI").is_none(),
                "{doc}:{}: jq is not installed",
                block.line
            );
            eprintln!("{doc}:{}: skipped, jq is not installed", block.line);
            continue;
        }
        let output = cmd
            .current_dir(&dir)
            .env("PATH", &path)
            .env_remove("TOOLMEND")
            .output()
            .unwrap_or_else(|e| panic!("{doc}:{}: {e}", block.line));
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{doc}:{}: {} exited with {}\n--- code\n{}--- stdout\n{stdout}--- stderr\n{}",
            block.line,
            language,
            output.status,
            block.code,
            String::from_utf8_lossy(&output.stderr)
        );
        if let Some(expected) = &block.expected {
            assert_eq!(
                stdout,
                expected.as_str(),
                "{doc}:{}: the output shown is not what it prints",
                block.line
            );
        }
        match language {
            "sh" => ran.sh += 1,
            "python" => ran.python += 1,
            _ => ran.js += 1,
        }
    }
    ran
}
