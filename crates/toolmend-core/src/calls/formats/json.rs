//! JSON call objects: finding them in prose, reading `{"name", "arguments"}` and the other
//! envelopes, and the checks on them.

use std::ops::Range;

use serde_json::{Map, Value};

use crate::args::{Concat, Target};
use crate::calls::scan::{bare_name, json_extent, skip_ws};
use crate::calls::{Args, Ctx, EnvelopeCheck, Incomplete, Item, Out, Raw, truncated};
use crate::error::{Code, Error};
use crate::repair::{Repair, RepairKind};

/// Where the first JSON value in `range` that holds calls starts, when stray words come
/// before it (`[TOOL_CALLS] Sure: [{…}]`): a value that is cut off counts (it is a cut-off
/// call); a complete one that holds no call is skipped whole, and a few are looked at.
pub(super) fn call_json(text: &str, ctx: &Ctx<'_>, range: Range<usize>) -> Option<usize> {
    let bytes = &text.as_bytes()[..range.end];
    let mut i = range.start;
    for _ in 0..8 {
        let start = i + memchr::memchr2(b'{', b'[', &bytes[i..])?;
        let Some(end) = json_extent(&text[..range.end], start) else {
            return Some(start);
        };
        let mut mender = ctx.value_mender(Target::Any, Concat::First);
        // Deeper than serde_json's limit counts as no call here, as when serde_json read it.
        let value = mender
            .mend_value(&text[start..end])
            .ok()
            .filter(|built| built.deepest <= SERDE_DEPTH)
            .and_then(|built| built.value.ok());
        let mut raws = Vec::new();
        if value.is_some_and(|v| collect(v, false, true, &mut raws)) && !raws.is_empty() {
            return Some(start);
        }
        i = end;
    }
    None
}

/// Where a whole, valid call object starts after the call JSON at `start` that never
/// closes: at the start of a later line or after a `;` (Llama 3 writes one call per line).
/// The call at `start` is then broken, not cut off at the end of the reply. A few places are
/// looked at, and none past an object that does not close either.
pub(super) fn whole_call_after(
    text: &str,
    ctx: &Ctx<'_>,
    start: usize,
    end: usize,
) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut from = start + 1;
    for _ in 0..16 {
        let j = from + memchr::memchr2(b'\n', b';', &bytes[from..end])?;
        from = j + 1;
        let p = skip_ws(text, j + 1);
        if p >= end || bytes[p] != b'{' {
            continue;
        }
        let close = ctx.json_extent(text, p, end)?;
        let Ok(object) = serde_json::from_str::<Map<String, Value>>(&text[p..close]) else {
            continue;
        };
        if ["name", "tool"]
            .iter()
            .any(|k| object.get(*k).is_some_and(Value::is_string))
        {
            return Some(p);
        }
    }
    None
}

/// The error for the call JSON in `range` that does not close before the whole call at
/// `range.end`, named from what was written when that can be read.
pub(super) fn broken_call(text: &str, ctx: &Ctx<'_>, range: Range<usize>, out: &mut Out) {
    let mut lenient = crate::args::Mender::new(crate::args::Options {
        target: Target::Any,
        ..crate::args::Options::default()
    })
    .building_values();
    let written = text[range.clone()].trim_end().trim_end_matches([';', ',']);
    let name = lenient
        .mend_value(written)
        .ok()
        .filter(|built| built.deepest <= ctx.options.max_nesting)
        .and_then(|built| built.value.ok())
        .and_then(|v| {
            let mut raws = Vec::new();
            collect(v, false, false, &mut raws);
            raws.into_iter().next().and_then(|r| r.name)
        });
    out.items.push(Item::failed(
        name.map(|n| bare_name(&n).0),
        Error::at(
            Code::InvalidJson,
            range.start,
            "tool call JSON is not closed before the whole call after it",
        ),
    ));
}

