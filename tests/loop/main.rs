//! `toolmend loop` end to end: the real binary against scripted programs in `fixtures/bin/`
//! (a scripted LLM that replays replies and saves its inputs, recording tools, approval hooks).
// This test reads what the processes it starts used, or signals them, through libc.
#![allow(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command as Cmd;
use serde_json::{Value, json};

#[path = "../common/mod.rs"]
mod common;
use common::{TempDir, bin, code, quoted, stderr, stdout};

/// A fresh directory for one test, with the scripted LLM's replies, its saved inputs and the
/// logs of tools and hooks.
struct Setup {
    dir: TempDir,
}

fn call(tool: &str, parameters: Value, terminate: bool) -> String {
    json!({"tool": tool, "parameters": parameters, "terminate": terminate}).to_string()
}

fn echo(text: &str, terminate: bool) -> String {
    call("echo", json!({ "text": text }), terminate)
}

impl Setup {
    fn new(name: &str) -> Setup {
        Setup {
            dir: TempDir::new(&format!("loop-{name}")),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn path_str(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }

    /// Writes the replies and a config: `[llm]` runs the scripted model, then `rest` (TOML
    /// written with `{bin}` for fixtures/bin and `{dir}` for the test's directory).
    fn config(&self, replies: &[String], llm_extra: &str, rest: &str) -> PathBuf {
        std::fs::write(self.path("replies.txt"), replies.join("\n=====\n")).unwrap();
        let llm = format!(
            "[llm]\ncommand = [\"python3\", {}, {}, {}]\n{llm_extra}\n",
            quoted(&bin("scripted_llm.py")),
            quoted(&self.path_str("replies.txt")),
            quoted(&self.path_str("inputs")),
        );
        let rest = rest
            .replace("{bin}", &bin(""))
            .replace("{dir}", &self.dir.display().to_string());
        let path = self.path("agent.toml");
        std::fs::write(&path, format!("{llm}{rest}")).unwrap();
        path
    }

    /// What the scripted model got on stdin, one entry per call.
    fn inputs(&self) -> Vec<String> {
        (0..)
            .map(|n| self.path(&format!("inputs/input-{n}.txt")))
            .take_while(|p| p.exists())
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect()
    }

    /// The conversation of the model's call `n` (0-based), in `messages` form.
    fn messages(&self, n: usize) -> Vec<Value> {
        let input: Value = serde_json::from_str(&self.inputs()[n]).unwrap();
        input["messages"].as_array().unwrap().clone()
    }

    /// Lines of a log written by a tool or a hook, parsed as JSON.
    fn log(&self, name: &str) -> Vec<Value> {
        match std::fs::read_to_string(self.path(name)) {
            Ok(text) => text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    /// Runs `toolmend loop --config CONFIG go --transcript DIR/run.jsonl`: its output, and
    /// the transcript's text (empty when none was written).
    fn run_with_transcript(&self, config: &Path) -> (Output, String) {
        let transcript = self.path_str("run.jsonl");
        let out = self.run(config, &["go", "--transcript", &transcript]);
        (
            out,
            std::fs::read_to_string(&transcript).unwrap_or_default(),
        )
    }

    fn run(&self, config: &Path, args: &[&str]) -> Output {
        toolmend()
            .arg("loop")
            .arg("--config")
            .arg(config)
            .args(args)
            .output()
            .unwrap()
    }
}

/// Longest a test lets a run go before it is taken as hung. What the tests' tools, models and
/// hooks do to be cut short (sleep) lasts 120 s, so a run that ends within this did not wait
/// them out, however loaded the machine: the tests show "promptly" that way, not by timing.
const GUARD: Duration = Duration::from_secs(30);

/// toolmend with a guard against a run that hangs: killed after [`GUARD`], which gives no
/// exit code a test expects.
fn toolmend() -> Cmd {
    let mut cmd = common::toolmend();
    cmd.timeout(GUARD);
    cmd
}

/// The `echo` tool: records its stdin in tool.log and prints `echo: TEXT`; read-only, so no
/// approval is needed.
const ECHO_TOOL: &str = r#"
[[tools]]
name = "echo"
description = "Echo a text back"
read_only = true
command = ["python3", "{bin}/record_tool.py", "{dir}/tool.log"]
parameters = [{ name = "text", type = "string", required = true, description = "The text to echo" }]
"#;

/// `echo` that needs approval, and a hook in the given mode (`{mode}`).
const APPROVED_ECHO: &str = r#"
[approval]
command = ["python3", "{bin}/approval_hook.py", "{mode}", "{dir}/hook.log"]
timeout = 5

[[tools]]
name = "echo"
description = "Echo a text back"
command = ["python3", "{bin}/record_tool.py", "{dir}/tool.log"]
parameters = [{ name = "text", type = "string", required = true }]
"#;

fn approved_echo(mode: &str) -> String {
    APPROVED_ECHO.replace("{mode}", mode)
}

/// Checks that the background tool ran and that its child did not survive: waits until 2.5 s
/// after the tool started (past the child's 1.5 s), when a survivor would have written its
/// marker.
fn assert_no_survivor(marker: &Path) {
    let started = PathBuf::from(format!("{}.started", marker.display()));
    let Ok(at) = std::fs::metadata(&started).and_then(|m| m.modified()) else {
        panic!("the background tool never ran");
    };
    let until = at + Duration::from_millis(2500);
    if let Ok(left) = until.duration_since(std::time::SystemTime::now()) {
        std::thread::sleep(left);
    }
    assert!(!marker.exists(), "the tool's background child survived");
}

/// A tool that starts a background child which would create `marker` after 1.5 s.
fn background_tool(marker: &Path, timeout: &str) -> String {
    format!(
        "[[tools]]\nname = \"slow\"\nread_only = true\n{timeout}\
         command = [\"sh\", {}, {}]\n",
        quoted(&bin("background_tool.sh")),
        quoted(&marker.display().to_string())
    )
}

/// An executable script whose interpreter does not exist: it passes every check made before
/// the run, and fails only when started (ENOENT from exec).
fn script_without_interpreter(s: &Setup, name: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = s.path(name);
    std::fs::write(&path, "#!/nonexistent/toolmend-interpreter\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

fn events(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

mod answers;
mod approval;
mod examples;
mod limits;
mod malformed;
mod numbers;
mod server_events;
mod signals;
mod tools;
mod transcript;
