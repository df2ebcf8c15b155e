//! Limits: iterations, the run timeout, a tool past its own timeout.

use super::*;

// 5. Limits.

#[test]
fn max_iterations_stops_with_5_and_a_warning() {
    let s = Setup::new("iterations");
    let replies: Vec<String> = (0..6).map(|i| echo(&i.to_string(), false)).collect();
    let config = s.config(
        &replies,
        "",
        &format!("[loop]\nmax_iterations = 3\n{ECHO_TOOL}"),
    );
    let out = s.run(&config, &["loop forever"]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert_eq!(s.inputs().len(), 3);
    assert_eq!(s.log("tool.log").len(), 3);
    assert!(stderr(&out).contains("warning"), "{}", stderr(&out));
    assert!(stderr(&out).contains("max_iterations"), "{}", stderr(&out));
}

#[test]
fn run_timeout_exits_6_promptly_and_kills_the_tool_group() {
    let s = Setup::new("timeout");
    let marker = s.path("survivor");
    let replies = [call("slow", json!({}), false), "never".into()];
    let config = s.config(
        &replies,
        "",
        &format!("[loop]\ntimeout = 1.5\n{}", background_tool(&marker, "")),
    );
    // Promptly: the tool sleeps 120 s, and a run still going after 30 s is killed (`toolmend()`),
    // which is no exit 6.
    let out = s.run(&config, &["go"]);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert!(stderr(&out).contains("warning"), "{}", stderr(&out));
    assert_no_survivor(&marker);
}

#[test]
fn run_timeout_also_stops_a_hanging_model() {
    let s = Setup::new("timeout-llm");
    // (A run that waited out the model's 120 s would be killed after 30 s: no exit 6.)
    let config = s.config(&["!sleep 120".into()], "", "[loop]\ntimeout = 0.5\n");
    let out = s.run(&config, &["go"]);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
}

#[test]
fn a_tool_past_its_own_timeout_is_killed_and_reported_and_the_loop_goes_on() {
    let s = Setup::new("tool-timeout");
    let marker = s.path("survivor");
    let replies = [call("slow", json!({}), false), "It was too slow.".into()];
    let config = s.config(&replies, "", &background_tool(&marker, "timeout = 0.3\n"));
    // Exit 0 with the answer: the tool's 120 s were not waited out (a run still going after
    // 30 s is killed).
    let out = s.run(&config, &["go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "It was too slow.\n");
    let result: Value =
        serde_json::from_str(s.messages(1)[3]["content"].as_str().unwrap()).unwrap();
    assert_eq!(result["ok"], false);
    assert!(
        result["error"].as_str().unwrap().contains("timed out"),
        "{result}"
    );
    assert_no_survivor(&marker);
}
