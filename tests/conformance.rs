//! JSONTestSuite (../shared/corpora/JSONTestSuite, MIT): every `y_` file comes out of `repair`
//! with the same value and no repairs; every `n_` and `i_` file gives exactly one record and no
//! crash; under `--strict --concat error` (a conforming parser) every `y_` file passes and every
//! `n_` file fails.
//! The corpus sits beside the repository in CI; in a plain clone it is absent and the test says so
//! and skips.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::Value;
use serde_json::value::RawValue;

mod common;

/// No repairs, and several values one after another are an error rather than split.
const STRICT: &[&str] = &["--strict", "--concat", "error"];

fn corpus() -> Option<PathBuf> {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpora/JSONTestSuite/test_parsing");
    dir.is_dir().then_some(dir)
}

/// Runs `toolmend repair --input whole --records [extra]` on one file and returns its single record.
fn record(file: &Path, extra: &[&str]) -> Value {
    let output = common::command()
        .args(["repair", "--input", "whole", "--records"])
        .args(extra)
        .arg(file)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let name = file.file_name().unwrap().to_string_lossy();
    let code = output.status.code();
    assert!(
        matches!(code, Some(0 | 1)),
        "{name}: exit {:?} (crash?)",
        output.status
    );
    let stdout = String::from_utf8(output.stdout).expect("records are UTF-8");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "{name}: expected exactly one record, got {stdout:?}"
    );
    // RawValue checks the syntax without converting numbers (`1e400` is out of f64's range).
    let raw: Box<RawValue> = serde_json::from_str(lines[0]).expect("a record is JSON");
    let ok = raw.get().starts_with(r#"{"ok":true"#);
    assert_eq!(ok, code == Some(0), "{name}: exit status and ok differ");
    serde_json::from_str(raw.get()).unwrap_or_else(|_| serde_json::json!({ "ok": ok }))
}

fn files(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect();
    files.sort();
    files
}

#[test]
fn y_files_come_out_unchanged() {
    let Some(dir) = corpus() else {
        eprintln!("skipped: ../shared/corpora/JSONTestSuite is not beside this clone");
        return;
    };
    let files = files(&dir, "y_");
    assert!(files.len() >= 90, "the corpus lost its y_ files");
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy();
        let text = std::fs::read(file).unwrap();
        let expected: Value = serde_json::from_slice(&text).unwrap();
        for extra in [&[][..], STRICT] {
            let record = record(file, extra);
            assert_eq!(record["ok"], true, "{name} {extra:?}: {record}");
            assert_eq!(record["value"], expected, "{name} {extra:?}: value changed");
            let repairs = record["repairs"].as_array().unwrap();
            assert!(
                repairs.iter().all(|r| r["kind"] == "duplicate_key"),
                "{name}: valid JSON was repaired: {repairs:?}"
            );
        }
    }
}

#[test]
fn n_files_fail_strict_and_never_crash() {
    let Some(dir) = corpus() else {
        eprintln!("skipped: ../shared/corpora/JSONTestSuite is not beside this clone");
        return;
    };
    let files = files(&dir, "n_");
    assert!(files.len() >= 180, "the corpus lost its n_ files");
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy();
        record(file, &[]);
        let strict = record(file, STRICT);
        assert_eq!(
            strict["ok"], false,
            "{name}: --strict accepted invalid JSON: {strict}"
        );
    }
}

#[test]
fn i_files_give_one_record() {
    let Some(dir) = corpus() else {
        eprintln!("skipped: ../shared/corpora/JSONTestSuite is not beside this clone");
        return;
    };
    for file in files(&dir, "i_") {
        record(&file, &[]);
        record(&file, STRICT);
    }
}

/// 200,000 levels of arrays or objects, and strings encoded past the depth limit, give an error
/// record, not a stack overflow, and the next input is still processed. (Each encoding layer
/// doubles the backslashes, so 16 layers already make a 450 KB line.)
#[test]
fn deep_nesting_is_an_error_record() {
    let arrays = "[".repeat(200_000);
    let objects = r#"{"a":"#.repeat(200_000);
    let mut encoded = r#"{"a":1}"#.to_string();
    for _ in 0..16 {
        encoded = serde_json::to_string(&encoded).unwrap();
    }
    let closed_arrays = format!("{}{}", "[".repeat(200_000), "]".repeat(200_000));
    let input = format!("{arrays}\n{objects}\n{encoded}\n{closed_arrays}\n[1]\n");
    let output = common::toolmend()
        .args(["repair", "--records"])
        .write_stdin(input)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8(output.stdout).unwrap();
    let records: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 5);
    assert_eq!(records[0]["error"]["code"], "too_deep");
    assert_eq!(records[1]["error"]["code"], "too_deep");
    assert_eq!(records[2]["error"]["code"], "depth_exceeded");
    assert_eq!(records[3]["error"]["code"], "too_deep");
    assert_eq!(records[4]["value"], serde_json::json!([1]));
}

/// The `i_` files holding a lone surrogate escape are valid JSON that `JSON.parse` reads: they
/// come out as written, with no repair, under `--strict` too. (The one with raw surrogate
/// bytes is not UTF-8: `invalid_utf8`.)
#[test]
fn i_files_with_lone_surrogates_are_kept_under_strict() {
    let Some(dir) = corpus() else {
        eprintln!("skipped: ../shared/corpora/JSONTestSuite is not beside this clone");
        return;
    };
    let files: Vec<PathBuf> = files(&dir, "i_")
        .into_iter()
        .filter(|f| f.to_string_lossy().contains("surrogate"))
        .collect();
    assert!(files.len() >= 10, "the corpus lost its surrogate files");
    let mut kept = 0;
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy();
        let Ok(text) = String::from_utf8(std::fs::read(file).unwrap()) else {
            continue;
        };
        for extra in [&[][..], STRICT] {
            let output = common::command()
                .args(["repair", "--input", "whole", "--records"])
                .args(extra)
                .arg(file)
                .output()
                .unwrap();
            let stdout = String::from_utf8(output.stdout).unwrap();
            // Compared as text: serde_json's Value cannot hold a lone surrogate.
            let expected = format!(
                r#"{{"ok":true,"line":1,"value":{},"repairs":[],"dropped":[]}}"#,
                text.trim()
            );
            assert_eq!(stdout.trim_end(), expected, "{name} {extra:?}");
        }
        kept += 1;
    }
    assert_eq!(kept, files.len() - 1);
}
