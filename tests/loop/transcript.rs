//! The transcript, --json, --dry-run, --verbose; config and usage errors.

use super::*;

// 10. Transcript, --json, --dry-run, --verbose.

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
