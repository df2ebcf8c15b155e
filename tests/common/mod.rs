//! Helpers shared by the test binaries; each uses some of them.
#![allow(dead_code)]

pub mod stream_events;

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

/// The toolmend binary, hermetic: an empty environment but for `PATH` (the loop's helpers are
/// found through it), run from the crate's root. Every test starts toolmend through this.
pub fn command() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolmend"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd
}

/// [`command`] as an `assert_cmd` command, for stdin written from the test and assertions.
pub fn toolmend() -> assert_cmd::Command {
    assert_cmd::Command::from_std(command())
}

/// Runs `python3 ARGS…` from the crate's root (test scripts, the pty module); asserts it
/// succeeded and returns its stdout.
pub fn python3(args: &[&str]) -> Vec<u8> {
    let out = Command::new("python3")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "python3 {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A fresh directory for one test, removed when dropped; its name holds `name`, the process id
/// and a counter, so tests running at once never share one.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "toolmend-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The path of a scripted program in `fixtures/bin/`.
pub fn bin(script: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/bin")
        .join(script)
        .display()
        .to_string()
}

/// A TOML string literal (JSON's escapes are valid TOML basic-string escapes).
pub fn quoted(text: &str) -> String {
    Value::from(text).to_string()
}

/// The exit code, or -1 when a signal ended the process.
pub fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The `kind` of each repair in a record's `repairs` array, in order.
pub fn repair_kinds(repairs: &Value) -> Vec<&str> {
    repairs
        .as_array()
        .expect("a repairs array")
        .iter()
        .map(|r| r["kind"].as_str().expect("a repair kind"))
        .collect()
}

/// One `calls` fixture case (fixtures/calls/*.jsonl) for the library: its name (file, line and
/// the case's own name), its reply and the options its flags give.
pub struct CallsCase {
    pub name: String,
    pub input: String,
    pub options: toolmend_core::calls::CallOptions,
}

/// Every `calls` fixture case with an input, in file order.
pub fn calls_cases() -> Vec<CallsCase> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/calls");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    let mut cases = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let case: Value = serde_json::from_str(line).unwrap();
            let Some(input) = case["input"].as_str() else {
                continue;
            };
            let mut options = toolmend_core::calls::CallOptions::default();
            let flags: Vec<&str> = case["options"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut flags = flags.into_iter();
            while let Some(flag) = flags.next() {
                match flag {
                    "--tools" => {
                        let path = dir.join(flags.next().unwrap());
                        let tools = toolmend_core::tools::Tools::from_path(&path).unwrap();
                        options.tools = Some(std::sync::Arc::new(tools));
                    }
                    "--require-terminate" => options.require_terminate = true,
                    "--format" => options.format = Some(flags.next().unwrap().to_owned()),
                    "--strict" => options.strict = true,
                    "--max-nesting" => {
                        options.max_nesting = flags.next().unwrap().parse().unwrap();
                    }
                    "--shape" => {
                        flags.next();
                    }
                    other => panic!("{}:{}: flag {other} not known here", file.display(), i + 1),
                }
            }
            cases.push(CallsCase {
                name: format!(
                    "{}:{} {}",
                    file.file_name().unwrap().to_string_lossy(),
                    i + 1,
                    case["name"].as_str().unwrap_or("")
                ),
                input: input.to_owned(),
                options,
            });
        }
    }
    assert!(cases.len() > 100, "{} cases", cases.len());
    cases
}

/// `text` cut at the byte offsets `cuts` (ascending character boundaries).
pub fn split_at<'a>(text: &'a str, cuts: &[usize]) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut from = 0;
    for &cut in cuts {
        out.push(&text[from..cut]);
        from = cut;
    }
    out.push(&text[from..]);
    out
}

/// What one mend gives, in a form two runs can be compared by (the value, what was dropped,
/// the repairs; or the error).
pub type Outcome = Result<(String, Vec<String>, String), String>;

/// [`Outcome`] of `mender` on `input`.
pub fn outcome(mender: &mut toolmend_core::Mender, input: &str) -> Outcome {
    match mender.mend(input) {
        Ok(m) => Ok((
            m.value().into_owned(),
            m.dropped().map(str::to_owned).collect(),
            format!("{:?}", m.repairs()),
        )),
        Err(e) => Err(format!("{e:?}")),
    }
}
