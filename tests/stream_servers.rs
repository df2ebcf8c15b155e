//! `toolmend calls --stream --input sse|jsonl` on the shapes real servers stream in, each read
//! as `calls` reads the whole response: calls told apart without an index or with one index
//! for all (Gemini's OpenAI-compatible endpoint, proxies, Ollama), a server tool's block
//! (Anthropic), content as a list of parts (Mistral), Responses arguments given only when done.

use serde_json::{Value, json};

mod common;
use common::stream_events::{
    fixture, kinds, stream, transcript, well_formed, whole_record, whole_records,
};

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
    let record = whole_record(&whole);
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
    let record = whole_record(&whole);
    assert_eq!(
        record,
        json!({"calls": [], "text": "It is 4.", "reasoning": "Two and two.", "incomplete": []})
    );
    assert_eq!(well_formed(&events)["value"], record);
}

/// A Responses stream whose arguments come only in the `done` events (no deltas, as some
/// servers and proxies send them), or in part in deltas, gives the calls of the whole
/// response: the calls had `{}` for parameters.
#[test]
fn responses_arguments_given_only_when_done_are_read() {
    let item = |i: usize, name: &str, arguments: &str| {
        json!({"type": "function_call", "id": format!("fc_{i}"), "call_id": format!("call_{i}"),
            "name": name, "arguments": arguments, "status": "completed"})
    };
    let event = |kind: &str, body: Value| {
        let mut e = body;
        e["type"] = json!(kind);
        format!("event: {kind}\ndata: {e}\n\n")
    };
    let calls = [
        item(0, "get_weather", "{\"city\": \"Oslo\"}"),
        item(1, "get_time", "{\"tz\": \"CET\"}"),
    ];
    let mut sse = String::new();
    for (i, call) in calls.iter().enumerate() {
        let mut added = call.clone();
        added["arguments"] = json!("");
        sse += &event(
            "response.output_item.added",
            json!({"output_index": i, "item": added}),
        );
        let arguments = call["arguments"].as_str().unwrap();
        if i == 1 {
            // Part of them as a delta, then the whole in `done`.
            sse += &event(
                "response.function_call_arguments.delta",
                json!({"output_index": i, "item_id": "fc_1", "delta": &arguments[..5]}),
            );
        }
        sse += &event(
            "response.function_call_arguments.done",
            json!({"output_index": i, "item_id": format!("fc_{i}"), "arguments": arguments}),
        );
        sse += &event(
            "response.output_item.done",
            json!({"output_index": i, "item": call}),
        );
    }
    let (events, code) = stream(&["--input", "sse"], sse.as_bytes());
    assert_eq!(code, 0);
    let whole = json!({"object": "response", "status": "completed", "output": calls});
    let record = whole_record(&whole);
    assert_eq!(record["calls"][1]["parameters"], json!({"tz": "CET"}));
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

/// Gemini's `MALFORMED_FUNCTION_CALL` (or `UNEXPECTED_TOOL_CALL`): the server dropped the call
/// the model wrote and says so in the stop reason, with the call as written in `finishMessage`.
/// The reply is not `ok` with its text taken for an answer (or `empty_input`, "reply is empty",
/// when it had no text): it has an incomplete call, with the server's words, streamed and
/// whole alike.
#[test]
fn a_call_the_server_dropped_is_an_incomplete_call() {
    let (events, end) = transcript("gemini_malformed_call.sse", "sse", 1);
    assert!(kinds(&events).contains(&"incomplete"));
    assert_eq!(end["error"]["code"], "incomplete_call");
    let message = end["value"]["incomplete"][0]["message"].as_str().unwrap();
    assert!(message.contains("MALFORMED_FUNCTION_CALL"), "{message}");
    assert!(
        message.contains("default_api.get_weather(city=\"Oslo\")"),
        "{message}"
    );
    // The error says the server left it out, not that the reply was cut.
    let error = end["error"]["message"].as_str().unwrap();
    assert!(
        error.contains("is not a call: the server dropped"),
        "{error}"
    );
    assert!(!error.contains("cut off"), "{error}");
    let whole = json!({"candidates": [{"index": 0, "content": {"role": "model",
        "parts": [{"text": "Let me check the weather."}]},
        "finishReason": "MALFORMED_FUNCTION_CALL",
        "finishMessage": "Malformed function call: print(default_api.get_weather(city=\"Oslo\"))"}]});
    let (record, code) = whole_records(&whole);
    assert_eq!(code, 1);
    let strip = |v: &Value| {
        let mut v = v.clone();
        let map = v.as_object_mut().unwrap();
        map.remove("line");
        map.remove("event");
        map["error"].as_object_mut().unwrap().remove("original");
        v
    };
    assert_eq!(strip(&end), strip(&record));
    // With no text at all, the same incomplete call (it was `empty_input`).
    let empty = json!({"candidates": [{"index": 0, "content": {},
        "finishReason": "UNEXPECTED_TOOL_CALL"}]});
    assert_eq!(whole_records(&empty).0["error"]["code"], "incomplete_call");
}

/// Text streamed by the servers' completion endpoints reads as their whole response does:
/// OpenAI `/v1/completions` (`choices[].text`: the stream dropped it, "reply is empty"),
/// llama.cpp's `/completion` (`content`; its whole response was read as a JSON text, not as
/// the reply) and Hugging Face TGI's `/generate_stream` (`token.text`, its special tokens not
/// text; `/generate`'s `generated_text` was read as a JSON text too).
#[test]
fn completion_endpoints_read_the_same_streamed_and_whole() {
    let call = "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1";
    let (head, tail) = call.split_at(20);
    let cases = [
        (
            vec![
                json!({"object": "text_completion", "choices": [{"index": 0, "text": head, "finish_reason": null}]}),
                json!({"object": "text_completion", "choices": [{"index": 0, "text": tail, "finish_reason": "length"}]}),
            ],
            json!({"object": "text_completion", "choices": [{"index": 0, "text": call, "finish_reason": "length"}]}),
        ),
        (
            vec![
                json!({"index": 0, "content": head, "stop": false}),
                json!({"index": 0, "content": tail, "stop": false}),
                json!({"index": 0, "content": "", "stop": true, "stop_type": "limit", "timings": {}}),
            ],
            json!({"index": 0, "content": call, "stop": true, "stop_type": "limit", "timings": {}}),
        ),
        (
            vec![
                json!({"index": 1, "token": {"id": 1, "text": head, "special": false}, "generated_text": null, "details": null}),
                json!({"index": 2, "token": {"id": 2, "text": "</s>", "special": true}, "generated_text": null, "details": null}),
                json!({"index": 3, "token": {"id": 3, "text": tail, "special": false}, "generated_text": call,
                    "details": {"finish_reason": "length", "generated_tokens": 3}}),
            ],
            json!({"generated_text": call, "details": {"finish_reason": "length", "generated_tokens": 3}}),
        ),
    ];
    for (chunks, whole) in cases {
        let sse: String = chunks.iter().map(|c| format!("data:{c}\n\n")).collect();
        let (events, code) = stream(&["--input", "sse"], sse.as_bytes());
        let end = well_formed(&events);
        assert_eq!(code, 1, "{end}");
        let (record, _) = whole_records(&whole);
        assert_eq!(end["error"]["code"], "incomplete_call", "{whole}");
        assert_eq!(end["value"], record["value"], "{whole}");
    }
}

/// Ollama's `/api/generate` (`response` a line, `thinking` beside it, `done_reason` on the last
/// line; with a raw prompt the reply holds the model's tool-call text as written). The stream
/// read no line of it ("reply is empty"), and the whole response was read as a JSON text.
#[test]
fn ollama_generate_reads_the_same_streamed_and_whole() {
    let call = "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}}</tool_call>";
    for (call, reason, status) in [(call, "stop", 0), (&call[..40], "length", 1)] {
        let (head, tail) = call.split_at(20);
        let lines = [
            json!({"model": "qwen3", "created_at": "t", "response": "", "thinking": "Use f.", "done": false}),
            json!({"model": "qwen3", "created_at": "t", "response": head, "done": false}),
            json!({"model": "qwen3", "created_at": "t", "response": tail, "done": false}),
            json!({"model": "qwen3", "created_at": "t", "response": "", "done": true,
                "done_reason": reason, "eval_count": 9}),
        ];
        let jsonl: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let (events, code) = stream(&["--input", "jsonl"], jsonl.as_bytes());
        let end = well_formed(&events);
        assert_eq!(code, status, "{end}");
        let whole = json!({"model": "qwen3", "created_at": "t", "response": call,
            "thinking": "Use f.", "done": true, "done_reason": reason, "eval_count": 9});
        let (record, _) = whole_records(&whole);
        assert_eq!(end["value"], record["value"], "{whole}");
        assert_eq!(record["value"]["reasoning"], "Use f.");
        if status == 0 {
            assert_eq!(record["value"]["calls"][0]["parameters"], json!({"a": 1}));
        } else {
            assert_eq!(record["error"]["code"], "incomplete_call");
        }
    }
}

/// Amazon Bedrock's `ConverseStream` events as the AWS SDKs give them, one a line (`--input
/// jsonl`): a `reasoningContent` delta and its signature, text, a `toolUse` block whose `input`
/// comes in pieces, `messageStop`'s `stopReason` and the `metadata` event. The stream read
/// none of them ("reply is empty"), and the whole `Converse` response was read as a JSON text:
/// the call was lost both ways. Now both give the call, and `max_tokens` makes it incomplete.
#[test]
fn bedrock_converse_reads_the_same_streamed_and_whole() {
    for (reason, status) in [("tool_use", 0), ("max_tokens", 1)] {
        let events = [
            json!({"messageStart": {"role": "assistant"}}),
            json!({"contentBlockDelta": {"delta": {"reasoningContent": {"text": "Need the weather."}}, "contentBlockIndex": 0}}),
            json!({"contentBlockDelta": {"delta": {"reasoningContent": {"signature": "sig"}}, "contentBlockIndex": 0}}),
            json!({"contentBlockStop": {"contentBlockIndex": 0}}),
            json!({"contentBlockDelta": {"delta": {"text": "Let me check."}, "contentBlockIndex": 1}}),
            json!({"contentBlockStop": {"contentBlockIndex": 1}}),
            json!({"contentBlockStart": {"start": {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather"}}, "contentBlockIndex": 2}}),
            json!({"contentBlockDelta": {"delta": {"toolUse": {"input": "{\"city\": \"Os"}}, "contentBlockIndex": 2}}),
            json!({"contentBlockDelta": {"delta": {"toolUse": {"input": "lo\"}"}}, "contentBlockIndex": 2}}),
            json!({"contentBlockStop": {"contentBlockIndex": 2}}),
            json!({"messageStop": {"stopReason": reason}}),
            json!({"metadata": {"usage": {"inputTokens": 9, "outputTokens": 9, "totalTokens": 18}, "metrics": {"latencyMs": 120}}}),
        ];
        let jsonl: String = events.iter().map(|e| format!("{e}\n")).collect();
        let (events, code) = stream(&["--input", "jsonl"], jsonl.as_bytes());
        let end = well_formed(&events);
        assert_eq!(code, status, "{end}");
        let whole = json!({"output": {"message": {"role": "assistant", "content": [
            {"reasoningContent": {"reasoningText": {"text": "Need the weather.", "signature": "sig"}}},
            {"text": "Let me check."},
            {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": {"city": "Oslo"}}}]}},
            "stopReason": reason, "usage": {"inputTokens": 9, "outputTokens": 9, "totalTokens": 18}});
        let (record, _) = whole_records(&whole);
        assert_eq!(end["value"], record["value"], "{whole}");
        assert_eq!(record["value"]["reasoning"], "Need the weather.");
        assert_eq!(record["value"]["text"], "Let me check.");
        if status == 0 {
            let call = json!({"tool": "get_weather", "parameters": {"city": "Oslo"}, "id": "tooluse_1", "repairs": []});
            assert_eq!(record["value"]["calls"], json!([call]));
        } else {
            assert_eq!(record["error"]["code"], "incomplete_call");
            assert_eq!(record["value"]["incomplete"][0]["id"], "tooluse_1");
        }
    }
    // An exception event ends the stream with the server's words.
    let failed = "{\"contentBlockDelta\": {\"delta\": {\"text\": \"Hi\"}, \"contentBlockIndex\": 0}}\n\
        {\"throttlingException\": {\"message\": \"Too many requests\"}}\n";
    let (events, code) = stream(&["--input", "jsonl"], failed.as_bytes());
    let end = well_formed(&events);
    assert_eq!(code, 1, "{end}");
    assert_eq!(end["error"]["code"], "invalid_input");
    let message = end["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("throttlingException: Too many requests"),
        "{message}"
    );
}

/// Cohere's v2 chat stream (fixtures/stream/cohere_v2.sse: `tool-plan-delta`, `tool-call-start`,
/// `tool-call-delta`, `message-end`), as Cohere and vLLM's `/cohere/v2/chat` send it. The
/// stream read none of its events ("reply is empty"): the call was lost. It now reads as the
/// whole response does, the plan as reasoning both ways; `MAX_TOKENS` cuts the call.
#[test]
fn cohere_v2_reads_the_same_streamed_and_whole() {
    let (events, end) = transcript("cohere_v2.sse", "sse", 0);
    assert!(kinds(&events).contains(&"call_start"));
    let whole = json!({"id": "29f14a5a", "message": {"role": "assistant",
        "tool_plan": "I will look up the weather.", "tool_calls": [{"id": "get_weather_nsz5zm3w56q3",
        "type": "function", "function": {"name": "get_weather", "arguments": "{\n    \"city\": \"Oslo\"\n}"}}]},
        "finish_reason": "TOOL_CALL"});
    let (record, code) = whole_records(&whole);
    assert_eq!(code, 0);
    assert_eq!(end["value"], record["value"]);
    assert_eq!(record["value"]["reasoning"], "I will look up the weather.");
    assert_eq!(
        record["value"]["calls"][0]["parameters"],
        json!({"city": "Oslo"})
    );
    // Cut at the token limit, streamed: the call is incomplete, as whole.
    let text = std::fs::read_to_string(fixture("cohere_v2.sse")).unwrap();
    let cut = text.replace("\"TOOL_CALL\"", "\"MAX_TOKENS\"");
    let (events, code) = stream(&["--input", "sse"], cut.as_bytes());
    let end = well_formed(&events);
    assert_eq!(code, 1, "{end}");
    assert_eq!(end["error"]["code"], "incomplete_call");
}

/// SSE framing as servers and proxies send it (fixtures/stream/sse_framing.sse, CRLF line
/// ends): a first chunk with no choices, comments and keep-alives, `event:`/`id:`/`retry:`
/// fields, an event with empty data, a chunk's JSON split over two `data:` lines, chunks with no
/// blank line between them and `[DONE]` right after a chunk. The chunks with no blank line between them joined into
/// data that is not JSON, and the stream ended `invalid_input`; now it reads as the whole
/// response does.
#[test]
fn sse_framing_quirks_read_as_the_whole_response() {
    let (events, end) = transcript("sse_framing.sse", "sse", 0);
    assert_eq!(
        kinds(&events),
        [
            "text",
            "call_start",
            "arguments",
            "arguments",
            "arguments",
            "call_end",
            "end"
        ]
    );
    let whole = json!({"id": "chatcmpl-q", "object": "chat.completion", "choices": [{"index": 0,
        "message": {"role": "assistant", "content": "Checking.", "tool_calls": [{"id": "call_1",
            "type": "function", "function": {"name": "get_weather",
            "arguments": "{\"city\": \"Oslo\", \"days\": 2}"}}]},
        "finish_reason": "tool_calls"}]});
    let (record, code) = whole_records(&whole);
    assert_eq!(code, 0);
    assert_eq!(end["value"], record["value"]);
    assert_eq!(
        end["value"]["calls"][0]["parameters"],
        json!({"city": "Oslo", "days": 2})
    );
}

/// An error a server sent in place of a reply is that error on every surface: whole (it was
/// `ok`, the error's JSON taken for the reply's text (Gemini's blocked prompt too), or a failed Responses response's calls
/// taken as whole) and streamed, chunk a line or as SSE (vLLM's `{"object": "error"}` was read
/// as an empty reply), and OpenRouter's mid-stream error beside its last `choices` (the reply
/// was `ok` with what came before it).
#[test]
fn an_error_the_server_sent_is_that_error_whole_and_streamed() {
    let shapes = [
        (
            json!({"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}),
            "Rate limit reached",
        ),
        (
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
            "Overloaded",
        ),
        (
            json!({"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED"}}),
            "Quota exceeded",
        ),
        (
            json!({"error": "model \"qwen3\" not found"}),
            "model \"qwen3\" not found",
        ),
        (
            json!({"object": "error", "message": "max_tokens is too large", "type": "BadRequestError", "code": 400}),
            "max_tokens is too large",
        ),
        (
            json!({"id": "resp_1", "object": "response", "status": "failed",
            "error": {"code": "server_error", "message": "The model failed"},
            "output": [{"type": "function_call", "call_id": "call_1", "name": "rm",
                "arguments": "{\"path\": \"/tmp/x\"}"}]}),
            "The model failed",
        ),
        (
            json!({"promptFeedback": {"blockReason": "SAFETY", "safetyRatings": []},
                "usageMetadata": {"promptTokenCount": 5}}),
            "it blocked the prompt (promptFeedback.blockReason \"SAFETY\")",
        ),
    ];
    for (response, said) in shapes {
        let message = format!("the server sent an error: {said}");
        let (record, code) = whole_records(&response);
        assert_eq!(code, 1, "{response}");
        assert_eq!(record["error"]["code"], "invalid_input", "{response}");
        assert_eq!(record["error"]["message"], message.as_str(), "{response}");
        assert!(record.get("value").is_none(), "{record}");
        for (framing, input) in [
            ("jsonl", format!("{response}\n")),
            ("sse", format!("data: {response}\n\n")),
        ] {
            let (events, code) = stream(&["--input", framing], input.as_bytes());
            assert_eq!(code, 1, "{framing} {response}");
            let end = well_formed(&events);
            assert_eq!(end["error"]["code"], "invalid_input", "{framing} {end}");
            assert_eq!(
                end["error"]["message"],
                format!("line 1: {message}"),
                "{framing}"
            );
        }
    }
    // OpenRouter: the provider failed after some of the reply; its last chunk says so beside
    // `choices` (finish_reason "error").
    let chunks = [
        json!({"id": "gen-1", "object": "chat.completion.chunk", "choices": [{"index": 0,
            "delta": {"role": "assistant", "content": "Deleting the"}}]}),
        json!({"id": "gen-1", "object": "chat.completion.chunk",
            "error": {"code": "server_error", "message": "Provider disconnected unexpectedly"},
            "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]}),
    ];
    let sse: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    let (events, code) = stream(&["--input", "sse"], sse.as_bytes());
    assert_eq!(code, 1);
    let end = well_formed(&events);
    assert_eq!(
        end["error"]["message"],
        "line 3: the server sent an error: Provider disconnected unexpectedly"
    );
}

/// `finish_reason: "error"` (OpenRouter: the provider failed) cuts the call written last, as
/// `length` does, however whole its JSON looks.
#[test]
fn a_finish_reason_of_error_cuts_the_last_call() {
    let response = json!({"id": "gen-1", "object": "chat.completion", "choices": [{"index": 0,
        "finish_reason": "error", "message": {"role": "assistant", "content": null,
        "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "rm", "arguments": "{\"path\": \"/tmp/build\"}"}}]}}]});
    let (record, code) = whole_records(&response);
    assert_eq!(code, 1);
    assert_eq!(record["error"]["code"], "incomplete_call");
    assert_eq!(record["value"]["calls"], json!([]));
}

/// A whole response given to a stream as one chunk: an OpenAI assistant message alone keeps its
/// calls (they were dropped, its text kept), Cohere's whole response keeps its plan as reasoning
/// and its cut (its call was given as a call, though `calls` says it was cut), and a whole
/// response no stream chunk looks like (Anthropic's message or content list, a Responses API
/// response, Bedrock's, Hugging Face's) is read too: text and reasoning blocks joined as `calls`
/// joins them, calls, stop reasons (they were refused; before that, an empty reply).
#[test]
fn a_whole_response_given_as_a_chunk_is_read_as_calls_reads_it() {
    let message = json!({"role": "assistant", "content": "Let me check.", "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]});
    let cohere_cut = json!({"id": "c1", "finish_reason": "MAX_TOKENS", "message": {
        "role": "assistant", "tool_plan": "I will look up the weather.", "tool_calls": [
            {"id": "get_weather_1", "type": "function",
             "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]}});
    for response in [&message, &cohere_cut] {
        let (whole, _) = whole_records(response);
        let (events, _) = stream(&["--input", "jsonl"], format!("{response}\n").as_bytes());
        let end = well_formed(&events);
        assert_eq!(end["ok"], whole["ok"], "{response}");
        assert_eq!(end["value"], whole["value"], "{response}");
    }
    let (whole, _) = whole_records(&cohere_cut);
    assert_eq!(whole["error"]["code"], "incomplete_call");
    assert_eq!(whole["value"]["reasoning"], "I will look up the weather.");
    // A response no stream sends as a chunk (a server that ignored `"stream": true` sends
    // one): it was refused, and before that read as an empty reply with its calls lost.
    for response in [
        json!({"id": "msg_1", "type": "message", "role": "assistant", "content": [
            {"type": "thinking", "thinking": "Oslo, then."},
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}},
            {"type": "text", "text": "And more."}],
            "stop_reason": "tool_use"}),
        json!({"id": "msg_2", "type": "message", "role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}],
            "stop_reason": "max_tokens"}),
        json!({"id": "resp_1", "object": "response", "status": "completed", "output": [
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Look it up."}]},
            {"type": "message", "content": [{"type": "output_text", "text": "One."},
                {"type": "output_text", "text": "Two."}]},
            {"type": "function_call", "call_id": "call_1", "name": "get_weather",
             "arguments": "{\"city\": \"Oslo\"}"}]}),
        json!({"id": "resp_2", "object": "response", "status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"}, "output": [
            {"type": "function_call", "call_id": "call_1", "name": "get_weather",
             "arguments": "{\"city\": \"Oslo\"}"}]}),
        json!({"output": {"message": {"role": "assistant", "content": [
            {"reasoningContent": {"reasoningText": {"text": "Weather."}}},
            {"toolUse": {"toolUseId": "t1", "name": "get_weather", "input": {"city": "Oslo"}}}]}},
            "stopReason": "tool_use"}),
        json!([{"generated_text": "<tool_call>{\"name\": \"get_weather\", \"arguments\": {}}</tool_call>"}]),
        json!([{"type": "text", "text": "Hi."}, {"type": "tool_use", "id": "toolu_2",
            "name": "get_weather", "input": {"city": "Bergen"}}]),
    ] {
        let (whole, code) = whole_records(&response);
        let (events, stream_code) =
            stream(&["--input", "jsonl"], format!("{response}\n").as_bytes());
        assert_eq!(stream_code, code, "{response}");
        let end = well_formed(&events);
        assert_eq!(end["ok"], whole["ok"], "{response}");
        assert_eq!(end["value"], whole["value"], "{response}");
        // (`original` is each surface's own: the stream's is the reply it rebuilt.)
        for key in ["code", "message", "offset"] {
            assert_eq!(end["error"][key], whole["error"][key], "{response}");
        }
        assert!(
            !whole["value"]["calls"].as_array().unwrap().is_empty()
                || !whole["value"]["incomplete"].as_array().unwrap().is_empty(),
            "{whole}"
        );
    }
}

/// Cloudflare Workers AI: the REST API's envelope (`{"result": {"response", "tool_calls"},
/// "success": true}`) is its result, read as a message (its calls were lost: the reply was `ok`
/// with the envelope's JSON as its text), `success: false` is the server's error (it was `ok`),
/// and its stream's `{"response": "…"}` chunks are text (they were an empty reply).
#[test]
fn cloudflare_workers_ai_reads_the_same_streamed_and_whole() {
    let whole = json!({"result": {"response": "Checking.", "tool_calls": [
        {"name": "get_weather", "arguments": {"city": "Oslo"}}]},
        "success": true, "errors": [], "messages": []});
    let (record, code) = whole_records(&whole);
    assert_eq!(code, 0, "{record}");
    assert_eq!(record["value"]["text"], "Checking.");
    assert_eq!(
        record["value"]["calls"],
        json!([{"tool": "get_weather", "parameters": {"city": "Oslo"}, "repairs": []}])
    );
    let failed = json!({"result": null, "success": false,
        "errors": [{"code": 7003, "message": "Could not route to /accounts/x/ai/run"}], "messages": []});
    let (record, code) = whole_records(&failed);
    assert_eq!(code, 1);
    assert_eq!(
        record["error"]["message"],
        "the server sent an error: Could not route to /accounts/x/ai/run"
    );
    let sse = "data: {\"response\":\"The weather \",\"p\":\"abcdefgh\"}\n\n\
               data: {\"response\":\"is fine.\"}\n\n\
               data: {\"response\":\"\",\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":4}}\n\n\
               data: [DONE]\n\n";
    let (events, code) = stream(&["--input", "sse"], sse.as_bytes());
    assert_eq!(code, 0);
    let end = well_formed(&events);
    assert_eq!(end["value"]["text"], "The weather is fine.");
    let text = json!({"result": {"response": "The weather is fine."}, "success": true,
        "errors": [], "messages": []});
    assert_eq!(whole_records(&text).0["value"], end["value"]);
}

/// IBM watsonx.ai's text generation (`results[0].generated_text`, whole and a chunk each) and
/// KoboldCpp's native API (`{"results": [{"text", "finish_reason"}]}` whole, `{"token": …}`
/// streamed) are read as their text (whole, the reply was `ok` with the response's JSON as its
/// text and the call in it lost; streamed, an empty reply). A model's own JSON answer with a
/// list of results stays the text it is.
#[test]
fn watsonx_and_koboldcpp_read_the_same_streamed_and_whole() {
    let call =
        "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}</tool_call>";
    let watsonx = json!({"model_id": "ibm/granite-3-8b-instruct", "results": [
        {"generated_text": call, "generated_token_count": 20, "stop_reason": "eos_token"}]});
    let (record, code) = whole_records(&watsonx);
    assert_eq!(code, 0, "{record}");
    assert_eq!(record["value"]["calls"][0]["tool"], "get_weather");
    let (half, rest) = call.split_at(30);
    let sse: String = [half, rest]
        .iter()
        .map(|t| {
            format!(
                "data: {}\n\n",
                json!({"model_id": "m", "results": [{"generated_text": t}]})
            )
        })
        .collect();
    let (events, code) = stream(&["--input", "sse"], sse.as_bytes());
    assert_eq!(code, 0);
    assert_eq!(well_formed(&events)["value"], record["value"]);

    let kobold = json!({"results": [{"text": call, "finish_reason": "stop"}]});
    assert_eq!(whole_records(&kobold).0["value"], record["value"]);
    let sse: String = [half, rest]
        .iter()
        .map(|t| format!("event: message\ndata: {}\n\n", json!({"token": t})))
        .collect();
    let (events, code) = stream(&["--input", "sse"], sse.as_bytes());
    assert_eq!(code, 0);
    assert_eq!(well_formed(&events)["value"], record["value"]);

    let answer = json!({"results": [{"text": "first", "url": "https://a"}, {"text": "second"}]});
    assert_eq!(
        whole_records(&answer).0["value"]["text"],
        answer.to_string()
    );
}
