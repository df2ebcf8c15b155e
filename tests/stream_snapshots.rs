//! Whole parameters on request (issue 30, item 2): `calls --stream --arguments-events
//! snapshot` and `Stream::with_snapshots` give the events of the default stream, each
//! `arguments` event carrying `parameters` too: what the events so far add up to, the
//! parameters of its call's `call_end` on its last one. The default output has no such field.

use serde_json::{Map, Value, json};
use toolmend_core::calls::{ArgumentsEvents, CallOptions, Event, EventWriter, Shape, Stream};

mod common;
use common::{code, stderr, stdout};

fn fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/stream");
    std::fs::read(path.join(name)).unwrap()
}

/// `toolmend calls --stream ARGS` on `input`: the events.
fn stream(args: &[&str], input: &[u8]) -> Vec<Value> {
    let out = common::toolmend()
        .args(["calls", "--stream"])
        .args(args)
        .write_stdin(input)
        .output()
        .unwrap();
    assert!(stderr(&out).is_empty(), "stderr: {}", stderr(&out));
    stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// Each `arguments` event's `parameters` is what the deltas so far add up to, and the last
/// one of a call is its `call_end`'s parameters. How many `arguments` events there were.
fn snapshots_hold(events: &[Value]) -> usize {
    let mut built: Vec<Map<String, Value>> = Vec::new();
    let mut last: Vec<Option<Value>> = Vec::new();
    let mut n = 0;
    for e in events {
        let Some(i) = e["index"].as_u64().map(|i| i as usize) else {
            continue;
        };
        if built.len() <= i {
            built.resize(i + 1, Map::new());
            last.resize(i + 1, None);
        }
        match e["event"].as_str() {
            Some("arguments") => {
                let event: Event = arguments_event(e);
                let Event::Arguments { path, added, .. } = &event else {
                    unreachable!()
                };
                assert!(added.apply(&mut built[i], path), "{e}");
                assert_eq!(e["parameters"], Value::Object(built[i].clone()), "{e}");
                last[i] = Some(e["parameters"].clone());
                n += 1;
            }
            Some("call_end") => {
                if let Some(shown) = &last[i] {
                    assert_eq!(shown, &e["call"]["parameters"], "{e}");
                }
            }
            _ => {}
        }
    }
    n
}

/// An `arguments` event read back from its JSON (for `Added::apply`, the library's rule).
fn arguments_event(e: &Value) -> Event {
    use toolmend_core::calls::Added;
    let added = if let Some(t) = e["append"].as_str() {
        Added::Text(t.to_owned())
    } else if let Some(m) = e["members"].as_object() {
        Added::Members(m.clone())
    } else {
        Added::Items(e["items"].as_array().expect("items").clone())
    };
    Event::Arguments {
        index: e["index"].as_u64().unwrap() as usize,
        path: e["path"].as_str().unwrap().to_owned(),
        added,
        open: e["open"].as_str().map(str::to_owned),
        parameters: None,
    }
}

/// The events without their `parameters` field.
fn without_parameters(events: &[Value]) -> Vec<Value> {
    events
        .iter()
        .map(|e| {
            let mut e = e.clone();
            if let Some(m) = e.as_object_mut() {
                m.remove("parameters");
            }
            e
        })
        .collect()
}

#[test]
fn the_binary_gives_whole_parameters_on_request() {
    for (name, framing) in [
        ("openai_tool_calls.sse", "sse"),
        ("anthropic_tool_use.sse", "sse"),
        ("hermes_content.sse", "sse"),
        ("ollama_chat.jsonl", "jsonl"),
    ] {
        let input = fixture(name);
        let plain = stream(&["--input", framing], &input);
        let whole = stream(
            &["--input", framing, "--arguments-events", "snapshot"],
            &input,
        );
        assert!(
            plain.iter().all(|e| e.get("parameters").is_none()),
            "{name}: the default carries no parameters"
        );
        let n = snapshots_hold(&whole);
        assert!(n > 0, "{name}: no arguments event");
        assert!(
            whole
                .iter()
                .filter(|e| e["event"] == "arguments")
                .all(|e| e["parameters"].is_object()),
            "{name}"
        );
        assert_eq!(without_parameters(&whole), plain, "{name}");
        // `delta`, named, is the default.
        let named = stream(&["--input", framing, "--arguments-events", "delta"], &input);
        assert_eq!(named, plain, "{name}");
    }
}

#[test]
fn a_raw_reply_fed_as_it_comes_carries_them_too() {
    let reply = "Sure.<tool_call>{\"name\": \"write\", \"arguments\": {\"path\": \"a.txt\", \
                 \"lines\": [\"one\", \"two\", {\"k\": [1, 2]}], \"text\": \"a long text\"}}</tool_call>";
    let whole = stream(&["--arguments-events", "snapshot"], reply.as_bytes());
    assert!(snapshots_hold(&whole) > 0);
    let last = whole.iter().rfind(|e| e["event"] == "arguments").unwrap();
    assert_eq!(
        last["parameters"],
        json!({"path": "a.txt", "lines": ["one", "two", {"k": [1, 2]}], "text": "a long text"})
    );
}

#[test]
fn arguments_events_without_stream_is_a_usage_error() {
    let out = common::toolmend()
        .args(["calls", "--arguments-events", "snapshot"])
        .write_stdin("{}")
        .output()
        .unwrap();
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("--stream"), "{}", stderr(&out));
}

