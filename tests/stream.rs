//! `calls::Stream` against `calls` on the whole reply, through the library.
//!
//! For every `calls` fixture, fed whole, one byte (character) at a time, split in two at
//! every character boundary, and split at random points:
//! - agreement: the `text` and `reasoning` deltas, applied with the `corrected` events (which
//!   replace what was shown), give `calls`' text and reasoning,
//!   the `call_end` calls are `calls`' calls in order, `incomplete` and `invalid` its cut-off
//!   and rejected calls, and the `end` event carries its result;
//! - every `call_start` index ends exactly once (`call_end`, `incomplete`, `invalid` or
//!   `retracted`), and `arguments` come between the two;
//! - stability: each `arguments` event keeps every closed value of the one before, its open
//!   string only grows, and the call's final parameters keep them all, except under a path a
//!   `revised` event named before (a key the model wrote again: `calls` keeps its last
//!   value); a `revised` names a path an `arguments` event showed, once, no `arguments`
//!   follow it, and a call that ends with `call_end` after one has a `duplicate_key` repair.
// The growth test reads this thread's CPU clock through libc.
#![allow(unsafe_code)]

use proptest::prelude::*;
use serde_json::{Map, Value};
use toolmend_core::calls::{CallOptions, Event, Extracted, Failure, Prose, Shape, Stream, extract};

mod common;
use common::{CallsCase, calls_cases, split_at};

/// Feeds `chunks` and returns every event.
fn run(options: &CallOptions, chunks: &[&str]) -> Vec<Event> {
    let mut stream = Stream::new(options.clone());
    let mut events = Vec::new();
    for chunk in chunks {
        events.extend(stream.feed(chunk));
    }
    events.extend(stream.finish());
    assert!(stream.finish().is_empty(), "a second finish gives nothing");
    events
}

/// Whether the JSON pointer `at` is `revised` or under one of them.
fn under(at: &str, revised: &[String]) -> bool {
    revised.iter().any(|r| {
        at == r
            || at
                .strip_prefix(r.as_str())
                .is_some_and(|rest| rest.starts_with('/'))
    })
}

/// `partial` holds nothing that `later` contradicts: every closed value is equal, the open
/// string (at `open`) is a prefix of the later one, open containers recurse; values at or
/// under a `revised` path are not compared.
fn kept(
    partial: &Value,
    later: &Value,
    open: &[String],
    at: &str,
    revised: &[String],
) -> Result<(), String> {
    if under(at, revised) {
        return Ok(());
    }
    match (partial, later) {
        (Value::Object(p), Value::Object(l)) => {
            for (k, v) in p {
                let here = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                if under(&here, revised) {
                    continue;
                }
                let Some(w) = l.get(k) else {
                    return Err(format!("{at}/{k} shown, then gone"));
                };
                if open.first() == Some(&pointer_seg(k)) {
                    kept(v, w, &open[1..], &here, revised)?;
                } else if v != w && !under(&here, revised) {
                    return Err(format!("{here} was {v}, then {w}"));
                }
            }
            Ok(())
        }
        (Value::Array(p), Value::Array(l)) => {
            if p.len() > l.len() {
                return Err(format!("{at} had {} elements, then {}", p.len(), l.len()));
            }
            for (i, (v, w)) in p.iter().zip(l).enumerate() {
                let here = format!("{at}/{i}");
                if open.first() == Some(&i.to_string()) {
                    kept(v, w, &open[1..], &here, revised)?;
                } else if v != w && !under(&here, revised) {
                    return Err(format!("{here} was {v}, then {w}"));
                }
            }
            Ok(())
        }
        (Value::String(p), Value::String(l)) if open.is_empty() => {
            if l.starts_with(p.as_str()) {
                Ok(())
            } else {
                Err(format!("{at} was {p:?}, then {l:?}"))
            }
        }
        _ if partial == later => Ok(()),
        _ => Err(format!("{at} was {partial}, then {later}")),
    }
}

fn pointer_seg(key: &str) -> String {
    key.to_owned()
}

/// The open path as its (unescaped) segments; `None` (closed) is no segment at all, and then
/// nothing may change.
fn segments(open: &Option<String>) -> Option<Vec<String>> {
    open.as_ref().map(|p| {
        p.split('/')
            .skip(1)
            .map(|s| s.replace("~1", "/").replace("~0", "~"))
            .collect()
    })
}

/// Whether `params` has a value at the JSON pointer `at` (`""`: itself).
fn holds(params: &Value, at: &str) -> bool {
    at.is_empty() || params.pointer(at).is_some()
}

