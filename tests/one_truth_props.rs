//! One truth between a server's whole response and its stream, as properties through the
//! library (no process per case): for any OpenAI chat completion, Anthropic message, Ollama
//! `/api/chat` response, OpenAI Responses response or Gemini response built
//! from random text, reasoning and tool calls (cut or whole arguments, ids or none, the legacy
//! `function_call` beside `tool_calls`, any stop reason), its SSE stream (every string split
//! at random places, one piece per chunk or event) read by `calls::Deltas` into a `Stream`
//! gives what `calls::extract` gives for the whole response: the same calls, text, reasoning
//! and incomplete calls, or the same error code.
//!
//! Both are what the CLI runs (`calls` whole and `calls --stream --input sse`), and what the
//! packages' response helpers and `stream` hand to.

use proptest::prelude::*;
use serde_json::{Value, json};
use toolmend_core::calls::{self, CallOptions, DeltaFraming, Deltas, Stream};

/// Text a model may write: markers, JSON punctuation, escapes, multi-byte characters.
fn text() -> impl Strategy<Value = String> {
    let pieces = prop_oneof![
        Just("Oslo"),
        Just(" "),
        Just("\n"),
        Just("<"),
        Just("<think>"),
        Just("</think>"),
        Just("<tool_call>"),
        Just("</tool_call>"),
        Just("{"),
        Just("}"),
        Just("\""),
        Just("\\"),
        Just("["),
        Just(","),
        Just("é"),
        Just("🙂"),
        Just("the"),
        Just(r#"<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>"#),
        Just(r#"{"name": "get_weather", "arguments": {"city": "Oslo"}}"#),
    ];
    prop::collection::vec(pieces, 0..8).prop_map(|p| p.concat())
}

/// A call's arguments: whole JSON, JSON cut short, or nothing.
fn arguments() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => (text(), 0u8..10).prop_map(|(city, n)| json!({"city": city, "n": n}).to_string()),
        1 => (text(), 0usize..24).prop_map(|(city, keep)| {
            let whole = json!({"city": city}).to_string();
            let mut cut = keep.min(whole.len());
            while !whole.is_char_boundary(cut) {
                cut -= 1;
            }
            whole[..cut].to_owned()
        }),
        1 => Just(String::new()),
    ]
}

/// A call; ids are unique (a stream's pieces that carry one id continue one call).
#[derive(Debug, Clone)]
struct Call {
    name: String,
    id: Option<String>,
    arguments: String,
}

fn call() -> impl Strategy<Value = Call> {
    (
        prop_oneof![Just("get_weather"), Just("f"), Just("")],
        prop::option::weighted(0.8, "call_[a-z]{6}"),
        arguments(),
    )
        .prop_map(|(name, id, arguments)| Call {
            name: name.to_owned(),
            id,
            arguments,
        })
}

#[derive(Debug, Clone)]
struct Reply {
    reasoning: Option<String>,
    text: Option<String>,
    calls: Vec<Call>,
    /// The first call also in the legacy `function_call` (servers fill both).
    legacy_too: bool,
    stop: &'static str,
    /// Where each string is cut into pieces (fractions of its length).
    cuts: Vec<f64>,
}

fn reply() -> impl Strategy<Value = Reply> {
    (
        prop::option::of(text()),
        prop::option::of(text()),
        prop::collection::vec(call(), 0..3).prop_map(|mut calls| {
            for (i, c) in calls.iter_mut().enumerate() {
                if let Some(id) = &mut c.id {
                    id.push_str(&i.to_string());
                }
            }
            calls
        }),
        any::<bool>(),
        prop_oneof![Just("stop"), Just("tool_calls"), Just("length")],
        prop::collection::vec(0.0f64..1.0, 0..4),
    )
        .prop_map(|(reasoning, text, calls, legacy_too, stop, cuts)| Reply {
            reasoning,
            text,
            calls,
            legacy_too,
            stop,
            cuts,
        })
}

/// `s` in pieces at the reply's cut points (on character boundaries); one piece at least.
fn pieces<'s>(s: &'s str, cuts: &[f64]) -> Vec<&'s str> {
    let mut at: Vec<usize> = cuts
        .iter()
        .map(|f| {
            let mut i = (f * s.len() as f64) as usize;
            while !s.is_char_boundary(i) {
                i -= 1;
            }
            i
        })
        .collect();
    at.push(s.len());
    at.sort_unstable();
    let mut out = Vec::new();
    let mut from = 0;
    for to in at {
        if to > from {
            out.push(&s[from..to]);
            from = to;
        }
    }
    if out.is_empty() {
        out.push(s);
    }
    out
}

