//! Running one tool call: the parameters as JSON on stdin (no shell, nothing in argv), in its
//! own process group under its timeout, and the result as the model will see it.

use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::process::{self, Captured, Cut, Ended, Group};

/// A tool's result.
#[derive(Debug, Clone)]
pub struct ToolResult {
    /// What the model is sent: `{"tool", "ok", "exit_code", "stdout", "stderr", "error"?,
    /// "stdout_truncated"?, "stderr_truncated"?}` (only `tool`, `ok` and `error` when the
    /// command could not start).
    pub value: Value,
    /// The kept stdout as text: the output of a terminating call.
    pub stdout: String,
    /// Why the tool failed, when it did.
    pub failure: Option<String>,
    /// How long it ran.
    pub elapsed: Duration,
}

/// Runs `command` with `parameters` on stdin for at most `timeout`, and no later than
/// `run_deadline`, keeping `max_output` bytes of each output stream. `Err` when the run must
/// stop (its deadline, a stop signal).
pub fn run(
    name: &str,
    command: &[String],
    parameters: &Value,
    timeout: Duration,
    run_deadline: Instant,
    max_output: usize,
) -> Result<ToolResult, Cut> {
    let deadline = process::deadline(timeout, run_deadline);
    let mut input = serde_json::to_vec(parameters).unwrap_or_default();
    input.push(b'\n');
    let mut result = Map::new();
    result.insert("tool".into(), name.into());
    let done = match process::run(command, &input, deadline, max_output, Group::Own) {
        Ok(done) => done,
        Err(e) => {
            let error = format!("could not start {:?}: {e}", command[0]);
            result.insert("ok".into(), false.into());
            result.insert("error".into(), error.clone().into());
            return Ok(ToolResult {
                value: Value::Object(result),
                stdout: String::new(),
                failure: Some(error),
                elapsed: Duration::ZERO,
            });
        }
    };
    if let Some(cut) = done.ended.cut(run_deadline) {
        return Err(cut);
    }
    let code = match done.ended {
        Ended::Exited(status) => status.code(),
        // Its own timeout (an interruption was a cut); Stopped: not asked for here (no watcher).
        Ended::TimedOut | Ended::Interrupted | Ended::Stopped => None,
    };
    let stdout = done.stdout.text();
    result.insert("ok".into(), done.succeeded().into());
    result.insert("exit_code".into(), code.map_or(Value::Null, Value::from));
    result.insert("stdout".into(), stdout.clone().into());
    result.insert("stderr".into(), done.stderr.text().into());
    for (key, captured) in [
        ("stdout_truncated", &done.stdout),
        ("stderr_truncated", &done.stderr),
    ] {
        if let Some(note) = truncation(captured) {
            result.insert(key.into(), note.into());
        }
    }
    let failure = (!done.succeeded()).then(|| match done.ended {
        Ended::TimedOut => {
            format!("the tool timed out after {timeout:?}; its process group was killed")
        }
        _ => format!("the tool failed: {}", done.describe()),
    });
    if let Some(error) = &failure {
        result.insert("error".into(), error.clone().into());
    }
    Ok(ToolResult {
        value: Value::Object(result),
        stdout,
        failure,
        elapsed: done.elapsed,
    })
}

/// What the model is told about output past the bound.
fn truncation(captured: &Captured) -> Option<String> {
    captured.truncated().then(|| {
        format!(
            "only the first {} of {} bytes are shown",
            captured.bytes.len(),
            captured.total
        )
    })
}
