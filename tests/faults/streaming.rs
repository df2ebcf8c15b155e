//! A reply read as it streams (`[llm] stop_after_call`).

use super::*;
use crate::signals::interrupt;

// A reply read as it streams (`[llm] stop_after_call`).

/// A test whose model writes `reply` in pieces (`<<PAUSE>>` between them; `<<HANG>>` at the
/// end: then it and a child sleep 120 s), with `stop_after_call` as given, the tool `record`
/// taking a `path`, and a run timeout of 3 s when the test waits for it (`Timeout::Awaited`), else
/// 25 s: a run that should end by itself must not meet its timeout on a loaded machine.
fn streaming(name: &str, reply: &str, stop_after_call: bool) -> (Setup, PathBuf) {
    streaming_until(name, reply, stop_after_call, Timeout::Unmet)
}

/// Whether a `streaming` test waits for the run's timeout.
#[derive(PartialEq)]
enum Timeout {
    Awaited,
    Unmet,
}

fn streaming_until(
    name: &str,
    reply: &str,
    stop_after_call: bool,
    timeout: Timeout,
) -> (Setup, PathBuf) {
    let s = Setup::new(name);
    std::fs::write(s.path("reply.txt"), reply).unwrap();
    let run_timeout = if timeout == Timeout::Awaited { 3 } else { 25 };
    let config = s.config(&[
        &format!("[loop]\ntimeout = {run_timeout}\n"),
        &s.llm(
            "stream",
            &format!("stop_after_call = {stop_after_call}\ntimeout = 28\nretries = 0\n"),
        ),
        &s.tool(
            "record",
            "record",
            true,
            "parameters = [{ name = \"path\", type = \"string\", required = true }]",
        ),
    ]);
    (s, config)
}

/// A folder long enough that the call's arguments pass the stream's 128-byte step (the
/// first `arguments` event, docs/streaming.md) before the pause in [`RECORD_CALL`].
macro_rules! record_dir {
    () => {
        "notes/a-folder-whose-name-is-long-enough-for-the-arguments-to-be-shown-before-the-pause/and-one-more-level-to-be-sure/"
    };
}

const RECORD_CALL: &str = concat!(
    "{\"tool\": \"record\", \"parameters\": {\"path\": \"",
    record_dir!(),
    "to<<PAUSE>>day.txt\"}, \"terminate\": true}"
);

/// The `llm.stream` events: the call being formed, as `calls --stream` shows it; each
/// `arguments` event (what the parameters gained, event format 2 of docs/streaming.md) with
/// the `parameters` so far that it and the ones before it make.
fn formed(s: &Setup) -> Vec<Value> {
    let mut parameters: Vec<Value> = Vec::new();
    s.events_of("llm.stream")
        .into_iter()
        .map(|e| {
            let mut e = e["data"].clone();
            if e["event"] == "arguments" {
                let i = e["index"].as_u64().unwrap() as usize;
                if parameters.len() <= i {
                    parameters.resize(i + 1, json!({}));
                }
                let path = e["path"].as_str().unwrap().to_owned();
                match parameters[i].pointer_mut(&path).unwrap() {
                    Value::String(s) => s.push_str(e["append"].as_str().unwrap()),
                    Value::Object(m) => m.extend(e["members"].as_object().unwrap().clone()),
                    Value::Array(a) => a.extend(e["items"].as_array().unwrap().clone()),
                    other => panic!("{e} does not fit {other}"),
                }
                e["parameters"] = parameters[i].clone();
            }
            e
        })
        .collect()
}

#[test]
fn stop_after_call_stops_the_model_once_its_call_is_read() {
    let reply = format!("Saving it.<<PAUSE>>{RECORD_CALL}<<PAUSE>> And some more text.<<HANG>>");
    let (s, config) = streaming("stream-call-then-text", &reply, true);
    let (out, took) = s.run(&config, "go");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "ran\n");
    assert!(s.exists("tool-ran"));
    // The model would have slept 30 s: it was stopped once the call closed.
    assert!(took < CUT_SHORT, "took {took:?}");
    let response = &s.events_of("llm.response")[0]["data"];
    assert_eq!(response["stopped"], true, "{response}");
    assert_eq!(
        response["reply"],
        format!("Saving it.{}", RECORD_CALL.replace("<<PAUSE>>", ""))
    );
    // The call was shown as it formed: announced, its path growing, then whole.
    let events = formed(&s);
    assert_eq!(events[0]["event"], "call_start", "{events:?}");
    assert_eq!(events[0]["tool"], "record");
    assert!(
        events.iter().any(|e| e["event"] == "arguments"
            && e["parameters"]["path"] == concat!(record_dir!(), "to")
            && e["open"] == "/path"),
        "{events:?}"
    );
    assert!(events.iter().any(|e| e["event"] == "arguments"
        && e["parameters"]["path"] == concat!(record_dir!(), "today.txt")
        && e["open"].is_null()));
    // The model and its child, both stopped; neither lived to write its marker.
    s.assert_nothing_left(2);
    assert!(!s.exists("late-marker"));
}

