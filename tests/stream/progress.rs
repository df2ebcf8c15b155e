//! Progress before the end; numbers, literals and keys wait for their end; cut calls; retracted starts; serialization.

use super::*;

#[test]
fn progress_comes_before_the_end() {
    let options = CallOptions::default();
    let reply = "Sure.\n<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"a.txt\", \"size\": 12, \"content\": \"hello world\"}}\n</tool_call>";
    let mut stream = Stream::new(options).with_arguments_step(1);
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
    let mut stream = Stream::new(CallOptions::default()).with_arguments_step(1);
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
    let mut stream = Stream::new(CallOptions::default()).with_arguments_step(1);
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
    let mut stream = Stream::new(CallOptions::default()).with_arguments_step(1);
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
    let mut stream = Stream::new(CallOptions::default()).with_arguments_step(1);
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

/// With the default step, a short call fed a byte at a time gets one `arguments` event, the
/// final one; a long string shows progress, each event at least [`ARGUMENTS_STEP`] bytes of
/// arguments after the one before (the first once that many are read).
#[test]
fn the_default_step_spaces_the_events() {
    let feed = |reply: &str| {
        let mut stream = Stream::new(CallOptions::default());
        let mut events = Vec::new();
        for (at, c) in reply.char_indices() {
            events.extend(stream.feed(&reply[at..at + c.len_utf8()]));
        }
        events.extend(stream.finish());
        rebuilt(&events, 0)
    };
    let short = feed(
        "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"days\": [1, 2]}}</tool_call>",
    );
    assert_eq!(short.len(), 1, "{short:#?}");
    assert_eq!(short[0].0["city"], "Oslo");
    assert_eq!(short[0].1, None);

    let content = "All work and no play makes Jack a dull boy. ".repeat(230);
    let prefix = r#"{"path": "a.txt", "content": ""#;
    let long = feed(&format!(
        "<tool_call>{{\"name\": \"write_file\", \"arguments\": {prefix}{content}\"}}}}</tool_call>"
    ));
    let shown: Vec<usize> = long
        .iter()
        .map(|(p, _)| p.get("content").and_then(Value::as_str).map_or(0, str::len))
        .collect();
    assert!(shown.len() >= 10, "progress shown: {shown:?}");
    assert!(prefix.len() + shown[0] >= ARGUMENTS_STEP, "{shown:?}");
    for pair in shown[..shown.len() - 1].windows(2) {
        assert!(pair[1] - pair[0] >= ARGUMENTS_STEP, "{shown:?}");
    }
    assert_eq!(long.last().unwrap().0["content"], content.as_str());
}
