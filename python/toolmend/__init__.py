"""toolmend: broken LLM tool-call text in, clean validated JSON (or a structured error) out.

In-process over the toolmend Rust library::

    import toolmend

    toolmend.mend_args('"{\\"city\\": \\"Oslo\\",}"')      # {'city': 'Oslo'}
    toolmend.repair("[1, 2, 3")                          # [1, 2, 3]
    found = toolmend.extract_calls('<tool_call>{"name": "get_weather", '
                                   '"arguments": {"city": "Oslo"}}</tool_call>')
    found["calls"]       # [{'tool': 'get_weather', 'parameters': {'city': 'Oslo'}}]

    records = toolmend.mend_many(lines)    # GIL released, one thread per core
    [r.value if r.ok else r.code for r in records]

    for event in toolmend.stream(chunks):  # a reply read as it arrives (docs/streaming.md)
        print(event["event"], event.get("parameters"))

Every failure is a `toolmend.Error` with the stable `code` of the CLI's records. The wheel
also installs the `toolmend` command, and `toolmend.Process` keeps one running as a
co-process for those who want a subprocess.
"""

from ._native import (
    CallExtractor,
    Error,
    Stream,
    Mender,
    Record,
    __version__,
    call_formats,
    extract_calls,
    mend_args,
    mend_many,
    repair,
)
from .process import Process, binary_path
from .responses import calls_from_anthropic, calls_from_openai
from .streaming import stream

__all__ = [
    "CallExtractor",
    "Error",
    "Mender",
    "Process",
    "Record",
    "Stream",
    "__version__",
    "binary_path",
    "call_formats",
    "calls_from_anthropic",
    "calls_from_openai",
    "extract_calls",
    "mend_args",
    "mend_many",
    "repair",
    "stream",
]