fn sse(events: &[Value]) -> String {
    let mut out: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    out.push_str("data: [DONE]\n\n");
    out
}

fn openai(reply: &Reply) -> (Value, String) {
    let mut message = json!({"role": "assistant", "content": reply.text});
    let mut chunks = Vec::new();
    let chunk = |delta: Value, finish: Option<&str>| {
        json!({"id": "c", "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    if let Some(r) = &reply.reasoning {
        message["reasoning_content"] = json!(r);
        for p in pieces(r, &reply.cuts) {
            chunks.push(chunk(json!({"reasoning_content": p}), None));
        }
    }
    if let Some(t) = &reply.text {
        for p in pieces(t, &reply.cuts) {
            chunks.push(chunk(json!({"content": p}), None));
        }
    }
    if !reply.calls.is_empty() {
        let mut calls = Vec::new();
        for (i, c) in reply.calls.iter().enumerate() {
            let mut whole =
                json!({"type": "function", "function": {"name": c.name, "arguments": c.arguments}});
            let parts = pieces(&c.arguments, &reply.cuts);
            let mut first = json!({"index": i, "type": "function",
                                   "function": {"name": c.name, "arguments": parts[0]}});
            if let Some(id) = &c.id {
                whole["id"] = json!(id);
                first["id"] = json!(id);
            }
            let legacy = reply.legacy_too && i == 0;
            let mut delta = json!({"tool_calls": [first]});
            if legacy {
                delta["function_call"] = json!({"name": c.name, "arguments": parts[0]});
            }
            chunks.push(chunk(delta, None));
            for p in &parts[1..] {
                let mut delta = json!({"tool_calls": [{"index": i, "function": {"arguments": p}}]});
                if legacy {
                    delta["function_call"] = json!({"arguments": p});
                }
                chunks.push(chunk(delta, None));
            }
            calls.push(whole);
        }
        if reply.legacy_too {
            message["function_call"] = calls[0]["function"].clone();
        }
        message["tool_calls"] = Value::Array(calls);
    }
    chunks.push(chunk(json!({}), Some(reply.stop)));
    let whole = json!({"id": "c", "object": "chat.completion",
                       "choices": [{"index": 0, "message": message, "finish_reason": reply.stop}]});
    (whole, sse(&chunks))
}

fn anthropic(reply: &Reply) -> (Value, String) {
    let stop = match reply.stop {
        "length" => "max_tokens",
        "tool_calls" => "tool_use",
        _ => "end_turn",
    };
    let mut content = Vec::new();
    let mut events = vec![
        json!({"type": "message_start", "message": {"id": "m", "type": "message",
        "role": "assistant", "content": [], "stop_reason": null}}),
    ];
    let mut block = 0;
    let mut add = |start: Value, deltas: Vec<Value>, events: &mut Vec<Value>| {
        events.push(json!({"type": "content_block_start", "index": block, "content_block": start}));
        for d in deltas {
            events.push(json!({"type": "content_block_delta", "index": block, "delta": d}));
        }
        events.push(json!({"type": "content_block_stop", "index": block}));
        block += 1;
    };
    if let Some(r) = &reply.reasoning {
        content.push(json!({"type": "thinking", "thinking": r, "signature": "s"}));
        let deltas = pieces(r, &reply.cuts)
            .into_iter()
            .map(|p| json!({"type": "thinking_delta", "thinking": p}))
            .collect();
        add(
            json!({"type": "thinking", "thinking": ""}),
            deltas,
            &mut events,
        );
    }
    if let Some(t) = &reply.text {
        content.push(json!({"type": "text", "text": t}));
        let deltas = pieces(t, &reply.cuts)
            .into_iter()
            .map(|p| json!({"type": "text_delta", "text": p}))
            .collect();
        add(json!({"type": "text", "text": ""}), deltas, &mut events);
    }
    for (i, c) in reply.calls.iter().enumerate() {
        // A tool_use's input is an object in a whole message: only whole JSON objects can be
        // one, so cut arguments are the stream's alone (the whole message then holds `{}`).
        let input: Value = serde_json::from_str(&c.arguments)
            .ok()
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({}));
        let id = c.id.clone().unwrap_or_else(|| format!("toolu_{i}"));
        content.push(json!({"type": "tool_use", "id": id, "name": c.name, "input": input}));
        let text = input.to_string();
        let deltas = pieces(&text, &reply.cuts)
            .into_iter()
            .map(|p| json!({"type": "input_json_delta", "partial_json": p}))
            .collect();
        add(
            json!({"type": "tool_use", "id": id, "name": c.name, "input": {}}),
            deltas,
            &mut events,
        );
    }
    events.push(json!({"type": "message_delta", "delta": {"stop_reason": stop}}));
    events.push(json!({"type": "message_stop"}));
    let whole = json!({"id": "m", "type": "message", "role": "assistant", "content": content,
                       "stop_reason": stop});
    (whole, sse(&events))
}

/// A call's arguments as an object (Ollama and Gemini send them whole, as objects).
fn object_of(arguments: &str) -> Value {
    serde_json::from_str(arguments)
        .ok()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}))
}

