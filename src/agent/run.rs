//! The agent loop: ask the model, read its reply, approve and run the tool it calls, repeat.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::approval::{self, Decision, stderr_note};
use super::config::{Config, InputMode, SystemPrompt};
use super::conversation::{self, Message, Role};
use super::events::Events;
use super::process::{self, Cut, Ended, Group};
use super::sys;
use super::tool::{self, ToolResult};
use toolmend_core::Code;
use toolmend_core::calls::{Call, CallOptions, Extracted};

use super::reply::{Reply, judge, read_reply};
use super::watcher::{ServerReply, Watched, Watcher};

/// The longest reply taken (16 MiB); a model does not write more. A longer one is refused as a
/// failed call, and no more than this is held in memory while it is read.
const MAX_REPLY: usize = 16 << 20;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Status {
    /// The model answered in plain text.
    Answered,
    /// A tool called with `terminate: true` ran; its output is the answer.
    Terminated,
    /// The approval hook denied a call.
    Denied,
    /// The approval hook crashed, hung or answered nonsense; the call was rejected.
    ApprovalFailed,
    /// `max_iterations` LLM calls were made without an answer.
    IterationLimit,
    /// The run's `timeout` passed.
    Timeout,
    /// `max_parse_retries` malformed replies in a row.
    Malformed,
    /// The LLM command kept failing.
    LlmFailed,
    /// A command of the config cannot be started (the LLM command is missing, not
    /// executable, or its interpreter is missing): trying again cannot help.
    ConfigError,
    /// SIGINT, SIGTERM or SIGHUP.
    Interrupted,
    /// The transcript could not be written (a full disk, a closed stderr with `--verbose`):
    /// the run stopped before anything more ran, as an audit trail with holes is no trail.
    OutputFailed,
    /// Something that should not happen (a bug).
    Internal,
}

impl Status {
    /// The word written in `--json` records and in `run.finished`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Answered => "answered",
            Status::Terminated => "terminated",
            Status::Denied => "denied",
            Status::ApprovalFailed => "approval_failed",
            Status::IterationLimit => "iteration_limit",
            Status::Timeout => "timeout",
            Status::Malformed => "malformed",
            Status::LlmFailed => "llm_failed",
            Status::ConfigError => "config_error",
            Status::Interrupted => "interrupted",
            Status::OutputFailed => "output_failed",
            Status::Internal => "internal_error",
        }
    }

    /// Whether the run produced its answer.
    pub fn succeeded(self) -> bool {
        matches!(self, Status::Answered | Status::Terminated)
    }
}

/// The result of a run.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// How it ended.
    pub status: Status,
    /// The final answer, or the terminating tool's stdout.
    pub answer: Option<String>,
    /// Why it failed, when it did; for a terminating call to a tool that failed, why the tool
    /// failed (the status is still [`Status::Terminated`]).
    pub error: Option<String>,
    /// LLM calls made, retries included.
    pub iterations: u32,
    /// Tool calls the model made (run or rejected).
    pub tool_calls: u32,
    /// Wall time of the run.
    pub elapsed: Duration,
}

impl RunOutcome {
    /// The `--json` record: `{"status", "answer", "iterations", "tool_calls", "elapsed_ms",
    /// "error"?}`.
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("status".into(), self.status.as_str().into());
        map.insert("answer".into(), self.answer.clone().into());
        map.insert("iterations".into(), self.iterations.into());
        map.insert("tool_calls".into(), self.tool_calls.into());
        map.insert(
            "elapsed_ms".into(),
            (self.elapsed.as_millis() as u64).into(),
        );
        if let Some(error) = &self.error {
            map.insert("error".into(), error.clone().into());
        }
        Value::Object(map)
    }
}

/// The conversation a run starts with: the system prompt `[llm] system_prompt` names (by
/// default the calling convention, tool definitions injected) and the user's prompt.
pub fn first_messages(config: &Config, prompt: &str) -> Vec<Message> {
    let system = match config.llm.system_prompt {
        SystemPrompt::Convention => Some(toolmend_core::system_prompt(&config.tools)),
        SystemPrompt::Native => Some(toolmend_core::native_system_prompt().to_owned()),
        SystemPrompt::None => None,
    };
    let system = system.map(|text| Message::new(Role::System, text));
    system
        .into_iter()
        .chain([Message::new(Role::User, prompt)])
        .collect()
}

/// The conversation as the LLM command reads it on stdin.
pub fn render(config: &Config, messages: &[Message]) -> Vec<u8> {
    match config.llm.input {
        InputMode::Messages => {
            let tools: Vec<Value> = config
                .tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.schema}})
                })
                .collect();
            conversation::to_messages_json(messages, &tools)
        }
        InputMode::Text => conversation::to_text(messages),
    }
}

