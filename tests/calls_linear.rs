//! `toolmend calls` (and `calls --stream --input sse` on SSE framing) takes time linear in the
//! reply's length, whatever the reply repeats: each adversarial family runs at a size and at 8
//! times it, and the CPU time may grow about 8 times, not 64. A family that was quadratic took tens of seconds at the larger size.
//!
//! CPU time (of the child alone, from `wait4`) rather than wall time, so that a loaded machine
//! does not fail the test; runs too short to judge pass on their own.
// This test reads what the processes it starts used, or signals them, through libc.
#![allow(unsafe_code)]

use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

mod common;

/// The smaller size of each family, in bytes (the larger is 8 times it).
const BASE: usize = 24 << 10;
/// Growth of the CPU time from the smaller to the larger size beyond which the work is taken
/// as superlinear (linear gives about 8; quadratic about 64).
const MAX_GROWTH: f64 = 24.0;
/// A larger run that takes less CPU time than this passes whatever its growth.
const FLOOR: Duration = Duration::from_millis(400);
/// Longest a run may take before it is taken as hung.
const GUARD: Duration = Duration::from_secs(60);

/// `unit` repeated to about `n` bytes.
fn rep(unit: &str, n: usize) -> String {
    unit.repeat((n / unit.len()).max(1))
}

