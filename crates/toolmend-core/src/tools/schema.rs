//! A JSON Schema for arguments: checks a value against it, and first coerces the value to it
//! where the model's intent is unambiguous.
//!
//! Coercions, each reported as a `schema_type` repair with the JSON pointer of the value:
//! - a number or boolean written as a string, for an `integer`, `number` or `boolean`
//!   (`"3"`, `" 2.5 "`, `"True"`); the number keeps the text the model wrote;
//! - a number, for a `string` (`3` gives `"3"`, `2.50` gives `"2.50"`);
//! - an object or array written as a JSON-encoded string, for an `object` or `array`;
//! - one value, for an `array` whose items accept it (`"x"` gives `["x"]`);
//! - a member of `enum` (or the `const`) written in other case or with spaces around it
//!   (`"Celsius "` for `"celsius"`), or written as a string for a number or boolean member.
//!
//! Nothing that loses information: `"3.7"` is no integer, `"yes"` no boolean, `"007"` no
//! integer (its zeros would be lost). Where the schema offers a choice (`anyOf`, `oneOf`, a list
//! of types) a value is coerced only when no branch accepts it as it is and exactly one
//! coerced value is accepted. The walk follows `properties`, `additionalProperties`, `items`,
//! `prefixItems`, `allOf` and `$ref` to `$defs` or `definitions` of the same schema.
//!
//! ```
//! use serde_json::json;
//! use toolmend_core::schema::Schema;
//!
//! let schema = Schema::new(json!({
//!     "type": "object",
//!     "properties": {"days": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}},
//! })).unwrap();
//! let mut value = json!({"days": "3", "tags": "news"});
//! let mut repairs = Vec::new();
//! schema.apply(&mut value, true, &mut repairs).unwrap();
//! assert_eq!(value, json!({"days": 3, "tags": ["news"]}));
//! assert_eq!(repairs[0].path.as_deref(), Some("/days"));
//!
//! let mut wrong = json!({"days": "three"});
//! let violations = schema.apply(&mut wrong, true, &mut repairs).unwrap_err();
//! assert_eq!(violations[0].to_string(), r#"/days: "three" is not of type "integer" (type)"#);
//! ```

use std::fmt;
use std::sync::OnceLock;

use jsonschema::{Validator, ValidatorMap};
use serde_json::{Map, Value};

use crate::repair::{Repair, RepairKind};

/// How many `$ref` and `allOf` steps may follow one another without going into the value (a
/// schema that refers to itself ends there).
const MAX_HOPS: u32 = 32;

/// How deep one coercion pass may recurse (into the value, through `$ref`, `allOf`, a choice's
/// branches and the wrapping of one value in an array): a recursive schema such as
/// `N: anyOf [integer, array of N]` would otherwise wrap `"x"` in arrays without end. Deeper
/// parts are left as they are, for the violation to name.
const MAX_WALK_DEPTH: u32 = 256;

/// How many subschemas one coercion pass may visit, and how many more per value in the value
/// (its members and items counted): choices inside choices would otherwise try a number of
/// combinations exponential in their depth. Past it nothing more is coerced.
const WALK_STEPS: u64 = 20_000;
const WALK_STEPS_PER_VALUE: u64 = 64;

/// The subschemas one coercion pass over `value` may visit (see [`WALK_STEPS`]).
fn walk_budget(value: &Value) -> u64 {
    let mut values = 0u64;
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        values += 1;
        match v {
            Value::Array(items) => stack.extend(items),
            Value::Object(members) => stack.extend(members.values()),
            _ => {}
        }
    }
    WALK_STEPS + WALK_STEPS_PER_VALUE * values
}

/// How deep a value may nest to be checked against a schema that refers to itself (or to
/// other parts of itself): the checker recurses once per level of the value there, several
/// kilobytes of stack each in a debug build, and a deeper value would overflow a thread's
/// stack. A schema without `$ref` is a tree of bounded depth and checks values of any depth.
pub const MAX_CHECKED_NESTING: usize = 256;