/// Runs the loop for one prompt to its end, writing events as it goes (ending with exactly one
/// `run.finished`). Never panics on what the model or the commands do.
pub fn run(config: &Config, prompt: &str, events: &mut Events) -> RunOutcome {
    let started = Instant::now();
    let mut state = Run {
        config,
        events,
        messages: first_messages(config, prompt),
        deadline: started + config.timeout,
        iterations: 0,
        tool_calls: 0,
        call_options: CallOptions {
            tools: Some(config.tools.clone()),
            require_terminate: true,
            any_envelope_shape: true,
            ..CallOptions::default()
        },
    };
    let tools: Vec<&str> = config.tools.iter().map(|t| t.name.as_str()).collect();
    state.events.emit(
        "run.started",
        json!({
            "prompt": prompt,
            "tools": tools,
            "max_iterations": config.max_iterations,
            "timeout_ms": config.timeout.as_millis() as u64,
        }),
    );
    let (status, answer, error) = match state.steps() {
        Ok((status, answer, warning)) => (status, Some(answer), warning),
        Err(stop) => (stop.status, None, Some(stop.message)),
    };
    let outcome = RunOutcome {
        status,
        answer,
        error,
        iterations: state.iterations,
        tool_calls: state.tool_calls,
        elapsed: started.elapsed(),
    };
    state.events.emit("run.finished", outcome.to_json());
    outcome
}

/// Why a run stops early.
struct Stop {
    status: Status,
    message: String,
}

impl Stop {
    fn new(status: Status, message: impl Into<String>) -> Stop {
        Stop {
            status,
            message: message.into(),
        }
    }
}

/// What a reply gave when it was read while it came.
enum Read {
    /// The calls of a reply cut at its first call (`stop_after_call`).
    Found(Extracted),
    /// A reply that came as a server's stream of server-sent events.
    Server(ServerReply),
}

struct Run<'a> {
    config: &'a Config,
    events: &'a mut Events,
    messages: Vec<Message>,
    deadline: Instant,
    iterations: u32,
    tool_calls: u32,
    call_options: CallOptions,
}

