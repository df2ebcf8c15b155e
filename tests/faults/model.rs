//! The LLM command: slow replies, SIGTERM ignored, killed by a signal, stdin closed early.

use super::*;

// The LLM command.

#[test]
fn a_hanging_model_is_stopped_by_the_run_timeout_with_6() {
    let s = Setup::new("llm-hang");
    // 5 s: on a machine loaded by other builds the model (Python) needed more than 2 s to start
    // and record its pid.
    let config = s.config(&["[loop]\ntimeout = 5\n", &s.llm("hang", "")]);
    let (out, took) = s.run(&config, "go");
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    // The model sleeps 60 s; the run ends at its 2 s timeout.
    assert!(took < CUT_SHORT, "took {took:?}");
    assert!(stderr(&out).contains("warning"), "{}", stderr(&out));
    assert_eq!(s.finished()["status"], "timeout");
    // The model and the child it forked.
    s.assert_nothing_left(2);
}

/// The time to read a reply counts against the run's timeout: a reply of 2 MiB of cut-off
/// calls (malformed, so the model is asked again and again) ends the run at its deadline. Reading
/// such a reply was quadratic and held the run for minutes.
#[test]
fn a_reply_that_is_slow_to_read_does_not_hold_the_run_past_its_timeout() {
    let s = Setup::new("llm-markers");
    let config = s.config(&[
        "[loop]\ntimeout = 5\nmax_parse_retries = 1000\n",
        &s.llm("markers", ""),
    ]);
    let (out, took) = s.run(&config, "go");
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert!(took < CUT_SHORT, "took {took:?}");
    assert_eq!(s.finished()["status"], "timeout");
    s.assert_nothing_left(1);
}

#[test]
fn a_model_past_its_call_timeout_is_a_failed_call_retried_then_8() {
    let s = Setup::new("llm-call-timeout");
    let config = s.config(&[&s.llm("hang", "timeout = 0.3\nretries = 1\nretry_delay = 0.05\n")]);
    let (out, took) = s.run(&config, "go");
    assert_eq!(code(&out), 8, "{}", stderr(&out));
    assert!(took < CUT_SHORT, "took {took:?}");
    // (Counted in the transcript: a slow start may not get the model as far as its log.)
    assert_eq!(s.events_of("llm.request").len(), 2);
    let responses = s.events_of("llm.response");
    assert_eq!(responses.len(), 2);
    for response in &responses {
        let error = response["data"]["error"].as_str().unwrap();
        assert!(error.contains("no reply within its timeout"), "{error}");
    }
    s.assert_nothing_left(0);
}

#[test]
fn a_model_that_ignores_sigterm_gets_sigkill_after_the_grace() {
    let s = Setup::new("llm-refuse-term");
    let config = s.config(&["[loop]\ntimeout = 3\n", &s.llm("refuse-term", "")]);
    let (out, took) = s.run(&config, "go");
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    // SIGTERM came first (the model saw it), SIGKILL a second later.
    assert!(s.exists("llm-got-term"));
    // (3 s of timeout: time for Python to start and catch SIGTERM on a loaded machine.)
    assert!(took >= Duration::from_millis(4000), "took {took:?}");
    assert!(took < CUT_SHORT, "took {took:?}");
    s.assert_nothing_left(1);
}

