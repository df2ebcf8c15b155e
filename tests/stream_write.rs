//! `EventWriter` (what `calls --stream` writes) against
//! `Stream::new` whose events are serialized one by one: the same bytes, for every `calls`
//! fixture fed whole, a character at a time, split in two at every character boundary and
//! split at random points, and for every recorded server stream in fixtures/stream/. A
//! writing stream writes the partial parameters from the text it keeps as it reads, so this
//! shows that text is what serializing the values gives, escapes and numbers included, and
//! that both give the same events. Both streams give an `arguments` event at every byte of
//! arguments (`with_arguments_step(1)`), so that the fixtures' short calls show partial
//! parameters to compare.

use std::path::Path;

use toolmend_core::calls::{CallOptions, DeltaFraming, Deltas, Event, EventWriter, Shape, Stream};

mod common;
use common::{CallsCase, calls_cases, split_at};

/// The events serialized one by one, as `calls --stream` wrote them before `write_events`.
fn serialized(events: &[Event], out: &mut Vec<u8>) {
    serialized_in(events, Shape::Native, out);
}

/// [`serialized`], calls in `shape`.
fn serialized_in(events: &[Event], shape: Shape, out: &mut Vec<u8>) {
    for event in events {
        match event {
            Event::Arguments { .. } => serde_json::to_writer(&mut *out, event).unwrap(),
            _ => serde_json::to_writer(&mut *out, &event.to_value(shape)).unwrap(),
        }
        out.push(b'\n');
    }
}

/// Both ways over `chunks`: (values serialized, written).
fn both(options: &CallOptions, chunks: &[&str]) -> (Vec<u8>, Vec<u8>) {
    both_in(options, chunks, Shape::Native)
}

/// [`both`], calls in `shape`.
fn both_in(options: &CallOptions, chunks: &[&str], shape: Shape) -> (Vec<u8>, Vec<u8>) {
    let mut values = Stream::new(options.clone()).with_arguments_step(1);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let mut lines =
        EventWriter::new(options.clone(), None, shape, usize::MAX, &mut b).with_arguments_step(1);
    for chunk in chunks {
        serialized_in(&values.feed(chunk), shape, &mut a);
        assert!(lines.write_str(chunk).unwrap());
    }
    serialized_in(&values.finish(), shape, &mut a);
    lines.finish().unwrap();
    drop(lines);
    (a, b)
}

fn same(name: &str, how: &str, (a, b): (Vec<u8>, Vec<u8>)) {
    if a != b {
        let a = String::from_utf8_lossy(&a);
        let b = String::from_utf8_lossy(&b);
        let at = a.lines().zip(b.lines()).position(|(x, y)| x != y);
        panic!(
            "{name} ({how}): written differs at line {at:?}\nvalues:  {:?}\nwritten: {:?}",
            at.and_then(|i| a.lines().nth(i)),
            at.and_then(|i| b.lines().nth(i))
        );
    }
}

fn boundaries(text: &str) -> Vec<usize> {
    (1..text.len())
        .filter(|&i| text.is_char_boundary(i))
        .collect()
}

#[test]
fn written_events_are_the_serialized_events_whole_and_per_character() {
    for CallsCase {
        name,
        input,
        options,
    } in calls_cases()
    {
        same(&name, "whole", both(&options, &[&input]));
        let cuts = boundaries(&input);
        same(
            &name,
            "per character",
            both(&options, &split_at(&input, &cuts)),
        );
    }
}

#[test]
fn written_events_are_the_serialized_events_in_the_openai_shape() {
    // The results (`call_end`, `end`) are written from the stream's result, in either shape.
    let mut ended = 0;
    for CallsCase {
        name,
        input,
        options,
    } in calls_cases()
    {
        let cuts: Vec<usize> = boundaries(&input).into_iter().step_by(3).collect();
        for (how, chunks) in [
            ("whole", vec![input.as_str()]),
            ("in pieces", split_at(&input, &cuts)),
        ] {
            let (a, b) = both_in(&options, &chunks, Shape::OpenAi);
            ended += String::from_utf8_lossy(&a)
                .matches("\"event\":\"call_end\"")
                .count();
            same(&name, &format!("openai shape, {how}"), (a, b));
        }
    }
    assert!(ended > 100, "{ended} call_end events compared");
}

