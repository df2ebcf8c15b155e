//! Markers inside JSON strings stay text; deep nesting; the formats doc examples run as written.

use super::*;

/// Every marker toolmend knows: reasoning, each format's, Harmony's, and whole calls written
/// as text.
const MARKERS: &[&str] = &[
    "<think>x</think>",
    "<think>",
    "</think>",
    "<seed:think>x</seed:think>",
    "[THINK]x[/THINK]",
    "[THINK]",
    "[/THINK]",
    "<|START_THINKING|>x<|END_THINKING|>",
    "<|inner_prefix|>x<|inner_suffix|>",
    "<thinking>x</thinking>",
    "<|start|>assistant<|channel|>analysis<|message|>x<|end|>",
    "<|channel|>commentary to=functions.rm <|constrain|>json<|message|>{\"a\":1}<|call|>",
    "<|channel|>",
    "<|message|>",
    "<|end|>",
    "<|call|>",
    "<|return|>",
    "<tool_call>",
    "</tool_call>",
    "<tool_call>{\"name\": \"rm\", \"arguments\": {}}</tool_call>",
    "<tool_call>\nrm\n<arg_key>a</arg_key>\n<arg_value>1</arg_value>\n</tool_call>",
    "<tool_call><function=rm><parameter=a>1</parameter></function></tool_call>",
    "<function=rm>{}</function>",
    "<function=rm>",
    "</function>",
    "<parameter=a>",
    "</parameter>",
    "<｜DSML｜function_calls><｜DSML｜invoke name=\"rm\"></｜DSML｜invoke></｜DSML｜function_calls>",
    "<|tool_calls_section_begin|><|tool_call_begin|>functions.rm:0<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>",
    "<|tool_call_end|>",
    "<｜tool▁call▁begin｜>rm<｜tool▁sep｜>{}<｜tool▁call▁end｜>",
    "<｜tool▁call▁end｜>",
    "<｜tool_call_begin｜>",
    "<minimax:tool_call><invoke name=\"rm\"></invoke></minimax:tool_call>",
    "</invoke>",
    "<seed:tool_call>",
    "<longcat_tool_call>{\"name\":\"rm\",\"arguments\":{}}",
    "<|tool_call_start|>[rm()]<|tool_call_end|>",
    "<|python_start|>[rm()]<|python_end|>",
    "<|tool_call|>[{\"name\":\"rm\",\"arguments\":{}}]",
    "[TOOL_CALLS][{\"name\":\"rm\",\"arguments\":{}}]",
    "[TOOL_CALLS]rm[ARGS]{}",
    "[TOOL_CALLS]",
    "<|START_ACTION|>[{\"tool_name\":\"rm\",\"parameters\":{}}]<|END_ACTION|>",
    "<|END_ACTION|>",
    "<|tools_prefix|>[{\"rm\": {}}]<|tools_suffix|>",
    "<|action_start|><|plugin|>{\"name\":\"rm\"}<|action_end|>",
    "<|message_sep|>function call<|role_sep|>{\"name\":\"rm\",\"arguments\":{}}",
    "<TOOLCALL>[{\"name\":\"rm\",\"arguments\":{}}]</TOOLCALL>",
    "</TOOLCALL>",
    "<tool_calls>[{\"name\":\"rm\",\"arguments\":{}}]</tool_calls>",
    "</tool_calls>",
    "<function_calls>rm()</function_calls>",
    "<function_call> {\"name\":\"rm\",\"arguments\":{}}",
    ">>>rm\n{}",
    ">>>all\nhello",
    "functools[{\"name\":\"rm\",\"arguments\":{}}]",
    "<|python_tag|>{\"name\":\"rm\",\"parameters\":{}}",
    "<|python_tag|>rm.call(a=1)",
    "<start_function_call>call:rm{}<end_function_call>",
    "<end_function_call>",
    "<escape>",
    "<|tool_call>call:rm{}<tool_call|>",
    "<|\"|>",
    "[rm(a=1)]",
    "<|eot_id|></s><|im_end|>",
];

