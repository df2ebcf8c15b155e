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

#[test]
fn fixtures() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/calls");
    let bless = std::env::var_os("BLESS").is_some();
    let stdout = check(&dir, bless);
    if bless {
        return;
    }
    let passed: usize = stdout
        .trim_end()
        .strip_suffix(" passed, 0 failed")
        .unwrap_or_else(|| panic!("no summary line: {stdout}"))
        .parse()
        .unwrap();
    assert!(passed > 100, "only {passed} fixture cases found");
}

/// `check` compares the fields a case has: blessing a copy must change nothing, so every case
/// records its whole record (the value, the repairs, the whole error with its message).
#[test]
fn fixtures_record_their_whole_outcome() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/calls");
    let copy = Path::new(env!("CARGO_TARGET_TMPDIR")).join("calls-bless-copy");
    let _ = fs::remove_dir_all(&copy);
    fs::create_dir_all(&copy).unwrap();
    let mut files = Vec::new();
    for entry in fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        // tools.json too: the cases name it.
        if path
            .extension()
            .is_some_and(|e| e == "jsonl" || e == "json")
        {
            fs::copy(&path, copy.join(path.file_name().unwrap())).unwrap();
            files.push(path);
        }
    }
    check(&copy, true);
    for path in files {
        assert_eq!(
            fs::read_to_string(copy.join(path.file_name().unwrap())).unwrap(),
            fs::read_to_string(&path).unwrap(),
            "--bless would change {}",
            path.display()
        );
    }
}

/// A repair's `offset` counts from the reply, whatever the format (JSON arguments in Harmony,
/// Functionary, DSML, Mistral, Hunyuan, Kimi... are mended apart from the reply, and their
/// offsets counted from the arguments once): in every calls fixture whose input is text (not
/// an API response, whose `arguments` strings are JSON inside JSON), a call's `trailing_comma`
/// points at a `,` of the reply, and a `single_quotes` at a `'`. (A repair inside one
/// XML-style parameter's value counts from that value, which entities may have changed: such
/// calls are left out.)
#[test]
fn repair_offsets_count_from_the_reply_in_every_format() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/calls");
    let mut seen = 0;
    for entry in fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        for line in fs::read_to_string(&path).unwrap().lines() {
            let case: Value = serde_json::from_str(line).unwrap();
            let Some(input) = case["input"].as_str() else {
                continue;
            };
            if serde_json::from_str::<Value>(input).is_ok_and(|v| !v.is_string())
                || ["<parameter", "parameter>", "<arg_value>", "<arg_key>"]
                    .iter()
                    .any(|tag| input.contains(tag))
            {
                continue;
            }
            let calls = case["expect"]["calls"].as_array().into_iter().flatten();
            for repair in calls.flat_map(|c| c["repairs"].as_array().into_iter().flatten()) {
                let byte = match repair["kind"].as_str() {
                    Some("trailing_comma") => b',',
                    Some("single_quotes") => b'\'',
                    _ => continue,
                };
                let Some(offset) = repair["offset"].as_u64() else {
                    continue;
                };
                assert_eq!(
                    input.as_bytes().get(offset as usize),
                    Some(&byte),
                    "{}: {}: {repair} does not point at {:?} in the reply",
                    path.display(),
                    case["name"],
                    byte as char
                );
                seen += 1;
            }
        }
    }
    assert!(seen > 20, "only {seen} repairs checked");
}

// The seed envelope, from prose or a fence; --require-terminate; text replies.

#[test]
fn seed_envelope_from_prose_and_fence() {
    for reply in [
        r#"{"tool": "ls", "parameters": {"dir": "/tmp"}, "terminate": false}"#,
        "Listing it.\n```json\n{\"tool\": \"ls\", \"parameters\": {\"dir\": \"/tmp\"}, \"terminate\": false}\n```\nOK?",
        r#"I'll run {"tool": "ls", "parameters": {"dir": "/tmp"}, "terminate": false} now."#,
    ] {
        let (rec, code) = record(&[], reply);
        assert_eq!(code, 0);
        assert_eq!(
            rec["value"]["calls"],
            json!([{"tool": "ls", "parameters": {"dir": "/tmp"}, "terminate": false, "repairs": []}]),
            "{reply}"
        );
    }
}

#[test]
fn require_terminate_names_the_field() {
    let cases = [
        (
            r#"{"tool": "ls", "parameters": {}}"#,
            "missing_field",
            "\"terminate\"",
        ),
        (
            r#"{"parameters": {}, "terminate": true, "name": "ls"}"#,
            "missing_field",
            "\"tool\"",
        ),
        (
            r#"{"tool": "ls", "terminate": true}"#,
            "missing_field",
            "\"parameters\"",
        ),
        (
            r#"{"tool": "ls", "parameters": "{}", "terminate": true}"#,
            "wrong_type",
            "\"parameters\"",
        ),
        (
            r#"{"tool": "ls", "parameters": {}, "terminate": 1}"#,
            "wrong_type",
            "\"terminate\"",
        ),
        (
            r#"{"tool": 7, "parameters": {}, "terminate": true}"#,
            "wrong_type",
            "\"tool\"",
        ),
    ];
    for (reply, code, field) in cases {
        let (rec, exit) = record(&["--require-terminate"], reply);
        assert_eq!(exit, 1, "{reply}");
        assert_eq!(rec["ok"], json!(false));
        assert_eq!(rec["error"]["code"], json!(code), "{reply}");
        let message = rec["error"]["message"].as_str().unwrap();
        assert!(message.contains(field), "{reply}: {message}");
    }
    let (rec, exit) = record(
        &["--require-terminate"],
        r#"{"tool": "ls", "parameters": {"dir": "."}, "terminate": true}"#,
    );
    assert_eq!(exit, 0);
    assert_eq!(rec["value"]["calls"][0]["terminate"], json!(true));
}

