//! One record per input, error records, framing, sizes, strict and repair modes, help.

use super::*;

#[test]
fn values_on_stdout_errors_on_stderr_exit_1() {
    let out = toolmend()
        .write_stdin("{\"a\":1}\n[1]\n\"{\\\"b\\\":2}\"\n")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "{\"a\":1}\n{\"b\":2}\n"
    );
    let errors = records(&out.stderr);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0]["line"], 2);
    assert_eq!(errors[0]["ok"], false);
    assert_eq!(errors[0]["error"]["code"], "not_an_object");
}

#[test]
fn all_clean_exits_0_and_args_is_the_default_command() {
    let input = "{\"a\":1}\n\"{\\\"b\\\":[1,2]}\"\n";
    let plain = toolmend().write_stdin(input).assert().success();
    let named = toolmend().arg("args").write_stdin(input).assert().success();
    assert_eq!(plain.get_output().stdout, named.get_output().stdout);
    assert_eq!(plain.get_output().stdout, b"{\"a\":1}\n{\"b\":[1,2]}\n");
}

#[test]
fn usage_error_exits_2() {
    toolmend().arg("--concat").arg("sometimes").assert().code(2);
    toolmend().arg("--no-such-flag").assert().code(2);
}

#[test]
fn unreadable_file_exits_2_after_the_others() {
    let dir = TempDir::new("cli");
    let good = dir.join("good.txt");
    std::fs::write(&good, "{\"a\":1}\n").unwrap();
    toolmend()
        .arg(&good)
        .arg(dir.join("missing.txt"))
        .assert()
        .code(2)
        .stdout("{\"a\":1}\n")
        .stderr(predicate::str::contains("missing.txt"));
}

#[test]
fn one_record_per_input_in_order_with_every_field() {
    let input = "{\"a\":1}\n\n'x'\n{\"b\":2}{\"c\":3}\n{\"k\":1,\"k\":2}\n";
    let (recs, code) = run_records(&["--records"], input);
    assert_eq!(code, 1);
    assert_eq!(recs.len(), 5);
    for (i, rec) in recs.iter().enumerate() {
        assert_eq!(rec["line"], i + 1);
    }
    assert_eq!(
        recs[0],
        json!({"ok": true, "line": 1, "value": {"a": 1}, "repairs": [], "dropped": []})
    );
    assert_eq!(recs[1]["error"]["code"], "empty_input");
    assert_eq!(recs[2]["error"]["code"], "not_an_object");
    assert_eq!(recs[3]["value"], json!({"b": 2}));
    assert_eq!(recs[3]["dropped"], json!([{"c": 3}]));
    assert_eq!(
        recs[4]["repairs"],
        json!([{"kind": "duplicate_key", "offset": 7, "key": "k"}])
    );
}

#[test]
fn error_records_say_what_and_where() {
    let long = format!("{{\"command\" \"brew\", \"pad\": \"{}\"}}", "é".repeat(150));
    let (recs, _) = run_records(&["--records", "--strict"], format!("{long}\n"));
    let error = &recs[0]["error"];
    assert_eq!(error["code"], "invalid_json");
    assert_eq!(error["offset"], 11);
    assert!(
        error["message"].as_str().unwrap().contains("at byte 11"),
        "{error}"
    );
    let original = error["original"].as_str().unwrap();
    assert_eq!(original.chars().count(), 101);
    assert!(original.ends_with('…'));
    assert!(long.starts_with(original.trim_end_matches('…')));
}

#[test]
fn short_originals_are_not_cut() {
    let (recs, _) = run_records(&["--records"], "[1, 2]\n");
    assert_eq!(recs[0]["error"]["original"], "[1, 2]");
}