/// Ollama's `/api/chat`: one JSON line per chunk, `done_reason` on the last.
fn ollama(reply: &Reply) -> (Value, String) {
    let stop = if reply.stop == "length" {
        "length"
    } else {
        "stop"
    };
    let mut lines = Vec::new();
    let line = |message: Value| json!({"model": "m", "message": message, "done": false});
    let mut message =
        json!({"role": "assistant", "content": reply.text.clone().unwrap_or_default()});
    if let Some(r) = &reply.reasoning {
        message["thinking"] = json!(r);
        for p in pieces(r, &reply.cuts) {
            lines.push(line(
                json!({"role": "assistant", "content": "", "thinking": p}),
            ));
        }
    }
    if let Some(t) = &reply.text {
        for p in pieces(t, &reply.cuts) {
            lines.push(line(json!({"role": "assistant", "content": p})));
        }
    }
    if !reply.calls.is_empty() {
        let calls: Vec<Value> = reply
            .calls
            .iter()
            .map(|c| json!({"function": {"name": c.name, "arguments": object_of(&c.arguments)}}))
            .collect();
        lines.push(line(
            json!({"role": "assistant", "content": "", "tool_calls": calls}),
        ));
        message["tool_calls"] = Value::Array(calls);
    }
    lines.push(
        json!({"model": "m", "message": {"role": "assistant", "content": ""},
                      "done": true, "done_reason": stop}),
    );
    let whole = json!({"model": "m", "message": message, "done": true, "done_reason": stop});
    (whole, lines.iter().map(|l| format!("{l}\n")).collect())
}

/// Gemini's `streamGenerateContent?alt=sse`: each chunk a response with the new parts.
fn gemini(reply: &Reply) -> (Value, String) {
    let stop = if reply.stop == "length" {
        "MAX_TOKENS"
    } else {
        "STOP"
    };
    let mut chunks = Vec::new();
    let chunk = |parts: Vec<Value>, finish: Option<&str>| {
        let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
        if let Some(f) = finish {
            candidate["finishReason"] = json!(f);
        }
        json!({"candidates": [candidate]})
    };
    let mut parts = Vec::new();
    if let Some(r) = &reply.reasoning {
        parts.push(json!({"text": r, "thought": true}));
        for p in pieces(r, &reply.cuts) {
            chunks.push(chunk(vec![json!({"text": p, "thought": true})], None));
        }
    }
    if let Some(t) = &reply.text {
        parts.push(json!({"text": t}));
        for p in pieces(t, &reply.cuts) {
            chunks.push(chunk(vec![json!({"text": p})], None));
        }
    }
    for c in &reply.calls {
        let part = json!({"functionCall": {"name": c.name, "args": object_of(&c.arguments)}});
        parts.push(part.clone());
        chunks.push(chunk(vec![part], None));
    }
    chunks.push(chunk(Vec::new(), Some(stop)));
    let mut whole = chunk(parts, Some(stop));
    whole["modelVersion"] = json!("gemini");
    let events: String = chunks
        .iter()
        .map(|c| format!("data: {c}\r\n\r\n"))
        .collect();
    (whole, events)
}

