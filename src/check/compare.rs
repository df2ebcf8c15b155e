//! A case's expectation against what it gave: the fields that differ, each shown with where the
//! JSON first differs, and the line `--bless` writes instead.

use std::fmt::Write as _;
use std::io::{self, Write};

use serde_json::Value;

use std::path::Path;

use serde_json::value::RawValue;
use toolmend_core::{Concat, Mender, Options, Target, cut};

use super::case_result::CaseResult;
use super::fixture::Case;
use super::{ALLOWED_IN_STRICT, OUTCOME_FIELDS, SHOW_CHARS};

/// What differs between a case and its outcome, one entry per field.
pub(super) fn compare(case: &Case, got: &CaseResult, strict: Option<&CaseResult>) -> Vec<String> {
    let mut mismatches = Vec::new();
    let fields = &case.fields;
    match (fields.get("expect"), fields.get("error"), got) {
        (None, None, _) => mismatches.push(
            "the case has no expectation (\"expect\" or \"error\"); run with --bless to record one"
                .into(),
        ),
        (
            Some(expect),
            None,
            CaseResult::Value {
                value,
                repairs,
                dropped,
            },
        ) => {
            if let Some(diff) = json_text_diff(expect.get(), value) {
                mismatches.push(format!(
                    "expect:\n    expected {}\n    got      {}\n    {diff}",
                    clipped(expect.get()),
                    clipped(value)
                ));
            }
            let want_dropped = fields.get("dropped").map_or("[]", RawValue::get);
            let got_dropped = dropped.as_deref().unwrap_or("[]");
            if let Some(diff) = json_text_diff(want_dropped, got_dropped) {
                mismatches.push(format!(
                    "dropped:\n    expected {}\n    got      {}\n    {diff}",
                    clipped(want_dropped),
                    clipped(got_dropped)
                ));
            }
            if let Some(want) = fields.get("repairs")
                && let Some(diff) = json_text_diff(want.get(), repairs)
            {
                mismatches.push(format!(
                    "repairs:\n    expected {}\n    got      {}\n    {diff}",
                    clipped(want.get()),
                    clipped(repairs)
                ));
            }
        }
        (Some(expect), None, CaseResult::Error { .. }) => mismatches.push(format!(
            "expect:\n    expected {}\n    got      an error (below)",
            clipped(expect.get())
        )),
        (_, Some(want), CaseResult::Value { value, .. }) => mismatches.push(format!(
            "error:\n    expected {}\n    got      a value: {}",
            clipped(want.get()),
            clipped(value)
        )),
        (
            expect,
            Some(want),
            CaseResult::Error {
                code,
                offset,
                raw,
                value,
                ..
            },
        ) => {
            if want.get().starts_with('{') {
                if let Some(diff) = json_text_diff(want.get(), raw) {
                    mismatches.push(format!(
                        "error:\n    expected {}\n    got      {}\n    {diff}",
                        clipped(want.get()),
                        clipped(raw)
                    ));
                }
            } else {
                let want: String = serde_json::from_str(want.get()).unwrap_or_default();
                if want != *code {
                    mismatches.push(format!(
                        "error:\n    expected {want:?}\n    got      {code:?}"
                    ));
                }
            }
            if let Some(want_offset) = fields.get("offset") {
                let got_offset = offset.map_or_else(|| "(none)".into(), |o| o.to_string());
                if want_offset.get() != got_offset {
                    mismatches.push(format!(
                        "offset:\n    expected {}\n    got      {got_offset}",
                        want_offset.get()
                    ));
                }
            }
            // The value written with the error (`calls`: the calls found, the rejected ones).
            if let Some(expect) = expect {
                let got = value.as_deref().unwrap_or("(none)");
                if let Some(diff) = json_text_diff(expect.get(), got) {
                    mismatches.push(format!(
                        "expect (the value written with the error):\n    expected {}\n    got      {}\n    {diff}",
                        clipped(expect.get()),
                        clipped(got)
                    ));
                }
            }
        }
    }
    if let (Some(want), Some(strict)) = (fields.get("strict"), strict) {
        let have = strict.strict_text();
        if want.get() != have {
            mismatches.push(format!(
                "strict (the outcome under --strict):\n    expected {}\n    got      {have}",
                want.get()
            ));
        }
        if let Some(problem) = strict_rule(got, strict) {
            mismatches.push(problem);
        }
    }
    mismatches
}

