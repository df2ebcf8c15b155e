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

#[path = "../common/mod.rs"]
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
        // toolmend keeps a SIGHUP it was started with ignored, ignored
        // (`an_ignored_sighup_stays_ignored`); the tests that send one expect its default
        // disposition, however this test run was started (`nohup` ignores it).
        // SAFETY: only sets a signal disposition between fork and exec (async-signal-safe).
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut command, || {
                libc::signal(libc::SIGHUP, libc::SIG_DFL);
                Ok(())
            });
        }
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
            // (A wait, not a bound on speed: a dead process is gone in far less.)
            if start.elapsed() > Duration::from_secs(10) {
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

mod hook;
mod model;
mod signals;
mod streaming;
mod tools;
