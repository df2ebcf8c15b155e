//! The conversation sent to the LLM command, in the two forms it can read on stdin.
//!
//! `messages`: `{"messages": [{"role": "system"|"user"|"assistant"|"tool", "content": "…"}]}`
//! (a `tool` message also has `name`, the tool's name, and `tool_call_id` when the call it
//! answers had an id, as an API's `tool_calls` do). `text`: the same turns flattened to
//! plain text under `System:`, `User:`, `Assistant:` and `Tool result (NAME):` headings, ending
//! with `Assistant:` for the reply.

use serde_json::{Map, Value, json};

/// Who wrote a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The system prompt.
    System,
    /// The user's prompt, and toolmend's notes on malformed replies.
    User,
    /// The model's replies, verbatim.
    Assistant,
    /// A tool's result.
    Tool,
}

impl Role {
    fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// One turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// What it says.
    pub content: String,
    /// For a tool result, the tool's name.
    pub name: Option<String>,
    /// For a tool result, the id of the call it answers when the call had one (an API's
    /// `tool_calls[].id`): sent as `tool_call_id`, as the API's `tool` messages carry it.
    pub call_id: Option<String>,
}

impl Message {
    /// A turn without a name.
    pub fn new(role: Role, content: impl Into<String>) -> Message {
        Message {
            role,
            content: content.into(),
            name: None,
            call_id: None,
        }
    }

    /// A tool's result.
    pub fn tool(name: &str, content: impl Into<String>) -> Message {
        Message {
            role: Role::Tool,
            content: content.into(),
            name: Some(name.to_owned()),
            call_id: None,
        }
    }
}

/// The conversation as `{"messages": [...], "tools": [...]}` JSON: `tools` are the API's tool
/// definitions (`{"type": "function", "function": {name, description, parameters}}`), for an
/// LLM command that sends them as the API's `tools` (a model's native calls).
pub fn to_messages_json(messages: &[Message], tools: &[Value]) -> Vec<u8> {
    let list: Vec<Value> = messages
        .iter()
        .map(|m| {
            let mut map = Map::new();
            map.insert("role".into(), m.role.as_str().into());
            if let Some(name) = &m.name {
                map.insert("name".into(), name.clone().into());
            }
            if let Some(id) = &m.call_id {
                map.insert("tool_call_id".into(), id.clone().into());
            }
            map.insert("content".into(), m.content.clone().into());
            Value::Object(map)
        })
        .collect();
    let mut bytes =
        serde_json::to_vec(&json!({ "messages": list, "tools": tools })).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// The conversation flattened to text, ending with the cue for the model's reply.
pub fn to_text(messages: &[Message]) -> Vec<u8> {
    let mut out = String::new();
    for m in messages {
        let heading = match (m.role, &m.name) {
            (Role::System, _) => "System:".to_owned(),
            (Role::User, _) => "User:".to_owned(),
            (Role::Assistant, _) => "Assistant:".to_owned(),
            (Role::Tool, Some(name)) => format!("Tool result ({name}):"),
            (Role::Tool, None) => "Tool result:".to_owned(),
        };
        out.push_str(&heading);
        out.push('\n');
        out.push_str(m.content.trim_end());
        out.push_str("\n\n");
    }
    out.push_str("Assistant:\n");
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms() {
        let turns = [
            Message::new(Role::System, "Be brief."),
            Message::new(Role::User, "Hi"),
            Message::new(Role::Assistant, "{\"tool\": \"t\"}"),
            Message::tool("t", "{\"ok\":true}"),
        ];
        let json: Value = serde_json::from_slice(&to_messages_json(&turns, &[])).unwrap();
        assert_eq!(
            json["messages"][0],
            json!({"role": "system", "content": "Be brief."})
        );
        assert_eq!(
            json["messages"][3],
            json!({"role": "tool", "name": "t", "content": "{\"ok\":true}"})
        );
        let text = String::from_utf8(to_text(&turns)).unwrap();
        assert_eq!(
            text,
            "System:\nBe brief.\n\nUser:\nHi\n\nAssistant:\n{\"tool\": \"t\"}\n\n\
             Tool result (t):\n{\"ok\":true}\n\nAssistant:\n"
        );
    }
}
