//! What the decoders find in a reply before it is normalized: raw calls, their arguments as
//! written, failed and cut-off calls, and the spans they read.

use serde_json::Value;

use super::{Incomplete, Rejected};
use crate::error::Error;
use crate::repair::Repair;

/// (`--require-terminate`) and as the loop reads it ([`super::CallOptions::any_envelope_shape`]).
#[derive(Debug, Default, Clone)]
pub(crate) struct EnvelopeCheck {
    pub strict: Option<Error>,
    pub any_shape: Option<Error>,
}

/// A call as a decoder found it, before it is normalized.
#[derive(Debug, Default)]
pub(crate) struct Raw {
    /// The name as written (`None` when the call has none).
    pub name: Option<String>,
    pub id: Option<Value>,
    pub args: Args,
    pub terminate: Option<Value>,
    /// For a JSON object: why it is not the envelope, if it is not. `None` for calls that are
    /// not JSON objects.
    pub envelope: Option<EnvelopeCheck>,
    pub repairs: Vec<Repair>,
    pub offset: usize,
    /// Where `Args::Text` starts in the reply: its repairs' offsets are moved there, so that
    /// every call's repairs count from the reply (`None`: text the decoder wrote itself).
    pub args_at: Option<usize>,
    /// Why the call was cut although its JSON may be whole: the API's stop reason said so.
    pub cut: Option<String>,
    /// Values written in the call that it does not use (see [`super::Call::dropped`]).
    pub dropped: Vec<Value>,
}

/// A call's arguments as the format wrote them.
#[derive(Debug, Default)]
pub(crate) enum Args {
    /// None were written.
    #[default]
    Missing,
    /// A JSON value (an object, or a string holding JSON, or something wrong).
    Value(Value),
    /// JSON text, to be mended.
    Text(String),
    /// JSON text in a string where the format puts it (OpenAI's `function.arguments`): no
    /// `unquote` repair is reported for it.
    Encoded(String),
    /// Named values of an XML-style or Python-style format.
    Fields(Vec<(String, Field)>),
}

/// One named argument value.
#[derive(Debug)]
pub(crate) enum Field {
    /// Plain text: typed by the schema, else kept as a string.
    Text(String),
    /// Plain text: typed by the schema, else JSON if it parses as JSON, else a string.
    TextOrJson(String),
    /// JSON text (DSML `string="false"`).
    Json(String),
    /// An already typed value.
    Value(Value),
}

/// What one format found in (reasoning-blanked) text.
#[derive(Debug, Default)]
pub(crate) struct Out {
    pub items: Vec<Item>,
    /// Markup to leave out of the text.
    pub cut: Vec<std::ops::Range<usize>>,
    pub repairs: Vec<Repair>,
    /// For Harmony: the text and reasoning, taken from its channels.
    pub text: Option<Vec<String>>,
    pub reasoning: Vec<String>,
    /// Call markers from which no call could be read, each an error (or a cut-off call) with
    /// its span: they count when this format found calls, or when no format found any.
    pub unread: Vec<(Item, std::ops::Range<usize>)>,
}

impl Out {
    /// A call whose arguments are JSON text, found at `span`: the span leaves the reply's text.
    pub(super) fn text_call(
        &mut self,
        name: &str,
        id: Option<Value>,
        args: &str,
        args_at: usize,
        span: std::ops::Range<usize>,
    ) {
        self.items.push(Item::Call(Raw {
            name: Some(name.to_owned()),
            id,
            args: Args::Text(args.to_owned()),
            args_at: Some(args_at),
            offset: span.start,
            ..Raw::default()
        }));
        self.cut.push(span);
    }

    /// A call that was cut off at `offset` (its tool when known): `message` says where.
    pub(super) fn cut_off(
        &mut self,
        tool: Option<String>,
        offset: usize,
        message: impl Into<String>,
    ) {
        self.items.push(Item::Incomplete(Incomplete {
            tool,
            id: None,
            offset,
            message: message.into(),
        }));
    }
}

/// What a decoder found, in reply order.
#[derive(Debug)]
pub(crate) enum Item {
    Call(Raw),
    Incomplete(Incomplete),
    Failed(Rejected),
}

impl Item {
    /// Where in the reply the item starts.
    pub(crate) fn offset(&self) -> usize {
        match self {
            Item::Call(raw) => raw.offset,
            Item::Incomplete(cut) => cut.offset,
            Item::Failed(rejected) => rejected.error.offset.unwrap_or(0),
        }
    }

    /// The item of a part of the reply that starts `by` bytes into it, its offsets moved
    /// there.
    pub(crate) fn shifted(mut self, by: usize) -> Item {
        match &mut self {
            Item::Call(raw) => {
                raw.offset += by;
                raw.args_at = raw.args_at.map(|at| at + by);
                for repair in &mut raw.repairs {
                    repair.offset = repair.offset.map(|o| o + by);
                }
            }
            Item::Incomplete(cut) => cut.offset += by,
            Item::Failed(rejected) => {
                let error = &mut rejected.error;
                if let Some(old) = error.offset {
                    // The message names the offset too (`… at byte 3`).
                    let at = format!(" at byte {old}");
                    if error.message.ends_with(&at) {
                        error.message.truncate(error.message.len() - at.len());
                        error.message.push_str(&format!(" at byte {}", old + by));
                    }
                    error.offset = Some(old + by);
                }
            }
        }
        self
    }

    pub(crate) fn failed(name: Option<String>, error: Error) -> Item {
        Item::Failed(Rejected {
            tool: name,
            id: None,
            parameters: None,
            error,
            violations: Vec::new(),
        })
    }
}

/// Whether the repairs say the text was cut off.
pub(crate) fn truncated(repairs: &[Repair], text: &str) -> bool {
    crate::repair::truncated(repairs, text)
}
