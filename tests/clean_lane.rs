//! The clean lane (crates/toolmend-core/src/args/mod.rs, `Mender::clean_lane`): an input that
//! is one valid JSON value as it stands is copied by the whole-value pass before any stage runs,
//! and where that pass stops, the parser takes up what it found. Compared here with the
//! repairing parser alone (`Mender::without_fast_path`, which has no lane) at the lane's edges:
//! white space and a byte order mark around the value, more after it, text the unquote stage
//! reads another way, and inputs one after another on one mender (what one leaves must not
//! reach the next). Then through the stream filter (`args`' path, where the value is written
//! in place), over lines ending in CRLF or nothing, empty lines, invalid UTF-8 and non-ASCII
//! bytes at every offset of a 64-byte block.

use toolmend_core::{Concat, Filter, FilterOptions, Mender, Options, Target};

mod common;
use common::outcome;

fn option_sets() -> Vec<Options> {
    vec![
        Options::default(),
        Options::for_tool_arguments(),
        Options {
            target: Target::Any,
            ..Options::default()
        },
        Options {
            concat: Concat::All,
            target: Target::Any,
            ..Options::default()
        },
        Options {
            strict: true,
            ..Options::default()
        },
        Options {
            max_nesting: 2,
            ..Options::default()
        },
    ]
}

/// Menders with the lane and without it, one pair per option set, kept from one input to the
/// next; panics at the first input whose outcome differs.
struct Compare(Vec<(Mender, Mender)>);

impl Compare {
    fn new() -> Compare {
        let pairs = option_sets()
            .into_iter()
            .map(|o| (Mender::new(o.clone()), Mender::new(o).without_fast_path()))
            .collect();
        Compare(pairs)
    }

    fn check(&mut self, input: &str) {
        for (lane, parser) in &mut self.0 {
            let (a, b) = (outcome(lane, input), outcome(parser, input));
            assert_eq!(a, b, "{:?} on {input:?}", lane.options());
        }
    }
}

/// Values the lane takes whole, and some it stops in.
const VALUES: [&str; 12] = [
    r#"{"a":1}"#,
    r#"{ "a" : [ 1 , {"b": "x"} ] , "c": null }"#,
    "{}",
    "[]",
    "[1, 2]",
    r#"[{"a": 1}]"#,
    r#"{"a": {"b": {"c": 1}}}"#,
    r#"{"s": "naïve → ünïcödé", "t": "\u00e9\n"}"#,
    r#"{"a": 1, "a": 2}"#,
    r#"{"a": 1,}"#,
    r#"{"a": tru}"#,
    r#"{"a": "x"#,
];

#[test]
fn the_clean_lane_writes_what_the_parser_writes_at_its_edges() {
    let before = ["", " ", "\t\n ", "\u{feff}", "\u{feff} ", "\u{c}"];
    let after = [
        "",
        " ",
        "\r",
        "\u{c}",
        " \t\n",
        "{}",
        r#" {"b":2}"#,
        "[3]",
        " x",
        ",",
        "}",
        "]",
        " // c",
        "\"",
        "1",
    ];
    let mut compare = Compare::new();
    for value in VALUES {
        for b in before {
            for a in after {
                compare.check(&format!("{b}{value}{a}"));
            }
        }
    }
    // Text that opens like JSON and that the unquote stage reads as something else: the pass
    // the lane left is dropped, not taken up over other text.
    for input in [
        r#"{""a"": 1}"#,
        r#"{ ""a"": 1}"#,
        r#"{""a"": """", ""b"": ""\""x\""""}"#,
        r#"{\"a\": 1}"#,
        r#"{ \"a\": 1}"#,
        r#"[\"a\", 1]"#,
        r#"[ \"a\", 1]"#,
        r#"[""]"#,
        r#"{"":""}"#,
        "[AB] {\"a\": 1}",
        "{\"a\": 1}\n```",
        "```json\n{\"a\": 1}\n```",
        "",
        " ",
        "\u{feff}",
    ] {
        compare.check(input);
    }
}