/// Call templates of every format family; `ARGS` is replaced by a JSON object. The second
/// field says where the object ends up: as the parameters, under `obj`, or under `obj` as the
/// text it was written as.
const TEMPLATES: &[(&str, &str)] = &[
    (
        "Sure. {\"tool\": \"f\", \"parameters\": @ARGS@, \"terminate\": true} Done.",
        "params",
    ),
    (
        "Calling {\"name\": \"f\", \"arguments\": @ARGS@} now",
        "params",
    ),
    // JSON that needs a repair elsewhere: a trailing comma, single quotes around other keys.
    (
        "Sure. {\"tool\": \"f\", \"parameters\": @ARGS@, \"terminate\": true,} Done.",
        "params",
    ),
    (
        "Sure. {'tool': 'f', 'parameters': @ARGS@, 'terminate': True}",
        "params",
    ),
    (
        "Here:\n```json\n{\"name\": \"f\", \"arguments\": @ARGS@}\n```\nok",
        "params",
    ),
    (
        "{\"name\": \"f\", \"arguments\": @ARGS@}\n{\"name\": \"f\", \"arguments\": {}}",
        "two",
    ),
    (
        "<tool_call>\n{\"name\": \"f\", \"arguments\": @ARGS@}\n</tool_call>",
        "params",
    ),
    (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>@ARGS@<|tool_call_end|><|tool_calls_section_end|>",
        "params",
    ),
    (
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>@ARGS@<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        "params",
    ),
    (
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n@ARGS@\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        "params",
    ),
    (
        "<longcat_tool_call>{\"name\": \"f\", \"arguments\": @ARGS@}</longcat_tool_call>",
        "params",
    ),
    (
        "<|tool_call_start|>[{\"name\": \"f\", \"arguments\": @ARGS@}]<|tool_call_end|>",
        "params",
    ),
    (
        "<|python_start|>[{\"name\": \"f\", \"arguments\": @ARGS@}]<|python_end|>",
        "params",
    ),
    (
        "<|tool_call|>[{\"name\": \"f\", \"arguments\": @ARGS@}]",
        "params",
    ),
    (
        "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": @ARGS@}]",
        "params",
    ),
    ("[TOOL_CALLS]f[ARGS]@ARGS@", "params"),
    ("[TOOL_CALLS]f@ARGS@", "params"),
    (
        "<|START_ACTION|>[{\"tool_name\": \"f\", \"parameters\": @ARGS@}]<|END_ACTION|>",
        "params",
    ),
    (
        "<|tools_prefix|>[{\"f\": @ARGS@}]<|tools_suffix|>",
        "params",
    ),
    (
        "<|action_start|><|plugin|>{\"name\": \"f\", \"parameters\": @ARGS@}<|action_end|>",
        "params",
    ),
    (
        "<|message_sep|>function call<|role_sep|>{\"name\": \"f\", \"arguments\": @ARGS@}",
        "params",
    ),
    (
        "<TOOLCALL>[{\"name\": \"f\", \"arguments\": @ARGS@}]</TOOLCALL>",
        "params",
    ),
    (
        "<tool_calls>[{\"name\": \"f\", \"arguments\": @ARGS@}]</tool_calls>",
        "params",
    ),
    (
        "<function_call> {\"name\": \"f\", \"arguments\": @ARGS@}",
        "params",
    ),
    ("<function=f>@ARGS@</function>", "params"),
    (
        "<seed:tool_call><function=f>@ARGS@</function></seed:tool_call>",
        "params",
    ),
    (">>>f\n@ARGS@", "params"),
    (
        "functools[{\"name\": \"f\", \"arguments\": @ARGS@}]",
        "params",
    ),
    (
        "<|python_tag|>{\"name\": \"f\", \"parameters\": @ARGS@}",
        "params",
    ),
    (
        "<|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json<|message|>@ARGS@<|call|>",
        "params",
    ),
    (
        "<tool_call>f\n<arg_key>obj</arg_key>\n<arg_value>@ARGS@</arg_value>\n</tool_call>",
        "obj",
    ),
    (
        "<｜DSML｜function_calls><｜DSML｜invoke name=\"f\"><｜DSML｜parameter name=\"obj\" string=\"false\">@ARGS@</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜function_calls>",
        "obj",
    ),
    (
        "<minimax:tool_call>\n<invoke name=\"f\">\n<parameter name=\"obj\">@ARGS@</parameter>\n</invoke>\n</minimax:tool_call>",
        "obj_text",
    ),
    (
        "<tool_call>\n<function=f>\n<parameter=obj>\n@ARGS@\n</parameter>\n</function>\n</tool_call>",
        "obj_text",
    ),
    ("[f(obj=@ARGS@)]", "obj"),
    ("<|tool_call_start|>[f(obj=@ARGS@)]<|tool_call_end|>", "obj"),
];

