//! The `calls` extractor through the library: `extract` on the reply, and the calls filter.
//!
//! - no panic;
//! - what is written for a reply (both shapes, success or failure) is valid JSON, and the
//!   `openai` shape's `arguments` text is a JSON object;
//! - a JSON object given as a call's arguments, in the bare envelope or in a Hermes
//!   `<tool_call>`, comes out as that call's parameters unchanged and unrepaired, written as
//!   the args pipeline writes it (every number's text kept; issue 14, point 6);
//! - the input as a JSON string parameter comes back byte for byte in every format family
//!   tried, with reasoning before the call still read as reasoning: markers inside a JSON
//!   string are text (issue 14, point 2);
//! - the calls filter writes one record for a whole reply, and one per non-blank jsonl line;
//! - `calls::Stream` fed the reply in chunks (sizes taken from the reply's own bytes, and one
//!   character at a time) agrees with `extract`: its text and reasoning deltas concatenate to
//!   the reply's, its `call_end` calls are the calls, its `end` event is the result, every
//!   announced call ends once, and each call's shown arguments only grow: the call's final
//!   parameters keep every value shown, except at or under a path a `revised` event named
//!   before (a key written again); a `revised` names a shown path, once, no `arguments`
//!   follow it, and a call it precedes that ends with `call_end` has a `duplicate_key`
//!   repair;
//! - `calls::EventWriter` (what `calls --stream` writes with) fed the same chunks as bytes and
//!   as text writes exactly the lines of the plain `Stream`'s events, written one by one: its
//!   fast lanes (plain prose, a string's run) change nothing;
//! - the input read as a server's stream (`calls --stream --input sse|jsonl`: `Deltas` into a
//!   `Stream`), whole, in chunks and one character at a time, gives well formed events that
//!   agree with their own `end` event, the same `end` for every cut, and `EventWriter` with
//!   that framing writes the plain `Stream`'s lines. (fuzz/seed.py seeds the fixtures' SSE and
//!   jsonl streams and whole API responses.)

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};
use toolmend_core::calls::{
    ARGUMENTS_STEP, CallOptions, CallsFilter, CallsFilterOptions, DeltaFraming, Deltas, Event,
    EventWriter, Extracted, Failure, Prose, Shape, Stream, extract,
};
use toolmend_core::{Code, Framing, Mender, Options};

#[path = "common.rs"]
mod common;
use common::*;

fn written(extracted: &Extracted) {
    for shape in [Shape::Native, Shape::OpenAi] {
        let text = extracted.to_value(shape).to_string();
        json(&text, "the calls value");
        let value: Value = serde_json::from_str(&text).expect("written from a Value");
        for call in value["calls"].as_array().expect("calls is an array") {
            if shape == Shape::OpenAi {
                let arguments = call["arguments"].as_str().expect("arguments text");
                json(arguments, "arguments");
                assert!(arguments.starts_with('{'), "{arguments}");
            } else {
                assert!(call["parameters"].is_object(), "{call}");
            }
        }
    }
}