/// One or more JSON calls, separated by whitespace, `;` or `,` (or glued `}{`), possibly in
/// code fences. `marked`: the text is inside call markers, so a JSON value that is not a call
/// is an error rather than text.
pub(super) fn json_seq(
    text: &str,
    ctx: &Ctx<'_>,
    range: Range<usize>,
    name_is_key: bool,
    marked: bool,
    out: &mut Out,
) -> Option<usize> {
    let mut i = range.start;
    let mut end = None;
    loop {
        i = skip_ws(text, i);
        while i < range.end && matches!(text.as_bytes()[i], b';' | b',') {
            i = skip_ws(text, i + 1);
        }
        if text[i..range.end].starts_with("```") {
            i = text[i..range.end]
                .find('\n')
                .map_or(range.end, |n| i + n + 1);
            end = Some(i);
            continue;
        }
        if i >= range.end || !text[i..].starts_with(['{', '[']) {
            break;
        }
        let (piece_end, complete) = match ctx.json_extent(text, i, range.end) {
            Some(e) => (e, true),
            None => match whole_call_after(text, ctx, i, range.end) {
                // A broken call, then a whole one: the broken one is an error, and the
                // whole one is read.
                Some(next) => {
                    broken_call(text, ctx, i..next, out);
                    i = next;
                    end = Some(i);
                    continue;
                }
                None => (range.end, false),
            },
        };
        json_piece(text, ctx, i..piece_end, complete, name_is_key, marked, out);
        i = piece_end;
        end = Some(i);
    }
    end
}

/// Decodes one JSON value holding calls.
pub(super) fn json_piece(
    text: &str,
    ctx: &Ctx<'_>,
    range: Range<usize>,
    complete: bool,
    name_is_key: bool,
    marked: bool,
    out: &mut Out,
) {
    let piece = &text[range.clone()];
    let mut mender = ctx.value_mender(Target::Any, Concat::First);
    let mended = mender.mend_value(piece);
    let cut_off = !complete || mended.as_ref().is_ok_and(|m| truncated(m.repairs, piece));
    if cut_off {
        // Name the call from what was written, healed only to read it.
        let mut lenient = crate::args::Mender::new(crate::args::Options {
            target: Target::Any,
            ..crate::args::Options::default()
        })
        .building_values();
        let max_nesting = ctx.options.nesting();
        let healed = lenient
            .mend_value(piece)
            .ok()
            .filter(|built| built.deepest <= max_nesting)
            .and_then(|built| built.value.ok());
        let mut raws = Vec::new();
        if let Some(v) = healed {
            collect(v, name_is_key, false, &mut raws);
        }
        json_cut_off(raws, range.start, out);
        return;
    }
    let mended = match mended {
        Ok(m) => m,
        Err(error) => {
            out.items.push(Item::failed(
                None,
                Error {
                    code: error.code,
                    message: format!("tool call JSON: {}", error.message),
                    offset: error.offset.map(|o| o + range.start),
                },
            ));
            return;
        }
    };
    let repairs: Vec<Repair> = mended
        .repairs
        .iter()
        .cloned()
        .map(|mut r| {
            r.offset = r.offset.map(|o| o + range.start);
            r
        })
        .collect();
    let value = match mended.value {
        Ok(v) => v,
        Err(error) => {
            out.items.push(Item::failed(
                None,
                Error {
                    message: format!("tool call JSON: {}", error.message),
                    offset: error.offset.map(|o| o + range.start),
                    ..error
                },
            ));
            return;
        }
    };
    // `[]` inside call markers (`<|tool_call_start|>[]<|tool_call_end|>`, `functools[]`):
    // a list of no calls, as LFM2 and FireFunction write when they call nothing.
    if marked && value.as_array().is_some_and(Vec::is_empty) {
        return;
    }
    let mut value = value;
    let glued = glued_members(&mut value, piece, mended.repairs);
    let mut raws = Vec::new();
    let shaped = collect(value, name_is_key, false, &mut raws);
    if let (Some(glued), [raw]) = (glued, raws.as_mut_slice()) {
        raw.dropped.push(Value::Object(glued));
    }
    if !shaped || raws.is_empty() {
        if marked {
            out.items.push(Item::failed(
                None,
                Error::at(
                    Code::MissingField,
                    range.start,
                    "tool call JSON has no tool name (\"name\" or \"tool\")",
                ),
            ));
        }
        return;
    }
    if raws.len() == 1 {
        raws[0].repairs.splice(0..0, repairs);
    } else {
        out.repairs.extend(repairs);
    }
    for mut raw in raws {
        raw.offset = range.start;
        out.items.push(Item::Call(raw));
    }
}

