//! A text reply is the answer; multi-step runs; what the first input holds.

use super::*;

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

/// An LLM command that printed the server's error body (a curl-like command exits 0) gave no
/// reply: the run does not end with the error's JSON as its answer (it did), and the call is a
/// failed LLM call, retried with backoff as one that exits non-zero is; the model is not told
/// to correct a reply it never wrote (it was, as a malformed reply), and a server that keeps
/// failing ends the run with exit 8, `llm_failed`, in the server's words.
#[test]
fn a_server_error_printed_by_the_llm_command_is_a_failed_call() {
    let s = Setup::new("server-error");
    let error = r#"{"error": {"message": "Rate limit reached", "type": "requests"}}"#;
    let config = s.config(
        &[error.into(), "Recovered.".into()],
        "retries = 2\nretry_delay = 0.01",
        ECHO_TOOL,
    );
    let (out, transcript) = s.run_with_transcript(&config);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "Recovered.\n");
    assert_eq!(s.inputs().len(), 2);
    let events: Vec<Value> = transcript
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .collect();
    assert!(
        !events.iter().any(|e| e["type"] == "parse.error"),
        "{transcript}"
    );
    let failed: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "llm.response" && e["data"]["ok"] == false)
        .collect();
    assert_eq!(failed.len(), 1, "{transcript}");
    assert_eq!(
        failed[0]["data"]["error"],
        "the server sent an error: Rate limit reached (the command printed it and exited 0)"
    );
    // The second request is the first again: no error reply, no correction.
    assert_eq!(s.messages(1), s.messages(0));

    let s = Setup::new("server-error-kept");
    let replies: Vec<String> = (0..4).map(|_| error.to_owned()).collect();
    let config = s.config(&replies, "retries = 2\nretry_delay = 0.01", ECHO_TOOL);
    let out = s.run(&config, &["go"]);
    assert_eq!(code(&out), 8, "{}", stderr(&out));
    assert_eq!(s.inputs().len(), 3, "one call and two retries");
    assert!(
        stderr(&out).contains("the server sent an error: Rate limit reached"),
        "{}",
        stderr(&out)
    );
}

/// Groq refuses a call its parser cannot read (`tool_use_failed`, HTTP 400) and sends the
/// model's reply in `error.failed_generation`: that reply is what toolmend mends, so the call in
/// it runs (its single quotes mended), where a failed LLM call was retried.
#[test]
fn a_reply_the_server_refused_is_read_from_failed_generation() {
    let s = Setup::new("failed-generation");
    let refused = json!({"error": {"message": "Failed to call a function. Please adjust your prompt.",
        "type": "invalid_request_error", "code": "tool_use_failed",
        "failed_generation": "{\"tool\": \"echo\", \"parameters\": {\"text\": 'hi'}, \"terminate\": true}"}});
    let config = s.config(&[refused.to_string()], "retries = 0", ECHO_TOOL);
    let out = s.run(&config, &["go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(s.inputs().len(), 1);
    assert_eq!(s.log("tool.log").len(), 1, "the call ran");
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

/// An answer the API cut (its stop reason: `finish_reason: "length"`) is still the answer, as
/// far as it came (exit 0), but the run says it may be incomplete: a warning on stderr and in
/// `--json`'s `error`. An answer that stopped on its own says nothing.
#[test]
fn an_answer_cut_by_the_stop_reason_comes_with_a_warning() {
    // A run whose LLM answers `content` with `finish_reason`: its output and `--json` record.
    let answered = |name: &str, finish_reason: &str, content: &str| {
        let s = Setup::new(name);
        let response = json!({"choices": [{"index": 0, "finish_reason": finish_reason,
            "message": {"role": "assistant", "content": content}}]});
        let config = s.config(&[response.to_string()], "", ECHO_TOOL);
        let out = s.run(&config, &["go", "--json"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let record: Value = serde_json::from_str(&stdout(&out)).unwrap();
        (out, record)
    };

    let cut = "The three largest files are a.log, b.log and";
    let (out, record) = answered("answer-cut", "length", cut);
    assert_eq!(record["status"], "answered");
    assert_eq!(record["answer"], cut);
    assert_eq!(
        record["error"],
        "the answer may be incomplete: the API's stop reason says the output was cut: finish_reason \"length\""
    );
    assert!(
        stderr(&out).contains("toolmend: warning: the answer may be incomplete"),
        "{}",
        stderr(&out)
    );

    let (out, record) = answered("answer-stop", "stop", "Done.");
    assert_eq!(record["answer"], "Done.");
    assert!(record.get("error").is_none_or(Value::is_null), "{record}");
    assert_eq!(stderr(&out), "");
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
