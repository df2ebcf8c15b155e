//! Helpers shared by the test binaries; each uses some of them.
#![allow(dead_code)]

use std::path::Path;
use std::process::Output;

use serde_json::Value;

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
