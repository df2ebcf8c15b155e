//! What a server sends where a stream of chunks was expected.
//!
//! - A whole response: a server that ignores `"stream": true` (or answers with an error body)
//!   sends one JSON body, compact or pretty-printed, with no `data:` field. `calls --stream`
//!   reads it as `calls` reads the response, under `--input sse` (raw, as sent, and wrapped in
//!   one `data:` event) and `--input jsonl`, for every API response of
//!   fixtures/calls/api_shapes.jsonl: it was an empty reply under `--input sse`, its calls lost,
//!   and the whole responses of Anthropic, the Responses API, Bedrock and Hugging Face were
//!   refused as chunks.
//! - An error in a field of its own (llama.cpp's `error:`, `event: error`).

use serde_json::Value;

mod common;
use common::stream_events::{stream, well_formed};

/// The record `calls --records` gives for `text`, and its exit code.
fn whole(text: &str) -> (Value, i32) {
    let out = common::toolmend()
        .args(["calls", "--records"])
        .write_stdin(text)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    (
        serde_json::from_str(&stdout).unwrap(),
        out.status.code().unwrap(),
    )
}

/// An error's message without where the stream found it ("line 3: ", "chunk 2: "): that place
/// is each framing's own.
fn without_place(message: &Value) -> String {
    let message = message.as_str().unwrap_or_default();
    match message.split_once(": ") {
        Some((place, rest))
            if ["line ", "chunk "].iter().any(|p| {
                place
                    .strip_prefix(p)
                    .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
            }) =>
        {
            rest.to_owned()
        }
        _ => message.to_owned(),
    }
}

#[test]
fn a_whole_body_streams_as_calls_reads_it() {
    let cases = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/calls/api_shapes.jsonl"),
    )
    .unwrap();
    let mut compared = 0;
    for line in cases.lines().filter(|l| !l.trim().is_empty()) {
        let case: Value = serde_json::from_str(line).unwrap();
        let name = case["name"].as_str().unwrap();
        let response = match &case["input"] {
            Value::String(text) => match serde_json::from_str::<Value>(text) {
                Ok(value @ (Value::Object(_) | Value::Array(_))) => value,
                _ => continue,
            },
            value @ (Value::Object(_) | Value::Array(_)) => value.clone(),
            _ => continue,
        };
        let compact = response.to_string();
        let (record, code) = whole(&compact);
        // Only API responses: JSON that `calls` reads as the reply's text (a call written as
        // JSON, `{"text": …}`) is no server's body.
        if record["value"]["text"] == compact.as_str() {
            continue;
        }
        let pretty = serde_json::to_string_pretty(&response).unwrap();
        for (framing, input) in [
            ("jsonl", format!("{compact}\n")),
            // Pretty-printed, as `jq .` writes it: the lines of one value.
            ("jsonl", format!("{pretty}\n")),
            ("jsonl", pretty.clone()),
            ("sse", format!("data: {compact}\n\n")),
            ("sse", format!("{compact}\n")),
            ("sse", format!("{pretty}\n")),
            ("sse", pretty.clone()),
        ] {
            let (events, stream_code) = stream(&["--input", framing], input.as_bytes());
            let end = well_formed(&events);
            let said = format!("{name}: --input {framing} {input:?}");
            assert_eq!(stream_code, code, "{said}: {end}");
            assert_eq!(end["ok"], record["ok"], "{said}: {end}");
            assert_eq!(end["value"], record["value"], "{said}: {end}");
            assert_eq!(end["repairs"], record["repairs"], "{said}: {end}");
            assert_eq!(end["error"]["code"], record["error"]["code"], "{said}");
            assert_eq!(
                without_place(&end["error"]["message"]),
                without_place(&record["error"]["message"]),
                "{said}"
            );
        }
        compared += 1;
    }
    assert!(compared >= 30, "only {compared} API responses compared");
}

