//! `toolmend calls` and `toolmend prompt` through the binary.
//!
//! `fixtures/calls/*.jsonl` are run by `toolmend check`: each case is a raw reply (`input`),
//! the options, and the record `calls --records` must write for it (`expect` and `repairs`, or
//! the whole `error` and the `expect`ed value written with it). Run with `BLESS=1` to rewrite
//! the expectations (then review the diff by hand).

use std::fs;
use std::path::Path;

use predicates::prelude::*;
use serde_json::{Value, json};

#[path = "../common/mod.rs"]
mod common;
use common::{TempDir, repair_kinds, toolmend};

const TOOLS: &str = "fixtures/calls/tools.json";

/// Runs `calls --records ARGS` over `input`; returns the record and the exit code.
fn record(args: &[&str], input: &str) -> (Value, i32) {
    let out = toolmend()
        .arg("calls")
        .arg("--records")
        .args(args)
        .write_stdin(input)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("not one JSON record ({e}): {stdout:?}"));
    (value, out.status.code().unwrap())
}

/// Runs `toolmend check` (with `--bless` when BLESS is set) on `dir`; returns its stdout.
fn check(dir: &Path, bless: bool) -> String {
    let mut command = toolmend();
    command.arg("check");
    if bless {
        command.arg("--bless");
    }
    let out = command.arg(dir).output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "toolmend check {}:\n{stdout}{}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

mod fixtures;
mod jsonl;
mod markers;
mod replies;