/// Applies one `arguments` event (its JSON: format 2 of docs/streaming.md) to `params`, as a
/// consumer would: `append` adds text to the string at `path`, `members` adds members to the
/// object at `path` (none it has already), `items` adds items to the array at `path`.
fn apply(params: &mut Value, event: &Value) -> Result<(), String> {
    let path = event["path"].as_str().ok_or("no path")?;
    let target = params
        .pointer_mut(path)
        .ok_or_else(|| format!("nothing at {path:?}"))?;
    match (target, &event["append"], &event["members"], &event["items"]) {
        (Value::String(s), Value::String(more), Value::Null, Value::Null) => s.push_str(more),
        (Value::Object(m), Value::Null, Value::Object(more), Value::Null) => {
            for (k, v) in more {
                if m.insert(k.clone(), v.clone()).is_some() {
                    return Err(format!("{path}/{k} added twice"));
                }
            }
        }
        (Value::Array(a), Value::Null, Value::Null, Value::Array(more)) => {
            a.extend(more.iter().cloned())
        }
        (target, ..) => return Err(format!("no growth that fits {target} at {path:?}")),
    }
    Ok(())
}

/// The event as its JSON line reads (`to_value` would write numbers anew: `1E3` as `1e+3`).
fn json_of(event: &Event) -> Value {
    serde_json::from_str(&serde_json::to_string(event).unwrap()).unwrap()
}

/// `parameters` as their JSON reads, numbers as [`json_of`] reads them.
fn reread(parameters: &Map<String, Value>) -> Value {
    serde_json::from_str(&serde_json::to_string(parameters).unwrap()).unwrap()
}

/// The `open` of an `arguments` event's JSON.
fn open_of(event: &Value) -> Option<String> {
    event["open"].as_str().map(str::to_owned)
}

/// The parameters the `arguments` events of call `index` rebuild after each of them, with
/// their open path.
fn rebuilt(events: &[Event], index: usize) -> Vec<(Map<String, Value>, Option<String>)> {
    let mut params = Value::Object(Map::new());
    let mut out = Vec::new();
    for event in events {
        if matches!(event, Event::Arguments { index: i, .. } if *i == index) {
            let json = json_of(event);
            apply(&mut params, &json).unwrap_or_else(|e| panic!("{e}: {json}"));
            let Value::Object(map) = &params else {
                unreachable!()
            };
            out.push((map.clone(), open_of(&json)));
        }
    }
    out
}