/// A compiled JSON Schema.
pub struct Schema {
    document: Value,
    /// Whether the schema holds a reference (`$ref` and its kin), so that checking may recurse
    /// as deep as the value (see [`MAX_CHECKED_NESTING`]).
    refers: bool,
    validator: Validator,
    /// A validator for every subschema, keyed by its `#/…` pointer; built on the first value
    /// that needs coercing.
    parts: OnceLock<Option<ValidatorMap>>,
}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Schema")
            .field("document", &self.document)
            .finish_non_exhaustive()
    }
}

/// One place where a value breaks its schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The JSON pointer of the value (`/` for the whole value).
    pub path: String,
    /// The schema keyword it breaks (`type`, `required`, `enum`, …).
    pub keyword: String,
    /// What is wrong (`"three" is not of type "integer"`).
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} ({})", self.path, self.message, self.keyword)
    }
}

impl Schema {
    /// Compiles a schema.
    ///
    /// # Errors
    /// The value is not a valid JSON Schema; the message says why.
    pub fn new(document: Value) -> Result<Schema, String> {
        if let Some(cycle) = empty_ref_cycle(&document) {
            return Err(format!(
                "the $ref cycle {cycle} never reaches a constraint: each schema in it only \
                 refers to the next"
            ));
        }
        let validator = jsonschema::options()
            .build(&document)
            .map_err(|e| e.to_string())?;
        Ok(Schema {
            refers: has_refs(&document),
            document,
            validator,
            parts: OnceLock::new(),
        })
    }

