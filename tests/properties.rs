//! Property tests of the pipeline, through the library API (no process per case):
//!
//! - any JSON object, encoded as a JSON string k times (k up to the default `--max-depth` of
//!   10), comes back as the same object, written as serde_json writes it, with an `unquote`
//!   repair of k layers; one layer more is `depth_exceeded`;
//! - n objects written one after another split into exactly those n with `--concat all`;
//! - whatever `repair` and `args` give for mangled JSON and for arbitrary text is valid JSON;
//! - the line filter writes exactly one record per input line for any byte stream: invalid
//!   UTF-8, `\r`, empty lines and a missing final newline included.
//!
//! The fuzz targets in `fuzz/` check the same invariants over far more inputs; these run in
//! `cargo test` (128 cases each, 10 to 15 s in a debug build).

use proptest::prelude::*;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use toolmend_core::{
    Concat, Filter, FilterOptions, Framing, Mender, Options, Target, Truncated, truncated,
};

/// Keys and strings: any text, with JSON's special characters made likely.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[a-z\"\\\\/\\n\\r\\t\u{0}-\u{1f}{}\\[\\]:,' `\u{2028}\u{e9}\u{1F600}]{0,12}",
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((text(), inner), 0..5)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

fn json_object() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::vec((text(), json_value()), 0..6).prop_map(|m| m.into_iter().collect())
}

/// Valid JSON syntax, numbers checked as text (toolmend keeps `1e400` as written).
fn is_json(text: &str) -> bool {
    // Generated values nest at most a few levels, well within serde_json's limit.
    let mut de = serde_json::Deserializer::from_str(text);
    Box::<RawValue>::deserialize(&mut de).is_ok() && de.end().is_ok()
}

fn encode(object: &Map<String, Value>, layers: u32) -> String {
    let mut text = serde_json::to_string(object).unwrap();
    for _ in 0..layers {
        text = serde_json::to_string(&text).unwrap();
    }
    text
}

/// Inputs `lines` framing cuts `data` into: one per `\n`, and the text after the last one.
fn line_count(data: &[u8]) -> usize {
    let newlines = data.iter().filter(|&&b| b == b'\n').count();
    newlines + usize::from(data.last().is_some_and(|&b| b != b'\n'))
}

/// Mangles JSON text the way models do: bytes cut, doubled or replaced by JSON's punctuation.
fn mangled() -> impl Strategy<Value = String> {
    let edit = (
        any::<prop::sample::Index>(),
        0..4u8,
        any::<prop::sample::Index>(),
    );
    (
        json_value(),
        prop::collection::vec(edit, 0..6),
        any::<bool>(),
    )
        .prop_map(|(value, edits, cut)| {
            let mut bytes = serde_json::to_string_pretty(&value).unwrap().into_bytes();
            const PUNCT: &[u8] = b"{}[]:,\"'`\\ \n#/*.";
            for (at, op, what) in edits {
                if bytes.is_empty() {
                    break;
                }
                let i = at.index(bytes.len());
                let b = *what.get(PUNCT);
                match op {
                    0 => {
                        bytes.remove(i);
                    }
                    1 => bytes.insert(i, b),
                    2 => bytes[i] = b,
                    _ => bytes.insert(i, bytes[i]),
                }
            }
            if cut && bytes.len() > 1 {
                bytes.truncate(bytes.len() / 2);
            }
            String::from_utf8_lossy(&bytes).into_owned()
        })
}

/// Text made of JSON tokens, tool-call markup and stray bytes in any order.
fn token_soup() -> impl Strategy<Value = String> {
    const TOKENS: &[&str] = &[
        "{",
        "}",
        "[",
        "]",
        ":",
        ",",
        "\"",
        "'",
        "`",
        "```",
        "```json\n",
        "\\\"",
        "\\\\",
        "\\u00",
        "\\ud800",
        "\n",
        "\r",
        "\t",
        " ",
        "a",
        "key",
        "1",
        "-",
        "1e400",
        ".5",
        "true",
        "None",
        "...",
        "//",
        "/*",
        "*/",
        "#",
        "(",
        ")",
        "\u{a0}",
        "\u{201c}",
        "\u{201d}",
        "\u{b4}",
        "\u{feff}",
        "<tool_call>",
        "[TOOL_CALLS]",
        "\"a\":1",
    ];
    prop::collection::vec(prop::sample::select(TOKENS), 0..24).prop_map(|t| t.concat())
}