/// Checks one run's events against `calls` on the whole reply.
fn check(case: &CallsCase, what: &str, events: &[Event], expected: &Result<Extracted, Failure>) {
    let fail = |msg: String| -> ! {
        panic!(
            "{} ({what}): {msg}\ninput: {:?}\nevents: {events:#?}",
            case.name, case.input
        )
    };
    let found = match expected {
        Ok(found) => Some(found),
        Err(failure) => failure.extracted.as_deref(),
    };
    let (mut text, mut reasoning) = (String::new(), String::new());
    let mut calls = Vec::new();
    let mut incomplete = Vec::new();
    let mut rejected = Vec::new();
    let mut started: Vec<Option<String>> = Vec::new();
    let mut ended: Vec<bool> = Vec::new();
    let mut shown: Vec<Option<(Value, Option<String>)>> = Vec::new();
    let mut revised: Vec<Vec<String>> = Vec::new();
    let mut end = None;
    let end_index = |index: usize, ended: &mut Vec<bool>| {
        if ended.len() <= index {
            ended.resize(index + 1, false);
        }
        if ended[index] {
            fail(format!("index {index} ended twice"));
        }
        ended[index] = true;
    };
    for event in events {
        if end.is_some() {
            fail("an event after end".into());
        }
        match event {
            Event::Text(delta) => text.push_str(delta),
            Event::Reasoning(delta) => reasoning.push_str(delta),
            // What a consumer does with it (docs/streaming.md): the field is replaced.
            Event::Corrected { field, value } => match field {
                Prose::Text => text = value.clone(),
                Prose::Reasoning => reasoning = value.clone(),
            },
            Event::CallStart { index, tool, .. } => {
                if *index != started.len() {
                    fail(format!("call_start {index} out of order"));
                }
                started.push(Some(tool.clone()));
                shown.push(None);
                revised.push(Vec::new());
            }
            Event::Arguments { index, .. } => {
                if *index >= started.len() || ended.get(*index) == Some(&true) {
                    fail(format!("arguments for {index} outside its start and end"));
                }
                if !revised[*index].is_empty() {
                    fail(format!("arguments for {index} after a revised"));
                }
                // Rebuilt from the events as a consumer reads them: their JSON, applied in
                // order to what the ones before made.
                let json = json_of(event);
                let mut value = shown[*index]
                    .as_ref()
                    .map_or_else(|| Value::Object(Map::new()), |(v, _)| v.clone());
                if let Err(e) = apply(&mut value, &json) {
                    fail(format!("arguments of {index}: {e}: {json}"));
                }
                let open = open_of(&json);
                if let Some((before, before_open)) = &shown[*index] {
                    let Some(segs) = segments(before_open) else {
                        fail(format!("arguments for {index} after its final ones"));
                    };
                    if let Err(e) = kept(before, &value, &segs, "", &[]) {
                        fail(format!("arguments of {index} changed: {e}"));
                    }
                }
                shown[*index] = Some((value, open));
            }
            Event::Revised { index, path, .. } => {
                if *index >= started.len() || ended.get(*index) == Some(&true) {
                    fail(format!("revised for {index} outside its start and end"));
                }
                if !shown[*index]
                    .as_ref()
                    .is_some_and(|(params, _)| holds(params, path))
                {
                    fail(format!("revised {path:?} for {index}: not shown"));
                }
                if under(path, &revised[*index]) {
                    fail(format!("revised {path:?} for {index} twice"));
                }
                revised[*index].push(path.clone());
            }
            Event::CallEnd { index, call } => {
                end_index(*index, &mut ended);
                if started.get(*index).and_then(Option::as_deref) != Some(call.tool.as_str()) {
                    fail(format!("call_end {index} without its call_start"));
                }
                if let Some((before, None)) = &shown[*index]
                    && revised[*index].is_empty()
                    && *before != reread(&call.parameters)
                {
                    fail(format!(
                        "call {index}: the arguments events rebuild {before}, call_end has {:?}",
                        call.parameters
                    ));
                }
                if let Some((before, before_open)) = &shown[*index] {
                    let final_params = reread(&call.parameters);
                    let segs = segments(before_open).unwrap_or_default();
                    if let Err(e) = kept(before, &final_params, &segs, "", &revised[*index]) {
                        fail(format!(
                            "call {index}: the final parameters contradict: {e}"
                        ));
                    }
                }
                // A revised that excuses a change must come from a repeated key. One given
                // early (the repeat was read) for a call whose end keeps all that was shown
                // excuses nothing: `calls` may read the call from an object without the repeat.
                let excuses_a_change = shown[*index].as_ref().is_none_or(|(before, open)| {
                    let final_params = reread(&call.parameters);
                    let segs = segments(open).unwrap_or_default();
                    kept(before, &final_params, &segs, "", &[]).is_err()
                });
                if !revised[*index].is_empty()
                    && excuses_a_change
                    && !call
                        .repairs
                        .iter()
                        .any(|r| r.kind == toolmend_core::RepairKind::DuplicateKey)
                {
                    fail(format!(
                        "call {index}: revised {:?} without a repeated key",
                        revised[*index]
                    ));
                }
                calls.push(call.clone());
            }
            Event::Incomplete {
                index,
                incomplete: cut,
            } => {
                end_index(*index, &mut ended);
                incomplete.push(cut.clone());
            }
            Event::Invalid {
                index,
                rejected: bad,
            } => {
                end_index(*index, &mut ended);
                rejected.push(bad.clone());
            }
            Event::Retracted { index, .. } => end_index(*index, &mut ended),
            Event::End { result, .. } => end = Some(result.clone()),
        }
    }
    let Some(end) = end else {
        fail("no end event".into());
    };
    if *end != *expected {
        fail("the end event is not calls' result".into());
    }
    for (i, _) in started.iter().enumerate() {
        if ended.get(i) != Some(&true) {
            fail(format!("call {i} never ended"));
        }
    }
    let want_text = found.and_then(|f| f.text.clone()).unwrap_or_default();
    let want_reasoning = found.and_then(|f| f.reasoning.clone()).unwrap_or_default();
    if text != want_text {
        fail(format!("text {text:?}, calls says {want_text:?}"));
    }
    if reasoning != want_reasoning {
        fail(format!(
            "reasoning {reasoning:?}, calls says {want_reasoning:?}"
        ));
    }
    let want_calls = found.map(|f| f.calls.clone()).unwrap_or_default();
    if calls != want_calls {
        fail(format!("calls {calls:?}, calls says {want_calls:?}"));
    }
    let want_incomplete = found.map(|f| f.incomplete.clone()).unwrap_or_default();
    if incomplete != want_incomplete {
        fail(format!(
            "incomplete {incomplete:?}, calls says {want_incomplete:?}"
        ));
    }
    let want_rejected = found.map(|f| f.rejected.clone()).unwrap_or_default();
    if rejected != want_rejected {
        fail(format!(
            "rejected {rejected:?}, calls says {want_rejected:?}"
        ));
    }
}

