//! A server's reply read whole (`calls`) and streamed (`calls --stream --input sse/jsonl`)
//! gives one truth: a call given in both `function_call` and `tool_calls` is one
//! call; a stream's stop reason cuts its last call as the whole response's does; SSE lines may
//! end with a bare CR; pieces that carry one call id are one call.

use serde_json::{Value, json};

mod common;
use common::{code, stdout};

/// `toolmend calls ARGS` on `input`: its stdout lines as JSON, and its exit code.
fn calls(args: &[&str], input: &str) -> (Vec<Value>, i32) {
    let out = common::toolmend()
        .arg("calls")
        .args(args)
        .write_stdin(input.as_bytes().to_vec())
        .output()
        .unwrap();
    let lines = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    (lines, code(&out))
}

/// The `end` event of `calls --stream --input FRAMING`, and the exit code.
fn streamed(framing: &str, input: &str) -> (Value, i32) {
    let (events, code) = calls(&["--stream", "--input", framing], input);
    let end = events.last().cloned().expect("events");
    assert_eq!(end["event"], "end", "{events:#?}");
    (end, code)
}

/// The message of a failed record or `end` event.
fn error_message(end: &Value) -> &str {
    end["error"]["message"].as_str().expect("an error message")
}

/// The record of `calls --records` on the whole response.
fn whole(response: &Value) -> (Value, i32) {
    let (records, code) = calls(&["--records"], &response.to_string());
    assert_eq!(records.len(), 1, "{records:#?}");
    (records[0].clone(), code)
}

/// SSE: one `data:` event per chunk, then `[DONE]`.
fn sse(chunks: &[Value]) -> String {
    let mut out: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    out.push_str("data: [DONE]\n\n");
    out
}

fn jsonl(chunks: &[Value]) -> String {
    chunks.iter().map(|c| format!("{c}\n")).collect()
}

/// The stream's `end` gives what `calls` gives for the whole response (its record and exit
/// code), and that is `expected` (the calls' tools and parameters, or an error code).
fn one_truth(framing: &str, stream_input: &str, response: &Value, expected: Result<Value, &str>) {
    let (end, stream_code) = streamed(framing, stream_input);
    let (mut record, whole_code) = whole(response);
    let mut end_record = end.clone();
    // What was read differs: the stream's reply is the message its chunks make up.
    for r in [&mut end_record, &mut record] {
        if let Some(error) = r.get_mut("error").and_then(Value::as_object_mut) {
            error.remove("original");
        }
    }
    assert_eq!(
        end_record["ok"], record["ok"],
        "stream {end:#}\nwhole {record:#}"
    );
    assert_eq!(
        end_record["value"], record["value"],
        "stream {end:#}\nwhole {record:#}"
    );
    assert_eq!(
        end_record["error"], record["error"],
        "stream {end:#}\nwhole {record:#}"
    );
    assert_eq!(stream_code, whole_code);
    match expected {
        Ok(calls) => {
            assert_eq!(record["ok"], true, "{record:#}");
            let got: Vec<Value> = record["value"]["calls"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| json!({"tool": c["tool"], "parameters": c["parameters"]}))
                .collect();
            assert_eq!(Value::Array(got), calls, "{record:#}");
        }
        Err(code) => assert_eq!(record["error"]["code"], code, "{record:#}"),
    }
}

fn openai_chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

fn openai_completion(message: Value, finish: &str) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
           "choices": [{"index": 0, "message": message, "finish_reason": finish}]})
}

const OSLO: &str = "{\"city\": \"Oslo\"}";