impl Run<'_> {
    /// The loop; ends with the status, the answer and, for a terminating call to a tool that
    /// failed, a warning.
    fn steps(&mut self) -> Result<(Status, String, Option<String>), Stop> {
        let mut malformed_in_a_row = 0;
        loop {
            let (reply, found) = self.ask_model()?;
            self.messages
                .push(Message::new(Role::Assistant, reply.clone()));
            let read = match found {
                Some(Read::Found(found)) => judge(&reply, Ok(found)),
                Some(Read::Server(server)) => {
                    judge(server.text.as_deref().unwrap_or(&reply), server.result)
                }
                None => self.read_reply(&reply)?,
            };
            match read {
                Reply::Answer { text, cut } => {
                    let warning = cut.map(|why| format!("the answer may be incomplete: {why}"));
                    return Ok((Status::Answered, text, warning));
                }
                Reply::Malformed { code, message } => {
                    malformed_in_a_row += 1;
                    self.emit(
                        "parse.error",
                        json!({
                            "code": code,
                            "message": message,
                            "in_a_row": malformed_in_a_row,
                        }),
                    );
                    if malformed_in_a_row >= self.config.max_parse_retries {
                        return Err(Stop::new(
                            Status::Malformed,
                            format!(
                                "{malformed_in_a_row} malformed replies in a row (max_parse_retries); \
                                 the last: {code}: {message}"
                            ),
                        ));
                    }
                    let note = self.correction(code, &message);
                    self.messages.push(Message::new(Role::User, note));
                }
                Reply::Call { call, reason } => {
                    malformed_in_a_row = 0;
                    let terminate = call.terminate == Some(true);
                    let result = self.call_tool(&call, reason)?;
                    if terminate {
                        let warning = result.failure.map(|why| {
                            format!("the terminating call to {:?} failed: {why}", call.tool)
                        });
                        return Ok((Status::Terminated, result.stdout, warning));
                    }
                    let mut message = Message::tool(&call.tool, result.value.to_string());
                    message.call_id = call.id.as_ref().and_then(|id| match id {
                        Value::String(s) => Some(s.clone()),
                        _ => None,
                    });
                    self.messages.push(message);
                }
            }
        }
    }

    /// Stops the run when its time is up, a stop signal came or the transcript cannot be
    /// written (checked before each model call and each tool run).
    fn check(&self) -> Result<(), Stop> {
        if let Some(signal) = sys::stop_requested() {
            return Err(self.interrupted(signal));
        }
        if let Some(why) = self.events.failure() {
            return Err(Stop::new(
                Status::OutputFailed,
                format!("writing the transcript failed: {why}; the run stopped there"),
            ));
        }
        if Instant::now() >= self.deadline {
            return Err(self.timed_out());
        }
        Ok(())
    }

    fn timed_out(&self) -> Stop {
        Stop::new(
            Status::Timeout,
            format!(
                "the run passed its timeout of {:?}; every child process was killed",
                self.config.timeout
            ),
        )
    }

    fn interrupted(&self, signal: i32) -> Stop {
        Stop::new(
            Status::Interrupted,
            format!("interrupted by signal {signal}; every child process was killed"),
        )
    }

    /// The stop for a child cut short by the run's deadline or a stop signal.
    fn cut_short(&self, cut: Cut) -> Stop {
        match cut {
            Cut::RunTimedOut => self.timed_out(),
            Cut::Interrupted => self.stopped_child(),
        }
    }

    fn stopped_child(&self) -> Stop {
        match sys::stop_requested() {
            Some(signal) => self.interrupted(signal),
            None => self.timed_out(),
        }
    }

    /// The model's reply, retrying a failing LLM command with exponential backoff, and what
    /// the reply gave when it was already read while it came (`stop_after_call`).
    fn ask_model(&mut self) -> Result<(String, Option<Read>), Stop> {
        let llm = &self.config.llm;
        let mut failures = 0u32;
        loop {
            if self.iterations >= self.config.max_iterations {
                return Err(Stop::new(
                    Status::IterationLimit,
                    format!(
                        "stopped after {} LLM calls (max_iterations) without a final answer",
                        self.iterations
                    ),
                ));
            }
            self.check()?;
            self.iterations += 1;
            let input = render(self.config, &self.messages);
            self.emit(
                "llm.request",
                json!({
                    "attempt": failures + 1,
                    "messages": self.messages.len(),
                    "bytes": input.len(),
                }),
            );
            let deadline = process::deadline(llm.timeout, self.deadline);
            let mut watcher = Watcher::new(
                &mut *self.events,
                self.iterations,
                llm.stop_after_call,
                llm.arguments_step,
                &self.call_options,
            );
            let mut watch = |piece: &[u8]| watcher.piece(piece);
            let ran = process::run_watched(
                &llm.command,
                &input,
                deadline,
                MAX_REPLY,
                Group::Own,
                Some(&mut watch),
            );
            // The reply as read (the pieces went to the watcher, not to `done.stdout`).
            let Watched {
                reply: read,
                cut,
                found,
                server,
            } = watcher.into_reply();
            let problem = match ran {
                Err(e) if process::cannot_start(&e) => {
                    let problem = format!("could not start {:?}: {e}", llm.command[0]);
                    self.emit_failed_reply(&problem);
                    return Err(Stop::new(
                        Status::ConfigError,
                        format!("the [llm] command {problem}; it is not retried"),
                    ));
                }
                Err(e) => format!("could not start {:?}: {e}", llm.command[0]),
                Ok(done) => match done.ended {
                    Ended::Stopped => {
                        // A whole call was read (`stop_after_call`): the reply is what was read,
                        // up to the call's end when that is where its call was found.
                        let mut reply = read;
                        reply.truncate(cut.unwrap_or(reply.len()));
                        // The calls read from this very text when the model was stopped.
                        let found = found
                            .filter(|(length, _)| *length == reply.len())
                            .map(|(_, found)| Read::Found(found));
                        self.emit_reply(done.elapsed, &reply, true);
                        return Ok((reply, found));
                    }
                    Ended::Interrupted => return Err(self.stopped_child()),
                    Ended::TimedOut if Instant::now() >= self.deadline => {
                        return Err(self.timed_out());
                    }
                    Ended::TimedOut => format!("no reply within its timeout of {:?}", llm.timeout),
                    Ended::Exited(_)
                        if done.succeeded() && done.stdout.total > MAX_REPLY as u64 =>
                    {
                        format!(
                            "its reply of {} bytes is over the limit of {MAX_REPLY} bytes",
                            done.stdout.total
                        )
                    }
                    Ended::Exited(_) if done.succeeded() => {
                        let reply = read;
                        // A server's error body printed as the reply, or server-sent events
                        // that carry one or cannot be read: the call failed, and is retried as
                        // one; the model said nothing to correct.
                        let failed = match &server {
                            Some(ServerReply {
                                result: Err(failure),
                                ..
                            }) if failure.error.code == Code::InvalidInput => {
                                Some(failure.error.message.clone())
                            }
                            Some(_) => None,
                            None => toolmend_core::calls::server_error_reply(&reply),
                        };
                        match failed {
                            Some(said) => format!("{said} (the command printed it and exited 0)"),
                            None => {
                                self.emit_reply(done.elapsed, &reply, false);
                                return Ok((reply, server.map(Read::Server)));
                            }
                        }
                    }
                    Ended::Exited(_) => format!(
                        "it ended with {}{}",
                        done.describe(),
                        stderr_note(&done.stderr.text())
                    ),
                },
            };
            failures += 1;
            self.emit_failed_reply(&problem);
            if failures > llm.retries {
                return Err(Stop::new(
                    Status::LlmFailed,
                    format!("the LLM command failed {failures} times; the last time {problem}"),
                ));
            }
            let backoff = llm
                .retry_delay
                .saturating_mul(1 << (failures - 1).min(16))
                .min(llm.max_retry_delay);
            self.pause(backoff)?;
        }
    }

    /// The `llm.response` event of a reply read (`stopped`: cut at its first call).
    fn emit_reply(&mut self, elapsed: Duration, reply: &str, stopped: bool) {
        let mut event = json!({
            "ok": true,
            "elapsed_ms": elapsed.as_millis() as u64,
            "reply": reply,
        });
        if stopped {
            event["stopped"] = true.into();
        }
        self.emit("llm.response", event);
    }

    /// The `llm.response` event of an LLM command that gave no reply.
    fn emit_failed_reply(&mut self, problem: &str) {
        self.emit("llm.response", json!({"ok": false, "error": problem}));
    }

    /// Writes an event of this iteration: `iteration`, then the fields of `data`.
    fn emit(&mut self, kind: &str, data: Value) {
        let mut event = Map::new();
        event.insert("iteration".into(), self.iterations.into());
        if let Value::Object(data) = data {
            event.extend(data);
        }
        self.events.emit(kind, Value::Object(event));
    }

    /// Sleeps, waking for the deadline and for stop signals.
    fn pause(&self, length: Duration) -> Result<(), Stop> {
        let until = process::deadline(length, self.deadline);
        loop {
            self.check()?;
            let now = Instant::now();
            if now >= until {
                return Ok(());
            }
            thread::sleep((until - now).min(Duration::from_millis(10)));
        }
    }

    /// Reads a reply on a thread of its own, so that the run's timeout and stop signals are
    /// acted on while it is read, however long that takes.
    fn read_reply(&self, reply: &str) -> Result<Reply, Stop> {
        let (reply, options) = (reply.to_owned(), self.call_options.clone());
        match off_thread(self.deadline, move || read_reply(&reply, &options)) {
            Ok(reply) => Ok(reply),
            Err(Interruption::Signal(signal)) => Err(self.interrupted(signal)),
            Err(Interruption::Deadline) => Err(self.timed_out()),
            Err(Interruption::Failed) => Err(Stop::new(
                Status::Internal,
                "the model's reply could not be read (the extractor failed: a bug)",
            )),
        }
    }

    /// The note that tells the model what was wrong and how to call a tool.
    fn correction(&self, code: &str, message: &str) -> String {
        let names: Vec<&str> = self.config.tools.iter().map(|t| t.name.as_str()).collect();
        let names = if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        };
        format!(
            "Your last reply could not be used as a tool call ({code}): {message}.\n\
             To call a tool, reply with exactly one JSON object and nothing else: \
             {{\"tool\": \"<tool name>\", \"parameters\": {{...}}, \"terminate\": true or false}}. \
             The tools are: {names}. To give your final answer, reply with plain text that \
             contains no JSON object."
        )
    }

    /// Asks for approval when the tool needs it, then runs the tool.
    fn call_tool(&mut self, call: &Call, reason: Option<String>) -> Result<ToolResult, Stop> {
        self.tool_calls += 1;
        let Some(tool) = self.config.tools.get(&call.tool) else {
            return Err(Stop::new(
                Status::Internal,
                format!("the extractor let through an unknown tool {:?}", call.tool),
            ));
        };
        let parameters = Value::Object(call.parameters.clone());
        // A map, not `json!`, which would rewrite the parameters' numbers (`to_value`).
        let mut event = Map::new();
        event.insert("tool".into(), call.tool.clone().into());
        event.insert("parameters".into(), parameters.clone());
        event.insert("terminate".into(), call.terminate.into());
        event.insert("requires_approval".into(), tool.requires_approval.into());
        // What was mended to get the call (a value coerced to its schema, ...); an empty list
        // when nothing was, as every surface writes a call.
        event.insert(
            "repairs".into(),
            toolmend_core::repairs_value(&call.repairs),
        );
        self.emit("tool.call", Value::Object(event));
        if tool.requires_approval {
            self.approve(call, &parameters, reason)?;
        }
        self.check()?;
        let Some(command) = &tool.command else {
            return Err(Stop::new(
                Status::Internal,
                format!("tool {:?} has no command", call.tool),
            ));
        };
        let timeout = tool.timeout.unwrap_or(self.config.tool_timeout);
        let max_output = self.config.max_output;
        let ran = tool::run(
            &call.tool,
            command,
            &parameters,
            timeout,
            self.deadline,
            max_output,
        );
        let result = ran.map_err(|cut| self.cut_short(cut))?;
        self.emit(
            "tool.result",
            json!({
                "tool": call.tool,
                "elapsed_ms": result.elapsed.as_millis() as u64,
                "result": result.value,
            }),
        );
        Ok(result)
    }

    fn approve(
        &mut self,
        call: &Call,
        parameters: &Value,
        reason: Option<String>,
    ) -> Result<(), Stop> {
        let Some(hook) = &self.config.approval else {
            return Err(Stop::new(
                Status::Internal,
                format!("tool {:?} needs approval and no hook is set", call.tool),
            ));
        };
        self.check()?;
        let mut request = Map::new();
        request.insert("tool".into(), call.tool.clone().into());
        request.insert("parameters".into(), parameters.clone());
        request.insert("iteration".into(), self.iterations.into());
        if let Some(reason) = reason {
            request.insert("reason".into(), reason.into());
        }
        let decision = approval::ask(hook, &Value::Object(request), self.deadline)
            .map_err(|cut| self.cut_short(cut))?;
        let (word, why) = match &decision {
            Decision::Allow => ("allow", None),
            Decision::Deny(reason) => ("deny", reason.clone()),
            Decision::Failed(why) => ("failed", Some(why.clone())),
        };
        self.emit(
            "approval.decided",
            json!({
                "tool": call.tool,
                "decision": word,
                "reason": why,
            }),
        );
        match decision {
            Decision::Allow => Ok(()),
            Decision::Deny(reason) => Err(Stop::new(
                Status::Denied,
                format!(
                    "the call to {:?} was denied by the approval hook{}; no further tool runs",
                    call.tool,
                    reason.map(|r| format!(": {r}")).unwrap_or_default()
                ),
            )),
            _ => Err(Stop::new(
                Status::ApprovalFailed,
                format!(
                    "the approval hook failed, so the call to {:?} was rejected: {}",
                    call.tool,
                    why.unwrap_or_default()
                ),
            )),
        }
    }
}