type Family = (&'static str, fn(usize) -> String);

/// One family per way the extractor went quadratic: a marker whose closer never comes, a
/// bracket extent per marker, a section marker searched per call, reasoning tags, Harmony
/// message ends, XML parameters, a fence looked for before every value, values nested deeper
/// than can be read.
const FAMILIES: &[Family] = &[
    ("<tool_call> repeated", |n| rep("<tool_call>", n)),
    ("<TOOLCALL>[ repeated", |n| rep("<TOOLCALL>[", n)),
    ("<|START_ACTION|>{ repeated", |n| {
        rep("<|START_ACTION|>{", n)
    }),
    ("<function=a> repeated", |n| rep("<function=a>", n)),
    ("<|tool_call_begin|> repeated", |n| {
        rep("<|tool_call_begin|>", n)
    }),
    ("<｜tool▁call▁begin｜>f( repeated", |n| {
        rep("<｜tool▁call▁begin｜>f(", n)
    }),
    ("<|python_start|> repeated", |n| rep("<|python_start|>", n)),
    ("<minimax:tool_call> with JSON bodies", |n| {
        rep(r#"<minimax:tool_call>{"a":"<minimax:tool_call>[1]"}"#, n)
    }),
    ("Kimi calls", |n| {
        rep(
            r#"<|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{"a":1}<|tool_call_end|>"#,
            n,
        )
    }),
    ("Harmony messages", |n| {
        rep(r#"<|channel|>commentary to=functions.f<|message|>{"a":"#, n)
    }),
    ("Harmony analysis", |n| {
        rep("<|channel|>analysis<|message|>x<|end|>", n)
    }),
    ("reasoning blocks", |n| rep("<think>a</think>b", n)),
    ("Qwen3-Coder parameters", |n| {
        format!(
            "<tool_call><function=f>{}</function></tool_call>",
            rep("<parameter=a>", n)
        )
    }),
    ("marker-less calls", |n| {
        rep(r#"{"name":"f","arguments":{}} "#, n)
    }),
    ("deep arrays, closed", |n| {
        format!("{}{}", "[".repeat(n / 2), "]".repeat(n / 2))
    }),
    ("deep objects, closed", |n| {
        format!("x {}1{}", rep(r#"{"a":"#, n / 2), "}".repeat(n / 10))
    }),
    ("deep arrays around a call", |n| {
        format!(
            "x {}{}{}",
            "[".repeat(n / 2),
            r#"{"name":"f","arguments":{}}"#,
            "]".repeat(n / 2)
        )
    }),
];

/// CPU time (user + system) of `toolmend calls` on `input`.
fn cpu_time(input: &str) -> Duration {
    cpu_time_of(&["calls"], input)
}

/// CPU time (user + system) of `toolmend ARGS` on `input`.
// The child is reaped by `wait4`, which also gives its CPU time; `Child::wait` would not.
#[allow(clippy::zombie_processes)]
fn cpu_time_of(args: &[&str], input: &str) -> Duration {
    let mut child = common::command()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_owned();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let pid = child.id() as libc::pid_t;
    let start = Instant::now();
    loop {
        let mut status = 0;
        // SAFETY: rusage is plain data filled in by the kernel; the pid is our own child.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let done = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        assert!(done >= 0, "wait4: {}", std::io::Error::last_os_error());
        if done == pid {
            let _ = writer.join();
            let time = |t: libc::timeval| {
                Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
            };
            return time(usage.ru_utime) + time(usage.ru_stime);
        }
        if start.elapsed() > GUARD {
            let _ = child.kill();
            let _ = child.wait();
            panic!("toolmend {args:?} ran over {GUARD:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn calls_is_linear_on_every_adversarial_family() {
    let mut report = Vec::new();
    let mut superlinear = Vec::new();
    for (name, family) in FAMILIES {
        let small = cpu_time(&family(BASE));
        let large = cpu_time(&family(8 * BASE));
        let growth = large.as_secs_f64() / small.as_secs_f64().max(1e-3);
        report.push(format!("{name}: {small:?} -> {large:?} (x{growth:.1})"));
        if large > FLOOR && growth > MAX_GROWTH {
            superlinear.push(*name);
        }
    }
    eprintln!("{}", report.join("\n"));
    assert!(
        superlinear.is_empty(),
        "superlinear: {superlinear:?}\n{}",
        report.join("\n")
    );
}

/// Markers no call can be read from are each an error, checked against the errors before
/// them: that check went over every earlier error, so a reply of nothing but such markers was
/// quadratic in their number, which shows only at tens of thousands of them (250,000 GigaChat
/// markers in 10 MB took 50 s, 25,000 took 0.16 s). Sizes here are 512 KiB and 4 MiB: about
/// 13,000 and 105,000 markers.
#[test]
fn calls_is_linear_in_the_markers_no_call_is_read_from() {
    let unit = "<|message_sep|>function call<|role_sep|>";
    let small = cpu_time(&rep(unit, 512 << 10));
    let large = cpu_time(&rep(unit, 4 << 20));
    let growth = large.as_secs_f64() / small.as_secs_f64().max(1e-3);
    assert!(
        large <= FLOOR || growth <= MAX_GROWTH,
        "{small:?} -> {large:?} (x{growth:.1}): superlinear"
    );
}

/// `calls --stream --input sse` reads an event's data as soon as it is whole JSON, without
/// waiting for the blank line: it parsed all the data again after each `data:` line, so an
/// event whose JSON came over many `data:` lines (the SSE rule joins them with line breaks)
/// was quadratic in them (20,000 lines of 8 bytes took 59 s in a debug build; found reading
/// the code the `calls` fuzz target drives as SSE). Also data that can no longer become JSON
/// (brackets closed, then text) followed by many lines with no blank line, read by the blank
/// line at the end as the error it is.
#[test]
fn sse_data_over_many_lines_is_linear() {
    let split = |n: usize| {
        format!(
            "data: {{\"choices\": [{{\"index\": 0, \"delta\": {{\"content\": \"x\"}}, \"pad\": [\n{}data: 1]}}]}}\n\n",
            rep("data: 1,\n", n)
        )
    };
    let broken = |n: usize| {
        format!(
            "data: [\n{}data: 1] x\n{}\n",
            rep("data: 1,\n", n / 2),
            rep("data: []\n", n / 2)
        )
    };
    let families: [(&str, &dyn Fn(usize) -> String); 2] = [
        ("one JSON over many data: lines", &split),
        ("broken data, then many lines", &broken),
    ];
    for (name, family) in families {
        let args = ["calls", "--stream", "--input", "sse"];
        let small = cpu_time_of(&args, &family(BASE));
        let large = cpu_time_of(&args, &family(8 * BASE));
        let growth = large.as_secs_f64() / small.as_secs_f64().max(1e-3);
        assert!(
            large <= FLOOR || growth <= MAX_GROWTH,
            "{name}: {small:?} -> {large:?} (x{growth:.1}): superlinear"
        );
    }
}