/// llama-cpp-python's `chatml-function-calling` fills the legacy `function_call` with the call
/// it also gives in `tool_calls`, in the whole response and in every streamed delta.
#[test]
fn a_call_in_function_call_and_tool_calls_is_one_call() {
    let response = openai_completion(
        json!({"role": "assistant", "content": null,
               "function_call": {"name": "get_weather", "arguments": OSLO},
               "tool_calls": [{"id": "call_1", "type": "function",
                               "function": {"name": "get_weather", "arguments": OSLO}}]}),
        "tool_calls",
    );
    let mut chunks = vec![openai_chunk(
        json!({"role": "assistant", "content": null,
               "function_call": {"name": "get_weather", "arguments": ""},
               "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                               "function": {"name": "get_weather", "arguments": ""}}]}),
        None,
    )];
    for piece in ["{\"ci", "ty\": \"", "Os", "lo\"}"] {
        chunks.push(openai_chunk(
            json!({"function_call": {"arguments": piece},
                   "tool_calls": [{"index": 0, "function": {"arguments": piece}}]}),
            None,
        ));
    }
    chunks.push(openai_chunk(json!({}), Some("tool_calls")));
    let expected = json!([{"tool": "get_weather", "parameters": {"city": "Oslo"}}]);
    one_truth("sse", &sse(&chunks), &response, Ok(expected.clone()));
    // A legacy server that sends `function_call` alone still gives its call.
    let legacy: Vec<Value> = ["{\"city\"", ": \"Oslo\"}"]
        .iter()
        .map(|p| {
            openai_chunk(
                json!({"function_call": {"name": "get_weather", "arguments": p}}),
                None,
            )
        })
        .collect();
    let (end, code) = streamed("sse", &sse(&legacy));
    assert_eq!(code, 0, "{end:#}");
    assert_eq!(end["value"]["calls"][0]["parameters"]["city"], "Oslo");
}

/// The stop reason of every API cuts the call written last, streamed as whole.
#[test]
fn a_stream_cut_by_its_stop_reason_is_incomplete() {
    // OpenAI: arguments whole JSON, but `finish_reason: "length"`.
    let chunks = [
        openai_chunk(
            json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                   "function": {"name": "get_weather", "arguments": ""}}]}),
            None,
        ),
        openai_chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": OSLO}}]}),
            None,
        ),
        openai_chunk(json!({}), Some("length")),
    ];
    let response = openai_completion(
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
               "function": {"name": "get_weather", "arguments": OSLO}}]}),
        "length",
    );
    one_truth("sse", &sse(&chunks), &response, Err("incomplete_call"));

    // Anthropic: `message_delta.stop_reason: "max_tokens"`.
    let events = [
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "stop_reason": null}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": OSLO}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "max_tokens", "stop_sequence": null}}),
        json!({"type": "message_stop"}),
    ];
    let response = json!({"id": "msg_1", "type": "message", "role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}],
        "stop_reason": "max_tokens"});
    one_truth("sse", &sse(&events), &response, Err("incomplete_call"));

    // Ollama /api/chat: `done_reason: "length"` on the last line.
    let lines = [
        json!({"model": "m", "message": {"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]}, "done": false}),
        json!({"model": "m", "message": {"role": "assistant", "content": ""}, "done": true, "done_reason": "length"}),
    ];
    let response = json!({"model": "m", "message": {"role": "assistant", "content": "", "tool_calls": [
        {"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]}, "done": true, "done_reason": "length"});
    one_truth("jsonl", &jsonl(&lines), &response, Err("incomplete_call"));

    // Gemini streamGenerateContent: `finishReason: "MAX_TOKENS"`.
    let chunks = [
        json!({"candidates": [{"index": 0, "content": {"role": "model", "parts": [
        {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}}]}, "finishReason": "MAX_TOKENS"}]}),
    ];
    one_truth("sse", &sse(&chunks), &chunks[0], Err("incomplete_call"));

    // OpenAI Responses: `response.incomplete`.
    let item = json!({"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "get_weather", "arguments": "", "status": "in_progress"});
    let events = [
        json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 0, "item_id": "fc_1", "delta": OSLO}),
        json!({"type": "response.incomplete", "response": {"object": "response", "status": "incomplete",
               "incomplete_details": {"reason": "max_output_tokens"}}}),
    ];
    let response = json!({"id": "resp_1", "object": "response", "status": "incomplete", "output": [
        {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "get_weather", "arguments": OSLO, "status": "completed"}],
        "incomplete_details": {"reason": "max_output_tokens"}});
    one_truth("sse", &sse(&events), &response, Err("incomplete_call"));

    // The same streams that end as they should give their call.
    let chunks = [
        openai_chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                   "function": {"name": "get_weather", "arguments": OSLO}}]}),
            None,
        ),
        openai_chunk(json!({}), Some("tool_calls")),
    ];
    let (end, code) = streamed("sse", &sse(&chunks));
    assert_eq!((end["ok"].clone(), code), (json!(true), 0), "{end:#}");
}

/// SSE lines may end with CR alone (the SSE spec allows CR, LF and CRLF).
#[test]
fn sse_with_bare_cr_line_ends() {
    let chunks = [
        openai_chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                   "function": {"name": "get_weather", "arguments": "{\"city\": "}}]}),
            None,
        ),
        openai_chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"Oslo\"}"}}]}),
            None,
        ),
        openai_chunk(json!({}), Some("tool_calls")),
    ];
    let lf = sse(&chunks);
    let expected = json!([{"tool": "get_weather", "parameters": {"city": "Oslo"}}]);
    for ending in ["\r", "\r\n"] {
        let input = lf.replace('\n', ending);
        let (end, code) = streamed("sse", &input);
        assert_eq!(code, 0, "{ending:?}: {end:#}");
        assert_eq!(
            end["value"]["calls"][0]["parameters"], expected[0]["parameters"],
            "{ending:?}"
        );
    }
}

