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
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# The comparison's own ways: one batch process per tool, values parsed exactly, compared by key.
from compare import canon, dumps, loads, run_batch, run_peer  # noqa: E402


def batch(argv, inputs):
    recs, _, err = run_batch(argv, inputs, 3600, parse=loads)
    if recs is None or err:
        sys.exit(err or "%s timed out" % argv[0])
    return recs


def peer_records(name, work, inputs):
    """The peer named by the file, through compare.py's workers (None when not installed)."""
    if "json_repair" in name:
        py = os.path.join(work, "venv", "bin", "python")
        if not os.path.exists(py):
            return None
        argv = [py, os.path.join(HERE, "compare.py"), "--worker-json-repair", "--case-timeout", "10"]
    elif os.path.exists(os.path.join(work, "node_modules", "jsonrepair")):
        argv = ["node", os.path.join(HERE, "jsonrepair_worker.cjs"), work]
    else:
        return None
    return run_peer(argv, inputs, 3600, name)[0]


def verdict(rec, expect):
    if not rec["ok"]:
        return "error"
    return "same" if canon(rec["value"]) == canon(expect) else "different"


def show(kind, i, case, rec):
    got = dumps(rec["value"]) if rec["ok"] else "ERROR " + rec["error"]["code"]
    print("%s #%d %s\n    expect   %s\n    toolmend %s" % (
        kind, i + 1, json.dumps(case["input"], ensure_ascii=False)[:200],
        dumps(case.get("expect")) if "expect" in case else "-", got[:200]))


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet under `| head`
    ap = argparse.ArgumentParser()
    ap.add_argument("cases")
    ap.add_argument("--toolmend", default=os.path.join(HERE, "..", "target", "release", "toolmend"))
    ap.add_argument("--work", default=os.path.join(HERE, "work"))
    ap.add_argument("--show", action="store_true", help="print each case that is not the same")
    a = ap.parse_args()
    cases = [loads(line) for line in open(a.cases, encoding="utf-8") if line.strip()]
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
    peer = peer_records(os.path.basename(a.cases), os.path.abspath(a.work), inputs)
    if peer is not None:
        met = sum(1 for c, r in zip(cases, peer) if "expect" in c and verdict(r, c["expect"]) == "same")
        print("the installed peer meets %d of its %d expected values" % (met, len(cases) - counts["skip"]))


if __name__ == "__main__":
    main()