/// The character boundaries of `text`, ends included.
fn boundaries(text: &str) -> Vec<usize> {
    (0..=text.len())
        .filter(|&i| text.is_char_boundary(i))
        .collect()
}

#[test]
fn fixtures_whole_and_byte_by_byte() {
    for case in calls_cases() {
        let expected = extract(&case.input, &case.options);
        check(
            &case,
            "whole",
            &run(&case.options, &[&case.input]),
            &expected,
        );
        let bounds = boundaries(&case.input);
        let chars: Vec<&str> = bounds.windows(2).map(|w| &case.input[w[0]..w[1]]).collect();
        check(
            &case,
            "one character at a time",
            &run(&case.options, &chars),
            &expected,
        );
    }
}

#[test]
fn fixtures_split_at_every_boundary() {
    for case in calls_cases() {
        let expected = extract(&case.input, &case.options);
        for &cut in &boundaries(&case.input) {
            let chunks = split_at(&case.input, &[cut]);
            check(
                &case,
                &format!("split at {cut}"),
                &run(&case.options, &chunks),
                &expected,
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn fixtures_split_at_random_points(seeds in prop::collection::vec(any::<prop::sample::Index>(), 1..12)) {
        for case in calls_cases() {
            let bounds = boundaries(&case.input);
            let mut cuts: Vec<usize> = seeds.iter().map(|s| bounds[s.index(bounds.len())]).collect();
            cuts.sort_unstable();
            let chunks = split_at(&case.input, &cuts);
            let expected = extract(&case.input, &case.options);
            check(&case, &format!("split at {cuts:?}"), &run(&case.options, &chunks), &expected);
        }
    }
}

#[test]
fn progress_comes_before_the_end() {
    let options = CallOptions::default();
    let reply = "Sure.\n<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"a.txt\", \"size\": 12, \"content\": \"hello world\"}}\n</tool_call>";
    let mut stream = Stream::new(options);
    let mut before_end = Vec::new();
    for chunk in reply.as_bytes().chunks(7) {
        before_end.extend(stream.feed(std::str::from_utf8(chunk).unwrap()));
    }
    let starts: Vec<_> = before_end
        .iter()
        .filter(|e| matches!(e, Event::CallStart { tool, .. } if tool == "write_file"))
        .collect();
    assert_eq!(starts.len(), 1, "{before_end:#?}");
    let args = rebuilt(&before_end, 0);
    // A string shown while open; a number only once a delimiter follows it.
    assert!(
        args.iter().any(
            |(p, open)| p.get("content").is_some_and(|c| c != "hello world")
                && open.as_deref() == Some("/content")
        ),
        "{args:#?}"
    );
    assert!(
        args.iter()
            .all(|(p, _)| p.get("size").is_none_or(|s| s == 12))
    );
    let (last, open) = args.last().unwrap();
    assert_eq!(last["content"], "hello world");
    assert_eq!(*open, None);
    assert_eq!(stream.closed_calls(), 1);
}

#[test]
fn numbers_literals_and_keys_wait_for_their_end() {
    let mut stream = Stream::new(CallOptions::default());
    let mut events = Vec::new();
    // The parameters rebuilt after each event of the last chunk.
    let mut shown = |chunk: &str| -> Vec<Map<String, Value>> {
        let before = rebuilt(&events, 0).len();
        events.extend(stream.feed(chunk));
        rebuilt(&events, 0)
            .into_iter()
            .skip(before)
            .map(|(p, _)| p)
            .collect()
    };
    let first = shown("<tool_call>{\"name\": \"f\", \"arguments\": {\"n\": 12");
    assert!(first.iter().all(|p| !p.contains_key("n")), "{first:?}");
    let second = shown("3, \"flag\": t");
    assert_eq!(second.last().unwrap().get("n"), Some(&Value::from(123)));
    assert!(second.iter().all(|p| !p.contains_key("flag")), "{second:?}");
    let third = shown("rue, \"ke");
    assert_eq!(third.last().unwrap().get("flag"), Some(&Value::Bool(true)));
    assert!(third.iter().all(|p| !p.contains_key("ke")), "{third:?}");
    let fourth = shown("y\": \"v");
    assert_eq!(fourth.last().unwrap().get("key"), Some(&Value::from("v")));
}

#[test]
fn a_cut_off_call_is_never_a_call() {
    let mut stream = Stream::new(CallOptions::default());
    let mut events =
        stream.feed("<tool_call>{\"name\": \"rm\", \"arguments\": {\"path\": \"/tmp/x\", \"dry");
    events.extend(stream.finish());
    assert!(events.iter().all(|e| !matches!(e, Event::CallEnd { .. })));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Incomplete { index: 0, incomplete } if incomplete.tool.as_deref() == Some("rm")))
    );
}

