//! One truth on real servers' transcripts (fixtures/server, recorded by
//! fixtures/server/record.py from llama-cpp-python's server and LiteLLM's proxy in front of
//! it): each whole response gives the same record through `toolmend calls` (the raw HTTP body
//! and the `openai` client's object) and through the library, and each stream the same `end`
//! through `calls --stream --input sse`, `--input jsonl` (its data lines, and the `openai`
//! client's chunks) and the library fed the SSE text split at random points. Each equals what
//! fixtures/server/expect.json holds (`TOOLMEND_BLESS=1` rewrites it: review the diff).
//! The Python and Node packages check the same expectations (python/tests,
//! node/test/server_transcripts.test.js).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use toolmend_core::calls::{
    Api, CallOptions, DeltaFraming, Deltas, Event, Prose, Shape, Stream, extract_message,
    extract_response,
};

mod common;
use common::stdout;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/server")
}

struct Transcript {
    name: String,
    /// The API a package has a helper for (`None`: Gemini's, read by `extract_message`).
    api: Option<Api>,
    /// The files, by what they hold: `whole` (raw HTTP body), `sse`, `client` and `chunks`
    /// (the `openai` client's).
    stem: PathBuf,
}

impl Transcript {
    fn file(&self, ext: &str) -> Option<String> {
        let path = self.stem.with_file_name(format!(
            "{}{ext}",
            self.stem.file_name().unwrap().to_str().unwrap()
        ));
        std::fs::read_to_string(path).ok()
    }
}

fn transcripts() -> Vec<Transcript> {
    let index: Value =
        serde_json::from_str(&std::fs::read_to_string(dir().join("transcripts.json")).unwrap())
            .unwrap();
    index
        .as_array()
        .unwrap()
        .iter()
        .map(|t| Transcript {
            name: t["name"].as_str().unwrap().to_owned(),
            api: match t["api"].as_str() {
                Some("anthropic") => Some(Api::Anthropic),
                Some("gemini") => None,
                _ => Some(Api::OpenAiChat),
            },
            stem: dir().join(t["name"].as_str().unwrap()),
        })
        .collect()
}

/// A record or `end` event as compared: no `event` or `line` key, no `original` (the text read
/// differs: a response, or the message a stream's chunks make up), no place in an error's
/// message.
fn normal(mut record: Value) -> Value {
    let map = record.as_object_mut().unwrap();
    map.remove("event");
    map.remove("line");
    // A jsonl line's own `id`.
    map.remove("id");
    if let Some(error) = map.get_mut("error").and_then(Value::as_object_mut) {
        error.remove("original");
        // Where a stream's error was found is the surface's own: a line of the CLI's input
        // (SSE and jsonl lines differ), the chunk a package's stream was given.
        if let Some(Value::String(message)) = error.get_mut("message")
            && let Some((place, rest)) = message.split_once(": ")
            && let Some(("line" | "chunk", number)) = place.split_once(' ')
            && number.bytes().all(|b| b.is_ascii_digit())
        {
            *message = rest.to_owned();
        }
    }
    record
}

