//! Signals to toolmend while a tool, the model, a reply, the hook or a backoff runs.

use super::*;

// Signals.

/// Sends `signal` to toolmend, started by this test.
fn send(child: &Child, signal: i32) {
    // SAFETY: sends a signal to the child we spawned.
    unsafe {
        libc::kill(child.id() as libc::pid_t, signal);
    }
}

/// Sends `signal` to toolmend and waits for it to end: its output, and how long it took after
/// the signal.
fn signal_and_finish(child: Child, signal: i32) -> (Output, Duration) {
    send(&child, signal);
    let sent = Instant::now();
    let out = finish(child);
    (out, sent.elapsed())
}

/// Starts toolmend, waits for `ready` (a pid file name part), sends `signal`, and checks:
/// exit 130 (well before the hang it interrupted would have ended), status `interrupted`.
pub(crate) fn interrupt(s: &Setup, config: &Path, ready: &str, signal: i32) {
    let child = s.command(config, "go").spawn().unwrap();
    s.wait_for_pid(ready);
    let (out, took) = signal_and_finish(child, signal);
    assert_eq!(code(&out), 130, "{:?} {}", out.status, stderr(&out));
    assert!(took < CUT_SHORT, "exit {took:?} after the signal");
    assert!(
        stderr(&out).contains(&format!("interrupted by signal {signal}")),
        "{}",
        stderr(&out)
    );
    assert_eq!(stdout(&out), "");
    assert_eq!(s.finished()["status"], "interrupted");
    eprintln!("exit {:.3} s after signal {signal}", secs(took));
}

fn interrupt_a_tool(signal: i32) {
    let s = Setup::new(&format!("signal-tool-{signal}"));
    let config = s.config(&[
        &s.scripted_llm(&[call("slow", false), "never".into()]),
        &s.tool("slow", "sleep", true, ""),
    ]);
    interrupt(&s, &config, "tool-sleep-child", signal);
    // The tool and its child; the child would write its marker 1.5 s after it started.
    s.assert_nothing_left(2);
    s.assert_no_late_marker(Duration::from_millis(1700));
    assert_eq!(
        s.events_of("llm.request").len(),
        1,
        "the model was called again"
    );
}

fn interrupt_the_model(signal: i32) {
    let s = Setup::new(&format!("signal-llm-{signal}"));
    let config = s.config(&[&s.llm("hang", "")]);
    interrupt(&s, &config, "llm-hang-child", signal);
    s.assert_nothing_left(2);
    assert_eq!(s.calls("llm").len(), 1, "the model was retried");
}

#[test]
fn sigint_while_a_tool_runs() {
    interrupt_a_tool(libc::SIGINT);
}

#[test]
fn sigterm_while_a_tool_runs() {
    interrupt_a_tool(libc::SIGTERM);
}

#[test]
fn sighup_while_a_tool_runs() {
    interrupt_a_tool(libc::SIGHUP);
}

#[test]
fn sigint_while_the_model_runs() {
    interrupt_the_model(libc::SIGINT);
}

#[test]
fn sigterm_while_the_model_runs() {
    interrupt_the_model(libc::SIGTERM);
}

#[test]
fn sighup_while_the_model_runs() {
    interrupt_the_model(libc::SIGHUP);
}

/// A stop signal is acted on while a reply is being read (the reply is read off the thread
/// that watches for signals): before, SIGTERM waited for the whole read, minutes on a reply of
/// repeated markers.
#[test]
fn sigterm_while_a_reply_is_read() {
    let s = Setup::new("signal-reading");
    let config = s.config(&[&s.llm("markers", "")]);
    let child = s.command(&config, "go").spawn().unwrap();
    s.wait_for("llm-replied");
    std::thread::sleep(Duration::from_millis(100));
    let (out, took) = signal_and_finish(child, libc::SIGTERM);
    assert_eq!(code(&out), 130, "{:?} {}", out.status, stderr(&out));
    assert!(took < CUT_SHORT, "exit {took:?} after the signal");
    assert_eq!(s.finished()["status"], "interrupted");
    s.assert_nothing_left(1);
}

#[test]
fn sigterm_while_the_hook_decides() {
    let s = Setup::new("signal-hook");
    let config = s.config(&[
        &s.scripted_llm(&[call("guarded", false), "never".into()]),
        &format!(
            "[approval]\ncommand = {}\ntimeout = 30\n",
            s.helper("hook", "hang")
        ),
        &s.tool("guarded", "record", false, ""),
    ]);
    interrupt(&s, &config, "hook-hang", libc::SIGTERM);
    assert!(!s.exists("tool-ran"), "the tool ran");
    s.assert_nothing_left(1);
}

#[test]
fn sigterm_while_a_tool_ignores_sigterm_ends_after_the_grace() {
    let s = Setup::new("signal-stubborn");
    let config = s.config(&[
        &s.scripted_llm(&[call("stubborn", false), "never".into()]),
        &s.tool("stubborn", "ignore-term", true, ""),
    ]);
    let child = s.command(&config, "go").spawn().unwrap();
    s.wait_for("tool-ready");
    let (out, took) = signal_and_finish(child, libc::SIGTERM);
    assert_eq!(code(&out), 130, "{}", stderr(&out));
    assert!(
        took >= Duration::from_millis(900) && took < CUT_SHORT,
        "exit {:.2} s after SIGTERM",
        secs(took)
    );
    eprintln!(
        "exit {:.3} s after SIGTERM (the tool ignores it)",
        secs(took)
    );
    s.assert_nothing_left(1);
}

#[test]
fn sigterm_during_the_backoff_between_retries() {
    let s = Setup::new("signal-backoff");
    let config = s.config(&[&s.llm("crash", "retries = 5\nretry_delay = 120\n")]);
    let child = s.command(&config, "go").spawn().unwrap();
    // The first attempt has failed once its response is in the transcript.
    let start = Instant::now();
    while !std::fs::read_to_string(s.path("run.jsonl"))
        .unwrap_or_default()
        .contains("\"llm.response\"")
    {
        assert!(start.elapsed() < GUARD, "the model never ran");
        std::thread::sleep(Duration::from_millis(10));
    }
    let (out, took) = signal_and_finish(child, libc::SIGTERM);
    assert_eq!(code(&out), 130, "{}", stderr(&out));
    assert!(took < CUT_SHORT, "{took:?}");
    assert_eq!(s.calls("llm").len(), 1);
    s.assert_nothing_left(1);
}

#[test]
fn an_ignored_sighup_stays_ignored() {
    use std::os::unix::process::CommandExt;
    let s = Setup::new("signal-ignored");
    let config = s.config(&[&s.llm("wait-go", "")]);
    let mut command = s.command(&config, "go");
    // SAFETY: only sets a signal disposition between fork and exec (async-signal-safe).
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            Ok(())
        });
    }
    let child = command.spawn().unwrap();
    s.wait_for_pid("llm-wait-go");
    send(&child, libc::SIGHUP);
    // Had the SIGHUP been caught, toolmend would stop the model within milliseconds; give it
    // time to do so before the model is let go.
    std::thread::sleep(Duration::from_millis(300));
    std::fs::File::create(s.path("go"))
        .unwrap()
        .write_all(b"")
        .unwrap();
    let out = finish(child);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "Released.\n");
    s.assert_nothing_left(1);
}