/// An input that needed a repair must fail under `--strict`; one that needed none must pass.
pub(super) fn strict_rule(got: &CaseResult, strict: &CaseResult) -> Option<String> {
    let CaseResult::Value { repairs, value, .. } = got else {
        return None;
    };
    let mut list: Vec<Value> = serde_json::from_str(repairs).unwrap_or_default();
    // A call's own repairs (`calls`) count as the record's.
    if let Ok(Value::Object(found)) = serde_json::from_str::<Value>(value)
        && let Some(Value::Array(calls)) = found.get("calls")
    {
        for call in calls {
            if let Some(Value::Array(own)) = call.get("repairs") {
                list.extend(own.iter().cloned());
            }
        }
    }
    let needs_repair = list
        .iter()
        .any(|r| !ALLOWED_IN_STRICT.contains(&r["kind"].as_str().unwrap_or("")));
    let strict_ok = matches!(strict, CaseResult::Value { .. });
    (needs_repair == strict_ok).then(|| {
        format!(
            "strict rule: the repairs {} {}, but --strict gave {}",
            clipped(repairs),
            if needs_repair {
                "change the grammar so --strict must fail"
            } else {
                "are all allowed under --strict so it must pass"
            },
            strict.strict_text()
        )
    })
}

pub(super) fn write_failure(
    out: &mut dyn Write,
    path: &Path,
    case: &Case,
    got: &CaseResult,
    mismatches: &[String],
) -> io::Result<()> {
    let mut text = format!("FAIL {}:{}", path.display(), case.line);
    if let Some(name) = &case.name {
        let _ = write!(text, " {name}");
    }
    let _ = write!(text, "\n  command: {}", case.command);
    for option in &case.options {
        let _ = write!(text, " {option}");
    }
    let _ = write!(text, "\n  input:   {}", case.input_shown);
    for mismatch in mismatches {
        let _ = write!(text, "\n  {mismatch}");
    }
    if let CaseResult::Error {
        code,
        offset,
        message,
        ..
    } = got
    {
        let at = offset.map_or_else(String::new, |o| format!(" at byte {o}"));
        let _ = write!(text, "\n  the error: {code}{at}: {message}");
    }
    writeln!(out, "{text}\n")
}

/// Shows JSON text in a report, cut when long.
pub(super) fn clipped(text: &str) -> String {
    cut(text, SHOW_CHARS)
}