#[test]
fn stop_after_call_reads_one_call_of_two() {
    let second = "{\"tool\": \"record\", \"parameters\": {\"path\": \"b\"}, \"terminate\": true}";
    let reply = format!("{RECORD_CALL}<<PAUSE>>\n{second}<<HANG>>");
    let (s, config) = streaming("stream-two-calls", &reply, true);
    let (out, took) = s.run(&config, "go");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(took < CUT_SHORT, "took {took:?}");
    let calls = s.events_of("tool.call");
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0]["data"]["parameters"]["path"],
        concat!(record_dir!(), "today.txt")
    );
    // The second call was never read.
    assert!(
        formed(&s).iter().all(|e| e["index"] == 0),
        "{:?}",
        formed(&s)
    );
    s.assert_nothing_left(2);
}

#[test]
fn stop_after_call_ends_the_reply_at_its_first_call_when_one_piece_holds_more() {
    // The first call and the start of a second come in one piece: the reply is cut at the
    // end of the first call's JSON, and only that call runs.
    let first = RECORD_CALL.replace("<<PAUSE>>", "");
    let reply = format!("{first}\n{{\"tool\": \"record\", \"parame<<HANG>>");
    let (s, config) = streaming("stream-two-in-one-piece", &reply, true);
    let (out, took) = s.run(&config, "go");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(took < CUT_SHORT, "took {took:?}");
    let response = &s.events_of("llm.response")[0]["data"];
    assert_eq!(response["stopped"], true, "{response}");
    assert_eq!(response["reply"], first);
    assert_eq!(s.events_of("tool.call").len(), 1);
    s.assert_nothing_left(2);
}

#[test]
fn without_stop_after_call_the_reply_is_read_to_its_end() {
    // The same reply as above, the key left out (false by default): the model is waited for,
    // and its call timeout (here the run's, 3 s) ends it.
    let reply = format!("Saving it.<<PAUSE>>{RECORD_CALL}<<HANG>>");
    let (s, config) = streaming_until("stream-no-stop", &reply, false, Timeout::Awaited);
    let (out, took) = s.run(&config, "go");
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert!(took >= Duration::from_secs(3), "took {took:?}");
    assert!(!s.exists("tool-ran"));
    // The call was still shown as it formed.
    assert!(formed(&s).iter().any(|e| e["event"] == "call_start"));
    s.assert_nothing_left(2);
}

#[test]
fn a_cut_off_call_never_stops_the_model_and_the_run_timeout_holds() {
    let reply = "Saving it.<<PAUSE>>{\"tool\": \"record\", \"parameters\": {\"path\": \"no<<PAUSE>>tes<<HANG>>";
    let (s, config) = streaming_until("stream-cut-call", reply, true, Timeout::Awaited);
    let (out, took) = s.run(&config, "go");
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert!(took < CUT_SHORT, "took {took:?}");
    assert_eq!(s.finished()["status"], "timeout");
    assert!(!s.exists("tool-ran"));
    let events = formed(&s);
    assert!(events.iter().any(|e| e["event"] == "call_start"));
    assert!(
        events
            .iter()
            .filter(|e| e["event"] == "arguments")
            .all(|e| e["open"] == "/path"),
        "{events:?}"
    );
    s.assert_nothing_left(2);
}

