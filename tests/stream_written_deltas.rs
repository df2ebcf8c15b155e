//! `calls --stream` writes the live `text` and `reasoning` events from where the stream keeps
//! their deltas (`calls::EventWriter`), not from events that own them: its lines are the lines
//! of a plain `Stream`'s events written one by one, for every `calls` fixture and for prose
//! with every kind of white space and escape, fed 1 to 9 bytes at a time.

use toolmend_core::calls::{CallOptions, EventWriter, Shape, Stream};

mod common;
use common::calls_cases;

/// The reply cut in pieces of the sizes `size` gives in turn (at character boundaries).
fn cut(reply: &str, mut size: impl FnMut() -> usize) -> Vec<&str> {
    let (mut out, mut at) = (Vec::new(), 0);
    while at < reply.len() {
        let mut end = (at + size()).min(reply.len());
        while !reply.is_char_boundary(end) {
            end += 1;
        }
        out.push(&reply[at..end]);
        at = end;
    }
    out
}

/// The reply cut in pieces of `per` bytes (at character boundaries).
fn pieces(reply: &str, per: usize) -> Vec<&str> {
    cut(reply, || per)
}

/// The lines `EventWriter` writes, and those of a `Stream::new`'s events written after each
/// piece with `write_events`.
fn both(reply: &str, per: usize, options: &CallOptions) -> (String, String) {
    both_pieces(&pieces(reply, per), options)
}

/// The lines `EventWriter` writes for the reply in these pieces, at most `max_bytes` read,
/// each piece given to `write_bytes` (`as_bytes`) or to `write_str`.
fn writer_lines(
    pieces: &[&str],
    options: &CallOptions,
    max_bytes: usize,
    as_bytes: bool,
) -> String {
    let mut written = Vec::new();
    let mut writer = EventWriter::new(
        options.clone(),
        None,
        Shape::Native,
        max_bytes,
        &mut written,
    );
    for &piece in pieces {
        if as_bytes {
            writer.write_bytes(piece.as_bytes()).unwrap();
        } else {
            writer.write_str(piece).unwrap();
        }
    }
    writer.finish().unwrap();
    drop(writer);
    String::from_utf8(written).unwrap()
}

