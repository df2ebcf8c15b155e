#!/usr/bin/env python3
"""Deterministic corpus generator for `make bench` (Python 3 standard library only).

Writes into OUT_DIR (default bench/work/corpus):

  args-10k.txt, args-100k.txt, args-1m.txt
      Tool-call argument texts, one per line. The three files are prefixes of one seeded
      stream, so every size has the same mix:
        40% clean JSON objects (tens of bytes to several KB, nested)
        25% an object encoded as a JSON string 1-3 times
        10% two or three objects concatenated ({..}{..}, with or without a space)
        15% broken: trailing commas, single quotes, Python True/False/None, cut off
        10% wrapped in prose or in a (one-line) ```json fence
      Raw newlines cannot appear inside a line, so fences are written on one line.
  replies.jsonl
      Raw model replies for `toolmend calls --input jsonl`, each reply a JSON string on its own
      line: Hermes/Qwen <tool_call>, Mistral [TOOL_CALLS], Llama <|python_tag|>, the bare
      {"tool","parameters","terminate"} envelope, {"name","arguments":"<encoded>"}, JSON in a
      fence inside prose, several calls in one reply, and plain prose (no call).
  big-200mb.txt
      One line of about 200 MB: a clean JSON object (for the huge-line memory figure).
  adv-<series>-<1x|10x|100x>.txt
      Adversarial single-line inputs for the scaling series (see ADVERSARIAL below).
  adv-calls-<series>-<1x|10x|100x>.txt
      Adversarial replies for the `toolmend calls` scaling series (see CALLS_ADVERSARIAL below):
      each format's markers repeated, markers with a JSON body that never closes, deep nesting.
  stream-<series>.txt
      ~1 MB replies for the streaming series (see STREAM below): many calls of one format
      family each (Hermes, Mistral, Kimi K2, Functionary, encoded OpenAI arguments, a fenced
      envelope, reasoning and prose), and single calls whose arguments are 1 MB (many keys, one
      long string, encoded), where a stream that re-read its buffer per chunk would be quadratic.
  lines-<empty|crlf|tiny>-<1m|16m>.txt
      1,000,000 and 16,000,000 lines that are empty, `\r` alone, or `{"a":1}` (the memory
      table's lines series: peak RSS must not grow with the number of lines).
  kinds-<clean|encoded|concatenated|broken|wrapped>.txt
      The first 100k lines of the same stream, split by kind (for the per-kind figures).
  manifest.json
      What was generated, with the kind of each line counted.

Usage: gen_corpus.py [--out DIR] [--seed N] [--sizes 10k,100k,1m] [--no-big] [--adv-base BYTES]
                     [--calls-adv-base BYTES]
"""

import argparse
import json
import os
import random
import sys

SEED = 20240604

KEYS = [
    "command", "path", "file_path", "query", "pattern", "content", "url", "args", "options",
    "limit", "offset", "recursive", "env", "timeout", "headers", "body", "messages", "filter",
    "sort", "fields", "cwd", "old_string", "new_string", "replace_all", "language", "code",
    "description", "title", "tags", "id", "user_id", "max_results", "include", "exclude",
    "location", "unit", "date", "start", "end", "metadata", "items", "name", "value", "mode",
]
TOOLS = [
    "bash", "read_file", "write_file", "edit_file", "search", "web_fetch", "get_weather",
    "list_dir", "grep", "run_tests", "create_issue", "send_email", "sql_query", "calendar_add",
]
WORDS = (
    "the of and to in is for on that with as it at by from this be are or an was list file "
    "build test release config user data value error result output input line path search "
    "query request response server client cache index token model agent tool call argument "
    "weather city today report summary update delete create fetch page item record table"
).split()
UNICODE_BITS = ["café", "naïve", "日本語", "Ω", "→", "emoji 🚀", "Zürich", "ß", "€5"]
CODE_BITS = [
    'print("hello")', "for i in range(10):\n    x += i", "if (a && b) { return 1; }",
    "SELECT * FROM t WHERE name = 'x';", "ls -la | grep \"foo\" > out.txt", "C:\\Users\\me\\file.txt",
    "echo $HOME\t# tab", "line one\nline two\nline three", "a \"quoted\" word", "back\\slash",
]
PROSE_BEFORE = [
    "Sure! Here are the arguments:", "I'll call the tool with:", "Arguments:",
    "Let me run that for you.", "Here is the JSON you asked for:", "Calling the tool now ->",
]
PROSE_AFTER = [
    "Let me know if you need anything else.", "This should work.", "",
    "(I used the default limit.)", "Done.",
]


