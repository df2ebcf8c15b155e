#!/usr/bin/env python3
"""Counts how toolmend fares on a file of cases taken from a peer's own test suite.

usage: suite_counts.py CASES.jsonl [--toolmend EXE] [--work DIR] [--show]

CASES.jsonl holds one case a line, as compare/peers/ writes them:
    {"input": "<raw text>", "expect": <JSON value>, ...}   the value the peer's suite expects
    {"input": "<raw text>", "error": true, ...}            the suite expects no value (skipped)
Every input goes through `toolmend repair --records --input jsonl`, and the inputs whose expected
value is an object also through `toolmend args`. Values are compared, not text (a bool is not a
number; 1 and 1.0 are one number). Counts: same, error (toolmend fails), different, skip.
The peer named by the file name (json_repair or jsonrepair, installed under --work as run.sh
installs them: venv/, node_modules/) is run over the same inputs, to say how many of its own
expectations the installed version meets.
"""
import argparse
import json
import os
import signal
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

JSON_REPAIR = r'''
import json, sys
from json_repair import repair_json
for line in sys.stdin:
    try:
        print(json.dumps({"ok": True, "value": repair_json(json.loads(line), return_objects=True)}))
    except Exception as e:
        print(json.dumps({"ok": False, "error": str(e)}))
'''


def norm(v):
    """A value in a form where True != 1 and 1 == 1.0."""
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, (int, float)):
        return ("n", float(v) if isinstance(v, float) or abs(v) < 2**53 else v)
    if isinstance(v, list):
        return ("a", tuple(norm(x) for x in v))
    if isinstance(v, dict):
        return ("o", tuple(sorted((k, norm(x)) for k, x in v.items())))
    return ("s", v) if isinstance(v, str) else ("z", None)


def batch(argv, inputs):
    payload = "".join(json.dumps(s, ensure_ascii=False) + "\n" for s in inputs).encode()
    p = subprocess.run(argv, input=payload, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    recs = [json.loads(line) for line in p.stdout.decode().splitlines() if line.strip()]
    if len(recs) != len(inputs):
        sys.exit("%s: %d records for %d inputs: %s" % (argv[0], len(recs), len(inputs), p.stderr[-500:]))
    return recs


def peer_records(name, work, inputs):
    if "json_repair" in name:
        py = os.path.join(work, "venv", "bin", "python")
        return batch([py, "-c", JSON_REPAIR], inputs) if os.path.exists(py) else None
    if not os.path.exists(os.path.join(work, "node_modules", "jsonrepair")):
        return None
    recs = batch(["node", os.path.join(HERE, "jsonrepair_worker.cjs"), work], inputs)
    for r in recs:
        if r["ok"]:
            r["value"] = json.loads(r["text"])
    return recs


def verdict(rec, expect):
    if not rec["ok"]:
        return "error"
    return "same" if norm(rec["value"]) == norm(expect) else "different"


def show(kind, i, case, rec):
    got = json.dumps(rec["value"], ensure_ascii=False) if rec["ok"] else "ERROR " + rec["error"]["code"]
    print("%s #%d %s\n    expect   %s\n    toolmend %s" % (
        kind, i + 1, json.dumps(case["input"], ensure_ascii=False)[:200],
        json.dumps(case.get("expect"), ensure_ascii=False)[:200], got[:200]))


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet under `| head`
    ap = argparse.ArgumentParser()
    ap.add_argument("cases")
    ap.add_argument("--toolmend", default=os.path.join(HERE, "..", "target", "release", "toolmend"))
    ap.add_argument("--work", default=os.path.join(HERE, "work"))
    ap.add_argument("--show", action="store_true", help="print each case that is not the same")
    a = ap.parse_args()
    cases = [json.loads(line) for line in open(a.cases, encoding="utf-8") if line.strip()]
    inputs = [c["input"] for c in cases]
    counts = {"same": 0, "error": 0, "different": 0, "skip": 0}
    for i, (case, rec) in enumerate(zip(cases, batch([a.toolmend, "repair", "--records", "--input", "jsonl"], inputs))):
        kind = verdict(rec, case["expect"]) if "expect" in case else "skip"
        counts[kind] += 1
        if a.show and kind in ("error", "different"):
            show("repair " + kind, i, case, rec)
    objects = [i for i, c in enumerate(cases) if isinstance(c.get("expect"), dict)]
    args_counts = {"same": 0, "error": 0, "different": 0}
    for i, rec in zip(objects, batch([a.toolmend, "args", "--records", "--input", "jsonl"], [inputs[i] for i in objects])):
        kind = verdict(rec, cases[i]["expect"])
        args_counts[kind] += 1
        if a.show and kind != "same":
            show("args " + kind, i, cases[i], rec)
    print("%s: repair %s; args (cases expecting an object) %s" % (os.path.basename(a.cases), counts, args_counts))
    peer = peer_records(os.path.basename(a.cases), a.work, inputs)
    if peer is not None:
        met = sum(1 for c, r in zip(cases, peer) if "expect" in c and verdict(r, c["expect"]) == "same")
        print("the installed peer meets %d of its %d expected values" % (met, len(cases) - counts["skip"]))


if __name__ == "__main__":
    main()
