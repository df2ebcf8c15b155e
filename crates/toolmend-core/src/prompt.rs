//! The system prompt that teaches a model the calling convention and lists its tools.
//!
//! The text depends only on the tools (their order included), so the same tools file always
//! gives the same prompt; `toolmend prompt` prints it and the loop sends it.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::tools::{Tool, Tools};

/// The system prompt for a model that calls tools natively, through an API's tools feature
/// (the tools travel in the request, not in the prompt). It teaches no convention: a call
/// without `terminate` is "call, then go on", and a reply that calls no tool is the answer.
///
/// ```
/// let prompt = toolmend_core::native_system_prompt();
/// assert!(!prompt.contains("terminate"));
/// ```
pub fn native_system_prompt() -> &'static str {
    "You can call the tools you are given, as many times as you need: each tool's result comes \
     back to you. When you have the final answer, reply with it as plain text and call no tool."
}

/// The system prompt for these tools.
///
/// ```
/// use toolmend_core::tools::Tools;
///
/// let tools = Tools::from_json_str(r#"[{"name": "ls", "description": "List a directory",
///     "parameters": [{"name": "dir", "type": "string", "required": true,
///                     "description": "The directory"}]}]"#).unwrap();
/// let prompt = toolmend_core::system_prompt(&tools);
/// assert!(prompt.contains(r#"{"tool": "ls", "parameters": {"dir": "example"}, "terminate": false}"#));
/// assert!(prompt.contains("- dir (string, required): The directory"));
/// ```
pub fn system_prompt(tools: &Tools) -> String {
    let mut out = String::new();
    let example = tools.iter().next();
    let (name, params) = match example {
        Some(tool) => (tool.name.as_str(), example_parameters(tool)),
        None => ("tool_name", "{}".to_owned()),
    };
    let call = format!(r#"{{"tool": "{name}", "parameters": {params}, "terminate": false}}"#);
    let as_string = serde_json::to_string(&params).unwrap_or_default();
    out.push_str(
        "You can call tools. To call a tool, reply with exactly one JSON object and nothing else:\n\n\
         {\"tool\": \"<tool name>\", \"parameters\": {<parameter name>: <value>, ...}, \"terminate\": <true or false>}\n\n\
         - \"tool\" (string): the name of one of the tools listed below.\n\
         - \"parameters\" (object): the tool's parameters as a JSON object, never as a string holding JSON. \
         Use {} for a tool without parameters.\n\
         - \"terminate\" (boolean): false to get the tool's result back and continue working; true to finish with \
         this tool: its result is the final answer and you will not be asked again.\n\n\
         Rules:\n\
         - Exactly one JSON object per tool call. To act on several items, use an array inside \"parameters\"; \
         never write two JSON objects one after another.\n\
         - Plain JSON only: double quotes, no comments, no trailing commas, no code fences, no text around it.\n\
         - To answer without calling a tool, reply with plain text that contains no JSON object.\n\n",
    );
    let _ = write!(
        out,
        "Correct:\n{call}\n\n\
         Wrong (two objects glued together):\n{call}{call}\n\n\
         Wrong (parameters written as a string):\n\
         {{\"tool\": \"{name}\", \"parameters\": {as_string}, \"terminate\": false}}\n\n"
    );
    if tools.is_empty() {
        out.push_str("Tools: none.\n");
        return out;
    }
    out.push_str("Tools:\n");
    for tool in tools.iter() {
        let _ = write!(out, "\n## {}\n", tool.name);
        if !tool.description.trim().is_empty() {
            let _ = writeln!(out, "{}", tool.description.trim());
        }
        if tool.params.is_empty() {
            out.push_str("Parameters: none.\n");
            continue;
        }
        out.push_str("Parameters:\n");
        for param in &tool.params {
            let need = if param.required {
                "required"
            } else {
                "optional"
            };
            let _ = write!(out, "- {} ({}, {need})", param.name, param.kind);
            if param.description.trim().is_empty() {
                out.push('\n');
            } else {
                let _ = writeln!(out, ": {}", param.description.trim());
            }
        }
    }
    out
}

/// Example parameters for a tool: its required parameters (or its first one) with a value of
/// the declared type.
fn example_parameters(tool: &Tool) -> String {
    let mut chosen: Vec<_> = tool.params.iter().filter(|p| p.required).collect();
    if chosen.is_empty() {
        chosen.extend(tool.params.first());
    }
    let mut map = Map::new();
    for param in chosen {
        let value = match param.kind.as_str() {
            "integer" => Value::from(1),
            "number" => Value::from(1.5),
            "boolean" => Value::Bool(true),
            "array" => Value::Array(Vec::new()),
            "object" => Value::Object(Map::new()),
            _ => Value::from("example"),
        };
        map.insert(param.name.clone(), value);
    }
    // serde_json writes `{"a":1}`; the prompt spaces it like the convention line.
    let mut text = String::from("{");
    for (i, (key, value)) in map.iter().enumerate() {
        if i > 0 {
            text.push_str(", ");
        }
        let _ = write!(text, "{}: {}", Value::String(key.clone()), value);
    }
    text.push('}');
    text
}
