"""The in-process API: values, records, errors, and the same results as the CLI."""

import gc
import json
import os
import subprocess
import sys
import threading
import time

import pytest

import toolmend


def test_mend_args_returns_python_objects():
    assert toolmend.mend_args('"{\\"city\\": \\"Oslo\\",}"') == {"city": "Oslo"}
    assert toolmend.mend_args("```json\n{'path': 'a.txt', 'force': True,}\n```") == {
        "path": "a.txt",
        "force": True,
    }
    # Big integers keep every digit; key order is kept.
    value = toolmend.mend_args('{"z": 123456789012345678901234567890, "a": 1}')
    assert value == {"z": 123456789012345678901234567890, "a": 1}
    assert list(value) == ["z", "a"]


def test_options():
    assert toolmend.mend_args('{"a":1}{"b":2}', concat="all") == [{"a": 1}, {"b": 2}]
    with pytest.raises(toolmend.Error) as e:
        toolmend.mend_args('{"a":1}{"b":2}', concat="error")
    assert e.value.code == "concatenated"
    with pytest.raises(toolmend.Error) as e:
        toolmend.mend_args("{'a': 1}", strict=True)
    assert e.value.code == "invalid_json"
    assert e.value.offset == 1
    with pytest.raises(toolmend.Error) as e:
        toolmend.mend_args("[" * 50 + "]" * 50, max_nesting=10)
    assert e.value.code == "too_deep"
    with pytest.raises(ValueError):
        toolmend.mend_args("{}", concat="sometimes")
    # Tool arguments are about to be run: cut-off ones are refused unless asked to heal
    # (issue 25); repair() heals as json_repair does, and a record shows the repair.
    for cut in ('{"target": "prod", "dry_run": fal', '{"cmd": "rm -rf build/x'):
        with pytest.raises(toolmend.Error) as e:
            toolmend.mend_args(cut)
        assert e.value.code == "truncated"
        assert "--" not in str(e.value)
        with pytest.raises(toolmend.Error) as e:
            toolmend.mend_args(cut, truncated="error")
        assert e.value.code == "truncated"
    cut = '{"cmd": "rm -rf build/x'
    assert toolmend.mend_args(cut, truncated="heal") == {"cmd": "rm -rf build/x"}
    assert toolmend.repair(cut) == {"cmd": "rm -rf build/x"}
    record = toolmend.Mender().mend(cut)
    assert record.ok and "unterminated_string" in [r["kind"] for r in record.repairs]


def test_signatures_show_their_defaults():
    # help() shows each default as written, not `max_bytes=Ellipsis` (issue 25).
    for fn in (toolmend.extract_calls, toolmend.mend_args, toolmend.repair, toolmend.mend_many):
        text = fn.__text_signature__
        assert "..." not in text and "Ellipsis" not in text, text
        assert "max_bytes=67108864" in text, text
    assert "truncated=None" in toolmend.mend_args.__text_signature__


def test_repair_accepts_any_value():
    assert toolmend.repair("[1, 2, 3") == [1, 2, 3]
    assert toolmend.repair("'text'") == "text"
    assert toolmend.repair("None") is None


@pytest.mark.parametrize(
    "bad, code",
    [
        (None, "empty_input"),
        ("", "empty_input"),
        ("   ", "empty_input"),
        (b"\xff\xfe{", "invalid_utf8"),
        (b'{"a": "\xc3"}', "invalid_utf8"),
        ("\ud800", "invalid_utf8"),
        (3, "invalid_input"),
        (["a"], "invalid_input"),
        (object(), "invalid_input"),
        ("[1, 2]", "not_an_object"),
    ],
)
def test_every_bad_input_is_one_error_type(bad, code):
    with pytest.raises(toolmend.Error) as e:
        toolmend.mend_args(bad)
    assert e.value.code == code
    assert e.value.message
    assert isinstance(e.value, ValueError)
    # The text is the message alone, as Node's ToolmendError.message (issue 25: one way).
    assert str(e.value) == e.value.message
    # The Mender gives the same as a record, without raising.
    record = toolmend.Mender().mend(bad)
    assert (record.ok, record.code) == (False, code)
    assert record.value is None and record.json is None


def test_bytes_are_utf8_text():
    assert toolmend.mend_args(b'{"city": "Z\xc3\xbcrich"}') == {"city": "Zürich"}
    with pytest.raises(toolmend.Error) as e:
        toolmend.mend_args(b'{"a": "\xff"}')
    assert (e.value.code, e.value.offset) == ("invalid_utf8", 7)


