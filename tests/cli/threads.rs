//! Threads, large and deep inputs: the same output whatever the threading.

use super::*;

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