#[test]
fn written_events_are_the_serialized_events_at_every_split_and_random_splits() {
    let mut seed: u64 = 0x5eed;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as usize
    };
    for CallsCase {
        name,
        input,
        options,
    } in calls_cases()
    {
        let cuts = boundaries(&input);
        for &cut in &cuts {
            same(
                &name,
                &format!("split at {cut}"),
                both(&options, &split_at(&input, &[cut])),
            );
        }
        for round in 0..8 {
            let mut some: Vec<usize> = cuts.iter().copied().filter(|_| next() % 5 == 0).collect();
            some.dedup();
            same(
                &name,
                &format!("random split {round}"),
                both(&options, &split_at(&input, &some)),
            );
        }
    }
}

#[test]
fn written_events_are_the_serialized_events_for_server_streams() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/stream");
    let (mut seen, mut with_arguments) = (0, 0);
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let framing = match path.extension().and_then(|e| e.to_str()) {
            Some("sse") => DeltaFraming::Sse,
            Some("jsonl") => DeltaFraming::Jsonl,
            _ => continue,
        };
        let text = std::fs::read_to_string(&path).unwrap();
        let options = CallOptions::default();
        let mut values = Stream::new(options.clone()).with_arguments_step(1);
        let mut dv = Deltas::new(framing);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let mut lines = EventWriter::new(options, Some(framing), Shape::Native, usize::MAX, &mut b)
            .with_arguments_step(1);
        for line in text.split_inclusive('\n') {
            serialized(&dv.text(line, &mut values).unwrap(), &mut a);
            assert!(lines.write_str(line).unwrap());
        }
        serialized(&dv.end(&mut values).unwrap(), &mut a);
        serialized(&values.finish(), &mut a);
        lines.finish().unwrap();
        drop(lines);
        // A stream with a call has its arguments compared; one whose call the server
        // dropped (gemini_malformed_call.sse) has its text and `incomplete` compared.
        let events = String::from_utf8_lossy(&a).into_owned();
        let compared = if events.contains("\"event\":\"call_start\"") {
            "\"event\":\"arguments\""
        } else {
            "\"event\":\"incomplete\""
        };
        assert!(
            events.contains(compared),
            "{}: no {compared} event to compare",
            path.display()
        );
        with_arguments += usize::from(events.contains("\"event\":\"arguments\""));
        same(&path.display().to_string(), "server stream", (a, b));
        seen += 1;
    }
    assert!(seen >= 3, "{seen} server streams");
    assert!(
        with_arguments >= 7,
        "{with_arguments} server streams with arguments"
    );
}

#[test]
fn written_parameters_escape_as_serde_json_does() {
    // Every control character raw and escaped, quotes, backslashes, `\/`, surrogate pairs,
    // non-ASCII, numbers as written, literals, nested containers, keys needing escapes.
    let mut args = String::from("{\"a\\\"b\\\\c\\u0001\": \"");
    for c in 0u8..0x20 {
        if c != b'\n' {
            args.push(c as char);
        }
        args.push_str(&format!("\\u{c:04x}"));
    }
    args.push_str(
        "\\\"\\\\\\/é\\u00e9\\ud83d\\ude00\u{7f}\", \"n\": [-0.5e3, 1E+2, 0], \"t\": true, \
         \"f\": false, \"z\": null, \"o\": {\"p\": [[], {}, [{\"q\": \"r\"}]]}, \"s/~\": \"x\"}",
    );
    let reply = format!("<tool_call>{{\"name\": \"f\", \"arguments\": {args}}}</tool_call>");
    same_per_character("escapes", &reply);
    // Encoded arguments (a JSON string holding the object), read by the nested reader.
    let encoded = serde_json::to_string(&args).unwrap();
    let reply = format!("<tool_call>{{\"name\": \"f\", \"arguments\": {encoded}}}</tool_call>");
    same_per_character("encoded escapes", &reply);
}

