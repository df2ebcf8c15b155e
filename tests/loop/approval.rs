//! Approval hooks: allow, deny, failures fail closed; tool names and config checks.

use super::*;

// 6. Approval.

#[test]
fn approval_allow_runs_the_tool_and_the_hook_sees_the_call() {
    let s = Setup::new("allow");
    let replies = [
        format!("Let me echo.\n{}", echo("hi", false)),
        "Echoed.".into(),
    ];
    let config = s.config(&replies, "", &approved_echo("allow"));
    let out = s.run(&config, &["go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "Echoed.\n");
    assert_eq!(s.log("tool.log").len(), 1);
    assert_eq!(
        s.log("hook.log"),
        [
            json!({"tool": "echo", "parameters": {"text": "hi"}, "iteration": 1, "reason": "Let me echo."})
        ]
    );
}

#[test]
fn an_allow_with_a_reason_fails_closed_and_the_transcript_says_why() {
    // Only the one-key `{"decision":"allow"}` allows; an extra key makes the answer ambiguous.
    let s = Setup::new("allow-reason");
    let replies = [echo("hi", true)];
    let config = s.config(&replies, "", &approved_echo("allow-reason"));
    let (out, transcript) = s.run_with_transcript(&config);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert!(s.log("tool.log").is_empty(), "the tool must not run");
    let events = events(&transcript);
    let decided = events
        .iter()
        .find(|e| e["type"] == "approval.decided")
        .unwrap();
    assert_eq!(decided["data"]["decision"], "failed");
    let why = decided["data"]["reason"].as_str().unwrap();
    assert!(why.contains("\"reason\" beside the decision"), "{why}");
}

/// `echo` behind a hook that prints the bytes of `{dir}/answer` and exits with `exit`.
fn hook_saying(s: &Setup, answer: &[u8], exit: i32) -> PathBuf {
    std::fs::write(s.path("answer"), answer).unwrap();
    let rest = approved_echo("say").replace(
        "\"{dir}/hook.log\"]",
        &format!("\"{{dir}}/hook.log\", \"{{dir}}/answer\", \"{exit}\"]"),
    );
    let _ = std::fs::remove_file(s.path("tool.log"));
    let _ = std::fs::remove_dir_all(s.path("inputs"));
    s.config(&[echo("hi", true)], "", &rest)
}

#[test]
fn only_one_exact_allow_allows_every_other_answer_fails_closed() {
    let s = Setup::new("hook-answers");
    let allow = br#"{"decision":"allow"}"#;
    // Whitespace around the one object is fine.
    for answer in [
        &allow[..],
        b"{\"decision\":\"allow\"}\n",
        b"  { \"decision\" : \"allow\" }\r\n",
        b"\n\t{\"decision\":\"allow\"}\n\n",
    ] {
        let config = hook_saying(&s, answer, 0);
        let out = s.run(&config, &["go"]);
        let shown = String::from_utf8_lossy(answer);
        assert_eq!(code(&out), 0, "{shown:?}: {}", stderr(&out));
        assert_eq!(s.log("tool.log").len(), 1, "{shown:?}");
    }
    let huge = [&allow[..], &[b' '; 70_000][..]].concat();
    let failures: &[(&[u8], i32, &str)] = &[
        // The same key twice, in any order, even when both say allow.
        (
            br#"{"decision":"deny","decision":"allow"}"#,
            0,
            "\"decision\" twice",
        ),
        (
            br#"{"decision":"allow","decision":"deny"}"#,
            0,
            "\"decision\" twice",
        ),
        (
            br#"{"decision":"allow","decision":"allow"}"#,
            0,
            "\"decision\" twice",
        ),
        (
            br#"{"decision":"deny","reason":"x","decision":"deny"}"#,
            0,
            "twice",
        ),
        // Other keys beside an allow.
        (
            br#"{"decision":"allow","reason":"fine"}"#,
            0,
            "\"reason\" beside",
        ),
        (
            br#"{"decision":"allow","force":true}"#,
            0,
            "\"force\" beside",
        ),
        (br#"{"x":1,"decision":"allow"}"#, 0, "\"x\" beside"),
        // Not the exact string.
        (br#"{"decision":"Allow"}"#, 0, "\"Allow\""),
        (br#"{"decision":" allow"}"#, 0, "\" allow\""),
        (br#"{"decision":"allow "}"#, 0, "\"allow \""),
        (br#"{"decision":"ALLOW"}"#, 0, "\"ALLOW\""),
        // The same string spelled with an escape is not the exact bytes.
        (br#"{"decision":"\u0061llow"}"#, 0, "with an escape"),
        (br#"{"decisio\u006e":"allow"}"#, 0, "with an escape"),
        (br#"{"decision":"allo\u0077"}"#, 0, "with an escape"),
        (br#"{"decision":true}"#, 0, "not a string"),
        (br#"{"decision":["allow"]}"#, 0, "not a string"),
        (br#"{"decision":null}"#, 0, "not a string"),
        (br#"{"Decision":"allow"}"#, 0, "no \"decision\""),
        (br#"{}"#, 0, "no \"decision\""),
        (br#"["allow"]"#, 0, "not one JSON object"),
        (br#""allow""#, 0, "not one JSON object"),
        (b"allow", 0, "not one JSON object"),
        // Something before or after the one object.
        (br#"{"decision":"allow"}x"#, 0, "not one JSON object"),
        (
            br#"{"decision":"allow"}{"decision":"allow"}"#,
            0,
            "not one JSON object",
        ),
        (
            b"{\"decision\":\"allow\"}\nok, running it",
            0,
            "not one JSON object",
        ),
        (
            b"checking...\n{\"decision\":\"allow\"}",
            0,
            "not one JSON object",
        ),
        (
            b"\xef\xbb\xbf{\"decision\":\"allow\"}",
            0,
            "not one JSON object",
        ),
        (br#"{"decision":"allow""#, 0, "not one JSON object"),
        // No answer, a failing exit, bytes that are not text, too much.
        (b"", 0, "no answer"),
        (b"  \n", 0, "no answer"),
        (allow, 1, "exit status 1"),
        (allow, 2, "exit status 2"),
        (b"{\"decision\":\"allow\"}\xff", 0, "not UTF-8"),
        (b"{\"decision\":\"allow\xff\"}", 0, "not UTF-8"),
        (&huge, 0, "over the limit"),
        // A deny whose extra parts are not a string reason is not a clean deny either.
        (br#"{"decision":"deny","reason":1}"#, 0, "not a string"),
        (
            br#"{"decision":"deny","force":true}"#,
            0,
            "\"force\" beside",
        ),
    ];
    for &(answer, exit, why) in failures {
        let config = hook_saying(&s, answer, exit);
        let out = s.run(&config, &["go"]);
        let shown = String::from_utf8_lossy(answer);
        let shown = &shown[..shown.len().min(80)];
        assert_eq!(code(&out), 4, "{shown:?} exit {exit}: {}", stderr(&out));
        assert!(s.log("tool.log").is_empty(), "{shown:?}: the tool ran");
        assert!(stderr(&out).contains(why), "{shown:?}: {}", stderr(&out));
    }
    // A deny is a deny (exit 3), with or without a string reason, whatever the exit status.
    for (answer, exit) in [
        (&br#"{"decision":"deny"}"#[..], 0),
        (br#" {"decision":"deny","reason":"no"} "#, 0),
        (br#"{"reason":"no","decision":"deny"}"#, 0),
        (br#"{"decision":"deny"}"#, 1),
    ] {
        let config = hook_saying(&s, answer, exit);
        let out = s.run(&config, &["go"]);
        let shown = String::from_utf8_lossy(answer);
        assert_eq!(code(&out), 3, "{shown:?}: {}", stderr(&out));
        assert!(s.log("tool.log").is_empty(), "{shown:?}: the tool ran");
    }
}

#[test]
fn approval_deny_exits_3_and_nothing_more_runs() {
    let s = Setup::new("deny");
    let replies = [echo("hi", false), "never".into()];
    let config = s.config(&replies, "", &approved_echo("deny"));
    let out = s.run(&config, &["go"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(s.log("tool.log").is_empty(), "the tool must not run");
    assert_eq!(s.inputs().len(), 1);
    assert_eq!(s.log("hook.log").len(), 1);
    assert!(stderr(&out).contains("denied"), "{}", stderr(&out));
    assert!(stderr(&out).contains("not on a Sunday"), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
}

#[test]
fn a_failing_hook_fails_closed_with_4() {
    for (mode, expected) in [
        ("crash", "exit status 1"),
        ("hang", "timeout"),
        ("garbage", "yes please"),
        ("allow-exit-1", "exit status 1"),
        ("maybe", "maybe"),
    ] {
        let s = Setup::new(&format!("hook-{mode}"));
        let replies = [echo("hi", false), "never".into()];
        // The hanging hook (120 s) gets 1 s, the others the usual 5 s, which they do not need; a
        // run that waited the hook out would be killed after 30 s, which is no exit 4.
        let rest = match mode {
            "hang" => approved_echo(mode).replace("timeout = 5\n", "timeout = 1\n"),
            _ => approved_echo(mode),
        };
        let config = s.config(&replies, "", &rest);
        let out = s.run(&config, &["go"]);
        assert_eq!(code(&out), 4, "{mode}: {}", stderr(&out));
        assert!(
            s.log("tool.log").is_empty(),
            "{mode}: the tool must not run"
        );
        assert_eq!(s.log("hook.log").len(), 1, "{mode}");
        assert_eq!(s.inputs().len(), 1, "{mode}");
        assert!(stderr(&out).contains(expected), "{mode}: {}", stderr(&out));
    }
}

#[test]
fn a_terminal_hook_runs_in_toolmends_process_group_others_in_their_own() {
    for (mode, terminal, expected) in [
        ("own-group", "", 0),
        ("toolmend-group", "", 3),
        ("toolmend-group", "terminal = true\n", 0),
    ] {
        let s = Setup::new(&format!("hook-{mode}"));
        let replies = [echo("hi", true)];
        let rest =
            approved_echo(mode).replace("timeout = 5\n", &format!("timeout = 5\n{terminal}"));
        let config = s.config(&replies, "", &rest);
        let out = s.run(&config, &["go"]);
        assert_eq!(code(&out), expected, "{mode} {terminal}: {}", stderr(&out));
    }
}

#[test]
fn a_hook_that_cannot_start_fails_closed() {
    // A missing hook is refused before the run (a_hook_or_tool_command_that_cannot_start_...);
    // one that fails only when started rejects the call.
    let s = Setup::new("hook-unstartable");
    let hook = script_without_interpreter(&s, "hook.sh");
    let replies = [echo("hi", false), "never".into()];
    let rest = approved_echo("allow").replace(
        "\"python3\", \"{bin}/approval_hook.py\", \"allow\", \"{dir}/hook.log\"",
        &quoted(&hook),
    );
    let config = s.config(&replies, "", &rest);
    let out = s.run(&config, &["go"]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert!(stderr(&out).contains("could not start"), "{}", stderr(&out));
    assert!(s.log("tool.log").is_empty());
}

#[test]
fn a_tool_needing_approval_without_a_hook_is_a_config_error() {
    let s = Setup::new("no-hook");
    let rest = r#"
[[tools]]
name = "rm"
command = ["rm", "-rf", "/nonexistent/toolmend"]
"#;
    let config = s.config(&["never".into()], "", rest);
    let out = s.run(&config, &["go"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("rm require approval"),
        "{}",
        stderr(&out)
    );
    assert!(s.inputs().is_empty(), "the model must not be called");
}

#[test]
fn tool_names_that_reach_the_same_tool_are_a_config_error() {
    // `x` needs no approval, `functions.x` does; a call to `functions.x` is looked up as `x`.
    for (a, b) in [
        ("x", "functions.x"),
        ("functions.x", "x"),
        ("x", "x:0"),
        ("x", "functions.x:0"),
        ("x", " x"),
        ("functions.functions.x", "x"),
    ] {
        let s = Setup::new("alias");
        let rest = format!(
            r#"
[approval]
command = ["python3", "{{bin}}/approval_hook.py", "deny", "{{dir}}/hook.log"]

[[tools]]
name = {}
read_only = true
command = ["python3", "{{bin}}/record_tool.py", "{{dir}}/tool.log"]

[[tools]]
name = {}
command = ["python3", "{{bin}}/record_tool.py", "{{dir}}/tool.log"]
"#,
            quoted(a),
            quoted(b)
        );
        let config = s.config(&[call("functions.x", json!({}), true)], "", &rest);
        let out = s.run(&config, &["go"]);
        assert_eq!(code(&out), 2, "{a:?} {b:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("{a:?} and {b:?}")),
            "{}",
            stderr(&out)
        );
        assert!(s.inputs().is_empty(), "the model must not be called");
        assert!(s.log("tool.log").is_empty());
    }
}

#[test]
fn a_tool_named_with_the_functions_prefix_is_reached_by_that_name() {
    let s = Setup::new("prefixed");
    let rest = ECHO_TOOL.replace("name = \"echo\"", "name = \"functions.echo\"");
    let replies = [call("functions.echo", json!({"text": "hi"}), true)];
    let config = s.config(&replies, "", &rest);
    let out = s.run(&config, &["go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "echo: hi\n");
}

#[test]
fn a_bad_tool_timeout_or_key_is_refused_like_a_bad_loop_timeout() {
    // The values `[loop] timeout` refuses were taken as "no timeout given" in a tool.
    for value in ["nan", "inf", "-1", "0", "\"1\"", "1e300", "true"] {
        let s = Setup::new("tool-timeout");
        for (rest, key) in [
            (format!("{ECHO_TOOL}timeout = {value}\n"), "timeout"),
            (format!("[loop]\ntimeout = {value}\n{ECHO_TOOL}"), "timeout"),
        ] {
            let config = s.config(&[echo("hi", true)], "", &rest);
            let out = s.run(&config, &["go"]);
            assert_eq!(code(&out), 2, "{value}: {}", stderr(&out));
            assert!(stderr(&out).contains(key), "{value}: {}", stderr(&out));
            assert!(
                s.inputs().is_empty(),
                "{value}: the model must not be called"
            );
        }
    }
    let s = Setup::new("tool-key");
    for typo in ["timout = 5", "read_olny = true", "requires_aproval = false"] {
        let config = s.config(&[echo("hi", true)], "", &format!("{ECHO_TOOL}{typo}\n"));
        let out = s.run(&config, &["go"]);
        assert_eq!(code(&out), 2, "{typo}: {}", stderr(&out));
        let key = typo.split(' ').next().unwrap();
        assert!(
            stderr(&out).contains(&format!("unknown key \"{key}\"")),
            "{}",
            stderr(&out)
        );
        assert!(s.inputs().is_empty());
    }
    let config = s.config(&[echo("hi", true)], "", "[loop]\nmax_output = 0\n");
    let out = s.run(&config, &["go"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("max_output"), "{}", stderr(&out));
}