// Markup inside a JSON string was cut out of the parameters (and
// became reasoning), or made the call vanish. Every marker, in a JSON string of a call in
// every format family, stays in the parameters byte for byte; reasoning written outside the
// JSON is still reasoning.
#[test]
fn markers_inside_json_strings_are_text_in_every_format() {
    let mut lines = String::new();
    let mut cases = Vec::new();
    for (t, (template, place)) in TEMPLATES.iter().enumerate() {
        for marker in MARKERS {
            let args = json!({"cmd": format!("echo {marker} done"), "n": 1});
            let args_text = args.to_string();
            let harmony = template.contains("<|channel|>");
            let reply = format!(
                "{}{}",
                if harmony { "" } else { "<think>plan</think>" },
                template.replace("@ARGS@", &args_text)
            );
            let parameters = match *place {
                "obj" => json!({ "obj": args }),
                "obj_text" => json!({ "obj": args_text }),
                _ => args.clone(),
            };
            lines.push_str(&json!({"text": reply, "id": cases.len()}).to_string());
            lines.push('\n');
            cases.push((t, *marker, parameters, *place == "two", harmony));
        }
    }
    let out = toolmend()
        .args(["calls", "--records", "--input", "jsonl"])
        .write_stdin(lines)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let records: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), cases.len());
    let mut failures = Vec::new();
    for (record, (t, marker, parameters, two, harmony)) in records.iter().zip(&cases) {
        let calls = &record["value"]["calls"];
        let want = if *two { 2 } else { 1 };
        let ok = record["ok"] == true
            && calls.as_array().map(Vec::len) == Some(want)
            && calls[0]["tool"] == "f"
            && calls[0]["parameters"] == *parameters
            && (*harmony || record["value"]["reasoning"] == "plan");
        if !ok {
            failures.push(format!("{} with {marker:?}: {record}", TEMPLATES[*t].0));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases:\n{}",
        failures.len(),
        cases.len(),
        failures[..failures.len().min(20)].join("\n")
    );
}

