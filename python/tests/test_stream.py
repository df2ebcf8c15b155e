"""toolmend.Stream and toolmend.stream: events as a reply arrives, agreeing with extract_calls."""

import copy
import json
import random
import re
from types import SimpleNamespace

import pytest

import toolmend

REPLIES = [
    'Checking.<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo", "days": 12}}</tool_call>',
    '<think>Need the time.</think>[TOOL_CALLS][{"name": "get_time", "arguments": {"tz": "Europe/Oslo"}}, '
    '{"name": "f", "arguments": {"flag": true, "list": [1, "a"]}}]',
    '<|tool_calls_section_begin|><|tool_call_begin|>functions.search:0<|tool_call_argument_begin|>'
    '{"query": "ünïcode ✓"}<|tool_call_end|><|tool_calls_section_end|>',
    'Sure: {"name": "save", "arguments": "{\\"path\\": \\"a.txt\\"}"} done.',
    "Just prose, no call.",
    "A plan opened by the template.</think>Done, no call.",
    '<tool_call>{"name": "rm", "arguments": {"path": "/tmp/x", "dry',
]


def run(chunks, **options):
    s = toolmend.Stream(**options)
    events = []
    for chunk in chunks:
        events += s.feed(chunk)
    events += s.finish()
    assert s.finish() == []
    return events


def expected(reply, **options):
    """What extract_calls gives: (calls, text, reasoning, error code or None)."""
    try:
        found = toolmend.extract_calls(reply, **options)
        return found["calls"], found["text"], found["reasoning"], None
    except toolmend.Error as e:
        value = e.value or {}
        return value.get("calls", []), value.get("text"), value.get("reasoning"), e.code


def apply(parameters, event):
    """Adds an `arguments` event to the parameters its call's events built so far
    (docs/streaming.md): `append` to the string at `path`, `members` to the object there,
    `items` to the array there."""
    segs = [s.replace("~1", "/").replace("~0", "~") for s in event["path"].split("/")[1:]]
    target = parameters
    if "append" in event:
        for seg in segs[:-1]:
            target = target[int(seg) if isinstance(target, list) else seg]
        last = int(segs[-1]) if isinstance(target, list) else segs[-1]
        target[last] += event["append"]
        return
    for seg in segs:
        target = target[int(seg) if isinstance(target, list) else seg]
    if "members" in event:
        target.update(event["members"])
    else:
        target.extend(event["items"])


def rebuilt(events):
    """Each `arguments` event as the parameters so far it makes: (index, parameters, open)."""
    parameters, out = {}, []
    for e in events:
        if e["event"] == "arguments":
            apply(parameters.setdefault(e["index"], {}), e)
            out.append((e["index"], copy.deepcopy(parameters[e["index"]]), e["open"]))
    return out


def check(reply, events):
    calls, text, reasoning, code = expected(reply)
    assert [e["call"] for e in events if e["event"] == "call_end"] == calls
    # The arguments events rebuild the parameters of each call not revised.
    progress = rebuilt(events)
    revised = {e["index"] for e in events if e["event"] == "revised"}
    for end in (e for e in events if e["event"] == "call_end"):
        last = [(params, open_) for index, params, open_ in progress if index == end["index"]]
        if last and last[-1][1] is None and end["index"] not in revised:
            assert last[-1][0] == end["call"]["parameters"]
    # text and reasoning as a consumer shows them: deltas add, `corrected` replaces its field.
    shown = {"text": "", "reasoning": ""}
    for e in events:
        if e["event"] in shown:
            shown[e["event"]] += e["delta"]
        elif e["event"] == "corrected":
            shown[e["field"]] = e["value"]
    assert shown == {"text": text or "", "reasoning": reasoning or ""}
    end = events[-1]
    assert end["event"] == "end"
    assert end["ok"] == (code is None)
    if code:
        assert end["error"]["code"] == code
    # Every announced call ends exactly once.
    started = [e["index"] for e in events if e["event"] == "call_start"]
    ended = [e["index"] for e in events if e["event"] in ("call_end", "incomplete", "invalid", "retracted")]
    assert sorted(ended) == started


