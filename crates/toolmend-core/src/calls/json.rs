//! What a reply gave, as JSON: one borrowing `Serialize` view per output type (the reply's
//! value, a call, an incomplete and a rejected call), written straight into records and
//! values by serde_json with no `Value` in between; [`Extracted::to_value`] and the stream's
//! events build their values from the same views.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

use super::{Call, Extracted, Incomplete, Rejected, Shape};

/// The value written for a reply: `{"calls", "text", "reasoning", "incomplete"}`, then
/// `rejected` for a reply that fails, and the reply's own `repairs` when asked for and any.
#[derive(Clone, Copy)]
pub(crate) struct ExtractedJson<'a> {
    pub found: &'a Extracted,
    pub shape: Shape,
    /// Add the calls that were found but cannot be used (a failed reply's value).
    pub rejected: bool,
    /// Add the reply's own repairs, when there are any (the packages' value).
    pub repairs: bool,
}

impl Serialize for ExtractedJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let found = self.found;
        let mut map = serializer.serialize_map(None)?;
        let shape = self.shape;
        map.serialize_entry(
            "calls",
            &Each(&found.calls, |call| CallJson { call, shape }),
        )?;
        map.serialize_entry("text", &found.text)?;
        map.serialize_entry("reasoning", &found.reasoning)?;
        map.serialize_entry("incomplete", &Each(&found.incomplete, IncompleteJson))?;
        if self.rejected {
            map.serialize_entry("rejected", &Each(&found.rejected, RejectedJson))?;
        }
        if self.repairs && !found.repairs.is_empty() {
            map.serialize_entry("repairs", &found.repairs)?;
        }
        map.end()
    }
}

/// One call in the chosen shape: native `{"tool", "parameters", "terminate"?, "id"?,
/// "repairs", "dropped"?}` (`repairs` always, an empty list when none: a caller reads
/// `call["repairs"]` without a check), or OpenAI's `{"id"?, "name", "arguments": "<JSON>"}`.
#[derive(Clone, Copy)]
pub(crate) struct CallJson<'a> {
    pub call: &'a Call,
    pub shape: Shape,
}

impl Serialize for CallJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let call = self.call;
        let mut map = serializer.serialize_map(None)?;
        match self.shape {
            Shape::Native => {
                map.serialize_entry("tool", &call.tool)?;
                map.serialize_entry("parameters", &call.parameters)?;
                if let Some(terminate) = call.terminate {
                    map.serialize_entry("terminate", &terminate)?;
                }
                if let Some(id) = &call.id {
                    map.serialize_entry("id", id)?;
                }
                map.serialize_entry("repairs", &call.repairs)?;
                if !call.dropped.is_empty() {
                    map.serialize_entry("dropped", &call.dropped)?;
                }
            }
            Shape::OpenAi => {
                if let Some(id) = &call.id {
                    map.serialize_entry("id", id)?;
                }
                map.serialize_entry("name", &call.tool)?;
                let text = serde_json::to_string(&call.parameters).unwrap_or_else(|_| "{}".into());
                map.serialize_entry("arguments", &text)?;
            }
        }
        map.end()
    }
}

/// `{"tool" (null when unknown), "id"?, "offset", "message"}`.
struct IncompleteJson<'a>(&'a Incomplete);

impl Serialize for IncompleteJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let cut = self.0;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("tool", &cut.tool)?;
        if let Some(id) = &cut.id {
            map.serialize_entry("id", id)?;
        }
        map.serialize_entry("offset", &(cut.offset as u64))?;
        map.serialize_entry("message", &cut.message)?;
        map.end()
    }
}

/// `{"tool" (null when unknown), "id"?, "parameters"?, "code", "message"}`.
struct RejectedJson<'a>(&'a Rejected);

impl Serialize for RejectedJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let rejected = self.0;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("tool", &rejected.tool)?;
        if let Some(id) = &rejected.id {
            map.serialize_entry("id", id)?;
        }
        if let Some(parameters) = &rejected.parameters {
            map.serialize_entry("parameters", parameters)?;
        }
        map.serialize_entry("code", rejected.error.code.as_str())?;
        map.serialize_entry("message", &rejected.error.message)?;
        map.end()
    }
}

/// The items of a slice, each serialized through the view `view` makes of it.
struct Each<'a, T, F>(&'a [T], F);

impl<'a, T, V: Serialize, F: Fn(&'a T) -> V> Serialize for Each<'a, T, F> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for item in self.0 {
            seq.serialize_element(&(self.1)(item))?;
        }
        seq.end()
    }
}

/// `view` as a `serde_json::Value`.
pub(crate) fn value_of(view: &impl Serialize) -> Value {
    crate::io::record::to_value(view)
}
