//! Text and reasoning stream as they arrive: `calls::Stream` gives `text` and `reasoning`
//! events while the reply is still coming, holding back only what may be the start of a
//! marker; where the whole reply decides otherwise (a `</think>` with no opening one), a
//! `corrected` event sets what was shown, so that a consumer applying the events ends with
//! `calls`' text and reasoning.

use serde_json::Value;
use toolmend_core::calls::{CallOptions, Event, Stream, extract};

/// A consumer's view: the text and reasoning shown, applying each event as docs/streaming.md
/// says (`text`/`reasoning` add their delta, `corrected` replaces its field).
#[derive(Default, Debug)]
struct Shown {
    text: String,
    reasoning: String,
}

impl Shown {
    fn apply(&mut self, event: &Event) {
        let value = event.to_value(toolmend_core::calls::Shape::Native);
        let field = |v: &Value, k: &str| v[k].as_str().unwrap_or_default().to_owned();
        match value["event"].as_str() {
            Some("text") => self.text.push_str(&field(&value, "delta")),
            Some("reasoning") => self.reasoning.push_str(&field(&value, "delta")),
            Some("corrected") => match value["field"].as_str() {
                Some("text") => self.text = field(&value, "value"),
                Some("reasoning") => self.reasoning = field(&value, "value"),
                other => panic!("corrected names {other:?}"),
            },
            _ => {}
        }
    }
}

/// Feeds `reply` a byte at a time (it is ASCII); the view before `finish`, and after.
fn byte_by_byte(reply: &str) -> (Shown, Shown, Vec<Event>) {
    let mut stream = Stream::new(CallOptions::default());
    let mut shown = Shown::default();
    let mut events = Vec::new();
    for i in 0..reply.len() {
        for event in stream.feed(&reply[i..i + 1]) {
            shown.apply(&event);
            events.push(event);
        }
    }
    let before = Shown {
        text: shown.text.clone(),
        reasoning: shown.reasoning.clone(),
    };
    for event in stream.finish() {
        shown.apply(&event);
        events.push(event);
    }
    (before, shown, events)
}

/// What `calls` gives for the whole reply.
fn one_shot(reply: &str) -> (String, String) {
    let found = extract(reply, &CallOptions::default()).unwrap();
    (
        found.text.unwrap_or_default(),
        found.reasoning.unwrap_or_default(),
    )
}

#[test]
fn plain_text_fed_a_byte_at_a_time_is_shown_before_the_end() {
    // No `f` (`functools` and `function call<|role_sep|>` are markers: an `f` waits for the
    // next byte), no `<`, `[`, `{` or backtick: every byte but white space is shown at once.
    let reply = "The capital city in Norway is Oslo. It lies by the sea, \
                 and about 700,000 people live there.\n";
    let mut stream = Stream::new(CallOptions::default());
    let mut shown = Shown::default();
    for i in 0..reply.len() {
        let before = shown.text.len();
        for event in stream.feed(&reply[i..i + 1]) {
            shown.apply(&event);
        }
        // Each chunk that ends a word is shown right after it (nothing here starts a marker;
        // the white space before the next word waits for it).
        if !reply.as_bytes()[i].is_ascii_whitespace() {
            assert_eq!(shown.text, reply[..=i], "after byte {i}");
            assert!(shown.text.len() > before);
        }
    }
    // All but the white space at the end, which `calls` trims.
    assert_eq!(shown.text, reply.trim_end());
    for event in stream.finish() {
        shown.apply(&event);
    }
    assert_eq!(shown.text, one_shot(reply).0);
}

#[test]
fn text_before_a_possible_marker_is_shown_and_the_marker_held() {
    let (before, after, _) =
        byte_by_byte("Checking the weather in <b>Oslo</b>. 2 < 3 and {x} is fine. <tool_");
    // `<tool_` may become `<tool_call>`: held; the rest is shown.
    assert_eq!(
        before.text,
        "Checking the weather in <b>Oslo</b>. 2 < 3 and {x} is fine."
    );
    assert_eq!(
        (after.text, after.reasoning),
        one_shot("Checking the weather in <b>Oslo</b>. 2 < 3 and {x} is fine. <tool_")
    );
}

#[test]
fn reasoning_in_think_tags_is_shown_as_it_arrives() {
    let reply = "<think>The user wants Oslo's weather. I know it.</think>\n\nIt is sunny in Oslo.";
    let mut stream = Stream::new(CallOptions::default());
    let mut shown = Shown::default();
    let mut seen_mid_thought = false;
    for i in 0..reply.len() {
        for event in stream.feed(&reply[i..i + 1]) {
            shown.apply(&event);
        }
        if reply[..=i].ends_with("Oslo's weather.") {
            assert_eq!(shown.reasoning, "The user wants Oslo's weather.");
            assert_eq!(shown.text, "");
            seen_mid_thought = true;
        }
    }
    assert!(seen_mid_thought);
    assert_eq!(shown.reasoning, "The user wants Oslo's weather. I know it.");
    assert_eq!(shown.text, "It is sunny in Oslo.");
    for event in stream.finish() {
        shown.apply(&event);
    }
    let (text, reasoning) = one_shot(reply);
    assert_eq!((shown.text, shown.reasoning), (text, reasoning));
}

#[test]
fn server_reasoning_is_shown_as_it_arrives() {
    let mut stream = Stream::new(CallOptions::default());
    let mut shown = Shown::default();
    for piece in ["The user ", "wants ", "the weather."] {
        for event in stream.feed_reasoning(piece) {
            shown.apply(&event);
        }
    }
    assert_eq!(shown.reasoning, "The user wants the weather.");
    for event in stream.feed("Sunny.") {
        shown.apply(&event);
    }
    assert_eq!(shown.text, "Sunny.");
    for event in stream.finish() {
        shown.apply(&event);
    }
    assert_eq!(shown.reasoning, "The user wants the weather.");
    assert_eq!(shown.text, "Sunny.");
}