#[test]
fn text_reply_has_no_calls() {
    let (rec, code) = record(&[], "  The capital of Norway is Oslo.\n");
    assert_eq!(code, 0);
    assert_eq!(
        rec["value"],
        json!({"calls": [], "text": "The capital of Norway is Oslo.", "reasoning": null, "incomplete": []})
    );
    // Without --records the value alone is written.
    toolmend()
        .args(["calls"])
        .write_stdin("Just words.")
        .assert()
        .success()
        .stdout("{\"calls\":[],\"text\":\"Just words.\",\"reasoning\":null,\"incomplete\":[]}\n");
}

// Point 2: formats are covered by the fixtures; --format forces one.

#[test]
fn format_forces_a_decoder() {
    // Forced glm45 reads a name after <tool_call>; forced hermes would not see a call.
    let glm =
        "<tool_call>get_time\n<arg_key>tz</arg_key>\n<arg_value>UTC</arg_value>\n</tool_call>";
    let (rec, _) = record(&["--format", "glm45"], glm);
    assert_eq!(
        rec["value"]["calls"],
        json!([{"tool": "get_time", "parameters": {"tz": "UTC"}, "repairs": []}])
    );
    // Forced json does not read Mistral's markers.
    let (rec, _) = record(
        &["--format", "json"],
        "[TOOL_CALLS]get_time[ARGS]{\"tz\": \"UTC\"}",
    );
    assert_eq!(rec["value"]["calls"], json!([]));
    toolmend()
        .args(["calls", "--format", "nonsense"])
        .write_stdin("x")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown format"));
}

#[test]
fn auto_detection_tells_tool_call_bodies_apart() {
    let replies = [
        (
            "<tool_call>{\"name\": \"a\", \"arguments\": {\"x\": 1}}</tool_call>",
            json!({"x": 1}),
        ),
        (
            "<tool_call><function=a><parameter=x>1</parameter></function></tool_call>",
            json!({"x": "1"}),
        ),
        (
            "<tool_call>a\n<arg_key>x</arg_key><arg_value>1</arg_value></tool_call>",
            json!({"x": 1}),
        ),
    ];
    for (reply, parameters) in replies {
        let (rec, _) = record(&[], reply);
        assert_eq!(
            rec["value"]["calls"][0]["parameters"], parameters,
            "{reply}"
        );
    }
}

// Point 3: reasoning, calls inside reasoning, several calls with ids.

#[test]
fn calls_inside_reasoning_are_not_calls() {
    let reply = "<think>I could call <tool_call>{\"name\": \"rm\", \"arguments\": {}}</tool_call> but no.</think>No action needed.";
    let (rec, code) = record(&[], reply);
    assert_eq!(code, 0);
    assert_eq!(rec["value"]["calls"], json!([]));
    assert_eq!(rec["value"]["text"], json!("No action needed."));
    assert_eq!(
        rec["value"]["reasoning"],
        json!("I could call <tool_call>{\"name\": \"rm\", \"arguments\": {}}</tool_call> but no.")
    );
    // An unclosed reasoning block runs to the end: nothing in it is a call.
    let (rec, _) = record(&[], "<think>plan: [TOOL_CALLS]rm{\"path\": \"/\"}");
    assert_eq!(rec["value"]["calls"], json!([]));
}

#[test]
fn several_calls_in_order_with_ids() {
    let reply = "<|tool_calls_section_begin|><|tool_call_begin|>functions.b:0<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_call_begin|>functions.a:1<|tool_call_argument_begin|>{\"n\": 2}<|tool_call_end|><|tool_calls_section_end|>";
    let (rec, _) = record(&[], reply);
    assert_eq!(
        rec["value"]["calls"],
        json!([
            {"tool": "b", "parameters": {}, "id": "functions.b:0", "repairs": []},
            {"tool": "a", "parameters": {"n": 2}, "id": "functions.a:1", "repairs": []}
        ])
    );
}

// Point 4: arguments through the args pipeline; truncated calls are never healed.

#[test]
fn arguments_are_mended_with_repairs_reported() {
    let reply = r#"<tool_call>{"name": "w", "arguments": "\"{\\\"path\\\": 'a.txt', \\\"force\\\": True,}\""}</tool_call>"#;
    let (rec, code) = record(&[], reply);
    assert_eq!(code, 0);
    let call = &rec["value"]["calls"][0];
    assert_eq!(call["parameters"], json!({"path": "a.txt", "force": true}));
    assert_eq!(
        repair_kinds(&call["repairs"]),
        [
            "unquote",
            "single_quotes",
            "python_literal",
            "trailing_comma"
        ]
    );
    assert_eq!(call["repairs"][0]["layers"], json!(2));
}