@pytest.mark.parametrize("reply", REPLIES)
def test_agrees_with_extract_calls_however_it_is_split(reply):
    check(reply, run([reply]))
    check(reply, run(list(reply)))
    for at in range(len(reply) + 1):
        check(reply, run([reply[:at], reply[at:]]))
    rnd = random.Random(17)
    for _ in range(20):
        cuts = sorted(rnd.sample(range(len(reply) + 1), min(5, len(reply))))
        parts = [reply[a:b] for a, b in zip([0] + cuts, cuts + [len(reply)])]
        check(reply, run(parts))


def test_text_and_reasoning_come_as_they_arrive():
    s = toolmend.Stream()
    assert s.feed("<think>Need the ") == [{"event": "reasoning", "delta": "Need the"}]
    assert s.feed("time.</think>It is ") == [
        {"event": "reasoning", "delta": " time."},
        {"event": "text", "delta": "It is"},
    ]
    # A close with no open: what was shown as text was reasoning.
    s = toolmend.Stream()
    assert s.feed("A plan. ") == [{"event": "text", "delta": "A plan."}]
    assert s.feed("</think>Done.") == [
        {"event": "corrected", "field": "text", "value": ""},
        {"event": "reasoning", "delta": "A plan."},
        {"event": "text", "delta": "Done."},
    ]


def test_progress_comes_before_the_end_and_only_grows():
    # An `arguments` event due at every byte: this call is short (the default waits 128).
    events = run(['<tool_call>{"name": "get_weather", "arguments": {"city": "Os', 'lo", "unit": "c', '"}}</tool_call>'], arguments_step=1)
    kinds = [e["event"] for e in events]
    assert kinds[0] == "call_start" and events[0]["tool"] == "get_weather"
    arguments = [e for e in events if e["event"] == "arguments"]
    # What each adds: the first, the parameters so far; then the rest of the city, and the unit.
    assert arguments[0] == {"event": "arguments", "index": 0, "path": "", "members": {"city": "Os"}, "open": "/city"}
    assert arguments[1] == {"event": "arguments", "index": 0, "path": "/city", "append": "lo", "open": ""}
    shown = rebuilt(events)
    assert shown[-1] == (0, {"city": "Oslo", "unit": "c"}, None)
    assert kinds.index("arguments") < kinds.index("call_end")


def test_a_key_written_again_is_revised():
    # /a is shown closed, then the model writes "a" again: `revised` names it before
    # call_end, whose parameters keep the last value (as extract_calls does).
    reply = '<tool_call>{"name": "set", "arguments": {"a": 1, "b": 2, "a": 3}}</tool_call>'
    events = run(['<tool_call>{"name": "set", "arguments": {"a": 1, ', '"b": 2, "a"', ": 3}}</tool_call>"], arguments_step=1)
    check(reply, events)
    kinds = [e["event"] for e in events]
    assert (0, {"a": 1}, "") in rebuilt(events)
    revised = [e for e in events if e["event"] == "revised"]
    assert len(revised) == 1, events
    assert revised[0]["index"] == 0 and revised[0]["path"] == "/a" and "again" in revised[0]["reason"]
    assert kinds.index("revised") < kinds.index("call_end")
    assert "arguments" not in kinds[kinds.index("revised"):]
    call = next(e["call"] for e in events if e["event"] == "call_end")
    assert call["parameters"] == {"a": 3, "b": 2}
    assert [r["kind"] for r in call["repairs"]] == ["duplicate_key"]
    # A key inside a string's text is no repeat.
    events = run(['<tool_call>{"name": "set", "arguments": {"a": 1, ', '"b": "\\"a\\": 2"}}</tool_call>'], arguments_step=1)
    assert not [e for e in events if e["event"] == "revised"]


