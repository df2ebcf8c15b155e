#!/usr/bin/env python3
"""An LLM command for `toolmend loop`: sends the conversation to an OpenAI-compatible
chat-completions endpoint (llama.cpp's llama-server, Ollama, vLLM, LM Studio, or a hosted API)
and prints the reply. Python standard library only.

stdin:  {"messages": [{"role": "system"|"user"|"assistant"|"tool", "content": "...", "name"?,
                      "tool_call_id"?}], "tools": [API tool definitions]}
stdout: the model's reply text; with --native-tools, the whole response (JSON)
exit:   0 on a reply; 1 on an HTTP or network error (toolmend retries with backoff)

usage: openai_chat.py --model MODEL [--base-url URL] [--api-key-env VAR] [--api chat|responses]
                      [--native-tools [--tool-choice auto|required|TOOL]]
                      [--temperature T] [--max-tokens N] [--timeout SECONDS]

The base URL defaults to $OPENAI_BASE_URL, else http://localhost:8080/v1 (llama-server;
Ollama is http://localhost:11434/v1). The API key is read from the environment variable named
by --api-key-env (default OPENAI_API_KEY); local servers need none.

By default the calling convention is plain JSON in the reply, not the API's tools feature:
toolmend's `tool` messages then carry no tool_call_id, which many servers refuse, so they are
sent as `user` messages that say which tool the result is from.

--native-tools uses the API's tools feature instead (for a model's native calls): the tools
go as the request's `tools`, the whole response is printed (toolmend reads it as `calls`
reads an API response: its `tool_calls`, or calls in its text), an earlier reply that was a
whole response goes back as its assistant message (with its `tool_calls`), and each tool
result as a `tool` message with its `tool_call_id`. Set `[llm] system_prompt = "native"` in
the loop's config with it, so the system message does not teach toolmend's JSON convention.

--api responses talks to OpenAI's Responses API (`POST /responses`; the models served only
there) instead of chat completions: the conversation goes as its `input` items, the reply text
is the response's `output_text`, and with --native-tools the tools go as its function tools, the
whole response is printed (toolmend reads its `function_call` items, with their `call_id`s), an
earlier reply goes back as its `message` and `function_call` items and each tool result as a
`function_call_output` with its call's id.
"""
import argparse
import json
import os
import sys
import urllib.error
import urllib.request


def result_text(message):
    """A tool's result as a user turn says it (the JSON convention's results have no call id
    for the API's `tool` messages)."""
    return "Result of the tool %s:\n%s" % (message.get("name", "?"), message.get("content", ""))


def to_api_messages(messages):
    out = []
    for m in messages:
        role, content = m.get("role"), m.get("content", "")
        if role == "tool":
            role, content = "user", result_text(m)
        out.append({"role": role, "content": content})
    return out


def to_native_messages(messages):
    """The conversation for the API's tools feature: replies that were whole responses become
    their assistant messages again; results are `tool` messages with their call's id."""
    out = []
    for m in messages:
        role, content = m.get("role"), m.get("content", "")
        if role == "assistant":
            try:
                message = json.loads(content)["choices"][0]["message"]
                back = {"role": "assistant", "content": message.get("content") or ""}
                if message.get("tool_calls"):
                    back["tool_calls"] = message["tool_calls"]
                out.append(back)
                continue
            except (ValueError, KeyError, IndexError, TypeError):
                pass
        if role == "tool" and m.get("tool_call_id"):
            out.append({"role": "tool", "tool_call_id": m["tool_call_id"], "content": content})
            continue
        if role == "tool":
            role, content = "user", result_text(m)
        out.append({"role": role, "content": content})
    return out


def to_responses_input(messages, native):
    """The conversation as Responses API `input` items: a reply that was a whole response goes
    back as its `message` and `function_call` items, a tool result of a native call as a
    `function_call_output` with its id; the rest as role messages (results of other calls as
    `user` messages, as to_api_messages sends them)."""
    items = []
    for m in messages:
        role, content = m.get("role"), m.get("content", "")
        if native and role == "assistant":
            try:
                output = json.loads(content)["output"]
                items += [i for i in output if i.get("type") in ("message", "function_call")]
                continue
            except (ValueError, KeyError, TypeError, AttributeError):
                pass
        if native and role == "tool" and m.get("tool_call_id"):
            items.append({"type": "function_call_output", "call_id": m["tool_call_id"],
                          "output": content})
            continue
        if role == "tool":
            role, content = "user", result_text(m)
        items.append({"role": role, "content": content})
    return items