#[test]
fn a_call_inside_reasoning_opened_by_the_template_is_retracted() {
    let mut stream = Stream::new(CallOptions::default());
    let mut events = stream
        .feed("I could call <tool_call>{\"name\": \"rm\", \"arguments\": {}}</tool_call> but no.");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::CallStart { tool, .. } if tool == "rm"))
    );
    events.extend(stream.feed("</think>No action needed."));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Retracted { index: 0, .. })),
        "{events:#?}"
    );
    events.extend(stream.finish());
    assert!(events.iter().all(|e| !matches!(e, Event::CallEnd { .. })));
}

#[test]
fn events_serialize_as_one_object_each() {
    let mut stream = Stream::new(CallOptions::default());
    let mut events = stream.feed("[TOOL_CALLS]get_time[ARGS]{\"tz\": \"UT");
    events.extend(stream.feed("C\"}"));
    events.extend(stream.finish());
    let lines: Vec<String> = events
        .iter()
        .map(|e| serde_json::to_string(e).unwrap())
        .collect();
    assert_eq!(
        lines[0],
        r#"{"event":"call_start","index":0,"tool":"get_time"}"#
    );
    assert_eq!(
        lines[1],
        r#"{"event":"arguments","index":0,"path":"","members":{"tz":"UT"},"open":"/tz"}"#
    );
    // What the second chunk adds: the rest of the string, then the parameters are complete.
    assert_eq!(
        lines[2],
        r#"{"event":"arguments","index":0,"path":"/tz","append":"C","open":null}"#
    );
    assert!(lines.contains(&r#"{"event":"call_end","index":0,"call":{"tool":"get_time","parameters":{"tz":"UTC"},"repairs":[]}}"#.to_owned()), "{lines:#?}");
    assert!(
        lines
            .last()
            .unwrap()
            .starts_with(r#"{"event":"end","ok":true,"value":{"calls":[{"tool":"get_time""#),
        "{lines:#?}"
    );
}

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

/// Feeds `reply` one character at a time: the events given while feeding, and those of
/// `finish`.
fn per_char(options: &CallOptions, reply: &str) -> (Vec<Event>, Vec<Event>) {
    let mut stream = Stream::new(options.clone());
    let mut fed = Vec::new();
    for (at, c) in reply.char_indices() {
        fed.extend(stream.feed(&reply[at..at + c.len_utf8()]));
    }
    (fed, stream.finish())
}

/// The `revised` events' (index, path).
fn revised(events: &[Event]) -> Vec<(usize, &str)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Revised { index, path, .. } => Some((*index, path.as_str())),
            _ => None,
        })
        .collect()
}

fn tool_call(arguments: &str) -> String {
    format!("<tool_call>{{\"name\": \"set\", \"arguments\": {arguments}}}</tool_call>")
}

