//! What the events weigh: the arguments about once.

use super::*;

/// The bytes of the events `EventWriter` writes for `reply` fed `chunk` bytes at a time, as
/// `calls --stream` writes them: (`arguments` events, every event but `end`, `end`).
fn written_sizes(reply: &str, chunk: usize) -> (usize, usize, usize) {
    let mut out = Vec::new();
    let mut writer = EventWriter::new(
        CallOptions::default(),
        None,
        Shape::Native,
        usize::MAX,
        &mut out,
    );
    for piece in reply.as_bytes().chunks(chunk) {
        assert!(writer.write_bytes(piece).unwrap());
    }
    writer.finish().unwrap();
    drop(writer);
    let mut sizes = (0, 0, 0);
    for line in out.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let n = line.len() + 1;
        if line.starts_with(br#"{"event":"end""#) {
            sizes.2 += n;
            continue;
        }
        if line.starts_with(br#"{"event":"arguments""#) {
            sizes.0 += n;
        }
        sizes.1 += n;
    }
    sizes
}

/// The same sizes for `Stream::new`'s events serialized one by one (what the packages get).
fn serialized_sizes(reply: &str, chunk: usize) -> (usize, usize, usize) {
    let mut stream = Stream::new(CallOptions::default());
    let mut sizes = (0, 0, 0);
    let mut count = |events: Vec<Event>| {
        for event in events {
            let n = serde_json::to_vec(&event).unwrap().len() + 1;
            match event {
                Event::End { .. } => sizes.2 += n,
                Event::Arguments { .. } => {
                    sizes.0 += n;
                    sizes.1 += n;
                }
                _ => sizes.1 += n,
            }
        }
    };
    for piece in reply.as_bytes().chunks(chunk) {
        count(stream.feed(std::str::from_utf8(piece).unwrap()));
    }
    count(stream.finish());
    sizes
}

/// The stream costs what the reply costs (issue 30): its `arguments` events carry what was
/// added, so fed in small chunks they hold the arguments about once, and the events but
/// `end` (`calls`' own record) hold a call with one 1 MB string, or with 60,000 keys, at most
/// about twice (the `arguments` events, and `call_end`'s call). Bytes counted, not timed.
#[test]
fn events_hold_the_arguments_about_once() {
    let long_string = format!(
        "<tool_call>{{\"name\": \"f\", \"arguments\": {{\"text\": \"{}\"}}}}</tool_call>",
        "word ".repeat(200_000)
    );
    let keys: Vec<String> = (0..60_000).map(|i| format!("\"k{i}\": {i}")).collect();
    let many_keys = format!(
        "<tool_call>{{\"name\": \"f\", \"arguments\": {{{}}}}}</tool_call>",
        keys.join(", ")
    );
    for (name, reply) in [
        ("one long string", &long_string),
        ("60,000 keys", &many_keys),
    ] {
        for (how, chunk, (arguments, all_but_end, end)) in [
            ("written", 3, written_sizes(reply, 3)),
            ("written", 1, written_sizes(reply, 1)),
            ("serialized", 3, serialized_sizes(reply, 3)),
        ] {
            let n = reply.len() as f64;
            let (a, b) = (arguments as f64 / n, all_but_end as f64 / n);
            assert!(
                a <= 1.1 && b <= 2.1,
                "{name}, {how}, {chunk} B chunks: arguments events {a:.2}x the reply, all but end {b:.2}x (end {end} bytes)"
            );
        }
    }
}
