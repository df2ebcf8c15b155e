//! Runs every case in `fixtures/**/*.jsonl` through the real binary.
//!
//! A fixture file holds one behaviour; each line is a case:
//! `{"name", "command"?, "options"?, "input", "expect"?, "dropped"?, "repairs"?, "error"?,
//! "offset"?, "strict"}`. `expect` and `dropped` are compared as compact JSON text, so key order
//! and the text of numbers count. `strict` is the outcome of the same input under `--strict`
//! (`"ok"` or an error code), and the rule is checked for every case: an input that needed a
//! repair fails under `--strict`, one that needed none passes.
//!
//! `BLESS=1 cargo test --test fixtures` rewrites the expectations from what the binary does
//! now; review the diff by hand before committing it.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

/// Repairs that strict mode also performs: they change the form, never the JSON grammar.
const ALLOWED_IN_STRICT: &[&str] = &["unquote", "unescape", "duplicate_key"];

/// The fields of a case that hold expectations, in the order they are written.
const OUTCOME_FIELDS: &[&str] = &["expect", "dropped", "repairs", "error", "offset", "strict"];

type Case = BTreeMap<String, Box<RawValue>>;

fn fixture_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            fixture_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            found.push(path);
        }
    }
}

/// Runs `inputs` (cases with the same command and options) in one process, one jsonl line
/// each, and returns the output records as text, one per input.
fn run(command: &str, options: &[String], inputs: &[String]) -> Vec<String> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolmend"))
        .arg(command)
        .args(["--records", "--input", "jsonl"])
        .args(options)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let lines: String = inputs
        .iter()
        .map(|input| format!("{}\n", json!({ "text": input })))
        .collect();
    let writer = std::thread::spawn(move || stdin.write_all(lines.as_bytes()).unwrap());
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    let records: Vec<String> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(
        records.len(),
        inputs.len(),
        "one record per input ({command} {options:?}); stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    records
}

/// A record as written, with the value and dropped values kept as their exact text.
#[derive(Deserialize)]
struct Record {
    ok: bool,
    #[serde(default)]
    value: Option<Box<RawValue>>,
    #[serde(default)]
    repairs: Option<Box<RawValue>>,
    #[serde(default)]
    dropped: Option<Box<RawValue>>,
    #[serde(default)]
    error: Option<Value>,
}

fn raw(text: impl Into<String>) -> Box<RawValue> {
    RawValue::from_string(text.into()).unwrap()
}

/// The outcome of one record, in the fixture's own fields, as exact JSON text.
fn outcome(line: &str) -> Case {
    let record: Record = serde_json::from_str(line).unwrap();
    let mut got = Case::new();
    if record.ok {
        // An absent `value` reads as None only when it was `null`.
        let value = record.value.unwrap_or_else(|| raw("null"));
        got.insert("expect".into(), value);
        got.insert("repairs".into(), record.repairs.unwrap());
        if let Some(dropped) = record.dropped.filter(|d| d.get() != "[]") {
            got.insert("dropped".into(), dropped);
        }
    } else {
        let error = record.error.unwrap();
        got.insert("error".into(), raw(error["code"].to_string()));
        if let Some(offset) = error.get("offset") {
            got.insert("offset".into(), raw(offset.to_string()));
        }
    }
    got
}

fn text_field(case: &Case, key: &str) -> Option<String> {
    case.get(key)
        .map(|v| serde_json::from_str(v.get()).unwrap())
}

#[test]
fn fixtures() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut files = Vec::new();
    // fixtures/demo is sample input for `make demo`, fixtures/calls has its own runner.
    for group in ["args", "repair"] {
        fixture_files(&root.join(group), &mut files);
    }
    files.sort();
    assert!(files.len() >= 10, "fixtures missing");
    let bless = std::env::var_os("BLESS").is_some();
    let mut failures = Vec::new();
    let mut count = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let mut cases: Vec<Case> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                serde_json::from_str(l).unwrap_or_else(|e| panic!("{}: {e}: {l}", file.display()))
            })
            .collect();
        // One process per command and options.
        let mut groups: BTreeMap<(String, Vec<String>), Vec<usize>> = BTreeMap::new();
        for (i, case) in cases.iter().enumerate() {
            let command = text_field(case, "command").unwrap_or_else(|| "args".into());
            let options: Vec<String> = case
                .get("options")
                .map(|o| serde_json::from_str(o.get()).unwrap())
                .unwrap_or_default();
            groups.entry((command, options)).or_default().push(i);
        }
        for ((command, options), indexes) in groups {
            let inputs: Vec<String> = indexes
                .iter()
                .map(|&i| text_field(&cases[i], "input").expect("a case has an input"))
                .collect();
            let records = run(&command, &options, &inputs);
            let mut strict_options = options.clone();
            if !strict_options.iter().any(|o| o == "--strict") {
                strict_options.push("--strict".into());
            }
            let strict_records = run(&command, &strict_options, &inputs);
            for (k, &i) in indexes.iter().enumerate() {
                count += 1;
                let mut got = outcome(&records[k]);
                let strict = outcome(&strict_records[k]);
                let strict = strict.get("error").map_or("\"ok\"", |e| e.get());
                got.insert("strict".into(), raw(strict));
                let case = &mut cases[i];
                let name = text_field(case, "name").unwrap_or_default();
                if let Some(problem) = strict_rule(&got) {
                    failures.push(format!("{}: {name:?}: {problem}", file.display()));
                }
                if bless {
                    for key in OUTCOME_FIELDS {
                        case.remove(*key);
                    }
                    case.extend(got);
                    continue;
                }
                for key in OUTCOME_FIELDS {
                    let want = case.get(*key).map(|v| v.get());
                    let have = got.get(*key).map(|v| v.get());
                    if want != have {
                        failures.push(format!(
                            "{}: {name:?}: {key}\n  input:    {}\n  expected: {}\n  got:      {}",
                            file.display(),
                            case["input"],
                            want.unwrap_or("(absent)"),
                            have.unwrap_or("(absent)"),
                        ));
                    }
                }
            }
        }
        if bless {
            std::fs::write(file, cases.iter().map(write_case).collect::<String>()).unwrap();
        }
    }
    assert!(count >= 100, "only {count} fixture cases");
    assert!(
        failures.is_empty(),
        "{} of {count} fixture cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// One case as a line, its fields in a fixed order.
fn write_case(case: &Case) -> String {
    let order = ["name", "command", "options", "input"]
        .iter()
        .chain(OUTCOME_FIELDS);
    let fields: Vec<String> = order
        .filter_map(|key| {
            case.get(*key)
                .map(|v| format!("{}:{}", json!(key), v.get()))
        })
        .collect();
    format!("{{{}}}\n", fields.join(","))
}

/// A case that needed a repair must fail under `--strict`; one that needed none must pass.
fn strict_rule(got: &Case) -> Option<String> {
    let repairs: Vec<Value> = serde_json::from_str(got.get("repairs")?.get()).unwrap();
    let needs_repair = repairs
        .iter()
        .any(|r| !ALLOWED_IN_STRICT.contains(&r["kind"].as_str().unwrap_or("")));
    let strict_ok = got["strict"].get() == "\"ok\"";
    (needs_repair == strict_ok).then(|| {
        format!(
            "repairs {} but --strict gave {}",
            got["repairs"].get(),
            got["strict"].get()
        )
    })
}
