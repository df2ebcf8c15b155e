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
use toolmend_core::calls::{
    ARGUMENTS_STEP, CallOptions, Event, EventWriter, Extracted, Failure, Prose, Shape, Stream,
    extract,
};

#[path = "../common/mod.rs"]
mod common;
use common::{CallsCase, calls_cases, split_at};

/// Feeds `chunks` to a stream with the default `arguments` step and returns every event.
fn run(options: &CallOptions, chunks: &[&str]) -> Vec<Event> {
    run_with_step(options, ARGUMENTS_STEP, chunks)
}

/// [`run`] with an `arguments` event due every `step` bytes of arguments: 1 shows the most
/// partial parameters, which the stability checks need to have something to check in the
/// fixtures' short calls.
fn run_with_step(options: &CallOptions, step: usize, chunks: &[&str]) -> Vec<Event> {
    let mut stream = Stream::new(options.clone()).with_arguments_step(step);
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

mod fixtures;
mod growth;
mod progress;
mod revised;
mod sizes;
