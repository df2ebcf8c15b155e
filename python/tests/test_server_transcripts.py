"""One truth on real servers' transcripts (fixtures/server): `extract_calls`, the response
helpers (`calls_from_openai` / `calls_from_anthropic`, on the raw HTTP body and on the `openai`
client's object) and `stream` (on the SSE's chunks and on the `openai` client's chunks) give
what `toolmend calls` gives (fixtures/server/expect.json, checked against the CLI by
tests/server_transcripts.rs)."""

import json
import re

import pytest

import toolmend


def transcripts(root):
    here = root / "fixtures" / "server"
    expect = json.loads((here / "expect.json").read_text())
    for t in json.loads((here / "transcripts.json").read_text()):
        yield t, here / t["name"], expect[t["name"]]


def read(stem, ext):
    path = stem.with_name(stem.name + ext)
    return path.read_text() if path.exists() else None


def sse_chunks(text):
    """The JSON payloads of an SSE text's events (lines may end with CR, LF or CRLF), read as
    `calls --stream --input sse` reads them: an event's `data:` lines join with a newline, and
    data that is a whole JSON value is a chunk at once (a chunk split over lines, chunks with
    no blank line between them)."""
    chunks, data = [], None
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if not line:
            assert data is None or not data.strip(), data
            data = None
        elif line.startswith("data:"):
            piece = line[5:][1:] if line[5:].startswith(" ") else line[5:]
            data = piece if data is None else data + "\n" + piece
            if data.strip() == "[DONE]":
                data = None
                continue
            try:
                chunks.append(json.loads(data))
                data = None
            except json.JSONDecodeError:
                pass
    return chunks


def normal(record):
    """A record or `end` event as compared (as tests/server_transcripts.rs compares them)."""
    record = {k: v for k, v in record.items() if k not in ("event", "line", "id")}
    if "error" in record:
        record["error"] = {k: v for k, v in record["error"].items() if k != "original"}
        # Where a stream's error was found is the surface's own (a CLI input line, a chunk).
        record["error"]["message"] = re.sub(r"^(line|chunk) \d+: ", "", record["error"]["message"])
    return record


def as_record(call):
    """What an API call returns or raises, as a CLI record."""
    try:
        value = call()
    except toolmend.Error as e:
        record = {"ok": False, "error": {"code": e.code, "message": e.message}}
        if e.offset is not None:
            record["error"]["offset"] = e.offset
        if e.value is not None:
            record["value"] = e.value
        return record
    # The reply's own repairs (a reply that is one JSON string) are the record's `repairs`.
    repairs = value.pop("repairs", [])
    return {"ok": True, "value": value, "repairs": repairs}


def test_every_surface_gives_the_recorded_truth(root):
    disagree = []
    seen = 0
    for t, stem, expect in transcripts(root):
        seen += 1
        # Gemini's API has no helper of its own: extract_calls reads it.
        helper = {"openai": toolmend.calls_from_openai,
                  "anthropic": toolmend.calls_from_anthropic}.get(t["api"], toolmend.extract_calls)
        for what, text, want in (("raw HTTP", read(stem, ".json"), expect["whole"]),
                                 ("openai client", read(stem, ".client.json"), expect.get("client"))):
            if text is None:
                continue
            response = json.loads(text)
            for surface, call in (("extract_calls", lambda: toolmend.extract_calls(response)),
                                  (helper.__name__, lambda: helper(response))):
                got = as_record(call)
                if got != want:
                    disagree.append((t["name"], surface + " on " + what, got, want))
        streams = [("SSE chunks", sse_chunks(read(stem, ".sse")), expect["stream"])]
        chunks = read(stem, ".chunks.jsonl")
        if chunks is not None:
            streams.append(("openai client chunks", [json.loads(l) for l in chunks.splitlines() if l],
                            expect["chunks"]))
        for what, items, want in streams:
            end = normal(list(toolmend.stream(items))[-1])
            if end != want:
                disagree.append((t["name"], "stream on " + what, end, want))
    assert seen >= 8, seen
    assert not disagree, "\n".join(f"{n} {s}:\n  got      {g}\n  expected {w}" for n, s, g, w in disagree)


def test_stream_on_every_recorded_shape_ends_as_the_cli_does(root):
    """`stream` on the chunks of each stream in fixtures/stream (servers' shapes: fragments,
    calls with no index or all at index 0, server tools, content parts, stop reasons) ends with
    the `end` event of the installed `toolmend calls --stream --input sse` (`--input jsonl` for
    the `.jsonl` ones: Ollama lines, Bedrock `ConverseStream` events, one chunk a line)."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    here = root / "fixtures" / "stream"
    paths = sorted([*here.glob("*.sse"), *here.glob("*.jsonl")])
    assert len(paths) >= 9, paths
    disagree = []
    for path in paths:
        text = path.read_text()
        framing = path.suffix[1:]
        out = subprocess.run(["toolmend", "calls", "--stream", "--input", framing],
                             input=text.encode(), capture_output=True, env=env, timeout=60)
        cli = json.loads(out.stdout.decode().splitlines()[-1])
        chunks = sse_chunks(text) if framing == "sse" else [json.loads(l) for l in text.splitlines() if l.strip()]
        end = list(toolmend.stream(chunks))[-1]
        if normal(end) != normal(cli):
            disagree.append((path.name, end, cli))
    assert not disagree, "\n".join(f"{n}:\n  stream {g}\n  cli    {w}" for n, g, w in disagree)