#[test]
fn truncated_call_is_incomplete_not_healed() {
    let reply = "Deleting.\n<tool_call>\n{\"name\": \"delete\", \"arguments\": {\"path\": \"/data\", \"dry_run\": tr";
    let (rec, code) = record(&[], reply);
    assert_eq!(code, 1);
    assert_eq!(rec["ok"], json!(false));
    assert_eq!(rec["error"]["code"], json!("incomplete_call"));
    assert_eq!(rec["error"]["offset"], json!(22));
    assert_eq!(rec["value"]["calls"], json!([]));
    assert_eq!(rec["value"]["text"], json!("Deleting."));
    assert_eq!(
        rec["value"]["incomplete"],
        json!([{"tool": "delete", "offset": 22, "message": "its JSON ends before it is closed"}])
    );
    // Without --records the error record goes to stderr and nothing to stdout.
    toolmend()
        .arg("calls")
        .write_stdin(reply)
        .assert()
        .code(1)
        .stdout("")
        .stderr(predicate::str::contains("\"code\":\"incomplete_call\""));
}

#[test]
fn one_complete_and_one_cut_call_fails_the_reply() {
    let reply = "[TOOL_CALLS]get_time[ARGS]{\"tz\": \"UTC\"}[TOOL_CALLS]rm[ARGS]{\"path\": \"/";
    let (rec, code) = record(&[], reply);
    assert_eq!(code, 1);
    assert_eq!(rec["error"]["code"], json!("incomplete_call"));
    assert_eq!(rec["value"]["calls"][0]["tool"], json!("get_time"));
    assert_eq!(rec["value"]["incomplete"][0]["tool"], json!("rm"));
}

#[test]
fn mentions_and_examples_are_text() {
    let reply = "Models use `<tool_call>` tags or [TOOL_CALLS] markers; see functools docs.";
    let (rec, code) = record(&[], reply);
    assert_eq!(code, 0);
    assert_eq!(rec["value"]["calls"], json!([]));
    assert_eq!(rec["value"]["text"], json!(reply));
    // With --tools, only known tool names count in marker-less JSON.
    let example =
        r#"For example {"name": "frobnicate", "arguments": {"level": 3}} would call a tool."#;
    let (rec, code) = record(&["--tools", TOOLS], example);
    assert_eq!(code, 0);
    assert_eq!(rec["value"]["calls"], json!([]));
    assert_eq!(rec["value"]["text"], json!(example));
    let known = r#"Calling {"name": "get_time", "arguments": {"tz": "UTC"}} now."#;
    let (rec, _) = record(&["--tools", TOOLS], known);
    assert_eq!(rec["value"]["calls"][0]["tool"], json!("get_time"));
    assert_eq!(
        rec["value"]["text"],
        json!("Calling \nnow.".replace(" \n", "\n"))
    );
}

// Point 5: tools files.

#[test]
fn unknown_tool_and_schema_violations() {
    let (rec, code) = record(
        &["--tools", TOOLS],
        "<tool_call>{\"name\": \"launch\", \"arguments\": {}}</tool_call>",
    );
    assert_eq!(code, 1);
    assert_eq!(rec["error"]["code"], json!("unknown_tool"));
    assert!(
        rec["error"]["message"]
            .as_str()
            .unwrap()
            .contains("\"launch\"")
    );

    let (rec, code) = record(
        &["--tools", TOOLS],
        "<tool_call>{\"name\": \"search\", \"arguments\": {\"limit\": 0, \"query\": {\"q\": 5}}}</tool_call>",
    );
    assert_eq!(code, 1);
    assert_eq!(rec["error"]["code"], json!("invalid_parameters"));
    let paths: Vec<&str> = rec["error"]["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["/limit", "/query"]);
    assert_eq!(rec["value"]["rejected"][0]["tool"], json!("search"));
}

#[test]
fn xml_values_are_typed_by_the_schema() {
    let reply = "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n<parameter=days>\n20\n</parameter>\n</function>\n</tool_call>";
    let (rec, _) = record(&["--tools", TOOLS], reply);
    let call = &rec["value"]["calls"][0];
    assert_eq!(call["parameters"], json!({"city": "Oslo", "days": 20}));
    assert_eq!(
        call["repairs"],
        json!([{"kind": "schema_type", "key": "days"}])
    );
    // Without a schema the value stays the text the model wrote.
    let (rec, _) = record(&[], reply);
    assert_eq!(rec["value"]["calls"][0]["parameters"]["days"], json!("20"));
}

#[test]
fn read_only_policy_for_concatenated_arguments() {
    let read = r#"<tool_call>{"name": "read_file", "arguments": "{\"path\": \"a.py\"}{\"path\": \"b.py\"}"}</tool_call>"#;
    let (rec, code) = record(&["--tools", TOOLS], read);
    assert_eq!(code, 0);
    let calls = &rec["value"]["calls"];
    assert_eq!(calls[0]["parameters"], json!({"path": "a.py"}));
    assert_eq!(
        calls[1],
        json!({"tool": "read_file", "parameters": {"path": "b.py"}, "repairs": []})
    );
    let write = r#"<tool_call>{"name": "write_file", "arguments": "{\"path\": \"a\", \"content\": \"1\"}{\"path\": \"b\", \"content\": \"2\"}"}</tool_call>"#;
    let (rec, code) = record(&["--tools", TOOLS], write);
    assert_eq!(code, 0);
    let calls = rec["value"]["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["parameters"], json!({"path": "a", "content": "1"}));
    assert_eq!(calls[0]["dropped"], json!([{"path": "b", "content": "2"}]));
    // Without tools nothing is known to be read-only: the first is kept.
    let (rec, _) = record(&[], read);
    assert_eq!(
        rec["value"]["calls"][0]["dropped"],
        json!([{"path": "b.py"}])
    );
}

#[test]
fn tools_file_forms_json_and_toml() {
    let dir = TempDir::new("calls");
    let toml = dir.join("tools.toml");
    fs::write(
        &toml,
        "[[tools]]\nname = \"ls\"\ndescription = \"List a directory\"\nread_only = true\n\n[[tools.parameters]]\nname = \"dir\"\ntype = \"string\"\nrequired = true\n",
    )
    .unwrap();
    let toml_arg = toml.to_str().unwrap();
    let (rec, code) = record(
        &["--tools", toml_arg],
        r#"{"tool": "ls", "parameters": {}, "terminate": false}"#,
    );
    assert_eq!(code, 1);
    assert_eq!(rec["error"]["code"], json!("invalid_parameters"));
    assert_eq!(rec["error"]["violations"][0]["path"], json!("/"));

    let bad = dir.join("bad.json");
    fs::write(
        &bad,
        r#"[{"name": "x", "parameters": [{"name": "a", "type": "wat"}]}]"#,
    )
    .unwrap();
    toolmend()
        .args(["calls", "--tools", bad.to_str().unwrap()])
        .write_stdin("hi")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown type \"wat\""));
    toolmend()
        .args(["calls", "--tools", "no/such/file.json"])
        .write_stdin("hi")
        .assert()
        .code(2);
}