    /// Reads a JSON Schema from a JSON file.
    ///
    /// # Errors
    /// The file cannot be read, is not JSON, or is not a valid JSON Schema; the message names
    /// the file.
    pub fn from_path(path: &std::path::Path) -> Result<Schema, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let document: Value = serde_json::from_str(&text)
            .map_err(|e| format!("{}: not valid JSON: {e}", path.display()))?;
        Schema::new(document)
            .map_err(|e| format!("{}: not a valid JSON Schema: {e}", path.display()))
    }

    /// The schema as written.
    pub fn document(&self) -> &Value {
        &self.document
    }

    /// Whether `value` matches the schema (a value too deep to be checked does not).
    pub fn is_valid(&self, value: &Value) -> bool {
        self.too_deep(value).is_none() && self.validator.is_valid(value)
    }

    /// The violation of a value nested too deep to be checked against this schema (see
    /// [`MAX_CHECKED_NESTING`]).
    fn too_deep(&self, value: &Value) -> Option<Violation> {
        (self.refers && crate::args::depth(value) > MAX_CHECKED_NESTING).then(|| Violation {
            path: "/".into(),
            keyword: "$ref".into(),
            message: format!(
                "the value nests deeper than {MAX_CHECKED_NESTING} levels, too deep to be \
                 checked against a schema that refers to itself"
            ),
        })
    }

    /// Every place `value` breaks the schema, in schema order.
    pub fn violations(&self, value: &Value) -> Vec<Violation> {
        if let Some(too_deep) = self.too_deep(value) {
            return vec![too_deep];
        }
        self.validator
            .iter_errors(value)
            .map(|e| {
                let path = e.instance_path().to_string();
                Violation {
                    path: if path.is_empty() {
                        "/".to_owned()
                    } else {
                        path
                    },
                    keyword: e.kind().keyword().to_owned(),
                    message: e.to_string(),
                }
            })
            .collect()
    }

    /// Coerces `value` to the schema where the intent is unambiguous (unless `coerce` is
    /// false), then checks it. Each coercion is added to `repairs`.
    ///
    /// # Errors
    /// Every violation that is left.
    pub fn apply(
        &self,
        value: &mut Value,
        coerce: bool,
        repairs: &mut Vec<Repair>,
    ) -> Result<(), Vec<Violation>> {
        if let Some(too_deep) = self.too_deep(value) {
            return Err(vec![too_deep]);
        }
        if self.is_valid(value) {
            return Ok(());
        }
        if coerce {
            self.coerce(value, repairs);
            if self.is_valid(value) {
                return Ok(());
            }
        }
        Err(self.violations(value))
    }

    /// Checks one JSON value written as `text` (as the args pipeline writes it), coercing it
    /// first unless `coerce` is false. `Ok(None)`: it matches as written. `Ok(Some(text))`:
    /// it matches once coerced, and the text is the value with each coerced value rewritten
    /// and every other byte kept. The coercions are added to `repairs`, their paths after
    /// `prefix` (the place of the value in a list, `/2`, or empty).
    ///
    /// # Errors
    /// Every violation that is left, paths after `prefix`.
    pub fn apply_text(
        &self,
        text: &str,
        coerce: bool,
        prefix: &str,
        repairs: &mut Vec<Repair>,
    ) -> Result<Option<String>, Vec<Violation>> {
        let with_prefix = |mut violations: Vec<Violation>| {
            for v in &mut violations {
                v.path = join(prefix, &v.path);
            }
            violations
        };
        let mut value: Value = match parse(text) {
            Some(value) => value,
            None => {
                return Err(with_prefix(vec![Violation {
                    path: "/".into(),
                    keyword: "$schema".into(),
                    message: "the value is too deep to be checked".into(),
                }]));
            }
        };
        if let Some(too_deep) = self.too_deep(&value) {
            return Err(with_prefix(vec![too_deep]));
        }
        if self.is_valid(&value) {
            return Ok(None);
        }
        if !coerce {
            return Err(with_prefix(self.violations(&value)));
        }
        let mut coerced = Vec::new();
        self.coerce_at_root(&mut value, &mut coerced);
        if !self.is_valid(&value) {
            return Err(with_prefix(self.violations(&value)));
        }
        // Rewrite the outermost coerced values, last first so earlier spans stay put.
        let mut spans: Vec<(std::ops::Range<usize>, String)> = Vec::new();
        for repair in &coerced {
            let path = repair.path.as_deref().unwrap_or_default();
            let inside_earlier = coerced.iter().any(|r| {
                let outer = r.path.as_deref().unwrap_or_default();
                outer.len() < path.len()
                    && path.starts_with(outer)
                    && path.as_bytes()[outer.len()] == b'/'
            });
            if inside_earlier {
                continue;
            }
            let (Some(span), Some(new)) = (span(text, path), value.pointer(path)) else {
                // Cannot happen: coercion keeps every key and item where it was.
                return Err(with_prefix(vec![Violation {
                    path: shown(path),
                    keyword: "$schema".into(),
                    message: "the coerced value could not be written".into(),
                }]));
            };
            spans.push((span, new.to_string()));
        }
        spans.sort_by_key(|(span, _)| std::cmp::Reverse(span.start));
        spans.dedup_by_key(|(span, _)| span.start);
        let mut out = text.to_owned();
        for (span, new) in spans {
            out.replace_range(span, &new);
        }
        repairs.extend(coerced.into_iter().map(|mut r| {
            r.path = r.path.map(|p| join(prefix, &shown(&p)));
            r
        }));
        Ok(Some(out))
    }

    /// A mended value checked against the schema and coerced to it unless `coerce` is false,
    /// as `args --schema` does: `Ok(None)` when it matches as it is, else the coerced value's
    /// text and the coercions. A list of values (`--concat all`) is checked value by value,
    /// the paths under each one's index.
    ///
    /// # Errors
    /// Every violation that is left.
    pub fn apply_mended(
        &self,
        mended: &crate::args::Mended<'_>,
        coerce: bool,
    ) -> Result<Option<(String, Vec<Repair>)>, Vec<Violation>> {
        let mut repairs = Vec::new();
        if !mended.is_list() {
            let part = mended.parts().next().unwrap_or("null");
            return Ok(self
                .apply_text(part, coerce, "", &mut repairs)?
                .map(|value| (value, repairs)));
        }
        let mut violations = Vec::new();
        let mut items = Vec::new();
        let mut changed = false;
        for (i, part) in mended.parts().enumerate() {
            match self.apply_text(part, coerce, &format!("/{i}"), &mut repairs) {
                Ok(Some(value)) => {
                    changed = true;
                    items.push(value);
                }
                Ok(None) => items.push(part.to_owned()),
                Err(more) => violations.extend(more),
            }
        }
        if !violations.is_empty() {
            return Err(violations);
        }
        Ok(changed.then(|| (format!("[{}]", items.join(",")), repairs)))
    }

    /// The `invalid_parameters` error of a value that breaks the schema, its message listing
    /// every violation (`/days: "three" is not of type "integer" (type)`).
    #[must_use]
    pub fn mismatch(violations: &[Violation]) -> crate::Error {
        let listed: Vec<String> = violations.iter().map(ToString::to_string).collect();
        crate::Error::whole(
            crate::Code::InvalidParameters,
            format!("the value does not match the schema: {}", listed.join("; ")),
        )
    }

    /// Coerces the part of a value read so far (a stream's partial arguments) as
    /// [`Schema::coerce`] will coerce the whole, so that what is shown now is never changed
    /// later. `open` is the JSON pointer of the string still growing, if any. Values inside a
    /// choice (`anyOf`, `oneOf`) that is still open cannot be known yet ([`Partial::Unsure`]);
    /// an open string that its schema may retype is not shown yet ([`Partial::Wait`]).
    pub fn coerce_partial(&self, value: &mut Value, open: Option<&str>) -> Partial {
        if self.too_deep(value).is_some() {
            return Partial::Unsure;
        }
        let Some(open) = open else {
            self.coerce(value, &mut Vec::new());
            return Partial::Ready;
        };
        let segments: Vec<String> = open
            .split('/')
            .skip(1)
            .map(|s| s.replace("~1", "/").replace("~0", "~"))
            .collect();
        let Some(parts) = self
            .parts
            .get_or_init(|| jsonschema::options().build_map(&self.document).ok())
        else {
            return Partial::Unsure;
        };
        let mut repairs = Vec::new();
        let steps = std::cell::Cell::new(walk_budget(value));
        let mut walk = Walk {
            document: &self.document,
            parts,
            path: String::new(),
            repairs: &mut repairs,
            depth: 0,
            steps: &steps,
        };
        walk.partial(value, "#".to_owned(), &segments, 0)
    }

    /// Coerces `value` to the schema where the intent is unambiguous; each change is added to
    /// `repairs`. A value that matches the schema is left as it is.
    pub fn coerce(&self, value: &mut Value, repairs: &mut Vec<Repair>) {
        let start = repairs.len();
        self.coerce_at_root(value, repairs);
        for r in &mut repairs[start..] {
            r.path = r.path.as_deref().map(shown);
        }
    }

    /// [`Schema::coerce`], with the whole value's path left empty (as JSON pointers write it).
    /// A value too deep to be checked is left as it is.
    fn coerce_at_root(&self, value: &mut Value, repairs: &mut Vec<Repair>) {
        if self.too_deep(value).is_some() || self.is_valid(value) {
            return;
        }
        let parts = self.parts.get_or_init(|| {
            // Compiled once per schema, and only when some value needs it.
            jsonschema::options().build_map(&self.document).ok()
        });
        let Some(parts) = parts else {
            return;
        };
        let steps = std::cell::Cell::new(walk_budget(value));
        let mut walk = Walk {
            document: &self.document,
            parts,
            path: String::new(),
            repairs,
            depth: 0,
            steps: &steps,
        };
        walk.value(value, "#".to_owned(), 0);
    }
}

