//! A fixture file read: each line a case (its command, input, options and expected outcome),
//! its fields checked so that a misspelt one is an error rather than ignored.

use std::path::{Path, PathBuf};

use serde::de::{Deserialize, Deserializer};
use serde_json::Value;
use serde_json::value::RawValue;

use toolmend_core::{cut, object_members};

use super::{CASE_FIELDS, COMMANDS, Problem, SHOW_CHARS};

/// A fixture line's fields, in their order, each as its exact JSON text.
pub(super) struct Fields(pub(super) Vec<(String, Box<RawValue>)>);

impl<'de> Deserialize<'de> for Fields {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Fields, D::Error> {
        object_members(deserializer, "a JSON object (a fixture case)", true).map(Fields)
    }
}

impl Fields {
    pub(super) fn get(&self, key: &str) -> Option<&RawValue> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| &**v)
    }

    pub(super) fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }
}

/// One case of a fixture file.
pub(super) struct Case {
    /// 1-based line in its file.
    pub(super) line: usize,
    pub(super) fields: Fields,
    pub(super) name: Option<String>,
    pub(super) command: String,
    pub(super) options: Vec<String>,
    /// The input as it is shown in a report.
    pub(super) input_shown: String,
    /// The input as one `--input jsonl` line.
    pub(super) jsonl: String,
    /// The input text, for a case run as a whole document (`calls` with a text input).
    pub(super) whole: Option<String>,
}

/// A fixture file and its cases; `lines` keeps every line, to write the file back.
pub(super) struct Fixture {
    pub(super) path: PathBuf,
    pub(super) lines: Vec<String>,
    pub(super) trailing_newline: bool,
    pub(super) cases: Vec<Case>,
}

pub(super) fn load(path: &Path) -> Result<Fixture, Vec<Problem>> {
    let problem = |line: Option<usize>, message: String| Problem {
        location: match line {
            Some(line) => format!("{}:{line}", path.display()),
            None => path.display().to_string(),
        },
        message,
    };
    let bytes = std::fs::read(path).map_err(|e| vec![problem(None, e.to_string())])?;
    let text = String::from_utf8(bytes).map_err(|e| {
        vec![problem(
            None,
            format!("not UTF-8 (byte {})", e.utf8_error().valid_up_to()),
        )]
    })?;
    let lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let mut cases = Vec::new();
    let mut problems = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match parse_case(i + 1, line) {
            Ok(case) => cases.push(case),
            Err(message) => problems.push(problem(Some(i + 1), message)),
        }
    }
    if problems.is_empty() {
        Ok(Fixture {
            path: path.to_owned(),
            lines,
            trailing_newline: text.ends_with('\n'),
            cases,
        })
    } else {
        Err(problems)
    }
}

/// Reads one line into a case; the error says what is malformed.
pub(super) fn parse_case(line: usize, text: &str) -> Result<Case, String> {
    let fields: Fields =
        serde_json::from_str(text).map_err(|e| format!("not a fixture case: {e}"))?;
    for (key, _) in &fields.0 {
        if let Some(meant) = CASE_FIELDS
            .iter()
            .find(|f| **f != key && one_edit_apart(key, f))
        {
            return Err(format!(
                "the field {key:?} looks like a misspelt {meant:?}, which would go unchecked; a \
                 case reads: {}",
                CASE_FIELDS.join(", ")
            ));
        }
    }
    let string = |key: &str| -> Result<Option<String>, String> {
        fields
            .get(key)
            .map(|v| serde_json::from_str::<String>(v.get()))
            .transpose()
            .map_err(|_| format!("{key:?} must be a string"))
    };
    let name = string("name")?;
    let command = string("command")?.unwrap_or_else(|| "args".into());
    if !COMMANDS.contains(&command.as_str()) {
        return Err(format!(
            "unknown command {command:?}; expected one of: {}",
            COMMANDS.join(", ")
        ));
    }
    let options = fields
        .get("options")
        .map(|v| serde_json::from_str::<Vec<String>>(v.get()))
        .transpose()
        .map_err(|_| "\"options\" must be a list of strings".to_owned())?
        .unwrap_or_default();
    let input = fields
        .get("input")
        .ok_or("a case needs an \"input\"")?
        .get();
    let (jsonl, whole) = match input.as_bytes()[0] {
        b'"' => {
            let text: String = serde_json::from_str(input).map_err(|e| e.to_string())?;
            let jsonl = serde_json::json!({ "text": text }).to_string();
            (jsonl, (command == "calls").then_some(text))
        }
        b'{' => (input.to_owned(), None),
        _ => return Err("\"input\" must be a string (the raw text) or an object".into()),
    };
    if let Some(error) = fields.get("error") {
        let code = match error.get().as_bytes()[0] {
            b'{' => serde_json::from_str::<Value>(error.get())
                .ok()
                .and_then(|e| e.get("code").cloned()),
            _ => serde_json::from_str::<Value>(error.get()).ok(),
        };
        if !code.as_ref().is_some_and(Value::is_string) {
            return Err(
                "\"error\" must be an error code, or a whole error object with a \"code\"".into(),
            );
        }
    }
    // Fields that could never be compared make a case that passes whatever it gives.
    if fields.has("error") {
        if fields.has("expect") && command != "calls" {
            return Err(format!(
                "a case gives a value (\"expect\") or fails (\"error\"), not both: an {command} \
                 failure carries no value (only calls writes one with its error)"
            ));
        }
        if let Some(key) = ["repairs", "dropped"].into_iter().find(|k| fields.has(k)) {
            return Err(format!(
                "{key:?} describes a value, and a case that expects an \"error\" has none"
            ));
        }
    } else if fields.has("offset") {
        return Err("\"offset\" is the offset of an \"error\", and the case has none".into());
    }
    string("strict")?;
    for key in ["repairs", "dropped"] {
        if let Some(v) = fields.get(key)
            && !v.get().starts_with('[')
        {
            return Err(format!("{key:?} must be a list"));
        }
    }
    if let Some(v) = fields.get("offset") {
        serde_json::from_str::<u64>(v.get())
            .map_err(|_| "\"offset\" must be a byte offset (a whole number)".to_owned())?;
    }
    Ok(Case {
        line,
        name,
        command,
        options,
        input_shown: cut(input, SHOW_CHARS),
        jsonl,
        whole,
        fields,
    })
}

