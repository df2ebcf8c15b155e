//! Closed stdout, man pages, terminals and hints for a first run, error prefixes.

use super::*;

/// Runs toolmend with `stdin` and a stdout whose reading end is already closed, so every write
/// fails with EPIPE whatever the output's size (unlike `| true`, which races the writer).
fn run_with_closed_stdout(args: &[&str], stdin: &[u8]) -> std::process::Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut child = common::command()
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::piped())
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    // toolmend may stop reading once its output is gone: a failed write here is fine.
    let _ = input.write_all(stdin);
    drop(input);
    child.wait_with_output().unwrap()
}

#[test]
fn every_command_ends_quietly_when_stdout_is_closed() {
    let lines = "{\"a\":1}\n[1, 2,]\n".repeat(2000);
    let reply = "<tool_call>{\"name\":\"ls\",\"arguments\":{}}</tool_call>";
    let cases: &[(&[&str], &str)] = &[
        (&["completions", "zsh"], ""),
        (&["completions", "bash"], ""),
        (&["completions", "fish"], ""),
        (&["man"], ""),
        (&["man", "loop"], ""),
        (&["--help"], ""),
        (&["calls", "--help"], ""),
        (&["-h"], ""),
        (&["--version"], ""),
        (&["prompt", "--tools", "examples/openai.toml"], ""),
        (&["check", "fixtures/repair"], ""),
        (&[], &lines),
        (&["args", "--records"], &lines),
        (&["repair"], &lines),
        (&["repair", "--threads", "1"], &lines),
        (&["calls"], reply),
        (&["calls", "--input", "lines", "--records"], &lines),
        (
            &[
                "loop",
                "--config",
                "fixtures/demo/loop/agent.toml",
                "--dry-run",
                "hi",
            ],
            "",
        ),
    ];
    let mut failures = Vec::new();
    for (args, stdin) in cases {
        let out = run_with_closed_stdout(args, stdin.as_bytes());
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.code() != Some(0) || !stderr.is_empty() {
            let first = stderr.lines().take(3).collect::<Vec<_>>().join(" | ");
            failures.push(format!(
                "toolmend {args:?}: {:?} {first}",
                out.status.code()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A closed stdout does not hide how the loop's run ended: its status is still the exit code.
#[test]
fn a_failed_loop_keeps_its_exit_status_when_stdout_is_closed() {
    let dir = TempDir::new("closed");
    let config = dir.join("agent.toml");
    std::fs::write(
        &config,
        "[llm]\ncommand = [\"false\"]\nretries = 0\n\n[loop]\ntimeout = 20\n",
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let out = run_with_closed_stdout(&["loop", "--config", config, "--json", "hi"], b"");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(8), "stderr: {stderr}");
    assert!(!stderr.contains("Broken pipe"), "stderr: {stderr}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Each command's man page lists only the flags that command accepts (no `-V, --version` on
/// commands that refuse it): every long flag on a page is in the command's own `--help`.
#[test]
fn man_pages_list_only_flags_their_command_accepts() {
    let commands = [
        "args",
        "repair",
        "calls",
        "prompt",
        "loop",
        "check",
        "completions",
        "man",
    ];
    for command in [None].into_iter().chain(commands.map(Some)) {
        let man_args: Vec<&str> = ["man"].into_iter().chain(command).collect();
        let page = toolmend().args(&man_args).assert().success();
        let page = String::from_utf8_lossy(&page.get_output().stdout)
            .replace("\\-", "-")
            .replace("\\fB", " ")
            .replace("\\fR", " ")
            .replace("\\fI", " ");
        let help_args: Vec<&str> = command.into_iter().chain(["--help"]).collect();
        let help = toolmend().args(&help_args).assert().success();
        let help = String::from_utf8_lossy(&help.get_output().stdout).into_owned();
        let flags: Vec<&str> = page
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .filter(|w| w.starts_with("--") && w.len() > 2)
            .collect();
        assert!(flags.contains(&"--help"), "{command:?}: no flags found");
        for flag in flags {
            assert!(
                help.contains(flag),
                "`toolmend man {}` lists {flag}, which the command does not take",
                command.unwrap_or("")
            );
        }
        if let Some(command) = command {
            toolmend().args([command, "--version"]).assert().code(2);
        }
    }
    toolmend().arg("--version").assert().success();
}

/// A file argument that does not exist but is spelled like a command was probably one.
#[test]
fn a_missing_file_named_like_a_command_suggests_it() {
    for (args, suggestion) in [
        (&["repiar"][..], Some("repair")),
        (&["args", "reapir"], Some("repair")),
        (&["calls", "cals"], Some("calls")),
        (&["check", "chekc"], Some("check")),
        (&["promtp"], Some("prompt")),
        (&["no-such-notes.txt"], None),
        (&["calls", "replies"], None),
    ] {
        let out = toolmend().args(args).write_stdin("").output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        match suggestion {
            Some(command) => assert!(
                stderr.contains(&format!("did you mean `{command}`?")),
                "{args:?}: {stderr}"
            ),
            None => assert!(!stderr.contains("did you mean"), "{args:?}: {stderr}"),
        }
    }
}

/// Runs toolmend with a pseudo-terminal as its stdin (python3's pty module), types `typed` and
/// then Ctrl-D, and returns (exit code, stdout, stderr).
fn run_at_a_terminal(args: &[&str], typed: &str) -> (i32, String, String) {
    let script = r#"
import json, os, pty, subprocess, sys
argv = json.loads(sys.argv[1])
master, slave = pty.openpty()
child = subprocess.Popen(argv, stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
os.close(slave)
os.write(master, sys.argv[2].encode() + b"\x04")
out, err = child.communicate(timeout=20)
print(json.dumps([child.returncode, out.decode(), err.decode()]))
"#;
    let argv: Vec<&str> = [env!("CARGO_BIN_EXE_toolmend")]
        .into_iter()
        .chain(args.iter().copied())
        .collect();
    let argv = serde_json::to_string(&argv).unwrap();
    serde_json::from_slice(&common::python3(&["-c", script, &argv, typed])).unwrap()
}

#[test]
fn a_terminal_on_stdin_gets_a_one_line_hint_and_input_still_works() {
    for (args, typed, expected) in [
        (&[][..], "{'a': 1}\n", "{\"a\":1}\n"),
        (&["repair"], "[1, 2,]\n", "[1,2]\n"),
        (
            &["calls", "--input", "lines"],
            "hello\n",
            "\"text\":\"hello\"",
        ),
        (
            &[
                "loop",
                "--config",
                "fixtures/demo/loop/agent.toml",
                "--dry-run",
            ],
            "What is in /tmp?\n",
            "What is in /tmp?",
        ),
    ] {
        let (code, stdout, stderr) = run_at_a_terminal(args, typed);
        assert_eq!(code, 0, "{args:?}: {stderr}");
        assert!(stdout.contains(expected), "{args:?}: {stdout}");
        let hint: Vec<&str> = stderr.lines().collect();
        assert_eq!(hint.len(), 1, "{args:?}: {stderr}");
        assert!(
            hint[0].starts_with("toolmend: reading ") && hint[0].contains("Ctrl-D"),
            "{args:?}: {stderr}"
        );
    }
    // Piped input gets no hint (the other tests check stderr stays empty).
    toolmend().write_stdin("{}\n").assert().success().stderr("");
}

/// `--schema`: a file that cannot be used is a usage error before any input is read; values are
/// coerced the same with any number of threads and on the path of lines of many megabytes.
#[test]
fn schema_file_problems_exit_2_and_threads_change_nothing() {
    let dir = TempDir::new("cli");
    let bad_json = dir.join("bad.json");
    std::fs::write(&bad_json, "{\"type\": ").unwrap();
    let bad_schema = dir.join("bad_schema.json");
    std::fs::write(&bad_schema, r#"{"type": "integr"}"#).unwrap();
    for (path, said) in [
        (dir.join("missing.json"), "missing.json"),
        (bad_json, "not valid JSON"),
        (bad_schema, "not a valid JSON Schema"),
    ] {
        toolmend()
            .arg("--schema")
            .arg(&path)
            .write_stdin("{\"a\":1}\n")
            .assert()
            .code(2)
            .stdout("")
            .stderr(predicate::str::contains(said));
    }
    let schema = dir.join("schema.json");
    std::fs::write(
        &schema,
        r#"{"type": "object", "properties": {"n": {"type": "integer"}, "huge": {"type": "string"}}}"#,
    )
    .unwrap();
    let mut data = String::new();
    for i in 0..20_000 {
        data.push_str(&format!("{{\"n\": \"{i}\"}}\n{{\"n\": \"x{i}\"}}\n"));
    }
    data.push_str(&format!(
        "{{\"huge\": \"{}\", \"n\": \"7\"}}\n",
        "y".repeat(5 << 20)
    ));
    let run = |threads: &str| {
        let out = toolmend()
            .args(["args", "--records", "--max-bytes", "8M", "--schema"])
            .arg(&schema)
            .args(["--threads", threads])
            .write_stdin(data.clone())
            .output()
            .unwrap();
        (out.stdout, out.status.code())
    };
    let one = run("1");
    assert_eq!(one.1, Some(1));
    let records = records(&one.0);
    assert_eq!(records.len(), 40_001);
    assert_eq!(records[2]["value"], json!({"n": 1}));
    assert_eq!(
        records[2]["repairs"],
        json!([{"kind": "schema_type", "path": "/n"}])
    );
    assert_eq!(records[3]["error"]["code"], "invalid_parameters");
    assert_eq!(records[3]["error"]["violations"][0]["path"], "/n");
    assert_eq!(records[40_000]["value"]["n"], 7);
    for threads in ["2", "0"] {
        assert!(one == run(threads), "--threads {threads} differs");
    }
}

// A first run by someone new to the tool: the input read in a way it was not meant gets a
// hint.

/// A pretty-printed document read line by line (the default) gets a hint on stderr, once,
/// naming `--input whole`; the records are what they were.
#[test]
fn a_multi_line_document_read_by_lines_gets_one_hint() {
    let pretty = "{\n  \"a\": 1,\n  \"b\": [1, 2]\n}\n";
    let out = toolmend()
        .args(["repair"])
        .write_stdin(pretty)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let hints: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("--input whole"))
        .collect();
    assert_eq!(hints.len(), 1, "{stderr}");
    assert!(hints[0].starts_with("toolmend: hint: "), "{stderr}");
    // Records unchanged: line 1 is `{` healed to `{}`.
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("{}\n"));
    // One document per line: no hint.
    toolmend()
        .args(["repair"])
        .write_stdin("{\"a\": 1}\n[1]\n")
        .assert()
        .success()
        .stderr("");
    // Read whole: no hint, one value.
    toolmend()
        .args(["repair", "--input", "whole"])
        .write_stdin(pretty)
        .assert()
        .success()
        .stdout("{\"a\":1,\"b\":[1,2]}\n")
        .stderr("");
}

/// Every error toolmend writes starts `toolmend: error: `, clap's usage errors included.
#[test]
fn every_error_has_one_prefix() {
    let cases: [&[&str]; 4] = [
        &["args", "--bogus"],
        &["args", "/no/such/file"],
        &["calls", "--format", "nope"],
        &["calls", "--tools", "/no/such/tools.json"],
    ];
    for args in cases {
        let out = toolmend().args(args).write_stdin("{}").output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with("toolmend: error: "),
            "{args:?}: {stderr}"
        );
    }
}

/// `--stream` with `--records` is refused (the `end` event is that record), not ignored.
#[test]
fn stream_with_records_is_refused() {
    toolmend()
        .args(["calls", "--stream", "--records"])
        .write_stdin("hi")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot be used with"));
}

/// Shell completions offer the format names for `--format`.
#[test]
fn format_completes_to_the_format_names() {
    let out = toolmend().args(["completions", "bash"]).output().unwrap();
    let script = String::from_utf8_lossy(&out.stdout);
    let line = script
        .lines()
        .find(|l| l.contains("hermes") && l.contains("mistral"))
        .unwrap_or_else(|| panic!("no line offers the formats"));
    assert!(line.contains("auto"), "{line}");
}

/// A call to a tool the tools file lacks names the nearest tool when it looks like a slip.
#[test]
fn an_unknown_tool_gets_did_you_mean() {
    let out = toolmend()
        .args(["calls", "--records", "--tools", "fixtures/calls/tools.json"])
        .write_stdin("<tool_call>{\"name\": \"get_wether\", \"arguments\": {\"city\": \"Oslo\"}}</tool_call>")
        .output()
        .unwrap();
    let record: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(record["error"]["code"], "unknown_tool");
    let message = record["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("unknown tool \"get_wether\" (did you mean \"get_weather\"?)"),
        "{message}"
    );
}

/// Library errors name no CLI flag: the packages print them too.
#[test]
fn library_errors_quote_no_flags() {
    for (args, input) in [
        (
            &["args", "--records", "--truncated", "error"][..],
            "{\"cmd\": \"rm -rf build/x",
        ),
        (&["args", "--records", "--max-bytes", "4"][..], "{\"a\": 1}"),
    ] {
        let out = toolmend().args(args).write_stdin(input).output().unwrap();
        let record: Value = serde_json::from_slice(&out.stdout).unwrap();
        let message = record["error"]["message"].as_str().unwrap();
        assert!(!message.contains("--"), "{args:?}: {message}");
    }
}