# ---------------------------------------------------------------------------------------------
# Value generation


def gen_string(rnd, budget):
    r = rnd.random()
    if r < 0.45:
        n = rnd.randint(1, max(1, min(12, budget // 6)))
        return " ".join(rnd.choice(WORDS) for _ in range(n))
    if r < 0.6:
        parts = [rnd.choice(WORDS) for _ in range(rnd.randint(1, 5))]
        return "/" + "/".join(parts) + rnd.choice(["", ".rs", ".py", ".json", ".txt"])
    if r < 0.75:
        return rnd.choice(CODE_BITS)
    if r < 0.85:
        return rnd.choice(UNICODE_BITS) + " " + rnd.choice(WORDS)
    # a long text block
    n = rnd.randint(10, max(10, min(400, budget // 6)))
    words = []
    for i in range(n):
        words.append(rnd.choice(WORDS))
        if rnd.random() < 0.05:
            words.append("\n")
    return " ".join(words)


def gen_number(rnd):
    r = rnd.random()
    if r < 0.6:
        return rnd.randint(0, 1000)
    if r < 0.8:
        return rnd.randint(-10**12, 10**12)
    if r < 0.95:
        return round(rnd.uniform(-1000, 1000), rnd.randint(1, 6))
    return float("%.3e" % rnd.uniform(1e-9, 1e20))


def gen_value(rnd, depth, budget):
    r = rnd.random()
    if depth < 4 and budget > 80 and r < 0.22:
        return gen_object(rnd, depth + 1, rnd.randint(40, budget))
    if depth < 4 and budget > 60 and r < 0.35:
        n = rnd.randint(0, 8)
        if rnd.random() < 0.5:
            return [gen_string(rnd, budget // max(1, n)) for _ in range(n)]
        return [gen_value(rnd, depth + 1, budget // max(1, n)) for _ in range(n)]
    if r < 0.75:
        return gen_string(rnd, budget)
    if r < 0.88:
        return gen_number(rnd)
    if r < 0.97:
        return rnd.random() < 0.5
    return None


def gen_object(rnd, depth, target):
    """An object whose compact JSON is roughly `target` bytes."""
    obj = {}
    size = 2
    while size < target or not obj:
        key = rnd.choice(KEYS)
        if key in obj:
            key = key + "_" + str(len(obj))
        val = gen_value(rnd, depth, max(10, target - size))
        obj[key] = val
        size += len(key) + 4 + len(json.dumps(val, ensure_ascii=False, separators=(",", ":")))
        if len(obj) > 60:
            break
    return obj


def gen_size(rnd):
    r = rnd.random()
    if r < 0.65:
        return int(rnd.uniform(20, 300))
    if r < 0.93:
        return int(rnd.uniform(300, 2000))
    return int(rnd.uniform(2000, 6000))


def dumps(obj, rnd):
    """Clean JSON in one of the spellings models use (compact, spaced, ASCII-escaped)."""
    r = rnd.random()
    if r < 0.55:
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    if r < 0.9:
        return json.dumps(obj, ensure_ascii=False)
    return json.dumps(obj)


# ---------------------------------------------------------------------------------------------
# Broken spellings


def ser(v, quote='"', pylit=False, trailing=0.0, rnd=None):
    """Serializes like JSON, but with a chosen quote, Python literals, and trailing commas."""
    if v is True:
        return "True" if pylit else "true"
    if v is False:
        return "False" if pylit else "false"
    if v is None:
        return "None" if pylit else "null"
    if isinstance(v, (int, float)):
        return json.dumps(v)
    if isinstance(v, str):
        s = json.dumps(v, ensure_ascii=False)
        if quote == "'":
            body = s[1:-1].replace('\\"', '"').replace("'", "\\'")
            return "'" + body + "'"
        return s
    tc = "," if rnd is not None and rnd.random() < trailing else ""
    if isinstance(v, list):
        return "[" + ", ".join(ser(x, quote, pylit, trailing, rnd) for x in v) + tc + "]"
    items = ", ".join(
        ser(k, quote, pylit, trailing, rnd) + ": " + ser(x, quote, pylit, trailing, rnd)
        for k, x in v.items()
    )
    return "{" + items + tc + "}"


def broken(obj, rnd):
    kind = rnd.choice(["trailing_comma", "single_quotes", "python_literals", "cut_off", "mixed"])
    if kind == "trailing_comma":
        return kind, ser(obj, trailing=0.7, rnd=rnd)
    if kind == "single_quotes":
        return kind, ser(obj, quote="'")
    if kind == "python_literals":
        obj = dict(obj)
        obj["flag"] = rnd.choice([True, False, None])
        return kind, ser(obj, pylit=True)
    if kind == "cut_off":
        text = dumps(obj, rnd)
        cut = max(2, int(len(text) * rnd.uniform(0.3, 0.95)))
        return kind, text[:cut]
    # mixed: Python repr-like (single quotes, True/None) with a trailing comma
    return kind, ser(obj, quote="'", pylit=True, trailing=0.5, rnd=rnd)


def wrapped(obj, rnd):
    text = dumps(obj, rnd)
    r = rnd.random()
    if r < 0.4:
        return "prose", rnd.choice(PROSE_BEFORE) + " " + text + (" " + rnd.choice(PROSE_AFTER)).rstrip()
    if r < 0.8:
        return "fence", "```json " + text + " ```"
    return "prose_fence", rnd.choice(PROSE_BEFORE) + " ```json" + " " + text + " ``` " + rnd.choice(PROSE_AFTER)


def arg_line(rnd):
    """One line of the args corpus and its kind."""
    r = rnd.random()
    obj = gen_object(rnd, 0, gen_size(rnd))
    if r < 0.40:
        return "clean", dumps(obj, rnd)
    if r < 0.65:
        layers = rnd.choices([1, 2, 3], weights=[6, 3, 1])[0]
        text = dumps(obj, rnd)
        for _ in range(layers):
            text = json.dumps(text, ensure_ascii=rnd.random() < 0.2)
        return "encoded%d" % layers, text
    if r < 0.75:
        parts = [dumps(obj, rnd)]
        for _ in range(rnd.randint(1, 2)):
            parts.append(dumps(gen_object(rnd, 0, gen_size(rnd) // 2), rnd))
        sep = rnd.choice(["", " ", ""])
        return "concatenated", sep.join(parts)
    if r < 0.90:
        kind, text = broken(obj, rnd)
        return "broken_" + kind, text
    kind, text = wrapped(obj, rnd)
    return "wrapped_" + kind, text


# ---------------------------------------------------------------------------------------------
# Model replies (for `toolmend calls`)


def reply(rnd):
    tool = rnd.choice(TOOLS)
    args = gen_object(rnd, 1, gen_size(rnd))
    compact = json.dumps(args, ensure_ascii=False, separators=(",", ":"))
    spaced = json.dumps(args, ensure_ascii=False)
    think = "<think>\nThe user wants %s. I should call %s.\n</think>\n" % (rnd.choice(WORDS), tool)
    r = rnd.random()
    if r < 0.2:
        body = json.dumps({"name": tool, "arguments": args}, ensure_ascii=False)
        pre = think if rnd.random() < 0.3 else ""
        return "hermes", pre + "<tool_call>\n" + body + "\n</tool_call>"
    if r < 0.35:
        calls = [{"name": tool, "arguments": args}]
        if rnd.random() < 0.3:
            calls.append({"name": rnd.choice(TOOLS), "arguments": gen_object(rnd, 1, 60)})
        return "mistral", "[TOOL_CALLS]" + json.dumps(calls, ensure_ascii=False)
    if r < 0.45:
        return "llama", "<|python_tag|>" + json.dumps({"name": tool, "parameters": args}, ensure_ascii=False)
    if r < 0.6:
        env = {"tool": tool, "parameters": args, "terminate": rnd.random() < 0.2}
        return "envelope", json.dumps(env, ensure_ascii=False)
    if r < 0.7:
        return "openai_encoded", json.dumps({"name": tool, "arguments": compact}, ensure_ascii=False)
    if r < 0.8:
        env = {"tool": tool, "parameters": args, "terminate": False}
        return "fenced", "%s\n\n```json\n%s\n```\n\n%s" % (
            rnd.choice(PROSE_BEFORE), json.dumps(env, indent=2, ensure_ascii=False), rnd.choice(PROSE_AFTER))
    if r < 0.85:
        a = json.dumps({"name": tool, "arguments": args}, ensure_ascii=False)
        b = json.dumps({"name": rnd.choice(TOOLS), "arguments": gen_object(rnd, 1, 80)}, ensure_ascii=False)
        return "hermes_multi", "<tool_call>\n%s\n</tool_call>\n<tool_call>\n%s\n</tool_call>" % (a, b)
    if r < 0.9:
        # a broken call: glued objects and a trailing comma inside a Hermes block
        bad = "{\"name\": \"%s\", \"arguments\": %s,}" % (tool, spaced)
        return "hermes_broken", "<tool_call>\n" + bad + "\n</tool_call>"
    n = rnd.randint(5, 80)
    text = " ".join(rnd.choice(WORDS) for _ in range(n))
    return "prose", text[0].upper() + text[1:] + "."


# ---------------------------------------------------------------------------------------------
# Adversarial single-line inputs for the scaling series


def adv_unclosed_commas(n):
    # an unclosed string followed by many commas
    return '{"a": "x' + "," * n


def adv_unclosed_comma_keys(n):
    # an unclosed string, then what looks like more members (quote-hunting bait)
    unit = ', "k": 1'
    return '{"a": "x' + unit * (n // len(unit))


def adv_deep_blocks(n):
    # many 900-deep nests (below the default --max-nesting 1000)
    block = '{"a":' + "[" * 898 + "1" + "]" * 898 + "}"
    count = max(1, n // (len(block) + 1))
    return '{"d":[' + ",".join([block] * count) + "]}"


def adv_deep_one(n):
    # one nest as deep as the size allows (needs a raised --max-nesting), closed
    d = n // 2
    return '{"a":' + "[" * d + "]" * d + "}"


def adv_deep_unclosed(n):
    # one nest, never closed (repair must close every level)
    return '{"a":' + "[" * n


def adv_concat(n):
    # thousands of small objects written one after another on one line
    unit = '{"a":1,"b":"xy"}'
    return unit * max(1, n // len(unit))


def adv_backslashes_even(n):
    # a long run of backslashes inside a string (an even run: valid JSON)
    m = n - (n % 2)
    return '{"a":"' + "\\" * m + '"}'


def adv_backslashes_odd(n):
    # an odd run: the last backslash escapes the closing quote, so the string never ends
    m = n - (n % 2) + 1
    return '{"a":"' + "\\" * m + '"}'


def adv_encoded_backslashes(n):
    # a JSON string (one layer of encoding) whose object holds long backslash runs
    inner = '{"a":"' + "\\" * (n // 4 * 2) + '"}'
    return json.dumps(inner)


# name -> (function, extra toolmend args)
ADVERSARIAL = {
    "unclosed-string-commas": (adv_unclosed_commas, []),
    "unclosed-string-members": (adv_unclosed_comma_keys, []),
    "deep-nesting-900-blocks": (adv_deep_blocks, []),
    "deep-nesting-one": (adv_deep_one, ["--max-nesting", "1000000000"]),
    "deep-nesting-unclosed": (adv_deep_unclosed, ["--max-nesting", "1000000000"]),
    "concatenated-objects": (adv_concat, []),
    "concatenated-objects-all": (adv_concat, ["--concat", "all"]),
    "backslashes-even": (adv_backslashes_even, []),
    "backslashes-odd": (adv_backslashes_odd, []),
    "backslashes-encoded": (adv_encoded_backslashes, []),
}
SCALES = [("1x", 1), ("10x", 10), ("100x", 100)]


# ---------------------------------------------------------------------------------------------
# Adversarial replies for `toolmend calls` (issue 14): each format's markers repeated (the
# closer never comes), markers whose JSON body never closes, and deep nesting.


def rep(unit, n):
    """`unit` repeated to about n bytes."""
    return unit * max(1, n // len(unit.encode()))


# name -> the unit repeated to the size
CALLS_MARKERS = {
    "harmony": '<|channel|>commentary to=functions.f<|message|>{"a":',
    "harmony-analysis": "<|channel|>analysis<|message|>x<|end|>",
    "deepseek_dsml": "<｜DSML｜function_calls>",
    "deepseek_dsml-invoke": '<｜DSML｜function_calls><｜DSML｜invoke name="f">',
    "kimi_k2": "<|tool_call_begin|>",
    "kimi_k2-args": "<|tool_call_begin|>f<|tool_call_argument_begin|>{",
    "step3": "<｜tool_call_begin｜>",
    "deepseek": "<｜tool▁call▁begin｜>",
    "deepseek-json": "<｜tool▁call▁begin｜>[{",
    "minimax_m2": "<minimax:tool_call>",
    "seed_oss": "<seed:tool_call>",
    "longcat": "<longcat_tool_call>",
    "hermes": "<tool_call>",
    "hermes-json": "<tool_call>{",
    "hermes-function": "<tool_call><function=f>",
    "lfm2": "<|tool_call_start|>",
    "llama4": "<|python_start|>",
    "granite": "<|tool_call|>",
    "mistral": "[TOOL_CALLS]",
    "mistral-args": "[TOOL_CALLS]f[ARGS]{",
    "command_r": "<|START_ACTION|>",
    "command_r-json": "<|START_ACTION|>[",
    "apertus": "<|tools_prefix|>",
    "internlm2": "<|action_start|><|plugin|>",
    "gigachat3": "<|message_sep|>function call<|role_sep|>",
    "nemotron": "<TOOLCALL>",
    "nemotron-json": "<TOOLCALL>[",
    "jamba": "<tool_calls>",
    "olmo3": "<function_calls>",
    "granite_20b": "<function_call>",
    "functionary": "<function=a>",
    "functionary_v32": ">>>f\n{",
    "phi4": "functools[",
    "llama3": "<|python_tag|>",
    "functiongemma": "<start_function_call>",
    "gemma4": "<|tool_call>",
    "reasoning": "<think>a</think>b",
    "reasoning-open": "<think>",
    "json-calls": '{"name":"f","arguments":{}} ',
}

CALLS_ADVERSARIAL = {"marker-" + k: (lambda u: lambda n: rep(u, n))(v) for k, v in CALLS_MARKERS.items()}
CALLS_ADVERSARIAL.update({
    "qwen3-coder-parameters": lambda n: "<tool_call><function=f>" + rep("<parameter=a>", n) + "</function></tool_call>",
    "pythonic-list": lambda n: "[" + rep("f(a=1), ", n) + "]",
    "deep-arrays-closed": lambda n: "[" * (n // 2) + "]" * (n // 2),
    "deep-arrays-unclosed": lambda n: "[" * n,
    "deep-objects-closed": lambda n: "x " + rep('{"a":', n // 2) + "1" + "}" * (n // 10),
    "deep-objects-unclosed": lambda n: rep('{"a":', n),
    "deep-arrays-around-a-call": lambda n: "x " + "[" * (n // 2) + '{"name":"f","arguments":{}}' + "]" * (n // 2),
})


def write_calls_adversarial(out, base, force=False):
    """The replies of the calls scaling series, adv-calls-NAME-SCALE.txt (one reply per file)."""
    stamp = os.path.join(out, "calls-adversarial.json")
    want = {"base": base, "series": sorted(CALLS_ADVERSARIAL), "version": 1}
    names = ["adv-calls-%s-%s.txt" % (n, label) for n in CALLS_ADVERSARIAL for label, _ in SCALES]
    if not force and os.path.exists(stamp) and all(os.path.exists(os.path.join(out, n)) for n in names):
        with open(stamp) as f:
            if json.load(f) == want:
                return
    for name, fn in CALLS_ADVERSARIAL.items():
        for label, k in SCALES:
            with open(os.path.join(out, "adv-calls-%s-%s.txt" % (name, label)), "w", encoding="utf-8",
                      newline="\n") as f:
                f.write(fn(base * k))
    with open(stamp, "w") as f:
        json.dump(want, f)


# The streaming series (issue 17): ~1 MB replies, one format family each, and single calls
# with 1 MB arguments. Fed 1 and 4 bytes at a time by examples/stream_feed.rs.
STREAM_BYTES = 1_000_000


def _fill(unit, between="\n"):
    """Units (called with a counter) joined by `between` until STREAM_BYTES."""
    parts, n, size = [], 0, 0
    while size < STREAM_BYTES:
        u = unit(n)
        parts.append(u)
        size += len(u.encode("utf-8")) + len(between)
        n += 1
    return between.join(parts)


def _stream_args(rnd):
    return gen_object(rnd, 1, rnd.randint(100, 1500))


def _stream_replies():
    rnd = random.Random(SEED + 17)
    d = lambda o: json.dumps(o, ensure_ascii=False)
    prose = lambda: " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(3, 30)))
    big_keys = {"k%d" % i: rnd.choice([i, "v%d" % i, True, None, [i, i + 1], {"x": i}])
                for i in range(60_000)}
    return {
        "hermes": lambda: _fill(lambda i: "%s\n<tool_call>\n%s\n</tool_call>" % (
            prose(), d({"name": rnd.choice(TOOLS), "arguments": _stream_args(rnd)}))),
        "mistral": lambda: "[TOOL_CALLS]" + d(_fill_list(lambda i: {
            "name": rnd.choice(TOOLS), "arguments": _stream_args(rnd)})),
        "kimi_k2": lambda: "<|tool_calls_section_begin|>" + _fill(
            lambda i: "<|tool_call_begin|>functions.%s:%d<|tool_call_argument_begin|>%s<|tool_call_end|>" % (
                rnd.choice(TOOLS), i, d(_stream_args(rnd))), "") + "<|tool_calls_section_end|>",
        "functionary": lambda: _fill(lambda i: "<function=%s>%s</function>" % (
            rnd.choice(TOOLS), d(_stream_args(rnd))), ""),
        "encoded": lambda: _fill(lambda i: d({"name": rnd.choice(TOOLS), "arguments": json.dumps(
            _stream_args(rnd), ensure_ascii=False, separators=(",", ":"))}), " "),
        "reasoning-prose": lambda: "<think>\n" + _fill(lambda i: prose(), " ")[: STREAM_BYTES // 2] + \
            "\n</think>\n" + _fill(lambda i: prose(), " ")[: STREAM_BYTES // 2],
        "one-call-many-keys": lambda: "<tool_call>\n" + d({"name": "f", "arguments": big_keys}) + "\n</tool_call>",
        "one-call-long-string": lambda: "<tool_call>\n" + d(
            {"name": "f", "arguments": {"text": "word " * (STREAM_BYTES // 5)}}) + "\n</tool_call>",
        # JSON objects that are no call, a million of them (issue 25: the stream kept a slot
        # per object, about 120 bytes a byte of reply).
        "many-objects": lambda: "{}" * (STREAM_BYTES // 2),
        "one-call-encoded": lambda: "<tool_call>\n" + d(
            {"name": "f", "arguments": json.dumps(big_keys, separators=(",", ":"))}) + "\n</tool_call>",
    }


def _fill_list(item):
    items, size = [], 0
    while size < STREAM_BYTES:
        it = item(len(items))
        items.append(it)
        size += len(json.dumps(it, ensure_ascii=False)) + 2
    return items


STREAM = sorted(_stream_replies())


def write_stream(out, force=False):
    """The replies of the streaming series, stream-NAME.txt (one reply per file)."""
    stamp = os.path.join(out, "stream.json")
    want = {"bytes": STREAM_BYTES, "series": STREAM, "version": 2}
    names = ["stream-%s.txt" % n for n in STREAM]
    if not force and os.path.exists(stamp) and all(os.path.exists(os.path.join(out, n)) for n in names):
        with open(stamp) as f:
            if json.load(f) == want:
                return
    for name, fn in _stream_replies().items():
        with open(os.path.join(out, "stream-%s.txt" % name), "w", encoding="utf-8", newline="\n") as f:
            f.write(fn())
    with open(stamp, "w") as f:
        json.dump(want, f)


def write_big(path, target):
    """One ~target-byte line: {"items":[{...},{...},...],"n":N} built from a fixed pool."""
    rnd = random.Random(SEED + 7)
    pool = [json.dumps(gen_object(rnd, 1, rnd.randint(200, 3000)), ensure_ascii=False,
                       separators=(",", ":")) for _ in range(256)]
    written = 0
    count = 0
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write('{"items":[')
        chunk = []
        while written < target:
            item = pool[rnd.randrange(len(pool))]
            if count:
                chunk.append(",")
            chunk.append(item)
            written += len(item) + 1
            count += 1
            if len(chunk) > 2000:
                f.write("".join(chunk))
                chunk = []
        f.write("".join(chunk))
        f.write('],"n":%d}\n' % count)
    return count


FAMILIES = ["clean", "encoded", "concatenated", "broken", "wrapped"]


def family(kind):
    for f in FAMILIES:
        if kind.startswith(f):
            return f
    raise ValueError(kind)


def write_kinds(out, seed, n, force=False):
    """The first n lines of the args stream again, split by kind into kinds-<family>.txt."""
    names = [os.path.join(out, "kinds-%s.txt" % f) for f in FAMILIES]
    stamp = os.path.join(out, "kinds.json")
    want = {"seed": seed, "lines": n, "version": 1}
    if not force and os.path.exists(stamp) and all(os.path.exists(x) for x in names):
        with open(stamp) as f:
            if json.load(f) == want:
                return
    rnd = random.Random(seed)
    handles = {f: open(os.path.join(out, "kinds-%s.txt" % f), "w", encoding="utf-8", newline="\n")
               for f in FAMILIES}
    for _ in range(n):
        kind, text = arg_line(rnd)
        handles[family(kind)].write(text + "\n")
    for h in handles.values():
        h.close()
    with open(stamp, "w") as f:
        json.dump(want, f)


# The lines series: what each line holds, and how many lines.
LINES = {"empty": b"\n", "crlf": b"\r\n", "tiny": b'{"a":1}\n'}
LINE_COUNTS = {"1m": 1_000_000, "16m": 16_000_000}


def write_lines(out, force=False):
    """lines-<series>-<count>.txt for the memory table (cached: the content never changes)."""
    for name, line in LINES.items():
        for label, n in LINE_COUNTS.items():
            path = os.path.join(out, "lines-%s-%s.txt" % (name, label))
            if force or not os.path.exists(path) or os.path.getsize(path) != n * len(line):
                block = line * 100_000
                with open(path, "wb") as f:
                    for _ in range(n // 100_000):
                        f.write(block)


SIZE_NAMES = {"10k": 10_000, "100k": 100_000, "1m": 1_000_000}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    p.add_argument("--out", default=os.path.join(here, "work", "corpus"))
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument("--sizes", default="10k,100k,1m")
    p.add_argument("--replies", type=int, default=10_000)
    p.add_argument("--no-big", action="store_true")
    p.add_argument("--big-bytes", type=int, default=200 * 1000 * 1000)
    p.add_argument("--adv-base", type=int, default=1_000_000, help="bytes of a 1x adversarial input")
    p.add_argument("--calls-adv-base", type=int, default=100_000,
                   help="bytes of a 1x adversarial reply for `toolmend calls`")
    p.add_argument("--force", action="store_true", help="regenerate files that already exist")
    a = p.parse_args()

    os.makedirs(a.out, exist_ok=True)
    write_calls_adversarial(a.out, a.calls_adv_base, a.force)
    write_stream(a.out, a.force)
    manifest_path = os.path.join(a.out, "manifest.json")
    want = {"seed": a.seed, "sizes": a.sizes, "replies": a.replies, "big": not a.no_big,
            "big_bytes": a.big_bytes, "adv_base": a.adv_base, "version": 3}
    write_kinds(a.out, a.seed, 100_000, a.force)
    write_lines(a.out, a.force)
    if not a.force and os.path.exists(manifest_path):
        with open(manifest_path) as f:
            old = json.load(f)
        if old.get("params") == want and all(os.path.exists(os.path.join(a.out, n)) for n in old["files"]):
            print("corpus up to date in", a.out)
            return

    files = {}
    sizes = sorted((SIZE_NAMES[s] for s in a.sizes.split(",") if s), reverse=False)
    names = {v: k for k, v in SIZE_NAMES.items()}
    rnd = random.Random(a.seed)
    handles = {n: open(os.path.join(a.out, "args-%s.txt" % names[n]), "w", encoding="utf-8", newline="\n")
               for n in sizes}
    counts = {n: {} for n in sizes}
    total = max(sizes)
    for i in range(total):
        kind, text = arg_line(rnd)
        assert "\n" not in text and "\r" not in text
        line = text + "\n"
        for n, h in handles.items():
            if i < n:
                h.write(line)
                counts[n][kind] = counts[n].get(kind, 0) + 1
        if i and i % 100_000 == 0:
            print("  args: %d lines" % i, file=sys.stderr)
    for n, h in handles.items():
        h.close()
        name = "args-%s.txt" % names[n]
        files[name] = {"lines": n, "bytes": os.path.getsize(os.path.join(a.out, name)),
                       "kinds": dict(sorted(counts[n].items()))}

    rnd = random.Random(a.seed + 1)
    kinds = {}
    with open(os.path.join(a.out, "replies.jsonl"), "w", encoding="utf-8", newline="\n") as f:
        for _ in range(a.replies):
            kind, text = reply(rnd)
            kinds[kind] = kinds.get(kind, 0) + 1
            f.write(json.dumps(text, ensure_ascii=False) + "\n")
    files["replies.jsonl"] = {"lines": a.replies, "bytes": os.path.getsize(os.path.join(a.out, "replies.jsonl")),
                              "kinds": dict(sorted(kinds.items()))}

    if not a.no_big:
        path = os.path.join(a.out, "big-200mb.txt")
        n = write_big(path, a.big_bytes)
        files["big-200mb.txt"] = {"lines": 1, "bytes": os.path.getsize(path), "items": n}

    for name, (fn, _extra) in ADVERSARIAL.items():
        for label, k in SCALES:
            fname = "adv-%s-%s.txt" % (name, label)
            text = fn(a.adv_base * k)
            with open(os.path.join(a.out, fname), "w", encoding="utf-8", newline="\n") as f:
                f.write(text + "\n")
            files[fname] = {"lines": 1, "bytes": len(text.encode()) + 1}

    with open(manifest_path, "w") as f:
        json.dump({"params": want, "files": files}, f, indent=1)
    print("corpus written to", a.out)


if __name__ == "__main__":
    main()