#[test]
fn names_that_reach_the_same_tool_are_a_tools_file_error() {
    // A call to `functions.x` is looked up as `x`: with both defined, it would run `x`.
    let dir = TempDir::new("calls");
    for (i, (a, b)) in [
        ("x", "functions.x"),
        ("functions.x", "x"),
        ("x", "x:0"),
        ("x", " x "),
        ("functions.x:1", "functions.functions.x"),
    ]
    .into_iter()
    .enumerate()
    {
        let path = dir.join(format!("alias-{i}.json"));
        let tools = json!([
            {"name": a, "read_only": true},
            {"name": b, "requires_approval": true}
        ]);
        fs::write(&path, tools.to_string()).unwrap();
        let both = format!("{a:?} and {b:?}");
        for command in ["calls", "prompt"] {
            toolmend()
                .args([command, "--tools", path.to_str().unwrap()])
                .write_stdin("hi")
                .assert()
                .code(2)
                .stdout("")
                .stderr(predicate::str::contains(&both));
        }
        // And through `check`, whose cases name a tools file in their options.
        let fixture = dir.join(format!("alias-{i}.jsonl"));
        let case = json!({"command": "calls", "options": ["--tools", path.file_name().unwrap().to_str().unwrap()], "input": "hi", "expect": {}});
        fs::write(&fixture, format!("{case}\n")).unwrap();
        toolmend()
            .args(["check", fixture.to_str().unwrap()])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(&both));
    }
    // A tool named with the prefix alone is reached by a call that writes it so.
    let path = dir.join("prefixed.json");
    fs::write(&path, r#"[{"name": "functions.ls"}]"#).unwrap();
    let (rec, code) = record(
        &["--tools", path.to_str().unwrap()],
        r#"{"tool": "functions.ls", "parameters": {}}"#,
    );
    assert_eq!(code, 0, "{rec}");
    assert_eq!(rec["value"]["calls"][0]["tool"], "ls");
}

// Point 6: jsonl messages and --shape openai.

#[test]
fn jsonl_reply_shapes() {
    let lines = [
        json!("<tool_call>{\"name\": \"get_time\", \"arguments\": {\"tz\": \"UTC\"}}</tool_call>"),
        json!({"id": "r2", "text": "[TOOL_CALLS]get_time[ARGS]{\"tz\": \"UTC\"}"}),
        json!({"id": "r3", "role": "assistant", "content": "Checking.", "tool_calls": [
            {"id": "call_9", "type": "function", "function": {"name": "get_time", "arguments": "{\"tz\": 'UTC',}"}},
            {"id": "call_10", "type": "function", "function": {"name": "get_weather", "arguments": ""}}
        ]}),
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Time first."},
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_time", "input": {"tz": "UTC"}}
        ]}),
        json!([{"type": "tool_use", "id": "toolu_2", "name": "get_time", "input": {}}]),
    ];
    let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let out = toolmend()
        .args(["calls", "--input", "jsonl", "--records"])
        .write_stdin(input)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let records: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 5);
    assert_eq!(
        records[0]["value"]["calls"],
        json!([{"tool": "get_time", "parameters": {"tz": "UTC"}, "repairs": []}])
    );
    assert_eq!(records[1]["id"], json!("r2"));
    assert_eq!(records[1]["line"], json!(2));
    assert_eq!(
        records[2]["value"],
        json!({"calls": [
            {"tool": "get_time", "parameters": {"tz": "UTC"}, "id": "call_9",
             "repairs": [{"kind": "single_quotes", "offset": 7}, {"kind": "trailing_comma", "offset": 12}]},
            {"tool": "get_weather", "parameters": {}, "id": "call_10", "repairs": []}
        ], "text": "Checking.", "reasoning": null, "incomplete": []})
    );
    assert_eq!(
        records[3]["value"],
        json!({"calls": [{"tool": "get_time", "parameters": {"tz": "UTC"}, "id": "toolu_1", "repairs": []}],
               "text": "Let me check.", "reasoning": "Time first.", "incomplete": []})
    );
    assert_eq!(
        records[4]["value"]["calls"],
        json!([{"tool": "get_time", "parameters": {}, "id": "toolu_2", "repairs": []}])
    );
}