fn run_filter(mend: Options, framing: Framing, data: &[u8]) -> Vec<Value> {
    let mut filter = Filter::new(FilterOptions {
        mend,
        framing,
        records: true,
        ..FilterOptions::default()
    });
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let summary = filter.run(data, None, &mut out, &mut err).unwrap();
    assert!(err.is_empty());
    let out = String::from_utf8(out).expect("records are UTF-8");
    let records: Vec<Value> = out
        .lines()
        .map(|line| {
            assert!(is_json(line), "a record is not JSON: {line}");
            // A number past f64's range would not fit a Value; the fields checked here do.
            serde_json::from_str(line).unwrap_or_else(
                |_| serde_json::json!({ "ok": line.starts_with(r#"{"ok":true"#), "line": null }),
            )
        })
        .collect();
    assert_eq!(summary.inputs as usize, records.len());
    records
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn an_object_encoded_k_times_comes_back(object in json_object(), k in 0u32..=10) {
        let input = encode(&object, k);
        let mut mender = Mender::new(Options::default());
        let mended = mender.mend(&input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
        // Key order, escapes and number text as serde_json wrote them.
        prop_assert_eq!(mended.value(), serde_json::to_string(&object).unwrap());
        prop_assert_eq!(mended.dropped().count(), 0);
        let kinds: Vec<_> = mended.repairs().iter().map(|r| (r.kind.as_str(), r.layers)).collect();
        if k == 0 {
            prop_assert!(kinds.is_empty(), "{:?}", kinds);
        } else {
            prop_assert_eq!(kinds, vec![("unquote", Some(k))]);
        }
        // The same through `repair`, which takes any value.
        let mut repair = Mender::new(Options { target: Target::Any, ..Options::default() });
        let mended = repair.mend(&input).unwrap();
        prop_assert_eq!(mended.value(), serde_json::to_string(&object).unwrap());
    }

    #[test]
    fn one_layer_past_max_depth_fails(object in json_object()) {
        let input = encode(&object, 11);
        let mut mender = Mender::new(Options::default());
        let err = mender.mend(&input).unwrap_err();
        prop_assert_eq!(err.code.as_str(), "depth_exceeded");
    }

    #[test]
    fn n_concatenated_objects_split_into_n(
        objects in prop::collection::vec(json_object(), 1..6),
        separators in prop::collection::vec(prop::sample::select(&["", " ", "\n", "\t", "  \r\n"][..]), 5),
    ) {
        let mut input = String::new();
        for (i, object) in objects.iter().enumerate() {
            if i > 0 {
                input.push_str(separators[i - 1]);
            }
            input.push_str(&serde_json::to_string(object).unwrap());
        }
        let mut all = Mender::new(Options { concat: Concat::All, ..Options::default() });
        let mended = all.mend(&input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
        let expected: Vec<Value> = objects.iter().cloned().map(Value::Object).collect();
        prop_assert_eq!(mended.value(), serde_json::to_string(&expected).unwrap());
        prop_assert!(mended.repairs().is_empty(), "{:?}", mended.repairs());
        // `--concat first` keeps the first and lists every other one in `dropped`.
        let mut first = Mender::new(Options::default());
        let mended = first.mend(&input).unwrap();
        prop_assert_eq!(mended.value(), serde_json::to_string(&objects[0]).unwrap());
        let dropped: Vec<String> = mended.dropped().map(str::to_owned).collect();
        let rest: Vec<String> = objects[1..].iter().map(|o| serde_json::to_string(o).unwrap()).collect();
        prop_assert_eq!(dropped, rest);
        let mut error = Mender::new(Options { concat: Concat::Error, ..Options::default() });
        let result = error.mend(&input);
        if objects.len() == 1 {
            prop_assert!(result.is_ok());
        } else {
            prop_assert_eq!(result.unwrap_err().code.as_str(), "concatenated");
        }
    }

    #[test]
    fn repair_output_is_json(input in prop_oneof![mangled(), token_soup()]) {
        for target in [Target::Any, Target::Object] {
            for concat in [Concat::First, Concat::All] {
                let mut mender = Mender::new(Options { target, concat, ..Options::default() });
                if let Ok(mended) = mender.mend(&input) {
                    let value = mended.value();
                    prop_assert!(is_json(&value), "{:?} gave {:?}", input, value);
                    for dropped in mended.dropped() {
                        prop_assert!(is_json(dropped), "{:?} dropped {:?}", input, dropped);
                    }
                    if target == Target::Object && concat == Concat::First {
                        prop_assert!(value.starts_with('{'), "not an object: {}", value);
                    }
                }
            }
        }
    }

    #[test]
    fn one_record_per_line_for_any_bytes(
        data in prop::collection::vec(
            prop_oneof![
                3 => any::<u8>(),
                2 => Just(b'\n'),
                1 => Just(b'\r'),
                1 => Just(b'"'),
                1 => Just(b'{'),
                1 => Just(b'}'),
                1 => Just(0xEF),
                1 => Just(0xBB),
                1 => Just(0xBF),
            ],
            0..200,
        )
    ) {
        let expected = line_count(&data);
        let any = Options { target: Target::Any, ..Options::default() };
        for (mend, framing) in [
            (Options::default(), Framing::Lines),
            (any.clone(), Framing::Lines),
            (Options::default(), Framing::Jsonl),
        ] {
            let records = run_filter(mend, framing, &data);
            prop_assert_eq!(records.len(), expected, "{:?}", data);
        }
        let records = run_filter(Options::default(), Framing::Lines, &data);
        for (i, record) in records.iter().enumerate() {
            if !record["line"].is_null() {
                prop_assert_eq!(&record["line"], &Value::from(i + 1));
            }
            prop_assert!(record["ok"].is_boolean());
        }
        // As a whole, any stream is one input.
        prop_assert_eq!(run_filter(any, Framing::Whole, &data).len(), 1);
    }

    #[test]
    fn lines_of_objects_with_crlf_and_blank_lines(
        objects in prop::collection::vec(prop::option::of(json_object()), 0..8),
        crlf in any::<bool>(),
    ) {
        let ending = if crlf { "\r\n" } else { "\n" };
        let mut data = String::new();
        for object in &objects {
            if let Some(object) = object {
                data.push_str(&serde_json::to_string(object).unwrap());
            }
            data.push_str(ending);
        }
        let records = run_filter(Options::default(), Framing::Lines, data.as_bytes());
        prop_assert_eq!(records.len(), objects.len());
        for (record, object) in records.iter().zip(&objects) {
            match object {
                Some(object) => {
                    prop_assert_eq!(&record["ok"], &Value::Bool(true));
                    prop_assert_eq!(&record["value"], &Value::Object(object.clone()));
                }
                None => prop_assert_eq!(&record["error"]["code"], "empty_input"),
            }
        }
    }
}

// Valid JSON given to `repair` (and objects given to `args`) comes out equal in value. The
// strings are made to tempt the repairs: JSON text with a quote or prose around it, fenced
// blocks, escaped JSON, and lone surrogates (valid JSON that `JSON.parse` reads), which
// serde_json cannot hold: they are generated as private-use characters (plane 15) and written
// as `\uD800`-style escapes, and mapped back before values are compared.

/// The placeholder of the UTF-16 surrogate `unit` (0xD800 to 0xDFFF).
fn placeholder(unit: u32) -> char {
    char::from_u32(0xF0000 + (unit - 0xD800)).unwrap()
}

/// Strings that look like JSON, or like something a repair would act on.
fn tempting_text() -> impl Strategy<Value = String> {
    let json = json_value()
        .prop_map(|v| serde_json::to_string(&v).unwrap())
        .boxed();
    let surrogate = (0xD800u32..0xE000).prop_map(placeholder).boxed();
    prop_oneof![
        text(),
        json.clone(),
        (json.clone(), text(), text()).prop_map(|(j, a, b)| format!("{a}{j}{b}")),
        json.clone().prop_map(|j| format!("\"{j}")),
        json.clone().prop_map(|j| format!("'{j}'")),
        (json.clone(), text()).prop_map(|(j, p)| format!("{p}```json\n{j}\n```{p}")),
        json.clone().prop_map(|j| {
            let escaped = serde_json::to_string(&j).unwrap();
            escaped[1..escaped.len() - 1].to_owned()
        }),
        // JSON text encoded once more: a string holding a string holding JSON.
        json.prop_map(|j| serde_json::to_string(&j).unwrap()),
        (text(), surrogate.clone(), text()).prop_map(|(a, s, b)| format!("{a}{s}{b}")),
        prop::collection::vec(surrogate, 1..4).prop_map(|s| s.into_iter().collect()),
    ]
    // A high surrogate just before a low one is a pair, not two lone halves.
    .prop_filter("no surrogate pair", |s| {
        let units: Vec<u32> = s.chars().map(|c| c as u32).collect();
        !units
            .windows(2)
            .any(|w| (0xF0000..0xF0400).contains(&w[0]) && (0xF0400..0xF0800).contains(&w[1]))
    })
}

fn tempting_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::Bool),
        1 => any::<i64>().prop_map(Value::from),
        1 => any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        4 => tempting_text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((tempting_text(), inner), 0..4)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

/// `value` as JSON text, compact or pretty, with its placeholders written as lone surrogate
/// escapes (upper or lower case hex).
fn written(value: &Value, pretty: bool, upper: bool) -> String {
    let text = if pretty {
        serde_json::to_string_pretty(value).unwrap()
    } else {
        serde_json::to_string(value).unwrap()
    };
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c as u32 {
            p @ 0xF0000..0xF0800 if upper => {
                out.push_str(&format!("\\u{:04X}", p - 0xF0000 + 0xD800))
            }
            p @ 0xF0000..0xF0800 => out.push_str(&format!("\\u{:04x}", p - 0xF0000 + 0xD800)),
            _ => out.push(c),
        }
    }
    out
}

/// toolmend's output as a value: lone surrogate escapes back to placeholders (pairs and every
/// other escape left to serde_json).
fn read_back(text: &str) -> Option<Value> {
    let bytes = text.as_bytes();
    let unit = |at: usize| {
        bytes
            .get(at..at + 6)
            .filter(|e| e.starts_with(b"\\u"))
            .and_then(|e| u32::from_str_radix(std::str::from_utf8(&e[2..]).ok()?, 16).ok())
    };
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            match unit(i) {
                Some(0xD800..=0xDBFF)
                    if unit(i + 6).is_some_and(|l| (0xDC00..0xE000).contains(&l)) =>
                {
                    out.push_str(&text[i..i + 12]);
                    i += 12;
                }
                Some(u @ 0xD800..=0xDFFF) => {
                    out.push(placeholder(u));
                    i += 6;
                }
                _ => {
                    out.push_str(&text[i..i + 2]);
                    i += 2;
                }
            }
            continue;
        }
        let c = text[i..].chars().next().unwrap();
        out.push(c);
        i += c.len_utf8();
    }
    serde_json::from_str(&out).ok()
}

/// What `repair` makes of a valid value: the value itself, except a string whose layers (each
/// a JSON string, JSON whitespace around) end in a whole object or array.
fn repair_expectation(value: &Value) -> Value {
    let mut current = value;
    let mut decoded;
    for _ in 0..10 {
        let Value::String(s) = current else { break };
        match serde_json::from_str::<Value>(s.trim_matches([' ', '\t', '\n', '\r'])) {
            Ok(inner @ (Value::Object(_) | Value::Array(_))) => return inner,
            Ok(inner @ Value::String(_)) => {
                decoded = inner;
                current = &decoded;
            }
            _ => break,
        }
    }
    value.clone()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn valid_json_comes_out_of_repair_equal(
        value in prop_oneof![tempting_value(), tempting_text().prop_map(Value::String)],
        pretty in any::<bool>(),
        upper in any::<bool>(),
    ) {
        let input = written(&value, pretty, upper);
        let expected = repair_expectation(&value);
        for strict in [false, true] {
            let mut repair = Mender::new(Options { target: Target::Any, strict, ..Options::default() });
            let mended = repair.mend(&input).unwrap_or_else(|e| panic!("{input:?} (strict {strict}): {e}"));
            let out = mended.value();
            prop_assert!(is_json(&out), "{:?} gave {:?}", input, out);
            prop_assert_eq!(read_back(&out), Some(expected.clone()), "{:?} gave {:?}", input, out);
            prop_assert_eq!(mended.dropped().count(), 0);
            let kinds: Vec<&str> = mended.repairs().iter().map(|r| r.kind.as_str()).collect();
            if expected == value {
                prop_assert!(kinds.is_empty(), "{:?}: {:?}", input, kinds);
            } else {
                prop_assert_eq!(kinds, vec!["unquote"], "{:?}", input);
            }
        }
        // `args` takes an object as it stands, lone surrogates and all.
        if value.is_object() {
            for strict in [false, true] {
                let mut args = Mender::new(Options { strict, ..Options::default() });
                let mended = args.mend(&input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
                prop_assert_eq!(read_back(&mended.value()), Some(value.clone()), "{:?}", input);
                prop_assert!(mended.repairs().is_empty(), "{:?}: {:?}", input, mended.repairs());
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Every proper prefix of an object (written compact or pretty, encoded 0 to 2 times) is
    /// cut off: `--truncated error` refuses it with `truncated`, for `args` and `repair`,
    /// while the default heals it and reports the healing.
    #[test]
    fn every_cut_of_an_object_is_truncated(
        object in json_object().prop_filter("not empty", |o| !o.is_empty()),
        layers in 0u32..3,
        pretty in any::<bool>(),
    ) {
        let mut text = if pretty {
            serde_json::to_string_pretty(&object).unwrap()
        } else {
            serde_json::to_string(&object).unwrap()
        };
        for _ in 0..layers {
            text = serde_json::to_string(&text).unwrap();
        }
        let cuts: Vec<usize> = (1..text.len()).filter(|&i| text.is_char_boundary(i)).collect();
        for target in [Target::Object, Target::Any] {
            let mut refuse = Mender::new(Options { target, truncated: Truncated::Error, ..Options::default() });
            let mut heal = Mender::new(Options { target, ..Options::default() });
            for &cut in cuts.iter().rev().take(120) {
                let prefix = &text[..cut];
                if prefix.trim().is_empty() {
                    continue;
                }
                match refuse.mend(prefix) {
                    Ok(m) => prop_assert!(false, "{:?} cut to {:?} gave {}", text, prefix, m.value()),
                    // A cut string holding nothing yet (`"`) is no arguments at all.
                    Err(e) if prefix.trim_matches(['"', '\\']).is_empty() => {
                        prop_assert!(matches!(e.code.as_str(), "truncated" | "empty_input"), "{:?}: {}", prefix, e);
                    }
                    Err(e) => prop_assert_eq!(e.code.as_str(), "truncated", "{:?}: {}", prefix, e),
                }
                if let Ok(m) = heal.mend(prefix) {
                    prop_assert!(truncated(m.repairs(), prefix), "{:?}: {:?}", prefix, m.repairs());
                }
            }
            prop_assert!(refuse.mend(&text).is_ok(), "{:?}", text);
        }
    }
}

/// Text made of call and reasoning markers, JSON's special characters and other text.
fn marker_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("<think>"),
        Just("</think>"),
        Just("[THINK]"),
        Just("[/THINK]"),
        Just("<tool_call>"),
        Just("</tool_call>"),
        Just("<|channel|>"),
        Just("<|message|>"),
        Just("<|end|>"),
        Just("<|call|>"),
        Just("<|start|>"),
        Just("[TOOL_CALLS]"),
        Just("<|python_tag|>"),
        Just("<function="),
        Just("</function>"),
        Just(">>>"),
        Just("functools["),
        Just("{\"name\": \"rm\", \"arguments\": {}}"),
        Just("\""),
        Just("\\"),
        Just("\n"),
        Just("}"),
        Just("]"),
        Just("x"),
    ];
    prop_oneof![
        any::<String>(),
        prop::collection::vec(piece, 0..10).prop_map(|pieces| pieces.concat()),
    ]
}

/// A call to `f` in several formats with `args` (a JSON object) as its arguments.
fn calls_with(args: &str) -> [String; 5] {
    [
        format!("<think>r</think>Sure. {{\"tool\": \"f\", \"parameters\": {args}}} Done."),
        format!("<tool_call>\n{{\"name\": \"f\", \"arguments\": {args}}}\n</tool_call>"),
        format!("[TOOL_CALLS][{{\"name\": \"f\", \"arguments\": {args}}}]"),
        format!("<|python_tag|>{{\"name\": \"f\", \"parameters\": {args}}}"),
        format!(
            "<|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json<|message|>{args}<|call|>"
        ),
    ]
}

/// The one call found in `reply`, its parameters written out.
fn one_call(reply: &str) -> Result<String, String> {
    let found = toolmend_core::calls::extract(reply, &toolmend_core::calls::CallOptions::default())
        .map_err(|f| format!("{reply:?}: {}", f.error))?;
    match found.calls.as_slice() {
        [call] if call.tool == "f" && call.repairs.is_empty() => {
            Ok(Value::Object(call.parameters.clone()).to_string())
        }
        _ => Err(format!("{reply:?}: {:?}", found.calls)),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    // A string parameter comes back byte for byte, whatever markers it
    // holds, in every format.
    #[test]
    fn a_string_parameter_with_markers_comes_back_exactly(s in marker_text()) {
        let args = serde_json::json!({ "s": s }).to_string();
        for reply in calls_with(&args) {
            prop_assert_eq!(one_call(&reply).map_err(TestCaseError::fail)?, args.clone());
        }
    }

    // A number's text is kept, whatever its size or spelling.
    #[test]
    fn numbers_keep_their_text(
        n in "-?(0|[1-9][0-9]{0,40})(\\.[0-9]{1,20})?([eE][+-]?[0-9]{1,4})?",
    ) {
        let args = format!("{{\"n\":{n},\"m\":[{n}]}}");
        for reply in calls_with(&args) {
            prop_assert_eq!(one_call(&reply).map_err(TestCaseError::fail)?, args.clone());
        }
        prop_assert_eq!(one_call(&format!("[f(n={n}, m=[{n}])]")).map_err(TestCaseError::fail)?, args);
    }
}