def test_the_arguments_step():
    # The default: a short call's one `arguments` event is its final one; a long string shows
    # progress, each event at least 128 bytes of arguments after the one before.
    short = '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>'
    events = run(list(short))
    assert [e for e in events if e["event"] == "arguments"] == [
        {"event": "arguments", "index": 0, "path": "", "members": {"city": "Oslo"}, "open": None}
    ]
    assert len([e for e in run(list(short), arguments_step=1) if e["event"] == "arguments"]) > 2
    content = "All work and no play makes Jack a dull boy. " * 100
    reply = '<tool_call>{"name": "write_file", "arguments": {"content": "%s"}}</tool_call>' % content
    shown = [len(p.get("content", "")) for _, p, _ in rebuilt(run(list(reply)))]
    assert len(shown) >= 8, shown
    assert all(b - a >= 128 for a, b in zip(shown, shown[1:-1])), shown
    assert shown[-1] == len(content)
    with pytest.raises(ValueError, match="the arguments step .* 1 or more, not 0"):
        toolmend.Stream(arguments_step=0)
    with pytest.raises(OverflowError):
        toolmend.Stream(arguments_step=-1)


def test_a_cut_off_call_is_never_a_call():
    events = run(['<tool_call>{"name": "rm", "arguments": {"path": "/tmp/x", "dry'])
    assert not [e for e in events if e["event"] == "call_end"]
    incomplete = [e for e in events if e["event"] == "incomplete"]
    assert incomplete and incomplete[0]["tool"] == "rm"
    assert events[-1]["ok"] is False and events[-1]["error"]["code"] == "incomplete_call"


def test_stream_over_an_iterable_and_options():
    reply = '<tool_call>{"name": "count", "arguments": {"n": "3"}}</tool_call>'
    tools = [{"name": "count", "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}}}]
    events = list(toolmend.stream(iter([reply[:20], reply[20:]]), tools=tools))
    assert [e["call"] for e in events if e["event"] == "call_end"] == toolmend.extract_calls(reply, tools=tools)["calls"]
    assert events[-1]["value"]["calls"][0]["parameters"] == {"n": 3}
    with pytest.raises(ValueError):
        toolmend.Stream(format="no-such-format")


def openai_chunks(fragments):
    """ChatCompletionChunk-like objects (attributes, as the OpenAI client gives them)."""
    out = []
    for content, call in fragments:
        tool_calls = None
        if call is not None:
            index, id_, name, arguments = call
            tool_calls = [SimpleNamespace(index=index, id=id_, type="function",
                                          function=SimpleNamespace(name=name, arguments=arguments))]
        delta = SimpleNamespace(role="assistant", content=content, tool_calls=tool_calls)
        out.append(SimpleNamespace(choices=[SimpleNamespace(index=0, delta=delta, finish_reason=None)]))
    return out


FRAGMENTS = [
    ("Let me check.", None),
    (None, (0, "call_1", "get_weather", "")),
    (None, (0, None, None, '{"city": "Os')),
    (None, (0, None, None, 'lo"}')),
    (None, (1, "call_2", "get_time", '{"tz": "UTC"')),
    (None, (1, None, None, "}")),
]


def test_openai_client_chunks():
    # An `arguments` event due at every byte: the calls are short (the default waits 128).
    events = list(toolmend.stream(openai_chunks(FRAGMENTS), arguments_step=1))
    message = {
        "role": "assistant",
        "content": "Let me check.",
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}},
            {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": '{"tz": "UTC"}'}},
        ],
    }
    assert [e["call"] for e in events if e["event"] == "call_end"] == toolmend.extract_calls(message)["calls"]
    assert [e["tool"] for e in events if e["event"] == "call_start"] == ["get_weather", "get_time"]
    assert any(params == {"city": "Os"} for _, params, _ in rebuilt(events))


