//! What a case gave, read from the record the command wrote for it.

use serde_json::Value;
use serde_json::value::RawValue;

use super::fixture::Fields;

/// What a case gave: a value (with its repairs and dropped values) or an error, each field as
/// the JSON text it would have in a fixture.
#[derive(Debug)]
pub(super) enum CaseResult {
    Value {
        value: String,
        repairs: String,
        dropped: Option<String>,
    },
    Error {
        code: String,
        offset: Option<u64>,
        message: String,
        /// The whole error object.
        raw: String,
        /// The value a failure record may carry (`calls`: the calls found, the rejected ones).
        value: Option<String>,
    },
}

/// A record as the filters write it, its value and lists kept as their exact text.
#[derive(serde::Deserialize)]
pub(super) struct RecordLine {
    pub(super) ok: bool,
    #[serde(default)]
    pub(super) value: Option<Box<RawValue>>,
    #[serde(default)]
    pub(super) repairs: Option<Box<RawValue>>,
    #[serde(default)]
    pub(super) dropped: Option<Box<RawValue>>,
    #[serde(default)]
    pub(super) error: Option<Box<RawValue>>,
}

#[derive(serde::Deserialize)]
pub(super) struct RecordLineError {
    pub(super) code: String,
    #[serde(default)]
    pub(super) message: String,
    #[serde(default)]
    pub(super) offset: Option<u64>,
}

impl CaseResult {
    pub(super) fn from_record(line: &str) -> Result<CaseResult, String> {
        let record: RecordLine =
            serde_json::from_str(line).map_err(|e| format!("unreadable record ({e}): {line}"))?;
        if record.ok {
            Ok(CaseResult::Value {
                value: record
                    .value
                    .map_or_else(|| "null".into(), |v| v.get().to_owned()),
                repairs: record
                    .repairs
                    .map_or_else(|| "[]".into(), |v| v.get().to_owned()),
                dropped: record
                    .dropped
                    .map(|d| d.get().to_owned())
                    .filter(|d| d != "[]"),
            })
        } else {
            let raw = record.error.ok_or("a failure record without an error")?;
            let error: RecordLineError = serde_json::from_str(raw.get())
                .map_err(|e| format!("unreadable error ({e}): {line}"))?;
            Ok(CaseResult::Error {
                code: error.code,
                offset: error.offset,
                message: error.message,
                raw: raw.get().to_owned(),
                value: record.value.map(|v| v.get().to_owned()),
            })
        }
    }

    /// `"ok"` or the error code, as `strict` is written.
    pub(super) fn strict_text(&self) -> String {
        match self {
            CaseResult::Value { .. } => "\"ok\"".into(),
            CaseResult::Error { code, .. } => Value::from(code.as_str()).to_string(),
        }
    }

    /// The outcome fields of a blessed case, as (field, JSON text), in the form `case` uses.
    pub(super) fn fields(&self, case: &Fields) -> Vec<(&'static str, String)> {
        match self {
            CaseResult::Value {
                value,
                repairs,
                dropped,
            } => {
                let mut fields = vec![("expect", value.clone())];
                if let Some(dropped) = dropped {
                    fields.push(("dropped", dropped.clone()));
                }
                fields.push(("repairs", repairs.clone()));
                fields
            }
            CaseResult::Error {
                code,
                offset,
                raw,
                value,
                ..
            } => {
                let whole = case.get("error").is_some_and(|e| e.get().starts_with('{'));
                let mut fields = Vec::new();
                if let Some(value) = value.as_ref().filter(|_| case.has("expect")) {
                    fields.push(("expect", value.clone()));
                }
                if whole {
                    fields.push(("error", raw.clone()));
                } else {
                    fields.push(("error", Value::from(code.as_str()).to_string()));
                }
                if let Some(offset) = offset.filter(|_| !whole || case.has("offset")) {
                    fields.push(("offset", offset.to_string()));
                }
                fields
            }
        }
    }
}
