//! The loop's configuration file (TOML): `[loop]`, `[llm]`, `[approval]` and `[[tools]]`.
//!
//! ```toml
//! [loop]
//! max_iterations = 10      # every LLM call counts, retries included
//! timeout = 300            # seconds, the whole run
//! max_parse_retries = 3    # malformed replies in a row before the run aborts
//! max_output = 65536       # bytes kept of a tool's stdout and of its stderr
//!
//! [llm]
//! command = ["python3", "examples/llm/openai_chat.py"]
//! input = "messages"       # or "text"
//! timeout = 120
//! retries = 2              # extra attempts when the command fails
//! retry_delay = 1          # seconds before the first retry, doubled each time
//! max_retry_delay = 30
//! stop_after_call = false  # true: stop reading the reply once a whole call is read
//! arguments_step = 128     # bytes of arguments between two `llm.stream` arguments events
//! system_prompt = "convention"  # or "native" (the API's tools feature), or "none"
//!
//! [approval]
//! command = ["./approve.sh"]
//! timeout = 60
//! terminal = false         # true: the hook asks at the terminal (see ApprovalConfig)
//!
//! [[tools]]
//! name = "read_file"
//! description = "Read a text file"
//! read_only = true
//! command = ["cat-param", "path"]
//! timeout = 10
//! parameters = [{ name = "path", type = "string", required = true }]
//! ```
//!
//! Unknown keys in `[loop]`, `[llm]`, `[approval]` and `[[tools]]` are refused, so a typo
//! cannot silently fall back to a default, and each kind of value (a timeout, a delay, a count)
//! is checked by one function wherever it is written. A tool's `requires_approval` defaults to
//! true unless it is `read_only`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use ConfigErrorKind::*;
use toolmend_core::tools::{MAX_SECONDS, Tools, seconds};

/// Why a configuration cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ConfigError {
    /// What went wrong, for a program to act on.
    pub kind: ConfigErrorKind,
    /// What went wrong, for a person: names the file and the key.
    pub message: String,
}

/// The kinds of [`ConfigError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigErrorKind {
    /// The file cannot be read.
    Unreadable,
    /// Not TOML, an unknown key, or a value of the wrong type.
    Syntax,
    /// A required key is missing (`[llm] command`).
    Missing,
    /// A value breaks its rule: a timeout, a delay, a count, an argv.
    Value,
    /// A `[[tools]]` entry is defined badly.
    Tool,
    /// Tools need approval but no `[approval] command` is set.
    NoApproval,
    /// A command of the config cannot be started (missing, not executable).
    Unstartable,
}

impl ConfigError {
    fn new(kind: ConfigErrorKind, message: impl Into<String>) -> ConfigError {
        ConfigError {
            kind,
            message: message.into(),
        }
    }
}

/// How the conversation is written on the LLM command's stdin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InputMode {
    /// `{"messages": [{"role", "content"}, …]}` as JSON.
    Messages,
    /// The conversation flattened to plain text, for CLIs that take a prompt.
    Text,
}

/// The system message a run starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SystemPrompt {
    /// toolmend's calling convention (`{"tool", "parameters", "terminate"}`) and the tools:
    /// [`toolmend_core::system_prompt`].
    Convention,
    /// For a command that passes the tools as the API's tools feature: the model calls them
    /// natively, so the message teaches no convention ([`toolmend_core::native_system_prompt`]).
    Native,
    /// No system message: the command (or the model's template) sets its own.
    None,
}

/// The LLM command.
#[derive(Debug, Clone)]
pub struct LlmConfig {
    /// argv of the command.
    pub command: Vec<String>,
    /// What it reads on stdin.
    pub input: InputMode,
    /// Time allowed for one call.
    pub timeout: Duration,
    /// Extra attempts after a failing call.
    pub retries: u32,
    /// Delay before the first retry; doubled for each next one.
    pub retry_delay: Duration,
    /// Upper bound of the delay between retries.
    pub max_retry_delay: Duration,
    /// Stop reading a reply (and stop the command) once a whole call has been read.
    pub stop_after_call: bool,
    /// Bytes of arguments read between two `arguments` events of the reply's stream
    /// (`llm.stream`); the library's rule ([`toolmend_core::calls::arguments_step`]).
    pub arguments_step: usize,
    /// The system message a run starts with.
    pub system_prompt: SystemPrompt,
}

/// The approval hook.
#[derive(Debug, Clone)]
pub struct ApprovalConfig {
    /// argv of the command.
    pub command: Vec<String>,
    /// Time it has to decide; past it, the call is rejected.
    pub timeout: Duration,
    /// It asks the person at the terminal: it runs in toolmend's process group, where it may
    /// read `/dev/tty`, and a timeout kills only the hook itself.
    pub terminal: bool,
}

