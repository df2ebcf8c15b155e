//! jsonl messages and --shape openai, the system prompt, help, hostile input.

use super::*;

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
