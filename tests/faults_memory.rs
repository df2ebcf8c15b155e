//! `toolmend loop`'s memory stays bounded when its children write without end: a model that
//! replies 100 MiB (over the 16 MiB reply limit: refused) and a tool that writes 100 MiB on
//! each of stdout and stderr (only `max_output` bytes of each are kept).
//! (Its own test binary, so the peak RSS of waited-for children is this test's toolmend runs
//! alone; the fake programs write in 1 MiB pieces and stay small themselves.)
// This test reads what the processes it starts used, or signals them, through libc.
#![allow(unsafe_code)]

use std::process::Stdio;
use std::time::{Duration, Instant};

mod common;
use common::{TempDir, bin, code, quoted, stderr};

/// The largest peak RSS among this process's waited-for children (and theirs), in KiB.
fn children_max_rss_kib() -> i64 {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage only writes into the struct we own.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    assert_eq!(rc, 0);
    usage.ru_maxrss
}

/// Runs `toolmend loop` with `config` (`{helper}`, `{scripted}` and `{dir}` filled in as TOML
/// strings) in a fresh directory holding `files`; its exit code, stderr and how long it took.
fn run(name: &str, config: &str, files: &[(&str, &str)]) -> (i32, String, Duration) {
    let dir = TempDir::new(&format!("faults-memory-{name}"));
    for (file, text) in files {
        std::fs::write(dir.join(file), text).unwrap();
    }
    let config = config
        .replace("{helper}", &quoted(&bin("faults_helper.py")))
        .replace("{scripted}", &quoted(&bin("scripted_llm.py")))
        .replace(
            "{replies}",
            &quoted(&dir.join("replies.txt").display().to_string()),
        )
        .replace(
            "{inputs}",
            &quoted(&dir.join("inputs").display().to_string()),
        )
        .replace("{dir}", &quoted(&dir.display().to_string()));
    std::fs::write(dir.join("agent.toml"), config).unwrap();
    let start = Instant::now();
    let out = common::command()
        .arg("loop")
        .arg("--config")
        .arg(dir.join("agent.toml"))
        .arg("go")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let took = start.elapsed();
    (code(&out), stderr(&out), took)
}

#[test]
fn a_100_mib_tool_output_and_a_100_mib_reply_are_not_held_in_memory() {
    // The tool first (RUSAGE_CHILDREN keeps the largest peak so far): 100 MiB on each stream,
    // 64 KiB of each kept.
    let call = r#"{"tool": "flood", "parameters": {}, "terminate": true}"#;
    let (code, stderr, took) = run(
        "tool",
        "[llm]\ncommand = [\"python3\", {scripted}, {replies}, {inputs}]\n\
         [[tools]]\nname = \"flood\"\nread_only = true\n\
         command = [\"python3\", {helper}, \"tool\", \"flood-100\", {dir}]\n",
        &[("replies.txt", call)],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.is_empty(), "the tool failed: {stderr}");
    let tool_rss = children_max_rss_kib();
    eprintln!(
        "100 MiB on each of a tool's streams: peak RSS {} MiB, {:.2} s",
        tool_rss / 1024,
        took.as_secs_f64()
    );
    assert!(tool_rss < 32 * 1024, "peak RSS {tool_rss} KiB");

    // The reply: read up to the 16 MiB limit, the rest counted and dropped, the call refused.
    let (code, stderr, took) = run(
        "reply",
        "[llm]\ncommand = [\"python3\", {helper}, \"llm\", \"huge\", {dir}]\nretries = 0\n",
        &[],
    );
    assert_eq!(code, 8, "{stderr}");
    assert!(stderr.contains("over the limit"), "{stderr}");
    let rss = children_max_rss_kib();
    eprintln!(
        "a 100 MiB reply: peak RSS {} MiB, {:.2} s",
        rss / 1024,
        took.as_secs_f64()
    );
    // What this shows: the 84 MiB past the 16 MiB limit are not held (holding them would
    // pass 100 MiB). The peak was 48,584-48,764 KiB before 2026-11-29's changes and
    // 48,656-49,100 after (four runs each), and 49,160 once in a loaded CI run: 48 MiB was
    // under 1 MiB above it and failed there, so the bound leaves room for the machine.
    assert!(rss < 56 * 1024, "peak RSS {rss} KiB");
}