/// A whole loop configuration, checked.
#[derive(Debug, Clone)]
pub struct Config {
    /// Most LLM calls per run, retries included.
    pub max_iterations: u32,
    /// Time allowed for the whole run.
    pub timeout: Duration,
    /// Malformed replies in a row before the run aborts.
    pub max_parse_retries: u32,
    /// Bytes kept of each of a tool's output streams.
    pub max_output: usize,
    /// Time a tool gets when its definition sets none.
    pub tool_timeout: Duration,
    /// The LLM command.
    pub llm: LlmConfig,
    /// The approval hook, if any.
    pub approval: Option<ApprovalConfig>,
    /// The tools the model may call; each has a `command`.
    pub tools: Arc<Tools>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default, rename = "loop")]
    run: RawLoop,
    llm: Option<RawLlm>,
    approval: Option<RawApproval>,
    #[serde(default)]
    tools: Vec<toml::Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLoop {
    max_iterations: Option<u32>,
    timeout: Option<f64>,
    max_parse_retries: Option<u32>,
    max_output: Option<usize>,
    tool_timeout: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLlm {
    command: Vec<String>,
    input: Option<InputMode>,
    timeout: Option<f64>,
    retries: Option<u32>,
    retry_delay: Option<f64>,
    max_retry_delay: Option<f64>,
    stop_after_call: Option<bool>,
    arguments_step: Option<u64>,
    system_prompt: Option<SystemPrompt>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawApproval {
    command: Vec<String>,
    timeout: Option<f64>,
    terminal: Option<bool>,
}

impl Config {
    /// Reads and checks a configuration file.
    ///
    /// # Errors
    /// The file cannot be read, is not valid TOML, or fails a check of [`Config::from_toml_str`].
    pub fn from_path(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError::new(Unreadable, format!("{}: {e}", path.display())))?;
        Config::from_toml_str(&text)
            .map_err(|e| ConfigError::new(e.kind, format!("{}: {}", path.display(), e.message)))
    }

    /// Reads and checks a configuration.
    ///
    /// # Errors
    /// Not TOML; an unknown key; a missing `[llm] command`; a non-positive timeout; a tool
    /// without a `command`; or a tool that needs approval while no `[approval] command` is set.
    pub fn from_toml_str(text: &str) -> Result<Config, ConfigError> {
        let raw: RawFile =
            toml::from_str(text).map_err(|e| ConfigError::new(Syntax, e.to_string()))?;
        let run = raw.run;
        let llm = raw
            .llm
            .ok_or_else(|| ConfigError::new(Missing, "missing [llm] with its command"))?;
        let llm = LlmConfig {
            command: argv(llm.command, "[llm] command")?,
            input: llm.input.unwrap_or(InputMode::Messages),
            timeout: timeout(llm.timeout, 120.0, "[llm] timeout")?,
            retries: llm.retries.unwrap_or(2),
            retry_delay: delay(llm.retry_delay, 1.0, "[llm] retry_delay")?,
            max_retry_delay: delay(llm.max_retry_delay, 30.0, "[llm] max_retry_delay")?,
            stop_after_call: llm.stop_after_call.unwrap_or(false),
            arguments_step: match llm.arguments_step {
                None => toolmend_core::calls::ARGUMENTS_STEP,
                Some(bytes) => toolmend_core::calls::arguments_step(bytes)
                    .map_err(|e| ConfigError::new(Value, format!("[llm] arguments_step: {e}")))?,
            },
            system_prompt: llm.system_prompt.unwrap_or(SystemPrompt::Convention),
        };
        let approval = match raw.approval {
            None => None,
            Some(a) => Some(ApprovalConfig {
                command: argv(a.command, "[approval] command")?,
                timeout: timeout(a.timeout, 60.0, "[approval] timeout")?,
                terminal: a.terminal.unwrap_or(false),
            }),
        };
        let tools = tools(raw.tools)?;
        let unapproved: Vec<&str> = tools
            .iter()
            .filter(|t| t.requires_approval)
            .map(|t| t.name.as_str())
            .collect();
        if approval.is_none() && !unapproved.is_empty() {
            return Err(ConfigError::new(
                NoApproval,
                format!(
                    "tools {} require approval but no [approval] command is set; add one, or mark \
                 the tools read_only = true or requires_approval = false",
                    unapproved.join(", ")
                ),
            ));
        }
        let max_iterations = count(run.max_iterations, 10, 1, "[loop] max_iterations")?;
        let max_parse_retries = count(run.max_parse_retries, 3, 1, "[loop] max_parse_retries")?;
        let max_output = count(run.max_output, 64 * 1024, 1, "[loop] max_output")?;
        Ok(Config {
            max_iterations,
            timeout: timeout(run.timeout, 300.0, "[loop] timeout")?,
            max_parse_retries,
            max_output,
            tool_timeout: timeout(run.tool_timeout, 60.0, "[loop] tool_timeout")?,
            llm,
            approval,
            tools: Arc::new(tools),
        })
    }
}

impl Config {
    /// Checks that every command can be started: the LLM command, the approval hook and each
    /// tool's (a name is searched in `PATH`, as when it runs). A run would otherwise find out
    /// only when it gets there: the LLM command retried for seconds, a hook failing closed.
    ///
    /// # Errors
    /// The first command that is not found, is a directory or is not executable, with its key.
    pub fn check_commands(&self) -> Result<(), ConfigError> {
        let commands = std::iter::once(("[llm] command".to_owned(), &self.llm.command))
            .chain(
                self.approval
                    .iter()
                    .map(|a| ("[approval] command".to_owned(), &a.command)),
            )
            .chain(self.tools.iter().filter_map(|t| {
                let command = t.command.as_ref()?;
                Some((format!("[[tools]] {:?} command", t.name), command))
            }));
        for (key, command) in commands {
            if let Some(why) = super::process::unstartable(&command[0]) {
                return Err(ConfigError::new(
                    Unstartable,
                    format!("{key} {:?} cannot be started: {why}", command[0]),
                ));
            }
        }
        Ok(())
    }
}

fn argv(command: Vec<String>, key: &str) -> Result<Vec<String>, ConfigError> {
    if command.first().is_none_or(|program| program.is_empty()) {
        return Err(ConfigError::new(
            Value,
            format!("{key} must be a non-empty list of strings (argv)"),
        ));
    }
    Ok(command)
}

/// A timeout key, or its default.
fn timeout(value: Option<f64>, default: f64, key: &str) -> Result<Duration, ConfigError> {
    seconds(value.unwrap_or(default), key).map_err(|e| ConfigError::new(Value, e))
}

/// A delay: zero or more seconds, at most [`MAX_SECONDS`].
fn delay(value: Option<f64>, default: f64, key: &str) -> Result<Duration, ConfigError> {
    Duration::try_from_secs_f64(value.unwrap_or(default))
        .ok()
        .filter(|d| d.as_secs_f64() <= MAX_SECONDS)
        .ok_or_else(|| {
            ConfigError::new(
                Value,
                format!("{key} must be zero or more seconds, at most {MAX_SECONDS:e}"),
            )
        })
}

/// A count that must be at least `min` (a count of 0 would make the run do nothing).
fn count<T: Copy + PartialOrd + std::fmt::Display>(
    value: Option<T>,
    default: T,
    min: T,
    key: &str,
) -> Result<T, ConfigError> {
    let value = value.unwrap_or(default);
    if value < min {
        return Err(ConfigError::new(
            Value,
            format!("{key} must be at least {min}"),
        ));
    }
    Ok(value)
}

/// The keys a `[[tools]]` table may have: toolmend's own, and those of the OpenAI, MCP and
/// Anthropic forms. Any other is refused: a misspelt `timeout` or `read_only` would otherwise
/// fall back to its default without a word.
const TOOL_KEYS: &[&str] = &[
    "name",
    "description",
    "parameters",
    "read_only",
    "requires_approval",
    "command",
    "timeout",
    // OpenAI: {"type": "function", "function": {"name", "description", "parameters", "strict"}}
    "type",
    "function",
    "strict",
    // MCP
    "title",
    "inputSchema",
    "outputSchema",
    "annotations",
    "icons",
    "_meta",
    // Anthropic
    "input_schema",
    "cache_control",
];

/// The `[[tools]]` tables as [`Tools`], each with a command, `requires_approval` defaulting to
/// true unless the tool is read-only.
fn tools(tables: Vec<toml::Value>) -> Result<Tools, ConfigError> {
    let mut list = Vec::with_capacity(tables.len());
    for (i, table) in tables.into_iter().enumerate() {
        let at = |what: String| ConfigError::new(Tool, format!("[[tools]] tool {}: {what}", i + 1));
        let mut value = toolmend_core::tools::toml_to_json(table).map_err(at)?;
        if let Value::Object(map) = &value {
            let inner = map.get("function").and_then(Value::as_object);
            for key in map.keys().chain(inner.into_iter().flat_map(|f| f.keys())) {
                if !TOOL_KEYS.contains(&key.as_str()) {
                    return Err(at(format!(
                        "unknown key {key:?}; a tool has: {}",
                        TOOL_KEYS.join(", ")
                    )));
                }
            }
        }
        if let Value::Object(map) = &mut value {
            let inner = map.get("function").and_then(Value::as_object);
            let field = |key: &str| map.get(key).or_else(|| inner.and_then(|f| f.get(key)));
            if field("requires_approval").is_none() {
                let read_only = field("read_only")
                    .or_else(|| field("annotations").and_then(|a| a.get("readOnlyHint")))
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                map.insert("requires_approval".into(), Value::Bool(!read_only));
            }
        }
        list.push(value);
    }
    let tools = Tools::from_value(Value::Array(list))
        .map_err(|e| ConfigError::new(Tool, format!("[[tools]] {e}")))?;
    if let Some(tool) = tools.iter().find(|t| t.command.is_none()) {
        return Err(ConfigError::new(
            Tool,
            format!(
                "[[tools]] {:?} has no command (an argv list the loop runs)",
                tool.name
            ),
        ));
    }
    Ok(tools)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_config_error_has_its_kind() {
        let kind = |text: &str| Config::from_toml_str(text).err().map(|e| e.kind);
        let llm = "[llm]\ncommand = [\"m\"]\n";
        assert_eq!(kind("[llm\n"), Some(Syntax));
        assert_eq!(kind(&format!("{llm}bogus = 1\n")), Some(Syntax));
        assert_eq!(kind(""), Some(Missing));
        assert_eq!(kind(&format!("{llm}timeout = -1\n")), Some(Value));
        assert_eq!(kind("[llm]\ncommand = []\n"), Some(Value));
        assert_eq!(kind(&format!("{llm}retries = -1\n")), Some(Syntax));
        let tool = "[[tools]]\nname = \"t\"\ndescription = \"d\"\n";
        assert_eq!(kind(&format!("{llm}{tool}read_only = true\n")), Some(Tool));
        assert_eq!(
            kind(&format!("{llm}{tool}command = [\"x\"]\n")),
            Some(NoApproval)
        );
        assert_eq!(kind(llm), None);
        let missing = Config::from_path(Path::new("no/such/agent.toml")).unwrap_err();
        assert_eq!(missing.kind, Unreadable);
        let config = Config::from_toml_str("[llm]\ncommand = [\"/no/such/program\"]\n").unwrap();
        assert_eq!(config.check_commands().unwrap_err().kind, Unstartable);
    }

    const LLM: &str = "[llm]\ncommand = [\"model\"]\n";

    #[test]
    fn defaults() {
        let config = Config::from_toml_str(LLM).unwrap();
        assert_eq!(config.max_iterations, 10);
        assert_eq!(config.timeout, Duration::from_secs(300));
        assert_eq!(config.max_parse_retries, 3);
        assert_eq!(config.llm.input, InputMode::Messages);
        assert!(config.approval.is_none());
        assert!(config.tools.is_empty());
    }

    #[test]
    fn approval_defaults_to_required_unless_read_only() {
        let text = format!(
            "{LLM}[approval]\ncommand = [\"hook\"]\n\
             [[tools]]\nname = \"ls\"\nread_only = true\ncommand = [\"ls\"]\n\
             [[tools]]\nname = \"rm\"\ncommand = [\"rm\"]\n\
             [[tools]]\nname = \"touch\"\nrequires_approval = false\ncommand = [\"touch\"]\n"
        );
        let config = Config::from_toml_str(&text).unwrap();
        let needs = |name: &str| config.tools.get(name).unwrap().requires_approval;
        assert!(!needs("ls"));
        assert!(needs("rm"));
        assert!(!needs("touch"));
    }

    #[test]
    fn refused() {
        let cases = [
            ("[loop]\nmax_iterations = 3\n", "missing [llm]"),
            ("[llm]\ncommand = []\n", "non-empty list"),
            ("[llm]\ncommand = \"model --x\"\n", "invalid type"),
            ("[llm]\ncommand = [\"m\"]\ntimout = 3\n", "unknown field"),
            ("[llm]\ncommand = [\"m\"]\ntimeout = 1e300\n", "at most 1e9"),
            (
                "[llm]\ncommand = [\"m\"]\nretry_delay = nan\n",
                "zero or more",
            ),
            (
                "[loop]\ntimeout = inf\n[llm]\ncommand = [\"m\"]\n",
                "positive number",
            ),
            (
                "[llm]\ncommand = [\"m\"]\ntimeout = -1\n",
                "positive number",
            ),
            (
                "[llm]\ncommand = [\"m\"]\ninput = \"xml\"\n",
                "unknown variant",
            ),
            (
                "[llm]\ncommand = [\"m\"]\n[[tools]]\nname = \"rm\"\ncommand = [\"rm\"]\n",
                "require approval",
            ),
            (
                "[llm]\ncommand = [\"m\"]\n[[tools]]\nname = \"ls\"\nread_only = true\n",
                "has no command",
            ),
        ];
        for (text, expected) in cases {
            let error = Config::from_toml_str(text).unwrap_err();
            assert!(error.message.contains(expected), "{text}: {error}");
        }
    }

    #[test]
    fn every_timeout_and_count_follows_one_rule() {
        // The same bad values, wherever they are written.
        let tool = |extra: &str| {
            format!(
                "{LLM}[[tools]]\nname = \"ls\"\nread_only = true\ncommand = [\"ls\"]\n{extra}\n"
            )
        };
        let keys = [
            ("[loop]\ntimeout = {}\n{LLM}", "[loop] timeout"),
            ("[loop]\ntool_timeout = {}\n{LLM}", "[loop] tool_timeout"),
            ("{LLM}timeout = {}\n", "[llm] timeout"),
            (
                "{LLM}[approval]\ncommand = [\"h\"]\ntimeout = {}\n",
                "[approval] timeout",
            ),
        ];
        for value in [
            "nan", "-nan", "inf", "-1", "0", "0.0", "\"1\"", "1e300", "true",
        ] {
            for (template, key) in keys {
                let text = template.replace("{LLM}", LLM).replace("{}", value);
                let error = Config::from_toml_str(&text).unwrap_err();
                assert!(
                    error.message.contains(key) || error.message.contains("invalid type"),
                    "{text}: {error}"
                );
            }
            let text = tool(&format!("timeout = {value}"));
            let error = Config::from_toml_str(&text).unwrap_err();
            assert!(
                error.message.contains("[[tools]] tool 1"),
                "{text}: {error}"
            );
            assert!(error.message.contains("timeout"), "{text}: {error}");
        }
        let config = Config::from_toml_str(&tool("timeout = 2.5")).unwrap();
        assert_eq!(
            config.tools.get("ls").unwrap().timeout,
            Some(Duration::from_millis(2500))
        );
        for (text, expected) in [
            (
                format!("[loop]\nmax_output = 0\n{LLM}"),
                "max_output must be at least 1",
            ),
            (format!("[loop]\nmax_iterations = 0\n{LLM}"), "at least 1"),
            (
                format!("[loop]\nmax_parse_retries = -1\n{LLM}"),
                "invalid value",
            ),
            (format!("{LLM}retries = 1.5\n"), "invalid type"),
            (format!("{LLM}stop_after_call = 1\n"), "invalid type"),
            (format!("{LLM}stop_after_call = \"yes\"\n"), "invalid type"),
            (format!("{LLM}stop_after_cal = true\n"), "unknown field"),
            (
                format!("{LLM}arguments_step = 0\n"),
                "[llm] arguments_step: the arguments step is the bytes of a call's arguments between two `arguments` events: 1 or more, not 0",
            ),
            (format!("{LLM}arguments_step = -1\n"), "invalid value"),
            (format!("{LLM}arguments_step = 1.5\n"), "invalid type"),
            (tool("timout = 5"), "unknown key \"timout\""),
            (tool("read_olny = true"), "unknown key \"read_olny\""),
        ] {
            let error = Config::from_toml_str(&text).unwrap_err();
            assert!(error.message.contains(expected), "{text}: {error}");
        }
        let step = Config::from_toml_str(&format!("{LLM}arguments_step = 1\n")).unwrap();
        assert_eq!(step.llm.arguments_step, 1);
        assert_eq!(
            Config::from_toml_str(LLM).unwrap().llm.arguments_step,
            toolmend_core::calls::ARGUMENTS_STEP
        );
        let on = Config::from_toml_str(&format!("{LLM}stop_after_call = true\n")).unwrap();
        assert!(on.llm.stop_after_call);
        assert!(!Config::from_toml_str(LLM).unwrap().llm.stop_after_call);
        // The foreign forms' own keys are fine.
        let openai = format!(
            "{LLM}[[tools]]\ntype = \"function\"\nread_only = true\ncommand = [\"ls\"]\n\
             [tools.function]\nname = \"ls\"\nstrict = true\n"
        );
        assert!(Config::from_toml_str(&openai).is_ok());
    }
}
