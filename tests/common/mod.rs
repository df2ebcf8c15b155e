//! Helpers shared by the test binaries; each uses some of them.
#![allow(dead_code)]

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
