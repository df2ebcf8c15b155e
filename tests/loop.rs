//! `toolmend loop` end to end: the real binary against scripted programs in `fixtures/bin/`
//! (a scripted LLM that replays replies and saves its inputs, recording tools, approval hooks).
// This test reads what the processes it starts used, or signals them, through libc.
#![allow(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command as Cmd;
use serde_json::{Value, json};

mod common;
use common::{TempDir, bin, code, quoted, stderr, stdout};

/// A fresh directory for one test, with the scripted LLM's replies, its saved inputs and the
/// logs of tools and hooks.
struct Setup {
    dir: TempDir,
}

fn call(tool: &str, parameters: Value, terminate: bool) -> String {
    json!({"tool": tool, "parameters": parameters, "terminate": terminate}).to_string()
}

fn echo(text: &str, terminate: bool) -> String {
    call("echo", json!({ "text": text }), terminate)
}

impl Setup {
    fn new(name: &str) -> Setup {
        Setup {
            dir: TempDir::new(&format!("loop-{name}")),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn path_str(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }

    /// Writes the replies and a config: `[llm]` runs the scripted model, then `rest` (TOML
    /// written with `{bin}` for fixtures/bin and `{dir}` for the test's directory).
    fn config(&self, replies: &[String], llm_extra: &str, rest: &str) -> PathBuf {
        std::fs::write(self.path("replies.txt"), replies.join("\n=====\n")).unwrap();
        let llm = format!(
            "[llm]\ncommand = [\"python3\", {}, {}, {}]\n{llm_extra}\n",
            quoted(&bin("scripted_llm.py")),
            quoted(&self.path_str("replies.txt")),
            quoted(&self.path_str("inputs")),
        );
        let rest = rest
            .replace("{bin}", &bin(""))
            .replace("{dir}", &self.dir.display().to_string());
        let path = self.path("agent.toml");
        std::fs::write(&path, format!("{llm}{rest}")).unwrap();
        path
    }

    /// What the scripted model got on stdin, one entry per call.
    fn inputs(&self) -> Vec<String> {
        (0..)
            .map(|n| self.path(&format!("inputs/input-{n}.txt")))
            .take_while(|p| p.exists())
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect()
    }

    /// The conversation of the model's call `n` (0-based), in `messages` form.
    fn messages(&self, n: usize) -> Vec<Value> {
        let input: Value = serde_json::from_str(&self.inputs()[n]).unwrap();
        input["messages"].as_array().unwrap().clone()
    }

    /// Lines of a log written by a tool or a hook, parsed as JSON.
    fn log(&self, name: &str) -> Vec<Value> {
        match std::fs::read_to_string(self.path(name)) {
            Ok(text) => text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    /// Runs `toolmend loop --config CONFIG go --transcript DIR/run.jsonl`: its output, and
    /// the transcript's text (empty when none was written).
    fn run_with_transcript(&self, config: &Path) -> (Output, String) {
        let transcript = self.path_str("run.jsonl");
        let out = self.run(config, &["go", "--transcript", &transcript]);
        (
            out,
            std::fs::read_to_string(&transcript).unwrap_or_default(),
        )
    }

    fn run(&self, config: &Path, args: &[&str]) -> Output {
        toolmend()
            .arg("loop")
            .arg("--config")
            .arg(config)
            .args(args)
            .output()
            .unwrap()
    }
}

/// toolmend with a guard against a run that hangs.
fn toolmend() -> Cmd {
    let mut cmd = common::toolmend();
    cmd.timeout(Duration::from_secs(30));
    cmd
}

/// The `echo` tool: records its stdin in tool.log and prints `echo: TEXT`; read-only, so no
/// approval is needed.
const ECHO_TOOL: &str = r#"
[[tools]]
name = "echo"
description = "Echo a text back"
read_only = true
command = ["python3", "{bin}/record_tool.py", "{dir}/tool.log"]
parameters = [{ name = "text", type = "string", required = true, description = "The text to echo" }]
"#;

/// `echo` that needs approval, and a hook in the given mode (`{mode}`).
const APPROVED_ECHO: &str = r#"
[approval]
command = ["python3", "{bin}/approval_hook.py", "{mode}", "{dir}/hook.log"]
timeout = 5

[[tools]]
name = "echo"
description = "Echo a text back"
command = ["python3", "{bin}/record_tool.py", "{dir}/tool.log"]
parameters = [{ name = "text", type = "string", required = true }]
"#;

// 1. A text reply is the final answer.

#[test]
fn text_reply_is_the_answer_and_the_model_is_called_once() {
    let s = Setup::new("text");
    let config = s.config(&["The answer is 42.".into()], "", ECHO_TOOL);
    let out = s.run(&config, &["What is six times seven?"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "The answer is 42.\n");
    assert_eq!(s.inputs().len(), 1);
    assert!(s.log("tool.log").is_empty());
}

#[test]
fn a_json_document_without_call_keys_is_an_answer_too() {
    let s = Setup::new("json-answer");
    let answer = "```json\n{\"name\": \"demo\", \"version\": 2}\n```";
    let config = s.config(&[answer.into()], "", ECHO_TOOL);
    let out = s.run(&config, &["Write a package.json stub"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("{answer}\n"));
    assert_eq!(s.inputs().len(), 1);
}

#[test]
fn prompt_from_stdin() {
    let s = Setup::new("stdin");
    let config = s.config(&["Hello.".into()], "", ECHO_TOOL);
    let out = toolmend()
        .args(["loop", "--config"])
        .arg(&config)
        .write_stdin("greet me\n")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        s.messages(0)[1],
        json!({"role": "user", "content": "greet me\n"})
    );
}

// 2. Multi-step runs.

#[test]
fn results_go_back_to_the_model_until_a_text_reply() {
    let s = Setup::new("multi");
    let replies = [
        echo("one", false),
        echo("two", false),
        "Both echoed.".into(),
    ];
    let config = s.config(&replies, "", ECHO_TOOL);
    let out = s.run(&config, &["echo one then two"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "Both echoed.\n");
    assert_eq!(s.inputs().len(), 3);
    let tool_stdin: Vec<Value> = s
        .log("tool.log")
        .iter()
        .map(|l| serde_json::from_str(l["stdin"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(tool_stdin, [json!({"text": "one"}), json!({"text": "two"})]);
    // The last input holds both replies and both results, in order.
    let messages = s.messages(2);
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "assistant", "tool"]
    );
    assert_eq!(messages[2]["content"], echo("one", false));
    let result: Value = serde_json::from_str(messages[5]["content"].as_str().unwrap()).unwrap();
    assert_eq!(result["stdout"], "echo: two\n");
    assert_eq!(result["ok"], true);
    assert_eq!(messages[5]["name"], "echo");
}

#[test]
fn terminate_true_ends_the_run_with_the_tool_result() {
    let s = Setup::new("terminate");
    let replies = [
        echo("first", false),
        echo("final", true),
        "never sent".into(),
    ];
    let config = s.config(&replies, "", ECHO_TOOL);
    let out = s.run(&config, &["go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "echo: final\n");
    assert_eq!(
        s.inputs().len(),
        2,
        "the model is not called after terminate"
    );
    assert_eq!(s.log("tool.log").len(), 2);
}

#[test]
fn a_terminating_call_to_a_failing_tool_still_ends_the_run_with_a_warning() {
    let s = Setup::new("terminate-fail");
    let rest = r#"
[[tools]]
name = "broken"
read_only = true
command = ["sh", "{bin}/failing_tool.sh"]
"#;
    let config = s.config(&[call("broken", json!({}), true), "never".into()], "", rest);
    let out = s.run(&config, &["go", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(s.inputs().len(), 1);
    let record: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(record["status"], "terminated");
    assert_eq!(record["answer"], "");
    assert_eq!(
        record["error"],
        "the terminating call to \"broken\" failed: the tool failed: exit status 3"
    );
    assert!(stderr(&out).contains("warning"), "{}", stderr(&out));
}

// 3. The first input: tool definitions and the calling convention.

#[test]
fn first_input_holds_every_tool_and_the_convention() {
    let s = Setup::new("first");
    let tools = format!(
        "{ECHO_TOOL}
[[tools]]
name = \"get_weather\"
description = \"Current weather for a city\"
read_only = true
command = [\"true\"]
[tools.parameters]
type = \"object\"
required = [\"city\"]
[tools.parameters.properties.city]
type = \"string\"
description = \"City name\"
[tools.parameters.properties.days]
type = \"integer\"
"
    );
    let config = s.config(&["ok".into()], "", &tools);
    let out = s.run(&config, &["weather in Oslo?"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let messages = s.messages(0);
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(
        messages[1],
        json!({"role": "user", "content": "weather in Oslo?"})
    );
    let system = messages[0]["content"].as_str().unwrap();
    for expected in [
        "## echo",
        "Echo a text back",
        "- text (string, required): The text to echo",
        "## get_weather",
        "Current weather for a city",
        "- city (string, required): City name",
        "- days (integer, optional)",
        r#"{"tool": "<tool name>", "parameters": {<parameter name>: <value>, ...}, "terminate": <true or false>}"#,
        "\"terminate\" (boolean): false to get the tool's result back and continue working; true to finish",
        "Exactly one JSON object per tool call",
    ] {
        assert!(
            system.contains(expected),
            "missing {expected:?} in:\n{system}"
        );
    }
}

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

// 5. Limits.

#[test]
fn max_iterations_stops_with_5_and_a_warning() {
    let s = Setup::new("iterations");
    let replies: Vec<String> = (0..6).map(|i| echo(&i.to_string(), false)).collect();
    let config = s.config(
        &replies,
        "",
        &format!("[loop]\nmax_iterations = 3\n{ECHO_TOOL}"),
    );
    let out = s.run(&config, &["loop forever"]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert_eq!(s.inputs().len(), 3);
    assert_eq!(s.log("tool.log").len(), 3);
    assert!(stderr(&out).contains("warning"), "{}", stderr(&out));
    assert!(stderr(&out).contains("max_iterations"), "{}", stderr(&out));
}

/// A tool that starts a background child which would create `marker` after 1.5 s.
fn background_tool(marker: &Path, timeout: &str) -> String {
    format!(
        "[[tools]]\nname = \"slow\"\nread_only = true\n{timeout}\
         command = [\"sh\", {}, {}]\n",
        quoted(&bin("background_tool.sh")),
        quoted(&marker.display().to_string())
    )
}

/// Checks that the background tool ran and that its child did not survive: waits until 2.5 s
/// after the tool started (past the child's 1.5 s), when a survivor would have written its
/// marker.
fn assert_no_survivor(marker: &Path) {
    let started = PathBuf::from(format!("{}.started", marker.display()));
    let Ok(at) = std::fs::metadata(&started).and_then(|m| m.modified()) else {
        panic!("the background tool never ran");
    };
    let until = at + Duration::from_millis(2500);
    if let Ok(left) = until.duration_since(std::time::SystemTime::now()) {
        std::thread::sleep(left);
    }
    assert!(!marker.exists(), "the tool's background child survived");
}

#[test]
fn run_timeout_exits_6_promptly_and_kills_the_tool_group() {
    let s = Setup::new("timeout");
    let marker = s.path("survivor");
    let replies = [call("slow", json!({}), false), "never".into()];
    let config = s.config(
        &replies,
        "",
        &format!("[loop]\ntimeout = 1.5\n{}", background_tool(&marker, "")),
    );
    let start = Instant::now();
    let out = s.run(&config, &["go"]);
    let took = start.elapsed();
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert!(took < Duration::from_secs(3), "took {took:?}");
    assert!(stderr(&out).contains("warning"), "{}", stderr(&out));
    assert_no_survivor(&marker);
}

#[test]
fn run_timeout_also_stops_a_hanging_model() {
    let s = Setup::new("timeout-llm");
    let config = s.config(&["!sleep 30".into()], "", "[loop]\ntimeout = 0.5\n");
    let start = Instant::now();
    let out = s.run(&config, &["go"]);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert!(start.elapsed() < Duration::from_secs(3));
}

#[test]
fn a_tool_past_its_own_timeout_is_killed_and_reported_and_the_loop_goes_on() {
    let s = Setup::new("tool-timeout");
    let marker = s.path("survivor");
    let replies = [call("slow", json!({}), false), "It was too slow.".into()];
    let config = s.config(&replies, "", &background_tool(&marker, "timeout = 0.3\n"));
    let start = Instant::now();
    let out = s.run(&config, &["go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "It was too slow.\n");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "the tool ran its 30 s"
    );
    let result: Value =
        serde_json::from_str(s.messages(1)[3]["content"].as_str().unwrap()).unwrap();
    assert_eq!(result["ok"], false);
    assert!(
        result["error"].as_str().unwrap().contains("timed out"),
        "{result}"
    );
    assert_no_survivor(&marker);
}

// 6. Approval.

fn approved_echo(mode: &str) -> String {
    APPROVED_ECHO.replace("{mode}", mode)
}

#[test]
fn approval_allow_runs_the_tool_and_the_hook_sees_the_call() {
    let s = Setup::new("allow");
    let replies = [
        format!("Let me echo.\n{}", echo("hi", false)),
        "Echoed.".into(),
    ];
    let config = s.config(&replies, "", &approved_echo("allow"));
    let out = s.run(&config, &["go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "Echoed.\n");
    assert_eq!(s.log("tool.log").len(), 1);
    assert_eq!(
        s.log("hook.log"),
        [
            json!({"tool": "echo", "parameters": {"text": "hi"}, "iteration": 1, "reason": "Let me echo."})
        ]
    );
}

#[test]
fn an_allow_with_a_reason_fails_closed_and_the_transcript_says_why() {
    // Only the one-key `{"decision":"allow"}` allows; an extra key makes the answer ambiguous.
    let s = Setup::new("allow-reason");
    let replies = [echo("hi", true)];
    let config = s.config(&replies, "", &approved_echo("allow-reason"));
    let (out, transcript) = s.run_with_transcript(&config);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert!(s.log("tool.log").is_empty(), "the tool must not run");
    let events = events(&transcript);
    let decided = events
        .iter()
        .find(|e| e["type"] == "approval.decided")
        .unwrap();
    assert_eq!(decided["data"]["decision"], "failed");
    let why = decided["data"]["reason"].as_str().unwrap();
    assert!(why.contains("\"reason\" beside the decision"), "{why}");
}

/// `echo` behind a hook that prints the bytes of `{dir}/answer` and exits with `exit`.
fn hook_saying(s: &Setup, answer: &[u8], exit: i32) -> PathBuf {
    std::fs::write(s.path("answer"), answer).unwrap();
    let rest = approved_echo("say").replace(
        "\"{dir}/hook.log\"]",
        &format!("\"{{dir}}/hook.log\", \"{{dir}}/answer\", \"{exit}\"]"),
    );
    let _ = std::fs::remove_file(s.path("tool.log"));
    let _ = std::fs::remove_dir_all(s.path("inputs"));
    s.config(&[echo("hi", true)], "", &rest)
}

#[test]
fn only_one_exact_allow_allows_every_other_answer_fails_closed() {
    let s = Setup::new("hook-answers");
    let allow = br#"{"decision":"allow"}"#;
    // Whitespace around the one object is fine.
    for answer in [
        &allow[..],
        b"{\"decision\":\"allow\"}\n",
        b"  { \"decision\" : \"allow\" }\r\n",
        b"\n\t{\"decision\":\"allow\"}\n\n",
    ] {
        let config = hook_saying(&s, answer, 0);
        let out = s.run(&config, &["go"]);
        let shown = String::from_utf8_lossy(answer);
        assert_eq!(code(&out), 0, "{shown:?}: {}", stderr(&out));
        assert_eq!(s.log("tool.log").len(), 1, "{shown:?}");
    }
    let huge = [&allow[..], &[b' '; 70_000][..]].concat();
    let failures: &[(&[u8], i32, &str)] = &[
        // The same key twice, in any order, even when both say allow.
        (
            br#"{"decision":"deny","decision":"allow"}"#,
            0,
            "\"decision\" twice",
        ),
        (
            br#"{"decision":"allow","decision":"deny"}"#,
            0,
            "\"decision\" twice",
        ),
        (
            br#"{"decision":"allow","decision":"allow"}"#,
            0,
            "\"decision\" twice",
        ),
        (
            br#"{"decision":"deny","reason":"x","decision":"deny"}"#,
            0,
            "twice",
        ),
        // Other keys beside an allow.
        (
            br#"{"decision":"allow","reason":"fine"}"#,
            0,
            "\"reason\" beside",
        ),
        (
            br#"{"decision":"allow","force":true}"#,
            0,
            "\"force\" beside",
        ),
        (br#"{"x":1,"decision":"allow"}"#, 0, "\"x\" beside"),
        // Not the exact string.
        (br#"{"decision":"Allow"}"#, 0, "\"Allow\""),
        (br#"{"decision":" allow"}"#, 0, "\" allow\""),
        (br#"{"decision":"allow "}"#, 0, "\"allow \""),
        (br#"{"decision":"ALLOW"}"#, 0, "\"ALLOW\""),
        // The same string spelled with an escape is not the exact bytes.
        (br#"{"decision":"\u0061llow"}"#, 0, "with an escape"),
        (br#"{"decisio\u006e":"allow"}"#, 0, "with an escape"),
        (br#"{"decision":"allo\u0077"}"#, 0, "with an escape"),
        (br#"{"decision":true}"#, 0, "not a string"),
        (br#"{"decision":["allow"]}"#, 0, "not a string"),
        (br#"{"decision":null}"#, 0, "not a string"),
        (br#"{"Decision":"allow"}"#, 0, "no \"decision\""),
        (br#"{}"#, 0, "no \"decision\""),
        (br#"["allow"]"#, 0, "not one JSON object"),
        (br#""allow""#, 0, "not one JSON object"),
        (b"allow", 0, "not one JSON object"),
        // Something before or after the one object.
        (br#"{"decision":"allow"}x"#, 0, "not one JSON object"),
        (
            br#"{"decision":"allow"}{"decision":"allow"}"#,
            0,
            "not one JSON object",
        ),
        (
            b"{\"decision\":\"allow\"}\nok, running it",
            0,
            "not one JSON object",
        ),
        (
            b"checking...\n{\"decision\":\"allow\"}",
            0,
            "not one JSON object",
        ),
        (
            b"\xef\xbb\xbf{\"decision\":\"allow\"}",
            0,
            "not one JSON object",
        ),
        (br#"{"decision":"allow""#, 0, "not one JSON object"),
        // No answer, a failing exit, bytes that are not text, too much.
        (b"", 0, "no answer"),
        (b"  \n", 0, "no answer"),
        (allow, 1, "exit status 1"),
        (allow, 2, "exit status 2"),
        (b"{\"decision\":\"allow\"}\xff", 0, "not UTF-8"),
        (b"{\"decision\":\"allow\xff\"}", 0, "not UTF-8"),
        (&huge, 0, "over the limit"),
        // A deny whose extra parts are not a string reason is not a clean deny either.
        (br#"{"decision":"deny","reason":1}"#, 0, "not a string"),
        (
            br#"{"decision":"deny","force":true}"#,
            0,
            "\"force\" beside",
        ),
    ];
    for &(answer, exit, why) in failures {
        let config = hook_saying(&s, answer, exit);
        let out = s.run(&config, &["go"]);
        let shown = String::from_utf8_lossy(answer);
        let shown = &shown[..shown.len().min(80)];
        assert_eq!(code(&out), 4, "{shown:?} exit {exit}: {}", stderr(&out));
        assert!(s.log("tool.log").is_empty(), "{shown:?}: the tool ran");
        assert!(stderr(&out).contains(why), "{shown:?}: {}", stderr(&out));
    }
    // A deny is a deny (exit 3), with or without a string reason, whatever the exit status.
    for (answer, exit) in [
        (&br#"{"decision":"deny"}"#[..], 0),
        (br#" {"decision":"deny","reason":"no"} "#, 0),
        (br#"{"reason":"no","decision":"deny"}"#, 0),
        (br#"{"decision":"deny"}"#, 1),
    ] {
        let config = hook_saying(&s, answer, exit);
        let out = s.run(&config, &["go"]);
        let shown = String::from_utf8_lossy(answer);
        assert_eq!(code(&out), 3, "{shown:?}: {}", stderr(&out));
        assert!(s.log("tool.log").is_empty(), "{shown:?}: the tool ran");
    }
}

#[test]
fn approval_deny_exits_3_and_nothing_more_runs() {
    let s = Setup::new("deny");
    let replies = [echo("hi", false), "never".into()];
    let config = s.config(&replies, "", &approved_echo("deny"));
    let out = s.run(&config, &["go"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(s.log("tool.log").is_empty(), "the tool must not run");
    assert_eq!(s.inputs().len(), 1);
    assert_eq!(s.log("hook.log").len(), 1);
    assert!(stderr(&out).contains("denied"), "{}", stderr(&out));
    assert!(stderr(&out).contains("not on a Sunday"), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
}

#[test]
fn a_failing_hook_fails_closed_with_4() {
    for (mode, expected) in [
        ("crash", "exit status 1"),
        ("hang", "timeout"),
        ("garbage", "yes please"),
        ("allow-exit-1", "exit status 1"),
        ("maybe", "maybe"),
    ] {
        let s = Setup::new(&format!("hook-{mode}"));
        let replies = [echo("hi", false), "never".into()];
        // The hanging hook gets 1 s; the others the usual 5 s, which they do not need.
        let rest = match mode {
            "hang" => approved_echo(mode).replace("timeout = 5\n", "timeout = 1\n"),
            _ => approved_echo(mode),
        };
        let config = s.config(&replies, "", &rest);
        let start = Instant::now();
        let out = s.run(&config, &["go"]);
        assert_eq!(code(&out), 4, "{mode}: {}", stderr(&out));
        assert!(start.elapsed() < Duration::from_secs(5), "{mode}");
        assert!(
            s.log("tool.log").is_empty(),
            "{mode}: the tool must not run"
        );
        assert_eq!(s.log("hook.log").len(), 1, "{mode}");
        assert_eq!(s.inputs().len(), 1, "{mode}");
        assert!(stderr(&out).contains(expected), "{mode}: {}", stderr(&out));
    }
}

#[test]
fn a_terminal_hook_runs_in_toolmends_process_group_others_in_their_own() {
    for (mode, terminal, expected) in [
        ("own-group", "", 0),
        ("toolmend-group", "", 3),
        ("toolmend-group", "terminal = true\n", 0),
    ] {
        let s = Setup::new(&format!("hook-{mode}"));
        let replies = [echo("hi", true)];
        let rest =
            approved_echo(mode).replace("timeout = 5\n", &format!("timeout = 5\n{terminal}"));
        let config = s.config(&replies, "", &rest);
        let out = s.run(&config, &["go"]);
        assert_eq!(code(&out), expected, "{mode} {terminal}: {}", stderr(&out));
    }
}

#[test]
fn a_hook_that_cannot_start_fails_closed() {
    // A missing hook is refused before the run (a_hook_or_tool_command_that_cannot_start_...);
    // one that fails only when started rejects the call.
    let s = Setup::new("hook-unstartable");
    let hook = script_without_interpreter(&s, "hook.sh");
    let replies = [echo("hi", false), "never".into()];
    let rest = approved_echo("allow").replace(
        "\"python3\", \"{bin}/approval_hook.py\", \"allow\", \"{dir}/hook.log\"",
        &quoted(&hook),
    );
    let config = s.config(&replies, "", &rest);
    let out = s.run(&config, &["go"]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert!(stderr(&out).contains("could not start"), "{}", stderr(&out));
    assert!(s.log("tool.log").is_empty());
}

#[test]
fn a_tool_needing_approval_without_a_hook_is_a_config_error() {
    let s = Setup::new("no-hook");
    let rest = r#"
[[tools]]
name = "rm"
command = ["rm", "-rf", "/nonexistent/toolmend"]
"#;
    let config = s.config(&["never".into()], "", rest);
    let out = s.run(&config, &["go"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("rm require approval"),
        "{}",
        stderr(&out)
    );
    assert!(s.inputs().is_empty(), "the model must not be called");
}

#[test]
fn tool_names_that_reach_the_same_tool_are_a_config_error() {
    // `x` needs no approval, `functions.x` does; a call to `functions.x` is looked up as `x`.
    for (a, b) in [
        ("x", "functions.x"),
        ("functions.x", "x"),
        ("x", "x:0"),
        ("x", "functions.x:0"),
        ("x", " x"),
        ("functions.functions.x", "x"),
    ] {
        let s = Setup::new("alias");
        let rest = format!(
            r#"
[approval]
command = ["python3", "{{bin}}/approval_hook.py", "deny", "{{dir}}/hook.log"]

[[tools]]
name = {}
read_only = true
command = ["python3", "{{bin}}/record_tool.py", "{{dir}}/tool.log"]

[[tools]]
name = {}
command = ["python3", "{{bin}}/record_tool.py", "{{dir}}/tool.log"]
"#,
            quoted(a),
            quoted(b)
        );
        let config = s.config(&[call("functions.x", json!({}), true)], "", &rest);
        let out = s.run(&config, &["go"]);
        assert_eq!(code(&out), 2, "{a:?} {b:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("{a:?} and {b:?}")),
            "{}",
            stderr(&out)
        );
        assert!(s.inputs().is_empty(), "the model must not be called");
        assert!(s.log("tool.log").is_empty());
    }
}

#[test]
fn a_tool_named_with_the_functions_prefix_is_reached_by_that_name() {
    let s = Setup::new("prefixed");
    let rest = ECHO_TOOL.replace("name = \"echo\"", "name = \"functions.echo\"");
    let replies = [call("functions.echo", json!({"text": "hi"}), true)];
    let config = s.config(&replies, "", &rest);
    let out = s.run(&config, &["go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "echo: hi\n");
}

#[test]
fn a_bad_tool_timeout_or_key_is_refused_like_a_bad_loop_timeout() {
    // The values `[loop] timeout` refuses were taken as "no timeout given" in a tool.
    for value in ["nan", "inf", "-1", "0", "\"1\"", "1e300", "true"] {
        let s = Setup::new("tool-timeout");
        for (rest, key) in [
            (format!("{ECHO_TOOL}timeout = {value}\n"), "timeout"),
            (format!("[loop]\ntimeout = {value}\n{ECHO_TOOL}"), "timeout"),
        ] {
            let config = s.config(&[echo("hi", true)], "", &rest);
            let out = s.run(&config, &["go"]);
            assert_eq!(code(&out), 2, "{value}: {}", stderr(&out));
            assert!(stderr(&out).contains(key), "{value}: {}", stderr(&out));
            assert!(
                s.inputs().is_empty(),
                "{value}: the model must not be called"
            );
        }
    }
    let s = Setup::new("tool-key");
    for typo in ["timout = 5", "read_olny = true", "requires_aproval = false"] {
        let config = s.config(&[echo("hi", true)], "", &format!("{ECHO_TOOL}{typo}\n"));
        let out = s.run(&config, &["go"]);
        assert_eq!(code(&out), 2, "{typo}: {}", stderr(&out));
        let key = typo.split(' ').next().unwrap();
        assert!(
            stderr(&out).contains(&format!("unknown key \"{key}\"")),
            "{}",
            stderr(&out)
        );
        assert!(s.inputs().is_empty());
    }
    let config = s.config(&[echo("hi", true)], "", "[loop]\nmax_output = 0\n");
    let out = s.run(&config, &["go"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("max_output"), "{}", stderr(&out));
}

// 7. Tools: stdin only, bounded output, failures reported.

#[test]
fn shell_syntax_in_parameters_reaches_the_tool_unchanged_and_runs_nothing() {
    let s = Setup::new("injection");
    let pwned = s.path_str("pwned");
    let text = format!("$(touch {pwned}); touch {pwned}2 && `touch {pwned}3` | x > y");
    let replies = [echo(&text, false), "Done.".into()];
    let config = s.config(&replies, "", &approved_echo("allow"));
    let out = s.run(&config, &["go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let log = s.log("tool.log");
    assert_eq!(log.len(), 1);
    let got: Value = serde_json::from_str(log[0]["stdin"].as_str().unwrap()).unwrap();
    assert_eq!(got, json!({ "text": text }));
    // argv is the config's, untouched by the model.
    assert_eq!(log[0]["argv"], json!([s.path_str("tool.log")]));
    assert_eq!(s.log("hook.log")[0]["parameters"]["text"], text.as_str());
    for suffix in ["", "2", "3"] {
        assert!(!Path::new(&format!("{pwned}{suffix}")).exists());
    }
}

#[test]
fn a_chatty_tool_does_not_deadlock_and_its_output_is_bounded() {
    let s = Setup::new("chatty");
    let rest = r#"
[loop]
max_output = 4096

[[tools]]
name = "chatty"
read_only = true
command = ["python3", "{bin}/chatty_tool.py"]
"#;
    let replies = [call("chatty", json!({}), false), "Quiet now.".into()];
    let config = s.config(&replies, "", rest);
    let start = Instant::now();
    let out = s.run(&config, &["go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(start.elapsed() < Duration::from_secs(20));
    let result: Value =
        serde_json::from_str(s.messages(1)[3]["content"].as_str().unwrap()).unwrap();
    assert_eq!(result["ok"], true);
    assert_eq!(result["stdout"].as_str().unwrap().len(), 4096);
    assert_eq!(result["stderr"].as_str().unwrap().len(), 4096);
    assert_eq!(
        result["stderr_truncated"],
        "only the first 4096 of 8388608 bytes are shown"
    );
    assert_eq!(
        result["stdout_truncated"],
        "only the first 4096 of 1048581 bytes are shown"
    );
}

#[test]
fn a_failing_tool_is_reported_to_the_model_and_the_loop_goes_on() {
    let s = Setup::new("failing-tool");
    let rest = format!(
        "{ECHO_TOOL}
[[tools]]
name = \"broken\"
read_only = true
command = [\"sh\", \"{{bin}}/failing_tool.sh\"]

[[tools]]
name = \"missing\"
read_only = true
command = [{}]
",
        quoted(&script_without_interpreter(&s, "missing.sh"))
    );
    let replies = [
        call("broken", json!({}), false),
        call("missing", json!({}), false),
        echo("still here", false),
        "Done despite failures.".into(),
    ];
    let config = s.config(&replies, "", &rest);
    let out = s.run(&config, &["go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "Done despite failures.\n");
    let messages = s.messages(3);
    let broken: Value = serde_json::from_str(messages[3]["content"].as_str().unwrap()).unwrap();
    assert_eq!(broken["ok"], false);
    assert_eq!(broken["exit_code"], 3);
    assert_eq!(broken["stderr"], "failing_tool: disk on fire\n");
    assert_eq!(broken["error"], "the tool failed: exit status 3");
    let missing: Value = serde_json::from_str(messages[5]["content"].as_str().unwrap()).unwrap();
    assert_eq!(missing["ok"], false);
    assert!(
        missing["error"]
            .as_str()
            .unwrap()
            .contains("could not start"),
        "{missing}"
    );
    assert_eq!(s.log("tool.log").len(), 1);
}

// 8. A failing LLM command.

#[test]
fn a_failing_model_is_retried_with_backoff() {
    let s = Setup::new("llm-retry");
    let replies = ["!fail".into(), "!fail".into(), "Recovered.".into()];
    let config = s.config(
        &replies,
        "retries = 2\nretry_delay = 0.2\nmax_retry_delay = 0.3",
        "",
    );
    let start = Instant::now();
    let out = s.run(&config, &["go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "Recovered.\n");
    assert_eq!(s.inputs().len(), 3);
    // Backoff: 0.2 s, then 0.4 s capped at 0.3 s.
    assert!(
        start.elapsed() >= Duration::from_millis(500),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn a_model_that_keeps_failing_exits_8() {
    let s = Setup::new("llm-fail");
    let replies: Vec<String> = (0..5).map(|_| "!fail".into()).collect();
    let config = s.config(&replies, "retries = 2\nretry_delay = 0.01", "");
    let out = s.run(&config, &["go"]);
    assert_eq!(code(&out), 8, "{}", stderr(&out));
    assert_eq!(s.inputs().len(), 3, "one call and two retries");
    assert!(stderr(&out).contains("failed 3 times"), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("failing as scripted"),
        "{}",
        stderr(&out)
    );
}

/// An executable script whose interpreter does not exist: it passes every check made before
/// the run, and fails only when started (ENOENT from exec).
fn script_without_interpreter(s: &Setup, name: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = s.path(name);
    std::fs::write(&path, "#!/nonexistent/toolmend-interpreter\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

#[test]
fn a_model_command_that_cannot_start_is_a_config_error_at_once() {
    // It was retried (here 2 retries, 1 s apart), then the run failed with exit 8.
    let s = Setup::new("llm-missing");
    std::fs::write(s.path("not-executable"), "#!/bin/sh\necho hi\n").unwrap();
    for program in [
        "/nonexistent/model".to_owned(),
        "toolmend-no-such-model".to_owned(),
        s.path_str("not-executable"),
        s.dir.display().to_string(),
    ] {
        let config = s.path("agent.toml");
        std::fs::write(
            &config,
            format!(
                "[llm]\ncommand = [{}]\nretries = 2\nretry_delay = 1\n",
                quoted(&program)
            ),
        )
        .unwrap();
        let start = Instant::now();
        let out = s.run(&config, &["go"]);
        assert_eq!(code(&out), 2, "{program}: {}", stderr(&out));
        assert!(start.elapsed() < Duration::from_secs(1), "{program}");
        let err = stderr(&out);
        assert!(err.contains("[llm] command"), "{err}");
        assert!(
            err.contains(&format!("{program:?} cannot be started")),
            "{err}"
        );
    }
    // One that fails only when started (its interpreter is missing) stops the run at once too.
    let program = script_without_interpreter(&s, "model.sh");
    let config = s.path("agent.toml");
    std::fs::write(
        &config,
        format!(
            "[llm]\ncommand = [{}]\nretries = 2\nretry_delay = 1\n",
            quoted(&program)
        ),
    )
    .unwrap();
    let start = Instant::now();
    let (out, transcript) = s.run_with_transcript(&config);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(start.elapsed() < Duration::from_secs(1));
    assert!(stderr(&out).contains("could not start"), "{}", stderr(&out));
    assert!(stderr(&out).contains("not retried"), "{}", stderr(&out));
    let events = events(&transcript);
    assert_eq!(
        types(&events),
        ["run.started", "llm.request", "llm.response", "run.finished"]
    );
    assert_eq!(events[3]["data"]["status"], "config_error");
}

#[test]
fn a_hook_or_tool_command_that_cannot_start_is_a_config_error() {
    let s = Setup::new("commands-missing");
    for rest in [
        approved_echo("allow").replace(
            "\"python3\", \"{bin}/approval_hook.py\", \"allow\", \"{dir}/hook.log\"",
            "\"/nonexistent/hook\"",
        ),
        ECHO_TOOL.replace(
            "\"python3\", \"{bin}/record_tool.py\", \"{dir}/tool.log\"",
            "\"toolmend-no-such-tool\"",
        ),
    ] {
        let config = s.config(&[echo("hi", true)], "", &rest);
        let out = s.run(&config, &["go"]);
        assert_eq!(code(&out), 2, "{}", stderr(&out));
        assert!(
            stderr(&out).contains("cannot be started"),
            "{}",
            stderr(&out)
        );
        assert!(s.inputs().is_empty(), "the model must not be called");
    }
    // --dry-run starts nothing, so it does not ask.
    let out = s.run(&s.path("agent.toml"), &["--dry-run", "go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

// 9. Text input.

#[test]
fn text_input_flattens_the_conversation() {
    let s = Setup::new("text-input");
    let replies = [echo("hi", false), "Done.".into()];
    let config = s.config(&replies, "input = \"text\"", ECHO_TOOL);
    let out = s.run(&config, &["say hi"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let inputs = s.inputs();
    assert!(
        inputs[0].starts_with("System:\nYou can call tools."),
        "{}",
        inputs[0]
    );
    assert!(inputs[0].contains("## echo"));
    assert!(
        inputs[0].ends_with("\n\nUser:\nsay hi\n\nAssistant:\n"),
        "{}",
        inputs[0]
    );
    let second = &inputs[1];
    let tail = format!(
        "User:\nsay hi\n\nAssistant:\n{}\n\nTool result (echo):\n",
        echo("hi", false)
    );
    assert!(second.contains(&tail), "{second}");
    assert!(second.contains("\"stdout\":\"echo: hi\\n\""), "{second}");
    assert!(second.ends_with("\n\nAssistant:\n"));
}

// The examples: the OpenAI-compatible LLM command against a fake server.

/// Kills the fake server when the test ends, passed or not.
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_openai_example_talks_to_a_chat_completions_endpoint() {
    use std::io::BufRead;
    let s = Setup::new("openai");
    let replies = [echo("via http", false), "Echoed over HTTP.".into()];
    std::fs::write(s.path("server-replies.txt"), replies.join("\n=====\n")).unwrap();
    let mut child = Command::new("python3")
        .arg(bin("fake_openai_server.py"))
        .arg(s.path("server-replies.txt"))
        .arg(s.path("requests.log"))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut port = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut port)
        .unwrap();
    let _server = Server(child);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/llm/openai_chat.py");
    let config = s.path("agent.toml");
    let llm = format!(
        "[llm]\ncommand = [\"python3\", {}, \"--model\", \"test-model\", \"--base-url\", \"http://127.0.0.1:{}/v1\"]\n",
        quoted(&script.display().to_string()),
        port.trim()
    );
    let rest = ECHO_TOOL
        .replace("{bin}", &bin(""))
        .replace("{dir}", &s.dir.display().to_string());
    std::fs::write(&config, format!("{llm}{rest}")).unwrap();
    let out = toolmend()
        .env("OPENAI_API_KEY", "sk-test")
        .args(["loop", "--config"])
        .arg(&config)
        .arg("echo via http")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "Echoed over HTTP.\n");
    let requests = s.log("requests.log");
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0]["path"], "/v1/chat/completions");
    assert_eq!(requests[0]["authorization"], "Bearer sk-test");
    assert_eq!(requests[0]["body"]["model"], "test-model");
    let messages = requests[1]["body"]["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    // The tool result goes as a user turn: the API has no tool_call_id for it.
    assert_eq!(roles, ["system", "user", "assistant", "user"]);
    let result = messages[3]["content"].as_str().unwrap();
    assert!(result.starts_with("Result of the tool echo:\n"), "{result}");
    assert!(result.contains("echo: via http"), "{result}");
    assert_eq!(s.log("tool.log").len(), 1);
}

#[test]
fn the_example_configs_are_valid() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (config, input_starts) in [
        ("examples/openai.toml", "{\"messages\":"),
        ("examples/llm-cli.toml", "System:\n"),
    ] {
        let out = toolmend()
            .current_dir(root)
            .args(["loop", "--config", config, "--dry-run", "hi"])
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{config}: {}", stderr(&out));
        let text = stdout(&out);
        assert!(text.contains("## read_file"), "{config}");
        let (_, input) = text.split_once("\n# first LLM input").unwrap();
        let input = input.split_once('\n').unwrap().1;
        assert!(input.starts_with(input_starts), "{config}: {input}");
    }
}

#[test]
fn the_offline_demo_runs() {
    // The same run as `make demo-loop`; its paths are relative to the repository root.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let work = root.join("target/demo-loop");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let out = toolmend()
        .current_dir(root)
        .args([
            "loop",
            "--config",
            "fixtures/demo/loop/agent.toml",
            "--json",
        ])
        .arg("Count the words of: the quick brown fox jumps over the lazy dog.")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let record: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(record["status"], "terminated");
    assert_eq!(
        record["answer"],
        "saved the note to target/demo-loop/note.txt\n"
    );
    assert_eq!(record["iterations"], 3);
    assert_eq!(
        std::fs::read_to_string(work.join("note.txt")).unwrap(),
        "The sentence has 9 words.\n"
    );
}

// 10. Transcript, --json, --dry-run, --verbose.

fn events(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

#[test]
fn transcript_records_every_event_and_exactly_one_finish() {
    let s = Setup::new("transcript");
    // Cut off after the tool's name and the comma that makes the name certain (a name whose
    // closing quote ends the text could still be `echo"…`).
    let replies = [
        "{\"tool\": \"echo\", ".into(),
        echo("hi", false),
        "Done.".into(),
    ];
    let config = s.config(&replies, "", &approved_echo("allow"));
    let (out, transcript) = s.run_with_transcript(&config);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let events = events(&transcript);
    // One iteration a line.
    assert_eq!(
        types(&events).join(" "),
        concat!(
            "run.started ",
            "llm.request llm.stream llm.response parse.error ",
            "llm.request llm.stream llm.stream llm.response tool.call approval.decided tool.result ",
            "llm.request llm.response ",
            "run.finished"
        )
    );
    // The calls as they were read: the cut-off one announced, never ended; the
    // next announced, then its parameters complete.
    assert_eq!(events[2]["data"]["event"], "call_start");
    assert_eq!(events[2]["data"]["tool"], "echo");
    assert_eq!(events[6]["data"]["event"], "call_start");
    assert_eq!(events[7]["data"]["event"], "arguments");
    assert_eq!(events[7]["data"]["path"], "");
    assert_eq!(events[7]["data"]["members"], json!({"text": "hi"}));
    assert_eq!(events[7]["data"]["open"], Value::Null);
    assert_eq!(events[7]["data"]["iteration"], 2);
    assert_eq!(events[4]["data"]["code"], "incomplete_call");
    assert_eq!(events[10]["data"]["decision"], "allow");
    assert_eq!(events[11]["data"]["result"]["stdout"], "echo: hi\n");
    let finished = &events[14]["data"];
    assert_eq!(finished["status"], "answered");
    assert_eq!(finished["answer"], "Done.");
    assert_eq!(finished["iterations"], 3);
    assert_eq!(finished["tool_calls"], 1);
    for event in &events {
        assert!(event["elapsed_ms"].is_u64(), "{event}");
    }
}

/// A transcript that cannot be written is a failure (exit 2), and the run
/// stops before anything more runs: no model call, no tool.
#[test]
fn an_unwritable_transcript_stops_the_run_with_2() {
    if !Path::new("/dev/full").exists() {
        eprintln!("skipped: no /dev/full on this system");
        return;
    }
    let s = Setup::new("transcript-full");
    let config = s.config(&[echo("hi", false), "Done.".into()], "", ECHO_TOOL);
    for extra in [&[][..], &["--json"][..]] {
        let mut args = vec!["go", "--transcript", "/dev/full"];
        args.extend_from_slice(extra);
        let out = s.run(&config, &args);
        assert_eq!(code(&out), 2, "{extra:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("writing the transcript failed"),
            "{}",
            stderr(&out)
        );
        assert!(s.log("tool.log").is_empty(), "no tool runs");
        assert!(s.inputs().is_empty(), "the model is not called");
        if !extra.is_empty() {
            let record: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
            assert_eq!(record["status"], "output_failed");
        }
    }
}

#[test]
fn a_failed_run_also_ends_its_transcript_with_one_finish() {
    let s = Setup::new("transcript-deny");
    let replies = [echo("hi", false)];
    let config = s.config(&replies, "", &approved_echo("deny"));
    let (out, transcript) = s.run_with_transcript(&config);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let events = events(&transcript);
    assert_eq!(
        types(&events).join(" "),
        concat!(
            "run.started ",
            "llm.request llm.stream llm.stream llm.response tool.call approval.decided ",
            "run.finished"
        )
    );
    assert_eq!(events[6]["data"]["decision"], "deny");
    assert_eq!(events[7]["data"]["status"], "denied");
}

#[test]
fn verbose_writes_events_to_stderr() {
    let s = Setup::new("verbose");
    let config = s.config(&["Hi.".into()], "", ECHO_TOOL);
    let out = s.run(&config, &["go", "--verbose"]);
    assert_eq!(code(&out), 0);
    let events = events(&stderr(&out));
    assert_eq!(events.first().unwrap()["type"], "run.started");
    assert_eq!(events.last().unwrap()["type"], "run.finished");
}

/// `--verbose` promises the events on stderr. With stderr closed (`2>&-`)
/// they cannot be shown: the run fails closed with 2 before anything runs (no model call, no
/// approval-gated tool), and `--json` says `output_failed`.
#[test]
fn verbose_with_stderr_closed_runs_nothing_and_exits_2() {
    let s = Setup::new("verbose-closed");
    let replies = [echo("hi", false), "Done.".into()];
    let config = s.config(&replies, "", &approved_echo("allow"));
    for extra in [&[][..], &["--json"][..]] {
        let mut cmd = Command::new("sh");
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .arg("-c")
            .arg("exec \"$0\" \"$@\" 2>&-")
            .arg(env!("CARGO_BIN_EXE_toolmend"))
            .args(["loop", "--config"])
            .arg(&config)
            .args(["go", "--verbose"])
            .args(extra)
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        let out = cmd.output().unwrap();
        assert_eq!(code(&out), 2, "{extra:?}: {}", stdout(&out));
        assert!(
            s.log("tool.log").is_empty(),
            "the approval-gated tool must not run"
        );
        assert!(s.inputs().is_empty(), "the model is not called");
        if !extra.is_empty() {
            let record: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
            assert_eq!(record["status"], "output_failed");
        }
    }
}

/// `--verbose` with stderr a pipe whose reader has gone: `output_failed`,
/// and the exit code says so (2), not 0.
#[test]
fn verbose_into_a_pipe_without_reader_exits_2() {
    let s = Setup::new("verbose-epipe");
    let replies = [echo("hi", false), "Done.".into()];
    let config = s.config(&replies, "", &approved_echo("allow"));
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = common::command()
        .arg("loop")
        .arg("--config")
        .arg(&config)
        .args(["go", "--verbose", "--json"])
        .stderr(writer)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&out), 2, "{}", stdout(&out));
    let record: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(record["status"], "output_failed");
    assert!(
        s.log("tool.log").is_empty(),
        "the approval-gated tool must not run"
    );
}

#[test]
fn json_prints_one_final_record() {
    let s = Setup::new("json");
    let replies = [echo("x", false), "All good.".into()];
    let config = s.config(&replies, "", ECHO_TOOL);
    let out = s.run(&config, &["go", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let record: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let keys: Vec<&String> = record.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["status", "answer", "iterations", "tool_calls", "elapsed_ms"]
    );
    assert_eq!(record["status"], "answered");
    assert_eq!(record["answer"], "All good.");
    assert_eq!(record["iterations"], 2);
    assert_eq!(record["tool_calls"], 1);

    let s = Setup::new("json-fail");
    let replies: Vec<String> = (0..3).map(|_| "!fail".into()).collect();
    let config = s.config(&replies, "retries = 0", "");
    let out = s.run(&config, &["go", "--json"]);
    assert_eq!(code(&out), 8);
    let record: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(record["status"], "llm_failed");
    assert_eq!(record["answer"], Value::Null);
    assert!(record["error"].as_str().unwrap().contains("failed 1 times"));
}

#[test]
fn dry_run_prints_the_prompt_and_first_input_and_runs_nothing() {
    let s = Setup::new("dry-run");
    let config = s.config(&[echo("hi", true)], "", &approved_echo("allow"));
    let out = s.run(&config, &["say hi", "--dry-run"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with("# system prompt\nYou can call tools."),
        "{text}"
    );
    assert!(
        text.contains("\n# first LLM input (stdin of [\"python3\""),
        "{text}"
    );
    let input_line = text.lines().last().unwrap();
    let input: Value = serde_json::from_str(input_line).unwrap();
    assert_eq!(input["messages"][1]["content"], "say hi");
    assert!(s.inputs().is_empty(), "the model must not be called");
    assert!(s.log("hook.log").is_empty());
    assert!(s.log("tool.log").is_empty());
}

// Config and usage errors.

#[test]
fn config_and_usage_errors_exit_2() {
    let s = Setup::new("config-errors");
    let typo = s.config(&["x".into()], "timout = 3", "");
    let out = s.run(&typo, &["go"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("unknown field `timout`"),
        "{}",
        stderr(&out)
    );

    let out = s.run(&s.path("missing.toml"), &["go"]);
    assert_eq!(code(&out), 2);

    let shell_string = s.path("shell.toml");
    std::fs::write(&shell_string, "[llm]\ncommand = \"llm -m x\"\n").unwrap();
    assert_eq!(code(&s.run(&shell_string, &["go"])), 2);

    let good = s.config(&["x".into()], "", "");
    let out = s.run(&good, &["   "]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("prompt is empty"), "{}", stderr(&out));
    assert!(s.inputs().is_empty());
}

// Signals.

fn interrupt(signal: i32) {
    let s = Setup::new(&format!("signal-{signal}"));
    let marker = s.path("survivor");
    let replies = [call("slow", json!({}), false), "never".into()];
    let config = s.config(&replies, "", &background_tool(&marker, ""));
    let transcript = s.path("run.jsonl");
    let start = Instant::now();
    let mut child = common::command()
        .args(["loop", "--config"])
        .arg(&config)
        .arg("--transcript")
        .arg(&transcript)
        .arg("go")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the tool runs.
    while !std::fs::read_to_string(&transcript)
        .unwrap_or_default()
        .contains("tool.call")
    {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the tool never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: sends a signal to the child we spawned.
    unsafe {
        libc::kill(child.id() as libc::pid_t, signal);
    }
    let sent = Instant::now();
    let status = child.wait().unwrap();
    assert!(sent.elapsed() < Duration::from_secs(3));
    assert_eq!(status.code(), Some(130));
    let events = events(&std::fs::read_to_string(&transcript).unwrap());
    assert_eq!(events.last().unwrap()["data"]["status"], "interrupted");
    assert_no_survivor(&marker);
}

#[test]
fn sigint_kills_the_children_and_exits_130() {
    interrupt(libc::SIGINT);
}

#[test]
fn sigterm_kills_the_children_and_exits_130() {
    interrupt(libc::SIGTERM);
}

// Numbers lost their value on the way to the tool, and a call the JSON
// parser refused (`1e400`, nesting past 127) turned into text beside a call that then ran.

#[test]
fn the_tool_the_hook_and_the_transcript_get_numbers_as_the_model_wrote_them() {
    let s = Setup::new("exact-numbers");
    let parameters =
        r#"{"text":"n","id":123456789012345678901234567890,"x":1E5,"z":-0,"big":1e400,"p":1.50}"#;
    let reply = format!(r#"{{"tool": "echo", "parameters": {parameters}, "terminate": true}}"#);
    let config = s.config(&[reply], "", &approved_echo("allow"));
    let (out, transcript) = s.run_with_transcript(&config);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let tool = s.log("tool.log");
    assert_eq!(tool.len(), 1);
    assert_eq!(
        tool[0]["stdin"],
        format!("{parameters}\n"),
        "the tool's stdin"
    );
    let hook = std::fs::read_to_string(s.path("hook.log")).unwrap();
    assert!(
        hook.contains(&format!(r#""parameters":{parameters}"#)),
        "the hook's stdin: {hook}"
    );
    let call = transcript
        .lines()
        .find(|l| l.contains(r#""type":"tool.call""#))
        .unwrap();
    assert!(
        call.contains(&format!(r#""parameters":{parameters}"#)),
        "{call}"
    );
}

#[test]
fn a_call_the_old_parser_refused_is_no_longer_dropped_beside_a_safe_one() {
    let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
    for second in [
        r#"{"text": "x", "n": 1e400}"#.to_owned(),
        format!(r#"{{"text": "x", "d": {deep}}}"#),
    ] {
        let s = Setup::new("not-reduced");
        let reply = format!(
            "{}\n{{\"tool\": \"echo\", \"parameters\": {second}, \"terminate\": true}}",
            echo("safe", false)
        );
        let config = s.config(&[reply, "Done.".into()], "", ECHO_TOOL);
        let (out, transcript) = s.run_with_transcript(&config);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert_eq!(stdout(&out), "Done.\n");
        assert!(s.log("tool.log").is_empty(), "no call of the two ran");
        let events = events(&transcript);
        let error = events.iter().find(|e| e["type"] == "parse.error").unwrap();
        assert_eq!(error["data"]["code"], "concatenated", "{error}");
        // One call nested 200 deep on its own runs, its parameters whole.
        let s = Setup::new("deep-call");
        let reply =
            format!("{{\"tool\": \"echo\", \"parameters\": {second}, \"terminate\": true}}");
        let config = s.config(&[reply], "", ECHO_TOOL);
        let out = s.run(&config, &["go"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let tool = s.log("tool.log");
        assert_eq!(tool.len(), 1);
        let sent = tool[0]["stdin"].as_str().unwrap();
        assert_eq!(
            sent,
            format!("{}\n", second.replace(": ", ":").replace(", ", ","))
        );
    }
}

/// A reply that mixes call formats is not reduced to the first format's
/// calls (the other one fell into the text and the first ran alone); the loop sees both, as
/// for any two calls in one reply.
#[test]
fn a_reply_mixing_call_formats_is_not_reduced_to_one_call() {
    let s = Setup::new("mixed-formats");
    let reply = format!(
        "<tool_call>{}</tool_call>\nthen [TOOL_CALLS][{}]",
        echo("one", false),
        echo("two", false)
    );
    let config = s.config(&[reply, "Done.".into()], "", ECHO_TOOL);
    let (out, transcript) = s.run_with_transcript(&config);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "Done.\n");
    assert!(s.log("tool.log").is_empty(), "neither call ran alone");
    let events = events(&transcript);
    let error = events.iter().find(|e| e["type"] == "parse.error").unwrap();
    assert_eq!(error["data"]["code"], "concatenated", "{error}");
}
