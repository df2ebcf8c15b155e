//! The walk that coerces a value to a schema where exactly one reading fits, and the value
//! comparisons it is built from (types, enum members written otherwise, numbers in strings).

use serde_json::{Map, Value};

use super::{MAX_HOPS, MAX_WALK_DEPTH, Partial, escape, item_schema, local_ref, node, parse};
use crate::repair::{Repair, RepairKind};
use jsonschema::ValidatorMap;

/// One pass of coercion over a value, following the schema alongside it.
pub(super) struct Walk<'a> {
    pub(super) document: &'a Value,
    pub(super) parts: &'a ValidatorMap,
    /// The JSON pointer of the value being walked.
    pub(super) path: String,
    pub(super) repairs: &'a mut Vec<Repair>,
    /// How deep this pass has recursed (see [`MAX_WALK_DEPTH`]).
    pub(super) depth: u32,
    /// How many more subschemas the whole pass, trials included, may visit (see
    /// [`super::WALK_STEPS`]).
    pub(super) steps: &'a std::cell::Cell<u64>,
}

impl Walk<'_> {
    /// Whether the subschema at `pointer` accepts `value` (`None`: it has no validator).
    fn accepts(&self, pointer: &str, value: &Value) -> Option<bool> {
        self.parts.get(pointer).map(|v| v.is_valid(value))
    }

    /// A pass over the same schema at the same path that reports into `repairs`: to try a
    /// coercion that is kept only if its result is taken.
    fn trial<'b>(&'b self, repairs: &'b mut Vec<Repair>) -> Walk<'b> {
        Walk {
            document: self.document,
            parts: self.parts,
            path: self.path.clone(),
            repairs,
            depth: self.depth,
            steps: self.steps,
        }
    }

    /// Takes one step deeper, when the pass may: `false` once it is too deep or has visited
    /// too many subschemas (the caller then leaves the value as it is).
    fn enter(&mut self) -> bool {
        if self.depth >= MAX_WALK_DEPTH || self.steps.get() == 0 {
            return false;
        }
        self.depth += 1;
        self.steps.set(self.steps.get() - 1);
        true
    }

    fn report(&mut self) {
        self.repairs.push(Repair {
            kind: RepairKind::SchemaType,
            offset: None,
            layers: None,
            text: None,
            path: Some(self.path.clone()),
        });
    }

    /// [`super::Schema::coerce_partial`] at the subschema `pointer`, for a value whose still open
    /// string is at `open` (relative segments) inside it.
    pub(super) fn partial(
        &mut self,
        value: &mut Value,
        pointer: String,
        open: &[String],
        hops: u32,
    ) -> Partial {
        if !self.enter() {
            return Partial::Unsure;
        }
        let found = self.partial_here(value, pointer, open, hops);
        self.depth -= 1;
        found
    }

    /// [`Walk::partial`] once the step is taken.
    fn partial_here(
        &mut self,
        value: &mut Value,
        pointer: String,
        open: &[String],
        hops: u32,
    ) -> Partial {
        if hops > MAX_HOPS {
            return Partial::Unsure;
        }
        let Some(node) = node(self.document, &pointer) else {
            return Partial::Ready;
        };
        if ["anyOf", "oneOf"].iter().any(|k| node.contains_key(*k)) {
            return if open.is_empty() {
                Partial::Wait
            } else {
                Partial::Unsure
            };
        }
        let mut found = Partial::Ready;
        let mut merge = |p: Partial| {
            found = match (found, p) {
                (Partial::Unsure, _) | (_, Partial::Unsure) => Partial::Unsure,
                (Partial::Wait, _) | (_, Partial::Wait) => Partial::Wait,
                _ => Partial::Ready,
            }
        };
        if let Some(Value::String(target)) = node.get("$ref")
            && let Some(target) = local_ref(target)
        {
            merge(self.partial(value, target, open, hops + 1));
        }
        if let Some(Value::Array(all)) = node.get("allOf") {
            for i in 0..all.len() {
                merge(self.partial(value, format!("{pointer}/allOf/{i}"), open, hops + 1));
            }
        }
        let types: Vec<&str> = match node.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let Some((first, rest)) = open.split_first() else {
            // The growing string itself: shown only where the schema takes any string as it is.
            let retyped = node.contains_key("enum")
                || node.contains_key("const")
                || (!types.is_empty() && !types.contains(&"string"));
            if retyped {
                merge(Partial::Wait);
            }
            return found;
        };
        if !types.is_empty() && !types.iter().any(|t| has_type(value, t)) {
            // An open container of another type than the schema's may be wrapped at the end.
            return Partial::Unsure;
        }
        self.each_child(
            value,
            node,
            &pointer,
            Some(first.as_str()),
            |walk, child, sub, open| {
                if open {
                    merge(walk.partial(child, sub, rest, 0));
                } else {
                    walk.value(child, sub, 0);
                }
            },
        );
        found
    }

    /// Calls `visit` on each member of an object and item of an array that has a subschema
    /// under `node` (at `pointer`), with that subschema's pointer and the path set to the
    /// child's; `visit` is told whether the child is the one still open: the member named
    /// `open`, or the last item when `open` is its index.
    fn each_child(
        &mut self,
        value: &mut Value,
        node: &Map<String, Value>,
        pointer: &str,
        open: Option<&str>,
        mut visit: impl FnMut(&mut Self, &mut Value, String, bool),
    ) {
        let depth = self.path.len();
        match value {
            Value::Object(map) => {
                let properties = node.get("properties").and_then(Value::as_object);
                let additional = node.get("additionalProperties").filter(|a| a.is_object());
                for (key, child) in map.iter_mut() {
                    let escaped = escape(key);
                    let sub = if properties.is_some_and(|p| p.contains_key(key)) {
                        format!("{pointer}/properties/{escaped}")
                    } else if additional.is_some() {
                        format!("{pointer}/additionalProperties")
                    } else {
                        continue;
                    };
                    self.path.push('/');
                    self.path.push_str(&escaped);
                    visit(self, child, sub, open == Some(key.as_str()));
                    self.path.truncate(depth);
                }
            }
            Value::Array(items) => {
                let last = items.len().saturating_sub(1);
                for (i, child) in items.iter_mut().enumerate() {
                    let Some(sub) = item_schema(node, pointer, i) else {
                        continue;
                    };
                    let index = i.to_string();
                    self.path.push('/');
                    self.path.push_str(&index);
                    visit(self, child, sub, i == last && open == Some(index.as_str()));
                    self.path.truncate(depth);
                }
            }
            _ => {}
        }
    }

    /// Coerces `value` to the subschema at `pointer`.
    pub(super) fn value(&mut self, value: &mut Value, pointer: String, hops: u32) {
        if self.enter() {
            self.value_here(value, pointer, hops);
            self.depth -= 1;
        }
    }

    /// [`Walk::value`] once the step is taken.
    fn value_here(&mut self, value: &mut Value, pointer: String, hops: u32) {
        if hops > MAX_HOPS || self.accepts(&pointer, value) != Some(false) {
            return;
        }
        let Some(node) = node(self.document, &pointer) else {
            return;
        };
        if let Some(Value::String(target)) = node.get("$ref")
            && let Some(target) = local_ref(target)
        {
            self.value(value, target, hops + 1);
        }
        if let Some(Value::Array(all)) = node.get("allOf") {
            for i in 0..all.len() {
                self.value(value, format!("{pointer}/allOf/{i}"), hops + 1);
            }
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = node.get(key) {
                let branches: Vec<String> = (0..branches.len())
                    .map(|i| format!("{pointer}/{key}/{i}"))
                    .collect();
                self.choose(value, &branches, hops);
            }
        }
        self.retype(value, &pointer);
        self.children(value, &pointer);
    }

    /// `anyOf`/`oneOf`: the one coerced value that a branch accepts, when no branch accepts
    /// the value as it is and no two branches accept different values.
    fn choose(&mut self, value: &mut Value, branches: &[String], hops: u32) {
        if branches
            .iter()
            .any(|b| self.accepts(b, value) != Some(false))
        {
            return;
        }
        let mut chosen: Option<(Value, Vec<Repair>)> = None;
        for branch in branches {
            let mut candidate = value.clone();
            let mut repairs = Vec::new();
            self.trial(&mut repairs)
                .value(&mut candidate, branch.clone(), hops + 1);
            if repairs.is_empty() || self.accepts(branch, &candidate) != Some(true) {
                continue;
            }
            match &chosen {
                None => chosen = Some((candidate, repairs)),
                Some((earlier, _)) if *earlier == candidate => {}
                Some(_) => return,
            }
        }
        if let Some((candidate, repairs)) = chosen {
            *value = candidate;
            self.repairs.extend(repairs);
        }
    }

    /// `enum`, `const` and `type`: the value of the right type or member, when one is meant.
    fn retype(&mut self, value: &mut Value, pointer: &str) {
        let Some(node) = node(self.document, pointer) else {
            return;
        };
        let members: Option<Vec<&Value>> = match (node.get("enum"), node.get("const")) {
            (Some(Value::Array(members)), _) => Some(members.iter().collect()),
            (_, Some(member)) => Some(vec![member]),
            _ => None,
        };
        if let Some(members) = members {
            if members.iter().any(|m| same(m, value)) {
                return;
            }
            // A value that is no member is left for the violation to name, whatever its type.
            if let Some(member) = member_meant(&members, value) {
                *value = member.clone();
                self.report();
            }
            return;
        }
        let types: Vec<&str> = match node.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => return,
        };
        if types.is_empty() || types.iter().any(|t| has_type(value, t)) {
            return;
        }
        let mut chosen: Option<Value> = None;
        for t in &types {
            let Some(candidate) = self.convert(value, t, pointer) else {
                continue;
            };
            match &chosen {
                None => chosen = Some(candidate),
                Some(earlier) if *earlier == candidate => {}
                Some(_) => return,
            }
        }
        if let Some(candidate) = chosen {
            *value = candidate;
            self.report();
        }
    }

    /// `value` as a value of JSON type `t`, when that is what it means.
    fn convert(&mut self, value: &Value, t: &str, pointer: &str) -> Option<Value> {
        match (t, value) {
            ("integer", Value::String(s)) => {
                let s = s.trim_matches(is_space);
                is_integer_text(s).then(|| number(s)).flatten()
            }
            ("number", Value::String(s)) => number(s.trim_matches(is_space)),
            ("boolean", Value::String(s)) => {
                let s = s.trim_matches(is_space);
                if s.eq_ignore_ascii_case("true") {
                    Some(Value::Bool(true))
                } else if s.eq_ignore_ascii_case("false") {
                    Some(Value::Bool(false))
                } else {
                    None
                }
            }
            ("string", Value::Number(n)) => Some(Value::String(n.to_string())),
            ("object", Value::String(s)) => decode(s).filter(Value::is_object),
            ("array", Value::String(s)) if decode(s).is_some_and(|v| v.is_array()) => decode(s),
            ("array", Value::Null | Value::Array(_)) => None,
            ("array", one) => {
                // One value for a list of them, when the items take it (coerced as they say).
                let mut wrapped = Value::Array(vec![one.clone()]);
                let mut repairs = Vec::new();
                self.trial(&mut repairs).children(&mut wrapped, pointer);
                let Value::Array(items) = &wrapped else {
                    unreachable!("wrapped in an array")
                };
                let taken = match item_schema(node(self.document, pointer)?, pointer, 0) {
                    Some(items_pointer) => self.accepts(&items_pointer, &items[0]) == Some(true),
                    None => true,
                };
                taken.then_some(Value::Array(vec![one.clone()]))
            }
            _ => None,
        }
    }

    /// Coerces the members of an object and the items of an array.
    fn children(&mut self, value: &mut Value, pointer: &str) {
        let Some(node) = node(self.document, pointer) else {
            return;
        };
        self.each_child(value, node, pointer, None, |walk, child, sub, _| {
            walk.value(child, sub, 0);
        });
    }
}

