//! Tools files: the definitions of the tools a model may call, read from JSON or TOML.
//!
//! A tools file is a list of tools (in JSON an array, or an object with a `tools` array; in
//! TOML an array of `[[tools]]` tables). Each tool is written in one of three forms:
//!
//! - toolmend's own: `name`, `description`, `parameters` as a JSON Schema object or as a list of
//!   `{name, type, required, description}` (`required` defaults to false), `read_only`,
//!   `requires_approval`, and for the loop `command` (argv list) and `timeout` (seconds);
//! - OpenAI's: `{"type": "function", "function": {"name", "description", "parameters"}}`;
//! - MCP's: `name`, `description`, `inputSchema` (and `annotations.readOnlyHint`).
//!
//! ```
//! use toolmend_core::tools::Tools;
//!
//! let tools = Tools::from_json_str(r#"[
//!   {"name": "read_file", "description": "Read a file", "read_only": true,
//!    "parameters": [{"name": "path", "type": "string", "required": true}]},
//!   {"type": "function", "function": {"name": "get_weather",
//!    "parameters": {"type": "object", "properties": {"days": {"type": "integer"}}}}}
//! ]"#).unwrap();
//! assert!(tools.get("read_file").unwrap().read_only);
//! let weather = tools.get("get_weather").unwrap();
//! assert!(weather.violations(&serde_json::json!({"days": 3})).is_empty());
//! assert_eq!(weather.violations(&serde_json::json!({"days": "x"}))[0].path, "/days");
//! ```

pub mod schema;
pub(crate) mod typing;

use std::fmt;
use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::repair::Repair;
use crate::tools::schema::{Partial, Schema, Violation};

mod forms;

use forms::tool_from_value;

/// Why a tools file could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolsError {
    /// What went wrong, for a program to act on.
    pub kind: ToolsErrorKind,
    /// What went wrong, for a person: names the file, the tool and the key where known.
    pub message: String,
}

/// The kinds of [`ToolsError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolsErrorKind {
    /// The file cannot be read.
    Unreadable,
    /// The text is not JSON (or not TOML, for a `.toml` file).
    Syntax,
    /// The document is not a list of tools (nor an object with a `tools` list).
    NotAList,
    /// A tool is defined badly (no name, a parameter schema that is not an object, …).
    BadTool,
    /// Two tools have one name, or names that a call cannot tell apart.
    Duplicate,
}

impl ToolsError {
    fn new(kind: ToolsErrorKind, message: impl Into<String>) -> ToolsError {
        ToolsError {
            kind,
            message: message.into(),
        }
    }
}

/// One parameter as shown in the system prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// The parameter's name.
    pub name: String,
    /// Its JSON type (`string`, `integer`, …), or `any` when the schema does not say.
    pub kind: String,
    /// Whether a call must give it.
    pub required: bool,
    /// What it means (may be empty).
    pub description: String,
}

/// One tool definition.
pub struct Tool {
    /// The name a call uses.
    pub name: String,
    /// What the tool does (may be empty).
    pub description: String,
    /// The JSON Schema of its parameters (an object schema).
    pub schema: Value,
    /// The parameters, in the order the definition gives them.
    pub params: Vec<Param>,
    /// A call needs approval before it runs.
    pub requires_approval: bool,
    /// The tool only reads: concatenated arguments become several calls.
    pub read_only: bool,
    /// The command the loop runs (argv, never a shell string).
    pub command: Option<Vec<String>>,
    /// The command's timeout (a positive number of seconds in the definition).
    pub timeout: Option<Duration>,
    checker: Schema,
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name)
            .field("schema", &self.schema)
            .field("read_only", &self.read_only)
            .finish_non_exhaustive()
    }
}

impl Tool {
    /// The JSON Schema type declared for a top-level parameter, when there is one.
    pub fn param_schema(&self, name: &str) -> Option<&Value> {
        self.schema.get("properties")?.get(name)
    }

    /// Every place `parameters` breaks the schema, in schema order.
    pub fn violations(&self, parameters: &Value) -> Vec<Violation> {
        self.checker.violations(parameters)
    }

