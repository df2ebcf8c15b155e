//! A call found by a decoder made into a [`Call`]: its name looked up in the
//! tools, its arguments mended (unquoted, typed by the schema for XML-style values) and checked.

use serde_json::{Map, Value};

use super::{
    Args, Call, Ctx, Extracted, Field, Incomplete, Raw, Rejected, formats, scan, truncated,
};
use crate::args::{Concat, Target};
use crate::error::{Code, Error};
use crate::repair::{Repair, RepairKind};
use crate::tools::typing::{convert, enum_member, fits, schema_types};
use crate::tools::{Tool, Tools};

/// The message of a call to a tool the tools list lacks, naming the nearest tool if one is
/// near enough to be a slip (`unknown tool "get_wether" (did you mean "get_weather"?)`).
pub(super) fn unknown_tool(tool: &str, tools: Option<&Tools>) -> String {
    match tools.and_then(|tools| tools.nearest(tool)) {
        Some(near) => format!("unknown tool {tool:?} (did you mean {near:?}?)"),
        None => format!("unknown tool {tool:?}"),
    }
}

/// Normalizes one call and adds it (or its failure) to `found`.
pub(super) fn finish(raw: Raw, ctx: &Ctx<'_>, found: &mut Extracted) {
    let Raw {
        name,
        id,
        args,
        terminate,
        envelope,
        mut repairs,
        offset,
        args_at,
        mut cut,
        dropped: mut stray,
    } = raw;
    let reject = |tool: Option<String>, id: Option<Value>, error: Error| Rejected {
        tool,
        id,
        parameters: None,
        error,
        violations: Vec::new(),
    };
    // A format's own mends of the arguments (a Python set read as a list, a raw line break in
    // a Python string, values decoded once more) are repairs too: `--strict` makes none.
    if ctx.options.strict
        && let Some(first) = repairs.first()
    {
        let at = first
            .offset
            .map_or(String::new(), |o| format!(" at byte {o}"));
        let error = Error {
            code: Code::InvalidJson,
            message: format!(
                "the arguments need a repair ({}{at}); strict mode makes none",
                first.kind.as_str()
            ),
            offset: first.offset,
        };
        found.rejected.push(reject(name, id, error));
        return;
    }
    if ctx.options.require_terminate {
        let problem = match &envelope {
            Some(check) if ctx.options.any_envelope_shape => check.any_shape.clone(),
            Some(check) => check.strict.clone(),
            // A call in a model's native format or an API's `tool_calls`: the loop calls it,
            // then goes on.
            None if ctx.options.any_envelope_shape => None,
            None => Some(Error::whole(
                Code::MissingField,
                "the call is not a {\"tool\", \"parameters\", \"terminate\"} JSON object, so it has no \"terminate\" (the envelope requires it)",
            )),
        };
        if let Some(error) = problem {
            found.rejected.push(reject(name, id, error));
            return;
        }
    }
    // A call cut before its name (or one the server dropped, `stop_reasons::dropped_by`) is no call
    // either: it is incomplete, whatever else it lacks.
    if name.as_deref().is_none_or(|n| n.trim().is_empty())
        && let Some(message) = cut.take()
    {
        found.incomplete.push(Incomplete {
            tool: None,
            id,
            offset,
            message,
        });
        return;
    }
    let Some(written) = name.filter(|n| !n.trim().is_empty()) else {
        let error = match envelope.and_then(|check| check.strict) {
            Some(problem) if problem.code == Code::WrongType => problem,
            _ => Error::at(Code::MissingField, offset, "tool call has no tool name"),
        };
        found.rejected.push(reject(None, id, error));
        return;
    };
    let (tool, name_id) = scan::bare_name(&written);
    let id = id.or(name_id.map(Value::String));
    if let Some(message) = cut {
        found.incomplete.push(Incomplete {
            tool: Some(tool),
            id,
            offset,
            message,
        });
        return;
    }
    let terminate = match terminate {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(b),
        Some(other) => {
            found.rejected.push(reject(
                Some(tool.clone()),
                id,
                Error::whole(
                    Code::WrongType,
                    format!(
                        "\"terminate\" of the call to {tool:?} must be true or false, found {}",
                        kind_of(&other)
                    ),
                ),
            ));
            return;
        }
    };
    let definition = ctx.tools.map(|tools| tools.get(&tool));
    if let Some(None) = definition {
        found.rejected.push(reject(
            Some(tool.clone()),
            id,
            Error::at(Code::UnknownTool, offset, unknown_tool(&tool, ctx.tools)),
        ));
        return;
    }
    let definition = definition.flatten();
    let objects = match arguments(args, args_at, &tool, definition, ctx, &mut repairs) {
        Ok(Some(objects)) => objects,
        Ok(None) => {
            found.incomplete.push(Incomplete {
                tool: Some(tool),
                id,
                offset,
                message: "its arguments end before their JSON does".into(),
            });
            return;
        }
        Err(error) => {
            found.rejected.push(reject(Some(tool), id, error));
            return;
        }
    };
    // Concatenated argument objects: a read-only tool gets one call per object; any other
    // tool keeps the first and reports the rest as dropped (seed 003's safety rule).
    let mut objects = objects.into_iter();
    let first = objects.next().unwrap_or_default();
    let rest: Vec<Map<String, Value>> = objects.collect();
    let split = definition.is_some_and(|t| t.read_only);
    let mut calls = vec![(first, id)];
    let mut dropped = std::mem::take(&mut stray);
    if split {
        calls.extend(rest.into_iter().map(|o| (o, None)));
    } else {
        dropped.extend(rest.into_iter().map(Value::Object));
    }
    for (i, (mut parameters, id)) in calls.into_iter().enumerate() {
        let mut call_repairs = if i == 0 {
            std::mem::take(&mut repairs)
        } else {
            Vec::new()
        };
        if let Some(definition) = definition {
            // Coercion to the schema is a repair, so --strict only checks.
            let coerce = !ctx.options.strict;
            if let Err(violations) = definition.check(&mut parameters, coerce, &mut call_repairs) {
                let listed: Vec<String> = violations.iter().map(ToString::to_string).collect();
                found.rejected.push(Rejected {
                    tool: Some(tool.clone()),
                    id,
                    error: Error::whole(
                        Code::InvalidParameters,
                        format!(
                            "parameters of {tool:?} do not match its schema: {}",
                            listed.join("; ")
                        ),
                    ),
                    parameters: Some(parameters),
                    violations,
                });
                continue;
            }
        }
        found.calls.push(Call {
            tool: tool.clone(),
            parameters,
            terminate,
            id,
            repairs: call_repairs,
            dropped: if i == 0 {
                std::mem::take(&mut dropped)
            } else {
                Vec::new()
            },
        });
    }
}

