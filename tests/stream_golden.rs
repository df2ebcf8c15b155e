//! The bytes of every kind of `calls --stream` event, pinned. The other stream tests compare
//! the stream with `calls` on the whole reply, and the writer with the events serialized, so an
//! encoding that changed on both sides at once (a field renamed, reordered or dropped, a number
//! or an escape written another way) would pass them; these lines would not. Each case feeds
//! its reply a character at a time (`--input jsonl`, one JSON string per delta) with an
//! `arguments` event at every byte, so that every event a stream gives shows up once.

mod common;
use common::TempDir;

/// `calls --stream --input jsonl --arguments-step 1 ARGS` on `reply` fed a character at a
/// time: what it wrote, and its exit code.
fn per_character(args: &[&str], reply: &str) -> (String, i32) {
    let mut input = String::new();
    for c in reply.chars() {
        input.push_str(&serde_json::to_string(&c.to_string()).unwrap());
        input.push('\n');
    }
    let out = common::toolmend()
        .args([
            "calls",
            "--stream",
            "--input",
            "jsonl",
            "--arguments-step",
            "1",
        ])
        .args(args)
        .write_stdin(input)
        .output()
        .unwrap();
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8(out.stdout).unwrap(),
        out.status.code().unwrap(),
    )
}

/// Asserts the lines written are `expected`, naming the first line that differs.
fn pinned((written, code): (String, i32), expected: &str, expected_code: i32) {
    for (n, (a, b)) in written.lines().zip(expected.lines()).enumerate() {
        assert_eq!(a, b, "line {} differs", n + 1);
    }
    assert_eq!(written, expected, "the lines differ in number");
    assert_eq!(code, expected_code);
}

#[test]
fn text_call_start_arguments_of_each_kind_call_end_and_end() {
    // `members`, `items` and `append`, escapes and non-ASCII in text and values, a number
    // written as the model wrote it.
    let reply = r#"Said "hi"é <tool_call>{"name":"f","arguments":{"q":[1,-2.5e3,{"k":"v\n"}],"s":"a\u00e9"}}</tool_call>"#;
    let expected = r#"{"event":"text","delta":"S"}
{"event":"text","delta":"a"}
{"event":"text","delta":"i"}
{"event":"text","delta":"d"}
{"event":"text","delta":" \""}
{"event":"text","delta":"h"}
{"event":"text","delta":"i"}
{"event":"text","delta":"\""}
{"event":"text","delta":"é"}
{"event":"call_start","index":0,"tool":"f"}
{"event":"arguments","index":0,"path":"","members":{},"open":""}
{"event":"arguments","index":0,"path":"","members":{"q":[]},"open":"/q"}
{"event":"arguments","index":0,"path":"/q","items":[1],"open":"/q"}
{"event":"arguments","index":0,"path":"/q","items":[-2.5e3,{}],"open":"/q/2"}
{"event":"arguments","index":0,"path":"/q/2","members":{"k":"v"},"open":"/q/2/k"}
{"event":"arguments","index":0,"path":"/q/2/k","append":"\n","open":""}
{"event":"arguments","index":0,"path":"","members":{"s":"a"},"open":"/s"}
{"event":"arguments","index":0,"path":"/s","append":"é","open":null}
{"event":"call_end","index":0,"call":{"tool":"f","parameters":{"q":[1,-2.5e3,{"k":"v\n"}],"s":"aé"},"repairs":[]}}
{"event":"end","ok":true,"value":{"calls":[{"tool":"f","parameters":{"q":[1,-2.5e3,{"k":"v\n"}],"s":"aé"},"repairs":[]}],"text":"Said \"hi\"é","reasoning":null,"incomplete":[]},"repairs":[]}
"#;
    pinned(per_character(&[], reply), expected, 0);
}

#[test]
fn a_repeated_key_is_revised() {
    let reply = r#"<tool_call>{"name":"f","arguments":{"a":"xy","a":"z"}}</tool_call>"#;
    let expected = r#"{"event":"call_start","index":0,"tool":"f"}
{"event":"arguments","index":0,"path":"","members":{},"open":""}
{"event":"arguments","index":0,"path":"","members":{"a":""},"open":"/a"}
{"event":"arguments","index":0,"path":"/a","append":"x","open":"/a"}
{"event":"arguments","index":0,"path":"/a","append":"y","open":"/a"}
{"event":"revised","index":0,"path":"/a","reason":"the model wrote this key again in the same object: calls keeps its last value"}
{"event":"call_end","index":0,"call":{"tool":"f","parameters":{"a":"z"},"repairs":[{"kind":"duplicate_key","offset":45,"key":"a"}]}}
{"event":"end","ok":true,"value":{"calls":[{"tool":"f","parameters":{"a":"z"},"repairs":[{"kind":"duplicate_key","offset":45,"key":"a"}]}],"text":null,"reasoning":null,"incomplete":[]},"repairs":[]}
"#;
    pinned(per_character(&[], reply), expected, 0);
}

#[test]
fn a_call_inside_reasoning_is_retracted_and_the_text_corrected() {
    let reply = r#"x <tool_call>{"name":"f","arguments":{"a":1}}</tool_call></think>y"#;
    let expected = r#"{"event":"text","delta":"x"}
{"event":"call_start","index":0,"tool":"f"}
{"event":"arguments","index":0,"path":"","members":{},"open":""}
{"event":"arguments","index":0,"path":"","members":{"a":1},"open":null}
{"event":"retracted","index":0,"reason":"it was inside reasoning: a closing marker with no opening one came after it"}
{"event":"corrected","field":"text","value":"y"}
{"event":"reasoning","delta":"x <tool_call>{\"name\":\"f\",\"arguments\":{\"a\":1}}</tool_call>"}
{"event":"end","ok":true,"value":{"calls":[],"text":"y","reasoning":"x <tool_call>{\"name\":\"f\",\"arguments\":{\"a\":1}}</tool_call>","incomplete":[]},"repairs":[]}
"#;
    pinned(per_character(&[], reply), expected, 0);
}

