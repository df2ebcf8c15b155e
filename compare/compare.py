#!/usr/bin/env python3
"""Differential comparison: toolmend vs json_repair (Python) vs jsonrepair (JavaScript).

Run through compare/run.sh, which installs the peers and builds toolmend first. Standard library
only (json_repair itself is imported by the worker mode, in the venv that run.sh creates).

Inputs
  compare/cases/NAME.txt        one raw input per line. Blank lines and lines starting with "#::"
                                are skipped (so a case may still start with "#" or "//").
  compare/cases/NAME.multiline  cases separated by a line that is exactly "----"; a case is the
                                text between separators, without the newline that ends it. Lines
                                starting with "#::" are skipped. Use it for inputs with raw newlines.
                                In both, a line "#:: expect JSON" (or "#:: expect error") gives the
                                expected value of the case before it (of its own block in a
                                .multiline file). The cases of valid.* expect their own value.
  compare/peers/NAME.jsonl      cases derived from a peer's own tests: {"input", "expect" | "error":
                                true, "source"} (see compare/peers/README.md).
  fixtures/{args,repair,fuzz}/**/*.jsonl  toolmend's `check` fixtures (each case's "input").
  fixtures/**/*.in*             other inputs, when present: *.jsonl / *.in.jsonl one JSON
                                value per line (a string, or an object with input/text/content/
                                arguments); *.txt / *.lines one input per line; anything else is
                                one input per file (one final newline dropped).
  The class of a case is its file name without extension. Its source (for the summary table) is
  "fixtures", "compare/cases" or "peers: NAME".

Tools
  toolmend:    target/release/toolmend repair --records --input jsonl   (one process)
  json_repair: json_repair.repair_json(s, return_objects=True)          (one process; an empty
               string result for input that is not a quoted string counts as a failure, since
               that is how json_repair says it found nothing)
  jsonrepair:  jsonrepair(s), checked with JSON.parse                    (one process)

Values are compared as JSON values: object key order is ignored, numbers compare by numeric value
(1.0 == 1, exact for big numbers), true is not 1.
"""

import argparse
import decimal
import glob
import json
import os
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# ---------------------------------------------------------------------------------------------
# json_repair worker (runs in the venv; reads JSON strings, writes records)


def json_repair_worker(timeout):
    import json_repair  # noqa: installed by run.sh

    def on_alarm(signum, frame):
        raise TimeoutError("timed out after %ss" % timeout)

    signal.signal(signal.SIGALRM, on_alarm)
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        s = json.loads(line)
        t0 = time.perf_counter()
        try:
            signal.alarm(timeout)
            try:
                v = json_repair.repair_json(s, return_objects=True)
            finally:
                signal.alarm(0)
            text = json.dumps(v, ensure_ascii=False, allow_nan=True)
            rec = {"ok": True, "text": text}
            if v == "" and not s.strip()[:1] in ("\"", "'", "\u201c", "\u2018"):
                rec = {"ok": False, "error": 'returned "" (nothing found)'}
        except BaseException as e:  # RecursionError, TimeoutError, anything the library raises
            rec = {"ok": False, "error": "%s: %s" % (type(e).__name__, str(e)[:200])}
        rec["ms"] = (time.perf_counter() - t0) * 1000
        out.write(json.dumps(rec) + "\n")
        out.flush()


# ---------------------------------------------------------------------------------------------
# Loading the cases


EXPECT = "#:: expect "


def expectation(line):
    """The expectation a "#:: expect ..." line gives: ("ok", value) or ("error",)."""
    body = line[len(EXPECT):].strip()
    return ("error",) if body == "error" else ("ok", loads(body))


class Case(tuple):
    """(class, label, text) with .source and .expect (None when nothing is expected)."""

    def __new__(cls, klass, label, text, source, expect=None):
        self = super().__new__(cls, (klass, label, text))
        self.source, self.expect = source, expect
        return self


