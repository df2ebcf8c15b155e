//! The args pipeline through the library: `Mender` (default and `--strict`), and the line filter.
//!
//! - no panic;
//! - the value and every dropped value are valid JSON, the value an object;
//! - a JSON object as input comes out as the same value with no repairs (a duplicate key is
//!   merged the way serde_json merges it);
//! - under `--strict`, a success with no repairs and nothing dropped is input serde_json reads
//!   as the same value;
//! - the line filter writes exactly one record per input line, invalid UTF-8 included.

#![no_main]

use libfuzzer_sys::fuzz_target;
use toolmend_core::{Code, Framing, Mender, Options};

#[path = "common.rs"]
mod common;
use common::*;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let expected = parse(text).filter(serde_json::Value::is_object);
        for strict in [false, true] {
            let mut mender = Mender::new(Options {
                strict,
                ..Options::default()
            });
            let result = mender.mend(text);
            let mended = match result {
                Ok(mended) => mended,
                // Nesting deeper than `max_nesting` (1000) is refused, valid or not.
                Err(error) if error.code == Code::TooDeep && could_be_too_deep(text) => continue,
                Err(error) => {
                    assert!(
                        expected.is_none(),
                        "a JSON object failed (strict {strict}): {text:?}: {error}"
                    );
                    continue;
                }
            };
            let text_out = mended.value();
            json(&text_out, "the value");
            assert!(text_out.starts_with('{'), "not an object: {text_out}");
            let value = parse(&text_out);
            let mut dropped = 0;
            for d in mended.dropped() {
                json(d, "a dropped value");
                dropped += 1;
            }
            if let Some(expected) = &expected {
                assert_eq!(
                    value.as_ref(),
                    Some(expected),
                    "value changed (strict {strict}): {text:?}"
                );
                assert_eq!(dropped, 0, "dropped from a JSON object: {text:?}");
                assert!(
                    no_real_repairs(mended.repairs()),
                    "JSON object repaired: {text:?}: {:?}",
                    kinds(mended.repairs())
                );
            }
            if strict && no_real_repairs(mended.repairs()) && dropped == 0 && value.is_some() {
                let read = parse(trimmed(text));
                assert_eq!(
                    read, value,
                    "--strict accepted what serde_json reads otherwise: {text:?}"
                );
            }
        }
    }
    one_record_per_line(Options::default(), Framing::Lines, data);
});