/// Whether `a` becomes `b` by one change, case aside: a letter added, dropped or replaced, or
/// two neighbours swapped (`repiars`, `expcet`, `Expect`, `repair`, `errors`).
pub(super) fn one_edit_apart(a: &str, b: &str) -> bool {
    let a: Vec<char> = a.chars().flat_map(char::to_lowercase).collect();
    let b: Vec<char> = b.chars().flat_map(char::to_lowercase).collect();
    let (short, long) = if a.len() <= b.len() {
        (&a, &b)
    } else {
        (&b, &a)
    };
    let start = short
        .iter()
        .zip(long.iter())
        .take_while(|(x, y)| x == y)
        .count();
    match long.len() - short.len() {
        0 if start == short.len() => true,
        0 => {
            let rest = start + 1;
            short[rest..] == long[rest..]
                || (rest < short.len()
                    && short[start] == long[rest]
                    && short[rest] == long[start]
                    && short[rest + 1..] == long[rest + 1..])
        }
        1 => short[start..] == long[start + 1..],
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_cases_say_why() {
        let err = |line: &str| parse_case(1, line).err().unwrap();
        assert!(err("[1]").contains("a JSON object"));
        assert!(err(r#"{"expect":{}}"#).contains("\"input\""));
        assert!(err(r#"{"input":"x","command":"nope"}"#).contains("unknown command"));
        assert!(err(r#"{"input":"x","options":"--strict"}"#).contains("list of strings"));
        assert!(err(r#"{"input":"x","error":{"message":"m"}}"#).contains("\"code\""));
        assert!(err(r#"{"input":"x","error":7}"#).contains("error code"));
        assert!(err(r#"{"input":"x","input":"y"}"#).contains("duplicate field"));
        assert!(err(r#"{"input":"x","error":"e","offset":-1}"#).contains("offset"));
        for (line, why) in [
            (r#"{"input":"x","expect":{},"error":"e"}"#, "not both"),
            (
                r#"{"command":"repair","input":"x","expect":1,"error":"e"}"#,
                "not both",
            ),
            (
                r#"{"input":"x","error":"e","repairs":[]}"#,
                "\"repairs\" describes",
            ),
            (
                r#"{"command":"calls","input":"x","error":"e","dropped":[]}"#,
                "\"dropped\" describes",
            ),
            (r#"{"input":"x","expect":{},"offset":3}"#, "has none"),
            (
                r#"{"input":"x","expect":{},"repair":[]}"#,
                "misspelt \"repairs\"",
            ),
            (r#"{"input":"x","expcet":{}}"#, "misspelt \"expect\""),
            (r#"{"input":"x","Expect":{}}"#, "misspelt \"expect\""),
            (
                r#"{"input":"x","expect":{},"offest":1}"#,
                "misspelt \"offset\"",
            ),
            (r#"{"input":"x","eror":"e"}"#, "misspelt \"error\""),
        ] {
            assert!(err(line).contains(why), "{line}: {}", err(line));
        }
        // The author's own fields are kept.
        assert!(parse_case(1, r#"{"input":"x","expect":{},"note":"n","ticket":4}"#).is_ok());
        // With its error, a calls case may give the value the failure record carries.
        assert!(
            parse_case(
                1,
                r#"{"command":"calls","input":"x","expect":{},"error":"e"}"#
            )
            .is_ok()
        );
    }
}
