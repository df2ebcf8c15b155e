//! The stream reader's memory is a small constant times the reply, whatever the reply holds:
//! a reply of a million JSON objects that are no call (`{}{}{}…`) through
//! `calls --stream` and through `toolmend loop` (which reads every reply as a stream).
//! A 15 MiB reply of `{}` took the loop to 1.76 GB (about 120 bytes per
//! byte of reply, a slot kept per object).
//!
//! Each run's own peak RSS comes from `wait4`, so these tests may run side by side (and never
//! touch the RUSAGE_CHILDREN figure the other memory tests read: their own binaries).
// This test reads what the processes it starts used, or signals them, through libc.
#![allow(unsafe_code)]

use std::fs::File;
use std::process::{Command, Stdio};

mod common;
use common::{TempDir, bin, quoted};

/// The reply's size: 2 MiB, big enough that a per-object cost shows (120 bytes a byte is
/// 240 MiB) and small enough for a debug build.
const REPLY: usize = 2 << 20;

/// Runs `cmd` to its end; its exit code and peak RSS in KiB (from `wait4`, for this child
/// alone).
fn run_measured(mut cmd: Command) -> (i32, i64) {
    let child = cmd.spawn().unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 writes only into the status and the struct we own; the child is ours and
    // not waited for by anyone else (`child` is forgotten, not waited on).
    let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    std::mem::forget(child);
    assert_eq!(rc, pid);
    assert!(libc::WIFEXITED(status), "status {status}");
    (libc::WEXITSTATUS(status), usage.ru_maxrss)
}

/// The largest peak allowed for a reply of `len` bytes: 12 bytes a byte (the reply held by the
/// stream, and the whole-reply read at its end) over a 24 MiB floor (the binary itself).
fn bound_kib(len: usize) -> i64 {
    (24 * 1024 + 12 * len / 1024) as i64
}

/// A reply of `{}` written over and over: every object is read, none is a call.
fn reply() -> String {
    "{}".repeat(REPLY / 2)
}

#[test]
fn calls_stream_memory_is_a_small_constant_times_the_reply() {
    let dir = TempDir::new("stream-memory-calls");
    let (what, reply) = ("bare objects", reply());
    {
        let input = dir.join("reply.txt");
        std::fs::write(&input, &reply).unwrap();
        let mut cmd = common::command();
        cmd.args(["calls", "--stream", "--input", "whole"])
            .arg(&input)
            .stdin(Stdio::null())
            .stdout(File::create(dir.join("events.jsonl")).unwrap())
            .stderr(Stdio::null());
        let (code, rss) = run_measured(cmd);
        eprintln!(
            "calls --stream, {} KiB of {what}: peak RSS {} MiB",
            reply.len() / 1024,
            rss / 1024
        );
        assert!(code == 0 || code == 1, "{what}: exit {code}");
        let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
        assert!(events.contains("\"event\":\"end\""), "{what}: no end event");
        assert!(
            rss < bound_kib(reply.len()),
            "{what}: peak RSS {rss} KiB for a reply of {} bytes",
            reply.len()
        );
    }
}

#[test]
fn the_loops_memory_on_a_reply_of_many_objects_is_bounded() {
    let (what, reply) = ("bare objects", reply());
    {
        let dir = TempDir::new("stream-memory-loop");
        std::fs::write(dir.join("reply.txt"), &reply).unwrap();
        let config = format!(
            "[llm]\ncommand = [\"python3\", {}, \"llm\", \"stream\", {}]\nretries = 0\n",
            quoted(&bin("faults_helper.py")),
            quoted(&dir.display().to_string()),
        );
        std::fs::write(dir.join("agent.toml"), config).unwrap();
        let mut cmd = common::command();
        cmd.arg("loop")
            .arg("--config")
            .arg(dir.join("agent.toml"))
            .arg("go")
            .stdin(Stdio::null())
            .stdout(File::create(dir.join("answer.txt")).unwrap())
            .stderr(File::create(dir.join("stderr.txt")).unwrap());
        let (code, rss) = run_measured(cmd);
        let stderr = std::fs::read_to_string(dir.join("stderr.txt")).unwrap();
        eprintln!(
            "loop, a reply of {} KiB of {what}: peak RSS {} MiB",
            reply.len() / 1024,
            rss / 1024
        );
        // No call in it: the reply is the answer.
        assert_eq!(code, 0, "{what}: {stderr}");
        let answer = std::fs::read_to_string(dir.join("answer.txt")).unwrap();
        assert_eq!(answer.trim_end(), reply, "{what}");
        assert!(
            rss < bound_kib(reply.len()),
            "{what}: peak RSS {rss} KiB for a reply of {} bytes",
            reply.len()
        );
    }
}