/// A JSON pointer as records show it: `/` for the whole value.
pub(super) fn shown(path: &str) -> String {
    if path.is_empty() {
        "/".to_owned()
    } else {
        path.to_owned()
    }
}

/// `path` (as shown) inside the value at `prefix`.
pub(super) fn join(prefix: &str, path: &str) -> String {
    match (prefix, path) {
        ("", _) => path.to_owned(),
        (_, "/") => prefix.to_owned(),
        _ => format!("{prefix}{path}"),
    }
}

/// How deep a value may nest to be checked (the pipeline's own limit is the caller's).
pub(super) fn is_space(c: char) -> bool {
    c.is_ascii_whitespace()
}

/// Whether `value` is of JSON Schema type `t` (`1.0` is an integer, as JSON Schema says).
pub(crate) fn has_type(value: &Value, t: &str) -> bool {
    match (t, value) {
        ("integer", Value::Number(n)) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        ("number", Value::Number(_))
        | ("string", Value::String(_))
        | ("boolean", Value::Bool(_))
        | ("null", Value::Null)
        | ("array", Value::Array(_))
        | ("object", Value::Object(_)) => true,
        _ => false,
    }
}

/// Equal as JSON Schema compares (`1` and `1.0` are the same number).
pub(super) fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// The one member of an enum that `value` writes differently: a string in other case or with
/// spaces around it, a number or boolean written as a string, a number for a string member.
pub(super) fn member_meant<'m>(members: &[&'m Value], value: &Value) -> Option<&'m Value> {
    let one = |found: Vec<&'m Value>| (found.len() == 1).then(|| found[0]);
    match value {
        Value::String(s) => {
            let trimmed = s.trim_matches(is_space);
            let strings = |same: &dyn Fn(&str) -> bool| -> Vec<&'m Value> {
                members
                    .iter()
                    .copied()
                    .filter(|m| m.as_str().is_some_and(same))
                    .collect()
            };
            let exact = strings(&|m| m == trimmed);
            if !exact.is_empty() {
                return one(exact);
            }
            let folded = trimmed.to_lowercase();
            let caseless = strings(&|m| m.trim_matches(is_space).to_lowercase() == folded);
            if !caseless.is_empty() {
                return one(caseless);
            }
            let written = match trimmed.to_ascii_lowercase().as_str() {
                "true" => Some(Value::Bool(true)),
                "false" => Some(Value::Bool(false)),
                _ => number(trimmed),
            }?;
            one(members
                .iter()
                .copied()
                .filter(|m| !m.is_string() && same(m, &written))
                .collect())
        }
        Value::Number(n) => {
            let text = n.to_string();
            one(members
                .iter()
                .copied()
                .filter(|m| m.as_str() == Some(text.as_str()))
                .collect())
        }
        Value::Bool(b) => {
            let text = if *b { "true" } else { "false" };
            one(members
                .iter()
                .copied()
                .filter(|m| m.as_str() == Some(text))
                .collect())
        }
        _ => None,
    }
}

/// Whether `text` is a JSON integer with no sign but `-` and no leading zero.
pub(super) fn is_integer_text(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
}

/// The number that `text` writes as JSON does, with exactly that text; `None` for anything
/// else.
pub(super) fn number(text: &str) -> Option<Value> {
    crate::exact::number(text).map(Value::Number)
}

/// A JSON-encoded string's value, when the string is exactly one JSON object or array (its
/// numbers' text kept).
pub(super) fn decode(text: &str) -> Option<Value> {
    let trimmed = text.trim_matches(is_space);
    if !trimmed.starts_with(['{', '[']) {
        return None;
    }
    parse(trimmed)
}