/// `{"tool": "f", "parameters": {"a": 1}{"b": 2}}`: the mender reads the object glued after
/// the arguments as more members of the call's own object (a `{` where a key belongs, a
/// `missing_comma` and an `extra_bracket` at it), where no call reads them. The members of
/// the glued object that no call key names (all the call's object's such members when the
/// glued object does not close) are taken out of `value` to be the call's `dropped`: nothing
/// is left out silently.
pub(super) fn glued_members(
    value: &mut Value,
    piece: &str,
    repairs: &[Repair],
) -> Option<Map<String, Value>> {
    let glued: Vec<usize> = repairs
        .iter()
        .filter(|r| r.kind == RepairKind::ExtraBracket)
        .filter_map(|r| r.offset)
        .filter(|&at| piece.as_bytes().get(at) == Some(&b'{'))
        .filter(|&at| {
            repairs
                .iter()
                .any(|m| m.kind == RepairKind::MissingComma && m.offset == Some(at))
        })
        .collect();
    let map = value.as_object_mut().filter(|_| !glued.is_empty())?;
    if !NAME_KEYS.iter().any(|k| map.contains_key(*k)) {
        return None;
    }
    // The keys each glued object was written with, when it closes.
    let mut written: Option<Vec<String>> = Some(Vec::new());
    for at in glued {
        let keys = json_extent(piece, at)
            .and_then(|end| {
                crate::args::repair_value(&piece[at..end], crate::calls::MAX_CALL_NESTING)
            })
            .and_then(|v| match v {
                Value::Object(m) => Some(m.into_iter().map(|(k, _)| k)),
                _ => None,
            });
        match (keys, &mut written) {
            (Some(keys), Some(all)) => all.extend(keys),
            _ => written = None,
        }
    }
    let known = |k: &str| {
        NAME_KEYS.contains(&k)
            || ARG_KEYS.contains(&k)
            || ID_KEYS.contains(&k)
            || matches!(k, "terminate" | "type")
    };
    let stray: Vec<String> = map
        .keys()
        .filter(|k| !known(k) && written.as_ref().is_none_or(|w| w.contains(k)))
        .cloned()
        .collect();
    if stray.is_empty() {
        return None;
    }
    Some(
        stray
            .into_iter()
            .filter_map(|k| map.shift_remove_entry(&k))
            .collect(),
    )
}

/// The deepest nesting serde_json reads (its recursion limit of 128 fails the 128th level).
pub(crate) const SERDE_DEPTH: usize = 127;

/// The keys a call object's tool name is under.
pub(crate) const NAME_KEYS: &[&str] = &["tool", "name", "tool_name", "function", "recipient_name"];

/// The keys a call object's arguments are under.
pub(crate) const ARG_KEYS: &[&str] = &["parameters", "arguments", "args", "input"];

/// The keys of an object that holds calls (or one call) rather than being one.
pub(crate) const WRAPPERS: &[&str] = &["tool_calls", "tool_call", "function_call"];

pub(super) const ID_KEYS: &[&str] = &["id", "tool_call_id", "call_id"];

/// The calls a JSON value holds, added to `raws`; false when some part is not call-shaped.
/// `loose`: a call needs only a name (inside call markers); otherwise marker-less JSON must
/// also carry an argument key or be the `{"tool", …}` envelope.
pub(crate) fn collect(
    value: Value,
    name_is_key: bool,
    strict_shape: bool,
    raws: &mut Vec<Raw>,
) -> bool {
    match value {
        Value::Array(items) => {
            // Every element is collected (no short circuit), then all must have been calls.
            let mut all = !items.is_empty();
            for item in items {
                all &= collect(item, name_is_key, strict_shape, raws);
            }
            all
        }
        Value::Object(map) => object_call(map, name_is_key, strict_shape, raws),
        _ => false,
    }
}