def load_cases(root, only):
    cases = []  # Case
    cdir = os.path.join(HERE, "cases")
    for path in sorted(glob.glob(os.path.join(cdir, "*.txt")) + glob.glob(os.path.join(cdir, "*.multiline"))):
        name, ext = os.path.splitext(os.path.basename(path))
        if only and name not in only:
            continue
        with open(path, encoding="utf-8", newline="") as f:
            data = f.read()
        own = []
        if ext == ".txt":
            for n, line in enumerate(data.split("\n"), 1):
                if line.endswith("\r"):
                    line = line[:-1]
                if line.startswith(EXPECT) and own:
                    own[-1].expect = expectation(line)
                if not line.strip() or line.startswith("#::"):
                    continue
                own.append(Case(name, "%s:%d" % (name, n), line, "compare/cases"))
        else:
            n = 0
            block = []
            want = None
            lines = data.split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            for line in lines + ["----"]:
                if line == "----":
                    text = "\n".join(block)
                    if text.strip():
                        n += 1
                        own.append(Case(name, "%s#%d" % (name, n), text, "compare/cases", want))
                    block = []
                    want = None
                elif line.startswith(EXPECT):
                    want = expectation(line)
                elif not line.startswith("#::"):
                    block.append(line)
        for case in own:
            if name == "valid" and case.expect is None:
                case.expect = ("ok", loads(case[2]))
        cases.extend(own)
    pdir = os.path.join(HERE, "peers")
    for path in sorted(glob.glob(os.path.join(pdir, "*.jsonl"))):
        name = os.path.splitext(os.path.basename(path))[0]
        if only and "peers" not in only and name not in only:
            continue
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                c = json.loads(line)
                want = ("error",) if c.get("error") else ("ok", loads(json.dumps(c["expect"])))
                cases.append(Case("peers_" + name, "peers/%s:%d" % (name, n), c["input"], "peers: " + name, want))
    fdir = os.path.join(root, "fixtures")
    if os.path.isdir(fdir) and (not only or "fixtures" in only):
        # toolmend check fixtures (args, repair, fuzz: JSONL cases with an "input"), and any
        # *.in* files.
        paths = set(glob.glob(os.path.join(fdir, "**", "*.in*"), recursive=True))
        for group in ("args", "repair", "fuzz"):
            paths.update(glob.glob(os.path.join(fdir, group, "**", "*.jsonl"), recursive=True))
        for path in sorted(paths):
            if not os.path.isfile(path):
                continue
            rel = os.path.relpath(path, root)
            try:
                with open(path, encoding="utf-8", newline="") as f:
                    data = f.read()
            except (UnicodeDecodeError, OSError):
                continue
            if path.endswith(".jsonl"):
                for n, line in enumerate(data.splitlines(), 1):
                    if not line.strip():
                        continue
                    try:
                        v = json.loads(line)
                    except ValueError:
                        continue
                    want = None
                    if isinstance(v, dict):
                        want = fixture_expectation(rel, v, line)
                        v = next((v[k] for k in ("input", "text", "content", "arguments") if isinstance(v.get(k), str)), None)
                    if isinstance(v, str) and v.strip():
                        cases.append(Case("fixtures", "%s:%d" % (rel, n), v, "fixtures", want))
            elif path.endswith((".txt", ".lines")):
                for n, line in enumerate(data.split("\n"), 1):
                    line = line.rstrip("\r")
                    if line.strip():
                        cases.append(Case("fixtures", "%s:%d" % (rel, n), line, "fixtures"))
            else:
                if data.endswith("\n"):
                    data = data[:-1]
                if data.strip():
                    cases.append(Case("fixtures", rel, data, "fixtures"))
    return cases