/// Each input right after one the lane stopped in (its pass pending for the parser) and after
/// one it took whole, on the same menders.
#[test]
fn what_the_clean_lane_leaves_does_not_reach_the_next_input() {
    let mut compare = Compare::new();
    let stops = [
        r#"{"a": 1} {"b": 2}"#,
        r#"{ ""a"": 1}"#,
        r#"{ \"a\": 1}"#,
        r#"{"a": tru"#,
        "{\"a\":1}x",
    ];
    for first in stops.iter().chain(&VALUES) {
        for second in stops.iter().chain(&VALUES) {
            compare.check(first);
            compare.check(second);
        }
    }
}

/// The lines of `stream` as the filter frames them: cut at `\n`, a `\r` before it dropped,
/// no last empty line.
fn framed(stream: &[u8]) -> Vec<&[u8]> {
    let mut lines: Vec<&[u8]> = stream.split(|&b| b == b'\n').collect();
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    lines
        .into_iter()
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .collect()
}

/// The filter's output over `stream`, with one thread, against each framed line mended by the
/// parser alone: the values of those that mend, a line each, and a failure for the others.
fn filter_matches_parser(stream: &[u8], options: Options) {
    let mut filter = Filter::new(FilterOptions {
        mend: options.clone(),
        ..FilterOptions::default()
    });
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let summary = filter.run(stream, None, &mut out, &mut err).unwrap();
    let mut parser = Mender::new(options).without_fast_path();
    let (mut expected, mut failed) = (Vec::new(), 0);
    for line in framed(stream) {
        match std::str::from_utf8(line).map_err(|_| ()).and_then(|text| {
            parser
                .mend(text)
                .map(|m| m.value().into_owned())
                .map_err(|_| ())
        }) {
            Ok(value) => {
                expected.extend_from_slice(value.as_bytes());
                expected.push(b'\n');
            }
            Err(()) => failed += 1,
        }
    }
    assert_eq!(
        String::from_utf8_lossy(&out),
        String::from_utf8_lossy(&expected),
        "on {:?}",
        String::from_utf8_lossy(stream)
    );
    assert_eq!(summary.failed, failed);
}

#[test]
fn the_filter_writes_what_the_parser_writes_over_line_endings_and_empty_lines() {
    for options in option_sets() {
        for ending in ["\n", "\r\n"] {
            let mut stream = String::new();
            for (i, value) in VALUES.iter().enumerate() {
                stream.push_str(value);
                stream.push_str(ending);
                if i % 3 == 0 {
                    stream.push_str(ending);
                    stream.push_str(" \t");
                    stream.push_str(ending);
                }
            }
            filter_matches_parser(stream.as_bytes(), options.clone());
            // The last line without its line ending.
            let last = stream.trim_end_matches(['\r', '\n']);
            filter_matches_parser(last.as_bytes(), options.clone());
            // A byte order mark at the start of the stream.
            filter_matches_parser(format!("\u{feff}{stream}").as_bytes(), options.clone());
        }
    }
}

/// Lines of every length around the pass's block widths (16, 32, 64), with a non-ASCII
/// character, an invalid UTF-8 byte, or a byte the pass stops at placed at every offset
/// inside a string.
#[test]
fn the_filter_writes_what_the_parser_writes_at_every_offset_of_a_block() {
    let inserts: [&[u8]; 8] = [
        "é".as_bytes(),
        "€".as_bytes(),
        "😀".as_bytes(),
        b"\xff",
        b"\xe2\x82",
        b"\xc3",
        b"\\n",
        b"\"",
    ];
    let mut stream = Vec::new();
    for len in [0usize, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 70, 130] {
        let plain: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
        for insert in inserts {
            for at in 0..=len {
                let mut line = br#"{"k":""#.to_vec();
                line.extend_from_slice(&plain[..at]);
                line.extend_from_slice(insert);
                line.extend_from_slice(&plain[at..]);
                line.extend_from_slice(br#"","n":[1,"x"]}"#);
                stream.extend_from_slice(&line);
                stream.push(b'\n');
            }
        }
        // The whole line exactly `len` bytes long, when it can be.
        if len >= 8 {
            let mut line = br#"{"k":""#.to_vec();
            line.extend_from_slice(&plain[..len - 8]);
            line.extend_from_slice(br#""}"#);
            assert_eq!(line.len(), len);
            stream.extend_from_slice(&line);
            stream.push(b'\n');
        }
    }
    for options in [Options::default(), Options::for_tool_arguments()] {
        filter_matches_parser(&stream, options);
    }
}
