//! The approval hook: asks an external command whether a tool call may run. It fails closed.
//!
//! The hook gets `{"tool", "parameters", "iteration", "reason"?}` as JSON on stdin (`reason`
//! is the text the model wrote beside the call, when it wrote any). It allows a call only by
//! exiting 0 with stdout holding exactly one JSON object `{"decision": "allow"}`: that one key,
//! once, with that exact string written without escapes; whitespace around the object is fine. `{"decision": "deny"}`,
//! optionally with a string `"reason"` (each key once), denies it, whatever the exit status.
//! Anything else is a failure, which rejects the call too: a non-zero exit, a crash, running
//! past its timeout, no output, output that is not UTF-8 or over 64 KiB, a key given
//! twice, any other key or value (`"Allow"`, `" allow"`, `true`), or anything before or after
//! the one object (a second object, a word, a log line). An ambiguous answer never allows.

use std::collections::HashSet;
use std::time::Instant;

use serde::de::{Deserialize, Deserializer};
use serde_json::Value;

use super::config::ApprovalConfig;
use super::process::{self, Cut, Ended, Finished, Group};
use toolmend_core::object_members;

/// The longest answer read (64 KiB): enough for any honest one. A longer answer fails closed,
/// whatever it starts with.
const MAX_ANSWER: usize = 64 * 1024;

/// What the hook decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run the call.
    Allow,
    /// The hook said no, with its reason if it gave one.
    Deny(Option<String>),
    /// The hook did not give a usable answer; the call is rejected.
    Failed(String),
}

/// Runs the hook for one call; `run_deadline` bounds its timeout. `Err` when the run must stop
/// while the hook decides (its deadline, a stop signal).
pub fn ask(hook: &ApprovalConfig, request: &Value, run_deadline: Instant) -> Result<Decision, Cut> {
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
            let why = format!("could not start {:?}: {e}", hook.command[0]);
            return Ok(Decision::Failed(why));
        }
    };
    if let Some(cut) = done.ended.cut(run_deadline) {
        return Err(cut);
    }
    Ok(decide(&done, hook))
}

/// What the hook's run `done` decides.
fn decide(done: &Finished, hook: &ApprovalConfig) -> Decision {
    match done.ended {
        // Its own timeout (an interruption was a cut).
        Ended::TimedOut | Ended::Interrupted => {
            return Decision::Failed(format!(
                "no answer within its timeout of {:?}; it was killed",
                hook.timeout
            ));
        }
        Ended::Stopped => return Decision::Failed("it was stopped".to_owned()),
        Ended::Exited(_) => {}
    }
    if done.stdout.truncated() {
        // What was kept may parse as an allow; the whole answer is not one.
        return Decision::Failed(format!(
            "its answer of {} bytes is over the limit of {MAX_ANSWER} bytes",
            done.stdout.total
        ));
    }
    let answer = read_answer(&done.stdout.bytes);
    match answer {
        // A deny is a deny, whatever the exit status says.
        Ok(Answer::Deny(reason)) => Decision::Deny(reason),
        _ if !done.succeeded() => Decision::Failed(format!(
            "it ended with {}{}",
            done.describe(),
            stderr_note(&done.stderr.text())
        )),
        Ok(Answer::Allow) => Decision::Allow,
        Err(why) => Decision::Failed(why),
    }
}

/// A usable answer of the hook.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Allow,
    Deny(Option<String>),
}

/// Reads the hook's stdout strictly: `Err` says why it is neither an allow nor a deny.
fn read_answer(bytes: &[u8]) -> Result<Answer, String> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| format!("its answer is not UTF-8 (byte {})", e.valid_up_to()))?;
    let shown = toolmend_core::cut(text.trim(), 100);
    if shown.is_empty() {
        return Err("it printed no answer; only {\"decision\":\"allow\"} allows".into());
    }
    // Keys are kept in order with duplicates, so `{"decision":"deny","decision":"allow"}`
    // cannot be read as its last key; anything around the one object fails to parse.
    let Entries(entries) = serde_json::from_str(text).map_err(|e| {
        format!("its answer {shown:?} is not one JSON object ({e}); only {{\"decision\":\"allow\"}} allows")
    })?;
    let wrong = |why: String| {
        Err(format!(
            "its answer {shown:?} {why}; only {{\"decision\":\"allow\"}} allows"
        ))
    };
    let mut seen = HashSet::new();
    if let Some((key, _)) = entries.iter().find(|(k, _)| !seen.insert(k.as_str())) {
        return wrong(format!("gives the key {key:?} twice"));
    }
    let decision = entries
        .iter()
        .find(|(k, _)| k == "decision")
        .map(|(_, v)| v);
    let extra = || {
        entries
            .iter()
            .map(|(k, _)| k.as_str())
            .find(|k| *k != "decision")
    };
    match decision {
        Some(Value::String(d)) if d == "allow" => match extra() {
            // The exact bytes allow: a key or value spelled with an escape (`"\u0061llow"`)
            // reads the same but is not what the rule names, so it fails closed. With one key
            // and that value, any backslash is such an escape.
            None if text.contains('\\') => {
                wrong("spells the allow with an escape, not as the exact bytes".into())
            }
            None => Ok(Answer::Allow),
            Some(key) => wrong(format!("has the key {key:?} beside the decision")),
        },
        Some(Value::String(d)) if d == "deny" => {
            let reason = entries.iter().find(|(k, _)| k == "reason").map(|(_, v)| v);
            if let Some(key) = entries
                .iter()
                .map(|(k, _)| k.as_str())
                .find(|k| !matches!(*k, "decision" | "reason"))
            {
                return wrong(format!("has the key {key:?} beside the deny"));
            }
            match reason {
                None => Ok(Answer::Deny(None)),
                Some(Value::String(r)) => Ok(Answer::Deny(Some(r.clone()))),
                Some(_) => wrong("gives a \"reason\" that is not a string".into()),
            }
        }
        Some(Value::String(d)) => {
            wrong(format!("decides {d:?}, which is not \"allow\" or \"deny\""))
        }
        Some(other) => wrong(format!("gives a decision that is not a string: {other}")),
        None => wrong("has no \"decision\"".into()),
    }
}

/// A JSON object's entries in order, duplicates kept.
struct Entries(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Entries, D::Error> {
        object_members(deserializer, "a JSON object", false).map(Entries)
    }
}

/// `: <the last line of stderr>`, or nothing when stderr is empty.
pub(crate) fn stderr_note(stderr: &str) -> String {
    match stderr.trim().lines().last() {
        Some(line) => format!(": {}", toolmend_core::cut(line.trim(), 200)),
        None => String::new(),
    }
}
