//! Typing a value written as text (an XML-style call's parameter) by its JSON Schema: the
//! types a schema allows, the `enum` member a text names, and the text read as one type.

use serde_json::Value;

/// Whether `value` is of JSON Schema type `t`, an integer written without a fraction (`1.0`
/// written as a parameter's text is not taken as already an integer).
pub(crate) fn fits(value: &Value, t: &str) -> bool {
    match (t, value) {
        ("integer", Value::Number(n)) => n.is_i64() || n.is_u64(),
        _ => super::schema::has_type(value, t),
    }
}

/// The member of the schema's `enum` (or its `const`) that `text` writes: a string member
/// equal to the text, else another member whose JSON is the text.
pub(crate) fn enum_member(schema: &Value, text: &str) -> Option<Value> {
    let members: Vec<&Value> = match (schema.get("enum"), schema.get("const")) {
        (Some(Value::Array(members)), _) => members.iter().collect(),
        (_, Some(member)) => vec![member],
        _ => return None,
    };
    if let Some(found) = members.iter().find(|m| m.as_str() == Some(text)) {
        return Some((*found).clone());
    }
    let trimmed = text.trim();
    let written: Value = serde_json::from_str(trimmed).ok()?;
    members
        .into_iter()
        .find(|m| !m.is_string() && **m == written)
        .cloned()
}

/// The JSON types a schema allows: `type` as a string or a list, else those of `anyOf` /
/// `oneOf`, else those of its `enum` members or `const`.
pub(crate) fn schema_types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => {
            let mut types: Vec<&str> = ["anyOf", "oneOf"]
                .iter()
                .filter_map(|k| schema.get(*k).and_then(Value::as_array))
                .flatten()
                .flat_map(schema_types)
                .collect();
            if types.is_empty() {
                let members = match (schema.get("enum"), schema.get("const")) {
                    (Some(Value::Array(members)), _) => members.iter().collect(),
                    (_, Some(member)) => vec![member],
                    _ => Vec::new(),
                };
                for member in members {
                    let t = match member {
                        Value::Null => "null",
                        Value::Bool(_) => "boolean",
                        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
                        Value::Number(_) => "number",
                        Value::String(_) => "string",
                        Value::Array(_) => "array",
                        Value::Object(_) => "object",
                    };
                    if !types.contains(&t) {
                        types.push(t);
                    }
                }
            }
            types
        }
    }
}

/// `text` as a value of JSON type `t`, when it is one.
pub(crate) fn convert(text: &str, t: &str, max_nesting: usize) -> Option<Value> {
    let trimmed = text.trim();
    match t {
        "integer" => crate::exact::number(trimmed)
            .filter(|_| !trimmed.contains(['.', 'e', 'E']))
            .map(Value::Number)
            .or_else(|| trimmed.parse::<i64>().map(Value::from).ok()),
        "number" => crate::exact::number(trimmed).map(Value::Number),
        "boolean" => match trimmed.to_ascii_lowercase().as_str() {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => None,
        },
        "null" => matches!(trimmed, "null" | "None").then_some(Value::Null),
        "array" if trimmed.starts_with('{') => {
            // A Python set (`{1, 2, 3}`) is read as one where a value is: inside a list.
            let wrapped = crate::args::repair_value(&format!("[{trimmed}]"), max_nesting)?;
            match wrapped {
                Value::Array(mut items) if items.len() == 1 && items[0].is_array() => items.pop(),
                _ => None,
            }
        }
        "object" | "array" => {
            let value = crate::args::repair_value(trimmed, max_nesting)?;
            let fits = if t == "object" {
                value.is_object()
            } else {
                value.is_array()
            };
            fits.then_some(value)
        }
        _ => None,
    }
}