/// The library: fed a character at a time, and in chunks of every size up to 9, a stream
/// made `with_snapshots` (plain or writing) gives the default events plus whole parameters
/// that hold, and writes the same lines apart from them.
#[test]
fn the_library_carries_them_at_any_chunking() {
    let replies = [
        "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": \"xyz\", \"b\": [1, {\"c\": \"é😀\"}], \"d\": {}}}</tool_call>",
        "[TOOL_CALLS][{\"name\": \"g\", \"arguments\": {\"q\": \"one\"}}, {\"name\": \"h\", \"arguments\": {\"r\": [true, null]}}]",
        "{\"name\": \"s\", \"arguments\": \"{\\\"k\\\": \\\"v w\\\", \\\"n\\\": 12}\"}",
    ];
    for reply in replies {
        for chunk in 1..10 {
            let mut lines = Vec::new();
            for (writing, snapshots) in [(false, false), (false, true), (true, false), (true, true)]
            {
                let options = CallOptions::default();
                let kind = if snapshots {
                    ArgumentsEvents::Snapshot
                } else {
                    ArgumentsEvents::Delta
                };
                let chars: Vec<char> = reply.chars().collect();
                let mut out = Vec::new();
                if writing {
                    let mut w =
                        EventWriter::new(options, None, Shape::Native, usize::MAX, &mut out)
                            .with_arguments_events(kind);
                    for piece in chars.chunks(chunk) {
                        w.write_str(&piece.iter().collect::<String>()).unwrap();
                    }
                    w.finish().unwrap();
                } else {
                    let mut s = Stream::new(options).with_arguments_events(kind);
                    let mut events = Vec::new();
                    for piece in chars.chunks(chunk) {
                        s.feed_into(&piece.iter().collect::<String>(), &mut events);
                    }
                    events.extend(s.finish());
                    s.write_events(&mut events, Shape::Native, &mut out)
                        .unwrap();
                }
                let values: Vec<Value> = String::from_utf8(out)
                    .unwrap()
                    .lines()
                    .map(|l| serde_json::from_str(l).unwrap())
                    .collect();
                if snapshots {
                    assert!(snapshots_hold(&values) > 0, "{reply}");
                }
                lines.push(without_parameters(&values));
            }
            assert!(lines.iter().all(|l| *l == lines[0]), "{reply} at {chunk}");
        }
    }
}