/// What [`Schema::coerce_partial`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Partial {
    /// The value read so far is coerced as the whole will be.
    Ready,
    /// The open string may still be retyped: show nothing until it closes.
    Wait,
    /// A choice around what is still open decides later: nothing can be shown before the end.
    Unsure,
}

/// One coercion pass over a value.
struct Walk<'a> {
    document: &'a Value,
    parts: &'a ValidatorMap,
    /// The JSON pointer of the value being walked.
    path: String,
    repairs: &'a mut Vec<Repair>,
    /// How deep this pass has recursed (see [`MAX_WALK_DEPTH`]).
    depth: u32,
    /// How many more subschemas the whole pass, trials included, may visit (see
    /// [`WALK_STEPS`]).
    steps: &'a std::cell::Cell<u64>,
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

    /// [`Schema::coerce_partial`] at the subschema `pointer`, for a value whose still open
    /// string is at `open` (relative segments) inside it.
    fn partial(
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
    fn value(&mut self, value: &mut Value, pointer: String, hops: u32) {
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
fn shown(path: &str) -> String {
    if path.is_empty() {
        "/".to_owned()
    } else {
        path.to_owned()
    }
}

/// `path` (as shown) inside the value at `prefix`.
fn join(prefix: &str, path: &str) -> String {
    match (prefix, path) {
        ("", _) => path.to_owned(),
        (_, "/") => prefix.to_owned(),
        _ => format!("{prefix}{path}"),
    }
}

/// How deep a value may nest to be checked (the pipeline's own limit is the caller's).
const MAX_NESTING: usize = 1000;

/// The value of one JSON text, each number's text kept.
fn parse(text: &str) -> Option<Value> {
    crate::exact::parse(text, MAX_NESTING).ok()
}

/// Where the value at JSON pointer `path` is written in the JSON `text`.
fn span(text: &str, path: &str) -> Option<std::ops::Range<usize>> {
    let b = text.as_bytes();
    let mut at = skip_space(b, 0);
    if !path.is_empty() {
        for segment in path.strip_prefix('/')?.split('/') {
            let segment = segment.replace("~1", "/").replace("~0", "~");
            at = match b.get(at)? {
                b'{' => {
                    let mut i = skip_space(b, at + 1);
                    loop {
                        if b.get(i)? != &b'"' {
                            return None;
                        }
                        let key_end = skip_value(b, i)?;
                        let key = &text[i + 1..key_end - 1];
                        let same = if key.contains('\\') {
                            serde_json::from_str::<String>(&text[i..key_end]).ok()? == segment
                        } else {
                            key == segment
                        };
                        i = skip_space(b, key_end);
                        i = skip_space(b, i + usize::from(b.get(i) == Some(&b':')));
                        if same {
                            break i;
                        }
                        i = skip_space(b, skip_value(b, i)?);
                        if b.get(i)? != &b',' {
                            return None;
                        }
                        i = skip_space(b, i + 1);
                    }
                }
                b'[' => {
                    let index: usize = segment.parse().ok()?;
                    let mut i = skip_space(b, at + 1);
                    for _ in 0..index {
                        i = skip_space(b, skip_value(b, i)?);
                        if b.get(i)? != &b',' {
                            return None;
                        }
                        i = skip_space(b, i + 1);
                    }
                    i
                }
                _ => return None,
            };
        }
    }
    Some(at..skip_value(b, at)?)
}

fn skip_space(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

/// The end of the JSON value that starts at `i`.
fn skip_value(b: &[u8], mut i: usize) -> Option<usize> {
    let mut depth = 0usize;
    loop {
        match b.get(i)? {
            b'"' => {
                i += 1;
                loop {
                    match b.get(i)? {
                        b'\\' => i += 2,
                        b'"' => break,
                        _ => i += 1,
                    }
                }
                i += 1;
            }
            b'{' | b'[' => {
                depth += 1;
                i += 1;
            }
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                i += 1;
            }
            _ if depth == 0 => {
                // A number or literal: up to the next delimiter.
                while b.get(i).is_some_and(|c| {
                    !matches!(c, b',' | b'}' | b']' | b':') && !c.is_ascii_whitespace()
                }) {
                    i += 1;
                }
                return Some(i);
            }
            _ => i += 1,
        }
        if depth == 0 {
            return Some(i);
        }
    }
}

/// The subschema at a `#/…` pointer.
fn node<'d>(document: &'d Value, pointer: &str) -> Option<&'d Map<String, Value>> {
    let inner = pointer.strip_prefix('#')?;
    document.pointer(inner)?.as_object()
}

