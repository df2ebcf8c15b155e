//! Checks shared by the fuzz targets. Every target asserts; a failed assertion is a crash that
//! libFuzzer saves.

#![allow(dead_code)]

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use toolmend_core::{Filter, FilterOptions, Framing, Options, Repair};

/// Parses one JSON value with no nesting limit (toolmend allows 1000 levels; serde_json's
/// default stops at 128). `None` when `text` is not exactly one JSON value.
pub fn parse(text: &str) -> Option<Value> {
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    let value = Value::deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(value)
}

/// `text` must be one JSON value. Checked as a raw value, so the syntax is checked without
/// converting numbers (`1e400` is valid JSON past f64's range, and toolmend keeps its text).
pub fn json(text: &str, what: &str) {
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    let valid = Box::<RawValue>::deserialize(&mut de).is_ok() && de.end().is_ok();
    assert!(valid, "{what} is not valid JSON: {text:?}");
}

/// `text` as a value; it must be valid JSON. toolmend builds serde_json with
/// `arbitrary_precision`, so a number past f64's range is a value too (its exponent written
/// `e+`: compare number text through toolmend's own output, not through this).
pub fn value(text: &str, what: &str) -> Option<Value> {
    json(text, what);
    parse(text)
}

/// Whether a `too_deep` refusal of `text` can be right: every level of nesting needs a bracket,
/// a `(` (a tuple), a `:` (a member whose `{` was left out) or a call format's `<` or `=`, and
/// a `\u` escape may decode to any of them. With no more of those than `max_nesting` (1000),
/// `too_deep` is a bug in the nesting count, not a limit.
pub fn could_be_too_deep(text: &str) -> bool {
    let bytes = text.as_bytes();
    let levels = bytes
        .iter()
        .filter(|b| matches!(b, b'{' | b'[' | b'(' | b':' | b'<' | b'='))
        .count();
    let escapes = bytes.windows(2).filter(|w| w == b"\\u").count();
    levels + escapes > 1000
}

/// Repairs that valid JSON may still get: a duplicate key is merged (last value wins, at the
/// first key's place), as serde_json's map also does.
pub fn no_real_repairs(repairs: &[Repair]) -> bool {
    repairs.iter().all(|r| r.kind.as_str() == "duplicate_key")
}

pub fn kinds(repairs: &[Repair]) -> Vec<&'static str> {
    repairs.iter().map(|r| r.kind.as_str()).collect()
}

/// What toolmend strips before parsing: a byte order mark, then ASCII whitespace.
pub fn trimmed(text: &str) -> &str {
    text.strip_prefix('\u{FEFF}').unwrap_or(text).trim_ascii()
}

/// How many inputs `lines` framing cuts `data` into: one per `\n`, plus the text after the last.
pub fn line_count(data: &[u8]) -> usize {
    let newlines = data.iter().filter(|&&b| b == b'\n').count();
    newlines + usize::from(!data.is_empty() && data.last() != Some(&b'\n'))
}

/// Drives the line filter over `data` with records on: exactly one record per input line, in
/// order, each a JSON object with `ok` and the line number.
pub fn one_record_per_line(mend: Options, framing: Framing, data: &[u8]) {
    let mut filter = Filter::new(FilterOptions {
        mend,
        framing,
        records: true,
        ..FilterOptions::default()
    });
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let summary = filter
        .run(data, None, &mut out, &mut err)
        .expect("in-memory I/O");
    assert!(err.is_empty(), "with records nothing goes to stderr");
    let out = std::str::from_utf8(&out).expect("records are UTF-8");
    let records: Vec<&str> = out.lines().collect();
    let expected = line_count(data);
    assert_eq!(records.len(), expected, "records for {data:?}: {out}");
    assert_eq!(summary.inputs as usize, expected);
    let mut failed = 0;
    for (i, record) in records.iter().enumerate() {
        let record = value(record, "a record").unwrap_or_else(|| {
            // A record holding a number past f64's range: its fields are checked as text.
            let mut de = serde_json::Deserializer::from_str(record);
            de.disable_recursion_limit();
            let raw: std::collections::HashMap<String, Box<RawValue>> =
                Deserialize::deserialize(&mut de).expect("a record is an object");
            serde_json::json!({
                "line": parse(raw["line"].get()),
                "ok": parse(raw["ok"].get()),
                "value": raw.get("value").map(|v| v.get()),
                "error": raw.get("error").and_then(|e| parse(e.get())),
            })
        });
        assert_eq!(record["line"], (i + 1) as u64, "record {i}: {record}");
        match record["ok"] {
            Value::Bool(true) => {
                assert!(record.get("value").is_some(), "{record}");
            }
            Value::Bool(false) => {
                failed += 1;
                assert!(record["error"]["code"].is_string(), "{record}");
            }
            _ => panic!("record without ok: {record}"),
        }
    }
    assert_eq!(summary.failed, failed);
}
