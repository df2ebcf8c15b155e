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