pub(super) fn object_call(
    mut map: Map<String, Value>,
    name_is_key: bool,
    strict_shape: bool,
    raws: &mut Vec<Raw>,
) -> bool {
    for &wrapper in WRAPPERS {
        if matches!(map.get(wrapper), Some(Value::Array(_) | Value::Object(_))) {
            let inner = map.remove(wrapper).unwrap_or_default();
            let before = raws.len();
            let found = collect(inner, name_is_key, false, raws);
            if wrapper == "function_call" {
                encoded_arguments(&mut raws[before..]);
            }
            return found;
        }
    }
    if let Some(Value::Object(function)) = map.get("function") {
        // OpenAI: {"id", "type": "function", "function": {"name", "arguments"}}.
        let mut function = function.clone();
        if let Some(id) = ID_KEYS.iter().find_map(|k| map.get(*k)) {
            function.insert("id".into(), id.clone());
        }
        // `{"function": {"name": "f"}, "parameters": {…}}`: the arguments written beside the
        // function, not in it, are its arguments (else they were dropped: `parameters: {}`).
        if !ARG_KEYS.iter().any(|k| function.contains_key(*k))
            && let Some((key, args)) = ARG_KEYS
                .iter()
                .find_map(|k| map.get(*k).map(|args| (*k, args)))
        {
            function.insert(key.into(), args.clone());
        }
        let before = raws.len();
        let found = object_call(function, false, false, raws);
        encoded_arguments(&mut raws[before..]);
        return found;
    }
    let name_key = NAME_KEYS
        .iter()
        .find(|k| matches!(map.get(**k), Some(Value::String(_))));
    let args_key = ARG_KEYS.iter().find(|k| map.contains_key(**k));
    let id = ID_KEYS.iter().find_map(|k| map.get(*k)).cloned();
    let envelope = Some(envelope_check(&map));
    let (name, args) = match (name_key, args_key) {
        (Some(nk), ak) => {
            if strict_shape && ak.is_none() && *nk != "tool" {
                return false;
            }
            let name = map.get(*nk).and_then(Value::as_str).map(str::to_owned);
            let args = ak.and_then(|k| map.remove(*k));
            (name, args)
        }
        (None, _) if name_is_key && map.len() == 1 => {
            let (name, args) = map.into_iter().next().unwrap_or_default();
            raws.push(Raw {
                name: Some(name),
                args: Args::Value(args),
                ..Raw::default()
            });
            return true;
        }
        // `{"tool": 7, "parameters": …}`: the envelope, with a tool of the wrong type.
        (None, _)
            if map.contains_key("tool")
                && (map.contains_key("parameters") || map.contains_key("terminate")) =>
        {
            (None, None)
        }
        _ => return false,
    };
    raws.push(Raw {
        name,
        id,
        args: args.map_or(Args::Missing, Args::Value),
        terminate: map.remove("terminate"),
        envelope,
        ..Raw::default()
    });
    true
}

/// `{"name": KNOWN_TOOL}` with no arguments (an id or `"type"` beside it at most): a call with
/// `parameters: {}`, as Ollama and others write a call to a tool that takes none. Only with
/// tools, naming one of them: without tools such JSON is too common in prose to be a call.
pub(super) fn bare_known_call(value: &Value, ctx: &Ctx<'_>) -> Option<Raw> {
    let tools = ctx.tools?;
    let map = value.as_object()?;
    let (key, name) = map
        .iter()
        .find_map(|(k, v)| Some((k, v.as_str()?)).filter(|_| NAME_KEYS.contains(&k.as_str())))?;
    let only_a_name = map
        .keys()
        .all(|k| k == key || k == "type" || ID_KEYS.contains(&k.as_str()));
    if !only_a_name || tools.get(&bare_name(name).0).is_none() {
        return None;
    }
    Some(Raw {
        name: Some(name.to_owned()),
        id: ID_KEYS.iter().find_map(|k| map.get(*k)).cloned(),
        envelope: Some(envelope_check(map)),
        ..Raw::default()
    })
}

/// OpenAI writes `arguments` as JSON text: that string is the wire form, not a repair.
pub(crate) fn encoded_arguments(raws: &mut [Raw]) {
    for raw in raws {
        if let Args::Value(Value::String(text)) = &mut raw.args {
            raw.args = Args::Encoded(std::mem::take(text));
        }
    }
}

