//! Faults in `toolmend loop`, each a test: the real binary against unruly programs
//! (`fixtures/bin/faults_helper.py`): an LLM command that hangs, crashes, prints nothing, prints
//! 100 MiB or closes its stdin early; a tool that floods its output, leaves a child behind or
//! ignores SIGTERM; an approval hook that hangs, is missing or answers at length; and toolmend
//! itself interrupted by SIGINT, SIGTERM or SIGHUP. After every run no process it started may be
//! left: each fake program writes its pid (and those of its children) to a file, and `/proc` is
//! searched for any process whose argv names the test's directory.
//!
//! (Peak memory with a 100 MiB reply is measured in `tests/faults_memory.rs`.)
// These tests signal the processes they start (kill, pre_exec), which takes libc calls.
#![allow(unsafe_code)]

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod common;
use common::{TempDir, bin, code, quoted, stderr, stdout};

/// Longest a test lets toolmend run before it is taken as hung.
const GUARD: Duration = Duration::from_secs(30);
/// The bound on a run that was cut short: the hangs of fixtures/bin/faults_helper.py last 60 s
/// or more, so a run that ends before this one did not wait them out, however loaded the
/// machine. Tighter wall-clock bounds (2-6 s) failed on a machine loaded by other builds; what
/// each test proves beyond "cut short" it shows by what happened (exit codes, `stopped`, marker
/// files, the tool's exit status), not by how fast.
const CUT_SHORT: Duration = Duration::from_secs(30);

fn call(tool: &str, terminate: bool) -> String {
    json!({"tool": tool, "parameters": {}, "terminate": terminate}).to_string()
}

/// A fresh directory for one test: the config, the fake programs' pid files and markers, the
/// transcript.
struct Setup {
    dir: TempDir,
}

