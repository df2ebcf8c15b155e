"""The Python package against json_repair in one process, on the lines of one corpus file
(read into memory first, not timed). Rounds alternate the order of the ways; prints one JSON
object: {way: [seconds per round]} and each way's count of failed inputs.

  per_call_toolmend            toolmend.mend_args(line) in a Python loop: a dict back (or
                               toolmend.Error)
  per_call_json_repair_objects json_repair.loads(line): Python objects back
  per_call_toolmend_text       Mender().mend(line).json: the JSON text back (None on failure)
  per_call_json_repair_text    json_repair.repair_json(line): the JSON text back
  mend_many                    toolmend.mend_many(lines): one call, the GIL released, the
                               CLI's threads
  mend_many_1                  the same on one thread
  cli                          `toolmend args FILE` (the wheel's binary), output thrown away:
                               in the same rounds, so that mend_many's ratio to it is fair

Every way runs once before the timed rounds, untimed (as `hyperfine --warmup`): a way's first
run pays its one-time costs (Python importing and caching, the first batch's fresh memory and
threads), which no later run does, and not a steady rate. A full collection before each run
leaves every way the same heap.

usage: python bindings_driver.py FILE ROUNDS [WARMUP]"""

import gc
import json
import subprocess
import sys
import time

import json_repair
import toolmend


def failures(call, error, lines):
    """How many of `lines` make `call` raise `error`: every way's per-call loop, the same for
    each so that the loop's own cost is the same."""
    failed = 0
    for line in lines:
        try:
            call(line)
        except error:
            failed += 1
    return failed


def per_call_toolmend(lines):
    return failures(toolmend.mend_args, toolmend.Error, lines)


def per_call_json_repair_objects(lines):
    return failures(json_repair.loads, Exception, lines)


def per_call_toolmend_text(lines):
    mend = toolmend.Mender().mend
    return sum(mend(line).json is None for line in lines)


def per_call_json_repair_text(lines):
    return failures(json_repair.repair_json, Exception, lines)


def mend_many(lines):
    return sum(not r.ok for r in toolmend.mend_many(lines))


def mend_many_1(lines):
    return sum(not r.ok for r in toolmend.mend_many(lines, threads=1))


def cli(path):
    subprocess.run([toolmend.binary_path(), "args", path], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return 0


WAYS = [per_call_toolmend, per_call_json_repair_objects, per_call_toolmend_text,
        per_call_json_repair_text, mend_many, mend_many_1, cli]


def main():
    path, rounds = sys.argv[1], int(sys.argv[2])
    warmup = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        lines = [line.rstrip("\r\n") for line in f]
    times = {w.__name__: [] for w in WAYS}
    failed = {}
    for _ in range(warmup):
        for way in WAYS:
            gc.collect()
            way(path if way is cli else lines)
    for r in range(rounds):
        for way in WAYS[r % len(WAYS):] + WAYS[: r % len(WAYS)]:
            gc.collect()
            started = time.perf_counter()
            failed[way.__name__] = way(path if way is cli else lines)
            times[way.__name__].append(time.perf_counter() - started)
            print(f"  round {r + 1}: {way.__name__} {times[way.__name__][-1]:.3f}s", file=sys.stderr)
    print(json.dumps({"times": times, "failed": failed, "lines": len(lines),
                      "toolmend": toolmend.__version__}))


if __name__ == "__main__":
    main()