/// The argument objects of a call (several when they were concatenated); `None` when the
/// arguments were cut off.
pub(super) fn arguments(
    args: Args,
    args_at: Option<usize>,
    tool: &str,
    definition: Option<&Tool>,
    ctx: &Ctx<'_>,
    repairs: &mut Vec<Repair>,
) -> Result<Option<Vec<Map<String, Value>>>, Error> {
    // Arguments written as a JSON string where an object belongs were encoded once more.
    let mut encoded = false;
    let text = match args {
        Args::Missing | Args::Value(Value::Null) => return Ok(Some(vec![Map::new()])),
        Args::Value(Value::Object(map)) => return Ok(Some(vec![map])),
        Args::Value(Value::String(text)) => {
            encoded = true;
            text
        }
        Args::Text(text) | Args::Encoded(text) => text,
        Args::Value(other) => {
            return Err(Error::whole(
                Code::WrongType,
                format!(
                    "arguments of the call to {tool:?} must be an object, found {}",
                    kind_of(&other)
                ),
            ));
        }
        Args::Fields(fields) => {
            if let Some(objects) = wrapped_arguments(&fields, definition, ctx, repairs) {
                return Ok(Some(objects));
            }
            let mut map = Map::new();
            for (key, field) in fields {
                let schema = definition.and_then(|t| t.param_schema(&key));
                let value = typed(field, schema, &key, ctx, repairs);
                map.insert(key, value);
            }
            return Ok(Some(vec![map]));
        }
    };
    let trimmed = text.trim();
    if trimmed.is_empty() || trimmed == "null" {
        return Ok(Some(vec![Map::new()]));
    }
    let mut mender = ctx.value_mender(Target::Object, Concat::All);
    match mender.mend_value(&text) {
        Ok(mended) => {
            if truncated(mended.repairs, &text) {
                return Ok(None);
            }
            let start = repairs.len();
            repairs.extend(mended.repairs.iter().map(|r| Repair {
                offset: r.offset.map(|o| o + args_at.unwrap_or(0)),
                ..r.clone()
            }));
            if encoded && !text.trim().is_empty() {
                match repairs[start..]
                    .iter_mut()
                    .find(|r| r.kind == RepairKind::Unquote)
                {
                    Some(unquote) => unquote.layers = Some(unquote.layers.unwrap_or(0) + 1),
                    None => repairs.insert(
                        start,
                        Repair {
                            kind: RepairKind::Unquote,
                            offset: None,
                            layers: Some(1),
                            text: None,
                            path: None,
                        },
                    ),
                }
            }
            let parts = match mended.value {
                Ok(Value::Array(parts)) => parts,
                Ok(other) => vec![other],
                Err(e) => {
                    return Err(Error {
                        message: format!("arguments of {tool:?}: {}", e.message),
                        ..e
                    });
                }
            };
            let objects = parts
                .into_iter()
                .map(|part| match part {
                    Value::Object(map) => Ok(map),
                    other => Err(Error::whole(
                        Code::NotAnObject,
                        format!(
                            "arguments of {tool:?} must be an object, found {}",
                            kind_of(&other)
                        ),
                    )),
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Some(objects))
        }
        Err(error) => {
            let starts = trimmed.starts_with(['{', '[']);
            if starts && scan::json_extent(trimmed, 0).is_none() {
                return Ok(None);
            }
            Err(Error {
                code: error.code,
                message: format!("arguments of the call to {tool:?}: {}", error.message),
                offset: error.offset,
            })
        }
    }
}

/// The argument objects of a call whose only named value is `arguments` holding a JSON object
/// (`<parameter name="arguments">{…}</parameter>`), when the tool's schema has no `arguments`
/// property: the model wrapped its arguments. Without a schema the name is kept as written.
pub(super) fn wrapped_arguments(
    fields: &[(String, Field)],
    definition: Option<&Tool>,
    ctx: &Ctx<'_>,
    repairs: &mut Vec<Repair>,
) -> Option<Vec<Map<String, Value>>> {
    let [(key, field)] = fields else {
        return None;
    };
    if key != "arguments" || definition?.param_schema(key).is_some() {
        return None;
    }
    let unwrap = Repair {
        kind: RepairKind::UnwrapArguments,
        offset: None,
        layers: None,
        text: None,
        path: None,
    };
    let text = match field {
        Field::Value(Value::Object(map)) => {
            repairs.push(unwrap);
            return Some(vec![map.clone()]);
        }
        Field::Value(Value::String(text))
        | Field::Text(text)
        | Field::TextOrJson(text)
        | Field::Json(text) => text,
        Field::Value(_) => return None,
    };
    if !text.trim_start().starts_with(['{', '"']) {
        return None;
    }
    let mut mender = ctx.value_mender(Target::Object, Concat::All);
    let mended = mender.mend_value(text).ok()?;
    // Deeper than serde_json's limit is no object here, as when serde_json read it.
    if truncated(mended.repairs, text) || mended.deepest > formats::SERDE_DEPTH {
        return None;
    }
    // An array of objects (`Target::Object`, `Concat::All`).
    let Ok(Value::Array(parts)) = mended.value else {
        return None;
    };
    let objects = parts
        .into_iter()
        .map(|part| match part {
            Value::Object(map) => Some(map),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    repairs.push(unwrap);
    repairs.extend_from_slice(mended.repairs);
    Some(objects)
}

/// A named value of an XML-style format, given the type its schema declares. The schema
/// decides and nothing else: a value typed `string` stays the text the model wrote (`"42"`),
/// one typed `integer` becomes a number; `null` is read only where the schema allows it. With
/// no type in the schema the field's own default holds (see [`Field`]).
pub(super) fn typed(
    field: Field,
    schema: Option<&Value>,
    key: &str,
    ctx: &Ctx<'_>,
    repairs: &mut Vec<Repair>,
) -> Value {
    let types = schema.map(schema_types).unwrap_or_default();
    let mut coerced = |value: Value| {
        repairs.push(Repair {
            kind: RepairKind::SchemaType,
            offset: None,
            layers: None,
            text: Some(key.to_owned()),
            path: None,
        });
        value
    };
    let (text, json) = match field {
        Field::Value(value) => return value,
        Field::Json(text) => {
            let value = crate::args::repair_value(&text, ctx.options.nesting());
            (text, value)
        }
        Field::Text(text) => (text, None),
        Field::TextOrJson(text) => {
            let value = if types.is_empty() {
                ctx.value(text.trim()).ok()
            } else {
                None
            };
            (text, value)
        }
    };
    if types.is_empty() {
        return json.unwrap_or(Value::String(text));
    }
    // JSON the format marked as such (DSML `string="false"`) stands when its type is allowed.
    if let Some(value) = &json
        && types.iter().any(|t| fits(value, t))
    {
        return json.unwrap_or_default();
    }
    // JSON of another type than the schema's: its text is read again, as the schema says.
    let retyped = json.as_ref().is_some_and(|v| !v.is_string());
    let text = match json {
        Some(Value::String(decoded)) => decoded,
        _ => text,
    };
    if let Some(member) = schema.and_then(|s| enum_member(s, &text)) {
        return if member.is_string() {
            member
        } else {
            coerced(member)
        };
    }
    if types.contains(&"null") && matches!(text.trim(), "null" | "None") {
        return coerced(Value::Null);
    }
    if types.contains(&"string") {
        return if retyped {
            coerced(Value::String(text))
        } else {
            Value::String(text)
        };
    }
    for t in &types {
        if let Some(value) = convert(&text, t, ctx.options.nesting()) {
            return coerced(value);
        }
    }
    Value::String(text)
}

pub(crate) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
