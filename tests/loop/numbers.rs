//! Numbers reach the tool as the model wrote them; calls are not dropped or reduced to one format.

use super::*;

// Numbers lost their value on the way to the tool, and a call the JSON
// parser refused (`1e400`, nesting past 127) turned into text beside a call that then ran.

#[test]
fn the_tool_the_hook_and_the_transcript_get_numbers_as_the_model_wrote_them() {
    let s = Setup::new("exact-numbers");
    let parameters =
        r#"{"text":"n","id":123456789012345678901234567890,"x":1E5,"z":-0,"big":1e400,"p":1.50}"#;
    let reply = format!(r#"{{"tool": "echo", "parameters": {parameters}, "terminate": true}}"#);
    let config = s.config(&[reply], "", &approved_echo("allow"));
    let (out, transcript) = s.run_with_transcript(&config);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let tool = s.log("tool.log");
    assert_eq!(tool.len(), 1);
    assert_eq!(
        tool[0]["stdin"],
        format!("{parameters}\n"),
        "the tool's stdin"
    );
    let hook = std::fs::read_to_string(s.path("hook.log")).unwrap();
    assert!(
        hook.contains(&format!(r#""parameters":{parameters}"#)),
        "the hook's stdin: {hook}"
    );
    let call = transcript
        .lines()
        .find(|l| l.contains(r#""type":"tool.call""#))
        .unwrap();
    assert!(
        call.contains(&format!(r#""parameters":{parameters}"#)),
        "{call}"
    );
}

#[test]
fn a_call_the_old_parser_refused_is_no_longer_dropped_beside_a_safe_one() {
    let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
    for second in [
        r#"{"text": "x", "n": 1e400}"#.to_owned(),
        format!(r#"{{"text": "x", "d": {deep}}}"#),
    ] {
        let s = Setup::new("not-reduced");
        let reply = format!(
            "{}\n{{\"tool\": \"echo\", \"parameters\": {second}, \"terminate\": true}}",
            echo("safe", false)
        );
        let config = s.config(&[reply, "Done.".into()], "", ECHO_TOOL);
        let (out, transcript) = s.run_with_transcript(&config);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert_eq!(stdout(&out), "Done.\n");
        assert!(s.log("tool.log").is_empty(), "no call of the two ran");
        let events = events(&transcript);
        let error = events.iter().find(|e| e["type"] == "parse.error").unwrap();
        assert_eq!(error["data"]["code"], "concatenated", "{error}");
        // One call nested 200 deep on its own runs, its parameters whole.
        let s = Setup::new("deep-call");
        let reply =
            format!("{{\"tool\": \"echo\", \"parameters\": {second}, \"terminate\": true}}");
        let config = s.config(&[reply], "", ECHO_TOOL);
        let out = s.run(&config, &["go"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let tool = s.log("tool.log");
        assert_eq!(tool.len(), 1);
        let sent = tool[0]["stdin"].as_str().unwrap();
        assert_eq!(
            sent,
            format!("{}\n", second.replace(": ", ":").replace(", ", ","))
        );
    }
}

/// A reply that mixes call formats is not reduced to the first format's
/// calls (the other one fell into the text and the first ran alone); the loop sees both, as
/// for any two calls in one reply.
#[test]
fn a_reply_mixing_call_formats_is_not_reduced_to_one_call() {
    let s = Setup::new("mixed-formats");
    let reply = format!(
        "<tool_call>{}</tool_call>\nthen [TOOL_CALLS][{}]",
        echo("one", false),
        echo("two", false)
    );
    let config = s.config(&[reply, "Done.".into()], "", ECHO_TOOL);
    let (out, transcript) = s.run_with_transcript(&config);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "Done.\n");
    assert!(s.log("tool.log").is_empty(), "neither call ran alone");
    let events = events(&transcript);
    let error = events.iter().find(|e| e["type"] == "parse.error").unwrap();
    assert_eq!(error["data"]["code"], "concatenated", "{error}");
}
