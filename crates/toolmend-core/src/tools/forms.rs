//! One tool read from any of the forms a tools file may write it in (toolmend's own with a
//! parameter list or a schema, OpenAI's, MCP's), checked as it is read.

use serde_json::{Map, Value, json};

use super::{Param, Tool, lookup_key, seconds, seconds_rule};
use crate::tools::schema::Schema;

pub(super) fn tool_from_value(value: Value) -> Result<Tool, String> {
    let Value::Object(mut map) = value else {
        return Err("expected an object".into());
    };
    // OpenAI: {"type": "function", "function": {...}}; the inner object is the definition.
    if let Some(Value::Object(inner)) = map.remove("function") {
        let mut inner = inner;
        for key in ["read_only", "requires_approval", "command", "timeout"] {
            if let Some(v) = map.remove(key) {
                inner.entry(key).or_insert(v);
            }
        }
        map = inner;
    }
    let name = match map.remove("name") {
        Some(Value::String(name)) if !lookup_key(&name).is_empty() => name,
        Some(Value::String(name)) if !name.trim().is_empty() => {
            return Err(format!(
                "the name {name:?} leaves nothing to call it by (a `functions.` prefix and a \
                 `:N` index are not part of a name)"
            ));
        }
        Some(_) => return Err("\"name\" must be a non-empty string".into()),
        None => return Err("missing \"name\"".into()),
    };
    let at = |what: String| format!("{name:?}: {what}");
    let description = match map.remove("description") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(d)) => d,
        Some(_) => return Err(at("\"description\" must be a string".into())),
    };
    let read_only_hint = map
        .get("annotations")
        .and_then(|a| a.get("readOnlyHint"))
        .and_then(Value::as_bool);
    let read_only = flag(&mut map, "read_only")
        .map_err(at)?
        .or(read_only_hint)
        .unwrap_or(false);
    let requires_approval = flag(&mut map, "requires_approval")
        .map_err(at)?
        .unwrap_or(false);
    let command = match map.remove("command") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) if !items.is_empty() => Some(
            items
                .into_iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s),
                    _ => Err(at("\"command\" must be a list of strings (argv)".into())),
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Some(_) => {
            return Err(at(
                "\"command\" must be a non-empty list of strings (argv), never a shell string"
                    .into(),
            ));
        }
    };
    // The rule of every timeout in a loop config: a bad value is refused, never replaced.
    let timeout = match map.remove("timeout") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => Some(
            n.as_f64()
                .ok_or_else(|| seconds_rule("\"timeout\""))
                .and_then(|t| seconds(t, "\"timeout\""))
                .map_err(at)?,
        ),
        Some(other) => {
            return Err(at(format!(
                "{}, found {other}",
                seconds_rule("\"timeout\"")
            )));
        }
    };
    let parameters = map
        .remove("parameters")
        .or_else(|| map.remove("inputSchema"))
        .or_else(|| map.remove("input_schema"));
    let (schema, params) = match parameters {
        None | Some(Value::Null) => (json!({"type": "object", "properties": {}}), Vec::new()),
        Some(Value::Array(list)) => schema_from_list(list).map_err(at)?,
        Some(Value::Object(schema)) => {
            let params = params_from_schema(&schema);
            (Value::Object(schema), params)
        }
        Some(_) => {
            return Err(at(
                "\"parameters\" must be a JSON Schema object or a list".into()
            ));
        }
    };
    let checker = Schema::new(schema.clone())
        .map_err(|e| at(format!("parameters are not a valid JSON Schema: {e}")))?;
    Ok(Tool {
        name,
        description,
        schema,
        params,
        requires_approval,
        read_only,
        command,
        timeout,
        checker,
    })
}

pub(super) fn flag(map: &mut Map<String, Value>, key: &str) -> Result<Option<bool>, String> {
    match map.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(b)),
        Some(_) => Err(format!("{key:?} must be true or false")),
    }
}

/// The JSON type for a type name in a parameter list (a few common aliases accepted).
pub(super) fn json_type(name: &str) -> Option<&'static str> {
    Some(match name.trim().to_ascii_lowercase().as_str() {
        "string" | "str" | "text" => "string",
        "integer" | "int" => "integer",
        "number" | "float" | "double" => "number",
        "boolean" | "bool" => "boolean",
        "array" | "list" => "array",
        "object" | "dict" | "map" => "object",
        "null" => "null",
        _ => return None,
    })
}

pub(super) fn schema_from_list(list: Vec<Value>) -> Result<(Value, Vec<Param>), String> {
    let mut properties = Map::new();
    let mut required = Vec::new();
    let mut params = Vec::new();
    for (i, entry) in list.into_iter().enumerate() {
        let Value::Object(entry) = entry else {
            return Err(format!("parameter {} must be an object", i + 1));
        };
        let name = match entry.get("name") {
            Some(Value::String(n)) if !n.is_empty() => n.clone(),
            _ => return Err(format!("parameter {} needs a \"name\"", i + 1)),
        };
        let kind = match entry.get("type") {
            None => None,
            Some(Value::String(t)) => Some(
                json_type(t).ok_or_else(|| format!("parameter {name:?}: unknown type {t:?}"))?,
            ),
            Some(_) => return Err(format!("parameter {name:?}: \"type\" must be a string")),
        };
        let is_required = match entry.get("required") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                return Err(format!(
                    "parameter {name:?}: \"required\" must be true or false"
                ));
            }
        };
        let description = entry
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let mut property = Map::new();
        if let Some(kind) = kind {
            property.insert("type".into(), kind.into());
        }
        if !description.is_empty() {
            property.insert("description".into(), description.clone().into());
        }
        for key in ["enum", "items", "default", "minimum", "maximum"] {
            if let Some(v) = entry.get(key) {
                property.insert(key.into(), v.clone());
            }
        }
        if properties
            .insert(name.clone(), Value::Object(property))
            .is_some()
        {
            return Err(format!("parameter {name:?} is listed twice"));
        }
        if is_required {
            required.push(Value::String(name.clone()));
        }
        params.push(Param {
            name,
            kind: kind.unwrap_or("any").to_owned(),
            required: is_required,
            description,
        });
    }
    let schema = json!({"type": "object", "properties": properties, "required": required});
    Ok((schema, params))
}

pub(super) fn params_from_schema(schema: &Map<String, Value>) -> Vec<Param> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(Value::Object(properties)) = schema.get("properties") else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, property)| Param {
            name: name.clone(),
            kind: type_name(property),
            required: required.contains(&name.as_str()),
            description: property
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        })
        .collect()
}

/// A schema's type as one word for the prompt: `string`, `integer or null`, `any`.
pub(super) fn type_name(property: &Value) -> String {
    match property.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" or "),
        _ if property.get("enum").is_some() => "enum".into(),
        _ => "any".into(),
    }
}
