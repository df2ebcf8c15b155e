"""`toolmend.stream`: the events of a reply read as it arrives (see docs/streaming.md)."""

from typing import Any, Dict, Iterable, Iterator, List

from ._native import Stream


def as_dict(obj: Any) -> Any:
    """SDK objects (the OpenAI and Anthropic clients' pydantic models, or any object with
    attributes) as plain dicts and lists, for the library to read."""
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    if isinstance(obj, dict):
        return {k: as_dict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [as_dict(v) for v in obj]
    for method in ("model_dump", "to_dict"):
        if callable(getattr(obj, method, None)):
            return as_dict(getattr(obj, method)())
    if hasattr(obj, "__dict__"):
        return {k: as_dict(v) for k, v in vars(obj).items() if not k.startswith("_")}
    return obj


def feed_chunk(s: Stream, chunk: Any) -> List[Dict[str, Any]]:
    """Feeds one chunk: text (str), or a server's chunk (the OpenAI client's
    `ChatCompletionChunk` or Responses API event, an Anthropic event, or the same as a dict),
    read by the library's rules (`Stream.feed_chunk`)."""
    if isinstance(chunk, str):
        return s.feed(chunk)
    return s.feed_chunk(as_dict(chunk))


def stream(chunks: Iterable[Any], **options: Any) -> Iterator[Dict[str, Any]]:
    """The events of a reply whose pieces `chunks` yields (str, or a server's chunks), ending
    with `end`; `options` are those of `Stream` (tools, format, ...).

        for event in toolmend.stream(client.chat.completions.create(..., stream=True)):
            ...

    The OpenAI client's Responses API events (`client.responses.create(..., stream=True)`)
    and the other servers' chunks `calls --stream --input jsonl` reads are read the same way.
    """
    s = Stream(**options)
    for chunk in chunks:
        yield from feed_chunk(s, chunk)
    yield from s.finish()