/// LiteLLM's `/v1/messages` streams one call as one content block per fragment, each with
/// the call's `tool_use` id: they continue one call. OpenAI deltas with one id and another
/// index too.
#[test]
fn pieces_with_one_call_id_are_one_call() {
    let mut events = vec![
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": []}}),
    ];
    for (i, piece) in ["", "{\"city\": ", "\"Oslo\"", "}"].iter().enumerate() {
        // Each block names the tool again, as LiteLLM's do.
        events.push(json!({"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": "call_abc", "name": "get_weather", "input": {}}}));
        events.push(json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": piece}}));
        events.push(json!({"type": "content_block_stop", "index": i}));
    }
    events.push(json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}}));
    let response = json!({"id": "msg_1", "type": "message", "role": "assistant", "content": [
        {"type": "tool_use", "id": "call_abc", "name": "get_weather", "input": {"city": "Oslo"}}],
        "stop_reason": "tool_use"});
    let expected = json!([{"tool": "get_weather", "parameters": {"city": "Oslo"}}]);
    one_truth("sse", &sse(&events), &response, Ok(expected.clone()));

    // Joined arguments that end before their JSON does are incomplete, whatever the relay
    // says of the stop.
    let cut: Vec<Value> = events
        .iter()
        .filter(|e| e["delta"]["partial_json"] != "}")
        .cloned()
        .collect();
    let (end, code) = streamed("sse", &sse(&cut));
    assert_eq!(
        (end["error"]["code"].clone(), code),
        (json!("incomplete_call"), 1),
        "{end:#}"
    );

    let chunks = [
        openai_chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                   "function": {"name": "get_weather", "arguments": "{\"city\": "}}]}),
            None,
        ),
        openai_chunk(
            json!({"tool_calls": [{"index": 1, "id": "call_1", "function": {"arguments": "\"Oslo\"}"}}]}),
            None,
        ),
        openai_chunk(json!({}), Some("tool_calls")),
    ];
    let (end, code) = streamed("sse", &sse(&chunks));
    assert_eq!(code, 0, "{end:#}");
    let got = &end["value"]["calls"];
    assert_eq!(got.as_array().unwrap().len(), 1, "{end:#}");
    assert_eq!(got[0]["parameters"], json!({"city": "Oslo"}));
}

