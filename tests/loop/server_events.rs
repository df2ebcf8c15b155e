//! An LLM command that prints a server's stream of server-sent events (a `curl -N` to a
//! streaming endpoint): the reply is read as `calls --stream --input sse` reads it.

use super::*;

/// An OpenAI chat-completions stream whose call comes in pieces, its arguments split inside
/// a key, then `[DONE]`.
fn openai_call_events() -> String {
    let chunks = [
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": null}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1",
            "type": "function", "function": {"name": "echo", "arguments": "{\"te"}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0,
            "function": {"arguments": "xt\": \"from the stream\"}"}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    ];
    let mut body = String::from(": OPENROUTER PROCESSING\n\n");
    for chunk in chunks {
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    body
}

/// Text as an OpenAI stream sends it, in pieces, then its stop reason.
fn openai_text_events(pieces: &[&str]) -> String {
    let mut body = String::new();
    for piece in pieces {
        let chunk = json!({"choices": [{"index": 0, "delta": {"content": piece}}]});
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    let stop = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
    body.push_str(&format!("data: {stop}\n\ndata: [DONE]\n\n"));
    body
}

fn events_of(transcript: &str) -> Vec<Value> {
    transcript
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .collect()
}

/// The server's call runs (it was read as the events' text, `data: …` lines and all, and so
/// was no call), the answer streamed as text is the run's answer, the call formed shows in
/// `llm.stream` as it comes, and the conversation keeps the reply as the whole message.
#[test]
fn a_server_event_stream_printed_by_the_llm_command_is_read_as_its_reply() {
    let s = Setup::new("sse-reply");
    let call = openai_call_events();
    let answer = openai_text_events(&["The echo ", "said: from the stream."]);
    let config = s.config(&[call, answer], "system_prompt = \"native\"", ECHO_TOOL);
    let (out, transcript) = s.run_with_transcript(&config);
    assert_eq!(code(&out), 0, "{}\n{transcript}", stderr(&out));
    assert_eq!(stdout(&out), "The echo said: from the stream.\n");
    let tool_log = s.log("tool.log");
    assert_eq!(tool_log.len(), 1, "{transcript}");
    assert_eq!(
        tool_log[0]["stdin"], "{\"text\":\"from the stream\"}\n",
        "{tool_log:?}"
    );
    let events = events_of(&transcript);
    assert!(
        events.iter().any(|e| e["type"] == "llm.stream"
            && e["data"]["event"] == "call_start"
            && e["data"]["tool"] == "echo"),
        "{transcript}"
    );
    assert!(
        !events.iter().any(|e| e["type"] == "parse.error"),
        "{transcript}"
    );
    // The second request holds the first reply as the whole message the events make (as a
    // command printing the whole response gives it, not the events), and the tool's result
    // with its id.
    let messages = s.messages(1);
    let assistant = messages.iter().find(|m| m["role"] == "assistant").unwrap();
    let message: Value = serde_json::from_str(assistant["content"].as_str().unwrap()).unwrap();
    assert_eq!(
        message,
        json!({"role": "assistant", "content": "", "tool_calls": [{"id": "call_1",
            "type": "function", "function": {"name": "echo",
            "arguments": "{\"text\": \"from the stream\"}"}}]})
    );
    let tool = messages.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(tool["tool_call_id"], "call_1", "{messages:?}");
    // A reply of text alone is kept as its text.
    let replies: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "llm.response")
        .map(|e| &e["data"]["reply"])
        .collect();
    assert_eq!(
        replies[1], "The echo said: from the stream.",
        "{transcript}"
    );
}

/// Anthropic's events carry a `tool_use` block whose input comes as JSON pieces.
#[test]
fn an_anthropic_event_stream_gives_its_tool_use() {
    let s = Setup::new("sse-anthropic");
    let events = [
        (
            "message_start",
            json!({"type": "message_start", "message": {"role": "assistant", "content": []}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block":
                {"type": "tool_use", "id": "toolu_1", "name": "echo", "input": {}}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta":
                {"type": "input_json_delta", "partial_json": "{\"text\": \"hi\"}"}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ];
    let body: String = events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect();
    let config = s.config(
        &[body, "Done.".into()],
        "system_prompt = \"native\"",
        ECHO_TOOL,
    );
    let out = s.run(&config, &["go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "Done.\n");
    let tool_log = s.log("tool.log");
    assert_eq!(tool_log.len(), 1);
    assert_eq!(tool_log[0]["stdin"], "{\"text\":\"hi\"}\n");
}

/// A server that fails mid-stream says so in an event (`data: {"error": …}`): the LLM call
/// failed and is retried, as a command that printed the error body whole; the model is not
/// asked to correct a reply it never wrote.
#[test]
fn an_error_in_the_event_stream_is_a_failed_llm_call() {
    let s = Setup::new("sse-error");
    let failed = format!(
        "{}data: {}\n\n",
        openai_text_events(&["Partial "]).replace("data: [DONE]\n\n", ""),
        json!({"error": {"message": "upstream overloaded", "code": 503}})
    );
    let config = s.config(
        &[failed, openai_text_events(&["Recovered."])],
        "retries = 2\nretry_delay = 0.01",
        ECHO_TOOL,
    );
    let (out, transcript) = s.run_with_transcript(&config);
    assert_eq!(code(&out), 0, "{}\n{transcript}", stderr(&out));
    assert_eq!(stdout(&out), "Recovered.\n");
    let events = events_of(&transcript);
    let failed: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "llm.response" && e["data"]["ok"] == false)
        .collect();
    assert_eq!(failed.len(), 1, "{transcript}");
    let error = failed[0]["data"]["error"].as_str().unwrap();
    assert!(error.contains("upstream overloaded"), "{error}");
    assert_eq!(s.messages(1), s.messages(0), "the same request again");
}

/// Prose that opens like a field (`data: …` with no JSON after it) is the model's text.
#[test]
fn prose_that_starts_with_data_is_still_text() {
    let s = Setup::new("sse-prose");
    let answer = "data: the file holds 3 rows.\nevent: none";
    let config = s.config(&[answer.into()], "", ECHO_TOOL);
    let out = s.run(&config, &["go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("{answer}\n"));
}