fn records(framing: Framing, data: &[u8]) -> usize {
    let mut filter = CallsFilter::new(CallsFilterOptions {
        framing,
        records: true,
        ..CallsFilterOptions::default()
    });
    let (mut out, mut err) = (Vec::new(), Vec::new());
    filter
        .run(data, None, &mut out, &mut err)
        .expect("in-memory I/O");
    assert!(err.is_empty(), "with records nothing goes to stderr");
    let out = std::str::from_utf8(&out).expect("records are UTF-8");
    for record in out.lines() {
        json(record, "a record");
        assert!(record.starts_with(r#"{"ok":"#), "{record}");
    }
    out.lines().count()
}

/// A valid JSON object as a call's arguments comes out as its parameters, written as the
/// args pipeline writes the object (`expected`): key order, escapes and number text kept.
fn arguments_kept(reply: &str, expected: &str) {
    let options = CallOptions::default();
    let found = match extract(reply, &options) {
        Ok(found) => found,
        // Nesting deeper than `max_nesting` (1000) is refused, valid or not.
        Err(f) if f.error.code == Code::TooDeep && could_be_too_deep(reply) => return,
        Err(f) => panic!("a clean call failed: {reply:?}: {}", f.error),
    };
    assert_eq!(
        found.calls.len(),
        1,
        "calls in {reply:?}: {:?}",
        found.calls
    );
    let call = &found.calls[0];
    assert_eq!(call.tool, "f");
    let got = Value::Object(call.parameters.clone()).to_string();
    // `args` keeps a valid escape as written (`\ud83d\ude00`); a call's parameters are values,
    // written with the character. Read back and written again, the two must be one text (key
    // order and number text included).
    assert!(
        got == expected || rewritten(&got).is_some_and(|g| Some(g) == rewritten(expected)),
        "parameters changed: {reply:?}\n  got: {got}\n want: {expected}"
    );
    assert!(
        no_real_repairs(&call.repairs),
        "clean arguments repaired: {reply:?}: {:?}",
        kinds(&call.repairs)
    );
}

/// `text` read as JSON and written again by serde_json (`None` if it does not read).
fn rewritten(text: &str) -> Option<String> {
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    serde::Deserialize::deserialize(&mut de)
        .ok()
        .map(|v: Value| v.to_string())
}

/// `text` as a string parameter comes back exactly, in calls of several format families.
fn string_kept(text: &str) {
    let args = serde_json::json!({ "s": text }).to_string();
    for reply in [
        format!("<think>r</think>Sure. {{\"tool\": \"f\", \"parameters\": {args}}} Done."),
        format!("<tool_call>\n{{\"name\": \"f\", \"arguments\": {args}}}\n</tool_call>"),
        format!("[TOOL_CALLS][{{\"name\": \"f\", \"arguments\": {args}}}]"),
        format!("<|python_tag|>{{\"name\": \"f\", \"parameters\": {args}}}"),
        format!(
            "<|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json<|message|>{args}<|call|>"
        ),
    ] {
        let found = extract(&reply, &CallOptions::default())
            .unwrap_or_else(|f| panic!("{reply:?}: {}", f.error));
        assert_eq!(found.calls.len(), 1, "{reply:?}: {:?}", found.calls);
        let call = &found.calls[0];
        assert_eq!(call.tool, "f", "{reply:?}");
        assert!(
            call.repairs.is_empty(),
            "{reply:?}: {:?}",
            kinds(&call.repairs)
        );
        assert_eq!(
            Value::Object(call.parameters.clone()).to_string(),
            args,
            "the string changed: {reply:?}"
        );
        if reply.starts_with("<think>") {
            assert_eq!(found.reasoning.as_deref(), Some("r"), "{reply:?}");
        }
    }
}

/// Cuts `text` at character boundaries into pieces of 1 to 16 bytes, sizes taken from the
/// text's own bytes (so the fuzzer controls them).
fn chunks(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let (mut from, mut k) = (0, 0);
    while from < text.len() {
        let mut to = (from + 1 + (bytes[k % bytes.len()] as usize % 16)).min(text.len());
        while !text.is_char_boundary(to) {
            to += 1;
        }
        out.push(&text[from..to]);
        from = to;
        k += 1;
    }
    out
}

/// Whether the JSON pointer `at` is one of `revised` or under one.
fn under(at: &str, revised: &[String]) -> bool {
    revised.iter().any(|r| {
        at == r
            || at
                .strip_prefix(r.as_str())
                .is_some_and(|rest| rest.starts_with('/'))
    })
}

/// Whether `before` (shown with `open` still being written) holds nothing `after` changes,
/// but at or under a `revised` path (`at`: the pointer of `before`).
fn kept(before: &Value, after: &Value, open: &[&str], at: &str, revised: &[String]) -> bool {
    if under(at, revised) {
        return true;
    }
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => b.iter().all(|(k, v)| {
            let here = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
            under(&here, revised)
                || a.get(k).is_some_and(|w| {
                    if open
                        .first()
                        .map(|s| s.replace("~1", "/").replace("~0", "~"))
                        == Some(k.clone())
                    {
                        kept(v, w, &open[1..], &here, revised)
                    } else {
                        v == w
                    }
                })
        }),
        (Value::Array(b), Value::Array(a)) => {
            b.len() <= a.len()
                && b.iter().zip(a).enumerate().all(|(i, (v, w))| {
                    let here = format!("{at}/{i}");
                    if open.first() == Some(&i.to_string().as_str()) {
                        kept(v, w, &open[1..], &here, revised)
                    } else {
                        v == w || under(&here, revised)
                    }
                })
        }
        (Value::String(b), Value::String(a)) if open.is_empty() => a.starts_with(b.as_str()),
        _ => before == after,
    }
}

/// `chunks` streamed with an `arguments` event due every `step` bytes of arguments, checked
/// against `expected` (`calls` on the whole reply).
fn streamed(chunks: &[&str], step: usize, expected: &Result<Extracted, Failure>) {
    let mut stream = Stream::new(CallOptions::default()).with_arguments_step(step);
    let mut events = Vec::new();
    for chunk in chunks {
        events.extend(stream.feed(chunk));
    }
    events.extend(stream.finish());
    agrees(&events, expected, true);
}

/// `chunks` of a server's stream read as `calls --stream --input sse|jsonl` reads them
/// (`Deltas` into a `Stream`; an error of the deltas ends the reply), with an `arguments`
/// event due every `step` bytes.
fn framed(chunks: &[&str], framing: DeltaFraming, step: usize) -> Vec<Event> {
    let mut stream = Stream::new(CallOptions::default()).with_arguments_step(step);
    let mut deltas = Deltas::new(framing);
    let mut events = Vec::new();
    let mut fed = Ok(());
    for chunk in chunks {
        fed = deltas
            .text(chunk, &mut stream)
            .map(|more| events.extend(more));
        if fed.is_err() {
            break;
        }
    }
    if fed.is_ok() {
        fed = deltas.end(&mut stream).map(|more| events.extend(more));
    }
    if let Err(error) = fed {
        events.extend(stream.abort(error));
    }
    events.extend(stream.finish());
    events
}

/// A server's stream (the input read as SSE and as jsonl) gives one result however it is
/// cut: read whole, in chunks and a character at a time, the events are well formed, applied
/// they give the `end` event's text, reasoning and calls, and every cut ends alike.
fn framed_agrees(text: &str, chunks: &[&str], chars: &[&str]) {
    for framing in [DeltaFraming::Sse, DeltaFraming::Jsonl] {
        let whole = framed(&[text], framing, 1);
        let Some(Event::End { result, .. }) = whole.last() else {
            panic!("{framing:?}: no end event last: {whole:?}");
        };
        // A reply ended by an error of the deltas (data that is not JSON, the server's error)
        // has no value (`Stream::abort`): what was shown before it stays shown.
        let whole_read = !matches!(&**result, Err(f) if f.extracted.is_none());
        agrees(&whole, result, whole_read);
        agrees(&framed(chunks, framing, 1), result, whole_read);
        agrees(&framed(chars, framing, ARGUMENTS_STEP), result, whole_read);
    }
}

/// `events` are well formed, end with `expected` and, applied, give its text, reasoning and
/// calls (when `content`).
fn agrees(events: &[Event], expected: &Result<Extracted, Failure>, content: bool) {
    let (mut text, mut reasoning, mut calls) = (String::new(), String::new(), Vec::new());
    let mut started = 0;
    let mut ended = Vec::new();
    let mut shown: Vec<Option<(Value, Option<String>)>> = Vec::new();
    let mut revised: Vec<Vec<String>> = Vec::new();
    let mut end = None;
    for event in events {
        match event {
            Event::Text(d) => text.push_str(d),
            Event::Reasoning(d) => reasoning.push_str(d),
            // The field shown so far is replaced (docs/streaming.md).
            Event::Corrected { field, value } => match field {
                Prose::Text => text = value.clone(),
                Prose::Reasoning => reasoning = value.clone(),
            },
            Event::CallStart { index, .. } => {
                // In order; an index skipped is a call that ended before its tool was known.
                assert!(*index >= started, "call_start out of order");
                for skipped in started..*index {
                    assert!(
                        ended.contains(&skipped),
                        "call {skipped} neither started nor ended before call {index} started"
                    );
                }
                started = *index + 1;
                shown.resize(started, None);
                revised.resize(started, Vec::new());
            }
            Event::Arguments {
                index,
                path,
                added,
                open,
                ..
            } => {
                assert!(revised[*index].is_empty(), "arguments after revised");
                // Rebuilt as a consumer does: what each event added, in order.
                let mut now = match &shown[*index] {
                    Some((Value::Object(before), _)) => before.clone(),
                    _ => Map::new(),
                };
                assert!(
                    added.apply(&mut now, path),
                    "{added:?} does not fit at {path:?}"
                );
                let now = Value::Object(now);
                if let Some((before, before_open)) = &shown[*index] {
                    let open = before_open.as_deref().expect("arguments after final ones");
                    let segs: Vec<&str> = open.split('/').skip(1).collect();
                    assert!(kept(before, &now, &segs, "", &[]), "{before} then {now}");
                }
                shown[*index] = Some((now, open.clone()));
            }
            Event::Revised { index, path, .. } => {
                assert!(!ended.contains(index), "revised after the call ended");
                let shown_here = shown.get(*index).and_then(Option::as_ref);
                assert!(
                    shown_here.is_some_and(
                        |(params, _)| path.is_empty() || params.pointer(path).is_some()
                    ),
                    "revised {path:?} not shown: {shown_here:?}"
                );
                assert!(!under(path, &revised[*index]), "revised {path:?} twice");
                revised[*index].push(path.clone());
            }
            Event::CallEnd { index, call } => {
                if let Some((before, None)) = &shown[*index]
                    && revised[*index].is_empty()
                {
                    // Complete and not revised: the events rebuilt the call's parameters.
                    assert_eq!(*before, Value::Object(call.parameters.clone()));
                }
                if let Some((before, open)) = &shown[*index] {
                    let open = open.as_deref().unwrap_or("");
                    let segs: Vec<&str> = open.split('/').skip(1).collect();
                    let last = Value::Object(call.parameters.clone());
                    assert!(
                        kept(before, &last, &segs, "", &revised[*index]),
                        "{before} then {last} (revised: {:?})",
                        revised[*index]
                    );
                }
                // A revised that excuses a change must come from a repeated key. One given
                // early (the repeat was read) for a call whose end keeps all that was shown
                // excuses nothing: `calls` may read the call from an object without the repeat.
                let excuses_a_change = shown[*index].as_ref().is_none_or(|(before, open)| {
                    let open = open.as_deref().unwrap_or("");
                    let segs: Vec<&str> = open.split('/').skip(1).collect();
                    !kept(
                        before,
                        &Value::Object(call.parameters.clone()),
                        &segs,
                        "",
                        &[],
                    )
                });
                assert!(
                    revised.get(*index).is_none_or(Vec::is_empty)
                        || !excuses_a_change
                        || call
                            .repairs
                            .iter()
                            .any(|r| r.kind == toolmend_core::RepairKind::DuplicateKey),
                    "revised {:?} without a repeated key: {call:?}",
                    revised[*index]
                );
                ended.push(*index);
                calls.push(call.clone());
            }
            Event::Incomplete { index, .. }
            | Event::Invalid { index, .. }
            | Event::Retracted { index, .. } => ended.push(*index),
            Event::End { result, .. } => end = Some(result.clone()),
        }
    }
    assert_eq!(
        end.as_deref(),
        Some(expected),
        "the end event is the result"
    );
    ended.sort_unstable();
    let indexes: Vec<usize> = (0..ended.len()).collect();
    assert_eq!(ended, indexes, "every index ends once");
    assert!(started <= ended.len());
    if !content {
        return;
    }
    let found = match expected {
        Ok(found) => Some(found),
        Err(failure) => failure.extracted.as_deref(),
    };
    let want =
        |f: fn(&Extracted) -> &Option<String>| found.and_then(|x| f(x).clone()).unwrap_or_default();
    assert_eq!(text, want(|x| &x.text), "text deltas");
    assert_eq!(reasoning, want(|x| &x.reasoning), "reasoning deltas");
    assert_eq!(calls, found.map(|f| f.calls.clone()).unwrap_or_default());
}

/// The lines `EventWriter` writes for `chunks` (read as bytes, or as text), and those of a
/// plain `Stream`'s events written after each chunk.
fn written_lines(
    chunks: &[&str],
    as_bytes: bool,
    framing: Option<DeltaFraming>,
) -> (Vec<u8>, Vec<u8>) {
    let mut written = Vec::new();
    let mut writer = EventWriter::new(
        CallOptions::default(),
        framing,
        Shape::Native,
        usize::MAX,
        &mut written,
    )
    .with_arguments_step(1);
    let mut stream = Stream::new(CallOptions::default()).with_arguments_step(1);
    let mut deltas = framing.map(Deltas::new);
    let (mut events, mut plain) = (Vec::new(), Vec::new());
    let mut ended = false;
    for &chunk in chunks {
        let more = if as_bytes {
            writer.write_bytes(chunk.as_bytes())
        } else {
            writer.write_str(chunk)
        };
        let more = more.expect("a Vec takes every write");
        match &mut deltas {
            None => stream.feed_into(chunk, &mut events),
            Some(deltas) => match deltas.text(chunk, &mut stream) {
                Ok(fed) => events.extend(fed),
                Err(error) => {
                    events.extend(stream.abort(error));
                    ended = true;
                }
            },
        }
        stream
            .write_events(&mut events, Shape::Native, &mut plain)
            .expect("a Vec takes every write");
        assert_eq!(
            more, !ended,
            "the writer wants more until the deltas end the reply"
        );
        if ended {
            break;
        }
    }
    writer.finish().expect("a Vec takes every write");
    drop(writer);
    if let Some(deltas) = deltas.as_mut().filter(|_| !ended) {
        match deltas.end(&mut stream) {
            Ok(fed) => events.extend(fed),
            Err(error) => events.extend(stream.abort(error)),
        }
    }
    events.extend(stream.finish());
    stream
        .write_events(&mut events, Shape::Native, &mut plain)
        .expect("a Vec takes every write");
    (written, plain)
}

fn written_as_a_plain_stream_writes(chunks: &[&str], framing: Option<DeltaFraming>) {
    for as_bytes in [true, false] {
        let (written, plain) = written_lines(chunks, as_bytes, framing);
        assert!(
            written == plain,
            "EventWriter (bytes: {as_bytes}, {framing:?}) wrote\n{}\na plain Stream\n{}",
            String::from_utf8_lossy(&written),
            String::from_utf8_lossy(&plain)
        );
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let expected = extract(text, &CallOptions::default());
        // A step of 1 shows the most partial parameters for the checks; the default, fewer.
        streamed(&chunks(text), 1, &expected);
        let chars: Vec<&str> = text
            .char_indices()
            .map(|(i, c)| &text[i..i + c.len_utf8()])
            .collect();
        streamed(&chars, ARGUMENTS_STEP, &expected);
        streamed(&chars, 1, &expected);
        if !text.starts_with('\u{feff}') {
            // (EventWriter skips a byte order mark that starts the input, as `calls` does.)
            written_as_a_plain_stream_writes(&chunks(text), None);
            written_as_a_plain_stream_writes(&chars, None);
            for framing in [DeltaFraming::Sse, DeltaFraming::Jsonl] {
                written_as_a_plain_stream_writes(&chunks(text), Some(framing));
            }
        }
        framed_agrees(text, &chunks(text), &chars);
        match extract(text, &CallOptions::default()) {
            Ok(extracted) => written(&extracted),
            Err(failure) => {
                if let Some(extracted) = &failure.extracted {
                    written(extracted);
                }
            }
        }
        let body = text.trim_ascii();
        let mut mender = Mender::new(Options::default());
        let expected = match mender.mend(body) {
            _ if !parse(text).is_some_and(|v| v.is_object()) => None,
            Ok(mended) => Some(mended.value().into_owned()),
            Err(e) if e.code == Code::TooDeep && could_be_too_deep(body) => None,
            Err(e) => panic!("args refused a valid object: {body:?}: {e}"),
        };
        if let Some(expected) = expected {
            arguments_kept(
                &format!(r#"{{"tool": "f", "parameters": {body}}}"#),
                &expected,
            );
            arguments_kept(
                &format!("<tool_call>\n{{\"name\": \"f\", \"arguments\": {body}}}\n</tool_call>"),
                &expected,
            );
        }
        string_kept(text);
    }
    assert_eq!(records(Framing::Whole, data), 1);
    // A byte order mark starts the stream, not its first line.
    let lines = data
        .strip_prefix(b"\xEF\xBB\xBF")
        .unwrap_or(data)
        .split(|&b| b == b'\n')
        .filter(|line| !line.trim_ascii().is_empty())
        .count();
    assert_eq!(records(Framing::Jsonl, data), lines, "jsonl records");
});