/// `reply` fed a character at a time both ways gives the same bytes, with the partial
/// parameters shown more than ten times.
fn same_per_character(name: &str, reply: &str) {
    let cuts = boundaries(reply);
    let (a, b) = both(&CallOptions::default(), &split_at(reply, &cuts));
    let shown = String::from_utf8_lossy(&a)
        .matches("\"event\":\"arguments\"")
        .count();
    assert!(shown > 10, "{name}: partial parameters shown {shown} times");
    same(name, "per character", (a, b));
}

/// `write_str` takes most reads by a count alone (`plain_left`): it must still give what
/// `write_bytes` gives for the same bytes, at every limit around the reply's length (the read
/// that crosses it ends the reply `too_large`), and when a read of bytes left a character
/// unfinished before it (a look at the held bytes, not the count).
#[test]
fn write_str_is_write_bytes_at_every_limit_and_after_a_cut_character() {
    let reply = "Café first. <tool_call>{\"name\": \"f\", \"arguments\": {\"s\": \"naïve ☃ text\"}}</tool_call> then bye";
    let pieces: Vec<&str> = {
        let mut v = Vec::new();
        let mut at = 0;
        for (i, _) in reply.char_indices().skip(1) {
            if i - at >= 3 {
                v.push(&reply[at..i]);
                at = i;
            }
        }
        v.push(&reply[at..]);
        v
    };
    let options = CallOptions::default();
    for limit in (0..=reply.len() + 2).chain([usize::MAX]) {
        let (mut by_str, mut by_bytes) = (Vec::new(), Vec::new());
        let mut s = EventWriter::new(options.clone(), None, Shape::Native, limit, &mut by_str);
        let mut b = EventWriter::new(options.clone(), None, Shape::Native, limit, &mut by_bytes);
        for piece in &pieces {
            let more = s.write_str(piece).unwrap();
            assert_eq!(
                more,
                b.write_bytes(piece.as_bytes()).unwrap(),
                "limit {limit}"
            );
        }
        s.finish().unwrap();
        b.finish().unwrap();
        drop((s, b));
        assert_eq!(
            String::from_utf8_lossy(&by_str),
            String::from_utf8_lossy(&by_bytes),
            "limit {limit}"
        );
    }
    // The first byte of "é" by bytes, then text: the held byte is not followed by the rest
    // of its character, whichever way the text comes.
    for then in ["more text", "\u{a9} more"] {
        let (mut by_str, mut by_bytes) = (Vec::new(), Vec::new());
        let mut s = EventWriter::new(
            options.clone(),
            None,
            Shape::Native,
            usize::MAX,
            &mut by_str,
        );
        let mut b = EventWriter::new(
            options.clone(),
            None,
            Shape::Native,
            usize::MAX,
            &mut by_bytes,
        );
        for w in [&mut s, &mut b] {
            w.write_str("Caf").unwrap();
            w.write_bytes(&[0xC3]).unwrap();
        }
        s.write_str(then).unwrap();
        b.write_bytes(then.as_bytes()).unwrap();
        s.finish().unwrap();
        b.finish().unwrap();
        drop((s, b));
        assert_eq!(
            String::from_utf8_lossy(&by_str),
            String::from_utf8_lossy(&by_bytes)
        );
        assert!(
            String::from_utf8_lossy(&by_str).contains("invalid_utf8"),
            "{}",
            String::from_utf8_lossy(&by_str)
        );
    }
}
