"""Tool calls out of OpenAI and Anthropic API responses, with the rules of `toolmend calls`.

Each call's arguments are mended; a call that was cut off (arguments that end before their
JSON does, or a response whose stop reason says the output was cut) is never returned as a
call: it raises `toolmend.Error` with code `incomplete_call`, and `value["incomplete"]` names it.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Optional

from ._native import Error, extract_calls


def _as_dict(response: Any) -> Any:
    """SDK objects (pydantic models) as plain dicts."""
    for method in ("model_dump", "to_dict", "dict"):
        if hasattr(response, method) and not isinstance(response, dict):
            return getattr(response, method)()
    return response


def _cut_off(found: Dict[str, Any], why: str) -> Error:
    """Every call of a response that was cut becomes incomplete."""
    value = dict(found)
    value["incomplete"] = list(found.get("incomplete", [])) + [
        {k: v for k, v in (("tool", c["tool"]), ("id", c.get("id"))) if v is not None}
        | {"offset": 0, "message": why}
        for c in found["calls"]
    ]
    value["calls"] = []
    value.setdefault("rejected", [])
    first = found["calls"][0]["tool"]
    message = f"call to {json.dumps(first)} was cut off ({why}); it is not healed into a call"
    err = Error(f"incomplete_call: {message}")
    err.code, err.message, err.offset, err.value, err.violations = (
        "incomplete_call", message, None, value, [])
    return err


def calls_from_openai(response: Any, *, choice: int = 0, tools: Any = None,
                      **options: Any) -> Dict[str, Any]:
    """The tool calls of an OpenAI chat completion (dict or SDK object), or of one of its
    messages: ``{"calls", "text", "reasoning", "incomplete"}`` as `extract_calls` gives.

    Calls written in the message's text (an open model served without a tool parser) are
    found too. ``finish_reason: "length"`` means the output was cut: its calls are incomplete.
    """
    response = _as_dict(response)
    finish: Optional[str] = None
    message = response
    if isinstance(response, dict) and "choices" in response:
        picked = response["choices"][choice]
        message, finish = picked.get("message") or {}, picked.get("finish_reason")
    found = extract_calls(message, tools=tools, **options)
    if finish == "length" and found["calls"]:
        raise _cut_off(found, 'finish_reason "length": the output was cut')
    return found


def calls_from_anthropic(response: Any, *, tools: Any = None, **options: Any) -> Dict[str, Any]:
    """The tool calls of an Anthropic message (dict or SDK object, or its content list):
    ``{"calls", "text", "reasoning", "incomplete"}``. ``stop_reason: "max_tokens"`` means the
    output was cut: its calls are incomplete."""
    response = _as_dict(response)
    found = extract_calls(response, tools=tools, **options)
    stop = response.get("stop_reason") if isinstance(response, dict) else None
    if stop == "max_tokens" and found["calls"]:
        raise _cut_off(found, 'stop_reason "max_tokens": the output was cut')
    return found
