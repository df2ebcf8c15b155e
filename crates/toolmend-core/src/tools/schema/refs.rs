//! What a schema document says of itself: its `$ref`s, subschemas by pointer, and reference
//! cycles that constrain nothing.

use serde_json::{Map, Value};

/// The subschema at a `#/…` pointer.
pub(super) fn node<'d>(document: &'d Value, pointer: &str) -> Option<&'d Map<String, Value>> {
    let inner = pointer.strip_prefix('#')?;
    document.pointer(inner)?.as_object()
}

/// Whether a schema holds a reference anywhere (`$ref`, `$dynamicRef`, `$recursiveRef`).
pub(super) fn has_refs(document: &Value) -> bool {
    let mut stack = vec![document];
    while let Some(node) = stack.pop() {
        match node {
            Value::Object(map) => {
                if ["$ref", "$dynamicRef", "$recursiveRef"]
                    .iter()
                    .any(|k| map.contains_key(*k))
                {
                    return true;
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    false
}

/// Keywords that say nothing about a value: a schema made only of them and a `$ref` is the
/// schema it refers to.
pub(super) const NOT_CONSTRAINTS: [&str; 12] = [
    "$ref",
    "$defs",
    "definitions",
    "$id",
    "$schema",
    "$comment",
    "$anchor",
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
];

/// The first `$ref` cycle of `document` in which every schema is only a reference (`x` refers
/// to `y`, `y` to `x`, neither says anything else), written `#/$defs/x -> #/$defs/y -> …`. A
/// cycle in which some schema says something of its own (`{"$ref": "#", "type": "integer"}`)
/// is not one: the walk that follows it ends at [`super::MAX_HOPS`] and the checker at its own rule.
pub(super) fn empty_ref_cycle(document: &Value) -> Option<String> {
    // Every subschema that holds a local `$ref`, found without recursion.
    let mut starts: Vec<String> = Vec::new();
    let mut stack: Vec<(&Value, String)> = vec![(document, "#".to_owned())];
    while let Some((node, pointer)) = stack.pop() {
        match node {
            Value::Object(map) => {
                if map.get("$ref").and_then(Value::as_str).is_some() {
                    starts.push(pointer.clone());
                }
                for (key, child) in map {
                    stack.push((child, format!("{pointer}/{}", escape(key))));
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    stack.push((child, format!("{pointer}/{i}")));
                }
            }
            _ => {}
        }
    }
    let only_a_reference =
        |map: &Map<String, Value>| map.keys().all(|k| NOT_CONSTRAINTS.contains(&k.as_str()));
    // Schemas already known to lead to no such cycle: each is followed once.
    let mut settled: std::collections::HashSet<String> = std::collections::HashSet::new();
    for start in starts {
        let mut chain: Vec<String> = Vec::new();
        let mut at = start;
        loop {
            if settled.contains(&at) {
                break;
            }
            if let Some(first) = chain.iter().position(|p| *p == at) {
                let mut cycle = chain.split_off(first);
                cycle.push(at);
                return Some(cycle.join(" -> "));
            }
            let target = node(document, &at)
                .filter(|map| only_a_reference(map))
                .and_then(|map| map.get("$ref"))
                .and_then(Value::as_str)
                .and_then(local_ref);
            chain.push(at);
            match target {
                Some(target) => at = target,
                None => break,
            }
        }
        settled.extend(chain);
    }
    None
}

/// The pointer of the schema for item `i` of an array (`prefixItems`, `items`, or the older
/// tuple form `items: [...]` with `additionalItems`).
pub(super) fn item_schema(node: &Map<String, Value>, pointer: &str, i: usize) -> Option<String> {
    if let Some(Value::Array(prefix)) = node.get("prefixItems")
        && i < prefix.len()
    {
        return Some(format!("{pointer}/prefixItems/{i}"));
    }
    match node.get("items") {
        Some(Value::Array(tuple)) if i < tuple.len() => Some(format!("{pointer}/items/{i}")),
        Some(Value::Array(_)) => node
            .get("additionalItems")
            .filter(|a| a.is_object())
            .map(|_| format!("{pointer}/additionalItems")),
        Some(Value::Object(_)) => Some(format!("{pointer}/items")),
        _ => None,
    }
}

/// The `#/…` pointer of a `$ref` within the same schema (`#`, `#/$defs/x`), percent-decoded.
pub(super) fn local_ref(target: &str) -> Option<String> {
    if !target.starts_with('#') || (target.len() > 1 && !target.starts_with("#/")) {
        return None;
    }
    if !target.contains('%') {
        return Some(target.to_owned());
    }
    let bytes = target.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = target.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A key as a JSON pointer segment.
pub(super) fn escape(key: &str) -> String {
    if key.contains(['~', '/']) {
        key.replace('~', "~0").replace('/', "~1")
    } else {
        key.to_owned()
    }
}
