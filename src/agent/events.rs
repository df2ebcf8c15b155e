//! The run's events as JSON Lines: `{"type": "run.started", "elapsed_ms": 0, "data": {...}}`.
//!
//! Types, in the order a run emits them: `run.started`; per LLM call `llm.request`,
//! `llm.stream` for a call being formed while the reply streams in, and `llm.response`; `parse.error` for a malformed reply; `tool.call`, `approval.decided` (tools
//! that need approval), `tool.result`; and exactly one `run.finished`. `elapsed_ms` counts from
//! the start of the run. Each line is flushed as it is written, so a watcher sees it at once.

use std::io::Write;
use std::time::Instant;

use serde_json::{Map, Value};

/// Where events go: any number of writers (a transcript file, stderr), or none.
pub struct Events {
    sinks: Vec<Box<dyn Write>>,
    started: Instant,
    failed: Option<String>,
}

impl Events {
    /// Events written to these sinks, timed from now.
    pub fn new(sinks: Vec<Box<dyn Write>>) -> Events {
        Events {
            sinks,
            started: Instant::now(),
            failed: None,
        }
    }

    /// Writes one event. A sink that fails is dropped; [`Events::failure`] says why.
    pub fn emit(&mut self, kind: &str, data: Value) {
        if self.sinks.is_empty() {
            return;
        }
        let elapsed_ms = self.started.elapsed().as_millis() as u64;
        // Not `json!`: it passes `data` through `to_value`, which rewrites the numbers of a
        // call's parameters (`1E5` as `1e+5`); the transcript shows them as the model wrote.
        let mut event = Map::new();
        event.insert("type".into(), kind.into());
        event.insert("elapsed_ms".into(), elapsed_ms.into());
        event.insert("data".into(), data);
        let mut line = serde_json::to_vec(&Value::Object(event)).unwrap_or_default();
        line.push(b'\n');
        let mut kept = Vec::with_capacity(self.sinks.len());
        for mut sink in self.sinks.drain(..) {
            match sink.write_all(&line).and_then(|()| sink.flush()) {
                Ok(()) => kept.push(sink),
                Err(e) => {
                    self.failed.get_or_insert_with(|| e.to_string());
                }
            }
        }
        self.sinks = kept;
    }

    /// Notes that events cannot be shown where they were promised (`--verbose` with stderr
    /// closed): the run stops before anything runs, as when a sink fails.
    pub fn fail(&mut self, why: &str) {
        self.failed.get_or_insert_with(|| why.to_owned());
    }

    /// Why writing events failed, if it did.
    pub fn failure(&self) -> Option<&str> {
        self.failed.as_deref()
    }
}