/// A key written again after its value was shown: `revised` names it as soon as the repeat is
/// read (before its new value), the call shows no more `arguments`, and `call_end` has the
/// last value with a `duplicate_key` repair.
#[test]
fn a_repeated_key_is_revised_as_soon_as_it_is_read() {
    let options = CallOptions::default();
    for (arguments, repeat, path) in [
        (r#"{"a": 1, "b": 2, "a": 3}"#, r#", "a""#, "/a"),
        (r#"{"o": {"k": 1, "j": 2, "k": 3}}"#, r#", "k""#, "/o/k"),
        (
            r#"{"l": [{"q": "x", "q": "y"}], "z": 1}"#,
            r#", "q""#,
            "/l/0/q",
        ),
        // The same value: the stream cannot know it will be.
        (r#"{"a": 1, "b": 2, "a": 1}"#, r#", "a""#, "/a"),
        (
            r#"{"s": "first", "n": 0, "s": "second", "s": "third"}"#,
            r#", "s""#,
            "/s",
        ),
        // The arguments key itself: all of the parameters.
        (r#"{"a": 1}, "arguments": {"a": 2}"#, r#", "arguments""#, ""),
    ] {
        let reply = tool_call(arguments);
        // Up to the repeated key's closing quote, a character at a time.
        let cut = reply.rfind(repeat).unwrap() + repeat.len();
        let mut stream = Stream::new(options.clone());
        let mut events = Vec::new();
        for (at, c) in reply[..cut].char_indices() {
            events.extend(stream.feed(&reply[at..at + c.len_utf8()]));
        }
        assert_eq!(revised(&events), [(0, path)], "{reply}: {events:#?}");
        let at = events
            .iter()
            .position(|e| matches!(e, Event::Revised { .. }))
            .unwrap();
        assert!(
            events[..at]
                .iter()
                .any(|e| matches!(e, Event::Arguments { .. })),
            "{reply}: revised before anything was shown"
        );
        let mut rest = Vec::new();
        for (at, c) in reply[cut..].char_indices() {
            rest.extend(stream.feed(&reply[cut + at..cut + at + c.len_utf8()]));
        }
        rest.extend(stream.finish());
        assert!(revised(&rest).is_empty(), "{reply}: {rest:#?}");
        assert!(
            rest.iter().all(|e| !matches!(e, Event::Arguments { .. })),
            "{reply}: arguments after revised: {rest:#?}"
        );
        let Some(Event::CallEnd { call, .. }) =
            rest.iter().find(|e| matches!(e, Event::CallEnd { .. }))
        else {
            panic!("{reply}: no call_end: {rest:#?}");
        };
        assert!(
            call.repairs
                .iter()
                .any(|r| r.kind == toolmend_core::RepairKind::DuplicateKey),
            "{reply}: {call:?}"
        );
        let event = serde_json::to_value(&events[at]).unwrap();
        assert_eq!(event["event"], "revised");
        assert_eq!(event["path"], path);
        assert!(
            event["reason"].as_str().unwrap().contains("again"),
            "{event}"
        );
    }
}

/// When the stream had stopped reading a call before the repeat (a part it could not vouch
/// for), the repeat is known at the end: `revised` then comes in `finish`, before `call_end`,
/// for each shown value the final call does not keep, and for nothing else.
#[test]
fn a_key_repeated_after_a_repair_is_revised_at_the_end() {
    let options = CallOptions::default();
    for (arguments, want) in [
        (
            r#"{"city": "Oslo", "confirm": "YESty": "Oslo", "confirm": "YES"}"#,
            vec![(0, "/confirm")],
        ),
        (r#"{"a": 1, "b": 'x', "a": 2}"#, vec![(0, "/a")]),
        (r#"{"o": {"k": 1, "x": 'y', "k": 2}}"#, vec![(0, "/o/k")]),
        // The same value again: nothing shown changes.
        (r#"{"a": 1, "b": tru, "a": 1}"#, vec![]),
        // The arguments key itself, after a slip in the call object: all of the parameters.
        (r#"{"a": 1}, 'x': 1, "arguments": {"a": 2}"#, vec![(0, "")]),
    ] {
        let reply = tool_call(arguments);
        let (fed, end) = per_char(&options, &reply);
        assert!(revised(&fed).is_empty(), "{reply}: {fed:#?}");
        assert!(
            fed.iter().any(|e| matches!(e, Event::Arguments { .. })),
            "{reply}"
        );
        assert_eq!(revised(&end), want, "{reply}: {end:#?}");
        let call_end = end
            .iter()
            .position(|e| matches!(e, Event::CallEnd { .. }))
            .unwrap();
        assert!(
            end[..call_end]
                .iter()
                .filter(|e| matches!(e, Event::Revised { .. }))
                .count()
                == want.len(),
            "{reply}: revised after call_end"
        );
    }
}

/// No `revised` for what is no repeat (a key inside a string's text, the same key in sibling
/// objects or in two calls), nor for a repeated key whose first value was never shown.
#[test]
fn no_revised_without_a_repeat_that_was_shown() {
    let options = CallOptions::default();
    for reply in [
        tool_call(r#"{"a": 1, "b": "then \"a\": 2, \"b\": 3", "c": "{\"a\": 4}"}"#),
        tool_call(r#"{"x": {"k": 1}, "y": {"k": 2}, "k": 3}"#),
        tool_call(r#""{\"a\": 1, \"b\": \"\\\"a\\\": 2\"}""#),
        r#"[TOOL_CALLS][{"name": "set", "arguments": {"a": 1}}, {"name": "set", "arguments": {"a": 2}}]"#.to_owned(),
    ] {
        let (fed, end) = per_char(&options, &reply);
        assert!(
            fed.iter().any(|e| matches!(e, Event::Arguments { .. })),
            "{reply}"
        );
        assert!(revised(&fed).is_empty() && revised(&end).is_empty(), "{reply}: {fed:#?}");
    }
    // Shown: `{}`, then the rest in one chunk: the repeated key was never shown.
    let reply = tool_call(r#"{"a": 1, "b": 2, "a": 3}"#);
    let cut = reply.find("{\"a\"").unwrap() + 1;
    let mut stream = Stream::new(options.clone());
    let mut events = stream.feed(&reply[..cut]);
    assert!(
        rebuilt(&events, 0).iter().any(|(p, _)| p.is_empty()),
        "{events:#?}"
    );
    events.extend(stream.feed(&reply[cut..]));
    events.extend(stream.finish());
    assert!(revised(&events).is_empty(), "{events:#?}");
    // Whole: nothing shown, nothing revised.
    let mut stream = Stream::new(options);
    let mut events = stream.feed(&reply);
    events.extend(stream.finish());
    assert!(revised(&events).is_empty(), "{events:#?}");
}

/// A call a server streams (`feed_call`) whose arguments repeat a key.
#[test]
fn a_repeated_key_in_a_server_call_is_revised() {
    let mut stream = Stream::new(CallOptions::default());
    let mut events = stream.feed_call(0, Some("call_1"), Some("set"), "");
    for piece in ["{\"a\"", ": 1, ", "\"b\": 2", ", \"a\"", ": 3}"] {
        events.extend(stream.feed_call(0, None, None, piece));
    }
    assert_eq!(revised(&events), [(0, "/a")], "{events:#?}");
    events.extend(stream.finish());
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::CallEnd { call, .. } if call.parameters["a"] == 3)),
        "{events:#?}"
    );
}

/// Arguments whose keys come from a few names (so they repeat, at the top and nested), with
/// values the stream can vouch for and slips it cannot (single quotes, a bare word, a
/// missing comma), so a repeat is read as it comes or only known at the end.
fn repeating_arguments() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        (0..20u8).prop_map(|n| n.to_string()),
        "[a-c]{0,3}".prop_map(|s| format!("\"{s}\"")),
        Just("true".to_owned()),
        Just("'q'".to_owned()),
        Just("tru".to_owned()),
        Just("\"x\\\"a\\\": 1\"".to_owned()),
    ];
    let value = leaf.prop_recursive(2, 12, 4, |inner| {
        prop_oneof![
            prop::collection::vec(("[abk]", inner.clone()), 0..4).prop_map(|members| {
                let members: Vec<String> = members
                    .into_iter()
                    .map(|(k, v)| format!("\"{k}\": {v}"))
                    .collect();
                format!("{{{}}}", members.join(", "))
            }),
            prop::collection::vec(inner, 0..3).prop_map(|items| format!("[{}]", items.join(", "))),
        ]
    });
    prop::collection::vec(("[abk]", value, prop::bool::weighted(0.05)), 1..6).prop_map(|members| {
        let mut out = String::from("{");
        for (i, (k, v, no_comma)) in members.iter().enumerate() {
            if i > 0 {
                out.push_str(if *no_comma { " " } else { ", " });
            }
            out.push_str(&format!("\"{k}\": {v}"));
        }
        out.push('}');
        out
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Repeated keys in every position, fed a character at a time and split at random: the
    /// same checks as the fixtures' (a shown value contradicted only under an earlier
    /// `revised`, which needs a `duplicate_key` repair).
    #[test]
    fn repeated_keys_are_revised_or_kept(
        arguments in repeating_arguments(),
        encoded in any::<bool>(),
        seeds in prop::collection::vec(any::<prop::sample::Index>(), 1..6),
    ) {
        let arguments = if encoded { Value::from(arguments).to_string() } else { arguments };
        let input = tool_call(&arguments);
        let case = CallsCase { name: "generated".into(), input: input.clone(), options: CallOptions::default() };
        let expected = extract(&input, &case.options);
        let bounds = boundaries(&input);
        let chars: Vec<&str> = bounds.windows(2).map(|w| &input[w[0]..w[1]]).collect();
        check(&case, "one character at a time", &run(&case.options, &chars), &expected);
        let mut cuts: Vec<usize> = seeds.iter().map(|s| bounds[s.index(bounds.len())]).collect();
        cuts.sort_unstable();
        check(&case, &format!("split at {cuts:?}"), &run(&case.options, &split_at(&input, &cuts)), &expected);
    }
}

/// Replies the calls fuzz target found where a call the stream never announced (its JSON
/// stopped being read before its name) came before one it showed, of the same tool: the
/// shown call's `call_end` must be the call that keeps what it showed, not the first one of
/// its tool (each failed before: "the final parameters contradict").
#[test]
fn an_unannounced_call_of_the_same_tool_does_not_take_a_shown_calls_end() {
    for json in [
        // Command R list: the first get_time call is never announced (its JSON breaks before its arguments close), the second is.
        r##""<|RT_ACTION|>[\n {\"tool_call_id\": \"0\", \"tool_name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}},\n {\"tool_call_id\": \"1\", \"tool_name\": \"get_time\", \"parameters\": {\"tzallfunctools, \"tool_name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}},\n {\"tool_call_id\": \"1\", \"tool_name\": \"get_time\", \"parameters\": {\"tz\": \"UTC\"}}\n]<|E\": \"UTC\"}}\n]<|END_ACTION|>""##,
        // a Responses object with two get_weather calls, the first in a broken item.
        r##""{\"id\": \"resp_1\", \"object\": \"response\", \"created_at\": 1, \"status\": \"completed\", \"model\": \"gpt-4.1\", \"oc_2\", \"call_id\": \"call_9\", \"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\":\\\"Rome\\\"}\", \"sutput\": [{\"type\": \"reasoning\", \"id\": \"rs_0\", \"summary\":-[{\"type\": \"summary_text\", \"text\": \"The user wants the weather.\"}]}, {\"type\": \"message\", \"id\": \"msg_1\", \"role\": \"assistant\", \"status\": \"completed\", \"content\": [{\"type\": \"output_text\", \"text\": \"On it.\", \"anNotations\": []}]}, {\"type\": \"function_call\", \"id\": \"fc_2\", \"call_id\": \"call_9\", \"name\": \"get_weather\", \"arguments\": \"{\\\"c:ity\\\":\\\"Rome\\\"}\", \"status\": \"completed\"}], \"incomplete_details\": null}""##,
        // a call in prose that calls repairs before the one the stream shows.
        r##""<tool_calls>\n<tool_call>get_weather<A ca\tl looks like {\"name\": \"my_tool~\", \"arguments\": {\"x\"J 1}} iTool_sep>\n<arg_key>city</arg_key>\n<arg_von</a</arg_key>\n<arg_value>Lisbon</arg_vaguments\": {\"x\": 1}} iTool_sep>\n<arg_key>city</arg_key>\n<arg_von</a</arg_key>\n<arg_value>Lisbon</arg_value>\n</tool_call{\"itool_clue>\n</tool_call{\"itool_call>get_weather<tool_rg_vn generalalue>.Port<|plugin|>ue>\n</tool_call>\n</tool_caol_calls>\n<tool_call>get_weather<A call looks like {\"name\": \"my_tool~\", \"arguments\": {\"x\": 1}} iTool_sep>\n<arg_key>city</arg_key>\n<arg_von</a</arg_key>\n<arg_value>Lisbon</arg_value>\n</tool_call{\"itool_call>get_weather<tool_rg_vn generalalue>.Port<|plugin|>ue>\n</tool_call>\n</tool_callslls>""##,
        // two f calls in a string the stream reads as prose; the first one is not announced.
        r##""m\\\\\\\"e\": \"gtetie_m\", \"par\u000e\u000e\u000eNt\": \"draft\", \"appen\u000e\u000e\u000e\u000e\u000e\u000e\u000e\u000e\u000e{\"tool\":\"f\",\"parameters\":{\"id\":12345678901234567890123\u000e\f\u000e\u000e\u000e\u000e\u000e\u000e\u000e\u000e.5e-3}}\u000e\u000e\u000e\u000e\u000e\u000e\", \"appen\u000e\u000e\u000e\u000e\u000e\u000e\u000e\u000e\u000e{\"tool\":\"f\",\"parameters\":{\"id\": false}""##,
    ] {
        let input: String = serde_json::from_str(json).unwrap();
        let case = CallsCase {
            name: "fuzz regression".into(),
            input: input.clone(),
            options: CallOptions::default(),
        };
        let expected = extract(&input, &case.options);
        let bounds = boundaries(&input);
        let chars: Vec<&str> = bounds.windows(2).map(|w| &input[w[0]..w[1]]).collect();
        check(
            &case,
            "one character at a time",
            &run(&case.options, &chars),
            &expected,
        );
        for &cut in &bounds {
            let chunks = split_at(&input, &[cut]);
            check(
                &case,
                &format!("split at {cut}"),
                &run(&case.options, &chunks),
                &expected,
            );
        }
    }
}

/// The bytes of the events `Stream::writing` writes for `reply` fed `chunk` bytes at a time,
/// as `calls --stream` writes them: (`arguments` events, every event but `end`, `end`).
fn written_sizes(reply: &str, chunk: usize) -> (usize, usize, usize) {
    let mut stream = Stream::writing(CallOptions::default());
    let (mut events, mut out) = (Vec::new(), Vec::new());
    let mut sizes = (0, 0, 0);
    let mut count = |out: &mut Vec<u8>| {
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
        out.clear();
    };
    for piece in reply.as_bytes().chunks(chunk) {
        stream.feed_into(std::str::from_utf8(piece).unwrap(), &mut events);
        stream
            .write_events(&mut events, Shape::Native, &mut out)
            .unwrap();
        count(&mut out);
    }
    let mut end = stream.finish();
    stream
        .write_events(&mut end, Shape::Native, &mut out)
        .unwrap();
    count(&mut out);
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
