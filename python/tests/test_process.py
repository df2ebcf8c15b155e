"""The `toolmend` command from the wheel, and `toolmend.Process` over it."""

import json
import os
import signal
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

import toolmend

BIN_DIR = os.path.dirname(sys.executable)


def test_the_wheel_puts_toolmend_on_path():
    env = dict(os.environ, PATH=BIN_DIR + os.pathsep + os.environ.get("PATH", ""))
    out = subprocess.run(["toolmend", "args"], input="{'a': 1,}\n", capture_output=True, text=True, env=env)
    assert (out.returncode, out.stdout) == (0, '{"a":1}\n')
    path = toolmend.binary_path()
    assert os.path.realpath(path) == os.path.realpath(os.path.join(BIN_DIR, "toolmend"))


def test_process_answers_records():
    with toolmend.Process() as tm:
        record = tm.mend_args('"{\\"city\\": \\"Oslo\\",}"')
        assert record["ok"] and record["value"] == {"city": "Oslo"}
        assert [r["kind"] for r in record["repairs"]] == ["unquote", "trailing_comma"]
        assert tm.mend_args("[1]")["error"]["code"] == "not_an_object"
        found = tm.extract_calls('<tool_call>{"name": "ls", "arguments": "{}"}</tool_call>')
        assert [(c["tool"], c["parameters"]) for c in found["value"]["calls"]] == [("ls", {})]
        message = {"role": "assistant", "content": None,
                   "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1,}"}}]}
        assert tm.extract_calls(message)["value"]["calls"][0]["parameters"] == {"a": 1}
        # A line break inside a value stays one input.
        assert tm.mend_args('{"a":\n1}')["value"] == {"a": 1}


@pytest.mark.parametrize("bad, code", [(None, "empty_input"), (b"\xff", "invalid_utf8"), (3, "invalid_input")])
def test_bad_inputs_do_not_put_answers_out_of_step(bad, code):
    with toolmend.Process() as tm:
        assert tm.mend_args(bad)["error"]["code"] == code
        assert tm.mend_args('{"after": 1}')["value"] == {"after": 1}
        # The child's own errors, too: a record without an id still matches its request.
        assert tm.mend_args("")["error"]["code"] == "empty_input"
        assert tm.mend_args('{"after": 2}')["value"] == {"after": 2}


def test_concurrent_requests_with_a_none_among_them():
    inputs = ['{"n": 0}', '{"n": 1}', None, '{"n": 3}', '{"n": 4}'] * 20
    with toolmend.Process() as tm, ThreadPoolExecutor(5) as pool:
        records = list(pool.map(tm.mend_args, inputs))
    for text, record in zip(inputs, records):
        if text is None:
            assert record["error"]["code"] == "empty_input"
        else:
            assert record["value"] == json.loads(text)


def test_a_dead_child_is_started_again():
    with toolmend.Process() as tm:
        assert tm.mend_args("{}")["ok"]
        os.kill(tm.pids["args"], 9)
        assert tm.mend_args('{"a": 1}')["value"] == {"a": 1}
        assert tm.restarts == 1


def test_a_child_killed_while_a_request_waits_is_replaced_and_the_request_answered():
    with toolmend.Process() as tm:
        assert tm.mend_args("{}")["ok"]
        # Stopped first, so it cannot answer before it dies.
        stuck = tm.pids["args"]
        os.kill(stuck, signal.SIGSTOP)
        threading.Timer(0.2, os.kill, (stuck, signal.SIGKILL)).start()
        assert tm.mend_args('{"x": 1,}')["value"] == {"x": 1}
        assert tm.restarts == 1 and tm.pids["args"] != stuck


def test_a_missing_binary_is_named_plainly(monkeypatch, tmp_path):
    with pytest.raises(toolmend.Error) as e:
        toolmend.Process(binary=str(tmp_path / "nope")).mend_args("{}")
    assert e.value.code == "invalid_input" and "nope" in e.value.message
    # With no binary anywhere, the message says how to get one, not a path in the project.
    import importlib.metadata

    monkeypatch.delenv("TOOLMEND", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: (_ for _ in ()).throw(importlib.metadata.PackageNotFoundError(name)))
    with pytest.raises(toolmend.Error) as e:
        toolmend.binary_path()
    assert "pip install toolmend" in e.value.message
    # It names what was searched.
    assert all(w in e.value.message for w in ["$TOOLMEND", "toolmend package", "PATH"]), e.value.message
    assert os.getcwd() not in e.value.message
