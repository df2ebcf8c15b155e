//! Feeding byte by byte costs linear CPU time.

use super::*;

/// The CPU time this thread has used, in seconds: unlike the wall clock, it does not grow
/// while other processes have the machine's cores.
fn thread_cpu_seconds() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the one timespec it is given.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    assert_eq!(status, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// Feeds `reply` one character at a time; the CPU seconds it took, or `None` past `limit`.
fn feed_per_char(reply: &str, limit: f64) -> Option<f64> {
    let start = thread_cpu_seconds();
    let mut stream = Stream::new(CallOptions::default());
    let mut events = Vec::new();
    for (i, (at, c)) in reply.char_indices().enumerate() {
        stream.feed_into(&reply[at..at + c.len_utf8()], &mut events);
        events.clear();
        if i % 1024 == 0 && thread_cpu_seconds() - start > limit {
            return None;
        }
    }
    Some(thread_cpu_seconds() - start)
}

/// Reading a reply as it arrives costs the same per byte at any size: the progress layer does
/// not read again what it has read (a snapshot of the arguments per chunk would make a large
/// call quadratic when fed a byte at a time). Each shape at n and 4n bytes: linear is 4x the
/// CPU time, quadratic 16x; the best of three runs, failing past 10x. CPU time, not the wall
/// clock: on a machine loaded by other work the wall clock of the two sizes is not comparable.
#[test]
fn feeding_byte_by_byte_is_linear() {
    let many_keys = |n: usize| {
        let args: Vec<String> = (0..n / 12).map(|i| format!("\"k{i}\": {i}")).collect();
        format!(
            "<tool_call>{{\"name\": \"f\", \"arguments\": {{{}}}}}</tool_call>",
            args.join(", ")
        )
    };
    let long_string = |n: usize| {
        format!(
            "<tool_call>{{\"name\": \"f\", \"arguments\": {{\"text\": \"{}\"}}}}</tool_call>",
            "word ".repeat(n / 5)
        )
    };
    let encoded = |n: usize| {
        let args: Vec<String> = (0..n / 14).map(|i| format!("\\\"k{i}\\\": {i}")).collect();
        format!(
            "{{\"name\": \"f\", \"arguments\": \"{{{}}}\"}}",
            args.join(", ")
        )
    };
    let deep_list = |n: usize| {
        let item = "[\"a\", {\"b\": [1, 2, \"c\"]}], ";
        format!(
            "[TOOL_CALLS][{{\"name\": \"f\", \"arguments\": {{\"x\": [{}0]}}}}]",
            item.repeat(n / item.len())
        )
    };
    // Text and reasoning shown as they arrive: prose with reasoning, braces and markers to
    // hold back, and JSON objects that are no call (each read alone by `calls` once).
    let prose = |n: usize| {
        let words = "Some words, {x} and [1] < 2 for the <b>answer</b>. ";
        format!(
            "<think>{}</think>{}",
            words.repeat(n / 2 / words.len()),
            words.repeat(n / 2 / words.len())
        )
    };
    let objects = |n: usize| "{\"a\": 1} ".repeat(n / 9);
    let shapes: [(&str, &dyn Fn(usize) -> String); 6] = [
        ("many keys", &many_keys),
        ("long string", &long_string),
        ("encoded arguments", &encoded),
        ("nested list", &deep_list),
        ("prose and reasoning", &prose),
        ("objects that are no call", &objects),
    ];
    let n = 40_000;
    for (name, make) in shapes {
        let (small, large) = (make(n), make(4 * n));
        let best = |reply: &str, limit: f64| {
            (0..3)
                .filter_map(|_| feed_per_char(reply, limit))
                .min_by(f64::total_cmp)
        };
        let t1 = best(&small, 60.0).expect("the small reply in time");
        let t4 = best(&large, 10.0 * t1 + 0.05);
        assert!(
            t4.is_some(),
            "{name}: {} bytes took over 10x the time of {} bytes ({t1:.3} s)",
            large.len(),
            small.len()
        );
    }
}
