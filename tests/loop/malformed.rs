//! Malformed replies and values the schema coerces or refuses: the model gets a correction.

use super::*;

// 4. Malformed replies.

#[test]
fn a_malformed_reply_gets_an_error_naming_the_problem_then_a_good_reply_works() {
    let cases = [
        (
            "bad JSON",
            r#"{"tool": "echo", "parameters": {"text": "hi" @@ }, "terminate": false}"#.to_owned(),
            "expected ',' or '}' at byte 45",
        ),
        (
            "junk before the end",
            r#"{"tool": "echo", "parameters": {"text": "hi"}, "terminate": false @@}"#.to_owned(),
            "(invalid_json): the reply is not valid JSON: expected ',' or '}' at byte 66",
        ),
        (
            "missing terminate",
            r#"{"tool": "echo", "parameters": {"text": "hi"}}"#.to_owned(),
            "tool call has no \"terminate\"",
        ),
        (
            "missing tool",
            r#"{"parameters": {"text": "hi"}, "terminate": false}"#.to_owned(),
            "missing_field",
        ),
        (
            "terminate not a boolean",
            r#"{"tool": "echo", "parameters": {"text": "hi"}, "terminate": "yes"}"#.to_owned(),
            "\"terminate\" must be true or false",
        ),
        (
            "tool not a string",
            r#"{"tool": 5, "parameters": {"text": "hi"}, "terminate": false}"#.to_owned(),
            "\"tool\" must be a string",
        ),
        (
            "parameters as a string that is no JSON object",
            r#"{"tool": "echo", "parameters": "text=hi", "terminate": false}"#.to_owned(),
            "expected a JSON object, found a string",
        ),
        (
            "parameters as an array",
            r#"{"tool": "echo", "parameters": [{"text": "hi"}], "terminate": false}"#.to_owned(),
            "\"parameters\" must be an object, found an array",
        ),
        // `{"name", "arguments"}` without terminate is a model's native call: see
        // a_native_call_without_terminate_is_called_then_the_loop_goes_on.
        (
            "unknown tool",
            call("rm_rf", json!({}), false),
            "unknown tool \"rm_rf\"",
        ),
        (
            "schema violation",
            call("echo", json!({"text": [5, 6]}), false),
            "/text: [5,6] is not of type \"string\" (type)",
        ),
        (
            "truncated call",
            r#"{"tool": "echo", "parameters": {"text": "hi"#.to_owned(),
            "(incomplete_call): call to \"echo\" starting at byte 0 was cut off",
        ),
        (
            "only reasoning",
            "<think>The user wants an echo. I should call echo.</think>".to_owned(),
            "no text besides its reasoning",
        ),
        ("empty reply", "  \n".to_owned(), "empty_input"),
        (
            "two calls glued",
            format!("{}{}", echo("a", false), echo("b", false)),
            "2 tool calls",
        ),
    ];
    for (name, bad, expected) in cases {
        let s = Setup::new("malformed");
        let config = s.config(&[bad, "Recovered.".into()], "", ECHO_TOOL);
        let out = s.run(&config, &["go"]);
        assert_eq!(code(&out), 0, "{name}: {}", stderr(&out));
        assert_eq!(stdout(&out), "Recovered.\n", "{name}");
        assert!(s.log("tool.log").is_empty(), "{name}: no tool runs");
        let inputs = s.inputs();
        assert_eq!(inputs.len(), 2, "{name}");
        let messages = s.messages(1);
        let last = messages.last().unwrap();
        assert_eq!(last["role"], "user", "{name}");
        let note = last["content"].as_str().unwrap();
        assert!(
            note.contains(expected),
            "{name}: {expected:?} not in the note: {note}"
        );
        assert!(
            note.contains("reply with exactly one JSON object"),
            "{name}: {note}"
        );
    }
}

/// `count`: a read-only tool with a string, an integer and a list parameter.
const COUNT_TOOL: &str = r#"
[[tools]]
name = "count"
description = "Count a word"
read_only = true
command = ["python3", "{bin}/record_tool.py", "{dir}/tool.log"]
parameters = [
  { name = "word", type = "string", required = true },
  { name = "times", type = "integer", required = true },
  { name = "tags", type = "array", items = { type = "string" } },
]
"#;

