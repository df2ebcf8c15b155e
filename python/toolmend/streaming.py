"""`toolmend.stream`: the events of a reply read as it arrives (see docs/streaming.md)."""

from typing import Any, Dict, Iterable, Iterator, List

from ._native import Stream


def _get(obj: Any, key: str) -> Any:
    """`obj[key]` for a dict, `obj.key` for an object (the OpenAI client's models)."""
    if isinstance(obj, dict):
        return obj.get(key)
    return getattr(obj, key, None)


def feed_chunk(s: Stream, chunk: Any) -> List[Dict[str, Any]]:
    """Feeds one chunk: text (str), or an OpenAI chat-completions chunk (the client's
    `ChatCompletionChunk`, or the same as a dict): its first choice's `delta.content`,
    `delta.reasoning_content` (or `reasoning`) and `delta.tool_calls` fragments."""
    if isinstance(chunk, str):
        return s.feed(chunk)
    events: List[Dict[str, Any]] = []
    choices = _get(chunk, "choices") or []
    if not choices:
        return events
    delta = _get(choices[0], "delta")
    if delta is None:
        return events
    for key in ("reasoning_content", "reasoning"):
        reasoning = _get(delta, key)
        if isinstance(reasoning, str) and reasoning:
            events += s.feed_reasoning(reasoning)
            break
    content = _get(delta, "content")
    if isinstance(content, str) and content:
        events += s.feed(content)
    for call in _get(delta, "tool_calls") or []:
        function = _get(call, "function")
        index = _get(call, "index")
        events += s.feed_call(
            index if isinstance(index, int) else 0,
            _get(call, "id"),
            _get(function, "name") if function is not None else None,
            (_get(function, "arguments") if function is not None else None) or "",
        )
    return events


def stream(chunks: Iterable[Any], **options: Any) -> Iterator[Dict[str, Any]]:
    """The events of a reply whose pieces `chunks` yields (str, or OpenAI chat-completions
    chunks), ending with `end`; `options` are those of `Stream` (tools, format, ...).

        for event in toolmend.stream(client.chat.completions.create(..., stream=True)):
            ...
    """
    s = Stream(**options)
    for chunk in chunks:
        yield from feed_chunk(s, chunk)
    yield from s.finish()
