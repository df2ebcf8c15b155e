//! The `args` and `repair` commands end to end: framing, output streams, records, exit status.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use assert_cmd::Command as Cmd;
use predicates::prelude::*;
use serde_json::{Value, json};

mod common;
use common::{TempDir, repair_kinds, toolmend};

fn records(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8(stdout.to_vec())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn run_records(args: &[&str], stdin: impl Into<Vec<u8>>) -> (Vec<Value>, i32) {
    let out = toolmend().args(args).write_stdin(stdin).output().unwrap();
    (records(&out.stdout), out.status.code().unwrap())
}

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

/// A stream that exercises every path of the threaded filter: many batches, clean and broken
/// lines, errors, invalid UTF-8, a line over `--max-bytes`, a line large enough to be mended
/// outside the batches, CRLF, a BOM and no final newline.
fn mixed_stream() -> Vec<u8> {
    let mut data = b"\xEF\xBB\xBF{\"first\":true}\r\n".to_vec();
    for i in 0..30_000 {
        let line = match i % 7 {
            0 => format!("{{\"n\":{i},\"s\":\"text {i}\"}}"),
            1 => format!("\"{{\\\"n\\\":{i}}}\""),
            2 => format!("{{'n': {i}, 'ok': True,}}"),
            3 => format!("[{i}]"),
            4 => format!("{{\"n\":{i}}}{{\"m\":{i}}}"),
            5 => "not json at all".to_owned(),
            _ => format!("Sure: {{\"n\":{i}, \"cut\": \"off"),
        };
        data.extend_from_slice(line.as_bytes());
        data.extend_from_slice(if i % 11 == 0 { b"\r\n" } else { b"\n" });
        if i == 12_345 {
            data.extend_from_slice(b"{\"bad\":\"\xff\"}\n");
            data.extend_from_slice(&[b'x'; 7 << 20]);
            data.push(b'\n');
        }
        if i == 20_000 {
            data.extend_from_slice(b"{\"huge\":\"");
            data.extend_from_slice(&[b'y'; 5 << 20]);
            data.extend_from_slice(b"\"}\n");
        }
    }
    data.extend_from_slice(b"{\"last\":1}");
    data
}

/// Open containers are kept a byte or a few each (the distance between brackets varies): at a
/// depth of 60,000, of every kind, they close in order and the innermost one's offset is right.
#[test]
fn deep_unclosed_nesting_of_every_kind_is_closed_in_order() {
    // (text, what it writes, its closer); every opener's bracket is its first byte.
    let openers = [
        ("[", "[", "]"),
        ("{\"k\":", "{\"k\":", "}"),
        ("[1, ", "[1,", "]"),
        ("[ ", "[", "]"),
        ("{\"a\": [2], \"k\":\t ", "{\"a\":[2],\"k\":", "}"),
        ("(", "[", "]"),
    ];
    let (mut text, mut expect, mut closers) = (String::new(), String::new(), Vec::new());
    let mut innermost = 0;
    for i in 0..60_000 {
        let (open, written, closer) = openers[i % openers.len()];
        innermost = text.len();
        text.push_str(open);
        expect.push_str(written);
        closers.push(closer);
    }
    text.push('7');
    expect.push('7');
    expect.extend(closers.iter().rev().copied());
    let out = toolmend()
        .args(["repair", "--max-nesting", "100000"])
        .write_stdin(text.clone())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), expect + "\n");
    let out = toolmend()
        .args(["repair", "--records", "--max-nesting", "100000"])
        .write_stdin(text)
        .output()
        .unwrap();
    let record = String::from_utf8(out.stdout).unwrap();
    let unclosed = format!("{{\"kind\":\"unterminated_container\",\"offset\":{innermost}}}");
    assert!(
        record.contains(&unclosed),
        "{}",
        &record[record.len() - 300..]
    );
}

/// Lines of 4 MiB and more are mended outside the batches, and their value is written straight
/// from the mender's buffer: the output must be what a small line of the same shape gives.
#[test]
fn a_line_of_many_megabytes_comes_out_whole_in_every_mode() {
    let body = "z".repeat(5 << 20);
    let stream = format!(
        "{{\"small\":1}}\n{{'big': '{body}', 'n': [1, 2,]}}{{\"m\":1}}\nnot json\n{{\"after\":1}}\n"
    );
    let big = json!({"big": body, "n": [1, 2]});
    for threads in ["1", "2"] {
        let out = toolmend()
            .args(["args", "--threads", threads])
            .write_stdin(stream.clone())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        let values = records(&out.stdout);
        assert_eq!(
            values,
            [json!({"small": 1}), big.clone(), json!({"after": 1})]
        );
        assert_eq!(records(&out.stderr)[0]["line"], 3, "--threads {threads}");

        let args = ["args", "--records", "--concat", "all", "--threads", threads];
        let (recs, code) = run_records(&args, stream.clone());
        assert_eq!(code, 1);
        assert_eq!(recs.len(), 4, "--threads {threads}");
        assert_eq!(recs[1]["line"], 2);
        assert_eq!(recs[1]["value"], json!([big, {"m": 1}]));
        assert_eq!(
            repair_kinds(&recs[1]["repairs"]),
            [
                "single_quotes",
                "single_quotes",
                "single_quotes",
                "trailing_comma"
            ]
        );
        assert_eq!(recs[1]["dropped"], json!([]));
        assert_eq!(recs[2]["error"]["code"], "not_an_object");
        assert_eq!(recs[3]["value"], json!([{"after": 1}]));
    }
}