/// A server that fails mid-stream says so in a chunk of its own (OpenAI and vLLM
/// `{"error": {"message", ...}}`, Gemini `{"error": {"code", "message", "status"}}`, Ollama
/// `{"error": "..."}`; Anthropic's `error` event): the stream ends with that error, never
/// `ok` with the reply cut where the server failed, and every surface that reads chunks
/// (`calls::Deltas`) says so.
#[test]
fn an_error_chunk_fails_the_stream() {
    let call = openai_chunk(
        json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
               "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]}),
        None,
    );
    let cases = [
        (
            "sse",
            json!({"error": {"message": "The server had an error while processing your request.",
                             "type": "server_error", "param": null, "code": null}}),
            "The server had an error while processing your request.",
        ),
        (
            "sse",
            json!({"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}),
            "The model is overloaded.",
        ),
        (
            "jsonl",
            json!({"error": "model runner has unexpectedly stopped"}),
            "model runner has unexpectedly stopped",
        ),
    ];
    for (framing, error, message) in cases {
        let chunks = [call.clone(), error];
        let input = if framing == "sse" {
            sse(&chunks)
        } else {
            jsonl(&chunks)
        };
        let (end, code) = streamed(framing, &input);
        assert_eq!(code, 1, "{framing}: {end:#}");
        assert_eq!(end["ok"], false, "{framing}: {end:#}");
        assert_eq!(end["error"]["code"], "invalid_input", "{end:#}");
        let said = end["error"]["message"].as_str().unwrap();
        assert!(
            said.contains(&format!("the server sent an error: {message}")),
            "{said}"
        );
    }
    // An `error` that is null is no error (some servers send the key on every chunk).
    let mut with_null = call.clone();
    with_null["error"] = Value::Null;
    let (end, code) = streamed(
        "sse",
        &sse(&[with_null, openai_chunk(json!({}), Some("tool_calls"))]),
    );
    assert_eq!(code, 0, "{end:#}");
    assert_eq!(end["value"]["calls"][0]["tool"], "get_weather");
}

/// What a chunk's delta says is read as the same message says it whole: a `refusal` is the
/// reply's text (the stream dropped it, and said `empty_input`), and of `reasoning_content`,
/// `reasoning` and `thinking` the first one given (vLLM sends `reasoning_content` and
/// `reasoning` with the same text: the stream doubled it).
#[test]
fn deltas_read_a_message_as_the_whole_message_is_read() {
    let cases = [
        (
            vec![
                openai_chunk(
                    json!({"role": "assistant", "content": null, "refusal": "I cannot"}),
                    None,
                ),
                openai_chunk(json!({"refusal": " help with that."}), Some("stop")),
            ],
            json!({"role": "assistant", "content": null, "refusal": "I cannot help with that."}),
        ),
        (
            vec![
                openai_chunk(
                    json!({"role": "assistant", "reasoning_content": "Look", "reasoning": "Look"}),
                    None,
                ),
                openai_chunk(
                    json!({"reasoning_content": " up.", "reasoning": " up."}),
                    None,
                ),
                openai_chunk(json!({"content": "Oslo."}), Some("stop")),
            ],
            json!({"role": "assistant", "content": "Oslo.", "reasoning_content": "Look up.", "reasoning": "Look up."}),
        ),
    ];
    for (chunks, message) in cases {
        let (end, stream_code) = streamed("sse", &sse(&chunks));
        let (record, whole_code) = whole(&openai_completion(message, "stop"));
        assert_eq!((stream_code, whole_code), (0, 0), "{end:#}\n{record:#}");
        assert_eq!(end["value"], record["value"], "{chunks:#?}");
    }
}

/// A server that stops the output itself (its content filter, a refusal classifier, the
/// context window) cut the call being written, as `length` does: whole and streamed, the call
/// is incomplete however whole its JSON looks.
#[test]
fn a_call_stopped_by_the_servers_filter_is_incomplete() {
    {
        let reason = "content_filter";
        let chunks = [
            openai_chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                       "function": {"name": "get_weather", "arguments": OSLO}}]}),
                None,
            ),
            openai_chunk(json!({}), Some(reason)),
        ];
        let response = openai_completion(
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
                   "function": {"name": "get_weather", "arguments": OSLO}}]}),
            reason,
        );
        one_truth("sse", &sse(&chunks), &response, Err("incomplete_call"));
    }
    for reason in ["refusal", "model_context_window_exceeded"] {
        let events = [
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "stop_reason": null}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": OSLO}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null}}),
            json!({"type": "message_stop"}),
        ];
        let response = json!({"id": "msg_1", "type": "message", "role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}],
            "stop_reason": reason});
        one_truth("sse", &sse(&events), &response, Err("incomplete_call"));
    }
    for reason in ["SAFETY", "RECITATION", "PROHIBITED_CONTENT"] {
        let chunks = [
            json!({"candidates": [{"index": 0, "content": {"role": "model", "parts": [
            {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}}]}, "finishReason": reason}]}),
        ];
        one_truth("sse", &sse(&chunks), &chunks[0], Err("incomplete_call"));
    }
    let (end, _) = streamed(
        "sse",
        &sse(&[openai_chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
               "function": {"name": "get_weather", "arguments": OSLO}}]}),
            Some("content_filter"),
        )]),
    );
    let message = end["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("content_filter"), "{end:#}");
}

/// A stop reason that says the output was cut while the model wrote text leaves the text as
/// far as it came, and the record says so (`output_cut`), streamed and whole alike: an OpenAI
/// reply of text alone, and an Anthropic reply whose text came after its call (whose call is
/// whole).
#[test]
fn a_text_cut_by_the_stop_reason_is_said_streamed_and_whole() {
    let cut = json!([{"kind": "output_cut",
                      "text": "the API's stop reason says the output was cut: finish_reason \"length\""}]);
    let response = openai_completion(
        json!({"role": "assistant", "content": "The largest files are a.log and"}),
        "length",
    );
    let chunks = vec![
        openai_chunk(
            json!({"role": "assistant", "content": "The largest files"}),
            None,
        ),
        openai_chunk(json!({"content": " are a.log and"}), Some("length")),
    ];
    for (framing, input) in [("sse", sse(&chunks)), ("jsonl", jsonl(&chunks))] {
        one_truth(framing, &input, &response, Ok(json!([])));
        let (end, _) = streamed(framing, &input);
        let (record, _) = whole(&response);
        assert_eq!(end["repairs"], cut, "{end:#}");
        assert_eq!(record["repairs"], cut, "{record:#}");
        assert_eq!(end["value"]["text"], "The largest files are a.log and");
    }
    // The same reply stopped on its own says nothing.
    let (record, _) = whole(&openai_completion(
        json!({"role": "assistant", "content": "Done."}),
        "stop",
    ));
    assert_eq!(record["repairs"], json!([]), "{record:#}");

    let response = json!({"type": "message", "role": "assistant", "stop_reason": "max_tokens",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                     "input": {"city": "Oslo"}},
                    {"type": "text", "text": "Now I will"}]});
    let events = [
        json!({"type": "message_start", "message": {"role": "assistant", "content": []}}),
        json!({"type": "content_block_start", "index": 0,
               "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                 "input": {}}}),
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "input_json_delta", "partial_json": OSLO}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1,
               "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 1,
               "delta": {"type": "text_delta", "text": "Now I will"}}),
        json!({"type": "message_delta", "delta": {"stop_reason": "max_tokens"}}),
    ];
    let input: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    let expected = json!([{"tool": "get_weather", "parameters": {"city": "Oslo"}}]);
    one_truth("sse", &input, &response, Ok(expected));
    let (end, _) = streamed("sse", &input);
    let (record, _) = whole(&response);
    let cut = json!([{"kind": "output_cut",
                      "text": "the API's stop reason says the output was cut: stop_reason \"max_tokens\""}]);
    assert_eq!(end["repairs"], cut, "{end:#}");
    assert_eq!(record["repairs"], cut, "{record:#}");
}

