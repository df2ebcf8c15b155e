//! A key written again is revised, as soon as it is read or at the end.

use super::*;

/// Feeds `reply` one character at a time: the events given while feeding, and those of
/// `finish`.
fn per_char(options: &CallOptions, reply: &str) -> (Vec<Event>, Vec<Event>) {
    let mut stream = Stream::new(options.clone()).with_arguments_step(1);
    let mut fed = Vec::new();
    for (at, c) in reply.char_indices() {
        fed.extend(stream.feed(&reply[at..at + c.len_utf8()]));
    }
    (fed, stream.finish())
}

/// The `revised` events' (index, path).
fn revised(events: &[Event]) -> Vec<(usize, &str)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Revised { index, path, .. } => Some((*index, path.as_str())),
            _ => None,
        })
        .collect()
}

fn tool_call(arguments: &str) -> String {
    format!("<tool_call>{{\"name\": \"set\", \"arguments\": {arguments}}}</tool_call>")
}

/// A key written again after its value was shown: `revised` names it as soon as the repeat is
/// read (before its new value), the call shows no more `arguments`, and `call_end` has the
/// last value with a `duplicate_key` repair.
#[test]
fn a_repeated_key_is_revised_as_soon_as_it_is_read() {
    let options = CallOptions::default();
    for (arguments, repeat, path) in [
        (r#"{"a": 1, "b": 2, "a": 3}"#, r#", "a""#, "/a"),
        (r#"{"o": {"k": 1, "j": 2, "k": 3}}"#, r#", "k""#, "/o/k"),
        (
            r#"{"l": [{"q": "x", "q": "y"}], "z": 1}"#,
            r#", "q""#,
            "/l/0/q",
        ),
        // The same value: the stream cannot know it will be.
        (r#"{"a": 1, "b": 2, "a": 1}"#, r#", "a""#, "/a"),
        (
            r#"{"s": "first", "n": 0, "s": "second", "s": "third"}"#,
            r#", "s""#,
            "/s",
        ),
        // The arguments key itself: all of the parameters.
        (r#"{"a": 1}, "arguments": {"a": 2}"#, r#", "arguments""#, ""),
    ] {
        let reply = tool_call(arguments);
        // Up to the repeated key's closing quote, a character at a time.
        let cut = reply.rfind(repeat).unwrap() + repeat.len();
        let mut stream = Stream::new(options.clone()).with_arguments_step(1);
        let mut events = Vec::new();
        for (at, c) in reply[..cut].char_indices() {
            events.extend(stream.feed(&reply[at..at + c.len_utf8()]));
        }
        assert_eq!(revised(&events), [(0, path)], "{reply}: {events:#?}");
        let at = events
            .iter()
            .position(|e| matches!(e, Event::Revised { .. }))
            .unwrap();
        assert!(
            events[..at]
                .iter()
                .any(|e| matches!(e, Event::Arguments { .. })),
            "{reply}: revised before anything was shown"
        );
        let mut rest = Vec::new();
        for (at, c) in reply[cut..].char_indices() {
            rest.extend(stream.feed(&reply[cut + at..cut + at + c.len_utf8()]));
        }
        rest.extend(stream.finish());
        assert!(revised(&rest).is_empty(), "{reply}: {rest:#?}");
        assert!(
            rest.iter().all(|e| !matches!(e, Event::Arguments { .. })),
            "{reply}: arguments after revised: {rest:#?}"
        );
        let Some(Event::CallEnd { call, .. }) =
            rest.iter().find(|e| matches!(e, Event::CallEnd { .. }))
        else {
            panic!("{reply}: no call_end: {rest:#?}");
        };
        assert!(
            call.repairs
                .iter()
                .any(|r| r.kind == toolmend_core::RepairKind::DuplicateKey),
            "{reply}: {call:?}"
        );
        let event = serde_json::to_value(&events[at]).unwrap();
        assert_eq!(event["event"], "revised");
        assert_eq!(event["path"], path);
        assert!(
            event["reason"].as_str().unwrap().contains("again"),
            "{event}"
        );
    }
}

/// When the stream had stopped reading a call before the repeat (a part it could not vouch
/// for), the repeat is known at the end: `revised` then comes in `finish`, before `call_end`,
/// for each shown value the final call does not keep, and for nothing else.
#[test]
fn a_key_repeated_after_a_repair_is_revised_at_the_end() {
    let options = CallOptions::default();
    for (arguments, want) in [
        (
            r#"{"city": "Oslo", "confirm": "YESty": "Oslo", "confirm": "YES"}"#,
            vec![(0, "/confirm")],
        ),
        (r#"{"a": 1, "b": 'x', "a": 2}"#, vec![(0, "/a")]),
        (r#"{"o": {"k": 1, "x": 'y', "k": 2}}"#, vec![(0, "/o/k")]),
        // The same value again: nothing shown changes.
        (r#"{"a": 1, "b": tru, "a": 1}"#, vec![]),
        // The arguments key itself, after a slip in the call object: all of the parameters.
        (r#"{"a": 1}, 'x': 1, "arguments": {"a": 2}"#, vec![(0, "")]),
    ] {
        let reply = tool_call(arguments);
        let (fed, end) = per_char(&options, &reply);
        assert!(revised(&fed).is_empty(), "{reply}: {fed:#?}");
        assert!(
            fed.iter().any(|e| matches!(e, Event::Arguments { .. })),
            "{reply}"
        );
        assert_eq!(revised(&end), want, "{reply}: {end:#?}");
        let call_end = end
            .iter()
            .position(|e| matches!(e, Event::CallEnd { .. }))
            .unwrap();
        assert!(
            end[..call_end]
                .iter()
                .filter(|e| matches!(e, Event::Revised { .. }))
                .count()
                == want.len(),
            "{reply}: revised after call_end"
        );
    }
}

/// No `revised` for what is no repeat (a key inside a string's text, the same key in sibling
/// objects or in two calls), nor for a repeated key whose first value was never shown.
#[test]
fn no_revised_without_a_repeat_that_was_shown() {
    let options = CallOptions::default();
    for reply in [
        tool_call(r#"{"a": 1, "b": "then \"a\": 2, \"b\": 3", "c": "{\"a\": 4}"}"#),
        tool_call(r#"{"x": {"k": 1}, "y": {"k": 2}, "k": 3}"#),
        tool_call(r#""{\"a\": 1, \"b\": \"\\\"a\\\": 2\"}""#),
        r#"[TOOL_CALLS][{"name": "set", "arguments": {"a": 1}}, {"name": "set", "arguments": {"a": 2}}]"#.to_owned(),
    ] {
        let (fed, end) = per_char(&options, &reply);
        assert!(
            fed.iter().any(|e| matches!(e, Event::Arguments { .. })),
            "{reply}"
        );
        assert!(revised(&fed).is_empty() && revised(&end).is_empty(), "{reply}: {fed:#?}");
    }
    // Shown: `{}` (after `{"a`, its key not ended), then the rest in one chunk: the repeated
    // key was never shown.
    let reply = tool_call(r#"{"a": 1, "b": 2, "a": 3}"#);
    let cut = reply.find("{\"a\"").unwrap() + 3;
    let mut stream = Stream::new(options.clone()).with_arguments_step(1);
    let mut events = stream.feed(&reply[..cut]);
    assert!(
        rebuilt(&events, 0).iter().any(|(p, _)| p.is_empty()),
        "{events:#?}"
    );
    events.extend(stream.feed(&reply[cut..]));
    events.extend(stream.finish());
    assert!(revised(&events).is_empty(), "{events:#?}");
    // Whole: nothing shown, nothing revised.
    let mut stream = Stream::new(options).with_arguments_step(1);
    let mut events = stream.feed(&reply);
    events.extend(stream.finish());
    assert!(revised(&events).is_empty(), "{events:#?}");
}

/// A call a server streams (`feed_call`) whose arguments repeat a key.
#[test]
fn a_repeated_key_in_a_server_call_is_revised() {
    let mut stream = Stream::new(CallOptions::default()).with_arguments_step(1);
    let mut events = stream.feed_call(0, Some("call_1"), Some("set"), "");
    for piece in ["{\"a\"", ": 1, ", "\"b\": 2", ", \"a\"", ": 3}"] {
        events.extend(stream.feed_call(0, None, None, piece));
    }
    assert_eq!(revised(&events), [(0, "/a")], "{events:#?}");
    events.extend(stream.finish());
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::CallEnd { call, .. } if call.parameters["a"] == 3)),
        "{events:#?}"
    );
}

/// Arguments whose keys come from a few names (so they repeat, at the top and nested), with
/// values the stream can vouch for and slips it cannot (single quotes, a bare word, a
/// missing comma), so a repeat is read as it comes or only known at the end.
fn repeating_arguments() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        (0..20u8).prop_map(|n| n.to_string()),
        "[a-c]{0,3}".prop_map(|s| format!("\"{s}\"")),
        Just("true".to_owned()),
        Just("'q'".to_owned()),
        Just("tru".to_owned()),
        Just("\"x\\\"a\\\": 1\"".to_owned()),
    ];
    let value = leaf.prop_recursive(2, 12, 4, |inner| {
        prop_oneof![
            prop::collection::vec(("[abk]", inner.clone()), 0..4).prop_map(|members| {
                let members: Vec<String> = members
                    .into_iter()
                    .map(|(k, v)| format!("\"{k}\": {v}"))
                    .collect();
                format!("{{{}}}", members.join(", "))
            }),
            prop::collection::vec(inner, 0..3).prop_map(|items| format!("[{}]", items.join(", "))),
        ]
    });
    prop::collection::vec(("[abk]", value, prop::bool::weighted(0.05)), 1..6).prop_map(|members| {
        let mut out = String::from("{");
        for (i, (k, v, no_comma)) in members.iter().enumerate() {
            if i > 0 {
                out.push_str(if *no_comma { " " } else { ", " });
            }
            out.push_str(&format!("\"{k}\": {v}"));
        }
        out.push('}');
        out
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Repeated keys in every position, fed a character at a time and split at random: the
    /// same checks as the fixtures' (a shown value contradicted only under an earlier
    /// `revised`, which needs a `duplicate_key` repair).
    #[test]
    fn repeated_keys_are_revised_or_kept(
        arguments in repeating_arguments(),
        encoded in any::<bool>(),
        seeds in prop::collection::vec(any::<prop::sample::Index>(), 1..6),
    ) {
        let arguments = if encoded { Value::from(arguments).to_string() } else { arguments };
        let input = tool_call(&arguments);
        let case = CallsCase { name: "generated".into(), input: input.clone(), options: CallOptions::default() };
        let expected = extract(&input, &case.options);
        let bounds = boundaries(&input);
        let chars: Vec<&str> = bounds.windows(2).map(|w| &input[w[0]..w[1]]).collect();
        check(&case, "one character at a time", &run(&case.options, &chars), &expected);
        let mut cuts: Vec<usize> = seeds.iter().map(|s| bounds[s.index(bounds.len())]).collect();
        cuts.sort_unstable();
        check(&case, &format!("split at {cuts:?}"), &run(&case.options, &split_at(&input, &cuts)), &expected);
    }
}

/// Replies the calls fuzz target found where a call the stream never announced (its JSON
/// stopped being read before its name) came before one it showed, of the same tool: the
/// shown call's `call_end` must be the call that keeps what it showed, not the first one of
/// its tool (each failed before: "the final parameters contradict").
#[test]
fn an_unannounced_call_of_the_same_tool_does_not_take_a_shown_calls_end() {
    for json in [
        // Command R list: the first get_time call is never announced (its JSON breaks before its arguments close), the second is.
        r##""<|RT_ACTION|>[\n {\"tool_call_id\": \"0\", \"tool_name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}},\n {\"tool_call_id\": \"1\", \"tool_name\": \"get_time\", \"parameters\": {\"tzallfunctools, \"tool_name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}},\n {\"tool_call_id\": \"1\", \"tool_name\": \"get_time\", \"parameters\": {\"tz\": \"UTC\"}}\n]<|E\": \"UTC\"}}\n]<|END_ACTION|>""##,
        // a Responses object with two get_weather calls, the first in a broken item.
        r##""{\"id\": \"resp_1\", \"object\": \"response\", \"created_at\": 1, \"status\": \"completed\", \"model\": \"gpt-4.1\", \"oc_2\", \"call_id\": \"call_9\", \"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\":\\\"Rome\\\"}\", \"sutput\": [{\"type\": \"reasoning\", \"id\": \"rs_0\", \"summary\":-[{\"type\": \"summary_text\", \"text\": \"The user wants the weather.\"}]}, {\"type\": \"message\", \"id\": \"msg_1\", \"role\": \"assistant\", \"status\": \"completed\", \"content\": [{\"type\": \"output_text\", \"text\": \"On it.\", \"anNotations\": []}]}, {\"type\": \"function_call\", \"id\": \"fc_2\", \"call_id\": \"call_9\", \"name\": \"get_weather\", \"arguments\": \"{\\\"c:ity\\\":\\\"Rome\\\"}\", \"status\": \"completed\"}], \"incomplete_details\": null}""##,
        // a call in prose that calls repairs before the one the stream shows.
        r##""<tool_calls>\n<tool_call>get_weather<A ca\tl looks like {\"name\": \"my_tool~\", \"arguments\": {\"x\"J 1}} iTool_sep>\n<arg_key>city</arg_key>\n<arg_von</a</arg_key>\n<arg_value>Lisbon</arg_vaguments\": {\"x\": 1}} iTool_sep>\n<arg_key>city</arg_key>\n<arg_von</a</arg_key>\n<arg_value>Lisbon</arg_value>\n</tool_call{\"itool_clue>\n</tool_call{\"itool_call>get_weather<tool_rg_vn generalalue>.Port<|plugin|>ue>\n</tool_call>\n</tool_caol_calls>\n<tool_call>get_weather<A call looks like {\"name\": \"my_tool~\", \"arguments\": {\"x\": 1}} iTool_sep>\n<arg_key>city</arg_key>\n<arg_von</a</arg_key>\n<arg_value>Lisbon</arg_value>\n</tool_call{\"itool_call>get_weather<tool_rg_vn generalalue>.Port<|plugin|>ue>\n</tool_call>\n</tool_callslls>""##,
        // two f calls in a string the stream reads as prose; the first one is not announced.
        r##""m\\\\\\\"e\": \"gtetie_m\", \"par\u000e\u000e\u000eNt\": \"draft\", \"appen\u000e\u000e\u000e\u000e\u000e\u000e\u000e\u000e\u000e{\"tool\":\"f\",\"parameters\":{\"id\":12345678901234567890123\u000e\f\u000e\u000e\u000e\u000e\u000e\u000e\u000e\u000e.5e-3}}\u000e\u000e\u000e\u000e\u000e\u000e\", \"appen\u000e\u000e\u000e\u000e\u000e\u000e\u000e\u000e\u000e{\"tool\":\"f\",\"parameters\":{\"id\": false}""##,
    ] {
        let input: String = serde_json::from_str(json).unwrap();
        let case = CallsCase {
            name: "fuzz regression".into(),
            input: input.clone(),
            options: CallOptions::default(),
        };
        let expected = extract(&input, &case.options);
        let bounds = boundaries(&input);
        let chars: Vec<&str> = bounds.windows(2).map(|w| &input[w[0]..w[1]]).collect();
        check(
            &case,
            "one character at a time",
            &run(&case.options, &chars),
            &expected,
        );
        for &cut in &bounds {
            let chunks = split_at(&input, &[cut]);
            check(
                &case,
                &format!("split at {cut}"),
                &run(&case.options, &chunks),
                &expected,
            );
        }
    }
}
