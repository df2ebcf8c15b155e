//! The approval hook: a hanging or missing hook fails closed.

use super::*;

// The approval hook.

/// The hook gets 5 s: on a loaded machine Python may need more than 2 s to start, and a hook
/// killed before it starts leaves nothing to check.
fn hook(command: &str) -> String {
    format!("[approval]\ncommand = {command}\ntimeout = 5\n")
}

/// A run whose model calls `guarded` (a tool that needs approval and writes `tool-ran`), with
/// the hook `command`.
fn guarded_run(s: &Setup, command: &str) -> (Output, Duration) {
    let config = s.config(&[
        &s.scripted_llm(&[call("guarded", false), "never".into()]),
        &hook(command),
        &s.tool("guarded", "record", false, ""),
    ]);
    s.run(&config, "go")
}

#[test]
fn a_hanging_hook_fails_closed_at_its_timeout() {
    let s = Setup::new("hook-hang");
    let (out, took) = guarded_run(&s, &s.helper("hook", "hang"));
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    // The hook sleeps 60 s; it is killed at its 2 s timeout.
    assert!(took < CUT_SHORT, "took {took:?}");
    assert!(
        stderr(&out).contains("no answer within"),
        "{}",
        stderr(&out)
    );
    assert!(!s.exists("tool-ran"), "the tool ran");
    assert_eq!(s.finished()["status"], "approval_failed");
    s.assert_nothing_left(1);
}

#[test]
fn a_hook_that_cannot_start_fails_closed() {
    // A hook that is missing at the start is a config error (exit 2, tests/loop/); one whose
    // start fails during the run (here its interpreter is missing) rejects the call.
    let s = Setup::new("hook-missing");
    let hook = s.path("hook.sh");
    std::fs::write(&hook, "#!/nonexistent/toolmend-interpreter\n").unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (out, _) = guarded_run(&s, &format!("[{}]", quoted(&hook.display().to_string())));
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert!(stderr(&out).contains("could not start"), "{}", stderr(&out));
    assert!(!s.exists("tool-ran"), "the tool ran");
    let decided = s.events_of("approval.decided");
    assert_eq!(decided[0]["data"]["decision"], "failed");
    s.assert_nothing_left(0);
}

#[test]
fn a_hook_answer_over_64_kib_fails_closed_even_if_it_starts_with_allow() {
    let s = Setup::new("hook-huge");
    // 8 MiB from Python can take longer than the usual 2 s on a loaded machine, and a
    // timeout would hide what this test is about: the size limit.
    let config = s.config(&[
        &s.scripted_llm(&[call("guarded", false), "never".into()]),
        &hook(&s.helper("hook", "huge-allow")).replace("timeout = 5", "timeout = 10"),
        &s.tool("guarded", "record", false, ""),
    ]);
    let (out, _) = s.run(&config, "go");
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("over the limit of 65536 bytes"),
        "{}",
        stderr(&out)
    );
    assert!(!s.exists("tool-ran"), "the tool ran");
    s.assert_nothing_left(1);
}
