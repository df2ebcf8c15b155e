//! `toolmend check`: fixture files as regression tests, through the binary.

use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;

mod common;

/// A fresh folder for one test, under cargo's scratch space for integration tests.
fn scratch(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("check")
        .join(test);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(dir: &Path, name: &str, lines: &[&str]) -> PathBuf {
    let path = dir.join(name);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

fn check(dir: &Path) -> Command {
    let mut cmd = common::toolmend();
    cmd.current_dir(dir).arg("check");
    cmd
}

#[test]
fn passing_cases_exit_0_with_a_summary() {
    let dir = scratch("pass");
    fs::write(
        dir.join("tools.json"),
        r#"[{"name": "ls", "parameters": {"type": "object", "properties": {"dir": {"type": "string"}}}}]"#,
    )
    .unwrap();
    write(
        &dir,
        "cases.jsonl",
        &[
            r#"{"name": "double-encoded", "input": "\"{\\\"command\\\":\\\"ls\\\"}\"", "expect": {"command": "ls"}}"#,
            r#"{"input": "{'a': True,}", "expect": {"a": true}, "repairs": [{"kind": "single_quotes", "offset": 1}, {"kind": "python_literal", "offset": 6}, {"kind": "trailing_comma", "offset": 10}]}"#,
            r#"{"input": "{\"a\":1}{\"b\":2}", "expect": {"a": 1}, "dropped": [{"b": 2}]}"#,
            r#"{"input": "{\"a\":1}{\"b\":2}", "options": ["--concat", "all"], "expect": [{"a": 1}, {"b": 2}]}"#,
            r#"{"input": "[1, 2,", "command": "repair", "expect": [1, 2]}"#,
            r#"{"input": "{\"command\" \"ls\"}", "options": ["--strict"], "error": "invalid_json", "offset": 11}"#,
            r#"{"input": "{\"a\":1,}", "expect": {"a": 1}, "strict": "invalid_json"}"#,
            r#"{"input": "<tool_call>{\"name\": \"ls\", \"arguments\": {\"dir\": \"/\"}}</tool_call>", "command": "calls", "options": ["--tools", "tools.json"], "expect": {"calls": [{"tool": "ls", "parameters": {"dir": "/"}, "repairs": []}], "text": null, "reasoning": null, "incomplete": []}}"#,
            r#"{"input": "<tool_call>{\"name\": \"rm\", \"arguments\": {}}</tool_call>", "command": "calls", "options": ["--tools", "tools.json"], "error": "unknown_tool"}"#,
        ],
    );
    // Run from elsewhere: --tools is found beside the fixture all the same.
    check(dir.parent().unwrap())
        .arg(dir.file_name().unwrap())
        .assert()
        .code(0)
        .stdout("9 passed, 0 failed\n");
}

#[test]
fn a_failing_case_shows_a_diff_and_exits_1() {
    let dir = scratch("fail");
    write(
        &dir,
        "args.jsonl",
        &[
            r#"{"name": "passes", "input": "{\"a\": 1}", "expect": {"a": 1}}"#,
            r#"{"name": "wrong value deep inside", "input": "{\"a\": [1, {\"b\": 2}]}", "expect": {"a": [1, {"b": 3}]}}"#,
            r#"{"name": "wrong error", "input": "[1]", "error": "invalid_json"}"#,
            r#"{"name": "number as written", "input": "{\"price\": 10.50}", "expect": {"price": 10.5}}"#,
            r#"{"name": "strict disagrees", "input": "{\"a\":1,}", "expect": {"a": 1}, "strict": "ok"}"#,
        ],
    );
    check(&dir)
        .arg("args.jsonl")
        .assert()
        .code(1)
        .stdout(predicate::str::contains("FAIL args.jsonl:2 wrong value deep inside"))
        .stdout(predicate::str::contains(r#"input:   "{\"a\": [1, {\"b\": 2}]}""#))
        .stdout(predicate::str::contains(r#"expected {"a": [1, {"b": 3}]}"#))
        .stdout(predicate::str::contains(r#"got      {"a":[1,{"b":2}]}"#))
        .stdout(predicate::str::contains(
            "first difference: $.a[1].b: expected 3, got 2",
        ))
        .stdout(predicate::str::contains("FAIL args.jsonl:3 wrong error"))
        .stdout(predicate::str::contains(r#"expected "invalid_json""#))
        .stdout(predicate::str::contains(r#"got      "not_an_object""#))
        .stdout(predicate::str::contains("FAIL args.jsonl:4 number as written"))
        .stdout(predicate::str::contains("compared as written"))
        .stdout(predicate::str::contains("FAIL args.jsonl:5 strict disagrees"))
        .stdout(predicate::str::contains(
            "strict (the outcome under --strict):\n    expected \"ok\"\n    got      \"invalid_json\"",
        ))
        .stdout(predicate::str::contains("FAIL args.jsonl:1").not())
        .stdout(predicate::str::ends_with("1 passed, 4 failed\n"));
}

#[test]
fn a_case_that_silently_drops_values_fails() {
    let dir = scratch("dropped");
    write(
        &dir,
        "glued.jsonl",
        &[r#"{"input": "{\"a\":1}{\"b\":2}", "expect": {"a": 1}}"#],
    );
    check(&dir)
        .arg("glued.jsonl")
        .assert()
        .code(1)
        .stdout(predicate::str::contains("dropped:"))
        .stdout(predicate::str::contains(r#"got      [{"b":2}]"#));
}

#[test]
fn bless_fills_in_new_cases_and_keeps_other_fields() {
    let dir = scratch("bless");
    let untouched = r#"{"name": "spaced as the author wrote it", "input": "{\"a\": 1}", "expect": {"a": 1}, "repairs": []}"#;
    let path = write(
        &dir,
        "cases.jsonl",
        &[
            untouched,
            r#"{"name": "new", "note": "kept", "input": "{a: 1,}"}"#,
            "",
            r#"{"input": "[1]", "expect": {"stale": true}, "ticket": 42}"#,
            r#"{"command": "repair", "input": "[1, 2", "name": "repair it"}"#,
        ],
    );
    check(&dir)
        .arg("cases.jsonl")
        .assert()
        .code(1)
        .stdout(predicate::str::contains("no expectation"));
    check(&dir)
        .args(["--bless", "cases.jsonl"])
        .assert()
        .code(0)
        .stdout("3 cases blessed in 1 files\n");
    let text = fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5);
    assert_eq!(lines[0], untouched);
    assert_eq!(
        lines[1],
        r#"{"name":"new","note":"kept","input":"{a: 1,}","expect":{"a":1},"repairs":[{"kind":"unquoted_key","offset":1},{"kind":"trailing_comma","offset":5}]}"#
    );
    assert_eq!(lines[2], "");
    assert_eq!(
        lines[3],
        r#"{"input":"[1]","error":"not_an_object","ticket":42}"#
    );
    assert_eq!(
        lines[4],
        r#"{"command":"repair","input":"[1, 2","expect":[1,2],"repairs":[{"kind":"unterminated_container","offset":0}],"name":"repair it"}"#
    );
    check(&dir)
        .arg("cases.jsonl")
        .assert()
        .code(0)
        .stdout("4 passed, 0 failed\n");
}

#[test]
fn bless_records_strict_where_the_file_does() {
    let dir = scratch("bless-strict");
    let path = write(
        &dir,
        "cases.jsonl",
        &[
            r#"{"input":"{\"a\":1}","expect":{"a":1},"repairs":[],"strict":"ok"}"#,
            r#"{"input":"{\"a\":1,}"}"#,
        ],
    );
    check(&dir)
        .args(["--bless", "cases.jsonl"])
        .assert()
        .code(0);
    let text = fs::read_to_string(&path).unwrap();
    assert_eq!(
        text.lines().nth(1).unwrap(),
        r#"{"input":"{\"a\":1,}","expect":{"a":1},"repairs":[{"kind":"trailing_comma","offset":6}],"strict":"invalid_json"}"#
    );
}

#[test]
fn a_malformed_fixture_exits_2_with_its_location() {
    let dir = scratch("malformed");
    write(
        &dir,
        "bad.jsonl",
        &[
            r#"{"input": "{}", "expect": {}}"#,
            r#"{"input": "{}", "expect": {}"#,
            r#"{"expect": {}}"#,
            r#"{"input": "{}", "command": "loop", "expect": {}}"#,
        ],
    );
    check(&dir)
        .arg("bad.jsonl")
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicate::str::contains("bad.jsonl:2: not a fixture case"))
        .stderr(predicate::str::contains(
            "bad.jsonl:3: a case needs an \"input\"",
        ))
        .stderr(predicate::str::contains(
            "bad.jsonl:4: unknown command \"loop\"",
        ))
        .stderr(predicate::str::contains("bad.jsonl:1").not());
}

#[test]
fn a_case_whose_fields_contradict_or_are_unknown_exits_2() {
    // Each of these passed before, whatever the case gave: the field that disagreed was never
    // compared.
    let dir = scratch("contradictions");
    for (case, why) in [
        (
            r#"{"input": "{\"a\": 1}", "expect": {"a": 1}, "error": "invalid_json"}"#,
            "not both",
        ),
        (
            r#"{"command": "repair", "input": "1", "expect": 1, "error": "invalid_json"}"#,
            "not both",
        ),
        (
            r#"{"input": "", "error": "empty_input", "repairs": [{"kind": "unquote"}]}"#,
            "\"repairs\" describes a value",
        ),
        (
            r#"{"input": "{\"a\": 1}", "expect": {"a": 1}, "offset": 99}"#,
            "\"offset\" is the offset of an \"error\"",
        ),
        (
            r#"{"input": "{'a': 1}", "expect": {"a": 1}, "repiars": []}"#,
            "\"repiars\" looks like a misspelt \"repairs\"",
        ),
    ] {
        write(&dir, "case.jsonl", &[case]);
        check(&dir)
            .arg("case.jsonl")
            .assert()
            .code(2)
            .stdout("")
            .stderr(predicate::str::contains("case.jsonl:1: "))
            .stderr(predicate::str::contains(why));
    }
    // A calls case may pair its error with the value the failure record carries, but the
    // error is compared: a reply that succeeds does not pass it.
    write(
        &dir,
        "calls.jsonl",
        &[
            r#"{"command": "calls", "input": "{\"tool\": \"f\", \"parameters\": {}}", "expect": {"calls": [{"tool": "f", "parameters": {}}], "text": null, "reasoning": null, "incomplete": []}, "error": "unknown_tool"}"#,
        ],
    );
    check(&dir)
        .arg("calls.jsonl")
        .assert()
        .code(1)
        .stdout(predicate::str::contains("expected \"unknown_tool\""))
        .stdout(predicate::str::contains("got      a value"));
}

#[test]
fn a_fixture_that_is_not_utf8_exits_2() {
    let dir = scratch("not-utf8");
    fs::write(
        dir.join("bytes.jsonl"),
        b"{\"input\": \"\xff\", \"expect\": {}}\n",
    )
    .unwrap();
    check(&dir)
        .arg("bytes.jsonl")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("bytes.jsonl: not UTF-8 (byte 11)"));
}

#[test]
fn options_the_command_does_not_take_exit_2() {
    let dir = scratch("bad-options");
    write(
        &dir,
        "cases.jsonl",
        &[
            r#"{"input": "{}", "expect": {}}"#,
            r#"{"input": "{}", "options": ["--no-such-flag"], "expect": {}}"#,
            r#"{"input": "{}", "options": ["other.txt"], "expect": {}}"#,
        ],
    );
    check(&dir)
        .arg("cases.jsonl")
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "cases.jsonl:2: args --no-such-flag: unexpected argument '--no-such-flag'",
        ))
        .stderr(predicate::str::contains(
            "cases.jsonl:3: args other.txt: options may not name input files",
        ));
}

#[test]
fn too_many_threads_in_a_case_is_a_problem_not_an_abort() {
    let dir = scratch("threads");
    write(
        &dir,
        "cases.jsonl",
        &[
            r#"{"input": "{}", "options": ["--threads", "100000"], "expect": {}}"#,
            r#"{"command": "repair", "input": "[1]", "options": ["--threads", "256"], "expect": [1]}"#,
        ],
    );
    check(&dir)
        .arg("cases.jsonl")
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "cases.jsonl:1: args --threads 100000: invalid value '100000' for '--threads <N>': \
             100000 threads is more than the limit of 256",
        ));
}

#[test]
fn folders_are_searched_for_jsonl() {
    let dir = scratch("folders");
    write(
        &dir,
        "a/one.jsonl",
        &[r#"{"input": "{\"a\": 1}", "expect": {"a": 1}}"#],
    );
    write(
        &dir,
        "a/b/two.jsonl",
        &[r#"{"input": "{\"b\": 1}", "expect": {"b": 2}}"#],
    );
    write(&dir, "a/notes.txt", &["not a fixture"]);
    check(&dir)
        .arg("a")
        .assert()
        .code(1)
        .stdout(predicate::str::contains("FAIL a/b/two.jsonl:1"))
        .stdout(predicate::str::ends_with("1 passed, 1 failed\n"));
}

#[test]
fn missing_paths_and_empty_folders_exit_2() {
    let dir = scratch("missing");
    fs::create_dir_all(dir.join("empty")).unwrap();
    check(&dir)
        .arg("nowhere.jsonl")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("nowhere.jsonl:"));
    check(&dir)
        .arg("empty")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no fixture cases found"));
    common::toolmend().arg("check").assert().code(2);
}

#[test]
fn calls_cases_compare_the_whole_error_and_its_value() {
    let dir = scratch("calls-errors");
    let rejected = r#"{"calls":[],"text":null,"reasoning":null,"incomplete":[],"rejected":[{"tool":"ls","code":"missing_field","message":"tool call has no \"terminate\" (the envelope requires it)"}]}"#;
    let error = r#"{"code":"missing_field","message":"tool call has no \"terminate\" (the envelope requires it)","original":"{\"tool\": \"ls\", \"parameters\": {}}"}"#;
    let wrong_message = error.replace("has no", "lacks");
    let message = r#"{"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{'dir': '/'}"}}]}"#;
    let path = write(
        &dir,
        "calls.jsonl",
        &[
            &format!(
                r#"{{"command":"calls","options":["--require-terminate"],"input":"{{\"tool\": \"ls\", \"parameters\": {{}}}}","expect":{rejected},"error":{error}}}"#
            ),
            &format!(
                r#"{{"name":"wrong message","command":"calls","options":["--require-terminate"],"input":"{{\"tool\": \"ls\", \"parameters\": {{}}}}","expect":{rejected},"error":{wrong_message}}}"#
            ),
            &format!(
                r#"{{"name":"an OpenAI message","command":"calls","input":{message},"expect":{{"calls":[{{"tool":"ls","parameters":{{"dir":"/"}},"id":"c1","repairs":[{{"kind":"single_quotes","offset":1}},{{"kind":"single_quotes","offset":8}}]}}],"text":null,"reasoning":null,"incomplete":[]}}}}"#
            ),
        ],
    );
    check(&dir)
        .arg("calls.jsonl")
        .assert()
        .code(1)
        .stdout(predicate::str::contains("FAIL calls.jsonl:2 wrong message"))
        .stdout(predicate::str::contains("first difference: $.message"))
        .stdout(predicate::str::ends_with("2 passed, 1 failed\n"));
    check(&dir)
        .args(["--bless", "calls.jsonl"])
        .assert()
        .code(0)
        .stdout("2 cases blessed in 1 files\n");
    let text = fs::read_to_string(&path).unwrap();
    // The error keeps its whole-object form; the line that passed keeps its own text.
    assert!(text.lines().nth(1).unwrap().contains(error), "{text}");
    assert!(
        text.lines().nth(2).unwrap().contains(r#""repairs":[]"#),
        "{text}"
    );
    check(&dir)
        .arg("calls.jsonl")
        .assert()
        .code(0)
        .stdout("3 passed, 0 failed\n");
}
