//! `toolmend calls --stream` run on recorded or built server streams, and checks of its events.

use std::path::Path;

use serde_json::{Value, json};

use super::{code, stderr, stdout};

pub fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/stream")
        .join(name)
        .display()
        .to_string()
}

/// Runs `toolmend calls --stream ARGS` on `input`: the events and the exit code.
pub fn stream(args: &[&str], input: &[u8]) -> (Vec<Value>, i32) {
    let out = super::toolmend()
        .args(["calls", "--stream"])
        .args(args)
        .write_stdin(input)
        .output()
        .unwrap();
    let events: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(
        stderr(&out).is_empty() || code(&out) == 2,
        "stderr: {}",
        stderr(&out)
    );
    (events, code(&out))
}

/// Streams the recorded transcript `name` read as `framing`, an `arguments` event due at every
/// byte of arguments (the transcripts' calls are short); asserts its exit code is `status` and
/// its events are well formed. The events, and the `end` event.
pub fn transcript(name: &str, framing: &str, status: i32) -> (Vec<Value>, Value) {
    let input = std::fs::read(fixture(name)).unwrap();
    let (events, code) = stream(&["--input", framing, "--arguments-step", "1"], &input);
    assert_eq!(code, status, "{name}");
    let end = well_formed(&events).clone();
    (events, end)
}

/// The events are well formed: each index starts once and ends once, arguments only grow (no
/// more of them after a `revised`), and `end` comes last. Returns the `end` event.
pub fn well_formed(events: &[Value]) -> &Value {
    let end = events.last().expect("events");
    assert_eq!(end["event"], "end", "{events:#?}");
    let mut started = Vec::new();
    let mut ended = Vec::new();
    let mut last_args: Vec<Option<Value>> = Vec::new();
    let mut revised = Vec::new();
    for e in &events[..events.len() - 1] {
        let index = e["index"].as_u64().map(|i| i as usize);
        match e["event"].as_str().unwrap() {
            "text" | "reasoning" => assert!(e["delta"].is_string()),
            "call_start" => {
                assert_eq!(index, Some(started.len()), "{e}");
                started.push(e["tool"].as_str().unwrap().to_owned());
                last_args.push(None);
            }
            "arguments" => {
                let i = index.unwrap();
                assert!(i < started.len() && !ended.contains(&i), "{e}");
                assert!(!revised.contains(&i), "arguments after revised: {e}");
                // The parameters so far: what the events before built, and this one added.
                let mut parameters = last_args[i]
                    .as_ref()
                    .map_or_else(|| json!({}), |before| before["parameters"].clone());
                apply(&mut parameters, e);
                if let Some(before) = &last_args[i] {
                    // Every key shown before is still there; closed ones unchanged.
                    let open = before["open"].as_str().expect("arguments after final ones");
                    for (k, v) in before["parameters"].as_object().unwrap() {
                        let now = &parameters[k];
                        if open == format!("/{k}") {
                            assert!(now.as_str().unwrap().starts_with(v.as_str().unwrap()));
                        } else {
                            assert_eq!(now, v, "{k} changed");
                        }
                    }
                }
                last_args[i] = Some(json!({"parameters": parameters, "open": e["open"]}));
            }
            "revised" => {
                let i = index.unwrap();
                assert!(i < started.len() && !ended.contains(&i), "{e}");
                assert!(last_args[i].is_some(), "revised before arguments: {e}");
                assert!(e["path"].is_string() && e["reason"].is_string(), "{e}");
                revised.push(i);
            }
            "call_end" | "incomplete" | "invalid" | "retracted" => {
                let i = index.unwrap();
                assert!(!ended.contains(&i), "{i} ended twice");
                // Only a call cut (or dropped by the server) before its name was written
                // ends without having started.
                assert!(i < started.len() || e["event"] == "incomplete", "{e}");
                ended.push(i);
                if e["event"] == "call_end" {
                    assert_eq!(e["call"]["tool"], started[i].as_str());
                    if let Some(args) = &last_args[i]
                        && !revised.contains(&i)
                    {
                        assert_eq!(args["open"], Value::Null, "final arguments were shown");
                        assert_eq!(args["parameters"], e["call"]["parameters"]);
                    }
                }
            }
            other => panic!("unknown event {other}"),
        }
    }
    ended.sort_unstable();
    assert!(
        (0..started.len()).all(|i| ended.contains(&i)),
        "every call ends: started {started:?}, ended {ended:?}"
    );
    end
}

/// Adds an `arguments` event to the parameters its call's events built so far: `append` to
/// the string at `path`, `members` to the object there, `items` to the array there.
pub fn apply(parameters: &mut Value, event: &Value) {
    let path = event["path"].as_str().expect("a path");
    let at = parameters.pointer_mut(path).expect("a value at the path");
    match (at, &event["append"], &event["members"], &event["items"]) {
        (Value::String(s), Value::String(more), Value::Null, Value::Null) => s.push_str(more),
        (Value::Object(m), Value::Null, Value::Object(more), Value::Null) => {
            m.extend(more.iter().map(|(k, v)| (k.clone(), v.clone())))
        }
        (Value::Array(a), Value::Null, Value::Null, Value::Array(more)) => {
            a.extend(more.iter().cloned())
        }
        (at, ..) => panic!("{event} does not fit {at}"),
    }
}

/// Each `arguments` event as the parameters so far it makes: `{"index", "parameters", "open"}`.
pub fn rebuilt(events: &[Value]) -> Vec<Value> {
    let mut parameters: Vec<Value> = Vec::new();
    let mut out = Vec::new();
    for e in events.iter().filter(|e| e["event"] == "arguments") {
        let i = e["index"].as_u64().unwrap() as usize;
        if parameters.len() <= i {
            parameters.resize(i + 1, json!({}));
        }
        apply(&mut parameters[i], e);
        out.push(json!({"index": i, "parameters": parameters[i].clone(), "open": e["open"]}));
    }
    out
}

pub fn kinds(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect()
}

/// The record `toolmend calls` gives for a whole response.
pub fn whole_record(response: &Value) -> Value {
    let out = super::toolmend()
        .arg("calls")
        .write_stdin(response.to_string())
        .output()
        .unwrap();
    serde_json::from_str(&stdout(&out)).unwrap()
}

/// The record `toolmend calls --records` gives for a whole response, and the exit code.
pub fn whole_records(response: &Value) -> (Value, i32) {
    let out = super::toolmend()
        .args(["calls", "--records"])
        .write_stdin(response.to_string())
        .output()
        .unwrap();
    (serde_json::from_str(&stdout(&out)).unwrap(), code(&out))
}
