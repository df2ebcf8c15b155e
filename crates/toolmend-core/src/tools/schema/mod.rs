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
use serde_json::Value;

use crate::repair::Repair;

mod coerce;
mod refs;
mod span;

pub(crate) use coerce::has_type;
use coerce::*;
use refs::*;
use span::*;

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

/// One place where a value breaks its schema; as JSON `{"path", "keyword", "message"}`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
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

/// Why a schema cannot be used. Its message is the one the CLI and the packages show.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// A `$ref` cycle whose schemas only refer to the next: no value could be checked.
    #[error(
        "the $ref cycle {cycle} never reaches a constraint: each schema in it only refers to the \
         next"
    )]
    EmptyRefCycle {
        /// The pointers of the cycle, as `#/$defs/a -> #/$defs/b -> #/$defs/a`.
        cycle: String,
    },
    /// Not a valid JSON Schema (the validator's message).
    #[error("{message}")]
    Invalid {
        /// What the validator found wrong.
        message: String,
    },
    /// [`Schema::from_path`]: the file could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// Why it could not be read.
        source: std::io::Error,
    },
    /// [`Schema::from_path`]: the file is not JSON.
    #[error("{}: not valid JSON: {source}", path.display())]
    NotJson {
        /// The file.
        path: std::path::PathBuf,
        /// Where its JSON breaks.
        source: serde_json::Error,
    },
    /// [`Schema::from_path`]: the file's JSON is not a valid JSON Schema.
    #[error("{}: not a valid JSON Schema: {source}", path.display())]
    NotSchema {
        /// The file.
        path: std::path::PathBuf,
        /// Why its JSON is no schema.
        source: Box<SchemaError>,
    },
}

impl Schema {
    /// Compiles a schema.
    ///
    /// # Errors
    /// The value is not a valid JSON Schema, or it refers in a circle to nothing.
    pub fn new(document: Value) -> Result<Schema, SchemaError> {
        if let Some(cycle) = empty_ref_cycle(&document) {
            return Err(SchemaError::EmptyRefCycle { cycle });
        }
        let validator =
            jsonschema::options()
                .build(&document)
                .map_err(|e| SchemaError::Invalid {
                    message: e.to_string(),
                })?;
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
    pub fn from_path(path: &std::path::Path) -> Result<Schema, SchemaError> {
        let text = std::fs::read_to_string(path).map_err(|source| SchemaError::Read {
            path: path.to_owned(),
            source,
        })?;
        let document: Value =
            serde_json::from_str(&text).map_err(|source| SchemaError::NotJson {
                path: path.to_owned(),
                source,
            })?;
        Schema::new(document).map_err(|e| SchemaError::NotSchema {
            path: path.to_owned(),
            source: Box::new(e),
        })
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
        let SchemaError::EmptyRefCycle { cycle } = &e else {
            panic!("{e:?}");
        };
        assert!(
            cycle == "#/$defs/a -> #/$defs/b -> #/$defs/a"
                || cycle == "#/$defs/b -> #/$defs/a -> #/$defs/b",
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            format!(
                "the $ref cycle {cycle} never reaches a constraint: each schema in it only \
                 refers to the next"
            )
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
