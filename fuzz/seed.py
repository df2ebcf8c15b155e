#!/usr/bin/env python3
"""Seeds the fuzz corpora from the fixtures: each case's input becomes one corpus file of the
target that runs its command (args, repair or calls). Run by `make fuzz-seed`."""
import hashlib
import json
import pathlib
import sys

root = pathlib.Path(__file__).resolve().parent.parent
written = 0
for path in sorted(root.glob("fixtures/**/*.jsonl")):
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        case = json.loads(line)
        text = case.get("input")
        if not isinstance(text, str):
            continue
        target = case.get("command", "args")
        out = root / "fuzz" / "corpus" / target
        out.mkdir(parents=True, exist_ok=True)
        data = text.encode("utf-8")
        (out / hashlib.sha1(data).hexdigest()).write_bytes(data)
        written += 1
print(f"{written} seeds written to fuzz/corpus/", file=sys.stderr)
