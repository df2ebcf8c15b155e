#!/usr/bin/env python3
"""Seeds the fuzz corpora from the fixtures. Run by `make fuzz-seed`.

- Each case of a fixtures/**/*.jsonl case file becomes one corpus file of the target that runs
  its command (args, repair or calls): its input as text, or, for a case whose input is a JSON
  value (a `--input jsonl` line), that value written as one line.
- Streamed and whole server replies (fixtures/stream/*, fixtures/server/*/*: SSE, one chunk a
  line, whole responses) and fuzz/seeds/TARGET/* (API shapes no fixture file holds: Ollama
  /api/generate lines, Responses events, SSE with no blank lines or with empty data, ...) are
  seeded as they are: the calls target reads each input as a raw reply and as SSE and jsonl.
"""
import hashlib
import json
import pathlib
import sys

root = pathlib.Path(__file__).resolve().parent.parent
# Folders whose files are replies themselves, not cases.
REPLIES = ("fixtures/stream", "fixtures/server")
written = 0


def seed(target, data):
    global written
    out = root / "fuzz" / "corpus" / target
    out.mkdir(parents=True, exist_ok=True)
    (out / hashlib.sha1(data).hexdigest()).write_bytes(data)
    written += 1


for path in sorted(root.glob("fixtures/**/*.jsonl")):
    if path.relative_to(root).as_posix().startswith(REPLIES):
        continue
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        case = json.loads(line)
        if not isinstance(case, dict) or "input" not in case:
            continue
        text = case["input"]
        if not isinstance(text, str):
            text = json.dumps(text, ensure_ascii=False, separators=(",", ":"))
        seed(case.get("command", "args"), text.encode("utf-8"))

replies = [p for folder in REPLIES for p in sorted((root / folder).rglob("*"))]
replies += sorted((root / "fuzz" / "seeds").glob("*/*"))
for path in replies:
    if not path.is_file() or path.suffix not in (".sse", ".jsonl", ".json"):
        continue
    parts = path.relative_to(root).parts
    target = parts[2] if parts[0] == "fuzz" else "calls"
    seed(target, path.read_bytes())
print(f"{written} seeds written to fuzz/corpus/", file=sys.stderr)
