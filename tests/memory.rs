//! Memory stays bounded on a huge line (an input over `--max-bytes` is skipped, not kept) and
//! flat in the number of lines, whatever they hold. (Its own test binary, so the peak RSS of
//! waited-for children is this binary's children alone.)
// This test reads what the processes it starts used, or signals them, through libc.
#![allow(unsafe_code)]

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

mod common;

/// The largest peak RSS among this process's waited-for children, in KiB.
fn children_max_rss_kib() -> i64 {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage only writes into the struct we own.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    assert_eq!(rc, 0);
    usage.ru_maxrss
}

#[test]
fn a_200_mb_line_over_the_limit_is_not_held_in_memory() {
    let mut child = common::command()
        .args(["--records", "--max-bytes", "1M"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        stdin.write_all(b"{\"a\":\"").unwrap();
        let block = vec![b'x'; 1 << 20];
        for _ in 0..200 {
            stdin.write_all(&block).unwrap();
        }
        stdin.write_all(b"\"}\n{\"b\":2}\n").unwrap();
    });
    let lines: Vec<String> = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(Result::unwrap)
        .collect();
    writer.join().unwrap();
    assert!(!child.wait().unwrap().success());
    assert_eq!(lines.len(), 2);
    assert!(lines[0].contains("\"code\":\"too_large\""), "{}", lines[0]);
    assert!(lines[1].contains("\"value\":{\"b\":2}"), "{}", lines[1]);
    let rss = children_max_rss_kib();
    assert!(rss < 40 * 1024, "peak RSS {rss} KiB for a 200 MB line");
}

/// Runs toolmend with `input` on stdin, output thrown away, and returns its own peak RSS in KiB
/// (wait4 gives this child's figure alone, whatever other tests run beside it).
// wait4 below reaps the child; clippy only knows Child::wait.
#[allow(clippy::zombie_processes)]
fn peak_rss_kib(args: &[&str], input: Vec<u8>) -> i64 {
    let mut child = common::command()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&input).unwrap());
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 only writes into the two values we own; the pid is our unwaited child.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as libc::pid_t);
    writer.join().unwrap();
    usage.ru_maxrss
}

#[test]
fn memory_is_flat_in_the_number_of_lines_whatever_they_hold() {
    let lines = 500_000;
    let cases: [(&[&str], &[u8]); 6] = [
        (&["args", "--records", "--threads", "4"], b"\n"),
        (&["args", "--records", "--threads", "4"], b"\r\n"),
        (&["args", "--threads", "4"], b"\n"),
        (&["repair", "--records", "--threads", "4"], b"\n"),
        (&["args", "--records", "--threads", "4"], b"{}\n"),
        (&["repair", "--threads", "4"], b"1\n"),
    ];
    for (args, line) in cases {
        let rss = peak_rss_kib(args, line.repeat(lines));
        assert!(
            rss < 24 * 1024,
            "toolmend {args:?} on {lines} lines of {:?}: peak RSS {rss} KiB",
            String::from_utf8_lossy(line)
        );
    }
}
