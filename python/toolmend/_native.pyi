"""Type stubs of toolmend's native module (the Rust library, in-process)."""

import os
from typing import Any, Dict, Iterable, List, Literal, Optional, Union

__version__: str

Text = Union[str, bytes, None]
"""An input: str, or bytes that must be UTF-8. None is an empty input (`empty_input`)."""

Tools = Union[List[Dict[str, Any]], Dict[str, Any], str, "os.PathLike[str]"]
"""Tool definitions (toolmend's, OpenAI's or MCP's), or the path of a JSON or TOML tools file."""

Target = Literal["object", "any"]
Concat = Literal["first", "all", "error"]
Truncated = Literal["heal", "error"]

class Error(ValueError):
    """An input toolmend could not mend, or a call it could not use."""

    code: str
    """The stable error code (`empty_input`, `invalid_json`, `not_an_object`, `depth_exceeded`,
    `too_deep`, `too_large`, `invalid_utf8`, `concatenated`, `invalid_input`, `missing_field`,
    `wrong_type`, `unknown_tool`, `invalid_parameters`, `incomplete_call`, `truncated`,
    `internal_error`: toolmend panicked on this input, a bug to report with it; any call can
    raise it, and the next input is mended as usual)."""
    message: str
    """What failed and where."""
    offset: Optional[int]
    """The byte offset of the failure, where one applies."""
    value: Optional[Dict[str, Any]]
    """From `extract_calls`: what the reply held (`calls`, `text`, `reasoning`, `incomplete`,
    `rejected`); None elsewhere."""
    violations: List[Dict[str, str]]
    """For `invalid_parameters`: each schema violation as {"path", "message"}."""

class Record:
    """One input's result, with the fields of a `toolmend args --records` record."""

    @property
    def ok(self) -> bool: ...
    @property
    def value(self) -> Any:
        """The mended value (parsed from `json` on first use); None on failure."""
    @property
    def json(self) -> Optional[str]:
        """The value as compact JSON, every number as the input wrote it; None on failure."""
    @property
    def repairs(self) -> List[Dict[str, Any]]:
        """What was changed: dicts with `kind` and, where it applies, `offset`, `layers`,
        `text` or `key`."""
    @property
    def dropped(self) -> List[Any]:
        """Values in the input that are not in the value (concatenated values)."""
    @property
    def code(self) -> Optional[str]: ...
    @property
    def message(self) -> Optional[str]: ...
    @property
    def offset(self) -> Optional[int]: ...
    @property
    def original(self) -> Optional[str]:
        """The input cut to 100 characters (failures only)."""
    def unwrap(self) -> Any:
        """The value, or the failure raised as `Error`."""
    def to_dict(self) -> Dict[str, Any]:
        """The record as `toolmend args --records` writes it (without `line`)."""

class Mender:
    """The args (`target="object"`) or repair (`target="any"`) pipeline for many inputs."""

    def __init__(
        self,
        *,
        target: Target = "object",
        concat: Concat = "first",
        truncated: Truncated = "heal",
        strict: bool = False,
        max_depth: int = 10,
        max_nesting: int = 1000,
        max_bytes: int = 67108864,
    ) -> None: ...
    def mend(self, text: Text) -> Record:
        """One input's Record; never raises for bad input."""
    def mend_many(self, inputs: Iterable[Text], *, threads: int = 0) -> List[Record]:
        """Every input's Record, in order, with the GIL released (threads=0: one per core).
        Raises `Error` (`invalid_input`) only when `inputs` is no iterable of inputs (a str
        is one input); Ctrl-C stops a long batch (KeyboardInterrupt within about 50 ms)."""

class CallExtractor:
    """`toolmend calls` with one set of options and tools (loaded once)."""

    def __init__(
        self,
        *,
        tools: Optional[Tools] = None,
        format: Optional[str] = None,
        require_terminate: bool = False,
        strict: bool = False,
        max_depth: int = 10,
        max_nesting: int = 1000,
        max_bytes: int = 67108864,
    ) -> None: ...
    def extract(self, reply: Union[Text, Dict[str, Any], List[Any]]) -> Dict[str, Any]:
        """`{"calls", "text", "reasoning", "incomplete"}`, and `"repairs"` when the reply itself was
        mended (one JSON string holding the reply, unquoted); raises `Error` for a cut-off or
        unusable call, with what was found in `Error.value`."""
    def extract_response(
        self, response: Dict[str, Any], *, api: str, choice: int = 0
    ) -> Dict[str, Any]:
        """The calls of one API response: `api` is `"openai"` (a chat completion or one of its
        messages; `choice` picks the choice) or `"anthropic"` (a message or its content list).
        Another API's response raises `invalid_input`; a stop reason that says the output was
        cut makes the call written last `incomplete_call`."""