/// Whether two JSON texts hold the same value (key order inside objects aside).
pub(super) fn same_json(a: &str, b: &str) -> bool {
    match (
        serde_json::from_str::<Value>(a),
        serde_json::from_str::<Value>(b),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// `text` without whitespace between tokens, written the way the pipeline writes values
/// (numbers and escapes kept). Text that is not clean JSON is left as it is.
pub(super) fn compact(text: &str) -> String {
    let mut mender = Mender::new(Options {
        target: Target::Any,
        concat: Concat::Error,
        strict: true,
        ..Options::default()
    });
    match mender.mend(text) {
        // Any repair (an unquoted string, a merged key) would change the value itself.
        Ok(mended) if mended.repairs().is_empty() => mended.value().into_owned(),
        _ => text.to_owned(),
    }
}

/// `None` when the expected and the actual JSON text are the same value written the same way
/// (whitespace aside); else where they first differ.
pub(super) fn json_text_diff(expected: &str, got: &str) -> Option<String> {
    let (expected, got) = (compact(expected), compact(got));
    if expected == got {
        return None;
    }
    let parsed = (
        serde_json::from_str::<Value>(&expected),
        serde_json::from_str::<Value>(&got),
    );
    if let (Ok(want), Ok(have)) = parsed
        && let Some(diff) = value_diff("$", &want, &have)
    {
        return Some(format!("first difference: {diff}"));
    }
    // The same value written differently: a number's or an escape's spelling.
    let at = expected
        .bytes()
        .zip(got.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    let at = (0..=at)
        .rev()
        .find(|&i| expected.is_char_boundary(i) && got.is_char_boundary(i))
        .unwrap_or(0);
    // Show a little of what comes before, so the place can be found.
    let from = expected[..at]
        .char_indices()
        .rev()
        .nth(11)
        .map_or(0, |(i, _)| i);
    Some(format!(
        "the text differs at character {}: expected {}, got {} (numbers and escapes are compared as written)",
        expected[..at].chars().count(),
        cut(&expected[from..], at - from + 30),
        cut(&got[from..], at - from + 30)
    ))
}

/// The first place where two values differ, as `PATH: what`.
pub(super) fn value_diff(path: &str, want: &Value, have: &Value) -> Option<String> {
    match (want, have) {
        (Value::Object(w), Value::Object(h)) => {
            for (key, w_value) in w {
                let child = child_path(path, key);
                match h.get(key) {
                    None => return Some(format!("{child}: missing (expected {})", short(w_value))),
                    Some(h_value) => {
                        if let Some(diff) = value_diff(&child, w_value, h_value) {
                            return Some(diff);
                        }
                    }
                }
            }
            if let Some((key, h_value)) = h.iter().find(|(k, _)| !w.contains_key(*k)) {
                return Some(format!(
                    "{}: not expected (got {})",
                    child_path(path, key),
                    short(h_value)
                ));
            }
            let (w_keys, h_keys): (Vec<_>, Vec<_>) = (w.keys().collect(), h.keys().collect());
            (w_keys != h_keys).then(|| {
                format!(
                    "{path}: the keys are in another order: expected {w_keys:?}, got {h_keys:?}"
                )
            })
        }
        (Value::Array(w), Value::Array(h)) => {
            for (i, (w_item, h_item)) in w.iter().zip(h).enumerate() {
                if let Some(diff) = value_diff(&format!("{path}[{i}]"), w_item, h_item) {
                    return Some(diff);
                }
            }
            (w.len() != h.len())
                .then(|| format!("{path}: expected {} items, got {}", w.len(), h.len()))
        }
        _ if want == have => None,
        // The same number written another way (`10.50` and `10.5`).
        (Value::Number(w), Value::Number(h))
            if w.as_f64().is_some() && w.as_f64() == h.as_f64() =>
        {
            Some(format!(
                "{path}: expected {}, got {} (numbers and escapes are compared as written)",
                short(want),
                short(have)
            ))
        }
        _ => Some(format!(
            "{path}: expected {}, got {}",
            short(want),
            short(have)
        )),
    }
}

pub(super) fn child_path(path: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && !key.starts_with(|c: char| c.is_ascii_digit())
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        format!("{path}.{key}")
    } else {
        format!("{path}[{}]", Value::from(key))
    }
}

pub(super) fn short(value: &Value) -> String {
    cut(&value.to_string(), 80)
}

/// The line of a blessed case, or `None` when its expectations already hold.
pub(super) fn bless_line(
    case: &Case,
    outcome: &CaseResult,
    strict: Option<&CaseResult>,
) -> Option<String> {
    let mut new_fields = outcome.fields(&case.fields);
    if let Some(strict) = strict {
        new_fields.push(("strict", strict.strict_text()));
    }
    let mut fields: Vec<(String, String)> = case
        .fields
        .0
        .iter()
        .filter(|(key, _)| {
            !OUTCOME_FIELDS.contains(&key.as_str()) || new_fields.iter().any(|(k, _)| k == key)
        })
        .map(|(k, v)| (k.clone(), v.get().to_owned()))
        .collect();
    for (key, text) in new_fields {
        if let Some(field) = fields.iter_mut().find(|(k, _)| k == key) {
            // Keep the text as written when it already says the same.
            let same = match key {
                "expect" | "dropped" | "repairs" => json_text_diff(&field.1, &text).is_none(),
                _ => same_json(&field.1, &text),
            };
            if !same {
                field.1 = text;
            }
            continue;
        }
        let rank = OUTCOME_FIELDS.iter().position(|k| *k == key);
        let after = fields.iter().rposition(|(k, _)| {
            let field_rank = OUTCOME_FIELDS.iter().position(|o| o == k);
            k == "input" || field_rank.is_some_and(|r| Some(r) < rank)
        });
        let at = after.map_or(fields.len(), |i| i + 1);
        fields.insert(at, (key.to_owned(), text));
    }
    let unchanged = fields.len() == case.fields.0.len()
        && fields
            .iter()
            .zip(&case.fields.0)
            .all(|((k, v), (k0, v0))| k == k0 && v == v0.get());
    if unchanged {
        return None;
    }
    let body: Vec<String> = fields
        .iter()
        .map(|(k, v)| format!("{}:{v}", Value::from(k.as_str())))
        .collect();
    Some(format!("{{{}}}", body.join(",")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_at_the_first_difference() {
        let diff = json_text_diff(r#"{"a": [1, {"b": 2}]}"#, r#"{"a":[1,{"b":3}]}"#).unwrap();
        assert!(diff.contains("$.a[1].b: expected 2, got 3"), "{diff}");
        let diff = json_text_diff(r#"{"a":1}"#, r#"{"a":1,"my key":2}"#).unwrap();
        assert!(diff.contains(r#"$["my key"]: not expected"#), "{diff}");
        let diff = json_text_diff(r#"{"a":1,"b":2}"#, r#"{"b":2,"a":1}"#).unwrap();
        assert!(diff.contains("another order"), "{diff}");
        // Numbers are compared by their text, as toolmend writes them.
        let diff = json_text_diff(r#"{"a":1.50}"#, r#"{"a":1.5}"#).unwrap();
        assert!(diff.contains("$.a: expected 1.50, got 1.5"), "{diff}");
        // The same value written differently: where the text differs.
        let diff = json_text_diff(r#"{"a":"\u0041"}"#, r#"{"a":"A"}"#).unwrap();
        assert!(diff.contains("character 6"), "{diff}");
        assert_eq!(json_text_diff("[1, 2]", "[1,2]"), None);
        // A string that holds JSON is not unquoted by the comparison.
        assert!(json_text_diff(r#""{\"a\":1}""#, r#"{"a":1}"#).is_some());
    }

    #[test]
    fn strict_rule_ties_repairs_to_the_strict_outcome() {
        let value = |repairs: &str| CaseResult::Value {
            value: "{}".into(),
            repairs: repairs.into(),
            dropped: None,
        };
        let failed = CaseResult::Error {
            code: "invalid_json".into(),
            offset: Some(6),
            message: String::new(),
            raw: String::new(),
            value: None,
        };
        let ok = value("[]");
        let comma = r#"[{"kind":"trailing_comma","offset":6}]"#;
        let unquote = r#"[{"kind":"unquote","layers":1}]"#;
        assert_eq!(strict_rule(&value(comma), &failed), None);
        assert_eq!(strict_rule(&value(unquote), &ok), None);
        assert_eq!(strict_rule(&value("[]"), &ok), None);
        assert!(
            strict_rule(&value(comma), &ok)
                .unwrap()
                .contains("must fail")
        );
        assert!(
            strict_rule(&value(unquote), &failed)
                .unwrap()
                .contains("must pass")
        );
        // An input that failed anyway says nothing about repairs.
        assert_eq!(strict_rule(&failed, &ok), None);
    }
}
