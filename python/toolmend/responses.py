"""Tool calls out of OpenAI and Anthropic API responses, with the rules of `toolmend calls`.

Each call's arguments are mended; a call that was cut off (arguments that end before their
JSON does, or a response whose stop reason says the output was cut, which cuts the call
written last) is never returned as a call: it raises `toolmend.Error` with code
`incomplete_call`, and `value["incomplete"]` names it. The rules live in the library
(`CallExtractor.extract_response`); this module only turns SDK objects into dicts.
"""

from __future__ import annotations

from typing import Any, Dict

from ._native import CallExtractor
from .streaming import as_dict


def calls_from_openai(response: Any, *, choice: int = 0, tools: Any = None,
                      **options: Any) -> Dict[str, Any]:
    """The tool calls of an OpenAI chat completion (dict or SDK object), of one of its
    messages, or of a Responses API response (``client.responses.create``'s, which has no
    choices: ``choice`` must be 0): ``{"calls", "text", "reasoning", "incomplete"}`` as
    `extract_calls` gives.

    Calls written in the message's text (an open model served without a tool parser) are
    found too. ``finish_reason: "length"`` (a Responses ``status: "incomplete"`` for
    ``max_output_tokens``) means the output was cut: the call written last is incomplete. An
    Anthropic message raises `invalid_input`.
    """
    return CallExtractor(tools=tools, **options).extract_response(
        as_dict(response), api="openai", choice=choice)


def calls_from_anthropic(response: Any, *, tools: Any = None, **options: Any) -> Dict[str, Any]:
    """The tool calls of an Anthropic message (dict or SDK object, or its content list):
    ``{"calls", "text", "reasoning", "incomplete"}``. ``stop_reason: "max_tokens"`` means the
    output was cut: the call written last is incomplete. An OpenAI completion raises
    `invalid_input`."""
    return CallExtractor(tools=tools, **options).extract_response(
        as_dict(response), api="anthropic")