def test_huge_inputs_are_refused_or_mended_not_crashed():
    big = '{"a": "' + "x" * (65 << 20) + '"}'
    with pytest.raises(toolmend.Error) as e:
        toolmend.mend_args(big)
    assert e.value.code == "too_large"
    # Under a raised limit the same text is mended, linear in its length (this process's CPU
    # time, which other work on a loaded machine does not add to: a quadratic mend of 65 MiB
    # would take hours).
    t = time.process_time()
    assert len(toolmend.mend_args(big, max_bytes=1 << 30)["a"]) == 65 << 20
    assert time.process_time() - t < 30
    deep = "[" * 20_000
    with pytest.raises(toolmend.Error) as e:
        toolmend.repair(deep)
    assert e.value.code == "too_deep"


def test_record_fields():
    record = toolmend.Mender().mend('{"a": 1}{"b": 2}')
    assert record.ok and record.value == {"a": 1}
    assert record.json == '{"a":1}'
    assert record.dropped == [{"b": 2}]
    assert record.repairs == []
    assert record.unwrap() == {"a": 1}
    failed = toolmend.Mender().mend("[1]")
    assert failed.to_dict() == {
        "ok": False,
        "error": {
            "code": "not_an_object",
            "message": "expected a JSON object, found an array",
            "original": "[1]",
        },
    }
    with pytest.raises(toolmend.Error) as e:
        failed.unwrap()
    assert e.value.code == "not_an_object"
    assert "not_an_object" in repr(failed)


def fixture_inputs(root):
    """Every input of the args, repair and fuzz fixtures (whatever their options)."""
    inputs = []
    paths = [p for d in ("args", "repair", "fuzz") for p in sorted((root / "fixtures" / d).glob("*.jsonl"))]
    for path in paths:
        for line in path.read_text().splitlines():
            if line.strip():
                case = json.loads(line)
                if case.get("command", "args") != "calls" and isinstance(case.get("input"), str):
                    inputs.append(case["input"])
    return inputs


def cli_records(args, inputs):
    """`toolmend <args> --records --input jsonl` (the installed command) on the inputs."""
    stdin = "".join(json.dumps({"text": t}) + "\n" for t in inputs)
    out = subprocess.run(
        ["toolmend", *args, "--records", "--input", "jsonl"],
        input=stdin,
        capture_output=True,
        text=True,
        env=dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]),
    ).stdout
    return [json.loads(line) for line in out.splitlines()]


@pytest.mark.parametrize("target, command", [("object", "args"), ("any", "repair")])
def test_mend_many_equals_the_cli(root, target, command):
    inputs = fixture_inputs(root)
    assert len(inputs) > 300
    records = toolmend.mend_many(inputs, target=target)
    expected = cli_records([command], inputs)
    assert len(records) == len(expected) == len(inputs)
    for text, got, want in zip(inputs, records, expected):
        want.pop("line")
        assert got.to_dict() == want, text


def test_mend_many_threads_keep_order():
    inputs = [f'{{"n": {i}, "pad": "{"x" * (i % 300)}",}}' for i in range(20_000)]
    inputs[777] = None
    inputs[5000] = b"\xff"
    one = toolmend.mend_many(inputs, threads=1)
    many = toolmend.mend_many(iter(inputs), threads=4)
    assert [r.to_dict() for r in one] == [r.to_dict() for r in many]
    assert many[10].value["n"] == 10
    assert (many[777].code, many[5000].code) == ("empty_input", "invalid_utf8")
    assert toolmend.mend_many([]) == []


def test_mend_many_releases_the_gil():
    inputs = ['{"k": "' + "v" * 2000 + '", "n": [1, 2, 3],}'] * 20_000
    ticks = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            ticks[0] += 1

    spinner = threading.Thread(target=spin)
    spinner.start()
    try:
        # The spinning thread's pace with the GIL free (this thread asleep)…
        start = ticks[0]
        time.sleep(0.1)
        alone = (ticks[0] - start) / 0.1
        # …and inside mend_many, called until 0.3 s were spent in it (however fast the build).
        during, elapsed = 0, 0.0
        while elapsed < 0.3:
            before = ticks[0]
            t = time.perf_counter()
            toolmend.mend_many(inputs, threads=1)
            elapsed += time.perf_counter() - t
            during += ticks[0] - before
    finally:
        stop.set()
        spinner.join()
    # While the GIL is released the spinning thread keeps its pace (one mending thread, a core
    # each); held, it would get a switch interval (5 ms) at a call's ends at most.
    assert during / elapsed > 0.2 * alone, (during, elapsed, alone)