/// JSON lines with no `data:` field after an SSE stream began: an error body a proxy writes
/// raw ends the reply with the server's words (it was skipped as an unknown field, and the
/// reply ended `ok`); lines of JSON one after another are each a chunk.
#[test]
fn raw_json_lines_in_an_sse_stream_are_read() {
    let sse = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n\
               {\"error\": {\"message\": \"upstream timed out\"}}\n";
    let (events, code) = stream(&["--input", "sse"], sse.as_bytes());
    let end = well_formed(&events);
    assert_eq!(code, 1);
    assert_eq!(end["error"]["code"], "invalid_input");
    assert_eq!(
        end["error"]["message"],
        "line 3: the server sent an error: upstream timed out"
    );
    let ndjson = "{\"message\":{\"role\":\"assistant\",\"content\":\"Hel\"},\"done\":false}\n\
                  {\"message\":{\"role\":\"assistant\",\"content\":\"lo\"},\"done\":true,\"done_reason\":\"stop\"}\n";
    let (events, code) = stream(&["--input", "sse"], ndjson.as_bytes());
    assert_eq!(code, 0);
    assert_eq!(well_formed(&events)["value"]["text"], "Hello");
    // A body cut short is not JSON: an error, never an empty reply.
    let (events, code) = stream(&["--input", "sse"], b"{\n  \"choices\": [\n");
    assert_eq!(code, 1);
    let end = well_formed(&events);
    assert_eq!(end["error"]["code"], "invalid_input");
    assert!(
        end["error"]["message"]
            .as_str()
            .unwrap()
            .contains("the streamed delta is not JSON"),
        "{end}"
    );
}

/// A stop reason that says the output was cut, with text written after the last call: in an
/// API that keeps its blocks in order (Anthropic, Gemini, Bedrock, the Responses API) the text
/// was cut, not the call, and the call is whole, streamed as `calls` reads the whole response
/// (the stream cut the call). In an OpenAI message text and calls have no order: the call is
/// cut, whole and streamed.
#[test]
fn a_cut_after_text_that_follows_a_call_is_the_texts() {
    let call = r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}
{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Oslo\"}"}}
{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}
{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Now I will expl"}}
{"type":"message_delta","delta":{"stop_reason":"max_tokens"}}
"#;
    let whole = serde_json::json!({"type": "message", "role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}},
        {"type": "text", "text": "Now I will expl"}], "stop_reason": "max_tokens"});
    let gemini = r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"get_weather","args":{"city":"Oslo"}}}]}}]}
{"candidates":[{"content":{"parts":[{"text":"Now I will expl"}]},"finishReason":"MAX_TOKENS"}]}
"#;
    let gemini_whole = serde_json::json!({"candidates": [{"content": {"parts": [
        {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}},
        {"text": "Now I will expl"}]}, "finishReason": "MAX_TOKENS"}]});
    for (lines, whole) in [(call, whole), (gemini, gemini_whole)] {
        let (record, code) = whole_of(&whole);
        assert_eq!(code, 0, "{record}");
        assert_eq!(record["value"]["calls"][0]["parameters"]["city"], "Oslo");
        let (events, stream_code) = stream(&["--input", "jsonl"], lines.as_bytes());
        let end = well_formed(&events);
        assert_eq!(stream_code, code, "{end}");
        assert_eq!(end["value"], record["value"]);
    }
    // OpenAI chunks: text after the call's pieces is still the message's `content`.
    let openai = r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"get_weather","arguments":"{\"city\": \"Oslo\"}"}}]}}]}
{"choices":[{"index":0,"delta":{"content":"Now I will expl"},"finish_reason":"length"}]}
"#;
    let (events, code) = stream(&["--input", "jsonl"], openai.as_bytes());
    assert_eq!(code, 1);
    assert_eq!(well_formed(&events)["error"]["code"], "incomplete_call");
}

fn whole_of(response: &Value) -> (Value, i32) {
    whole(&response.to_string())
}

/// A failure a server sends in a field of its own: llama.cpp's server writes `error: {…}` (no
/// `data:`), others name the event (`event: error`, its data the error, JSON or text). Each
/// ends the reply with the server's words; they were skipped as fields that say nothing, and
/// the reply cut where the server failed ended `ok`.
#[test]
fn errors_sent_in_sse_fields_end_the_reply() {
    let hi = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n";
    for (tail, words) in [
        (
            "error: {\"code\":400,\"message\":\"the request exceeds the available context size, try increasing it\",\"type\":\"exceed_context_size_error\"}\n\n",
            "the request exceeds the available context size, try increasing it",
        ),
        (
            "event: error\ndata: {\"message\":\"overloaded\"}\n\n",
            "overloaded",
        ),
        (
            "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
            "Overloaded",
        ),
        ("event: error\ndata: upstream failed\n\n", "upstream failed"),
    ] {
        let (events, code) = stream(&["--input", "sse"], format!("{hi}{tail}").as_bytes());
        let end = well_formed(&events);
        assert_eq!(code, 1, "{tail}");
        assert_eq!(end["error"]["code"], "invalid_input", "{tail}");
        assert_eq!(
            without_place(&end["error"]["message"]),
            format!("the server sent an error: {words}"),
            "{tail}"
        );
    }
    // Other named events are read as their data says.
    let named = "event: message\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n\
                 event: done\ndata: [DONE]\n\n";
    let (events, code) = stream(&["--input", "sse"], named.as_bytes());
    assert_eq!(code, 0);
    assert_eq!(well_formed(&events)["value"]["text"], "Hi");
}