/// Why an object is not the envelope, read strictly and as the loop reads it.
pub(super) fn envelope_check(map: &Map<String, Value>) -> EnvelopeCheck {
    EnvelopeCheck {
        strict: envelope_problem(map),
        any_shape: any_shape_envelope_problem(map),
    }
}

/// Why an object is not the `{"tool": string, "parameters": object, "terminate": boolean}`
/// envelope, if it is not.
pub(super) fn envelope_problem(map: &Map<String, Value>) -> Option<Error> {
    type Check = fn(&Value) -> bool;
    let fields: [(&str, Check, &str); 3] = [
        ("tool", Value::is_string, "a string"),
        ("parameters", Value::is_object, "an object"),
        ("terminate", Value::is_boolean, "true or false"),
    ];
    for (field, check, want) in fields {
        match map.get(field) {
            None => {
                return Some(Error::whole(
                    Code::MissingField,
                    format!("tool call has no \"{field}\" (the envelope requires it)"),
                ));
            }
            Some(v) if !check(v) => {
                return Some(Error::whole(
                    Code::WrongType,
                    format!(
                        "\"{field}\" must be {want}, found {}",
                        crate::calls::kind_of(v)
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    None
}

/// Why an object is not an envelope the loop accepts, if it is not: a tool name under any key
/// `calls` reads one from (`tool`, `name` …), its parameters under any argument key (an object,
/// or JSON text that `arguments` decodes and reports), and `terminate` (true or false; a
/// native call, named under another key than `tool`, may leave it out).
pub(super) fn any_shape_envelope_problem(map: &Map<String, Value>) -> Option<Error> {
    let missing = |field: &str| {
        Some(Error::whole(
            Code::MissingField,
            format!("tool call has no \"{field}\""),
        ))
    };
    let wrong = |field: &str, want: &str, found: &Value| {
        Some(Error::whole(
            Code::WrongType,
            format!(
                "\"{field}\" must be {want}, found {}",
                crate::calls::kind_of(found)
            ),
        ))
    };
    let field = |keys: &[&'static str]| keys.iter().find_map(|k| Some((*k, map.get(*k)?)));
    match field(NAME_KEYS) {
        None => return missing("tool"),
        Some((key, name)) if !name.is_string() => return wrong(key, "a string", name),
        Some(_) => {}
    }
    match field(ARG_KEYS) {
        None => return missing("parameters"),
        Some((key, args)) if !(args.is_object() || args.is_string()) => {
            return wrong(key, "an object", args);
        }
        Some(_) => {}
    }
    match map.get("terminate") {
        // A model's native call (`name` and `arguments`, not the envelope's `tool`): call,
        // then go on.
        None if !map.contains_key("tool") => None,
        None => missing("terminate"),
        Some(t) if !t.is_boolean() => wrong("terminate", "true or false", t),
        Some(_) => None,
    }
}

/// A JSON call cut off at `offset`: the first call read from what is there names the tool.
pub(super) fn json_cut_off(raws: Vec<Raw>, offset: usize, out: &mut Out) {
    let first = raws.into_iter().next();
    out.items.push(Item::Incomplete(Incomplete {
        tool: first
            .as_ref()
            .and_then(|r| r.name.as_deref())
            .map(|n| bare_name(n).0),
        id: first.and_then(|r| r.id),
        offset,
        message: "its JSON ends before it is closed".into(),
    }));
}

#[cfg(test)]
mod tests {
    use super::SERDE_DEPTH;

    /// Where the JSON decoders once read values with serde_json they keep its limit: it must be
    /// serde_json's.
    #[test]
    fn serde_depth_is_serde_jsons_limit() {
        let nested = |levels: usize| format!("{}{}", "[".repeat(levels), "]".repeat(levels));
        let reads = |text: &str| serde_json::from_str::<serde_json::Value>(text).is_ok();
        assert!(reads(&nested(SERDE_DEPTH)));
        assert!(!reads(&nested(SERDE_DEPTH + 1)));
        // Checking text without reading it (`scan::is_whole_json`) has no limit.
        let ignored = |text: &str| serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok();
        assert!(ignored(&nested(5000)));
    }
}
