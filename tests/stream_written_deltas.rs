//! `calls --stream` writes the live `text` and `reasoning` events from where the stream keeps
//! their deltas (`calls::EventWriter`), not from events that own them: its lines are the lines
//! of a plain `Stream`'s events written one by one, for every `calls` fixture and for prose
//! with every kind of white space and escape, fed 1 to 9 bytes at a time.

use toolmend_core::calls::{CallOptions, EventWriter, Shape, Stream};

mod common;
use common::calls_cases;

/// The reply cut in pieces of `per` bytes (at character boundaries).
fn pieces(reply: &str, per: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < reply.len() {
        let mut end = (at + per).min(reply.len());
        while !reply.is_char_boundary(end) {
            end += 1;
        }
        out.push(&reply[at..end]);
        at = end;
    }
    out
}

/// The lines `EventWriter` writes, and those of a `Stream::new`'s events written after each
/// piece with `write_events`.
fn both(reply: &str, per: usize, options: &CallOptions) -> (String, String) {
    let mut written = Vec::new();
    let mut writer = EventWriter::new(
        options.clone(),
        None,
        Shape::Native,
        usize::MAX,
        &mut written,
    );
    let mut stream = Stream::new(options.clone());
    let (mut events, mut plain) = (Vec::new(), Vec::new());
    for piece in pieces(reply, per) {
        writer.write_str(piece).unwrap();
        stream.feed_into(piece, &mut events);
        stream
            .write_events(&mut events, Shape::Native, &mut plain)
            .unwrap();
    }
    writer.finish().unwrap();
    drop(writer);
    events.extend(stream.finish());
    stream
        .write_events(&mut events, Shape::Native, &mut plain)
        .unwrap();
    (
        String::from_utf8(written).unwrap(),
        String::from_utf8(plain).unwrap(),
    )
}

const PROSE: &str = "  Some text,\tthen\u{b}more\u{c}\r\n  and \"quoted\" back\\slash \u{1}\u{1f} é\u{a0}\u{2003} x\u{3000}  ";

#[test]
fn prose_and_reasoning_are_written_as_a_plain_stream_writes_them() {
    let replies = [
        PROSE.to_owned(),
        format!("<think>{PROSE}</think>{PROSE}"),
        format!("{PROSE}</think>{PROSE}"),
        format!(
            "<think>{PROSE}</think>{PROSE}<tool_call>{{\"name\": \"f\", \"arguments\": {{\"a\": 1}}}}</tool_call>{PROSE}"
        ),
        format!("{PROSE}[TOOL_CALLS][{{\"name\": \"f\", \"arguments\": {{}}}}]"),
        format!(
            "{PROSE}{{\"a\": 1}} and {{}} then ```json\n{{\"name\": \"f\", \"arguments\": {{}}}}\n```"
        ),
    ];
    for reply in &replies {
        for per in 1..=9 {
            let (written, plain) = both(reply, per, &CallOptions::default());
            assert_eq!(written, plain, "{per}: {reply:?}");
            assert!(written.contains("{\"event\":\"text\""), "{reply:?}");
        }
    }
}

#[test]
fn every_fixture_is_written_as_a_plain_stream_writes_it() {
    let cases = calls_cases();
    for case in &cases {
        for per in [1, 2, 3, 5, 9] {
            let (written, plain) = both(&case.input, per, &case.options);
            assert_eq!(written, plain, "{} {per}: {:?}", case.name, case.input);
        }
    }
    assert!(cases.len() > 100, "{} replies", cases.len());
}

/// The reply cut in pieces whose sizes cycle from 1 to `max` bytes (at character boundaries).
fn cycled(reply: &str, max: usize) -> Vec<&str> {
    let (mut out, mut at, mut size) = (Vec::new(), 0, 0);
    while at < reply.len() {
        size = size % max + 1;
        let mut end = (at + size).min(reply.len());
        while !reply.is_char_boundary(end) {
            end += 1;
        }
        out.push(&reply[at..end]);
        at = end;
    }
    out
}

/// The value of the first member `key` found in `value`, depth first.
fn find<'a>(value: &'a serde_json::Value, key: &str) -> Option<&'a serde_json::Value> {
    match value {
        serde_json::Value::Object(m) => {
            m.get(key).or_else(|| m.values().find_map(|v| find(v, key)))
        }
        serde_json::Value::Array(items) => items.iter().find_map(|v| find(v, key)),
        _ => None,
    }
}

/// A long string argument fed a byte (or a few) at a time is read without the call reader
/// for most bytes (the stream's run of plain string bytes): an escape, a quote, a backslash,
/// a control character or a character of several bytes ends the run wherever it falls, and
/// what the `arguments` events add up to is the string `call_end` gives, with the lines of
/// `EventWriter` those of a plain stream.
#[test]
fn a_long_string_read_in_runs_is_shown_as_written() {
    // Each edge at many offsets from the run's start (the runs' lengths follow the
    // `arguments` events' schedule, so a long string meets them at all sorts of places).
    let edges = [
        "\\\"",
        "\\\\",
        "\\n",
        "\\u00e9",
        "\\ud83d\\ude00",
        "é",
        "😀",
        "\u{7f}",
        "\t",
        "/",
    ];
    let mut text = String::new();
    for i in 0..400 {
        text.push_str(&"word ".repeat(i % 13));
        text.push_str(edges[i % edges.len()]);
    }
    let reply = format!(
        "<tool_call>\n{{\"name\": \"f\", \"arguments\": {{\"text\": \"{text}\", \"n\": 1}}}}\n</tool_call>"
    );
    let options = CallOptions::default();
    // (The raw tab, a slip `calls` takes as it is, is what `\t` gives.)
    let expected: serde_json::Value =
        serde_json::from_str(&format!("\"{}\"", text.replace('\t', "\\t"))).unwrap();
    let splits: Vec<Vec<&str>> = (1..=9)
        .map(|per| pieces(&reply, per))
        .chain([cycled(&reply, 4), cycled(&reply, 7)])
        .collect();
    for split in &splits {
        let mut written = Vec::new();
        let mut writer = EventWriter::new(
            options.clone(),
            None,
            Shape::Native,
            usize::MAX,
            &mut written,
        );
        let mut stream = Stream::new(options.clone());
        let (mut events, mut plain) = (Vec::new(), Vec::new());
        for piece in split {
            writer.write_str(piece).unwrap();
            stream.feed_into(piece, &mut events);
            stream
                .write_events(&mut events, Shape::Native, &mut plain)
                .unwrap();
        }
        writer.finish().unwrap();
        drop(writer);
        events.extend(stream.finish());
        stream
            .write_events(&mut events, Shape::Native, &mut plain)
            .unwrap();
        let written = String::from_utf8(written).unwrap();
        assert_eq!(written, String::from_utf8(plain).unwrap(), "{split:?}");
        // The string as the `arguments` events build it, and as `call_end` gives it.
        let (mut shown, mut ended) = (String::new(), None);
        for line in written.lines() {
            let event: serde_json::Value = serde_json::from_str(line).unwrap();
            match event["event"].as_str() {
                Some("arguments") => {
                    if let Some(s) = event["members"]["text"].as_str() {
                        shown.push_str(s);
                    } else if event["path"] == "/text" {
                        shown.push_str(event["append"].as_str().unwrap());
                    }
                }
                Some("call_end") => ended = find(&event["call"], "text").cloned(),
                _ => {}
            }
        }
        assert_eq!(ended.as_ref(), Some(&expected), "{split:?}");
        assert_eq!(shown, expected.as_str().unwrap(), "{split:?}");
    }
}