/// [`both`] for the reply in these pieces; the lines `EventWriter` writes are the same
/// whether each piece is given to `write_str` or to `write_bytes` (what `calls --stream` reads
/// with: its reads of one byte, of a few bytes of ASCII and of more each have a path of their
/// own).
fn both_pieces(pieces: &[&str], options: &CallOptions) -> (String, String) {
    let written = writer_lines(pieces, options, usize::MAX, false);
    assert_eq!(
        writer_lines(pieces, options, usize::MAX, true),
        written,
        "write_bytes and write_str"
    );
    let mut stream = Stream::new(options.clone());
    let (mut events, mut plain) = (Vec::new(), Vec::new());
    for &piece in pieces {
        stream.feed_into(piece, &mut events);
        stream
            .write_events(&mut events, Shape::Native, &mut plain)
            .unwrap();
    }
    events.extend(stream.finish());
    stream
        .write_events(&mut events, Shape::Native, &mut plain)
        .unwrap();
    (written, String::from_utf8(plain).unwrap())
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
    let mut size = 0;
    cut(reply, || {
        size = size % max + 1;
        size
    })
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
        let (written, plain) = both_pieces(split, &options);
        assert_eq!(written, plain, "{split:?}");
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

/// Prose that leaves and takes again the writer's lane of plain prose (a chunk of text or
/// reasoning that starts nothing is written straight from the reply) at every kind of edge:
/// white space waiting when a lane starts or ends, bytes that may start a marker (`<`, `[`,
/// an `f` that may begin `functools`, `{`), markers and reasoning tags split across pieces,
/// noise tokens, code fences, characters of 2 to 4 bytes, control characters and quotes to
/// escape, a reply that starts as a quoted string or with a byte order mark.
const EDGES: &[&str] = &[
    "plain words, then of fun and functoo free  \t x",
    "  lead\u{a0}space\u{3000}and\u{2003}wide é ü 中文 😀 a\u{85}b \u{b}v\u{c}f\r\nnew",
    "esc \"q\" back\\slash \u{1}\u{1f}\u{7f} tab\there \n\n para",
    "a < b and c [d] e {x} f {} g [1, 2] h ``` i ` j",
    "<think>mull it over < maybe </thin not yet</think> answer\n then",
    "<think>\n  deep \u{a0} thought é\n\n</think>\n\n  text after  ",
    "before</think>after the close with no open",
    "text <|im_end|> more <|im_start|> and [THINK]inner[/THINK] out",
    "text then ```json\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n``` after",
    "text <tool_call>{\"name\": \"f\", \"arguments\": {\"a\": \"é\"}}</tool_call> after",
    "<think>why</think>so [TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}}]",
    "\"quoted reply\" then more",
    "\u{feff}bom then words",
    "x",
    " ",
    "trailing space   ",
];

#[test]
fn prose_lane_edges_are_written_as_a_plain_stream_writes_them() {
    let options = CallOptions::default();
    for reply in EDGES {
        for per in 1..=4 {
            let (written, plain) = both(reply, per, &options);
            assert_eq!(written, plain, "{per}: {reply:?}");
        }
        for most in [4, 7] {
            let (written, plain) = both_pieces(&cycled(reply, most), &options);
            assert_eq!(written, plain, "1-{most}: {reply:?}");
        }
    }
    // Long runs of each, in every cycle: a lane holds over many pieces.
    let long: String = EDGES.iter().map(|r| r.repeat(3)).collect();
    for most in [1, 4, 7] {
        let (written, plain) = both_pieces(&cycled(&long, most), &options);
        assert_eq!(written, plain, "1-{most}: the edges together");
    }
}

/// `write_bytes` and `write_str` mixed, as `calls --stream` reads (`write_bytes`: a character
/// cut between two reads waits for its other bytes): the lines of a plain `Stream` fed the
/// text so read.
#[test]
fn prose_fed_as_bytes_and_text_is_written_as_a_plain_stream_writes_it() {
    // Those with no call (after which the text comes at the end).
    let reply: String = EDGES
        .iter()
        .filter(|r| !r.contains("name"))
        .copied()
        .collect();
    let bytes = reply.as_bytes();
    let options = CallOptions::default();
    // Every phase of the turns: each byte comes alone, as bytes and as text, somewhere.
    for phase in 0..12 {
        let mut written = Vec::new();
        let mut writer = EventWriter::new(
            options.clone(),
            None,
            Shape::Native,
            usize::MAX,
            &mut written,
        );
        // Bytes cut anywhere, in turns of 1 to 4 bytes, every third as text when it is.
        let (mut at, mut turn) = (0, phase);
        let (mut fed, mut pending) = (Vec::new(), Vec::new());
        while at < bytes.len() {
            turn += 1;
            let end = (at + turn % 4 + 1).min(bytes.len());
            match std::str::from_utf8(&bytes[at..end]) {
                Ok(text) if pending.is_empty() && turn % 3 == 0 => {
                    writer.write_str(text).unwrap();
                    fed.push(text.to_owned());
                }
                _ => {
                    writer.write_bytes(&bytes[at..end]).unwrap();
                    // What the writer feeds: the characters read in full.
                    pending.extend_from_slice(&bytes[at..end]);
                    let valid = match std::str::from_utf8(&pending) {
                        Ok(text) => text.len(),
                        Err(e) => e.valid_up_to(),
                    };
                    let text: Vec<u8> = pending.drain(..valid).collect();
                    fed.push(String::from_utf8(text).unwrap());
                }
            };
            at = end;
        }
        writer.finish().unwrap();
        drop(writer);
        let fed: Vec<&str> = fed.iter().map(String::as_str).collect();
        let (_, plain) = both_pieces(&fed, &options);
        let written = String::from_utf8(written).unwrap();
        assert_eq!(written, plain, "{phase}");
        assert!(written.contains("{\"event\":\"reasoning\""), "{written}");
    }
}

/// Letters of the text that may begin a marker (`f` may begin `functools`) are held back in
/// the writer's lane of plain prose, a byte at a time, and shown with the byte that tells
/// they begin nothing: the lines of a plain stream, whether that byte is a plain letter,
/// white space, a byte to escape, another letter that may begin a marker, a byte that is not
/// ASCII, the marker itself in full, or the end of the reply.
#[test]
fn letters_held_in_the_prose_lane_are_written_as_a_plain_stream_writes_them() {
    const HELD: &[&str] = &[
        "we fetch the file for you from it",
        "if of off fun f\tfi\nfu\"f\\f é fé ff fff fu fun",
        "fu<b> f[1] f{} f` functoo functool functools x",
        "see functools[{\"name\": \"f\", \"arguments\": {\"a\": 1}}] after",
        "ends held f",
        "ends held funct",
        "ends after f ",
        "<think>no lane for letters f fu</think> then f fo functools",
    ];
    let options = CallOptions::default();
    for reply in HELD {
        for per in 1..=3 {
            let (written, plain) = both(reply, per, &options);
            assert_eq!(written, plain, "{per}: {reply:?}");
        }
        for most in [2, 4, 7] {
            let (written, plain) = both_pieces(&cycled(reply, most), &options);
            assert_eq!(written, plain, "1-{most}: {reply:?}");
        }
    }
    // A letter held, then a chunk of several bytes (the lane is left with it held).
    let pieces = [
        "text f",
        "u",
        "nky and f",
        "ro",
        "m f",
        "unctools[{\"name\": \"f\", \"arguments\": {}}]",
    ];
    let (written, plain) = both_pieces(&pieces, &options);
    assert_eq!(written, plain);
}

/// A chunk of a few bytes with a letter that may begin a marker, or a byte to escape, is read
/// in the writer's lane a byte at a time, and the whole chunk left to the plain way (nothing of
/// it taken) where one of its bytes leaves the lane: the lines of a plain stream, for chunks of
/// 2 to 8 bytes starting at every offset.
#[test]
fn chunks_with_held_letters_or_escapes_are_written_as_a_plain_stream_writes_them() {
    const REPLIES: &[&str] = &[
        "text of fun \"quoted\" f\\g functools[{\"name\": \"f\", \"arguments\": {}}] more",
        "a fb f\"c ff[fu] f{x} f\u{1}y functoo \"\"\\ f\n\tf ends held fun",
        "<think>a \"b\" c\\d\te</think> then fa f<b> fé x",
    ];
    let options = CallOptions::default();
    for reply in REPLIES {
        for per in 2..=8 {
            for first in 1..=per {
                let mut sizes = std::iter::once(first).chain(std::iter::repeat(per));
                let pieces = cut(reply, || sizes.next().unwrap_or(per));
                let (written, plain) = both_pieces(&pieces, &options);
                assert_eq!(written, plain, "{first} then {per}: {reply:?}");
            }
        }
    }
}

/// A reply fed a byte at a time within the size, then past it: the `end` record says the
/// input's whole size, as for the same bytes in one read (the writer counts the bytes read
/// in its plain path apart from the total, and adds them up when it leaves that path).
#[test]
fn bytes_read_a_byte_at_a_time_count_toward_the_size() {
    let reply = "hello there, a reply that is longer than the limit allows";
    let limit = 20;
    let lines = |per: usize, bytes: bool| {
        let text = writer_lines(&pieces(reply, per), &CallOptions::default(), limit, bytes);
        text.lines().last().unwrap().to_owned()
    };
    let whole = lines(reply.len(), true);
    assert!(whole.contains(&reply.len().to_string()), "{whole}");
    for per in [1, 2, 3] {
        for bytes in [true, false] {
            assert_eq!(lines(per, bytes), whole, "{per} {bytes}");
        }
    }
}