    /// The partial parameters of a call read so far, coerced as the whole call will be (see
    /// [`Schema::coerce_partial`]).
    pub fn coerce_partial(
        &self,
        parameters: &mut Map<String, Value>,
        open: Option<&str>,
    ) -> Partial {
        let mut instance = Value::Object(std::mem::take(parameters));
        let found = self.checker.coerce_partial(&mut instance, open);
        if let Value::Object(map) = instance {
            *parameters = map;
        }
        found
    }

    /// Coerces `parameters` to the schema where the intent is unambiguous (unless `coerce` is
    /// false; see [`crate::schema`]), each change added to `repairs`, then checks them.
    ///
    /// # Errors
    /// Every violation that is left.
    pub fn check(
        &self,
        parameters: &mut Map<String, Value>,
        coerce: bool,
        repairs: &mut Vec<Repair>,
    ) -> Result<(), Vec<Violation>> {
        let mut instance = Value::Object(std::mem::take(parameters));
        let result = self.checker.apply(&mut instance, coerce, repairs);
        if let Value::Object(map) = instance {
            *parameters = map;
        }
        result
    }
}

/// The tools of a tools file, in file order.
#[derive(Debug, Default)]
pub struct Tools {
    tools: Vec<Tool>,
}

impl Tools {
    /// Reads a tools file: TOML when its name ends in `.toml`, JSON otherwise.
    ///
    /// # Errors
    /// The file cannot be read, does not parse, or defines a tool badly.
    pub fn from_path(path: &Path) -> Result<Tools, ToolsError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ToolsError::new(
                ToolsErrorKind::Unreadable,
                format!("{}: {e}", path.display()),
            )
        })?;
        let is_toml = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("toml"));
        let result = if is_toml {
            Tools::from_toml_text(&text)
        } else {
            Tools::from_json_str(&text)
        };
        result.map_err(|e| ToolsError::new(e.kind, format!("{}: {}", path.display(), e.message)))
    }

    /// Reads tools from JSON text: an array of tools, or an object with a `tools` array.
    ///
    /// # Errors
    /// The text is not JSON or defines a tool badly.
    pub fn from_json_str(text: &str) -> Result<Tools, ToolsError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| ToolsError::new(ToolsErrorKind::Syntax, format!("not valid JSON: {e}")))?;
        Tools::from_value(value)
    }

    #[cfg(feature = "toml")]
    fn from_toml_text(text: &str) -> Result<Tools, ToolsError> {
        Tools::from_toml_str(text)
    }

    #[cfg(not(feature = "toml"))]
    fn from_toml_text(_: &str) -> Result<Tools, ToolsError> {
        Err(ToolsError::new(
            ToolsErrorKind::Syntax,
            "TOML tools files need toolmend-core's `toml` feature",
        ))
    }

    /// Reads tools from TOML text: `[[tools]]` tables.
    ///
    /// # Errors
    /// The text is not TOML or defines a tool badly.
    #[cfg(feature = "toml")]
    pub fn from_toml_str(text: &str) -> Result<Tools, ToolsError> {
        let table: toml::Table = toml::from_str(text)
            .map_err(|e| ToolsError::new(ToolsErrorKind::Syntax, format!("not valid TOML: {e}")))?;
        let value = toml_to_json(toml::Value::Table(table))
            .map_err(|e| ToolsError::new(ToolsErrorKind::Syntax, e))?;
        Tools::from_value(value)
    }

    /// Reads tools from a JSON value (an array, or an object with a `tools` array).
    ///
    /// # Errors
    /// A tool is defined badly; the message names it.
    pub fn from_value(value: Value) -> Result<Tools, ToolsError> {
        let list = match value {
            Value::Array(list) => list,
            Value::Object(mut map) => match map.remove("tools") {
                Some(Value::Array(list)) => list,
                _ => {
                    return Err(ToolsError::new(
                        ToolsErrorKind::NotAList,
                        "expected a list of tools or a \"tools\" list",
                    ));
                }
            },
            _ => {
                return Err(ToolsError::new(
                    ToolsErrorKind::NotAList,
                    "expected a list of tools",
                ));
            }
        };
        let mut tools = Vec::with_capacity(list.len());
        for (i, entry) in list.into_iter().enumerate() {
            let tool = tool_from_value(entry).map_err(|e| {
                ToolsError::new(ToolsErrorKind::BadTool, format!("tool {}: {e}", i + 1))
            })?;
            let key = lookup_key(&tool.name);
            if let Some(other) = tools.iter().find(|t: &&Tool| lookup_key(&t.name) == key) {
                let message = if other.name == tool.name {
                    format!("tool {}: the name {:?} is defined twice", i + 1, tool.name)
                } else {
                    format!(
                        "tool {}: the names {:?} and {:?} are the same tool to a call (both are \
                         looked up as {key:?}); rename one",
                        i + 1,
                        other.name,
                        tool.name
                    )
                };
                return Err(ToolsError::new(ToolsErrorKind::Duplicate, message));
            }
            tools.push(tool);
        }
        Ok(Tools { tools })
    }

    /// The tool a call by this name reaches: names are compared by [`lookup_key`], so
    /// `functions.read_file:0` reaches `read_file`.
    pub fn get(&self, name: &str) -> Option<&Tool> {
        let key = lookup_key(name);
        self.tools.iter().find(|t| lookup_key(&t.name) == key)
    }

    /// The tool whose name is nearest to `name`, for a call to a tool that does not exist
    /// (`get_wether` → `get_weather`): see [`closest`].
    pub fn nearest(&self, name: &str) -> Option<&str> {
        closest(
            lookup_key(name),
            self.tools.iter().map(|t| lookup_key(&t.name)),
        )
    }

    /// Every tool, in file order.
    pub fn iter(&self) -> impl Iterator<Item = &Tool> {
        self.tools.iter()
    }

    /// How many tools there are.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

