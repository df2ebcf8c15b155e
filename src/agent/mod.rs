//! The `loop` agent: runs a tool-calling conversation against any LLM that can be called as a
//! command.
//!
//! One module per concern: [`config`] reads the TOML file; [`conversation`] writes the
//! conversation for the LLM command; [`process`] runs child commands (process groups,
//! timeouts, bounded output); [`tool`] runs a tool call; [`approval`] asks the approval hook;
//! [`events`] writes the transcript; [`run`](mod@run) is the loop itself. Replies are read by [`toolmend_core::calls`] with
//! the `{"tool", "parameters", "terminate"}` envelope required, and the system prompt is
//! [`toolmend_core::system_prompt`].

pub mod approval;
pub mod config;
pub mod conversation;
pub mod events;
pub mod process;
mod reply;
pub mod run;
mod sys;
pub mod tool;
mod watcher;

pub use config::Config;
pub use events::Events;
pub use run::{Status, first_messages, render, run};
pub use sys::catch_stop_signals;