def fixture_expectation(rel, case, line):
    """What a `toolmend check` case expects of `repair` on its input, when that is known: the
    value of a case run with no options (an `args` case only when it expects a value, since
    `args` refuses values `repair` accepts), or a `repair` case's error."""
    if case.get("options") or "input" not in case:
        return None
    command = case.get("command", "args")
    if command not in ("args", "repair"):
        return None
    if command == "args" and case["input"].strip().startswith('"'):
        # `args` unquotes any string holding JSON text; `repair` only one holding a single
        # object or array, so such a case says nothing about `repair`.
        return None
    if "expect" in case:
        raw = json.loads(line, parse_float=Num, parse_int=Num, parse_constant=lambda c: ("const", c))
        return ("ok", raw["expect"])
    if command == "repair" and "error" in case:
        return ("error",)
    return None


# ---------------------------------------------------------------------------------------------
# Running the tools


def run_batch(argv, inputs, timeout, parse=json.loads):
    """Feed one JSON string per line, read one JSON record per line."""
    payload = "".join(json.dumps(s, ensure_ascii=False) + "\n" for s in inputs).encode("utf-8")
    t0 = time.perf_counter()
    try:
        p = subprocess.run(argv, input=payload, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, time.perf_counter() - t0, "timed out after %ss" % timeout
    elapsed = time.perf_counter() - t0
    recs = [parse(l) for l in p.stdout.decode("utf-8").splitlines() if l.strip()]
    err = None
    if len(recs) != len(inputs):
        err = "%s: %d records for %d inputs (exit %d): %s" % (argv[0], len(recs), len(inputs), p.returncode, p.stderr.decode("utf-8", "replace")[-500:])
    return recs, elapsed, err


class Num(decimal.Decimal):
    """An exact number that remembers how it was written."""

    def __new__(cls, raw):
        self = super().__new__(cls, raw)
        self.raw = raw
        return self


def loads(text):
    return json.loads(text, parse_float=Num, parse_int=Num, parse_constant=lambda c: ("const", c))


def run_toolmend(root, inputs, timeout, exe=None):
    exe = exe or os.path.join(root, "target", "release", "toolmend")
    recs, elapsed, err = run_batch([exe, "repair", "--records", "--input", "jsonl"], inputs, timeout, parse=loads)
    if recs is None or err:
        sys.exit("compare: toolmend failed: %s" % err)
    out = []
    for r in recs:
        if r.get("ok"):
            out.append({"ok": True, "value": r["value"], "repairs": r.get("repairs", []), "dropped": r.get("dropped", [])})
        else:
            e = r.get("error", {})
            out.append({"ok": False, "error": "%s: %s" % (e.get("code"), e.get("message"))})
    return out, elapsed


def run_peer(argv, inputs, timeout, name):
    recs, elapsed, err = run_batch(argv, inputs, timeout)
    if recs is None or err:
        sys.exit("compare: %s failed: %s" % (name, err))
    out = []
    for r in recs:
        if r["ok"]:
            try:
                out.append({"ok": True, "value": loads(r["text"]), "ms": r["ms"]})
            except ValueError as e:
                out.append({"ok": False, "error": "output not JSON: %s" % e, "ms": r["ms"]})
        else:
            out.append({"ok": False, "error": r["error"], "ms": r["ms"]})
    return out, elapsed


# ---------------------------------------------------------------------------------------------
# Comparing


def canon(v):
    """A hashable, order-insensitive key for a parsed JSON value."""
    if isinstance(v, dict):
        return ("o", tuple(sorted((k, canon(x)) for k, x in v.items())))
    if isinstance(v, list):
        return ("a", tuple(canon(x) for x in v))
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, decimal.Decimal):
        if not v.is_finite():
            return ("c", str(v))
        if v == 0:
            return ("n", "0")
        t = v.normalize().as_tuple()
        return ("n", "%s%s e%d" % ("-" if t.sign else "", "".join(map(str, t.digits)), t.exponent))
    if isinstance(v, tuple):  # ("const", "NaN")
        return ("c", v[1])
    if v is None:
        return ("z",)
    return ("s", v)


def dumps(v):
    """Compact JSON text of a value parsed by loads()."""
    if isinstance(v, dict):
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + dumps(x) for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ",".join(dumps(x) for x in v) + "]"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, decimal.Decimal):
        return getattr(v, "raw", str(v))
    if isinstance(v, tuple):
        return v[1]
    if v is None:
        return "null"
    return json.dumps(v, ensure_ascii=False)