#[test]
fn a_late_close_with_no_open_turns_the_text_shown_into_reasoning() {
    let reply = "The user asks about Oslo. I will answer directly.</think>It is sunny in Oslo.";
    let (before, after, events) = byte_by_byte(reply);
    // The start was shown as text while nothing told otherwise ...
    let kind = |e: &Event| e.to_value(toolmend_core::calls::Shape::Native)["event"].clone();
    let corrected = events.iter().position(|e| kind(e) == "corrected");
    let mut first_view = Shown::default();
    events[..corrected.expect("a corrected event")]
        .iter()
        .for_each(|e| first_view.apply(e));
    assert_eq!(
        first_view.text,
        "The user asks about Oslo. I will answer directly."
    );
    // ... and once the close came, it was corrected: before the end already.
    assert_eq!(
        before.reasoning,
        "The user asks about Oslo. I will answer directly."
    );
    assert_eq!(before.text, "It is sunny in Oslo.");
    let (text, reasoning) = one_shot(reply);
    assert_eq!((after.text, after.reasoning), (text, reasoning));
}

#[test]
fn text_before_a_call_is_shown_before_the_call_ends() {
    let reply = "Let me check.\n<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}</tool_call>";
    let (before, after, _) = byte_by_byte(reply);
    assert_eq!(before.text, "Let me check.");
    assert_eq!((after.text, after.reasoning), one_shot(reply));
}

#[test]
fn a_reply_that_may_be_one_quoted_string_waits_for_what_follows_the_quote() {
    // One JSON string holding a call: `calls` reads what it holds; nothing was shown.
    let quoted = r#""<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>""#;
    let (before, after, events) = byte_by_byte(quoted);
    assert_eq!((before.text.as_str(), before.reasoning.as_str()), ("", ""));
    assert!(
        events.iter().all(|e| !matches!(e, Event::Corrected { .. })),
        "{events:#?}"
    );
    assert_eq!(after.text, "");
    // Prose that starts with a quotation is shown once the quote is followed by more.
    let (before, _, _) = byte_by_byte(r#""Hello," she said. "Bye.""#);
    assert_eq!(before.text, r#""Hello," she said. "Bye.""#);
}

#[test]
fn reasoning_in_brackets_streams_too() {
    let reply = "[THINK]Need the time.[/THINK]Sure, one moment.";
    let (before, after, _) = byte_by_byte(reply);
    assert_eq!(before.reasoning, "Need the time.");
    assert_eq!(before.text, "Sure, one moment.");
    assert_eq!((after.text, after.reasoning), one_shot(reply));
}

#[test]
fn events_come_in_the_order_of_the_reply() {
    let mut stream = Stream::new(CallOptions::default());
    assert_eq!(
        stream.feed("<think>Need the "),
        [Event::Reasoning("Need the".into())]
    );
    assert_eq!(
        stream.feed("time.</think>It is "),
        [
            Event::Reasoning(" time.".into()),
            Event::Text("It is".into())
        ]
    );
    let mut stream = Stream::new(CallOptions::default());
    assert_eq!(stream.feed("A plan. "), [Event::Text("A plan.".into())]);
    assert_eq!(
        stream.feed("</think>Done."),
        [
            Event::Corrected {
                field: toolmend_core::calls::Prose::Text,
                value: String::new()
            },
            Event::Reasoning("A plan.".into()),
            Event::Text("Done.".into())
        ]
    );
}

/// Pieces of replies that exercise what is held back and corrected.
const PIECES: &[&str] = &[
    "Hello",
    " there",
    " ",
    "\n",
    "\n\n",
    "é✓",
    "<think>",
    "</think>",
    "[THINK]",
    "[/THINK]",
    "{\"a\": 1}",
    "{x}",
    "[1]",
    "{",
    "}",
    "```json\n",
    "```",
    "<|im_end|>",
    "<tool_call>",
    "</tool_call>",
    "{\"name\": \"f\", \"arguments\": {}}",
    "\"",
    "functools",
    "f",
    "<",
    "<b>",
    "[TOOL_CALLS]",
    "<|channel|>",
    "to=functions.f",
    "<|message|>",
];

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    /// Any mix of them, split anywhere: the events, applied, give `calls`' text and reasoning.
    #[test]
    fn applied_events_give_what_calls_gives(
        picks in proptest::collection::vec(0..PIECES.len(), 0..14),
        cuts in proptest::collection::vec(0usize..400, 0..8),
    ) {
        let reply: String = picks.iter().map(|&i| PIECES[i]).collect();
        let mut at: Vec<usize> = cuts.into_iter().map(|c| c % (reply.len() + 1)).filter(|&c| reply.is_char_boundary(c)).collect();
        at.sort_unstable();
        at.push(reply.len());
        let mut stream = Stream::new(CallOptions::default());
        let mut shown = Shown::default();
        let mut from = 0;
        for &to in &at {
            for event in stream.feed(&reply[from..to]) {
                shown.apply(&event);
            }
            from = to;
        }
        for event in stream.finish() {
            shown.apply(&event);
        }
        let (text, reasoning) = match extract(&reply, &CallOptions::default()) {
            Ok(found) => (found.text, found.reasoning),
            Err(failure) => failure.extracted.map_or((None, None), |f| (f.text, f.reasoning)),
        };
        proptest::prop_assert_eq!(
            (shown.text, shown.reasoning),
            (text.unwrap_or_default(), reasoning.unwrap_or_default()),
            "{:?} at {:?}", reply, at
        );
    }
}
