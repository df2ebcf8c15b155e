//! Promises that an attack on the guarantees once broke, through the binary: a
//! recursive schema, values nested past any stack, keys written with escapes, and the smaller
//! ones (a hook's answer, the stream's end record, prefixes of a double-encoded object, glued
//! parameters).

use serde_json::{Value, json};

mod common;
use common::{TempDir, code, stderr, stdout, toolmend};

/// Parameters where a value may be an integer or an array of such values, to any depth.
const RECURSIVE: &str = r##"{"type": "object", "properties": {"v": {"$ref": "#/$defs/N"}},
  "$defs": {"N": {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"$ref": "#/$defs/N"}}]}}}"##;

/// A schema whose `$ref` cycle never says anything of a value.
const EMPTY_CYCLE: &str = r##"{"type": "object", "properties": {"v": {"$ref": "#/$defs/x"}},
  "$defs": {"x": {"$ref": "#/$defs/x"}}}"##;

fn lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// A folder with `schema.json` and `tools.json` (one tool `f` with that schema).
fn schema_dir(name: &str, schema: &str) -> TempDir {
    let dir = TempDir::new(name);
    std::fs::write(dir.join("schema.json"), schema).unwrap();
    std::fs::write(
        dir.join("tools.json"),
        format!(r#"[{{"name": "f", "parameters": {schema}}}]"#),
    )
    .unwrap();
    dir
}

fn hermes(parameters: &str) -> String {
    format!(r#"<tool_call>{{"name": "f", "arguments": {parameters}}}</tool_call>"#)
}

#[test]
fn a_recursive_schema_gives_a_record_for_every_value_in_args() {
    let dir = schema_dir("recursive-args", RECURSIVE);
    let out = toolmend()
        .args(["args", "--records", "--schema"])
        .arg(dir.join("schema.json"))
        .write_stdin("{\"v\": \"x\"}\n{\"v\": [1, [2, [3]]]}\n{\"v\": [[[\"x\"]]]}\n{\"v\": 4}\n")
        .output()
        .unwrap();
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let records = lines(&stdout(&out));
    assert_eq!(records.len(), 4, "{}", stdout(&out));
    assert_eq!(records[0]["error"]["code"], "invalid_parameters");
    assert_eq!(records[0]["error"]["violations"][0]["path"], "/v");
    assert_eq!(records[1]["value"], json!({"v": [1, [2, [3]]]}));
    assert_eq!(records[2]["error"]["code"], "invalid_parameters");
    assert_eq!(records[3]["value"], json!({"v": 4}));
}

#[test]
fn a_recursive_schema_rejects_the_call_in_calls_and_in_the_stream() {
    let dir = schema_dir("recursive-calls", RECURSIVE);
    let replies = format!(
        "{}\n{}\n",
        hermes(r#"{"v": "x"}"#),
        hermes(r#"{"v": [1, [2]]}"#)
    );
    let out = toolmend()
        .args(["calls", "--input", "lines", "--records", "--tools"])
        .arg(dir.join("tools.json"))
        .write_stdin(replies.clone())
        .output()
        .unwrap();
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let records = lines(&stdout(&out));
    assert_eq!(records.len(), 2, "{}", stdout(&out));
    assert_eq!(records[0]["error"]["code"], "invalid_parameters");
    assert_eq!(
        records[1]["value"]["calls"][0]["parameters"],
        json!({"v": [1, [2]]})
    );
    // The stream checks the same call against the same schema.
    let out = toolmend()
        .args(["calls", "--stream", "--tools"])
        .arg(dir.join("tools.json"))
        .write_stdin(hermes(r#"{"v": "x"}"#))
        .output()
        .unwrap();
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let events = lines(&stdout(&out));
    let end = events.last().unwrap();
    assert_eq!(end["event"], "end", "{}", stdout(&out));
    assert_eq!(end["error"]["code"], "invalid_parameters");
}

#[test]
fn check_runs_cases_against_a_recursive_schema() {
    let dir = schema_dir("recursive-check", RECURSIVE);
    let cases = [
        json!({"name": "no fit", "command": "calls", "options": ["--tools", "tools.json"],
               "input": hermes(r#"{"v": "x"}"#), "error": "invalid_parameters"}),
        json!({"name": "a fit", "options": ["--schema", "schema.json"],
               "input": r#"{"v": [1, [2]]}"#, "expect": {"v": [1, [2]]}}),
    ];
    let text: Vec<String> = cases.iter().map(Value::to_string).collect();
    std::fs::write(dir.join("cases.jsonl"), text.join("\n") + "\n").unwrap();
    let out = toolmend()
        .arg("check")
        .arg(dir.join("cases.jsonl"))
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
}

#[test]
fn a_ref_cycle_that_says_nothing_is_refused_when_the_schema_is_read() {
    let dir = schema_dir("empty-cycle", EMPTY_CYCLE);
    for (args, file) in [
        (&["args", "--schema"][..], "schema.json"),
        (&["calls", "--tools"][..], "tools.json"),
        (&["calls", "--stream", "--tools"][..], "tools.json"),
    ] {
        let out = toolmend()
            .args(args)
            .arg(dir.join(file))
            .write_stdin("{\"v\": 1}\n")
            .output()
            .unwrap();
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("#/$defs/x -> #/$defs/x"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
}

/// `calls` with `--max-nesting` raised past what its values can hold: a `too_deep` record for
/// the deep reply and the next reply read as usual, never a stack overflow.
fn deep_replies(reply: &str, max_nesting: &str, stream: bool) {
    let next = hermes(r#"{"v": 1}"#);
    let mut cmd = toolmend();
    cmd.args(["calls", "--max-nesting", max_nesting, "--max-bytes", "64M"]);
    if stream {
        cmd.args(["--stream"]).write_stdin(reply.to_owned());
    } else {
        cmd.args(["--input", "lines", "--records"])
            .write_stdin(format!("{reply}\n{next}\n"));
    }
    let out = cmd.output().unwrap();
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let records = lines(&stdout(&out));
    let first = if stream {
        records.last().unwrap()
    } else {
        assert_eq!(records.len(), 2);
        assert_eq!(
            records[1]["value"]["calls"][0]["parameters"],
            json!({"v": 1})
        );
        &records[0]
    };
    assert_eq!(first["error"]["code"], "too_deep", "{first}");
    assert!(
        first["error"]["message"]
            .as_str()
            .unwrap()
            .contains("nested deeper than 1000"),
        "{first}"
    );
}

/// `calls` once overflowed the stack on these, where `args` and `repair` did not.
#[test]
fn calls_refuses_values_deeper_than_it_can_hold_whatever_max_nesting_says() {
    let n = 50_000;
    let arrays = format!(
        r#"<tool_call>{{"name":"f","arguments":{}{}}}</tool_call>"#,
        "[".repeat(n),
        "]".repeat(n)
    );
    let n = 1_000_000;
    let objects = format!("{}1{}", r#"{"a":"#.repeat(n), "}".repeat(n));
    for (reply, limit) in [(&arrays, "50010"), (&objects, "2000000")] {
        deep_replies(reply, limit, false);
        deep_replies(reply, limit, true);
    }
}

#[test]
fn calls_keeps_values_nested_up_to_its_limit() {
    // The envelope, the arguments object and 998 arrays: 1000 levels.
    let n = 998;
    let reply = hermes(&format!(r#"{{"v": {}{}}}"#, "[".repeat(n), "]".repeat(n)));
    for stream in [false, true] {
        let mut cmd = toolmend();
        cmd.args(["calls", "--max-nesting", "5000"]);
        if stream {
            cmd.arg("--stream");
        }
        let out = cmd.write_stdin(reply.clone()).output().unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert!(stdout(&out).contains(&"[".repeat(n)));
    }
}

/// The stream's `end` record is the record `calls --records` writes for the same
/// input (but for `event` and `line`), also for input that is not UTF-8 or starts with a BOM.
#[test]
fn the_streams_end_record_is_the_calls_record_for_unreadable_input_and_a_bom() {
    let long = [&b"x".repeat(500)[..], b"\xff", &b"y".repeat(10)].concat();
    let inputs: Vec<&[u8]> = vec![
        b"\xef\xbb\xbf<tool_call>{\"name\":\"f\",\"arguments\":{\"a\":1",
        b"\xef\xbb\xbf<tool_call>{\"name\":\"f\",\"arguments\":{\"a\":1}}</tool_call>",
        b"<tool_call>{\"name\":\"f\",\"arguments\":{\"a\":\"\xff\"",
        b"hi \xff there <tool_call>{\"name\":\"f\",\"arguments\":{\"a\":1",
        b"\xef\xbb\xbfhi \xff",
        b"<tool_call>{\"a\":1}\xe2\x82",
        &long,
    ];
    for input in inputs {
        let records = toolmend()
            .args(["calls", "--records"])
            .write_stdin(input)
            .output()
            .unwrap();
        let mut record: Value = serde_json::from_slice(&records.stdout).unwrap();
        record.as_object_mut().unwrap().remove("line");
        let streamed = toolmend()
            .args(["calls", "--stream"])
            .write_stdin(input)
            .output()
            .unwrap();
        let mut end = lines(&stdout(&streamed)).pop().unwrap();
        end.as_object_mut().unwrap().remove("event");
        let shown = String::from_utf8_lossy(input);
        assert_eq!(end, record, "{shown:?}");
        assert_eq!(code(&streamed), code(&records), "{shown:?}");
    }
}

/// Checking a deep value against a recursive schema recursed once per level of the value, and
/// overflowed a worker thread's stack (`args --threads`) at about 600 levels.
#[test]
fn a_value_too_deep_for_a_recursive_schema_is_a_violation_on_any_thread() {
    let dir = schema_dir("recursive-deep", RECURSIVE);
    let n = 998;
    let mut input = String::new();
    for leaf in ["\"x\"", "1"] {
        for _ in 0..3 {
            input.push_str(&format!(
                "{{\"v\": {}{leaf}{}}}\n",
                "[".repeat(n),
                "]".repeat(n)
            ));
        }
    }
    input.push_str("{\"v\": [[[1]]]}\n");
    let out = toolmend()
        .args(["args", "--records", "--threads", "4", "--schema"])
        .arg(dir.join("schema.json"))
        .write_stdin(input)
        .output()
        .unwrap();
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let records = lines(&stdout(&out));
    assert_eq!(records.len(), 7);
    for record in &records[..6] {
        assert_eq!(record["error"]["code"], "invalid_parameters", "{record}");
        assert!(
            record["error"]["message"]
                .as_str()
                .unwrap()
                .contains("too deep to be checked"),
            "{record}"
        );
    }
    assert_eq!(records[6]["value"], json!({"v": [[[1]]]}));
}