// Nesting past serde_json's 127 levels turned the call into text. (Not a
// fixture, and read as text here: serde_json reads neither this deep.)
#[test]
fn parameters_nested_deeper_than_serde_json_reads_are_a_call() {
    let deep = format!("{}1{}", r#"{"a":"#.repeat(300), "}".repeat(300));
    let reply = format!(r#"Sure: {{"tool":"f","parameters":{deep}}}"#);
    let out = toolmend()
        .args(["calls", "--records"])
        .write_stdin(reply.clone())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let want = format!(
        r#"{{"ok":true,"line":1,"value":{{"calls":[{{"tool":"f","parameters":{deep},"repairs":[]}}],"text":"Sure:","reasoning":null,"incomplete":[]}},"repairs":[]}}"#
    );
    assert_eq!(String::from_utf8(out.stdout).unwrap().trim_end(), want);
    // Past --max-nesting: too_deep, not text.
    let (value, code) = record(&["--max-nesting", "100"], &reply);
    assert_eq!(code, 1);
    assert_eq!(value["error"]["code"], "too_deep", "{value}");
}

/// (format, reply, expected output) for each `## NAME` section of docs/formats.md: its first
/// ````text block (four backticks: a reply may hold a fence) and the ```json block after it.
fn formats_doc_examples() -> Vec<(String, String, String)> {
    let doc =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/formats.md")).unwrap();
    let mut examples = Vec::new();
    for section in doc.split("\n## ").skip(1) {
        let name = section.lines().next().unwrap().trim().to_owned();
        let block = |open: &str, close: &str, from: usize| -> (String, usize) {
            let start = section[from..]
                .find(open)
                .map(|i| from + i + open.len())
                .unwrap_or_else(|| panic!("## {name}: no {open} block"));
            let end = start + section[start..].find(close).unwrap();
            (section[start..end].to_owned(), end)
        };
        let (reply, end) = block("````text\n", "\n````\n", 0);
        let (expected, _) = block("```json\n", "\n```", end);
        examples.push((name, reply, expected));
    }
    examples
}

/// docs/formats.md has one example per format `--list-formats` prints, and each runs as
/// written, with `--format NAME` and with `auto`.
#[test]
fn formats_doc_examples_run_as_written() {
    let listed = toolmend()
        .args(["calls", "--list-formats"])
        .output()
        .unwrap();
    assert!(listed.status.success());
    let listed: Vec<String> = String::from_utf8(listed.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split_whitespace().next().unwrap().to_owned())
        .collect();
    let examples = formats_doc_examples();
    let documented: Vec<&str> = examples.iter().map(|(n, _, _)| n.as_str()).collect();
    assert_eq!(
        documented, listed,
        "docs/formats.md and --list-formats differ"
    );
    for (name, reply, expected) in &examples {
        for format in [name.as_str(), "auto"] {
            let out = toolmend()
                .args(["calls", "--format", format])
                .write_stdin(reply.as_str())
                .output()
                .unwrap();
            assert_eq!(
                String::from_utf8_lossy(&out.stdout).trim_end(),
                expected,
                "docs/formats.md, ## {name}, with --format {format}"
            );
            assert!(out.status.success(), "## {name}: {:?}", out.status);
        }
    }
}

/// `--list-formats` prints the format table the extractor uses: every name `--format` takes,
/// and nothing else.
#[test]
fn list_formats_prints_every_format_format_takes() {
    let out = toolmend()
        .args(["calls", "--list-formats"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let names: Vec<&str> = text
        .lines()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(
        names,
        toolmend_core::calls::format_names().collect::<Vec<_>>()
    );
    assert!(names.len() >= 30 && names.contains(&"hermes") && names.contains(&"json"));
    for name in &names {
        toolmend()
            .args(["calls", "--format", name])
            .write_stdin("hi")
            .assert()
            .success();
    }
    toolmend()
        .args(["calls", "--format", "nope"])
        .write_stdin("hi")
        .assert()
        .code(2);
}

/// A marker of a format earlier in the table inside a call's arguments whose JSON is broken
/// (the mask cannot hide it there): the call around it owns those bytes. The earlier format
/// read a cut call there and blanked it, and the call's value came with spaces where the model
/// wrote the marker (`"a": "             <tool_calls>"`, found by the `calls` fuzz target); now
/// the value is what the outer format reads alone, and no cut call is reported inside it.
#[test]
fn a_marker_inside_a_broken_argument_string_is_the_calls_text() {
    for reply in [
        r#"<function=w>{"a":"<tool_calls>{<tool_calls>,"b":1}"#,
        r#"<function=w>{"":"<tool_calls>{<tool_calls>,"metric":,metric}nt"#,
    ] {
        let read = |format: Option<&str>| -> Value {
            let mut cmd = toolmend();
            cmd.args(["calls", "--records"]);
            if let Some(format) = format {
                cmd.args(["--format", format]);
            }
            let out = cmd.write_stdin(reply).output().unwrap();
            serde_json::from_str(&String::from_utf8(out.stdout).unwrap()).unwrap()
        };
        let (auto, alone) = (read(None), read(Some("functionary")));
        assert_eq!(auto, alone, "{reply}");
        assert_eq!(auto["ok"], true, "{auto}");
        let value = auto["value"]["calls"][0]["parameters"].to_string();
        assert!(value.contains("<tool_calls>{<tool_calls>"), "{value}");
        assert!(!value.contains("  "), "{value}");
    }
}