def mixed_inputs(n):
    """Every kind of input mend_many takes, many batches' worth: str (ASCII, Latin-1, BMP,
    astral), bytes, invalid UTF-8, lone surrogates, None, non-text, too large, repairs,
    concatenated values and failures."""
    kinds = [
        lambda i: f'{{"n": {i}, "pad": "{"x" * (i % 300)}",}}',
        lambda i: f"{{'caf\u00e9': {i}}}",
        lambda i: f'{{"k": "\u4e16\u754c {i}"}}',
        lambda i: f'{{"e": "\U0001f600", "n": {i}}}',
        lambda i: f'{{"b": {i}, }}'.encode(),
        lambda i: b'{"x": "\xc3"}',
        lambda i: '{"s": "\udcff"}',
        lambda i: None,
        lambda i: i,
        lambda i: "[1, 2]",
        lambda i: '{"a": 1}{"b": 2}',
        lambda i: "",
        lambda i: '{"big": "' + "y" * 200 + '"}',
        lambda i: '"{\\"q\\": 1}"',
        lambda i: f'{{"e": "\U0001f600\udc80", "n": {i}}}',
        lambda i: "{'\u00e9': 1, 'x': '\udfff\u00e9'}",
        lambda i: '{"big": "' + "\u00e9\u4e16" * 60 + f'", "n": {i}}}',
        lambda i: '{"big": "' + "\u00e9" * 70 + '"}',
    ]
    return [kinds[i % len(kinds)](i) for i in range(n)]


def fresh(x):
    """A new str equal to x, without the UTF-8 Python keeps once it has made it."""
    if isinstance(x, str):
        return x.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass")
    return x


def test_mend_many_equals_mend_on_every_kind_of_input():
    inputs = mixed_inputs(30_000)
    mender = toolmend.Mender(max_bytes=150)
    runs = [toolmend.mend_many((fresh(x) for x in inputs), threads=t, max_bytes=150) for t in (1, 3)]
    want = [mender.mend(x) for x in inputs]
    # Again, now that every str holds the UTF-8 Python made of it.
    runs.append(toolmend.mend_many(inputs, max_bytes=150))
    for got in runs:
        assert len(got) == len(inputs)
        for x, g, w in zip(inputs, got, want):
            assert (g.ok, g.json, g.code, g.message, g.offset, g.original) == (
                w.ok, w.json, w.code, w.message, w.offset, w.original), x
            assert g.to_dict() == w.to_dict() and repr(g) == repr(w), x
    codes = {r.code for r in want}
    assert {None, "invalid_utf8", "empty_input", "invalid_input", "not_an_object", "too_large"} <= codes


def test_mend_many_records_outlive_their_list():
    # The records of a batch share one buffer: one record kept must keep it whole.
    inputs = mixed_inputs(20_000)
    records = toolmend.mend_many(inputs)
    kept = records[12_345], records[-1], records[0]
    want = [r.to_dict() for r in kept]
    del records
    gc.collect()
    junk = toolmend.mend_many(inputs[::-1])
    assert [r.to_dict() for r in kept] == want
    assert kept[2].value == {"n": 0, "pad": ""} and kept[2].repairs
    assert len(junk) == len(inputs)


def test_mend_many_records_are_not_walked_by_the_collector():
    # They hold no Python references the collector could follow, so it need not track them.
    records = toolmend.mend_many(['{"a": 1,}', "[1]"])
    assert not any(gc.is_tracked(r) for r in records)
    value = records[0].value
    assert value == {"a": 1} and records[0].value is value
    del records
    gc.collect()
    assert value == {"a": 1}


def test_extract_calls():
    reply = (
        "<think>The user wants the weather.</think>Checking.\n"
        '<tool_call>\n{"name": "get_weather", "arguments": "{\\"city\\": \\"Oslo\\"}"}\n</tool_call>'
    )
    found = toolmend.extract_calls(reply)
    assert found["calls"] == [
        {"tool": "get_weather", "parameters": {"city": "Oslo"}, "repairs": [{"kind": "unquote", "layers": 1}]}
    ]
    assert found["text"] == "Checking."
    assert found["reasoning"] == "The user wants the weather."
    assert toolmend.extract_calls("just text")["calls"] == []


def test_a_cut_off_call_is_never_a_call():
    with pytest.raises(toolmend.Error) as e:
        toolmend.extract_calls('<tool_call>{"name": "rm", "arguments": {"path": "/tmp/x", "dry')
    assert e.value.code == "incomplete_call"
    assert e.value.value["calls"] == []
    assert e.value.value["incomplete"][0]["tool"] == "rm"
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "ok", "arguments": "{}"}},
            {"id": "c2", "type": "function",
             "function": {"name": "deploy", "arguments": '{"target": "prod", "dry_run": fal'}},
        ],
    }
    with pytest.raises(toolmend.Error) as e:
        toolmend.extract_calls(message)
    assert e.value.code == "incomplete_call"
    assert [c["tool"] for c in e.value.value["incomplete"]] == ["deploy"]


TOOLS = [
    {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    }
]