#[test]
fn depth_limit_and_depth_exceeded() {
    let mut text = String::from("{\"a\":1}");
    for _ in 0..4 {
        text = serde_json::to_string(&text).unwrap();
    }
    let (recs, _) = run_records(&["--records", "--max-depth", "4"], format!("{text}\n"));
    assert_eq!(recs[0]["value"], json!({"a": 1}));
    assert_eq!(
        recs[0]["repairs"],
        json!([{"kind": "unquote", "layers": 4}])
    );
    let (recs, code) = run_records(&["--records", "--max-depth", "3"], format!("{text}\n"));
    assert_eq!(code, 1);
    assert_eq!(recs[0]["error"]["code"], "depth_exceeded");
}

#[test]
fn crlf_and_bom() {
    let (recs, code) = run_records(&["--records"], "\u{feff}{\"a\":1}\r\n{\"b\":\"x\"}\r\n");
    assert_eq!(code, 0);
    assert_eq!(recs[0]["value"], json!({"a": 1}));
    assert_eq!(recs[1]["value"], json!({"b": "x"}));
    assert_eq!(recs[1]["repairs"], json!([]));
}

#[test]
fn files_and_dash_for_stdin_and_file_names() {
    let dir = TempDir::new("cli");
    let first = dir.join("first.txt");
    std::fs::write(&first, "{\"from\":\"file\"}\n").unwrap();
    let out = toolmend()
        .args(["--records"])
        .arg(&first)
        .arg("-")
        .write_stdin("{\"from\":\"stdin\"}\n")
        .output()
        .unwrap();
    let recs = records(&out.stdout);
    assert_eq!(recs[0]["value"]["from"], "file");
    assert_eq!(recs[0]["file"], first.to_str().unwrap());
    assert_eq!(recs[1]["value"]["from"], "stdin");
    assert_eq!(recs[1]["file"], "-");
    assert_eq!(recs[1]["line"], 1);
    // One file: no file field.
    let out = toolmend().args(["--records"]).arg(&first).output().unwrap();
    assert!(records(&out.stdout)[0].get("file").is_none());
}

#[test]
fn jsonl_framing_takes_text_and_copies_ids() {
    let input = concat!(
        "\"{\\\"a\\\":1}\"\n",
        "{\"id\":\"c7\",\"text\":\"{\\\"b\\\":2}\"}\n",
        "{\"id\":42,\"content\":\"[1]\"}\n",
        "{\"arguments\":\"\\\"{\\\\\\\"c\\\\\\\":3}\\\"\",\"id\":{\"n\":1}}\n",
        "{\"arguments\":{\"d\":4}}\n",
        "not json\n",
        "{\"other\":1}\n",
        "{\"text\":\"{\\\"e\\\":5}\"}\n",
    );
    let (recs, code) = run_records(&["--records", "--input", "jsonl"], input);
    assert_eq!(code, 1);
    assert_eq!(recs.len(), 8);
    assert_eq!(recs[0]["value"], json!({"a": 1}));
    assert_eq!(recs[1]["id"], "c7");
    assert_eq!(recs[1]["value"], json!({"b": 2}));
    assert_eq!(recs[2]["id"], 42);
    assert_eq!(recs[2]["error"]["code"], "not_an_object");
    assert_eq!(recs[3]["id"], json!({"n": 1}));
    assert_eq!(recs[3]["value"], json!({"c": 3}));
    assert_eq!(recs[4]["value"], json!({"d": 4}));
    assert_eq!(recs[5]["error"]["code"], "invalid_input");
    assert_eq!(recs[6]["error"]["code"], "invalid_input");
    assert_eq!(recs[7]["value"], json!({"e": 5}));
}

#[test]
fn whole_framing_reads_one_document() {
    let (recs, code) = run_records(
        &["--records", "--input", "whole"],
        "{\n  \"a\": 1,\n  \"b\": [1,\n 2]\n}\n",
    );
    assert_eq!(code, 0);
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["value"], json!({"a": 1, "b": [1, 2]}));
    let (recs, code) = run_records(&["--records", "--input", "whole"], "");
    assert_eq!((recs.len(), code), (1, 1));
    assert_eq!(recs[0]["error"]["code"], "empty_input");
}