impl Setup {
    fn new(name: &str) -> Setup {
        Setup {
            dir: TempDir::new(&format!("faults-{name}")),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn exists(&self, name: &str) -> bool {
        self.path(name).exists()
    }

    /// Waits past the time a killed child would have written `late-marker`, then checks that
    /// it never did (checked at once, the marker could not be there yet either way).
    fn assert_no_late_marker(&self, due: Duration) {
        std::thread::sleep(due);
        assert!(
            !self.exists("late-marker"),
            "a killed child wrote its marker"
        );
    }

    fn dir_str(&self) -> String {
        self.dir.display().to_string()
    }

    /// argv of the helper in `role` and `mode`, as a TOML array.
    fn helper(&self, role: &str, mode: &str) -> String {
        format!(
            "[\"python3\", {}, {}, {}, {}]",
            quoted(&bin("faults_helper.py")),
            quoted(role),
            quoted(mode),
            quoted(&self.dir_str())
        )
    }

    /// `[llm]` running the helper as the model.
    fn llm(&self, mode: &str, extra: &str) -> String {
        format!("[llm]\ncommand = {}\n{extra}\n", self.helper("llm", mode))
    }

    /// `[llm]` running the scripted model, which replays `replies` one per call.
    fn scripted_llm(&self, replies: &[String]) -> String {
        std::fs::write(self.path("replies.txt"), replies.join("\n=====\n")).unwrap();
        format!(
            "[llm]\ncommand = [\"python3\", {}, {}, {}]\n",
            quoted(&bin("scripted_llm.py")),
            quoted(&self.path("replies.txt").display().to_string()),
            quoted(&self.path("inputs").display().to_string()),
        )
    }

    /// A tool `name` running the helper in `mode`.
    fn tool(&self, name: &str, mode: &str, read_only: bool, extra: &str) -> String {
        format!(
            "[[tools]]\nname = {}\ndescription = \"A test tool\"\nread_only = {read_only}\n\
             command = {}\n{extra}\n",
            quoted(name),
            self.helper("tool", mode)
        )
    }

    fn config(&self, sections: &[&str]) -> PathBuf {
        let path = self.path("agent.toml");
        std::fs::write(&path, sections.concat()).unwrap();
        path
    }

    fn command(&self, config: &Path, prompt: &str) -> Command {
        let mut command = common::command();
        command
            .arg("loop")
            .arg("--config")
            .arg(config)
            .arg("--transcript")
            .arg(self.path("run.jsonl"))
            .arg(prompt)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }

    /// Runs toolmend to its end; the output and how long it took.
    fn run(&self, config: &Path, prompt: &str) -> (Output, Duration) {
        let start = Instant::now();
        let child = self.command(config, prompt).spawn().unwrap();
        let out = finish(child);
        (out, start.elapsed())
    }

    /// Runs toolmend with the prompt on its stdin.
    fn run_stdin(&self, config: &Path, prompt: &str) -> Output {
        let mut child = self
            .command(config, "-")
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let prompt = prompt.to_owned();
        let writer = std::thread::spawn(move || stdin.write_all(prompt.as_bytes()));
        let out = finish(child);
        writer.join().unwrap().unwrap();
        out
    }

    /// The events of the transcript.
    fn events(&self) -> Vec<Value> {
        std::fs::read_to_string(self.path("run.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    /// The `run.finished` record (there must be exactly one, and last).
    fn finished(&self) -> Value {
        let events = self.events();
        let finished: Vec<&Value> = events
            .iter()
            .filter(|e| e["type"] == "run.finished")
            .collect();
        assert_eq!(finished.len(), 1, "{events:?}");
        assert_eq!(events.last().unwrap()["type"], "run.finished");
        finished[0]["data"].clone()
    }

    /// The events of one type.
    fn events_of(&self, kind: &str) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|e| e["type"] == kind)
            .collect()
    }

    /// Lines of the helper's calls.log for one role: the time of each call.
    fn calls(&self, role: &str) -> Vec<f64> {
        std::fs::read_to_string(self.path("calls.log"))
            .unwrap_or_default()
            .lines()
            .filter(|line| line.starts_with(&format!("{role} ")))
            .map(|line| line.rsplit(' ').next().unwrap().parse().unwrap())
            .collect()
    }

    /// The pids the helper's processes wrote, with their file names.
    fn pids(&self) -> Vec<(String, i32)> {
        let Ok(entries) = std::fs::read_dir(self.path("pids")) else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.starts_with('.') {
                    return None; // still being written
                }
                let pid = std::fs::read_to_string(e.path()).unwrap();
                Some((name, pid.trim().parse().unwrap()))
            })
            .collect()
    }

    /// Waits until `name` exists (a handshake with a fake program).
    fn wait_for(&self, name: &str) {
        let start = Instant::now();
        while !self.exists(name) {
            assert!(start.elapsed() < GUARD, "{name} never appeared");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits until a pid file whose name contains `part` exists.
    fn wait_for_pid(&self, part: &str) {
        let start = Instant::now();
        while !self.pids().iter().any(|(name, _)| name.contains(part)) {
            assert!(start.elapsed() < GUARD, "no {part} process ever started");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Live processes that `/proc` shows with the test's directory in their argv.
    fn ours(&self) -> Vec<i32> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|entry| entry.file_name().to_string_lossy().parse::<i32>().ok())
            .filter(|&pid| is_ours(pid, &self.dir_str()))
            .collect()
    }

    /// Processes of this test that are still alive, with their command lines: whatever `/proc`
    /// shows with the test's directory in its argv (the recorded pids among them).
    fn survivors(&self) -> Vec<String> {
        self.ours()
            .into_iter()
            .map(|pid| format!("pid {pid}: {}", cmdline(pid).join(" ")))
            .collect()
    }

    /// Asserts that at least `started` of the helper's processes ran and that none of them,
    /// nor any other process of this test, is alive (a process SIGKILLed the moment toolmend
    /// exits gets a moment to be gone).
    fn assert_nothing_left(&self, started: usize) {
        let pids = self.pids();
        assert!(
            pids.len() >= started,
            "expected {started} processes to have run, found {pids:?}"
        );
        let start = Instant::now();
        loop {
            let survivors = self.survivors();
            if survivors.is_empty() {
                return;
            }
            if start.elapsed() > Duration::from_secs(1) {
                // (Drop kills them, so that they do not outlive the test.)
                panic!("left behind: {survivors:?}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        // A failed test must not leave its processes (toolmend too, whose argv names its
        // config here) to go on after it; twice, for a child started meanwhile.
        for _ in 0..2 {
            for pid in self.ours() {
                // SAFETY: sends a signal to a process this test started.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The argv of a process (empty when it is gone or unreadable).
fn cmdline(pid: i32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|bytes| {
            bytes
                .split(|&b| b == 0)
                .filter(|arg| !arg.is_empty())
                .map(|arg| String::from_utf8_lossy(arg).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `pid` is alive (not a zombie) and names `dir` (or a path in it) in its argv, so a
/// reused pid is not taken for ours.
fn is_ours(pid: i32, dir: &str) -> bool {
    if pid == std::process::id() as i32 {
        return false;
    }
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rfind(')')
        .and_then(|at| stat[at + 1..].split_whitespace().next())
        .unwrap_or("");
    if state == "Z" || state == "X" || state.is_empty() {
        return false;
    }
    let inside = format!("{dir}/");
    cmdline(pid)
        .iter()
        .any(|arg| arg == dir || arg.starts_with(&inside))
}

/// Waits for toolmend (at most [`GUARD`], then kills it) and collects its output.
fn finish(mut child: Child) -> Output {
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > GUARD {
            let _ = child.kill();
            panic!("toolmend did not end within {GUARD:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.wait_with_output().unwrap()
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

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
    // It left by itself after SIGTERM, and toolmend did not wait out the grace (1 s) before
    // SIGKILL, which would take the run to 4 s or more whatever the load: the bound is the
    // timeout plus the whole grace, so only a tool needing over 1 s to leave could miss it.
    let elapsed = s.events_of("tool.result")[0]["data"]["elapsed_ms"]
        .as_u64()
        .unwrap();
    assert!((3000..4000).contains(&elapsed), "{elapsed} ms");
    s.assert_nothing_left(1);
}

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
    // A hook that is missing at the start is a config error (exit 2, tests/loop.rs); one whose
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
fn interrupt(s: &Setup, config: &Path, ready: &str, signal: i32) {
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

const RECORD_CALL: &str = "{\"tool\": \"record\", \"parameters\": {\"path\": \"notes/to<<PAUSE>>day.txt\"}, \"terminate\": true}";

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
            && e["parameters"]["path"] == "notes/to"
            && e["open"] == "/path"),
        "{events:?}"
    );
    assert!(events.iter().any(|e| e["event"] == "arguments"
        && e["parameters"]["path"] == "notes/today.txt"
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
    assert_eq!(calls[0]["data"]["parameters"]["path"], "notes/today.txt");
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
    let reply = "{\"tool\": \"record\", \"parameters\": {\"path\": \"a.txt\", \"note\": \"fi<<PAUSE>>rst\", \"path\": \"b.txt\"}, \"terminate\": true}";
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
