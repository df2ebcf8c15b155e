//! Envelopes, text replies, forced and detected formats, reasoning, arguments, tools files.

use super::*;

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
