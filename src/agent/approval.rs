//! The approval hook: asks an external command whether a tool call may run. It fails closed.
//!
//! The hook gets `{"tool", "parameters", "iteration", "reason"?}` as JSON on stdin (`reason`
//! is the text the model wrote beside the call, when it wrote any). It allows a call only by
//! exiting 0 with stdout holding the one JSON object `{"decision": "allow"}`; `{"decision":
//! "deny"}` (optionally with a `"reason"`) denies it. Anything else (a non-zero exit, a crash,
//! running past its timeout, output that is not such an object) is a failure, which rejects
//! the call too.

use std::time::Instant;

use serde_json::Value;

use super::config::ApprovalConfig;
use super::process::{self, Ended, Group};

/// The longest answer read (64 KiB): enough for any honest one. A longer answer fails closed,
/// whatever it starts with.
const MAX_ANSWER: usize = 64 * 1024;

/// What the hook decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run the call; the hook's reason, if it gave one.
    Allow(Option<String>),
    /// The hook said no, with its reason if it gave one.
    Deny(Option<String>),
    /// The hook did not give a usable answer; the call is rejected.
    Failed(String),
    /// The run's own deadline passed while the hook was deciding.
    RunTimedOut,
    /// A stop signal arrived while the hook was deciding.
    Interrupted,
}

/// Runs the hook for one call; `run_deadline` bounds its timeout.
pub fn ask(hook: &ApprovalConfig, request: &Value, run_deadline: Instant) -> Decision {
    let mut input = serde_json::to_vec(request).unwrap_or_default();
    input.push(b'\n');
    let deadline = process::deadline(hook.timeout, run_deadline);
    let group = if hook.terminal {
        Group::Shared
    } else {
        Group::Own
    };
    let done = match process::run(&hook.command, &input, deadline, MAX_ANSWER, group) {
        Ok(done) => done,
        Err(e) => {
            return Decision::Failed(format!("could not start {:?}: {e}", hook.command[0]));
        }
    };
    match done.ended {
        Ended::Interrupted => return Decision::Interrupted,
        Ended::TimedOut if Instant::now() >= run_deadline => return Decision::RunTimedOut,
        Ended::TimedOut => {
            return Decision::Failed(format!(
                "no answer within its timeout of {:?}; it was killed",
                hook.timeout
            ));
        }
        Ended::Exited(_) => {}
    }
    if done.stdout.truncated() {
        // What was kept may parse as an allow; the whole answer is not one.
        return Decision::Failed(format!(
            "its answer of {} bytes is over the limit of {MAX_ANSWER} bytes",
            done.stdout.total
        ));
    }
    let answer = done.stdout.text();
    let decision = serde_json::from_str::<Value>(answer.trim())
        .ok()
        .and_then(|v| v.as_object().cloned());
    let reason = decision
        .as_ref()
        .and_then(|d| d.get("reason"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    match decision.as_ref().and_then(|d| d.get("decision")) {
        // A deny is a deny, whatever the exit status says.
        Some(Value::String(d)) if d == "deny" => Decision::Deny(reason),
        _ if !done.succeeded() => Decision::Failed(format!(
            "it ended with {}{}",
            done.describe(),
            stderr_note(&done.stderr.text())
        )),
        Some(Value::String(d)) if d == "allow" => Decision::Allow(reason),
        _ => Decision::Failed(format!(
            "its answer {:?} is not {{\"decision\":\"allow\"}} or {{\"decision\":\"deny\"}}",
            crate::cut(answer.trim(), 100)
        )),
    }
}

/// `: <the last line of stderr>`, or nothing when stderr is empty.
pub(crate) fn stderr_note(stderr: &str) -> String {
    match stderr.trim().lines().last() {
        Some(line) => format!(": {}", crate::cut(line.trim(), 200)),
        None => String::new(),
    }
}