#[test]
fn invalid_utf8_line_is_reported_and_the_stream_goes_on() {
    let mut input = b"{\"a\":1}\n{\"b\":\"".to_vec();
    input.extend_from_slice(&[0xff, 0xfe]);
    input.extend_from_slice(b"\"}\n{\"c\":3}\n");
    let (recs, code) = run_records(&["--records"], input);
    assert_eq!(code, 1);
    assert_eq!(recs.len(), 3);
    assert_eq!(recs[1]["error"]["code"], "invalid_utf8");
    assert_eq!(recs[1]["error"]["offset"], 6);
    assert_eq!(recs[2]["value"], json!({"c": 3}));
}

#[test]
fn too_large_line_is_reported_and_the_stream_goes_on() {
    let big = format!("{{\"a\":\"{}\"}}", "x".repeat(5000));
    let input = format!("{{\"a\":1}}\n{big}\n{{\"c\":3}}\n");
    let (recs, code) = run_records(&["--records", "--max-bytes", "1K"], input);
    assert_eq!(code, 1);
    assert_eq!(recs.len(), 3);
    assert_eq!(recs[1]["error"]["code"], "too_large");
    assert!(
        recs[1]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("5008 bytes")
    );
    assert_eq!(
        recs[1]["error"]["original"]
            .as_str()
            .unwrap()
            .chars()
            .count(),
        101
    );
    assert_eq!(recs[2]["value"], json!({"c": 3}));
}

#[test]
fn closed_stdout_ends_quietly() {
    // `toolmend | head -1`: toolmend must exit 0 without a message once head is gone.
    let script = format!(
        "yes '{{\"a\":1}}' | head -n 200000 | {} ; echo \"rc=${{PIPESTATUS[2]}}\" >&2",
        env!("CARGO_BIN_EXE_toolmend")
    );
    let out = Command::new("bash")
        .args(["-c", &format!("({script}) | head -n 1")])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "{\"a\":1}\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim(), "rc=0", "stderr: {stderr}");
}

/// A co-process: one toolmend, a line written, its record read back, stdin still open.
#[test]
fn line_buffered_answers_each_line_while_stdin_stays_open() {
    let mut child = common::command()
        .args(["args", "--records", "--line-buffered"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    for (input, expected) in [
        ("\"{\\\"q\\\":1}\"", json!({"q": 1})),
        ("{'r': True}", json!({"r": true})),
    ] {
        writeln!(stdin, "{input}").unwrap();
        stdin.flush().unwrap();
        let line = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("a record before stdin is closed");
        let rec: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(rec["value"], expected);
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

#[test]
fn strict_refuses_repairs_but_still_unquotes() {
    let (recs, code) = run_records(
        &["--records", "--strict"],
        "{'a': 1}\n\"{\\\"a\\\":1}\"\n{\\\"a\\\":1}\n",
    );
    assert_eq!(code, 1);
    assert_eq!(recs[0]["error"]["code"], "invalid_json");
    assert_eq!(recs[0]["error"]["offset"], 1);
    assert_eq!(recs[1]["value"], json!({"a": 1}));
    assert_eq!(recs[2]["value"], json!({"a": 1}));
}

#[test]
fn repair_command_accepts_any_value() {
    let (recs, code) = run_records(
        &["repair", "--records"],
        "[1, 2,]\n'x'\n\"{\\\"a\\\":1}\"\n42\n",
    );
    assert_eq!(code, 0);
    assert_eq!(recs[0]["value"], json!([1, 2]));
    assert_eq!(recs[1]["value"], json!("x"));
    assert_eq!(recs[2]["value"], json!({"a": 1}));
    assert_eq!(recs[3]["value"], json!(42));
}

#[test]
fn help_has_examples_and_exit_codes() {
    for command in ["args", "repair"] {
        toolmend()
            .args([command, "--help"])
            .assert()
            .success()
            .stdout(predicate::str::contains("Examples:"))
            .stdout(predicate::str::contains("Exit status:"));
    }
}