def chat_body(args, conversation):
    """A chat completions request for the conversation."""
    convert = to_native_messages if args.native_tools else to_api_messages
    body = {"model": args.model, "messages": convert(conversation["messages"]),
            "temperature": args.temperature}
    if args.native_tools and conversation.get("tools"):
        body["tools"] = conversation["tools"]
        if args.tool_choice in ("auto", "required", "none"):
            body["tool_choice"] = args.tool_choice
        elif args.tool_choice:
            body["tool_choice"] = {"type": "function", "function": {"name": args.tool_choice}}
    if args.max_tokens:
        body["max_tokens"] = args.max_tokens
    return body


def responses_body(args, conversation):
    """A Responses API request for the conversation."""
    body = {"model": args.model, "temperature": args.temperature,
            "input": to_responses_input(conversation["messages"], args.native_tools)}
    if args.native_tools and conversation.get("tools"):
        # Chat completions' {"type": "function", "function": {...}} is flat here.
        body["tools"] = [dict({"type": "function"}, **t.get("function", t)) for t in conversation["tools"]]
        if args.tool_choice in ("auto", "required", "none"):
            body["tool_choice"] = args.tool_choice
        elif args.tool_choice:
            body["tool_choice"] = {"type": "function", "name": args.tool_choice}
    if args.max_tokens:
        body["max_output_tokens"] = args.max_tokens
    return body


def output_text(response):
    """The reply text of a Responses API response: its `output_text` parts, in order."""
    return "".join(part.get("text", "") for item in response["output"] if item.get("type") == "message"
                   for part in item.get("content") or [] if part.get("type") == "output_text")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument(
        "--base-url", default=os.environ.get("OPENAI_BASE_URL", "http://localhost:8080/v1")
    )
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY")
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--max-tokens", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--native-tools", action="store_true",
                        help="send the tools as the API's tools and print the whole response")
    parser.add_argument("--tool-choice", default=None,
                        help="with --native-tools: auto, required, or the name of the tool to call")
    parser.add_argument("--api", choices=("chat", "responses"), default="chat",
                        help="chat completions (the default) or OpenAI's Responses API")
    args = parser.parse_args()

    try:
        conversation = json.load(sys.stdin)
        body = (responses_body if args.api == "responses" else chat_body)(args, conversation)
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        sys.stderr.write("openai_chat: stdin is not {\"messages\": [...]}: %s\n" % e)
        return 2
    headers = {"Content-Type": "application/json"}
    key = os.environ.get(args.api_key_env)
    if key:
        headers["Authorization"] = "Bearer " + key
    request = urllib.request.Request(
        args.base_url.rstrip("/") + ("/responses" if args.api == "responses" else "/chat/completions"),
        data=json.dumps(body).encode("utf-8"),
        headers=headers,
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=args.timeout) as response:
            reply = json.load(response)
    except urllib.error.HTTPError as e:
        detail = e.read().decode("utf-8", "replace")[:500]
        sys.stderr.write("openai_chat: HTTP %d from %s: %s\n" % (e.code, args.base_url, detail))
        return 1
    except (urllib.error.URLError, OSError, ValueError) as e:
        sys.stderr.write("openai_chat: %s: %s\n" % (args.base_url, e))
        return 1
    if args.native_tools:
        sys.stdout.write(json.dumps(reply))
        return 0
    try:
        if args.api == "responses":
            content = output_text(reply)
        else:
            content = reply["choices"][0]["message"].get("content") or ""
    except (KeyError, IndexError, TypeError, AttributeError):
        sys.stderr.write("openai_chat: unexpected response: %s\n" % json.dumps(reply)[:500])
        return 1
    sys.stdout.write(content)
    return 0


if __name__ == "__main__":
    sys.exit(main())