/// A TOML value as JSON. A float JSON cannot hold (`nan`, `inf`) is an error naming its key,
/// where a plain conversion would turn it into `null` and the key would take its default.
///
/// # Errors
/// The message names the key whose float JSON cannot hold.
#[cfg(feature = "toml")]
pub fn toml_to_json(value: toml::Value) -> Result<Value, String> {
    Ok(match value {
        toml::Value::String(s) => Value::String(s),
        toml::Value::Integer(n) => Value::from(n),
        toml::Value::Float(f) => Value::Number(
            serde_json::Number::from_f64(f)
                .ok_or_else(|| format!("{f} is not a number JSON can hold"))?,
        ),
        toml::Value::Boolean(b) => Value::Bool(b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(toml_to_json)
                .collect::<Result<_, _>>()?,
        ),
        toml::Value::Table(table) => {
            let mut map = Map::with_capacity(table.len());
            for (key, value) in table {
                let value = toml_to_json(value).map_err(|e| format!("{key:?}: {e}"))?;
                map.insert(key, value);
            }
            Value::Object(map)
        }
    })
}

/// The name among `names` that `word` was most likely meant to be: within a small edit
/// distance (a third of the name's length, at least 1; case aside; a swap of two neighbours
/// counts 1), and not `word` itself. What "did you mean" suggests, for tools and commands.
pub fn closest<'a>(word: &str, names: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let lower = word.to_lowercase();
    names
        .filter(|name| *name != word)
        .map(|name| (edit_distance(&lower, &name.to_lowercase()), name))
        .filter(|(distance, name)| *distance <= (name.chars().count() / 3).max(1))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, name)| name)
}

/// Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
/// neighbours (`repiar` is one swap from `repair`) each count 1.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let width = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * width];
    for i in 0..=a.len() {
        for j in 0..=b.len() {
            d[i * width + j] = if i == 0 || j == 0 {
                i + j
            } else {
                let cost = usize::from(a[i - 1] != b[j - 1]);
                let mut best = (d[(i - 1) * width + j] + 1)
                    .min(d[i * width + j - 1] + 1)
                    .min(d[(i - 1) * width + j - 1] + cost);
                if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                    best = best.min(d[(i - 2) * width + j - 2] + 1);
                }
                best
            };
        }
    }
    d[a.len() * width + b.len()]
}

