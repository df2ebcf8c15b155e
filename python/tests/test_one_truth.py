"""One truth: `extract_calls` gives what `toolmend calls` gives, for every reply of the calls
fixtures with its options (tools files, formats, the envelope required), success or failure."""

import json
import os
import subprocess
import sys

import pytest

import toolmend


def calls_cases(root):
    """(name, reply, CLI options, keyword options) of every `calls` fixture case whose options
    the Python API takes."""
    cases = []
    for path in sorted((root / "fixtures" / "calls").glob("*.jsonl")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            case = json.loads(line)
            if case.get("command") != "calls":
                continue
            options = case.get("options", [])
            kwargs, i, usable = {}, 0, True
            while i < len(options):
                flag = options[i]
                if flag == "--tools":
                    tools = path.parent / options[i + 1]
                    kwargs["tools"] = json.loads(tools.read_text()) if tools.suffix == ".json" else str(tools)
                    options = options[:i + 1] + [str(tools)] + options[i + 2:]
                    i += 2
                elif flag == "--format":
                    kwargs["format"] = options[i + 1]
                    i += 2
                elif flag == "--max-nesting":
                    kwargs["max_nesting"] = int(options[i + 1])
                    i += 2
                elif flag == "--require-terminate":
                    kwargs["require_terminate"] = True
                    i += 1
                elif flag == "--strict":
                    kwargs["strict"] = True
                    i += 1
                else:  # --shape and other output-only flags: not the extractor's business
                    usable = False
                    break
            if usable:
                cases.append((f"{path.name}:{n} {case.get('name', '')}", case["input"], options, kwargs))
    return cases


def cli(options, reply):
    """`toolmend calls OPTIONS --records` (the installed command) on one reply."""
    framing = [] if isinstance(reply, str) else ["--input", "jsonl"]
    text = reply if isinstance(reply, str) else json.dumps(reply) + "\n"
    out = subprocess.run(
        ["toolmend", "calls", *options, *framing, "--records"],
        input=text.encode(),
        capture_output=True,
        env=dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]),
    )
    records = [json.loads(line) for line in out.stdout.decode().splitlines()]
    assert len(records) == 1, (options, out.stderr)
    return records[0]


def test_extract_calls_equals_the_cli_on_every_calls_fixture(root):
    cases = calls_cases(root)
    assert len(cases) > 300, len(cases)
    disagree = []
    for name, reply, options, kwargs in cases:
        expected = cli(options, reply)
        if isinstance(reply, dict):
            # A JSON-lines record: the reply is its `text` or the API response it is.
            reply = reply.get("text", reply) if set(reply) <= {"text", "id"} else reply
        try:
            got = {"ok": True, "value": toolmend.extract_calls(reply, **kwargs)}
        except toolmend.Error as e:
            got = {"ok": False, "code": e.code, "message": e.message, "value": e.value}
        if expected["ok"]:
            want = {"ok": True, "value": expected["value"]}
            # Whole-reply repairs (`unquote` of a reply that is one JSON string) are the
            # record's `repairs`; the API gives them in the value.
            if expected.get("repairs"):
                want["value"] = dict(expected["value"], repairs=expected["repairs"])
        else:
            error = expected["error"]
            want = {"ok": False, "code": error["code"], "message": error["message"], "value": expected.get("value")}
        if got != want:
            disagree.append((name, want, got))
    assert not disagree, "\n".join(f"{n}\n  cli:    {w}\n  python: {g}" for n, w, g in disagree[:10])
