//! The examples: the OpenAI-compatible LLM command against a fake server, the configs, the demo.

use super::*;

// The examples: the OpenAI-compatible LLM command against a fake server.

/// Kills the fake server when the test ends, passed or not.
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The fake server with `replies`, the example LLM command's config with `flags` (and the
/// `system_prompt` line, if any) and the echo tool, and the loop run on `prompt` with an API key
/// in the environment: its output, the requests the server got, and how often the tool ran.
fn through_the_example(
    name: &str,
    replies: &[String],
    flags: &str,
    system_prompt: &str,
    prompt: &str,
) -> (Output, Vec<Value>, usize) {
    use std::io::BufRead;
    let s = Setup::new(name);
    std::fs::write(s.path("server-replies.txt"), replies.join("\n=====\n")).unwrap();
    let mut child = Command::new("python3")
        .arg(bin("fake_openai_server.py"))
        .arg(s.path("server-replies.txt"))
        .arg(s.path("requests.log"))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut port = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut port)
        .unwrap();
    let _server = Server(child);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/llm/openai_chat.py");
    let llm = format!(
        "[llm]\ncommand = [\"python3\", {}, \"--model\", \"test-model\", \"--base-url\", \"http://127.0.0.1:{}/v1\"{flags}]\n{system_prompt}\n",
        quoted(&script.display().to_string()),
        port.trim()
    );
    let rest = ECHO_TOOL
        .replace("{bin}", &bin(""))
        .replace("{dir}", &s.dir.display().to_string());
    std::fs::write(s.path("agent.toml"), format!("{llm}{rest}")).unwrap();
    let out = toolmend()
        .env("OPENAI_API_KEY", "sk-test")
        .args(["loop", "--config"])
        .arg(s.path("agent.toml"))
        .arg(prompt)
        .output()
        .unwrap();
    let requests = s.log("requests.log");
    let tool_runs = s.log("tool.log").len();
    (out, requests, tool_runs)
}

const NATIVE: &str = "system_prompt = \"native\"";

#[test]
fn the_openai_example_talks_to_a_chat_completions_endpoint() {
    let replies = [echo("via http", false), "Echoed over HTTP.".into()];
    let (out, requests, tool_runs) =
        through_the_example("openai", &replies, "", "", "echo via http");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "Echoed over HTTP.\n");
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0]["path"], "/v1/chat/completions");
    assert_eq!(requests[0]["authorization"], "Bearer sk-test");
    assert_eq!(requests[0]["body"]["model"], "test-model");
    let messages = requests[1]["body"]["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    // The tool result goes as a user turn: the API has no tool_call_id for it.
    assert_eq!(roles, ["system", "user", "assistant", "user"]);
    let result = messages[3]["content"].as_str().unwrap();
    assert!(result.starts_with("Result of the tool echo:\n"), "{result}");
    assert!(result.contains("echo: via http"), "{result}");
    assert_eq!(tool_runs, 1);
}

/// `--api responses --native-tools`: the model's native call comes as a Responses API
/// `function_call` item, is run, and goes back with its result as `function_call_output` under
/// its `call_id`; the reply with no call is the answer.
#[test]
fn the_openai_example_calls_natively_through_the_responses_api() {
    let call = json!({"id": "resp_1", "object": "response", "status": "completed", "output": [
        {"type": "function_call", "id": "fc_1", "call_id": "call_7", "name": "echo",
         "arguments": "{\"text\": \"via responses\",}", "status": "completed"}]});
    let replies = [
        call.to_string(),
        "Echoed through the Responses API.".to_owned(),
    ];
    let (out, requests, tool_runs) = through_the_example(
        "responses",
        &replies,
        ", \"--api\", \"responses\", \"--native-tools\"",
        NATIVE,
        "echo via responses",
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "Echoed through the Responses API.\n");
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0]["path"], "/v1/responses");
    let tools = &requests[0]["body"]["tools"];
    assert_eq!(tools[0]["type"], "function");
    assert_eq!(tools[0]["name"], "echo");
    assert_eq!(tools[0]["parameters"]["required"], json!(["text"]));
    let input = requests[1]["body"]["input"].as_array().unwrap();
    let kinds: Vec<&str> = input
        .iter()
        .map(|i| i["type"].as_str().or(i["role"].as_str()).unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["system", "user", "function_call", "function_call_output"]
    );
    assert_eq!(input[2]["call_id"], "call_7");
    assert_eq!(input[3]["call_id"], "call_7");
    // The call was run with its arguments mended (the trailing comma).
    let output = input[3]["output"].as_str().unwrap();
    assert!(output.contains("echo: via responses"), "{output}");
    assert_eq!(tool_runs, 1);
}

/// `--api responses` without native tools: the reply text is the response's `output_text`.
#[test]
fn the_openai_example_reads_the_responses_api_output_text() {
    let replies = [echo("plain", false), "Done.".to_owned()];
    let (out, requests, _) = through_the_example(
        "responses-text",
        &replies,
        ", \"--api\", \"responses\"",
        NATIVE,
        "echo plain",
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "Done.\n");
    assert_eq!(requests[0]["path"], "/v1/responses");
    let input = requests[1]["body"]["input"].as_array().unwrap();
    let last = input.last().unwrap();
    assert_eq!(last["role"], "user");
    assert!(
        last["content"]
            .as_str()
            .unwrap()
            .starts_with("Result of the tool echo:\n")
    );
}

#[test]
fn the_example_configs_are_valid() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (config, input_starts) in [
        ("examples/openai.toml", "{\"messages\":"),
        ("examples/llm-cli.toml", "System:\n"),
    ] {
        let out = toolmend()
            .current_dir(root)
            .args(["loop", "--config", config, "--dry-run", "hi"])
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{config}: {}", stderr(&out));
        let text = stdout(&out);
        assert!(text.contains("## read_file"), "{config}");
        let (_, input) = text.split_once("\n# first LLM input").unwrap();
        let input = input.split_once('\n').unwrap().1;
        assert!(input.starts_with(input_starts), "{config}: {input}");
    }
}

#[test]
fn the_offline_demo_runs() {
    // The same run as `make demo-loop`; its paths are relative to the repository root.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let work = root.join("target/demo-loop");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let out = toolmend()
        .current_dir(root)
        .args([
            "loop",
            "--config",
            "fixtures/demo/loop/agent.toml",
            "--json",
        ])
        .arg("Count the words of: the quick brown fox jumps over the lazy dog.")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let record: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(record["status"], "terminated");
    assert_eq!(
        record["answer"],
        "saved the note to target/demo-loop/note.txt\n"
    );
    assert_eq!(record["iterations"], 3);
    assert_eq!(
        std::fs::read_to_string(work.join("note.txt")).unwrap(),
        "The sentence has 9 words.\n"
    );
}