#[test]
fn a_key_written_again_is_revised_as_the_call_forms() {
    // `path` shown closed, then written again: the transcript's `llm.stream` says so
    // (`revised`) before the call runs with the last value, as `calls` reads it. (A call the
    // stream stopped reading never stops the model: it is read to its end.)
    // The note is long enough for the arguments to pass the stream's 128-byte step before
    // the pause.
    let reply = "{\"tool\": \"record\", \"parameters\": {\"path\": \"a.txt\", \"note\": \"a note long enough to be shown while it is written, which takes a hundred and twenty-eight bytes of the arguments or so, fi<<PAUSE>>rst\", \"path\": \"b.txt\"}, \"terminate\": true}";
    let s = Setup::new("stream-revised");
    std::fs::write(s.path("reply.txt"), reply).unwrap();
    let config = s.config(&[
        "[loop]\ntimeout = 25\n",
        &s.llm("stream", "timeout = 20\nretries = 0\n"),
        &s.tool(
            "record",
            "record",
            true,
            "parameters = [{ name = \"path\", type = \"string\", required = true }, { name = \"note\", type = \"string\" }]",
        ),
    ]);
    let (out, took) = s.run(&config, "go");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(took < CUT_SHORT, "took {took:?}");
    let events = formed(&s);
    let shown = events
        .iter()
        .position(|e| {
            e["event"] == "arguments" && e["parameters"]["path"] == "a.txt" && e["open"] == "/note"
        })
        .unwrap_or_else(|| panic!("{events:?}"));
    let revised = events
        .iter()
        .position(|e| e["event"] == "revised")
        .unwrap_or_else(|| panic!("{events:?}"));
    assert!(shown < revised, "{events:?}");
    assert_eq!(events[revised]["path"], "/path", "{events:?}");
    assert_eq!(events[revised]["index"], 0, "{events:?}");
    assert_eq!(events.len(), revised + 1, "nothing shown after: {events:?}");
    let calls = s.events_of("tool.call");
    assert_eq!(calls[0]["data"]["parameters"]["path"], "b.txt");
    s.assert_nothing_left(2);
}

/// The partial `path` the transcript showed of a short call paused after `no`, with `llm`'s
/// extra settings.
fn shown_of_a_short_call(name: &str, llm: &str) -> Vec<Value> {
    let reply = "{\"tool\": \"record\", \"parameters\": {\"path\": \"no<<PAUSE>>tes.txt\"}, \"terminate\": true}";
    let s = Setup::new(name);
    std::fs::write(s.path("reply.txt"), reply).unwrap();
    let config = s.config(&[
        "[loop]\ntimeout = 25\n",
        &s.llm("stream", &format!("timeout = 20\nretries = 0\n{llm}")),
        &s.tool(
            "record",
            "record",
            true,
            "parameters = [{ name = \"path\", type = \"string\", required = true }]",
        ),
    ]);
    let (out, _) = s.run(&config, "go");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        s.events_of("tool.call")[0]["data"]["parameters"]["path"],
        "notes.txt"
    );
    formed(&s)
        .into_iter()
        .filter(|e| e["event"] == "arguments")
        .map(|e| e["parameters"]["path"].clone())
        .collect()
}

#[test]
fn the_arguments_step_is_the_llm_setting() {
    // `[llm] arguments_step = 1`: the call's few bytes of arguments are shown as they come;
    // by default (128 bytes) only once they are whole.
    assert_eq!(
        shown_of_a_short_call("stream-step-1", "arguments_step = 1\n"),
        [json!("no"), json!("notes.txt")]
    );
    assert_eq!(
        shown_of_a_short_call("stream-step-default", ""),
        [json!("notes.txt")]
    );
}

#[test]
fn a_reply_without_a_call_is_read_to_its_end() {
    let (s, config) = streaming("stream-no-call", "The answer<<PAUSE>> is 42.", true);
    let (out, _) = s.run(&config, "go");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "The answer is 42.\n");
    assert!(formed(&s).is_empty());
    let response = &s.events_of("llm.response")[0]["data"];
    assert!(response.get("stopped").is_none(), "{response}");
}

#[test]
fn sigterm_while_a_call_streams_in() {
    let reply = "{\"tool\": \"record\", \"parameters\": {\"path\": \"no<<PAUSE>>tes<<HANG>>";
    let (s, config) = streaming("stream-sigterm", reply, true);
    interrupt(&s, &config, "llm-stream-child", libc::SIGTERM);
    s.assert_nothing_left(2);
    assert!(!s.exists("tool-ran"));
}