#[test]
fn jsonl_bad_line_is_a_record_and_others_go_on() {
    let out = toolmend()
        .args(["calls", "--input", "jsonl", "--records"])
        .write_stdin("{not json\n\"plain text\"\n42\n")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let records: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records[0]["error"]["code"], json!("invalid_input"));
    assert_eq!(records[1]["value"]["text"], json!("plain text"));
    assert_eq!(records[2]["error"]["code"], json!("invalid_input"));
    assert_eq!(records[2]["line"], json!(3));
}

#[test]
fn openai_shape_writes_arguments_as_text() {
    let (rec, _) = record(
        &["--shape", "openai"],
        "[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{\"city\": \"Oslo\", \"days\": 2}",
    );
    assert_eq!(
        rec["value"]["calls"],
        json!([{"id": "a1b2c3d4e", "name": "get_weather", "arguments": "{\"city\":\"Oslo\",\"days\":2}"}])
    );
}

#[test]
fn empty_and_invalid_utf8_replies() {
    let (rec, code) = record(&[], "   \n");
    assert_eq!(code, 1);
    assert_eq!(rec["error"]["code"], json!("empty_input"));
    let out = toolmend()
        .args(["calls", "--records"])
        .write_stdin(&b"ab\xffcd"[..])
        .output()
        .unwrap();
    let rec: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rec["error"]["code"], json!("invalid_utf8"));
    assert_eq!(rec["error"]["offset"], json!(2));
}

// Point 7: the system prompt.

#[test]
fn prompt_text_is_exact_and_deterministic() {
    let expected = fs::read_to_string("fixtures/calls/prompt.expected.txt").unwrap_or_default();
    let out = toolmend()
        .args(["prompt", "--tools", TOOLS])
        .output()
        .unwrap();
    assert!(out.status.success());
    let got = String::from_utf8(out.stdout).unwrap();
    if std::env::var_os("BLESS").is_some() {
        fs::write("fixtures/calls/prompt.expected.txt", &got).unwrap();
    } else {
        assert_eq!(got, expected);
    }
    for needle in [
        r#"{"tool": "<tool name>", "parameters": {<parameter name>: <value>, ...}, "terminate": <true or false>}"#,
        "Exactly one JSON object per tool call. To act on several items, use an array inside \"parameters\"",
        "true to finish with this tool",
        "Correct:\n{\"tool\": \"get_weather\", \"parameters\": {\"city\": \"example\"}, \"terminate\": false}\n",
        "Wrong (two objects glued together):\n{\"tool\": \"get_weather\", \"parameters\": {\"city\": \"example\"}, \"terminate\": false}{\"tool\"",
        "Wrong (parameters written as a string):\n{\"tool\": \"get_weather\", \"parameters\": \"{\\\"city\\\": \\\"example\\\"}\", \"terminate\": false}",
        "## get_weather\nCurrent weather for a city\nParameters:\n- city (string, required): City name\n- days (integer, optional): Forecast days\n",
        "## search\nSearch the web\nParameters:\n- query (string, required)\n- limit (integer, optional)\n",
    ] {
        assert!(got.contains(needle), "prompt lacks {needle:?}:\n{got}");
    }
    let again = toolmend()
        .args(["prompt", "--tools", TOOLS])
        .output()
        .unwrap();
    assert_eq!(again.stdout, got.as_bytes());
}