def test_tools_check_calls(tmp_path):
    found = toolmend.extract_calls('{"name": "get_weather", "arguments": {"city": "Oslo", "days": 3}}', tools=TOOLS)
    assert found["calls"][0]["parameters"] == {"city": "Oslo", "days": 3}
    with pytest.raises(toolmend.Error) as e:
        toolmend.extract_calls('{"tool": "rm", "parameters": {}}', tools=TOOLS)
    assert e.value.code == "unknown_tool"
    with pytest.raises(toolmend.Error) as e:
        toolmend.extract_calls('{"name": "get_weather", "arguments": {"days": 2}}', tools=TOOLS)
    assert e.value.code == "invalid_parameters"
    assert e.value.violations and e.value.violations[0]["message"]
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(TOOLS))
    extractor = toolmend.CallExtractor(tools=path)
    assert extractor.extract('{"name": "get_weather", "arguments": {"city": "Oslo"}}')["calls"][0]["tool"] == "get_weather"
    with pytest.raises(toolmend.Error) as e:
        toolmend.CallExtractor(tools=tmp_path / "missing.json")
    assert e.value.code == "invalid_input"
    with pytest.raises(ValueError):
        toolmend.extract_calls("x", format="no-such-format")
    assert "hermes" in toolmend.call_formats()


def test_format_names_are_checked_as_the_cli_checks_them():
    reply = '<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'
    # `auto`, which the CLI takes, is the default here too.
    assert toolmend.extract_calls(reply, format="auto") == toolmend.extract_calls(reply)
    assert toolmend.Stream(format="auto") is not None
    with pytest.raises(ValueError) as e:
        toolmend.extract_calls("x", format="hermes2")
    out = subprocess.run(
        ["toolmend", "calls", "--format", "hermes2"], input="x", capture_output=True, text=True,
        env=dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]),
    )
    assert out.returncode == 2
    assert str(e.value) in out.stderr, (str(e.value), out.stderr)


@pytest.mark.parametrize("bad", [None, b"\xff", 7, "\udfff", ""])
def test_extract_calls_bad_input_raises_error(bad):
    with pytest.raises(toolmend.Error) as e:
        toolmend.extract_calls(bad)
    assert e.value.code in {"empty_input", "invalid_utf8", "invalid_input"}


@pytest.mark.parametrize("batch", [None, 3, object(), "{}", b"{}"])
def test_mend_many_of_a_non_iterable_is_the_error(batch):
    for call in (toolmend.mend_many, toolmend.Mender().mend_many):
        with pytest.raises(toolmend.Error) as e:
            call(batch)
        assert e.value.code == "invalid_input" and "iterable" in e.value.message


def test_ctrl_c_stops_a_long_mend_many(tmp_path):
    # In a process of its own: a batch of about 4 s of mending on one thread (measured first,
    # so in any build) gets SIGINT 0.2 s in; the KeyboardInterrupt comes then, not at its end
    # (before the previous fix it came at 3.6 s: at the end).
    script = r"""
import os, signal, threading, time
import toolmend
# One input object many times: its text is borrowed, not copied, and its value is tiny.
text = '{"a":' + ' ' * 200_000 + '1}'
t = time.perf_counter()
toolmend.mend_many([text] * 50, threads=1)
per_input = (time.perf_counter() - t) / 50
n = max(50, int(4.0 / per_input))
threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
t = time.perf_counter()
try:
    toolmend.mend_many([text] * n, threads=1)
    print('finished', time.perf_counter() - t, n * per_input)
except KeyboardInterrupt:
    print('interrupted', time.perf_counter() - t, n * per_input)
"""
    # Run elsewhere than python/: there `import toolmend` would find the sources, not the package.
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    how, took, whole = out.stdout.split()
    assert how == "interrupted", out.stdout
    # Well before the whole batch would have taken, both timed in the same process, so a machine
    # loaded by other work slows both alike (a bound in seconds failed under such load).
    assert float(took) < 0.5 * float(whole), out.stdout


def test_a_lone_surrogate_is_the_librarys_invalid_utf8_cut_as_node_cuts_it():
    long = "\ud800" + "x" * 200
    for record in (toolmend.Mender().mend(long), toolmend.mend_many([long])[0]):
        assert record.code == "invalid_utf8"
        assert record.message == "text holds a lone surrogate, which is not valid Unicode"
        # The first 100 characters, the surrogate shown as U+FFFD, and '…' for the rest.
        assert record.original == "\ufffd" + "x" * 99 + "\u2026"


def test_too_large_says_what_the_cli_says():
    # `toolmend args --records --max-bytes 4` on the same input gives this message.
    for record in (toolmend.Mender(max_bytes=4).mend('{"a": 1}'), toolmend.mend_many(['{"a": 1}'], max_bytes=4)[0]):
        assert record.code == "too_large"
        assert record.message == "input is 8 bytes, more than the limit of 4 bytes"