/// The name by which a call reaches a tool: the name without surrounding whitespace, a
/// `functions.` namespace prefix or a `:N` call index, each removed as often as it occurs
/// (`functions.get_weather:0` → `get_weather`). Case counts: `X` and `x` are two tools. The one
/// function both for looking a call's tool up and for refusing a tools list in which two names
/// would reach the same tool.
pub fn lookup_key(name: &str) -> &str {
    let mut key = name;
    loop {
        let before = key.len();
        key = key.trim();
        if let Some((head, index)) = key.rsplit_once(':')
            && !index.is_empty()
            && index.bytes().all(|b| b.is_ascii_digit())
        {
            key = head;
        }
        if let Some(rest) = key.strip_prefix("functions.") {
            key = rest;
        }
        if key.len() == before {
            return key;
        }
    }
}

/// The longest time a key may give (about 31 years), so that deadlines stay representable.
pub const MAX_SECONDS: f64 = 1e9;

/// The rule for every timeout, in `[loop]`, `[llm]`, `[approval]` and a tool's own: a positive
/// number of seconds, at most [`MAX_SECONDS`]. `Err` is the message naming `key`.
///
/// # Errors
/// The message naming `key` when `value` is not such a number.
pub fn seconds(value: f64, key: &str) -> Result<Duration, String> {
    Duration::try_from_secs_f64(value)
        .ok()
        .filter(|d| !d.is_zero() && d.as_secs_f64() <= MAX_SECONDS)
        .ok_or_else(|| seconds_rule(key))
}