class Stream:
    """A reply read as it arrives (`toolmend calls --stream`; see docs/streaming.md). Each
    method returns the events it makes known, dicts with an `"event"` key: `call_start`
    {index, tool, id?}, `arguments` {index, path, open, and one of append / members / items:
    what the parameters gained at `path`; applied in order they rebuild them, event format 2;
    with `arguments_events="snapshot"` also `parameters`, all of them once that is added},
    `revised` {index, path, reason}
    (the model wrote the key at `path` again after its value was shown: what was shown there
    may not hold), `call_end` {index, call}, `incomplete`, `invalid`, `retracted`, `text` /
    `reasoning` {delta}, and last `end` (a `toolmend calls --records` record: `ok`, `value`
    or `error`). Should toolmend panic on the reply (a bug), that call's events are an `end`
    with error code `internal_error`, and the stream gives no events after it."""

    def __init__(
        self,
        *,
        tools: Optional[Tools] = None,
        format: Optional[str] = None,
        require_terminate: bool = False,
        strict: bool = False,
        max_depth: int = 10,
        max_nesting: int = 1000,
        arguments_events: Literal["delta", "snapshot"] = "delta",
        arguments_step: int = 128,
    ) -> None:
        """`arguments_step`: bytes of a call's arguments before its first `arguments` event,
        and at least between two (each also at least a quarter more; the final one comes when
        they close); 1 shows a short call almost token by token."""
    def feed(self, chunk: str) -> List[Dict[str, Any]]:
        """The next piece of the reply's text, split anywhere."""
    def feed_reasoning(self, delta: str) -> List[Dict[str, Any]]:
        """Reasoning a server sends apart from the text (`reasoning_content`, `thinking`)."""
    def feed_call(
        self, key: int, id: Optional[str] = None, name: Optional[str] = None, arguments: str = ""
    ) -> List[Dict[str, Any]]:
        """A piece of a tool call the server parsed (OpenAI `delta.tool_calls[i]`: `key` is its
        `index`)."""
    def feed_chunk(self, chunk: Dict[str, Any]) -> List[Dict[str, Any]]:
        """One chunk of a server's stream as a dict (OpenAI chat-completions chunk, Anthropic
        event, Ollama line, Gemini or Responses event), read by the library's rules (as
        `calls --stream --input jsonl` reads a line). An error chunk ends the reply."""
    def finish(self) -> List[Dict[str, Any]]:
        """Ends the reply: the results and the `end` event (nothing on a second call)."""

def mend_args(
    text: Text,
    *,
    schema: Optional[Union[Dict[str, Any], type]] = None,
    concat: Concat = "first",
    truncated: Optional[Truncated] = None,
    strict: bool = False,
    max_depth: int = 10,
    max_nesting: int = 1000,
    max_bytes: int = 67108864,
) -> Dict[str, Any]:
    """Tool-call arguments mended into a dict, as `toolmend args`. Raises `Error`.

    Arguments cut off before their end are about to be run: they raise `Error` with code
    `truncated` unless `truncated="heal"` is given (`repair` heals them, and a `Mender`'s
    records show every repair).

    `schema`: a JSON Schema (a dict) or a Pydantic model class (its `model_json_schema()`),
    as `toolmend args --schema`: the value is coerced to it where the intent is unambiguous
    (`"3"` for an integer, `"true"` for a boolean, one value for an array, ...; not with
    `strict`); what still breaks it raises `Error` with code `invalid_parameters` and
    `violations` (`[{"path", "keyword", "message"}]`)."""

def repair(
    text: Text,
    *,
    concat: Concat = "first",
    truncated: Truncated = "heal",
    strict: bool = False,
    max_depth: int = 10,
    max_nesting: int = 1000,
    max_bytes: int = 67108864,
) -> Any:
    """Almost-JSON repaired into any JSON value, as `toolmend repair`. Raises `Error`."""

def mend_many(
    inputs: Iterable[Text],
    *,
    target: Target = "object",
    concat: Concat = "first",
    truncated: Truncated = "heal",
    strict: bool = False,
    max_depth: int = 10,
    max_nesting: int = 1000,
    max_bytes: int = 67108864,
    threads: int = 0,
) -> List[Record]:
    """Every input's Record, in order, with the GIL released and the CLI's threads. Raises
    `Error` (`invalid_input`) only when `inputs` is no iterable of inputs (a str is one input);
    Ctrl-C stops a long batch (KeyboardInterrupt within about 50 ms)."""

def extract_calls(
    reply: Union[Text, Dict[str, Any], List[Any]],
    *,
    tools: Optional[Tools] = None,
    format: Optional[str] = None,
    require_terminate: bool = False,
    strict: bool = False,
    max_depth: int = 10,
    max_nesting: int = 1000,
    max_bytes: int = 67108864,
) -> Dict[str, Any]:
    """The tool calls in one model reply, as `toolmend calls`. See `CallExtractor`."""

def call_formats() -> List[str]:
    """The names `format=` accepts."""

def run_cli(argv: List[str]) -> int:
    """Runs the `toolmend` command line `argv` (argv[0] the program's name) on this process's
    stdin, stdout and stderr; returns its exit status. The `toolmend` command calls it."""