/// OpenAI's Responses API: output items (reasoning, a message, function calls) and their
/// stream of events, `response.incomplete` when the output was cut.
fn responses(reply: &Reply) -> (Value, String) {
    let mut output = Vec::new();
    let mut events = vec![
        json!({"type": "response.created", "response": {"id": "r", "object": "response", "status": "in_progress", "output": []}}),
    ];
    if let Some(r) = &reply.reasoning {
        let i = output.len();
        events.push(
            json!({"type": "response.output_item.added", "output_index": i,
                           "item": {"type": "reasoning", "id": "rs", "summary": []}}),
        );
        for p in pieces(r, &reply.cuts) {
            events.push(
                json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs",
                               "output_index": i, "summary_index": 0, "delta": p}),
            );
        }
        output.push(json!({"type": "reasoning", "id": "rs",
                           "summary": [{"type": "summary_text", "text": r}]}));
    }
    if let Some(t) = &reply.text {
        let i = output.len();
        events.push(json!({"type": "response.output_item.added", "output_index": i,
                           "item": {"type": "message", "id": "msg", "role": "assistant", "content": []}}));
        for p in pieces(t, &reply.cuts) {
            events.push(
                json!({"type": "response.output_text.delta", "item_id": "msg",
                               "output_index": i, "content_index": 0, "delta": p}),
            );
        }
        output.push(json!({"type": "message", "id": "msg", "role": "assistant",
                           "content": [{"type": "output_text", "text": t, "annotations": []}]}));
    }
    for (k, c) in reply.calls.iter().enumerate() {
        let i = output.len();
        let call_id = c.id.clone().unwrap_or_else(|| format!("call_{k}"));
        events.push(json!({"type": "response.output_item.added", "output_index": i,
                           "item": {"type": "function_call", "id": format!("fc{k}"), "call_id": call_id,
                                    "name": c.name, "arguments": ""}}));
        for p in pieces(&c.arguments, &reply.cuts) {
            events.push(json!({"type": "response.function_call_arguments.delta",
                               "item_id": format!("fc{k}"), "output_index": i, "delta": p}));
        }
        output.push(
            json!({"type": "function_call", "id": format!("fc{k}"), "call_id": call_id,
                           "name": c.name, "arguments": c.arguments, "status": "completed"}),
        );
    }
    let mut whole =
        json!({"id": "r", "object": "response", "status": "completed", "output": output});
    if reply.stop == "length" {
        whole["status"] = json!("incomplete");
        whole["incomplete_details"] = json!({"reason": "max_output_tokens"});
        events.push(json!({"type": "response.incomplete", "response": whole}));
    } else {
        events.push(json!({"type": "response.completed", "response": whole}));
    }
    let sse: String = events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect();
    (whole, sse)
}

/// The whole response's result, and the stream's (`framing`), compared.
fn same_truth(whole: &Value, sse: &str) -> Result<(), TestCaseError> {
    same_truth_framed(whole, sse, DeltaFraming::Sse)
}

fn same_truth_framed(whole: &Value, sse: &str, framing: DeltaFraming) -> Result<(), TestCaseError> {
    let options = CallOptions::default();
    let expected = calls::extract(&whole.to_string(), &options);
    let mut stream = Stream::new(options);
    let mut deltas = Deltas::new(framing);
    let read = deltas
        .text(sse, &mut stream)
        .and_then(|_| deltas.end(&mut stream));
    prop_assert!(read.is_ok(), "{read:?}");
    stream.finish();
    let got = stream.result().cloned();
    match (&expected, got) {
        (Ok(want), Some(Ok(got))) => prop_assert_eq!(want, &got, "{}\n{}", whole, sse),
        (Err(want), Some(Err(got))) => {
            prop_assert_eq!(want.error.code, got.error.code, "{}\n{}", whole, sse);
            prop_assert_eq!(&want.extracted, &got.extracted, "{}\n{}", whole, sse);
        }
        (want, got) => prop_assert!(false, "whole {want:?}\nstream {got:?}\n{whole}\n{sse}"),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn an_openai_stream_gives_what_its_completion_gives(reply in reply()) {
        let (whole, sse) = openai(&reply);
        same_truth(&whole, &sse)?;
    }

    #[test]
    fn an_anthropic_stream_gives_what_its_message_gives(reply in reply()) {
        let (whole, sse) = anthropic(&reply);
        same_truth(&whole, &sse)?;
    }

    #[test]
    fn an_ollama_stream_gives_what_its_response_gives(reply in reply()) {
        let (whole, lines) = ollama(&reply);
        same_truth_framed(&whole, &lines, DeltaFraming::Jsonl)?;
    }

    #[test]
    fn a_responses_stream_gives_what_its_response_gives(reply in reply()) {
        let (whole, sse) = responses(&reply);
        same_truth(&whole, &sse)?;
    }

    #[test]
    fn a_gemini_stream_gives_what_its_response_gives(reply in reply()) {
        let (whole, sse) = gemini(&reply);
        same_truth(&whole, &sse)?;
    }
}
