"""A panic on one input (a bug in toolmend) is that input's `toolmend.Error` (or record) with
code `internal_error`, on every call, and the next input is mended as usual. No input is known
to panic: the test build has the library's trigger (feature `panic-trigger`, on in `make
test-python`), input holding `_native._PANIC_TRIGGER` panics where a bug would."""

import json
import os
import subprocess
import sys

import pytest

import toolmend
from toolmend import _native

TRIGGER = getattr(_native, "_PANIC_TRIGGER", None)
pytestmark = pytest.mark.skipif(
    TRIGGER is None, reason="a wheel without the panic trigger (a release build)"
)

def command():
    """The wheel's `toolmend` command (test_cli.py's)."""
    name = "toolmend.exe" if os.name == "nt" else "toolmend"
    return os.path.join(os.path.dirname(sys.executable), name)


MESSAGE = (
    "toolmend failed on this input, a bug in toolmend (please report it with this input): "
    "the test trigger (feature panic-trigger)"
)


def raises_internal_error(call, *args, **kwargs):
    with pytest.raises(toolmend.Error) as caught:
        call(*args, **kwargs)
    assert caught.value.code == "internal_error"
    assert caught.value.message == MESSAGE
    assert str(caught.value) == MESSAGE
    return caught.value


def test_single_calls_raise_internal_error_and_the_next_input_is_mended():
    text = '{"a": "%s"}' % TRIGGER
    raises_internal_error(toolmend.mend_args, text)
    raises_internal_error(toolmend.mend_args, text.encode())
    raises_internal_error(toolmend.mend_args, text, schema={"type": "object"})
    raises_internal_error(toolmend.repair, text)
    assert toolmend.mend_args("{'a': 1,}") == {"a": 1}

    raises_internal_error(toolmend.extract_calls, "<tool_call>%s</tool_call>" % text)
    error = raises_internal_error(
        toolmend.extract_calls, {"role": "assistant", "content": TRIGGER}
    )
    assert error.value is None
    extractor = toolmend.CallExtractor()
    raises_internal_error(
        extractor.extract_response,
        {"choices": [{"message": {"role": "assistant", "content": TRIGGER}}]},
        api="openai",
    )
    found = extractor.extract('<tool_call>{"name": "f", "arguments": {}}</tool_call>')
    assert [c["tool"] for c in found["calls"]] == ["f"]


def test_records_say_internal_error_and_the_mender_goes_on():
    mender = toolmend.Mender()
    record = mender.mend("{'b': '%s'}" % TRIGGER)
    assert (record.ok, record.code, record.message) == (False, "internal_error", MESSAGE)
    assert record.original == "{'b': '%s'}" % TRIGGER
    assert mender.mend("{'a': 1,}").value == {"a": 1}

    inputs = ["{'n': %d}" % i for i in range(20)]
    inputs[7] = TRIGGER
    for threads in (1, 2):
        records = toolmend.mend_many(inputs, threads=threads)
        assert [r.code for r in records].count("internal_error") == 1
        assert records[7].code == "internal_error"
        assert [r.value for r in records if r.ok] == [{"n": i} for i in range(20) if i != 7]


def test_a_stream_that_panics_ends_with_internal_error():
    for feed in ("feed", "feed_reasoning", "feed_chunk", "feed_call"):
        stream = toolmend.Stream()
        assert stream.feed("Hello ")
        if feed == "feed_chunk":
            events = stream.feed_chunk({"choices": [{"delta": {"content": TRIGGER}}]})
        elif feed == "feed_call":
            events = stream.feed_call(0, "id1", "f", TRIGGER)
        else:
            events = getattr(stream, feed)(TRIGGER)
        assert len(events) == 1, (feed, events)
        end = events[0]
        assert (end["event"], end["ok"]) == ("end", False)
        assert end["error"]["code"] == "internal_error"
        assert end["error"]["message"] == MESSAGE
        assert end["error"]["original"] == "Hello "
        # The reply ended there: nothing more, as after a finished one.
        assert stream.feed("more") == []
        assert stream.finish() == []

    events = list(toolmend.stream(["Hello ", TRIGGER, "more"]))
    assert events[-1]["event"] == "end"
    assert events[-1]["error"]["code"] == "internal_error"


def test_the_cli_gives_internal_error_records_and_events():
    lines = "{'a': 1}\n%s\n[2\n" % TRIGGER
    done = subprocess.run(
        [command(), "repair", "--records"], input=lines.encode(), capture_output=True, timeout=60
    )
    assert done.returncode == 1, done
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["ok"] for r in records] == [True, False, True]
    assert records[1]["error"]["code"] == "internal_error"
    assert records[1]["error"]["message"] == MESSAGE
    assert records[1]["line"] == 2
    assert records[2]["value"] == [2]

    reply = "Hello <tool_call>%s" % TRIGGER
    done = subprocess.run(
        [command(), "calls", "--stream"], input=reply.encode(), capture_output=True, timeout=60
    )
    assert done.returncode == 1, done
    events = [json.loads(line) for line in done.stdout.splitlines()]
    end = events[-1]
    assert (end["event"], end["ok"]) == ("end", False)
    assert end["error"]["code"] == "internal_error"
    assert end["error"]["message"] == MESSAGE
