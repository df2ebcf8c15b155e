//! Tools: flooding output is bounded, timeouts and process groups, SIGTERM first.

use super::*;

// Tools.

/// The tool result the model got in its second call (the `tool` message).
fn tool_result(s: &Setup) -> Value {
    let input: Value =
        serde_json::from_str(&std::fs::read_to_string(s.path("inputs/input-1.txt")).unwrap())
            .unwrap();
    let messages = input["messages"].as_array().unwrap();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "tool", "{last}");
    serde_json::from_str(last["content"].as_str().unwrap()).unwrap()
}

#[test]
fn a_tool_flooding_stdout_and_stderr_is_bounded_and_does_not_deadlock() {
    let s = Setup::new("tool-flood");
    let config = s.config(&[
        "[loop]\nmax_output = 1000\n",
        &s.scripted_llm(&[call("flood", false), "Flooded.".into()]),
        &s.tool("flood", "flood", true, "timeout = 20"),
    ]);
    let (out, took) = s.run(&config, "go");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "Flooded.\n");
    assert!(took < CUT_SHORT, "took {took:?}");
    let result = tool_result(&s);
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(result["stdout"].as_str().unwrap().len(), 1000);
    assert_eq!(result["stderr"].as_str().unwrap().len(), 1000);
    let note = "only the first 1000 of 20971520 bytes are shown";
    assert_eq!(result["stdout_truncated"], note);
    assert_eq!(result["stderr_truncated"], note);
    s.assert_nothing_left(1);
}

#[test]
fn a_tool_that_floods_forever_is_killed_at_its_timeout() {
    let s = Setup::new("tool-flood-forever");
    let config = s.config(&[
        "[loop]\nmax_output = 1000\n",
        &s.scripted_llm(&[call("flood", false), "Stopped.".into()]),
        // 2 s, so that a loaded machine still starts it and it records its pid.
        &s.tool("flood", "flood-forever", true, "timeout = 5"),
    ]);
    let (out, took) = s.run(&config, "go");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(took < CUT_SHORT, "took {took:?}");
    let result = tool_result(&s);
    assert_eq!(result["ok"], false);
    assert!(
        result["error"].as_str().unwrap().contains("timed out"),
        "{result}"
    );
    assert_eq!(result["stdout"].as_str().unwrap().len(), 1000);
    assert!(result["stdout_truncated"].is_string(), "{result}");
    s.assert_nothing_left(1);
}

#[test]
fn a_child_that_outlives_its_tool_is_killed_with_the_group() {
    let s = Setup::new("tool-orphan");
    let config = s.config(&[
        &s.scripted_llm(&[call("orphan", false), "Done.".into()]),
        &s.tool("orphan", "orphan", true, ""),
    ]);
    let (out, took) = s.run(&config, "go");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "Done.\n");
    // The tool's own exit did not wait for the child's 1 s.
    assert!(took < CUT_SHORT, "took {took:?}");
    assert_eq!(tool_result(&s)["stdout"], "left a child behind\n");
    assert!(s.exists("child-ready"), "the child never started");
    // The tool and its child are both gone: the child never writes its marker (due 1 s after
    // it started).
    s.assert_nothing_left(2);
    s.assert_no_late_marker(Duration::from_millis(1200));
}

#[test]
fn a_tool_that_ignores_sigterm_is_killed_after_the_grace() {
    let s = Setup::new("tool-ignore-term");
    let config = s.config(&[
        &s.scripted_llm(&[call("stubborn", false), "Gave up on it.".into()]),
        // 3 s: on a loaded machine Python may need more than 1 s to start and ignore SIGTERM.
        &s.tool("stubborn", "ignore-term", true, "timeout = 3"),
    ]);
    let (out, took) = s.run(&config, "go");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "Gave up on it.\n");
    let result = tool_result(&s);
    assert_eq!(result["ok"], false);
    assert!(
        result["error"].as_str().unwrap().contains("timed out"),
        "{result}"
    );
    // 3 s of timeout, then 1 s of grace before SIGKILL: it ended by the signal, not by itself.
    let elapsed = s.events_of("tool.result")[0]["data"]["elapsed_ms"]
        .as_u64()
        .unwrap();
    assert!(elapsed >= 4000, "{elapsed} ms");
    assert!(elapsed < CUT_SHORT.as_millis() as u64, "{elapsed} ms");
    assert_eq!(result["exit_code"], Value::Null, "{result}");
    assert!(took < CUT_SHORT, "took {took:?}");
    s.assert_nothing_left(1);
}

#[test]
fn a_tool_gets_sigterm_first_and_may_clean_up() {
    let s = Setup::new("tool-graceful");
    let config = s.config(&[
        &s.scripted_llm(&[call("graceful", false), "Fine.".into()]),
        &s.tool("graceful", "graceful", true, "timeout = 3"),
    ]);
    let (out, _) = s.run(&config, "go");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(s.exists("tool-cleaned-up"), "no SIGTERM reached the tool");
    // Stopped at its timeout, not before. That a tool which leaves on SIGTERM is not waited
    // for until the grace ends is shown without a clock by the unit test
    // `agent::process::tests::sigterm_comes_first_and_sigkill_after_the_grace` (a grace of two
    // minutes there); here a wall-clock bound would only measure the machine's load.
    let elapsed = s.events_of("tool.result")[0]["data"]["elapsed_ms"]
        .as_u64()
        .unwrap();
    assert!(elapsed >= 3000, "{elapsed} ms");
    s.assert_nothing_left(1);
}