def test_the_progress_display_of_docs_streaming_md(root):
    text = (root / "docs" / "streaming.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    code = next(b for b in blocks if "def show_progress" in b)
    namespace = {}
    exec(compile(code, "docs/streaming.md", "exec"), namespace)
    lines = []
    out = SimpleNamespace(write=lines.append, flush=lambda: None)
    # A call long enough to show its arguments while they are written (128 bytes of them).
    note = "Bring an umbrella if it rains; " * 6
    fragments = [
        *FRAGMENTS[:2],
        (None, (0, None, None, '{"city": "Oslo", "note": "' + note[:120])),
        (None, (0, None, None, note[120:] + '"}')),
        *FRAGMENTS[4:],
    ]
    calls = namespace["show_progress"](openai_chunks(fragments), out=out)
    assert [c["tool"] for c in calls] == ["get_weather", "get_time"]
    assert calls[0]["parameters"] == {"city": "Oslo", "note": note}
    shown = "".join(lines)
    assert "calling get_weather" in shown and "(writing /note)" in shown, shown
    # A call cut off: nothing to run.
    cut = openai_chunks(FRAGMENTS[:3])
    assert namespace["show_progress"](cut, out=out) == []
    assert "not a call" in "".join(lines)


def test_server_chunks_are_read_by_the_library():
    # issue 26: the chunk dispatch is the library's (Deltas), as `calls --stream --input jsonl`:
    # `function_call` repeating `tool_calls` is one call, the stop reason is respected, and
    # Anthropic events are read too.
    def chunk(delta, finish=None):
        return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks = [chunk({"function_call": {"name": "get_weather", "arguments": ""},
                     "tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "get_weather", "arguments": ""}}]})]
    for piece in ['{"ci', 'ty": "Os', 'lo"}']:
        chunks.append(chunk({"function_call": {"arguments": piece},
                             "tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
    events = list(toolmend.stream(chunks + [chunk({}, "tool_calls")]))
    assert events[-1]["ok"] is True
    assert [c["parameters"] for c in events[-1]["value"]["calls"]] == [{"city": "Oslo"}]
    cut = list(toolmend.stream(chunks + [chunk({}, "length")]))
    assert cut[-1]["ok"] is False and cut[-1]["error"]["code"] == "incomplete_call"
    anthropic = [
        {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": '{"city": "Oslo"}'}},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
    ]
    events = list(toolmend.stream(anthropic))
    assert events[-1]["value"]["calls"] == [{"tool": "get_weather", "parameters": {"city": "Oslo"}, "id": "toolu_1", "repairs": []}]



def test_a_whole_response_as_a_chunk_reads_as_extract_calls():
    # A server that ignored `"stream": true`, or a caller handing over what the client returned:
    # an Anthropic message read as the whole message is (it was refused), and a cut after text
    # written after the call is the text's (the stream cut the call).
    message = {"type": "message", "role": "assistant", "content": [
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}},
        {"type": "text", "text": "Now I will expl"}], "stop_reason": "max_tokens"}
    events = list(toolmend.stream([message]))
    whole = toolmend.extract_calls(json.dumps(message))
    assert events[-1]["ok"] is True
    assert events[-1]["value"]["calls"] == whole["calls"]
    assert whole["calls"][0]["parameters"] == {"city": "Oslo"}
    assert events[-1]["value"]["text"] == whole["text"] == "Checking.\nNow I will expl"


@pytest.mark.parametrize("reply", REPLIES)
def test_whole_parameters_on_request(reply):
    """`arguments_events="snapshot"`: the same events, each `arguments` one carrying
    `parameters`, what the deltas so far add up to (the library's rule; issue 30)."""
    chars = list(reply)
    # An `arguments` event due at every byte, for the most snapshots to compare.
    plain = run(chars, arguments_step=1)
    whole = run(chars, arguments_events="snapshot", arguments_step=1)
    assert all("parameters" not in e for e in plain)
    # `rebuilt` adds the events' own lists and dicts to what it builds: a copy keeps them.
    progress = iter(rebuilt(copy.deepcopy(whole)))
    for e in whole:
        if e["event"] == "arguments":
            _, params, _ = next(progress)
            assert e["parameters"] == params
    assert [{k: v for k, v in e.items() if k != "parameters"} for e in whole] == plain
    assert run(chars, arguments_events="delta", arguments_step=1) == plain
    with pytest.raises(ValueError, match="snapshot"):
        toolmend.Stream(arguments_events="whole")