/// Why work handed to [`off_thread`] gave no result.
#[derive(Debug, PartialEq, Eq)]
enum Interruption {
    /// A stop signal came.
    Signal(i32),
    /// The run's deadline passed.
    Deadline,
    /// The work panicked, or no thread could be started for it.
    Failed,
}

/// Runs `work` on a thread of its own and waits for it, but no longer than `deadline` and
/// no longer than until a stop signal comes: the loop's promises hold whatever the work does.
/// Work given up on is left to finish on its own; its result is dropped.
fn off_thread<T: Send + 'static>(
    deadline: Instant,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Interruption> {
    let (send, receive) = mpsc::channel();
    thread::Builder::new()
        .name("toolmend-extract".into())
        .spawn(move || {
            let _ = send.send(work());
        })
        .map_err(|_| Interruption::Failed)?;
    loop {
        if let Some(signal) = sys::stop_requested() {
            return Err(Interruption::Signal(signal));
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(Interruption::Deadline);
        }
        match receive.recv_timeout((deadline - now).min(Duration::from_millis(10))) {
            Ok(result) => return Ok(result),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return Err(Interruption::Failed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_off_thread_gives_way_to_the_deadline() {
        // The work would take two minutes; the deadline (0.1 s) does not wait for it (the
        // bound is a guard against waiting, not a measure of speed).
        let start = Instant::now();
        let slow = off_thread(start + Duration::from_millis(100), || {
            thread::sleep(Duration::from_secs(120));
            1
        });
        assert_eq!(slow, Err(Interruption::Deadline));
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{:?}",
            start.elapsed()
        );
        let soon = Instant::now() + Duration::from_secs(5);
        assert_eq!(off_thread(soon, || 7), Ok(7));
        let failed = off_thread(soon, || -> i32 { panic!("a failing extractor") });
        assert_eq!(failed, Err(Interruption::Failed));
    }
}
