//! Signals: SIGINT and SIGTERM kill the children and exit 130.

use super::*;

// Signals.

fn interrupt(signal: i32) {
    let s = Setup::new(&format!("signal-{signal}"));
    let marker = s.path("survivor");
    let replies = [call("slow", json!({}), false), "never".into()];
    let config = s.config(&replies, "", &background_tool(&marker, ""));
    let transcript = s.path("run.jsonl");
    let start = Instant::now();
    let mut child = common::command()
        .args(["loop", "--config"])
        .arg(&config)
        .arg("--transcript")
        .arg(&transcript)
        .arg("go")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the tool runs.
    while !std::fs::read_to_string(&transcript)
        .unwrap_or_default()
        .contains("tool.call")
    {
        assert!(start.elapsed() < GUARD, "the tool never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: sends a signal to the child we spawned.
    unsafe {
        libc::kill(child.id() as libc::pid_t, signal);
    }
    // Promptly: the tool would sleep 120 s (a guard against waiting it out, not a measure).
    let sent = Instant::now();
    let status = child.wait().unwrap();
    assert!(sent.elapsed() < GUARD, "{:?}", sent.elapsed());
    assert_eq!(status.code(), Some(130));
    let events = events(&std::fs::read_to_string(&transcript).unwrap());
    assert_eq!(events.last().unwrap()["data"]["status"], "interrupted");
    assert_no_survivor(&marker);
}

#[test]
fn sigint_kills_the_children_and_exits_130() {
    interrupt(libc::SIGINT);
}

#[test]
fn sigterm_kills_the_children_and_exits_130() {
    interrupt(libc::SIGTERM);
}