/// Whether a schema holds a reference anywhere (`$ref`, `$dynamicRef`, `$recursiveRef`).
fn has_refs(document: &Value) -> bool {
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
const NOT_CONSTRAINTS: [&str; 12] = [
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
/// is not one: the walk that follows it ends at [`MAX_HOPS`] and the checker at its own rule.
fn empty_ref_cycle(document: &Value) -> Option<String> {
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
fn item_schema(node: &Map<String, Value>, pointer: &str, i: usize) -> Option<String> {
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
fn local_ref(target: &str) -> Option<String> {
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
fn escape(key: &str) -> String {
    if key.contains(['~', '/']) {
        key.replace('~', "~0").replace('/', "~1")
    } else {
        key.to_owned()
    }
}

fn is_space(c: char) -> bool {
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
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// The one member of an enum that `value` writes differently: a string in other case or with
/// spaces around it, a number or boolean written as a string, a number for a string member.
fn member_meant<'m>(members: &[&'m Value], value: &Value) -> Option<&'m Value> {
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
fn is_integer_text(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
}

/// The number that `text` writes as JSON does, with exactly that text; `None` for anything
/// else.
fn number(text: &str) -> Option<Value> {
    crate::exact::number(text).map(Value::Number)
}

/// A JSON-encoded string's value, when the string is exactly one JSON object or array (its
/// numbers' text kept).
fn decode(text: &str) -> Option<Value> {
    let trimmed = text.trim_matches(is_space);
    if !trimmed.starts_with(['{', '[']) {
        return None;
    }
    parse(trimmed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn coerced(schema: Value, value: Value) -> (Value, Vec<String>) {
        let schema = Schema::new(schema).unwrap();
        let mut value = value;
        let mut repairs = Vec::new();
        schema.coerce(&mut value, &mut repairs);
        (value, repairs.into_iter().filter_map(|r| r.path).collect())
    }

    #[test]
    fn numbers_keep_the_text_written() {
        for text in [
            "0",
            "-0",
            "3",
            "2.50",
            "1E5",
            "1e+5",
            "-1.5e-3",
            "123456789012345678901234567890",
        ] {
            assert_eq!(number(text).unwrap().to_string(), text);
        }
        for bad in [
            "", "-", "01", "1.", ".5", "+1", "1e", "1e+", "0x1", "1_000", "NaN", " 1",
        ] {
            assert!(number(bad).is_none(), "{bad}");
        }
        let (value, _) = coerced(
            json!({"properties": {"n": {"type": "integer"}, "s": {"type": "string"}}}),
            parse(r#"{"n": "123456789012345678901234567890", "s": 2.50}"#).unwrap(),
        );
        assert_eq!(
            value.to_string(),
            r#"{"n":123456789012345678901234567890,"s":"2.50"}"#
        );
        assert!(is_integer_text("-12"));
        assert!(!is_integer_text("007"));
        assert!(!is_integer_text("3.0"));
    }

    #[test]
    fn pointers_are_escaped() {
        let (value, paths) = coerced(
            json!({"properties": {"a/b~c": {"type": "integer"}}}),
            json!({"a/b~c": "1"}),
        );
        assert_eq!(value, json!({"a/b~c": 1}));
        assert_eq!(paths, ["/a~1b~0c"]);
    }

    #[test]
    fn partial_values_are_coerced_as_the_whole_will_be() {
        let schema = Schema::new(json!({"properties": {
            "days": {"type": "integer"}, "city": {"type": "string"},
            "unit": {"enum": ["c", "f"]}, "list": {"type": "array", "items": {"type": "integer"}},
            "either": {"anyOf": [{"type": "integer"}, {"type": "object"}]}}}))
        .unwrap();
        let partial = |value: Value, open: Option<&str>| {
            let mut value = value;
            let found = schema.coerce_partial(&mut value, open);
            (value, found)
        };
        // Closed values are coerced now; the open string of a string parameter is shown as is.
        assert_eq!(
            partial(json!({"days": "3", "city": "Os"}), Some("/city")),
            (json!({"days": 3, "city": "Os"}), Partial::Ready)
        );
        // An open string its schema may retype ("3" may become "35") waits until it closes.
        assert_eq!(
            partial(json!({"days": "3"}), Some("/days")).1,
            Partial::Wait
        );
        assert_eq!(
            partial(json!({"unit": "C"}), Some("/unit")).1,
            Partial::Wait
        );
        assert_eq!(
            partial(json!({"list": ["1", "2"]}), Some("/list/1")),
            (json!({"list": [1, "2"]}), Partial::Wait)
        );
        // A choice around what is still open is made only at the end.
        assert_eq!(
            partial(json!({"either": {"a": "x"}}), Some("/either/a")).1,
            Partial::Unsure
        );
        // Nothing open: the whole value.
        assert_eq!(
            partial(json!({"either": "4"}), None),
            (json!({"either": 4}), Partial::Ready)
        );
    }

    #[test]
    fn recursive_choices_end() {
        // Three ways to be an array of itself: every wrap of "x" tries each of them.
        let n = json!({"anyOf": [{"type": "integer"},
            {"type": "array", "items": {"$ref": "#/$defs/N"}},
            {"type": "array", "items": {"$ref": "#/$defs/N"}, "minItems": 1},
            {"type": "array", "items": {"$ref": "#/$defs/N"}, "maxItems": 3}]});
        let schema = json!({"properties": {"v": {"$ref": "#/$defs/N"}}, "$defs": {"N": n}});
        let (value, repairs) = coerced(schema, json!({"v": "x"}));
        assert_eq!(value, json!({"v": "x"}));
        assert!(repairs.is_empty());
    }

    #[test]
    fn the_walk_budget_grows_with_the_value() {
        let items: Vec<Value> = (0..30_000).map(|i| json!(i.to_string())).collect();
        let (value, repairs) = coerced(
            json!({"type": "array", "items": {"type": "integer"}}),
            Value::Array(items),
        );
        assert_eq!(repairs.len(), 30_000);
        assert_eq!(value[29_999], json!(29_999));
    }

    #[test]
    fn ref_cycles_that_say_nothing_are_refused() {
        let e = Schema::new(
            json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a", "title": "B"}},
            "properties": {"v": {"$ref": "#/$defs/a"}}}),
        )
        .unwrap_err();
        assert!(
            e.contains("#/$defs/a -> #/$defs/b -> #/$defs/a")
                || e.contains("#/$defs/b -> #/$defs/a -> #/$defs/b"),
            "{e}"
        );
        assert!(Schema::new(json!({"$ref": "#"})).is_err());
        // A cycle that says something of the value is a schema like any other.
        assert!(Schema::new(json!({"$ref": "#", "type": "integer"})).is_ok());
        assert!(
            Schema::new(json!({"$defs": {"t": {"type": "array", "items": {"$ref": "#/$defs/t"}}}}))
                .is_ok()
        );
    }

    #[test]
    fn self_reference_ends() {
        let (value, _) = coerced(json!({"$ref": "#", "type": "integer"}), json!("4"));
        assert_eq!(value, json!(4));
    }
}
