"""The OpenAI and Anthropic helpers: the rules of `toolmend calls` (a cut-off call is never a call)."""

import pytest

import toolmend


def completion(arguments, finish="tool_calls", content=None):
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{
            "index": 0,
            "finish_reason": finish,
            "message": {"role": "assistant", "content": content, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "deploy", "arguments": arguments}}
            ] if arguments is not None else None},
        }],
    }


def test_openai_calls_are_mended():
    found = toolmend.calls_from_openai(completion('"{\\"target\\": \\"prod\\",}"'))
    [call] = found["calls"]
    assert (call["tool"], call["id"], call["parameters"]) == ("deploy", "call_1", {"target": "prod"})
    assert "trailing_comma" in [r["kind"] for r in call["repairs"]]


def test_openai_cut_arguments_are_not_a_call():
    with pytest.raises(toolmend.Error) as e:
        toolmend.calls_from_openai(completion('{"target": "prod", "dry_run": fal'))
    assert e.value.code == "incomplete_call"
    assert e.value.value["calls"] == []
    assert e.value.value["incomplete"][0]["tool"] == "deploy"


def test_openai_length_finish_makes_calls_incomplete():
    # The arguments happen to be whole JSON, but the API says the output was cut.
    with pytest.raises(toolmend.Error) as e:
        toolmend.calls_from_openai(completion('{"target": "prod"}', finish="length"))
    assert e.value.code == "incomplete_call"
    assert e.value.value["calls"] == [] and e.value.value["incomplete"][0]["id"] == "call_1"


def test_openai_calls_in_text_and_sdk_objects():
    response = completion(None, content='Sure.\n<tool_call>{"name": "ls", "arguments": {}}</tool_call>')

    class Sdk:
        def model_dump(self):
            return response

    found = toolmend.calls_from_openai(Sdk())
    assert found["calls"] == [{"tool": "ls", "parameters": {}, "repairs": []}]
    assert found["text"] == "Sure."


def anthropic(blocks, stop="tool_use"):
    return {"id": "msg_1", "type": "message", "role": "assistant", "content": blocks, "stop_reason": stop}


def test_anthropic_tool_use():
    found = toolmend.calls_from_anthropic(anthropic([
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.txt"}},
    ]))
    assert found["calls"] == [{"tool": "read_file", "parameters": {"path": "a.txt"}, "id": "toolu_1", "repairs": []}]
    assert found["text"] == "Let me look."


def test_anthropic_max_tokens_is_cut():
    with pytest.raises(toolmend.Error) as e:
        toolmend.calls_from_anthropic(anthropic(
            [{"type": "tool_use", "id": "toolu_1", "name": "write_file", "input": {"path": "a.txt"}}],
            stop="max_tokens"))
    assert e.value.code == "incomplete_call"
    assert e.value.value["calls"] == []


def test_the_library_rules_the_stop_reason_and_the_shapes():
    # issue 26: the call written last is the one cut, with the library's message (as
    # `toolmend calls` on the whole response), and another API's response is refused.
    two = completion('{"target": "prod"}', finish="length")
    two["choices"][0]["message"]["tool_calls"].insert(0, {
        "id": "call_0", "type": "function", "function": {"name": "build", "arguments": "{}"}})
    with pytest.raises(toolmend.Error) as e:
        toolmend.calls_from_openai(two)
    assert e.value.code == "incomplete_call"
    assert [c["id"] for c in e.value.value["calls"]] == ["call_0"]
    assert e.value.value["incomplete"][0]["message"] == \
        "the API's stop reason says the output was cut: finish_reason \"length\""
    with pytest.raises(toolmend.Error) as e:
        toolmend.calls_from_openai(anthropic([{"type": "tool_use", "id": "t", "name": "f", "input": {}}]))
    assert e.value.code == "invalid_input"
    with pytest.raises(toolmend.Error) as e:
        toolmend.calls_from_anthropic(completion('{"target": "prod"}'))
    assert e.value.code == "invalid_input"


def test_function_call_given_with_tool_calls_is_one_call():
    response = completion('{"target": "prod"}')
    response["choices"][0]["message"]["function_call"] = {"name": "deploy", "arguments": '{"target": "prod"}'}
    assert len(toolmend.calls_from_openai(response)["calls"]) == 1
    assert len(toolmend.extract_calls(response)["calls"]) == 1