#[test]
fn values_of_the_wrong_type_are_coerced_to_the_schema_and_reported() {
    let s = Setup::new("coerce");
    let replies = [
        call(
            "count",
            json!({"word": 42, "times": " 3 ", "tags": "news"}),
            false,
        ),
        "Counted.".into(),
    ];
    let config = s.config(&replies, "", COUNT_TOOL);
    let out = s.run(&config, &["--transcript", &s.path_str("run.jsonl"), "go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "Counted.\n");
    let tool_stdin: Vec<Value> = s
        .log("tool.log")
        .iter()
        .map(|l| serde_json::from_str(l["stdin"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(
        tool_stdin,
        [json!({"word": "42", "times": 3, "tags": ["news"]})]
    );
    let transcript = std::fs::read_to_string(s.path("run.jsonl")).unwrap();
    let call = events(&transcript)
        .into_iter()
        .find(|e| e["type"] == "tool.call")
        .unwrap();
    assert_eq!(
        call["data"]["repairs"],
        json!([
            {"kind": "schema_type", "path": "/word"},
            {"kind": "schema_type", "path": "/times"},
            {"kind": "schema_type", "path": "/tags"}
        ])
    );
}

#[test]
fn values_that_cannot_be_coerced_get_one_correction_naming_each_violation() {
    let s = Setup::new("coerce-refused");
    let replies = [
        call(
            "count",
            json!({"word": true, "times": "3.5", "tags": ["a", {"b": 1}]}),
            false,
        ),
        call("count", json!({"word": "w", "times": 3}), false),
        "Counted.".into(),
    ];
    let config = s.config(&replies, "", COUNT_TOOL);
    let out = s.run(&config, &["go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // Only the corrected call ran.
    let tool_stdin: Vec<Value> = s
        .log("tool.log")
        .iter()
        .map(|l| serde_json::from_str(l["stdin"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(tool_stdin, [json!({"word": "w", "times": 3})]);
    let messages = s.messages(1);
    let note = messages.last().unwrap()["content"].as_str().unwrap();
    for expected in [
        "(invalid_parameters)",
        "/word: true is not of type \"string\" (type)",
        "/times: \"3.5\" is not of type \"integer\" (type)",
        "/tags/1: {\"b\":1} is not of type \"string\" (type)",
    ] {
        assert!(
            note.contains(expected),
            "{expected:?} not in the note: {note}"
        );
    }
    assert_eq!(note.matches("Your last reply").count(), 1, "{note}");
}

/// `nest`: a read-only tool whose parameter `v` is an integer or an array of such values, to any
/// depth (a recursive schema).
const NEST_TOOL: &str = r##"
[[tools]]
name = "nest"
description = "Nested numbers"
read_only = true
command = ["python3", "{bin}/record_tool.py", "{dir}/tool.log"]
[tools.parameters]
type = "object"
properties = { v = { "$ref" = "#/$defs/N" } }
"$defs" = { N = { anyOf = [{ type = "integer" }, { type = "array", items = { "$ref" = "#/$defs/N" } }] } }
"##;

/// A value that fits no branch of a recursive schema once overflowed the stack.
#[test]
fn a_value_that_does_not_fit_a_recursive_schema_gets_a_correction() {
    let s = Setup::new("recursive-schema");
    let replies = [
        call("nest", json!({"v": "x"}), false),
        call("nest", json!({"v": [1, [2]]}), false),
        "Done.".into(),
    ];
    let config = s.config(&replies, "", NEST_TOOL);
    let (out, transcript) = s.run_with_transcript(&config);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "Done.\n");
    let ran: Vec<Value> = s
        .log("tool.log")
        .iter()
        .map(|l| serde_json::from_str(l["stdin"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(ran, [json!({"v": [1, [2]]})]);
    let note = s.messages(1).last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(note.contains("(invalid_parameters)"), "{note}");
    assert_eq!(events(&transcript).last().unwrap()["type"], "run.finished");
}

/// `plan`: a read-only tool whose parameters are a JSON Schema with one property per coercion
/// rule the `count` tool does not cover.
const PLAN_TOOL: &str = r#"
[[tools]]
name = "plan"
description = "Plan a trip"
read_only = true
command = ["python3", "{bin}/record_tool.py", "{dir}/tool.log"]
[tools.parameters]
type = "object"
required = ["ratio"]
[tools.parameters.properties]
ratio = { type = "number" }
metric = { type = "boolean" }
unit = { type = "string", enum = ["celsius", "fahrenheit"] }
confirm = { enum = ["yes", "no"] }
options = { type = "object", properties = { depth = { type = "integer" } } }
tags = { type = "array", items = { type = "string" } }
"#;

#[test]
fn every_coercion_rule_applies_in_the_loop() {
    let s = Setup::new("coerce-rules");
    let replies = [
        call(
            "plan",
            json!({
                "ratio": "2.5",
                "metric": "true",
                "unit": " Celsius ",
                "confirm": "YES",
                "options": "{\"depth\": \"2\"}",
                "tags": "[\"news\", \"sport\"]"
            }),
            false,
        ),
        "Planned.".into(),
    ];
    let config = s.config(&replies, "", PLAN_TOOL);
    let out = s.run(&config, &["--transcript", &s.path_str("run.jsonl"), "go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let tool_stdin: Vec<Value> = s
        .log("tool.log")
        .iter()
        .map(|l| serde_json::from_str(l["stdin"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(
        tool_stdin,
        [json!({
            "ratio": 2.5,
            "metric": true,
            "unit": "celsius",
            "confirm": "yes",
            "options": {"depth": 2},
            "tags": ["news", "sport"]
        })]
    );
    let transcript = std::fs::read_to_string(s.path("run.jsonl")).unwrap();
    let call = events(&transcript)
        .into_iter()
        .find(|e| e["type"] == "tool.call")
        .unwrap();
    let mut paths: Vec<&str> = call["data"]["repairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            assert_eq!(r["kind"], "schema_type", "{r}");
            r["path"].as_str().unwrap()
        })
        .collect();
    paths.sort_unstable();
    assert_eq!(
        paths,
        [
            "/confirm",
            "/metric",
            "/options",
            "/options/depth",
            "/ratio",
            "/tags",
            "/unit"
        ]
    );
}

#[test]
fn coercions_that_would_lose_information_are_refused_in_the_loop() {
    let s = Setup::new("coerce-lossy");
    let replies = [
        call(
            "plan",
            json!({"ratio": "1,000", "metric": "yes", "unit": "kelvin", "confirm": "maybe"}),
            false,
        ),
        call("plan", json!({"ratio": 1000}), false),
        "Planned.".into(),
    ];
    let config = s.config(&replies, "", PLAN_TOOL);
    let out = s.run(&config, &["go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let tool_stdin: Vec<Value> = s
        .log("tool.log")
        .iter()
        .map(|l| serde_json::from_str(l["stdin"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(
        tool_stdin,
        [json!({"ratio": 1000})],
        "only the corrected call ran"
    );
    let messages = s.messages(1);
    let note = messages.last().unwrap()["content"].as_str().unwrap();
    for expected in [
        "/ratio: \"1,000\" is not of type \"number\" (type)",
        "/metric: \"yes\" is not of type \"boolean\" (type)",
        "/unit: \"kelvin\" is not one of",
        "/confirm: \"maybe\" is not one of",
    ] {
        assert!(
            note.contains(expected),
            "{expected:?} not in the note: {note}"
        );
    }
}

/// Every shape `calls` normalises is a call in the loop too (`name` and
/// `arguments`, parameters written as JSON text, the envelope inside call markers), and the
/// mend is reported in the transcript's `tool.call` event.
#[test]
fn shapes_calls_normalises_are_calls_with_the_mend_in_the_transcript() {
    let cases = [
        (
            "name and arguments",
            r#"{"name": "echo", "arguments": {"text": "hi"}, "terminate": false}"#,
            None,
        ),
        (
            "parameters as JSON text",
            r#"{"tool": "echo", "parameters": "{\"text\": \"hi\"}", "terminate": false}"#,
            Some("unquote"),
        ),
        (
            "arguments as JSON text",
            r#"{"name": "echo", "arguments": "{\"text\": \"hi\"}", "terminate": false}"#,
            Some("unquote"),
        ),
        (
            "the envelope in Hermes tags",
            r#"<tool_call>{"tool": "echo", "parameters": {"text": "hi"}, "terminate": false}</tool_call>"#,
            None,
        ),
        (
            "single quotes in the parameters",
            r#"{"tool": "echo", "parameters": {'text': 'hi'}, "terminate": false}"#,
            Some("single_quotes"),
        ),
    ];
    for (name, reply, repair) in cases {
        let s = Setup::new("shapes");
        let config = s.config(&[reply.to_owned(), "Done.".into()], "", ECHO_TOOL);
        let (out, transcript) = s.run_with_transcript(&config);
        assert_eq!(code(&out), 0, "{name}: {}", stderr(&out));
        assert_eq!(stdout(&out), "Done.\n", "{name}");
        assert_eq!(s.log("tool.log").len(), 1, "{name}: the tool ran once");
        let events = events(&transcript);
        assert!(
            !types(&events).contains(&"parse.error"),
            "{name}: {events:?}"
        );
        let call = events.iter().find(|e| e["type"] == "tool.call").unwrap();
        assert_eq!(call["data"]["parameters"], json!({"text": "hi"}), "{name}");
        let kinds: Vec<&str> = call["data"]["repairs"]
            .as_array()
            .map(|r| r.iter().filter_map(|r| r["kind"].as_str()).collect())
            .unwrap_or_default();
        match repair {
            Some(kind) => assert!(kinds.contains(&kind), "{name}: {call}"),
            None => assert!(kinds.is_empty(), "{name}: {call}"),
        }
    }
}

/// A model's native call (Qwen's `<tool_call>` with `name` and `arguments`, the bare object, an
/// API response's `tool_calls`) needs no `terminate`: it is called, then the loop goes on; a
/// reply with no call is the answer.
#[test]
fn a_native_call_without_terminate_is_called_then_the_loop_goes_on() {
    let completion = json!({"id": "chatcmpl-1", "object": "chat.completion", "choices": [{
        "index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
        "tool_calls": [{"id": "call_7", "type": "function",
                        "function": {"name": "echo", "arguments": "{\"text\": \"hi\"}"}}]}}]});
    let cases = [
        (
            "Qwen's native format",
            "<tool_call>\n{\"name\": \"echo\", \"arguments\": {\"text\": \"hi\"}}\n</tool_call>"
                .to_owned(),
        ),
        (
            "the bare object",
            r#"{"name": "echo", "arguments": {"text": "hi"}}"#.to_owned(),
        ),
        ("an API response's tool_calls", completion.to_string()),
    ];
    for (name, reply) in cases {
        let s = Setup::new("native");
        let config = s.config(&[reply, "Done.".into()], "", ECHO_TOOL);
        let out = s.run(&config, &["say hi"]);
        assert_eq!(code(&out), 0, "{name}: {}", stderr(&out));
        assert_eq!(stdout(&out), "Done.\n", "{name}");
        assert_eq!(s.log("tool.log").len(), 1, "{name}: the tool ran once");
        assert_eq!(s.inputs().len(), 2, "{name}");
        let messages = s.messages(1);
        assert_eq!(messages[3]["role"], "tool", "{name}");
        if name.starts_with("an API") {
            // The result names the call it answers, as the API's `tool` messages do.
            assert_eq!(messages[3]["tool_call_id"], "call_7", "{name}");
        }
    }
}

/// `[llm] system_prompt`: a command that sends the tools as the API's tools feature gets a
/// system message that teaches no `terminate` envelope ("native"), or none at all ("none");
/// the default teaches the convention. Any other value is refused before the run.
#[test]
fn the_system_prompt_setting_chooses_the_first_message() {
    let convention = toolmend_core::system_prompt(
        &toolmend_core::tools::Tools::from_json_str(
            r#"[{"name": "echo", "description": "Print the text",
                 "parameters": [{"name": "text", "type": "string", "required": true}]}]"#,
        )
        .unwrap(),
    );
    let cases = [
        ("", Some("terminate")),
        ("system_prompt = \"convention\"", Some("terminate")),
        ("system_prompt = \"native\"", Some("call no tool")),
        ("system_prompt = \"none\"", None),
    ];
    for (setting, teaches) in cases {
        let s = Setup::new("system-prompt");
        let config = s.config(&["Done.".into()], setting, ECHO_TOOL);
        let out = s.run(&config, &["say hi"]);
        assert_eq!(code(&out), 0, "{setting}: {}", stderr(&out));
        let messages = s.messages(0);
        match teaches {
            Some(words) => {
                assert_eq!(messages.len(), 2, "{setting}");
                assert_eq!(messages[0]["role"], "system", "{setting}");
                let text = messages[0]["content"].as_str().unwrap();
                assert!(text.contains(words), "{setting}: {text}");
                let is_convention = words == "terminate";
                assert_eq!(text.contains("\"terminate\""), is_convention, "{setting}");
                if is_convention {
                    assert!(text.starts_with(&convention[..40]), "{setting}");
                }
            }
            None => {
                assert_eq!(messages.len(), 1, "{setting}");
                assert_eq!(messages[0]["role"], "user", "{setting}");
            }
        }
    }
    let s = Setup::new("system-prompt-bad");
    let config = s.config(&["Done.".into()], "system_prompt = \"json\"", ECHO_TOOL);
    let out = s.run(&config, &["go"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("system_prompt"), "{}", stderr(&out));
    assert!(s.inputs().is_empty());
}

#[test]
fn three_malformed_replies_in_a_row_abort_with_7() {
    let s = Setup::new("malformed3");
    let bad = r#"{"tool": "echo", "parameters": {"text": "hi"}}"#.to_owned();
    let replies = [bad.clone(), bad.clone(), bad, "never".into()];
    let config = s.config(&replies, "", ECHO_TOOL);
    let out = s.run(&config, &["go"]);
    assert_eq!(code(&out), 7, "{}", stderr(&out));
    assert_eq!(s.inputs().len(), 3);
    assert_eq!(stdout(&out), "");
    assert!(
        stderr(&out).contains("3 malformed replies in a row"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_good_call_resets_the_malformed_count() {
    let s = Setup::new("malformed-reset");
    let bad = r#"{"tool": "echo", "parameters": {"text": "hi"}}"#.to_owned();
    let replies = [
        bad.clone(),
        bad.clone(),
        echo("fine", false),
        bad.clone(),
        bad,
        "Done.".into(),
    ];
    let config = s.config(&replies, "", ECHO_TOOL);
    let out = s.run(&config, &["go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "Done.\n");
}