#[test]
fn too_many_threads_is_a_usage_error_not_an_abort() {
    // 100000 aborted (exit 134, "failed to spawn thread") before any output.
    for threads in ["100000", "257", "18446744073709551616", "x"] {
        for command in ["args", "repair"] {
            toolmend()
                .args([command, "--threads", threads])
                .write_stdin("{\"a\": 1}\n")
                .assert()
                .code(2)
                .stdout("")
                .stderr(predicate::str::contains("--threads"));
        }
    }
    toolmend()
        .args(["args", "--threads", "100000"])
        .write_stdin("{}\n")
        .assert()
        .stderr(predicate::str::contains("more than the limit of 256"));
    toolmend()
        .args(["args", "--threads", "256"])
        .write_stdin("{\"a\": 1}\n")
        .assert()
        .code(0)
        .stdout("{\"a\":1}\n");
}

/// Whether this process may run a command as another user (it is root).
fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout == b"0\n")
}

#[test]
fn threads_the_system_will_not_start_are_done_without() {
    // As `nobody` limited to N processes (threads count), the workers past the limit cannot
    // start: the run goes on with those that did, and the output is the same. Only root can
    // switch users; elsewhere this test has nothing to run.
    if !is_root() {
        eprintln!("not root: cannot run toolmend as another user with a process limit");
        return;
    }
    let data: String = (0..200_000).map(|i| format!("{{\"a\": {i},}}\n")).collect();
    let one = toolmend()
        .args(["args", "--records", "--threads", "1"])
        .write_stdin(data.clone())
        .output()
        .unwrap();
    assert_eq!(one.status.code(), Some(0));
    for nproc in ["1", "3"] {
        let out = Cmd::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "prlimit",
            ])
            .arg(format!("--nproc={nproc}:{nproc}"))
            .args([
                env!("CARGO_BIN_EXE_toolmend"),
                "args",
                "--records",
                "--threads",
                "64",
            ])
            .write_stdin(data.clone())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "nproc {nproc}: {err}");
        assert!(
            out.stdout == one.stdout,
            "nproc {nproc}: the output differs"
        );
    }
}

#[test]
fn threads_change_nothing_in_the_output() {
    let data = mixed_stream();
    let run = |args: &[&str]| {
        let out = toolmend()
            .args(args)
            .args(["--max-bytes", "6M"])
            .write_stdin(data.clone())
            .output()
            .unwrap();
        (out.stdout, out.stderr, out.status.code())
    };
    for mode in [
        &["args", "--records"][..],
        &["args"],
        &["repair", "--records"],
    ] {
        let one = run(&[mode, &["--threads", "1"]].concat());
        let records_mode = mode.contains(&"--records");
        let lines = String::from_utf8_lossy(if records_mode { &one.0 } else { &one.1 })
            .lines()
            .count();
        assert!(lines > 1000, "{mode:?}: only {lines} lines");
        assert_eq!(one.2, Some(1), "{mode:?}");
        for threads in ["2", "3", "0"] {
            let many = run(&[mode, &["--threads", threads]].concat());
            assert!(one == many, "{mode:?} --threads {threads} differs");
        }
    }
    let (records, _) = run_records(&["--records", "--max-bytes", "6M", "--threads", "2"], data);
    assert_eq!(records.len(), 30_000 + 5);
    for (i, record) in records.iter().enumerate() {
        assert_eq!(record["line"], i as u64 + 1);
    }
    let codes: Vec<&str> = records
        .iter()
        .filter_map(|r| r["error"]["code"].as_str())
        .collect();
    assert!(codes.contains(&"invalid_utf8") && codes.contains(&"too_large"));
    assert!(records.iter().any(|r| r["value"]["huge"].is_string()));
    assert_eq!(records[0]["value"], json!({"first": true}));
    assert_eq!(records.last().unwrap()["value"], json!({"last": 1}));
}

/// The crate says what it is and how it is licensed, and ships both license texts.
#[test]
fn package_is_described_and_dual_licensed() {
    assert_eq!(env!("CARGO_PKG_LICENSE"), "MIT OR Apache-2.0");
    assert!(!env!("CARGO_PKG_DESCRIPTION").is_empty());
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains("\nkeywords = ["),
        "no keywords in Cargo.toml"
    );
    let mit = std::fs::read_to_string(root.join("LICENSE-MIT")).unwrap();
    assert!(mit.starts_with("Copyright (c) the toolmend developers"));
    assert!(mit.contains("Permission is hereby granted, free of charge"));
    let apache = std::fs::read_to_string(root.join("LICENSE-APACHE")).unwrap();
    assert!(apache.contains("Apache License") && apache.contains("Version 2.0, January 2004"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(
        readme.contains("MIT OR Apache-2.0"),
        "README names no license"
    );
}

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