#[test]
fn a_crashing_model_is_retried_with_backoff_then_8() {
    let s = Setup::new("llm-crash");
    let config = s.config(&[&s.llm(
        "crash",
        "retries = 2\nretry_delay = 0.2\nmax_retry_delay = 5\n",
    )]);
    let (out, _) = s.run(&config, "go");
    assert_eq!(code(&out), 8, "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    let err = stderr(&out);
    assert!(err.contains("failed 3 times"), "{err}");
    assert!(err.contains("exit status 1"), "{err}");
    assert!(err.contains("the model server is down"), "{err}");
    // Three attempts, the second 0.2 s after the first, the third 0.4 s after the second.
    let times = s.calls("llm");
    assert_eq!(times.len(), 3, "{times:?}");
    assert!(times[1] - times[0] >= 0.2, "{times:?}");
    assert!(times[2] - times[1] >= 0.4, "{times:?}");
    let responses = s.events_of("llm.response");
    assert_eq!(responses.len(), 3);
    assert!(responses.iter().all(|r| r["data"]["ok"] == false));
    assert_eq!(s.finished()["status"], "llm_failed");
    assert_eq!(s.finished()["iterations"], 3);
    s.assert_nothing_left(3);
}

#[test]
fn a_model_killed_by_a_signal_is_a_failed_call() {
    let s = Setup::new("llm-segfault");
    let config = s.config(&[&s.llm("segfault", "retries = 1\nretry_delay = 0.01\n")]);
    let (out, _) = s.run(&config, "go");
    assert_eq!(code(&out), 8, "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("killed by signal {}", libc::SIGSEGV)),
        "{}",
        stderr(&out)
    );
    assert_eq!(s.calls("llm").len(), 2);
    s.assert_nothing_left(2);
}

#[test]
fn an_empty_reply_is_malformed_and_asked_again_then_7() {
    let s = Setup::new("llm-empty");
    let config = s.config(&["[loop]\nmax_parse_retries = 2\n", &s.llm("empty", "")]);
    let (out, _) = s.run(&config, "go");
    assert_eq!(code(&out), 7, "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    assert_eq!(s.calls("llm").len(), 2);
    let errors = s.events_of("parse.error");
    assert_eq!(errors.len(), 2);
    assert_eq!(errors[0]["data"]["code"], "empty_input");
    assert!(
        errors[0]["data"]["message"]
            .as_str()
            .unwrap()
            .contains("empty"),
        "{errors:?}"
    );
    assert_eq!(s.finished()["status"], "malformed");
    s.assert_nothing_left(2);
}

#[test]
fn a_100_mib_reply_is_refused_as_a_failed_call() {
    let s = Setup::new("llm-huge");
    let config = s.config(&[&s.llm("huge", "retries = 1\nretry_delay = 0.01\n")]);
    let (out, took) = s.run(&config, "go");
    assert_eq!(code(&out), 8, "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    assert!(
        stderr(&out).contains("104857600 bytes is over the limit of 16777216 bytes"),
        "{}",
        stderr(&out)
    );
    assert_eq!(s.calls("llm").len(), 2);
    // Refused replies are not copied into the transcript.
    let transcript = std::fs::metadata(s.path("run.jsonl")).unwrap().len();
    assert!(transcript < 1 << 20, "transcript of {transcript} bytes");
    assert!(took < CUT_SHORT, "took {took:?}");
    s.assert_nothing_left(2);
}

/// A prompt far larger than a pipe's buffer, so that toolmend is still writing when the model
/// closes its stdin.
fn big_prompt() -> String {
    "Summarize this. ".repeat(64 * 1024)
}

#[test]
fn a_model_that_closes_its_stdin_early_still_gives_its_reply() {
    let s = Setup::new("llm-close-stdin");
    let config = s.config(&[&s.llm("close-stdin", "")]);
    let out = s.run_stdin(&config, &big_prompt());
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "Closed early.\n");
    assert_eq!(s.finished()["status"], "answered");
    s.assert_nothing_left(1);
}

#[test]
fn a_model_that_closes_its_stdin_and_fails_is_a_failed_call_not_a_sigpipe() {
    let s = Setup::new("llm-close-stdin-fail");
    let config = s.config(&[&s.llm("close-stdin-fail", "retries = 1\nretry_delay = 0.01\n")]);
    let out = s.run_stdin(&config, &big_prompt());
    // An exit status, not death by SIGPIPE.
    assert_eq!(code(&out), 8, "{:?} {}", out.status, stderr(&out));
    assert!(stderr(&out).contains("gave up"), "{}", stderr(&out));
    assert_eq!(s.calls("llm").len(), 2);
    s.assert_nothing_left(2);
}
