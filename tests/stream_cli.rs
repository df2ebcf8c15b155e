//! `toolmend calls --stream` through the binary: recorded transcripts of three server styles
//! (fixtures/stream: OpenAI chat-completions deltas with `tool_calls[].function.arguments`
//! fragments, Anthropic `input_json_delta`, raw text with Hermes tags streamed as content),
//! an Ollama `/api/chat` NDJSON stream, raw text, events flushed while the input is still
//! open, and the exit status of `calls` on the whole reply.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

mod common;
use common::stream_events::{apply, kinds, rebuilt, stream, transcript, well_formed};
use common::{code, stderr, stdout};

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