def key(r):
    return ("ok", canon(r["value"])) if r["ok"] else ("error",)


def show(r, width):
    s = dumps(r["value"]) if r["ok"] else "ERROR(%s)" % r["error"]
    return clip(s, width)


def clip(s, width):
    s = s.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    s = "".join("\\x%02x" % ord(c) if c < " " else "\\u%04x" % ord(c) if "\ud800" <= c <= "\udfff" else c for c in s)
    if width and len(s) > width:
        s = s[: width - 1] + "…"
    return s


def classify(tm, jr, js):
    ktm, kjr, kjs = key(tm), key(jr), key(js)
    if ktm == kjr == kjs:
        return "agree"
    if kjr == kjs == ("error",):
        return "peers_fail"  # both peers fail, toolmend succeeds
    if kjr == kjs:
        return "tm_differs"  # the peers agree on a value, toolmend does not
    if ktm == kjr:
        return "peers_disagree:tm=json_repair"
    if ktm == kjs:
        return "peers_disagree:tm=jsonrepair"
    return "peers_disagree:all_differ"


def expect_key(expect):
    return ("ok", canon(expect[1])) if expect[0] == "ok" else ("error",)


def summary(cases, tm, jr, js, markdown):
    """Per source of cases: how often each tool gives the expected value, and how often toolmend
    agrees with at least one peer."""
    order = ["fixtures", "compare/cases"] + sorted({c.source for c in cases if c.source.startswith("peers")})
    rows = []
    for source in order + ["all"]:
        picked = [(c, a, b, d) for c, a, b, d in zip(cases, tm, jr, js) if source in ("all", c.source)]
        if not picked:
            continue
        with_expect = [(c, a, b, d) for c, a, b, d in picked if c.expect is not None]
        hits = [sum(key(r) == expect_key(c.expect) for c, *rs in with_expect for r in [rs[i]]) for i in range(3)]
        agree = sum(key(a) in (key(b), key(d)) for _, a, b, d in picked)
        rows.append((source, len(picked), len(with_expect), hits, agree))
    pct = lambda k, n: "%d (%.1f%%)" % (k, 100.0 * k / n) if n else "-"
    head = ("source", "cases", "with expected value", "toolmend = expected", "json_repair = expected",
            "jsonrepair = expected", "toolmend = a peer")
    lines = [(src, str(n), str(e), pct(h[0], e), pct(h[1], e), pct(h[2], e), pct(ag, n)) for src, n, e, h, ag in rows]
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for line in lines:
            print("| " + " | ".join(line) + " |")
    else:
        widths = [max(len(x) for x in col) for col in zip(head, *lines)]
        for line in [head] + lines:
            print("  ".join(x.ljust(w) for x, w in zip(line, widths)))


# ---------------------------------------------------------------------------------------------
# Timing (linear-time check)


