//! `toolmend calls --stream` through the binary: recorded transcripts of three server styles
//! (fixtures/stream: OpenAI chat-completions deltas with `tool_calls[].function.arguments`
//! fragments, Anthropic `input_json_delta`, raw text with Hermes tags streamed as content),
//! an Ollama `/api/chat` NDJSON stream, raw text, events flushed while the input is still
//! open, and the exit status of `calls` on the whole reply.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

mod common;
use common::{code, stderr, stdout};

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/stream")
        .join(name)
        .display()
        .to_string()
}

/// Runs `toolmend calls --stream ARGS` on `input`: the events and the exit code.
fn stream(args: &[&str], input: &[u8]) -> (Vec<Value>, i32) {
    let out = common::toolmend()
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
fn transcript(name: &str, framing: &str, status: i32) -> (Vec<Value>, Value) {
    let input = std::fs::read(fixture(name)).unwrap();
    let (events, code) = stream(&["--input", framing, "--arguments-step", "1"], &input);
    assert_eq!(code, status, "{name}");
    let end = well_formed(&events).clone();
    (events, end)
}

/// The events are well formed: each index starts once and ends once, arguments only grow (no
/// more of them after a `revised`), and `end` comes last. Returns the `end` event.
fn well_formed(events: &[Value]) -> &Value {
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
    assert_eq!(
        ended,
        (0..started.len()).collect::<Vec<_>>(),
        "every call ends"
    );
    end
}

/// Adds an `arguments` event to the parameters its call's events built so far: `append` to
/// the string at `path`, `members` to the object there, `items` to the array there.
fn apply(parameters: &mut Value, event: &Value) {
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
fn rebuilt(events: &[Value]) -> Vec<Value> {
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

fn kinds(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect()
}

#[test]
fn openai_chat_completions_with_argument_fragments() {
    let (events, end) = transcript("openai_tool_calls.sse", "sse", 0);
    assert_eq!(
        end["value"]["calls"],
        json!([
            {"tool": "get_weather", "parameters": {"city": "Oslo", "unit": "celsius"}, "id": "chatcmpl-tool-8c21", "repairs": []},
            {"tool": "get_time", "parameters": {"tz": "Europe/Oslo", "format": 24}, "id": "chatcmpl-tool-8c22", "repairs": []}
        ])
    );
    // Both calls announced, and the first one's city shown while it was being written.
    let k = kinds(&events);
    assert_eq!(k.iter().filter(|e| **e == "call_start").count(), 2);
    assert!(
        rebuilt(&events)
            .iter()
            .any(|e| e["index"] == 0 && e["parameters"]["city"] == "Os" && e["open"] == "/city")
    );
    let first_end = k.iter().position(|e| *e == "call_end").unwrap();
    let second_start = events
        .iter()
        .position(|e| e["event"] == "call_start" && e["index"] == 1)
        .unwrap();
    assert!(second_start < first_end);
}

#[test]
fn anthropic_input_json_delta_with_thinking_and_text() {
    let (events, end) = transcript("anthropic_tool_use.sse", "sse", 0);
    assert_eq!(
        end["value"],
        json!({
            "calls": [{"tool": "get_weather", "parameters": {"location": "Paris, France", "unit": "celsius", "days": 3}, "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "repairs": []}],
            "text": "I'll check the current weather in Paris for you.",
            "reasoning": "The user wants the weather in Paris; get_weather takes a location.",
            "incomplete": []
        })
    );
    assert!(rebuilt(&events).iter().any(|e| e["parameters"]
        == json!({"location": "Paris, France", "unit": "cel"})
        && e["open"] == "/unit"));
}

#[test]
fn raw_hermes_markup_streamed_as_content() {
    let (events, end) = transcript("hermes_content.sse", "sse", 0);
    assert_eq!(
        end["value"],
        json!({
            "calls": [{"tool": "list_files", "parameters": {"path": "/tmp", "recursive": false, "limit": 50}, "repairs": []}],
            "text": "Let me look.",
            "reasoning": "The user wants the files in /tmp listed.",
            "incomplete": []
        })
    );
    // The reasoning and the text were written as they came, before the call; `<tool_` +
    // `call>` came in two chunks, and the call was announced before the end.
    assert_eq!(
        kinds(&events)[..4],
        ["reasoning", "reasoning", "text", "call_start"]
    );
    // `fal` + `se` and `5` + `0`: no literal or number shown before its end.
    for e in rebuilt(&events) {
        let p = &e["parameters"];
        assert!(p.get("recursive").is_none_or(|v| *v == json!(false)), "{e}");
        assert!(p.get("limit").is_none_or(|v| *v == json!(50)), "{e}");
    }
}

#[test]
fn a_call_cut_at_max_tokens_is_incomplete_with_exit_1() {
    let (events, end) = transcript("anthropic_max_tokens.sse", "sse", 1);
    assert_eq!(end["ok"], false);
    assert_eq!(end["error"]["code"], "incomplete_call");
    assert!(kinds(&events).contains(&"incomplete"));
    assert!(!kinds(&events).contains(&"call_end"));
}

#[test]
fn ollama_chat_lines_as_jsonl_deltas() {
    let (_, end) = transcript("ollama_chat.jsonl", "jsonl", 0);
    assert_eq!(end["value"]["calls"][0]["parameters"]["tz"], "Asia/Tokyo");
    assert_eq!(end["value"]["reasoning"], "Need the time in Tokyo.");
}

/// The ids each call was announced with (`call_start`) and ended with (`call_end`).
fn ids(events: &[Value]) -> (Vec<&Value>, Vec<&Value>) {
    let of = |kind: &str| -> Vec<&Value> {
        events
            .iter()
            .filter(|e| e["event"] == kind)
            .map(|e| {
                if kind == "call_end" {
                    &e["call"]["id"]
                } else {
                    &e["id"]
                }
            })
            .collect()
    };
    (of("call_start"), of("call_end"))
}

/// Gemini's OpenAI-compatible stream numbers no call: each call with a new id and its name is
/// a call of its own (they were read as one, the second's arguments dropped), a piece with an
/// empty id continues the call before it, and a piece with only `extra_content` adds nothing.
#[test]
fn calls_without_an_index_are_told_apart_by_their_ids() {
    let (events, end) = transcript("gemini_no_index.sse", "sse", 0);
    assert_eq!(
        end["value"],
        json!({"calls": [
            {"tool": "get_weather", "parameters": {"city": "Oslo"}, "id": "function-call-1", "repairs": []},
            {"tool": "get_time", "parameters": {"tz": "Europe/Oslo"}, "id": "function-call-2", "repairs": []}
        ], "text": "Checking both.", "reasoning": null, "incomplete": []})
    );
    let (started, ended) = ids(&events);
    assert_eq!(started, ended);
}

/// A server tool's block (Anthropic's `server_tool_use`: the server runs the web search
/// itself) is no call in the stream, as in the whole message: its `input_json_delta` pieces
/// made a call with no name, and the stream ended `missing_field` where `calls` gave `ok`.
#[test]
fn a_server_tools_block_is_no_call() {
    let (events, end) = transcript("anthropic_server_tool.sse", "sse", 0);
    assert_eq!(
        kinds(&events)
            .iter()
            .filter(|k| **k == "call_start")
            .count(),
        1
    );
    let whole = json!({"id": "msg_01", "type": "message", "role": "assistant", "content": [
        {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"query": "weather Oslo"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01", "content": []},
        {"type": "text", "text": "Saving it."},
        {"type": "tool_use", "id": "toolu_01", "name": "save_note", "input": {"text": "sunny"}}
    ], "stop_reason": "tool_use"});
    let out = common::toolmend()
        .arg("calls")
        .write_stdin(whole.to_string())
        .output()
        .unwrap();
    let record: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(end["value"], record);
    assert_eq!(record["calls"][0]["tool"], "save_note");
}

/// Calls sent whole, one a piece, with no id and no index: Ollama's `/api/chat` lines (its
/// arguments an object; the same tool twice), and an OpenAI-compatible server that names
/// another tool once the first call's arguments came. Each is a call of its own (the second
/// was read into the first and dropped); a name given again with more arguments is not.
#[test]
fn whole_calls_without_ids_are_calls_of_their_own() {
    let ollama = concat!(
        r#"{"message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Oslo"}}}]},"done":false}"#,
        "\n",
        r#"{"message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Bergen"}}}]},"done":false}"#,
        "\n",
        r#"{"message":{"role":"assistant","content":""},"done":true,"done_reason":"stop"}"#,
        "\n"
    );
    let (events, code) = stream(&["--input", "jsonl"], ollama.as_bytes());
    assert_eq!(code, 0);
    let cities: Vec<&Value> = well_formed(&events)["value"]["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["parameters"]["city"])
        .collect();
    assert_eq!(cities, [&json!("Oslo"), &json!("Bergen")]);
    let chunk = |function: Value, end: &str| {
        let mut choice = json!({"index": 0, "delta": {"tool_calls": [{"function": function}]}});
        if !end.is_empty() {
            choice["finish_reason"] = json!(end);
        }
        format!("data: {}\n\n", json!({"choices": [choice]}))
    };
    let sse = [
        chunk(json!({"name": "a", "arguments": "{\"x\": 1}"}), ""),
        chunk(json!({"name": "b", "arguments": "{\"y\": "}), ""),
        chunk(json!({"name": "b", "arguments": "2}"}), "tool_calls"),
    ]
    .concat();
    let (events, code) = stream(&["--input", "sse"], sse.as_bytes());
    assert_eq!(code, 0);
    assert_eq!(
        well_formed(&events)["value"]["calls"],
        json!([
            {"tool": "a", "parameters": {"x": 1}, "repairs": []},
            {"tool": "b", "parameters": {"y": 2}, "repairs": []}
        ])
    );
}

/// Content given as a list of parts (Mistral's reasoning models: a `thinking` part holding
/// text chunks, then text parts or strings) reads the same streamed and whole: the stream
/// dropped every list (the reply lost its first words), the whole message its thinking.
#[test]
fn content_parts_read_the_same_streamed_and_whole() {
    let thinking = json!({"type": "thinking", "thinking": [{"type": "text", "text": "Two and "}, {"type": "text", "text": "two."}]});
    let sse: String = [
        json!({"role": "assistant", "content": [thinking]}),
        json!({"content": [{"type": "text", "text": "It is "}]}),
        json!({"content": "4."}),
    ]
    .iter()
    .map(|delta| {
        format!(
            "data: {}\n\n",
            json!({"choices": [{"index": 0, "delta": delta}]})
        )
    })
    .collect();
    let (events, code) = stream(&["--input", "sse"], sse.as_bytes());
    assert_eq!(code, 0);
    let whole = json!({"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
        "content": [thinking, {"type": "text", "text": "It is 4."}]}}]});
    let out = common::toolmend()
        .arg("calls")
        .write_stdin(whole.to_string())
        .output()
        .unwrap();
    let record: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        record,
        json!({"calls": [], "text": "It is 4.", "reasoning": "Two and two.", "incomplete": []})
    );
    assert_eq!(well_formed(&events)["value"], record);
}

/// A server that gives every call index 0 starts a new call with a new id and a name; one
/// that gives a call another id in its later pieces (with no name) continues it, and the call
/// keeps the id it was announced with.
#[test]
fn an_index_given_again_is_a_new_call_only_with_a_new_id_and_a_name() {
    let (events, end) = transcript("index_reused.sse", "sse", 0);
    assert_eq!(
        end["value"]["calls"],
        json!([
            {"tool": "get_weather", "parameters": {"city": "Oslo"}, "id": "call_a", "repairs": []},
            {"tool": "get_time", "parameters": {"tz": "Europe/Oslo"}, "id": "call_c", "repairs": []}
        ])
    );
    let (started, ended) = ids(&events);
    assert_eq!(started, ended);
}

/// Arguments a server sends whole as an object (Ollama) keep their numbers as written, as
/// `calls` keeps them in the same message read whole.
#[test]
fn object_arguments_in_deltas_keep_their_numbers() {
    let line = r#"{"message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":{"n":1E5,"big":123456789012345678901234567890,"x":0.10}}}]}}"#;
    let out = common::toolmend()
        .args(["calls", "--stream", "--input", "jsonl"])
        .write_stdin(format!("{line}\n"))
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let end = stdout(&out).lines().last().unwrap().to_owned();
    let parameters = r#""parameters":{"n":1E5,"big":123456789012345678901234567890,"x":0.10}"#;
    assert!(end.contains(parameters), "{end}");
    let whole = common::toolmend()
        .args(["calls", "--input", "jsonl", "--records"])
        .write_stdin(format!("{line}\n"))
        .output()
        .unwrap();
    assert!(stdout(&whole).contains(parameters), "{}", stdout(&whole));
}

#[test]
fn jsonl_text_deltas_and_raw_text_give_the_same_reply() {
    let reply = "Checking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Bergen\"}}\n</tool_call>";
    let lines: String = reply
        .as_bytes()
        .chunks(5)
        .map(|c| format!("{}\n", Value::from(std::str::from_utf8(c).unwrap())))
        .collect();
    let (from_jsonl, s1) = stream(&["--input", "jsonl"], lines.as_bytes());
    let (from_raw, s2) = stream(&[], reply.as_bytes());
    assert_eq!((s1, s2), (0, 0));
    assert_eq!(well_formed(&from_jsonl), well_formed(&from_raw));
}

/// A key written again after its value was shown: a `revised` line names it, and the call's
/// last value comes with `call_end` (deltas read as `--input jsonl`).
#[test]
fn a_key_written_again_is_revised() {
    let pieces = [
        "<tool_call>{\"name\": \"set\", \"arguments\": {\"o\": {\"k\": 1, ",
        "\"j\": 2, \"k\"",
        ": 3}}}</tool_call>",
    ];
    let lines: String = pieces
        .iter()
        .map(|p| format!("{}\n", Value::from(*p)))
        .collect();
    let (events, status) = stream(
        &["--input", "jsonl", "--arguments-step", "1"],
        lines.as_bytes(),
    );
    assert_eq!(status, 0);
    well_formed(&events);
    let revised: Vec<&Value> = events.iter().filter(|e| e["event"] == "revised").collect();
    assert_eq!(revised.len(), 1, "{events:#?}");
    assert_eq!(revised[0]["index"], 0);
    assert_eq!(revised[0]["path"], "/o/k");
    let k = kinds(&events);
    let at = k.iter().position(|e| *e == "revised").unwrap();
    assert_eq!(k[at - 1], "arguments", "{events:#?}");
    // Shown before the repeat: the first `k`.
    let mut parameters = json!({});
    for e in events[..at].iter().filter(|e| e["event"] == "arguments") {
        apply(&mut parameters, e);
    }
    assert_eq!(parameters["o"]["k"], 1, "{events:#?}");
    assert_eq!(k[at + 1], "call_end", "{events:#?}");
    assert_eq!(events[at + 1]["call"]["parameters"]["o"]["k"], 3);
    assert_eq!(
        events[at + 1]["call"]["repairs"][0]["kind"],
        "duplicate_key"
    );
}

/// The `end` event is the record `calls --records` writes for the whole reply, and the exit
/// status is the same, for replies that succeed and fail.
#[test]
fn end_and_exit_status_are_those_of_calls() {
    for reply in [
        "Plain text, no call.",
        "<tool_call>{\"name\": \"rm\", \"arguments\": {\"path\": \"/tmp/x\"",
        "[TOOL_CALLS]get_time[ARGS]{\"tz\": \"UTC\"}",
        "<think>plan</think>{\"tool\": \"ls\", \"parameters\": {}, \"terminate\": false}",
        "",
        "<tool_call>{'name': 'f', 'arguments': {'a': True,}}</tool_call>",
    ] {
        let (events, status) = stream(&[], reply.as_bytes());
        let out = common::toolmend()
            .args(["calls", "--records"])
            .write_stdin(reply)
            .output()
            .unwrap();
        let mut record: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        record.as_object_mut().unwrap().remove("line");
        let mut end = well_formed(&events).clone();
        end.as_object_mut().unwrap().remove("event");
        assert_eq!(end, record, "{reply:?}");
        assert_eq!(status, code(&out), "{reply:?}");
    }
}

/// Input `calls` refuses before reading a reply (too large, not UTF-8, a character cut off at
/// the end, a byte order mark and nothing else) ends the stream with the record `calls
/// --records` gives for the same input. A reply past `--max-bytes` said "past --max-bytes"
/// with an empty `original` where `calls` gives the input's size and its first characters.
#[test]
fn unreadable_input_ends_with_the_record_of_calls() {
    let long = format!(
        "<tool_call>{{\"name\": \"f\", \"arguments\": {{\"a\": \"{}\"}}}}</tool_call>",
        "é".repeat(300)
    );
    let cases: Vec<(Vec<u8>, &[&str])> = vec![
        (b"hello world this is long".to_vec(), &["--max-bytes", "10"]),
        (long.clone().into_bytes(), &["--max-bytes", "100"]),
        (long.clone().into_bytes(), &["--max-bytes", "600"]),
        (b"he\xffllo".to_vec(), &[]),
        ([long.as_bytes(), b"\xff", long.as_bytes()].concat(), &[]),
        (b"cut \xc3".to_vec(), &[]),
        (b"\xef\xbb".to_vec(), &[]),
        (b"\xef\xbb\xbf".to_vec(), &[]),
        (b"\xef\xbb\xbfhi".to_vec(), &["--max-bytes", "2"]),
    ];
    for (input, args) in cases {
        let (events, status) = stream(args, &input);
        let out = common::toolmend()
            .args(["calls", "--records"])
            .args(args)
            .write_stdin(input.clone())
            .output()
            .unwrap();
        let mut record: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        record.as_object_mut().unwrap().remove("line");
        let mut end = well_formed(&events).clone();
        end.as_object_mut().unwrap().remove("event");
        let shown = String::from_utf8_lossy(&input[..input.len().min(40)]).into_owned();
        assert_eq!(end, record, "{shown:?} {args:?}");
        assert_eq!(status, code(&out), "{shown:?} {args:?}");
    }
}

#[test]
fn events_are_written_while_the_reply_is_still_arriving() {
    let mut child = common::command()
        .args(["calls", "--stream", "--arguments-step", "1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            tx.send(line.unwrap()).unwrap();
        }
    });
    stdin
        .write_all(b"<tool_call>{\"name\": \"write_file\", \"arguments\": {\"path\": \"a.txt\", \"content\": \"Hel")
        .unwrap();
    stdin.flush().unwrap();
    let first = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("an event before the end");
    assert_eq!(
        first,
        r#"{"event":"call_start","index":0,"tool":"write_file"}"#
    );
    let second = rx.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(
        second,
        r#"{"event":"arguments","index":0,"path":"","members":{"path":"a.txt","content":"Hel"},"open":"/content"}"#
    );
    stdin.write_all(b"lo\"}}</tool_call>").unwrap();
    drop(stdin);
    let status = child.wait().unwrap();
    reader.join().unwrap();
    let rest: Vec<String> = rx.try_iter().collect();
    assert!(
        rest.last()
            .unwrap()
            .starts_with(r#"{"event":"end","ok":true"#),
        "{rest:#?}"
    );
    assert_eq!(status.code(), Some(0));
}

#[test]
fn broken_deltas_end_the_reply_with_invalid_input() {
    let (events, status) = stream(&["--input", "sse"], b"data: {\"choices\": [\n\n");
    assert_eq!(status, 1);
    assert_eq!(well_formed(&events)["error"]["code"], "invalid_input");
    let (events, status) = stream(&[], b"<tool_call>{\"name\": \"f\xff");
    assert_eq!(status, 1);
    assert_eq!(well_formed(&events)["error"]["code"], "invalid_utf8");
}

#[test]
fn sse_input_without_stream_is_a_usage_error() {
    let out = common::toolmend()
        .args(["calls", "--input", "sse"])
        .write_stdin("data: {}\n\n")
        .output()
        .unwrap();
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("--stream"), "{}", stderr(&out));
}

/// Starts `toolmend calls --stream ARGS` with a pipe on stdin; its stdin, and its stdout lines
/// as they come.
fn piped(
    args: &[&str],
) -> (
    std::process::Child,
    std::process::ChildStdin,
    mpsc::Receiver<String>,
) {
    let mut child = common::command()
        .args(["calls", "--stream"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    (child, stdin, rx)
}

#[test]
fn text_and_reasoning_are_written_while_the_reply_is_still_arriving() {
    // Raw text, a line at a time: each line's text is written before stdin closes.
    let (mut child, mut stdin, rx) = piped(&[]);
    stdin.write_all(b"The weather in Oslo is sunny.\n").unwrap();
    stdin.flush().unwrap();
    let first = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the text before the end");
    assert_eq!(
        first,
        r#"{"event":"text","delta":"The weather in Oslo is sunny."}"#
    );
    stdin.write_all(b"It will stay sunny.\n").unwrap();
    stdin.flush().unwrap();
    let second = rx.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(
        second,
        r#"{"event":"text","delta":"\nIt will stay sunny."}"#
    );
    drop(stdin);
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let rest: Vec<String> = rx.iter().collect();
    assert_eq!(rest.len(), 1, "{rest:#?}");
    assert!(rest[0].starts_with(
        r#"{"event":"end","ok":true,"value":{"calls":[],"text":"The weather in Oslo is sunny.\nIt will stay sunny.""#
    ));

    // Server-sent events: reasoning_content and content deltas, each written as it comes.
    let (mut child, mut stdin, rx) = piped(&["--input", "sse"]);
    let sse = |delta: Value| {
        format!(
            "data: {}\n\n",
            json!({"choices": [{"index": 0, "delta": delta}]})
        )
    };
    stdin
        .write_all(sse(json!({"reasoning_content": "The user wants the weather."})).as_bytes())
        .unwrap();
    stdin.flush().unwrap();
    let reasoning = rx.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(
        reasoning,
        r#"{"event":"reasoning","delta":"The user wants the weather."}"#
    );
    stdin
        .write_all(sse(json!({"content": "Sunny in Oslo."})).as_bytes())
        .unwrap();
    stdin.flush().unwrap();
    let text = rx.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(text, r#"{"event":"text","delta":"Sunny in Oslo."}"#);
    stdin.write_all(b"data: [DONE]\n\n").unwrap();
    drop(stdin);
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let rest: Vec<String> = rx.iter().collect();
    assert_eq!(rest.len(), 1, "{rest:#?}");
    assert!(
        rest[0].starts_with(r#"{"event":"end","ok":true"#),
        "{rest:#?}"
    );
}

/// `--arguments-step` is read as the library reads every surface's step: a step of 0 bytes (or
/// not a number) is refused with the library's words, before anything is read.
#[test]
fn an_arguments_step_of_zero_is_refused_in_the_librarys_words() {
    let library = toolmend_core::calls::arguments_step(0).unwrap_err();
    assert_eq!(toolmend_core::calls::arguments_step(1), Ok(1));
    assert_eq!(toolmend_core::calls::arguments_step(4096), Ok(4096));
    for (step, says) in [("0", library.as_str()), ("x", "a whole number of bytes")] {
        let out = common::toolmend()
            .args(["calls", "--stream", "--arguments-step", step])
            .write_stdin("<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>")
            .output()
            .unwrap();
        assert_eq!(code(&out), 2, "{step}");
        assert!(stdout(&out).is_empty(), "{step}");
        assert!(stderr(&out).contains(says), "{step}: {}", stderr(&out));
    }
}