fn cli(args: &[&str], input: &str) -> Vec<Value> {
    // `--records` for a whole reply; a stream writes its events (with the record as `end`) and
    // refuses `--records`.
    let records: &[&str] = if args.contains(&"--stream") {
        &[]
    } else {
        &["--records"]
    };
    let out = common::toolmend()
        .arg("calls")
        .args(args)
        .args(records)
        .write_stdin(input.as_bytes().to_vec())
        .output()
        .unwrap();
    stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn cli_whole(input: &str) -> Value {
    let records = cli(&[], input);
    assert_eq!(records.len(), 1, "{records:?}");
    normal(records[0].clone())
}

fn cli_stream(framing: &str, input: &str) -> Value {
    let events = cli(&["--stream", "--input", framing], input);
    let end = events.last().unwrap().clone();
    assert_eq!(end["event"], "end");
    normal(end)
}

/// The library's record of a whole response read as its API's.
fn library_whole(api: Option<Api>, text: &str) -> Value {
    let response: Value = serde_json::from_str(text).unwrap();
    let result = match api {
        Some(api) => extract_response(&response, api, 0, &CallOptions::default()),
        None => extract_message(&response, &CallOptions::default()),
    };
    let event = Event::End {
        result: Box::new(result),
        original: String::new(),
    };
    normal(event.to_value(Shape::Native))
}

/// The library's `end` for the SSE text fed in the pieces `cuts` makes.
fn library_stream(sse: &str, cuts: &[usize]) -> Value {
    let mut stream = Stream::new(CallOptions::default());
    let mut deltas = Deltas::new(DeltaFraming::Sse);
    let mut events = Vec::new();
    let mut from = 0;
    for &at in cuts.iter().chain([sse.len()].iter()) {
        if at < from || !sse.is_char_boundary(at) {
            continue;
        }
        match deltas.text(&sse[from..at], &mut stream) {
            Ok(more) => events.extend(more),
            Err(e) => events.extend(stream.abort(e)),
        }
        from = at;
    }
    match deltas.end(&mut stream) {
        Ok(more) => events.extend(more),
        Err(e) => events.extend(stream.abort(e)),
    }
    events.extend(stream.finish());
    let end = events.last().unwrap().to_value(Shape::Native);
    // The text and reasoning events, applied as docs/streaming.md says, give the end's.
    let (mut text, mut reasoning) = (String::new(), String::new());
    for event in &events {
        match event {
            Event::Text(delta) => text.push_str(delta),
            Event::Reasoning(delta) => reasoning.push_str(delta),
            Event::Corrected { field, value } => match field {
                Prose::Text => text = value.clone(),
                Prose::Reasoning => reasoning = value.clone(),
            },
            _ => {}
        }
    }
    let value = &end["value"];
    assert_eq!(text, value["text"].as_str().unwrap_or_default(), "{cuts:?}");
    assert_eq!(
        reasoning,
        value["reasoning"].as_str().unwrap_or_default(),
        "{cuts:?}"
    );
    normal(end)
}

/// The `data:` payloads of an SSE text, one a line (what `--input jsonl` reads).
fn data_lines(sse: &str) -> String {
    sse.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .filter(|d| *d != "[DONE]")
        .map(|d| format!("{d}\n"))
        .collect()
}

/// Random cut points (a fixed-seed LCG: the same every run).
fn cuts(len: usize, seed: u64) -> Vec<usize> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut out: Vec<usize> = (0..1 + seed as usize % 40)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) as usize % (len + 1)
        })
        .collect();
    out.sort_unstable();
    out
}

#[test]
fn every_surface_gives_the_recorded_truth() {
    let mut got: BTreeMap<String, Value> = BTreeMap::new();
    let mut disagree = Vec::new();
    for t in transcripts() {
        let mut check = |what: &str, value: Value, truth: &Value| {
            if &value != truth {
                disagree.push(format!(
                    "{} {what}:\n  {value}\n  expected (calls on the whole reply) {truth}",
                    t.name
                ));
            }
        };
        let whole = t.file(".json").expect("the whole response");
        let truth_whole = cli_whole(&whole);
        check("library whole", library_whole(t.api, &whole), &truth_whole);
        let line = serde_json::from_str::<Value>(&whole).unwrap().to_string() + "\n";
        let records = cli(&["--input", "jsonl"], &line);
        check(
            "CLI whole --input jsonl",
            normal(records[0].clone()),
            &truth_whole,
        );
        let mut truth = json!({ "whole": truth_whole });
        // The openai client asked the same, but the server's ids are new each time: its
        // objects have their own truth, `calls` on them.
        if let Some(client) = t.file(".client.json") {
            let truth_client = cli_whole(&client);
            check(
                "library whole, openai client object",
                library_whole(t.api, &client),
                &truth_client,
            );
            truth["client"] = truth_client;
        }
        let sse = t.file(".sse").expect("the stream");
        let truth_stream = cli_stream("sse", &sse);
        check(
            "CLI stream --input jsonl",
            cli_stream("jsonl", &data_lines(&sse)),
            &truth_stream,
        );
        if let Some(chunks) = t.file(".chunks.jsonl") {
            truth["chunks"] = cli_stream("jsonl", &chunks);
        }
        check(
            "CLI stream, CR line ends",
            cli_stream("sse", &sse.replace('\n', "\r")),
            &truth_stream,
        );
        for seed in 0..24 {
            check(
                &format!("library stream, random splits (seed {seed})"),
                library_stream(&sse, &cuts(sse.len(), seed)),
                &truth_stream,
            );
        }
        truth["stream"] = truth_stream;
        got.insert(t.name.clone(), truth);
    }
    assert!(disagree.is_empty(), "{}", disagree.join("\n"));
    let path = dir().join("expect.json");
    let got = Value::Object(got.into_iter().collect::<Map<_, _>>());
    if std::env::var_os("TOOLMEND_BLESS").is_some() {
        std::fs::write(&path, serde_json::to_string_pretty(&got).unwrap() + "\n").unwrap();
    }
    let expected: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(
        got, expected,
        "fixtures/server/expect.json (TOOLMEND_BLESS=1 rewrites it)"
    );
}
