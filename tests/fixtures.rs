//! Runs toolmend's own fixtures (`fixtures/args`, `fixtures/repair`, and `fixtures/fuzz`: the
//! inputs the fuzzers found, see docs/guarantees.md) through `toolmend check`.
//!
//! A fixture file holds one behaviour; each line is a case:
//! `{"name", "command"?, "options"?, "input", "expect"?, "dropped"?, "repairs"?, "error"?,
//! "offset"?, "strict"}` (the format is documented in `src/check.rs`). Every case here records
//! `strict`, the outcome under `--strict`, so `check` also holds each case to the rule: an input
//! that needed a repair fails under `--strict`, one that needed none passes.
//!
//! `BLESS=1 cargo test --test fixtures` rewrites the expectations from what the binary does
//! now (`toolmend check --bless`); review the diff by hand before committing it.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::value::RawValue;

mod common;

const DIRS: &[&str] = &["fixtures/args", "fixtures/repair", "fixtures/fuzz"];

fn jsonl_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            jsonl_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            found.push(path);
        }
    }
}

#[test]
fn fixtures_pass_under_check() {
    let bless = std::env::var_os("BLESS").is_some();
    let mut cmd = common::command();
    cmd.arg("check");
    if bless {
        cmd.arg("--bless");
    }
    let output = cmd.args(DIRS).output().unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "toolmend check failed:\n{stdout}{stderr}"
    );
    if bless {
        return;
    }
    let summary = stdout.lines().last().unwrap_or_default();
    let (passed, failed) = summary
        .split_once(" passed, ")
        .unwrap_or_else(|| panic!("no summary line: {stdout}"));
    let passed: usize = passed.parse().unwrap();
    assert!(passed >= 100, "only {passed} fixture cases");
    assert_eq!(failed, "0 failed");
}

/// `check` compares only the fields a case has; blessing a copy must leave every file as it is,
/// so each case records its whole outcome (an error's offset, the dropped values, the repairs).
#[test]
fn fixtures_record_their_whole_outcome() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let copy = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fixtures-bless-copy");
    let _ = fs::remove_dir_all(&copy);
    let mut originals = Vec::new();
    for dir in DIRS {
        jsonl_files(&root.join(dir), &mut originals);
    }
    assert!(originals.len() >= 10, "fixtures missing");
    for original in &originals {
        let target = copy.join(original.strip_prefix(root).unwrap());
        fs::create_dir_all(target.parent().unwrap()).unwrap();
        fs::copy(original, &target).unwrap();
        // The files its options name (a `--schema` file) go along.
        for entry in fs::read_dir(original.parent().unwrap()).unwrap() {
            let path = entry.unwrap().path();
            if path.is_file() && path.extension().is_some_and(|e| e == "json") {
                fs::copy(
                    &path,
                    target.parent().unwrap().join(path.file_name().unwrap()),
                )
                .unwrap();
            }
        }
        // Every case says what --strict gives, so the strict rule is checked for all of them.
        for (i, line) in fs::read_to_string(original).unwrap().lines().enumerate() {
            // Raw values: some numbers here (1E400) are past what f64 can hold.
            let case: BTreeMap<String, Box<RawValue>> = serde_json::from_str(line).unwrap();
            assert!(
                case.contains_key("strict"),
                "{}:{}: no \"strict\"",
                original.display(),
                i + 1
            );
        }
    }
    let output = common::command()
        .args(["check", "--bless"])
        .arg(&copy)
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for original in &originals {
        let blessed = copy.join(original.strip_prefix(root).unwrap());
        assert_eq!(
            fs::read_to_string(&blessed).unwrap(),
            fs::read_to_string(original).unwrap(),
            "--bless would change {}",
            original.display()
        );
    }
}