/// What [`seconds`] asks of `key`.
pub(crate) fn seconds_rule(key: &str) -> String {
    format!("{key} must be a positive number of seconds, at most {MAX_SECONDS:e}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_and_the_closest_name() {
        assert_eq!(edit_distance("repiar", "repair"), 1);
        assert_eq!(edit_distance("calls", "calls"), 0);
        assert_eq!(edit_distance("", "man"), 3);
        let names = ["get_weather", "read_file", "ls"];
        assert_eq!(
            closest("get_wether", names.into_iter()),
            Some("get_weather")
        );
        assert_eq!(closest("Read_File", names.into_iter()), Some("read_file"));
        assert_eq!(closest("rm", names.into_iter()), None);
        assert_eq!(closest("ls", names.into_iter()), None);
    }

    #[test]
    fn every_tools_error_has_its_kind() {
        let kind = |text: &str| Tools::from_json_str(text).err().map(|e| e.kind);
        assert_eq!(kind("[{"), Some(ToolsErrorKind::Syntax));
        assert_eq!(kind("{\"a\": 1}"), Some(ToolsErrorKind::NotAList));
        assert_eq!(kind("7"), Some(ToolsErrorKind::NotAList));
        assert_eq!(
            kind("[{\"description\": \"no name\"}]"),
            Some(ToolsErrorKind::BadTool)
        );
        assert_eq!(
            kind("[{\"name\": \"ls\"}, {\"name\": \"ls\"}]"),
            Some(ToolsErrorKind::Duplicate)
        );
        assert_eq!(kind("[{\"name\": \"ls\"}]"), None);
        #[cfg(feature = "toml")]
        {
            let toml = Tools::from_toml_str("[[tools]\n").unwrap_err();
            assert_eq!(toml.kind, ToolsErrorKind::Syntax);
        }
        let missing = Tools::from_path(Path::new("no/such/tools.json")).unwrap_err();
        assert_eq!(missing.kind, ToolsErrorKind::Unreadable);
        assert!(
            missing.message.starts_with("no/such/tools.json: "),
            "{missing}"
        );
        let dir = std::env::temp_dir().join(format!("toolmend-tools-kind-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("t.json");
        std::fs::write(&file, "[{\"name\": \"a\"}, {\"name\": \"a\"}]").unwrap();
        let read = Tools::from_path(&file).unwrap_err();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(
            read.kind,
            ToolsErrorKind::Duplicate,
            "a file keeps its text's kind"
        );
    }

    #[cfg(feature = "toml")]
    #[test]
    fn three_forms_and_toml() {
        let tools = Tools::from_json_str(
            r#"{"tools": [
              {"name": "a", "parameters": [{"name": "n", "type": "int", "required": true}]},
              {"type": "function", "function": {"name": "b", "description": "B"}},
              {"name": "c", "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}},
               "annotations": {"readOnlyHint": true}}
            ]}"#,
        )
        .unwrap();
        assert_eq!(tools.len(), 3);
        let a = tools.get("a").unwrap();
        assert_eq!(a.params[0].kind, "integer");
        assert!(a.params[0].required);
        assert_eq!(a.violations(&serde_json::json!({}))[0].path, "/");
        assert!(tools.get("c").unwrap().read_only);
        let toml = Tools::from_toml_str(
            "[[tools]]\nname = \"ls\"\nread_only = true\ncommand = [\"ls\"]\n[[tools.parameters]]\nname = \"dir\"\ntype = \"string\"\n",
        )
        .unwrap();
        let ls = toml.get("ls").unwrap();
        assert_eq!(ls.command.as_deref(), Some(&["ls".to_owned()][..]));
        assert_eq!(ls.params[0].name, "dir");
    }

    #[test]
    fn lookup_keys_are_fixed_points() {
        for (name, key) in [
            ("read_file", "read_file"),
            ("functions.read_file:0", "read_file"),
            (" functions.functions.x ", "x"),
            ("x:0:1", "x"),
            ("functions.x:3 ", "x"),
            ("ns.x", "ns.x"),
            ("X", "X"),
            ("x:", "x:"),
            ("functions.", ""),
        ] {
            assert_eq!(lookup_key(name), key, "{name:?}");
            assert_eq!(lookup_key(key), key, "{key:?} is its own key");
        }
    }

    #[test]
    fn names_that_reach_the_same_tool_are_refused() {
        for (a, b) in [
            ("x", "functions.x"),
            ("functions.x", "x"),
            ("x", " x"),
            ("x", "x:0"),
            ("functions.x:1", "functions.functions.x"),
        ] {
            let text = format!(r#"[{{"name": {a:?}}}, {{"name": {b:?}}}]"#);
            let e = Tools::from_json_str(&text).unwrap_err();
            assert!(
                e.message.contains(&format!("{a:?} and {b:?}")) && e.message.contains("\"x\""),
                "{text}: {e}"
            );
        }
        let e = Tools::from_json_str(r#"[{"name": "x"}, {"name": "x"}]"#).unwrap_err();
        assert!(e.message.contains("defined twice"), "{e}");
        // Case counts; another namespace is part of the name.
        let tools =
            Tools::from_json_str(r#"[{"name": "x"}, {"name": "X"}, {"name": "ns.x"}]"#).unwrap();
        assert_eq!(tools.get("functions.X:0").unwrap().name, "X");
        assert_eq!(tools.get("x").unwrap().name, "x");
        // A name written with the prefix is reached with or without it.
        let tools = Tools::from_json_str(r#"[{"name": "functions.y"}]"#).unwrap();
        assert_eq!(tools.get("functions.y").unwrap().name, "functions.y");
        assert_eq!(tools.get("y").unwrap().name, "functions.y");
        let e = Tools::from_json_str(r#"[{"name": "functions.:0"}]"#).unwrap_err();
        assert!(e.message.contains("leaves nothing"), "{e}");
    }

    #[cfg(feature = "toml")]
    #[test]
    fn bad_definitions_are_named() {
        let e = Tools::from_json_str(r#"[{"name": "x", "command": "rm -rf /"}]"#).unwrap_err();
        assert!(e.message.contains("never a shell string"), "{e}");
        let e = Tools::from_json_str(
            r#"[{"name": "x", "parameters": [{"name": "a", "type": "wat"}]}]"#,
        )
        .unwrap_err();
        assert!(e.message.contains("unknown type"), "{e}");
        assert!(Tools::from_json_str(r#"[{"description": "no name"}]"#).is_err());
        // A timeout is checked as the loop config checks its own, never replaced by a default.
        for timeout in ["-1", "0", "\"1\"", "1e300", "true"] {
            let e = Tools::from_json_str(&format!(r#"[{{"name": "x", "timeout": {timeout}}}]"#))
                .unwrap_err();
            assert!(
                e.message.contains("positive number of seconds"),
                "{timeout}: {e}"
            );
        }
        let e = Tools::from_toml_str("[[tools]]\nname = \"x\"\ntimeout = nan\n").unwrap_err();
        assert!(e.message.contains("\"timeout\": NaN"), "{e}");
    }
}
