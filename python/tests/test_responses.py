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


def responses_api(items, status="completed", reason=None):
    """A response of OpenAI's Responses API (`client.responses.create`), as its client dumps it."""
    return {"id": "resp_1", "object": "response", "status": status, "output": items,
            "incomplete_details": {"reason": reason} if reason else None}


def function_call(arguments, call_id="call_1", name="deploy"):
    return {"type": "function_call", "id": "fc_1", "call_id": call_id, "name": name,
            "arguments": arguments, "status": "completed"}


def test_openai_helper_reads_the_responses_api():
    # OpenAI's other API: `calls_from_openai` reads it too (it was refused as another API's).
    found = toolmend.calls_from_openai(responses_api([
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Deploy."}]},
        {"type": "message", "id": "msg_1", "role": "assistant",
         "content": [{"type": "output_text", "text": "On it."}]},
        function_call('{"target": "prod",}'),
    ]))
    [call] = found["calls"]
    assert (call["tool"], call["id"], call["parameters"]) == ("deploy", "call_1", {"target": "prod"})
    assert [r["kind"] for r in call["repairs"]] == ["trailing_comma"]
    assert (found["text"], found["reasoning"]) == ("On it.", "Deploy.")
    assert found == toolmend.extract_calls(responses_api([
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Deploy."}]},
        {"type": "message", "id": "msg_1", "role": "assistant",
         "content": [{"type": "output_text", "text": "On it."}]},
        function_call('{"target": "prod",}'),
    ]))


def test_openai_helper_responses_api_cut_and_choice():
    # Whole JSON, but the response says its output was cut: the call written last is not a call.
    with pytest.raises(toolmend.Error) as e:
        toolmend.calls_from_openai(responses_api(
            [function_call('{"target": "prod"}')], status="incomplete", reason="max_output_tokens"))
    assert e.value.code == "incomplete_call"
    assert e.value.value["calls"] == [] and e.value.value["incomplete"][0]["id"] == "call_1"
    # It has no choices to pick from.
    with pytest.raises(toolmend.Error) as e:
        toolmend.calls_from_openai(responses_api([function_call("{}")]), choice=1)
    assert e.value.code == "invalid_input" and "choice must be 0" in str(e.value)
    # Still not an Anthropic message.
    with pytest.raises(toolmend.Error) as e:
        toolmend.calls_from_anthropic(responses_api([function_call("{}")]))
    assert e.value.code == "invalid_input"