def adversarial(n):
    """name -> input of about n bytes."""
    return {
        "unclosed string + commas": '{"a": "' + "x" * n + "," * n,
        "open quote + commas": '["' + "," * n,
        "string of ', ' pairs, unclosed": '{"a":"' + "x, " * (n // 3),
        "unescaped inner quotes": '{"a": "' + 'x" ' * (n // 3) + '"}',
        "many unclosed '[": "[" * n,
        "many '{\"a\":' opened": '{"a":' * (n // 5),
        "array of numbers, unclosed": "[" + "1," * (n // 2),
        "missing commas": "{" + " ".join('"k%d": %d' % (i, i) for i in range(n // 10)) + "}",
        "single-quoted apostrophes": "{'a': '" + "it's " * (n // 5) + "'}",
        "unclosed block comment": "{\"a\": 1 /*" + "x" * n,
        "backslashes in open string": '["' + "\\" * n,
        "unquoted words": "{a: " + "word " * (n // 5),
        "many top-level values": '{"a":1}' * (n // 7),
    }


def timing(root, args):
    sizes = [int(s) for s in args.sizes.split(",")]
    exe = os.path.join(root, "target", "release", "toolmend")
    py = os.path.join(HERE, "work", "venv", "bin", "python")
    node = ["node", os.path.join(HERE, "jsonrepair_worker.cjs"), os.path.join(HERE, "work")]
    tools = [
        ("toolmend", [exe, "repair", "--records", "--input", "jsonl"]),
        ("json_repair", [py, os.path.abspath(__file__), "--worker-json-repair", "--case-timeout", str(args.timing_timeout)]),
        ("jsonrepair", node),
    ]
    if args.tools:
        tools = [t for t in tools if t[0] in args.tools.split(",")]
    print("Time per input (s), one process per input; toolmend is wall time including process start,")
    print("the peers are measured around the library call. '>Ns' = killed at the timeout.\n")
    hdr = "%-34s %-12s" % ("input", "tool") + "".join("%12s" % ("%dK" % (s // 1000)) for s in sizes)
    print(hdr)
    print("-" * len(hdr))
    names = list(adversarial(10).keys())
    for name in names:
        for tname, argv in tools:
            cells = []
            for n in sizes:
                s = adversarial(n)[name]
                recs, elapsed, err = run_batch(argv, [s], args.timing_timeout + 5)
                if recs is None:
                    cells.append(">%ds" % args.timing_timeout)
                    continue
                r = recs[0] if recs else {}
                t = elapsed if tname == "toolmend" else r.get("ms", 0) / 1000
                mark = "" if r.get("ok") else "!"
                if tname == "json_repair" and "timed out" in r.get("error", ""):
                    cells.append(">%ds" % args.timing_timeout)
                else:
                    cells.append("%.3f%s" % (t, mark))
            print("%-34s %-12s" % (clip(name, 34), tname) + "".join("%12s" % c for c in cells))
            sys.stdout.flush()
    print("\n'!' = the tool failed on that input (error), time still shown.")


# ---------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=os.path.dirname(HERE))
    ap.add_argument("--worker-json-repair", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--case-timeout", type=int, default=10, help="json_repair: seconds per input")
    ap.add_argument("--only", action="append", help="only this class (repeatable)")
    ap.add_argument("--all", action="store_true", help="print every row, not only disagreements")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    ap.add_argument("--width", type=int, default=38, help="column width (0: no limit)")
    ap.add_argument("--timing", action="store_true", help="time the tools on adversarial inputs")
    ap.add_argument("--sizes", default="5000,35000,140000")
    ap.add_argument("--timing-timeout", type=int, default=60)
    ap.add_argument("--tools", help="timing: only these tools (comma-separated)")
    ap.add_argument("--toolmend", help="the toolmend binary to run (default: target/release/toolmend)")
    ap.add_argument("--results", default=os.path.join(HERE, "work", "results.jsonl"), help="full results (JSONL)")
    args = ap.parse_args()

    if args.worker_json_repair:
        sys.setrecursionlimit(1000)  # what users get by default
        return json_repair_worker(args.case_timeout)

    sys.setrecursionlimit(100000)
    threading.stack_size(512 * 1024 * 1024)
    t = threading.Thread(target=lambda: run(args))
    t.start()
    t.join()
    sys.exit(getattr(run, "status", 1))


def run(args):
    root = os.path.abspath(args.root)
    if args.timing:
        timing(root, args)
        run.status = 0
        return
    cases = load_cases(root, set(args.only or []))
    if not cases:
        sys.exit("compare: no cases found")
    inputs = [c[2] for c in cases]
    tm, t_tm = run_toolmend(root, inputs, 600, args.toolmend)
    jr, t_jr = run_peer([os.path.join(HERE, "work", "venv", "bin", "python"), os.path.abspath(__file__),
                         "--worker-json-repair", "--case-timeout", str(args.case_timeout)], inputs, 3600, "json_repair")
    js, t_js = run_peer(["node", os.path.join(HERE, "jsonrepair_worker.cjs"), os.path.join(HERE, "work")], inputs, 3600, "jsonrepair")

    counts = {}
    tm_err_peer_ok = 0
    rows = []
    os.makedirs(os.path.dirname(args.results), exist_ok=True)
    with open(args.results, "w", encoding="utf-8") as rf:
        for case, a, b, c in zip(cases, tm, jr, js):
            cls, label, text = case
            verdict = classify(a, b, c)
            counts[verdict] = counts.get(verdict, 0) + 1
            if not a["ok"] and (b["ok"] or c["ok"]):
                tm_err_peer_ok += 1
            rec = {"class": cls, "case": label, "source": case.source, "input": text, "verdict": verdict}
            if case.expect is not None:
                rec["expect"] = dumps(case.expect[1]) if case.expect[0] == "ok" else None
                for name, r in (("toolmend", a), ("json_repair", b), ("jsonrepair", c)):
                    rec[name + "_expected"] = key(r) == expect_key(case.expect)
            for name, r in (("toolmend", a), ("json_repair", b), ("jsonrepair", c)):
                rec[name] = dumps(r["value"]) if r["ok"] else None
                if not r["ok"]:
                    rec[name + "_error"] = r["error"]
            rec["toolmend_repairs"] = json.loads(dumps(a.get("repairs") or []))
            if a.get("dropped"):
                rec["toolmend_dropped"] = [dumps(d) for d in a["dropped"]]
            rf.write(json.dumps(rec) + "\n")
            if args.all or verdict != "agree":
                rows.append((label, text, a, b, c, verdict))

    w = args.width
    short = {"agree": "=", "tm_differs": "TM≠both", "peers_disagree:tm=json_repair": "TM=py",
             "peers_disagree:tm=jsonrepair": "TM=js", "peers_disagree:all_differ": "all≠", "peers_fail": "peers✗"}
    if args.markdown:
        print("| case | input | toolmend | json_repair | jsonrepair | verdict |")
        print("|---|---|---|---|---|---|")
        for label, text, a, b, c, v in rows:
            cell = lambda s: "`" + s.replace("|", "\\|").replace("`", "'") + "`"
            print("| %s | %s | %s | %s | %s | %s |" % (label, cell(clip(text, w)), cell(show(a, w)), cell(show(b, w)), cell(show(c, w)), short[v]))
    else:
        fmt = "%-16s %-*s %-*s %-*s %-*s %s"
        print(fmt % ("case", w, "input", w, "toolmend", w, "json_repair", w, "jsonrepair", "verdict"))
        for label, text, a, b, c, v in rows:
            print(fmt % (clip(label, 16), w, clip(text, w), w, show(a, w), w, show(b, w), w, show(c, w), short[v]))

    n = len(cases)
    pd = sum(v for k, v in counts.items() if k.startswith("peers_disagree"))
    print()
    print("cases:                                  %d (%d classes)" % (n, len({c[0] for c in cases})))
    print("all three agree:                        %d" % counts.get("agree", 0))
    print("toolmend differs from both (peers agree): %d" % counts.get("tm_differs", 0))
    print("peers disagree:                         %d  (toolmend = json_repair %d, = jsonrepair %d, all differ %d)" % (
        pd, counts.get("peers_disagree:tm=json_repair", 0), counts.get("peers_disagree:tm=jsonrepair", 0), counts.get("peers_disagree:all_differ", 0)))
    print("toolmend errors where a peer succeeds:  %d" % tm_err_peer_ok)
    print("toolmend succeeds where both peers fail: %d" % counts.get("peers_fail", 0))
    print("time: toolmend %.3fs, json_repair %.3fs, jsonrepair %.3fs (whole batch, incl. start-up)" % (t_tm, t_jr, t_js))
    print()
    summary(cases, tm, jr, js, args.markdown)
    print("full results: %s" % os.path.relpath(args.results, os.getcwd()))
    run.status = 0


if __name__ == "__main__":
    main()
