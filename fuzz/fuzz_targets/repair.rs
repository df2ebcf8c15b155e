//! `toolmend repair` through the library: any JSON value (`Target::Any`), with `--concat first`
//! and `--concat all`, and the line filter with `lines` and `jsonl` framing.
//!
//! - no panic;
//! - the value and every dropped value are valid JSON;
//! - a JSON value as input comes out as the same value with no repairs; the one documented
//!   exception is a string whose layers (each a valid JSON string) end in a whole object or
//!   array, which is unquoted to it;
//! - `--concat all` gives an array of the value and the dropped values of `--concat first`;
//! - exactly one record per input line.

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolmend_core::{Code, Concat, Framing, Mender, Options, Target};

#[path = "common.rs"]
mod common;
use common::*;

/// The object or array that the layers of a valid JSON string end in, if they do.
fn unquotes_to(value: &Value) -> Option<Value> {
    let mut current = value.clone();
    for _ in 0..10 {
        let Value::String(text) = &current else {
            return None;
        };
        current = parse(text.trim_matches([' ', '\t', '\n', '\r']))?;
        if current.is_object() || current.is_array() {
            return Some(current);
        }
    }
    None
}

fn options(concat: Concat) -> Options {
    Options {
        target: Target::Any,
        concat,
        ..Options::default()
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let expected = parse(text);
        let mut first = Mender::new(options(Concat::First));
        let mut all = Mender::new(options(Concat::All));
        match (first.mend(text), all.mend(text)) {
            (Ok(first), Ok(all)) => {
                let first_text = first.value();
                json(&first_text, "the value");
                let mut parts = vec![first_text.to_string()];
                for d in first.dropped() {
                    json(d, "a dropped value");
                    parts.push(d.to_owned());
                }
                let array = all.value();
                json(&array, "the --concat all array");
                assert_eq!(
                    array,
                    format!("[{}]", parts.join(",")),
                    "--concat all: {text:?}"
                );
                assert_eq!(all.dropped().count(), 0);
                if let Some(expected) = &expected {
                    let value = parse(&first_text).unwrap_or_else(|| {
                        panic!("{text:?} gave a number past f64's range: {first_text}")
                    });
                    // The one exception: a string whose layers, each a valid JSON string,
                    // end in a whole object or array is unquoted to it.
                    let unquoted = first.repairs().first().map(|r| r.kind.as_str())
                        == Some("unquote")
                        && unquotes_to(expected).as_ref() == Some(&value);
                    if !unquoted {
                        assert_eq!(&value, expected, "value changed: {text:?}");
                        assert!(
                            no_real_repairs(first.repairs()),
                            "valid JSON repaired: {text:?}: {:?}",
                            kinds(first.repairs())
                        );
                    }
                    assert_eq!(parts.len(), 1, "valid JSON split: {text:?}");
                }
            }
            (Err(a), Err(b)) => {
                assert_eq!(a.code, b.code, "--concat changed the error: {text:?}");
                // Nesting deeper than `max_nesting` (1000) is refused, valid or not.
                let too_deep = a.code == Code::TooDeep && could_be_too_deep(text);
                assert!(
                    expected.is_none() || too_deep,
                    "valid JSON failed: {text:?}: {a}"
                );
            }
            (a, b) => panic!(
                "--concat first and all disagree on {text:?}: {:?} / {:?}",
                a.map(|m| m.value().into_owned()),
                b.map(|m| m.value().into_owned())
            ),
        }
    }
    one_record_per_line(options(Concat::First), Framing::Lines, data);
    one_record_per_line(options(Concat::All), Framing::Jsonl, data);
});