#[test]
fn an_unknown_tool_is_invalid_and_the_end_an_error() {
    let dir = TempDir::new("stream-golden");
    let tools = dir.join("tools.json");
    std::fs::write(&tools, r#"[{"name":"f","parameters":{"type":"object"}}]"#).unwrap();
    let reply = r#"<tool_call>{"name":"g","arguments":{"a":1}}</tool_call>"#;
    let expected = r#"{"event":"call_start","index":0,"tool":"g"}
{"event":"arguments","index":0,"path":"","members":{},"open":""}
{"event":"arguments","index":0,"path":"","members":{"a":1},"open":null}
{"event":"invalid","index":0,"tool":"g","error":{"code":"unknown_tool","message":"unknown tool \"g\" (did you mean \"f\"?) at byte 11"}}
{"event":"end","ok":false,"error":{"code":"unknown_tool","message":"unknown tool \"g\" (did you mean \"f\"?) at byte 11","original":"<tool_call>{\"name\":\"g\",\"arguments\":{\"a\":1}}</tool_call>","offset":11},"value":{"calls":[],"text":null,"reasoning":null,"incomplete":[],"rejected":[{"tool":"g","code":"unknown_tool","message":"unknown tool \"g\" (did you mean \"f\"?) at byte 11"}]}}
"#;
    pinned(
        per_character(&["--tools", tools.to_str().unwrap()], reply),
        expected,
        1,
    );
}

#[test]
fn reasoning_snapshots_the_openai_shape_and_a_call_cut_off() {
    let reply = r#"<think>a\b</think>ok <tool_call>{"name":"f","arguments":{"s":"x"}}</tool_call><tool_call>{"name":"g","arguments":{"t":"#;
    let expected = r#"{"event":"reasoning","delta":"a"}
{"event":"reasoning","delta":"\\"}
{"event":"reasoning","delta":"b"}
{"event":"text","delta":"o"}
{"event":"text","delta":"k"}
{"event":"call_start","index":0,"tool":"f"}
{"event":"arguments","index":0,"path":"","members":{},"open":"","parameters":{}}
{"event":"arguments","index":0,"path":"","members":{"s":""},"open":"/s","parameters":{"s":""}}
{"event":"arguments","index":0,"path":"/s","append":"x","open":"/s","parameters":{"s":"x"}}
{"event":"arguments","index":0,"path":"","members":{},"open":null,"parameters":{"s":"x"}}
{"event":"call_start","index":1,"tool":"g"}
{"event":"arguments","index":1,"path":"","members":{},"open":"","parameters":{}}
{"event":"call_end","index":0,"call":{"name":"f","arguments":"{\"s\":\"x\"}"}}
{"event":"incomplete","index":1,"tool":"g","offset":89,"message":"its JSON ends before it is closed"}
{"event":"end","ok":false,"error":{"code":"incomplete_call","message":"call to \"g\" starting at byte 89 was cut off (its JSON ends before it is closed); it is not healed into a call","original":"<think>a\\b</think>ok <tool_call>{\"name\":\"f\",\"arguments\":{\"s\":\"x\"}}</tool_call><tool_call>{\"name\":\"g\"…","offset":89},"value":{"calls":[{"name":"f","arguments":"{\"s\":\"x\"}"}],"text":"ok","reasoning":"a\\b","incomplete":[{"tool":"g","offset":89,"message":"its JSON ends before it is closed"}],"rejected":[]}}
"#;
    pinned(
        per_character(
            &["--arguments-events", "snapshot", "--shape", "openai"],
            reply,
        ),
        expected,
        1,
    );
}

#[test]
fn a_server_stream_gives_call_ids() {
    let out = common::toolmend()
        .args(["calls", "--stream", "--input", "sse"])
        .pipe_stdin("fixtures/stream/openai_tool_calls.sse")
        .unwrap()
        .output()
        .unwrap();
    let expected = r#"{"event":"call_start","index":0,"tool":"get_weather","id":"chatcmpl-tool-8c21"}
{"event":"arguments","index":0,"path":"","members":{"city":"Oslo","unit":"celsius"},"open":null}
{"event":"call_start","index":1,"tool":"get_time","id":"chatcmpl-tool-8c22"}
{"event":"arguments","index":1,"path":"","members":{"tz":"Europe/Oslo","format":24},"open":null}
{"event":"call_end","index":0,"call":{"tool":"get_weather","parameters":{"city":"Oslo","unit":"celsius"},"id":"chatcmpl-tool-8c21","repairs":[]}}
{"event":"call_end","index":1,"call":{"tool":"get_time","parameters":{"tz":"Europe/Oslo","format":24},"id":"chatcmpl-tool-8c22","repairs":[]}}
{"event":"end","ok":true,"value":{"calls":[{"tool":"get_weather","parameters":{"city":"Oslo","unit":"celsius"},"id":"chatcmpl-tool-8c21","repairs":[]},{"tool":"get_time","parameters":{"tz":"Europe/Oslo","format":24},"id":"chatcmpl-tool-8c22","repairs":[]}],"text":null,"reasoning":null,"incomplete":[]},"repairs":[]}
"#;
    pinned(
        (
            String::from_utf8(out.stdout).unwrap(),
            out.status.code().unwrap(),
        ),
        expected,
        0,
    );
}