#[test]
fn prompt_needs_a_readable_tools_file() {
    toolmend().args(["prompt"]).assert().code(2);
    toolmend()
        .args(["prompt", "--tools", "missing.json"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("missing.json"));
}

#[test]
fn help_has_examples() {
    toolmend()
        .args(["calls", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Examples:"))
        .stdout(predicate::str::contains("qwen3_coder"))
        .stdout(predicate::str::contains("harmony"));
    toolmend()
        .args(["prompt", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Examples:"));
}

#[test]
fn no_panic_on_hostile_input() {
    let nasty = [
        "<tool_call>",
        "<tool_call></tool_call>",
        "[TOOL_CALLS]",
        "<|channel|><|message|>",
        "<|start|>assistant<|channel|>commentary to=<|message|>",
        "<function=>",
        "<function=a",
        "<｜tool▁call▁begin｜>",
        "<｜DSML｜function_calls><｜DSML｜invoke",
        "[f(",
        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
        "{\"name\":",
        ">>>",
        "functools[",
        "<tool_call>é\n<arg_key>ü",
        "\u{FEFF}",
    ];
    for input in nasty {
        let out = toolmend()
            .args(["calls", "--records"])
            .write_stdin(input)
            .output()
            .unwrap();
        let code = out.status.code().unwrap();
        assert!(code == 0 || code == 1, "{input:?}: exit {code}");
        let text = String::from_utf8(out.stdout).unwrap();
        let rec: Value =
            serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{input:?}: {e}: {text}"));
        assert!(rec["ok"].is_boolean());
    }
}

#[test]
fn jsonl_error_original_is_the_reply_text() {
    let line = json!({"id": "r1", "text": "<tool_call>\n{\"name\": \"rm\", \"arguments\": {\"path\": \"/x\""});
    let (record, code) = record(&["--input", "jsonl"], &format!("{line}\n"));
    assert_eq!(code, 1);
    assert_eq!(record["id"], "r1");
    assert_eq!(record["error"]["code"], "incomplete_call");
    assert_eq!(
        record["error"]["original"],
        "<tool_call>\n{\"name\": \"rm\", \"arguments\": {\"path\": \"/x\""
    );
}

/// Every marker toolmend knows: reasoning, each format's, Harmony's, and whole calls written
/// as text.
const MARKERS: &[&str] = &[
    "<think>x</think>",
    "<think>",
    "</think>",
    "<seed:think>x</seed:think>",
    "[THINK]x[/THINK]",
    "[THINK]",
    "[/THINK]",
    "<|START_THINKING|>x<|END_THINKING|>",
    "<|inner_prefix|>x<|inner_suffix|>",
    "<thinking>x</thinking>",
    "<|start|>assistant<|channel|>analysis<|message|>x<|end|>",
    "<|channel|>commentary to=functions.rm <|constrain|>json<|message|>{\"a\":1}<|call|>",
    "<|channel|>",
    "<|message|>",
    "<|end|>",
    "<|call|>",
    "<|return|>",
    "<tool_call>",
    "</tool_call>",
    "<tool_call>{\"name\": \"rm\", \"arguments\": {}}</tool_call>",
    "<tool_call>\nrm\n<arg_key>a</arg_key>\n<arg_value>1</arg_value>\n</tool_call>",
    "<tool_call><function=rm><parameter=a>1</parameter></function></tool_call>",
    "<function=rm>{}</function>",
    "<function=rm>",
    "</function>",
    "<parameter=a>",
    "</parameter>",
    "<｜DSML｜function_calls><｜DSML｜invoke name=\"rm\"></｜DSML｜invoke></｜DSML｜function_calls>",
    "<|tool_calls_section_begin|><|tool_call_begin|>functions.rm:0<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>",
    "<|tool_call_end|>",
    "<｜tool▁call▁begin｜>rm<｜tool▁sep｜>{}<｜tool▁call▁end｜>",
    "<｜tool▁call▁end｜>",
    "<｜tool_call_begin｜>",
    "<minimax:tool_call><invoke name=\"rm\"></invoke></minimax:tool_call>",
    "</invoke>",
    "<seed:tool_call>",
    "<longcat_tool_call>{\"name\":\"rm\",\"arguments\":{}}",
    "<|tool_call_start|>[rm()]<|tool_call_end|>",
    "<|python_start|>[rm()]<|python_end|>",
    "<|tool_call|>[{\"name\":\"rm\",\"arguments\":{}}]",
    "[TOOL_CALLS][{\"name\":\"rm\",\"arguments\":{}}]",
    "[TOOL_CALLS]rm[ARGS]{}",
    "[TOOL_CALLS]",
    "<|START_ACTION|>[{\"tool_name\":\"rm\",\"parameters\":{}}]<|END_ACTION|>",
    "<|END_ACTION|>",
    "<|tools_prefix|>[{\"rm\": {}}]<|tools_suffix|>",
    "<|action_start|><|plugin|>{\"name\":\"rm\"}<|action_end|>",
    "<|message_sep|>function call<|role_sep|>{\"name\":\"rm\",\"arguments\":{}}",
    "<TOOLCALL>[{\"name\":\"rm\",\"arguments\":{}}]</TOOLCALL>",
    "</TOOLCALL>",
    "<tool_calls>[{\"name\":\"rm\",\"arguments\":{}}]</tool_calls>",
    "</tool_calls>",
    "<function_calls>rm()</function_calls>",
    "<function_call> {\"name\":\"rm\",\"arguments\":{}}",
    ">>>rm\n{}",
    ">>>all\nhello",
    "functools[{\"name\":\"rm\",\"arguments\":{}}]",
    "<|python_tag|>{\"name\":\"rm\",\"parameters\":{}}",
    "<|python_tag|>rm.call(a=1)",
    "<start_function_call>call:rm{}<end_function_call>",
    "<end_function_call>",
    "<escape>",
    "<|tool_call>call:rm{}<tool_call|>",
    "<|\"|>",
    "[rm(a=1)]",
    "<|eot_id|></s><|im_end|>",
];

/// Call templates of every format family; `ARGS` is replaced by a JSON object. The second
/// field says where the object ends up: as the parameters, under `obj`, or under `obj` as the
/// text it was written as.
const TEMPLATES: &[(&str, &str)] = &[
    (
        "Sure. {\"tool\": \"f\", \"parameters\": @ARGS@, \"terminate\": true} Done.",
        "params",
    ),
    (
        "Calling {\"name\": \"f\", \"arguments\": @ARGS@} now",
        "params",
    ),
    // JSON that needs a repair elsewhere: a trailing comma, single quotes around other keys.
    (
        "Sure. {\"tool\": \"f\", \"parameters\": @ARGS@, \"terminate\": true,} Done.",
        "params",
    ),
    (
        "Sure. {'tool': 'f', 'parameters': @ARGS@, 'terminate': True}",
        "params",
    ),
    (
        "Here:\n```json\n{\"name\": \"f\", \"arguments\": @ARGS@}\n```\nok",
        "params",
    ),
    (
        "{\"name\": \"f\", \"arguments\": @ARGS@}\n{\"name\": \"f\", \"arguments\": {}}",
        "two",
    ),
    (
        "<tool_call>\n{\"name\": \"f\", \"arguments\": @ARGS@}\n</tool_call>",
        "params",
    ),
    (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>@ARGS@<|tool_call_end|><|tool_calls_section_end|>",
        "params",
    ),
    (
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>@ARGS@<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        "params",
    ),
    (
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n@ARGS@\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        "params",
    ),
    (
        "<longcat_tool_call>{\"name\": \"f\", \"arguments\": @ARGS@}</longcat_tool_call>",
        "params",
    ),
    (
        "<|tool_call_start|>[{\"name\": \"f\", \"arguments\": @ARGS@}]<|tool_call_end|>",
        "params",
    ),
    (
        "<|python_start|>[{\"name\": \"f\", \"arguments\": @ARGS@}]<|python_end|>",
        "params",
    ),
    (
        "<|tool_call|>[{\"name\": \"f\", \"arguments\": @ARGS@}]",
        "params",
    ),
    (
        "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": @ARGS@}]",
        "params",
    ),
    ("[TOOL_CALLS]f[ARGS]@ARGS@", "params"),
    ("[TOOL_CALLS]f@ARGS@", "params"),
    (
        "<|START_ACTION|>[{\"tool_name\": \"f\", \"parameters\": @ARGS@}]<|END_ACTION|>",
        "params",
    ),
    (
        "<|tools_prefix|>[{\"f\": @ARGS@}]<|tools_suffix|>",
        "params",
    ),
    (
        "<|action_start|><|plugin|>{\"name\": \"f\", \"parameters\": @ARGS@}<|action_end|>",
        "params",
    ),
    (
        "<|message_sep|>function call<|role_sep|>{\"name\": \"f\", \"arguments\": @ARGS@}",
        "params",
    ),
    (
        "<TOOLCALL>[{\"name\": \"f\", \"arguments\": @ARGS@}]</TOOLCALL>",
        "params",
    ),
    (
        "<tool_calls>[{\"name\": \"f\", \"arguments\": @ARGS@}]</tool_calls>",
        "params",
    ),
    (
        "<function_call> {\"name\": \"f\", \"arguments\": @ARGS@}",
        "params",
    ),
    ("<function=f>@ARGS@</function>", "params"),
    (
        "<seed:tool_call><function=f>@ARGS@</function></seed:tool_call>",
        "params",
    ),
    (">>>f\n@ARGS@", "params"),
    (
        "functools[{\"name\": \"f\", \"arguments\": @ARGS@}]",
        "params",
    ),
    (
        "<|python_tag|>{\"name\": \"f\", \"parameters\": @ARGS@}",
        "params",
    ),
    (
        "<|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json<|message|>@ARGS@<|call|>",
        "params",
    ),
    (
        "<tool_call>f\n<arg_key>obj</arg_key>\n<arg_value>@ARGS@</arg_value>\n</tool_call>",
        "obj",
    ),
    (
        "<｜DSML｜function_calls><｜DSML｜invoke name=\"f\"><｜DSML｜parameter name=\"obj\" string=\"false\">@ARGS@</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜function_calls>",
        "obj",
    ),
    (
        "<minimax:tool_call>\n<invoke name=\"f\">\n<parameter name=\"obj\">@ARGS@</parameter>\n</invoke>\n</minimax:tool_call>",
        "obj_text",
    ),
    (
        "<tool_call>\n<function=f>\n<parameter=obj>\n@ARGS@\n</parameter>\n</function>\n</tool_call>",
        "obj_text",
    ),
    ("[f(obj=@ARGS@)]", "obj"),
    ("<|tool_call_start|>[f(obj=@ARGS@)]<|tool_call_end|>", "obj"),
];

// Markup inside a JSON string was cut out of the parameters (and
// became reasoning), or made the call vanish. Every marker, in a JSON string of a call in
// every format family, stays in the parameters byte for byte; reasoning written outside the
// JSON is still reasoning.
#[test]
fn markers_inside_json_strings_are_text_in_every_format() {
    let mut lines = String::new();
    let mut cases = Vec::new();
    for (t, (template, place)) in TEMPLATES.iter().enumerate() {
        for marker in MARKERS {
            let args = json!({"cmd": format!("echo {marker} done"), "n": 1});
            let args_text = args.to_string();
            let harmony = template.contains("<|channel|>");
            let reply = format!(
                "{}{}",
                if harmony { "" } else { "<think>plan</think>" },
                template.replace("@ARGS@", &args_text)
            );
            let parameters = match *place {
                "obj" => json!({ "obj": args }),
                "obj_text" => json!({ "obj": args_text }),
                _ => args.clone(),
            };
            lines.push_str(&json!({"text": reply, "id": cases.len()}).to_string());
            lines.push('\n');
            cases.push((t, *marker, parameters, *place == "two", harmony));
        }
    }
    let out = toolmend()
        .args(["calls", "--records", "--input", "jsonl"])
        .write_stdin(lines)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let records: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), cases.len());
    let mut failures = Vec::new();
    for (record, (t, marker, parameters, two, harmony)) in records.iter().zip(&cases) {
        let calls = &record["value"]["calls"];
        let want = if *two { 2 } else { 1 };
        let ok = record["ok"] == true
            && calls.as_array().map(Vec::len) == Some(want)
            && calls[0]["tool"] == "f"
            && calls[0]["parameters"] == *parameters
            && (*harmony || record["value"]["reasoning"] == "plan");
        if !ok {
            failures.push(format!("{} with {marker:?}: {record}", TEMPLATES[*t].0));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases:\n{}",
        failures.len(),
        cases.len(),
        failures[..failures.len().min(20)].join("\n")
    );
}

// Nesting past serde_json's 127 levels turned the call into text. (Not a
// fixture, and read as text here: serde_json reads neither this deep.)
#[test]
fn parameters_nested_deeper_than_serde_json_reads_are_a_call() {
    let deep = format!("{}1{}", r#"{"a":"#.repeat(300), "}".repeat(300));
    let reply = format!(r#"Sure: {{"tool":"f","parameters":{deep}}}"#);
    let out = toolmend()
        .args(["calls", "--records"])
        .write_stdin(reply.clone())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let want = format!(
        r#"{{"ok":true,"line":1,"value":{{"calls":[{{"tool":"f","parameters":{deep},"repairs":[]}}],"text":"Sure:","reasoning":null,"incomplete":[]}},"repairs":[]}}"#
    );
    assert_eq!(String::from_utf8(out.stdout).unwrap().trim_end(), want);
    // Past --max-nesting: too_deep, not text.
    let (value, code) = record(&["--max-nesting", "100"], &reply);
    assert_eq!(code, 1);
    assert_eq!(value["error"]["code"], "too_deep", "{value}");
}

/// (format, reply, expected output) for each `## NAME` section of docs/formats.md: its first
/// ````text block (four backticks: a reply may hold a fence) and the ```json block after it.
fn formats_doc_examples() -> Vec<(String, String, String)> {
    let doc =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/formats.md")).unwrap();
    let mut examples = Vec::new();
    for section in doc.split("\n## ").skip(1) {
        let name = section.lines().next().unwrap().trim().to_owned();
        let block = |open: &str, close: &str, from: usize| -> (String, usize) {
            let start = section[from..]
                .find(open)
                .map(|i| from + i + open.len())
                .unwrap_or_else(|| panic!("## {name}: no {open} block"));
            let end = start + section[start..].find(close).unwrap();
            (section[start..end].to_owned(), end)
        };
        let (reply, end) = block("````text\n", "\n````\n", 0);
        let (expected, _) = block("```json\n", "\n```", end);
        examples.push((name, reply, expected));
    }
    examples
}

/// docs/formats.md has one example per format `--list-formats` prints, and each runs as
/// written, with `--format NAME` and with `auto`.
#[test]
fn formats_doc_examples_run_as_written() {
    let listed = toolmend()
        .args(["calls", "--list-formats"])
        .output()
        .unwrap();
    assert!(listed.status.success());
    let listed: Vec<String> = String::from_utf8(listed.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split_whitespace().next().unwrap().to_owned())
        .collect();
    let examples = formats_doc_examples();
    let documented: Vec<&str> = examples.iter().map(|(n, _, _)| n.as_str()).collect();
    assert_eq!(
        documented, listed,
        "docs/formats.md and --list-formats differ"
    );
    for (name, reply, expected) in &examples {
        for format in [name.as_str(), "auto"] {
            let out = toolmend()
                .args(["calls", "--format", format])
                .write_stdin(reply.as_str())
                .output()
                .unwrap();
            assert_eq!(
                String::from_utf8_lossy(&out.stdout).trim_end(),
                expected,
                "docs/formats.md, ## {name}, with --format {format}"
            );
            assert!(out.status.success(), "## {name}: {:?}", out.status);
        }
    }
}

/// `--list-formats` prints the format table the extractor uses: every name `--format` takes,
/// and nothing else.
#[test]
fn list_formats_prints_every_format_format_takes() {
    let out = toolmend()
        .args(["calls", "--list-formats"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let names: Vec<&str> = text
        .lines()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(
        names,
        toolmend_core::calls::format_names().collect::<Vec<_>>()
    );
    assert!(names.len() >= 30 && names.contains(&"hermes") && names.contains(&"json"));
    for name in &names {
        toolmend()
            .args(["calls", "--format", name])
            .write_stdin("hi")
            .assert()
            .success();
    }
    toolmend()
        .args(["calls", "--format", "nope"])
        .write_stdin("hi")
        .assert()
        .code(2);
}