/// A Replicate prediction read whole (its `output`, the pieces the model streamed) and its
/// stream read as SSE (`event: output`, the data text, not JSON, its lines joined; `event:
/// done`) give the same reply: the same call, the same text; a prediction canceled (status
/// `canceled` whole, `done`'s `reason` streamed) says its output was cut.
#[test]
fn a_replicate_stream_reads_as_its_prediction() {
    let pieces = [
        "Checking.\n<tool_call>\n{\"name\": \"get_",
        "weather\", \"arguments\": {\"city\": ",
        "\"Oslo\"}}\n</tool_call>",
    ];
    let prediction = |status: &str| {
        json!({
            "id": "p1", "model": "meta/meta-llama-3-8b-instruct", "version": "v1",
            "input": {"prompt": "weather?"}, "logs": "", "output": pieces, "error": null,
            "status": status, "urls": {"get": "https://api.replicate.com/v1/predictions/p1"},
        })
    };
    let stream = |done: &str| {
        // The model's log lines come as events of their own, text that is no part of the reply.
        let mut out =
            String::from("event: logs\nid: l0\ndata: Loading model...\ndata: {not json\n\n");
        for (i, piece) in pieces.iter().enumerate() {
            out.push_str(&format!("event: output\nid: {i}\n"));
            // A piece's lines are `data:` lines of their own, as SSE writes text.
            for line in piece.split('\n') {
                out.push_str(&format!("data: {line}\n"));
            }
            out.push('\n');
        }
        out.push_str(&format!("event: done\ndata: {done}\n\n"));
        out
    };
    let call = json!([{"tool": "get_weather", "parameters": {"city": "Oslo"}}]);
    one_truth(
        "sse",
        &stream("{}"),
        &prediction("succeeded"),
        Ok(call.clone()),
    );
    let (end, _) = streamed("sse", &stream("{}"));
    let (record, _) = whole(&prediction("succeeded"));
    assert_eq!(end["value"]["text"], "Checking.");
    assert_eq!(end["value"], record["value"]);
    assert_eq!(end["repairs"], json!([]));

    let (end, _) = streamed("sse", &stream(r#"{"reason": "canceled"}"#));
    let (record, _) = whole(&prediction("canceled"));
    assert_eq!(end["value"], record["value"]);
    for said in [&end["repairs"], &record["repairs"]] {
        assert_eq!(said[0]["kind"], "output_cut", "{said}");
    }
    assert!(
        end["repairs"][0]["text"]
            .as_str()
            .unwrap()
            .contains("canceled")
    );

    // An event's name ends with it, even with no data: what follows is read as JSON again
    // (its text shown as it comes is the delta's, not the chunk's JSON).
    let chunk = |text: &str| {
        format!(
            "data: {}\n\n",
            json!({"choices": [{"delta": {"content": text}}]})
        )
    };
    let input = format!("event: output\n\n{}{}", chunk("h"), chunk("i"));
    let (events, _) = calls(&["--stream", "--input", "sse"], &input);
    let shown: String = events
        .iter()
        .filter(|e| e["event"] == "text")
        .filter_map(|e| e["delta"].as_str())
        .collect();
    assert_eq!(shown, "hi", "{events:#?}");
    assert_eq!(events.last().unwrap()["value"]["text"], "hi", "{events:#?}");

    // The server's error event fails the stream, as a failed prediction fails the record.
    let failed = "event: output\ndata: Check\n\nevent: error\ndata: {\"detail\": \"CUDA out of memory\"}\n\n";
    let (end, code) = streamed("sse", failed);
    assert_eq!(end["error"]["code"], "invalid_input", "{end}");
    assert!(error_message(&end).contains("CUDA out of memory"), "{end}");
    assert_ne!(code, 0);
    let mut failed_whole = prediction("failed");
    failed_whole["output"] = Value::Null;
    failed_whole["error"] = json!("CUDA out of memory");
    let (record, whole_code) = whole(&failed_whole);
    assert_eq!(record["error"]["code"], "invalid_input");
    assert_eq!(whole_code, code);
}

/// Under `--input jsonl` a body pretty-printed (`jq .`, its first line a bracket alone) is one
/// value over its lines; one never closed fails at the end; a compact line cut short fails at
/// that line, not later.
#[test]
fn jsonl_reads_a_pretty_printed_body_and_still_fails_a_cut_line() {
    let message = json!({"message": {"role": "assistant", "content": "hi", "tool_calls": [
        {"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]}, "done": true});
    let pretty = serde_json::to_string_pretty(&message).unwrap();
    let (end, code) = streamed("jsonl", &format!("{pretty}\n"));
    let (record, whole_code) = whole(&message);
    assert_eq!(
        (end["value"].clone(), code),
        (record["value"].clone(), whole_code),
        "{end}"
    );
    assert_eq!(end["value"]["calls"][0]["tool"], "get_weather", "{end}");

    let cut: String = pretty.lines().take(4).map(|l| format!("{l}\n")).collect();
    let (end, code) = streamed("jsonl", &cut);
    assert_eq!(end["error"]["code"], "invalid_input", "{end}");
    assert!(error_message(&end).starts_with("line 4:"), "{end}");
    assert_ne!(code, 0);

    let lines = "{\"message\": {\"content\": \"a\"\n{\"message\": {\"content\": \"b\"}}\n";
    let (events, _) = calls(&["--stream", "--input", "jsonl"], lines);
    let end = events.last().unwrap();
    assert!(error_message(end).starts_with("line 1:"), "{end}");
    assert_eq!(events.len(), 1, "{events:#?}");
}
