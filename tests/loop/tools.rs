//! Tools get their parameters on stdin, bounded output; a failing LLM command; text input.

use super::*;

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
    // (A run blocked on the tool's full pipes would be killed after 30 s: no exit 0.)
    let out = s.run(&config, &["go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
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

#[test]
fn a_model_command_that_cannot_start_is_a_config_error_at_once() {
    // It was retried (here 2 retries, 100 s apart), then the run failed with exit 8. Not
    // retried now: a retry would keep the run past the 30 s after which it is killed, which
    // is no exit 2.
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
                "[llm]\ncommand = [{}]\nretries = 2\nretry_delay = 100\nmax_retry_delay = 100\n",
                quoted(&program)
            ),
        )
        .unwrap();
        let out = s.run(&config, &["go"]);
        assert_eq!(code(&out), 2, "{program}: {}", stderr(&out));
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
            "[llm]\ncommand = [{}]\nretries = 2\nretry_delay = 100\nmax_retry_delay = 100\n",
            quoted(&program)
        ),
    )
    .unwrap();
    let (out, transcript) = s.run_with_transcript(&config);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
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
