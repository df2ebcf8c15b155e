#!/usr/bin/env python3
"""A toolmend client for Python agents, with nothing beyond the standard library.

It keeps one long-running `toolmend args` process and one `toolmend calls` process (a
"co-process"): each request is one JSON line on the child's stdin, and the answer is the one
record the child writes for it (`--records --line-buffered`). Starting a process per value would
cost far more than the mending itself. If a child dies, it is started again and the request is
sent once more.

    from toolmend_client import Toolmend

    with Toolmend() as tm:
        record = tm.mend_arguments('"{\\"city\\": \\"Oslo\\",}"')
        record["value"]           # {'city': 'Oslo'}
        record["repairs"]         # [{'kind': 'unquote', 'layers': 1}, {'kind': 'trailing_comma', ...}]

        response, problems = tm.mend_openai_response(openai_response)

Run `python3 toolmend_client.py --self-test` to check it against a toolmend binary (the
TOOLMEND environment variable, else `toolmend` on PATH, else target/debug/toolmend).
"""

import copy
import json
import os
import shutil
import signal
import subprocess
import sys
import threading


def find_binary():
    """The toolmend binary: $TOOLMEND, else on PATH, else this repository's debug build."""
    if os.environ.get("TOOLMEND"):
        return os.environ["TOOLMEND"]
    on_path = shutil.which("toolmend")
    if on_path:
        return on_path
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(here, "..", "..", "target", "debug", "toolmend")


class ToolmendError(Exception):
    """toolmend could not be run, or did not answer a request."""


class CoProcess:
    """One toolmend child: a JSON line in, one record out, in order.

    `--input jsonl` (each request is {"text": ..., "id": n}) keeps a value with line breaks in
    it as one input, and the `id` copied into the record shows the answer is the right one.
    """

    def __init__(self, argv):
        self.argv = argv
        self.child = None
        self.next_id = 0
        self.restarts = 0
        self.started = False
        # Requests from several threads must not interleave their lines.
        self.lock = threading.Lock()

    def _start(self):
        try:
            self.child = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                encoding="utf-8",
                bufsize=1,
            )
        except OSError as e:
            raise ToolmendError(f"cannot start {self.argv[0]}: {e}") from e

    def request(self, payload):
        """Sends `payload` (a dict, given an `id` here) and returns its record as a dict."""
        with self.lock:
            self.next_id += 1
            line = json.dumps(dict(payload, id=self.next_id), ensure_ascii=False)
            # A dead child is started again, and the request sent once more.
            for attempt in range(2):
                if self.child is None or self.child.poll() is not None:
                    if self.started:
                        self.restarts += 1
                    self.started = True
                    self._start()
                try:
                    self.child.stdin.write(line + "\n")
                    self.child.stdin.flush()
                    answer = self.child.stdout.readline()
                except (BrokenPipeError, OSError):
                    answer = ""
                if answer:
                    record = json.loads(answer)
                    if record.get("id") != self.next_id:
                        raise ToolmendError(f"answer out of step: {answer.strip()}")
                    return record
                self._stop()
            raise ToolmendError(f"{' '.join(self.argv)} died twice on one request")

    def pid(self):
        return self.child.pid if self.child else None

    def _stop(self):
        if self.child is None:
            return
        try:
            self.child.stdin.close()
        except OSError:
            pass
        try:
            self.child.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.child.kill()
            self.child.wait()
        self.child.stdout.close()
        self.child = None

    def close(self):
        with self.lock:
            self._stop()


class Toolmend:
    """The two co-processes: `args` for tool-call arguments, `calls` for raw model replies."""

    def __init__(self, binary=None, truncated="error"):
        """`truncated`: what `mend_arguments` does with arguments that were cut off before
        their end (`{"dry_run": fal`). "error" (the default, for an agent about to run the
        calls) refuses them with the code `truncated`; "heal" closes them and reports it."""
        binary = binary or find_binary()
        common = ["--records", "--line-buffered", "--input", "jsonl"]
        self.args = CoProcess([binary, "args", *common, "--truncated", truncated])
        self.calls = CoProcess([binary, "calls", *common])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self.args.close()
        self.calls.close()

    def mend_arguments(self, text):
        """Mends tool-call arguments. Returns the record: {"ok": True, "value", "repairs",
        "dropped"} or {"ok": False, "error": {"code", "message", "original", "offset"?}}."""
        return self.args.request({"text": text})

    def extract_calls(self, reply):
        """Finds the tool calls in a raw model reply (text) or an assistant message (dict).
        A success record's value is {"calls": [{"tool", "parameters", ...}], "text",
        "reasoning", "incomplete"}."""
        payload = reply if isinstance(reply, dict) else {"text": reply}
        return self.calls.request(payload)

    def mend_openai_response(self, response):
        """Returns a copy of an OpenAI-style chat completion whose tool calls are clean, and the
        problems found: [(choice index, call id or None, error record)].

        Each `tool_calls[].function.arguments` string is mended in place; a call whose arguments
        cannot be mended is left as it was and reported. A message with no `tool_calls` whose
        text holds calls (an open model writing `<tool_call>…`, `[TOOL_CALLS]…`) gets them as
        `tool_calls`, and its `content` becomes the text around them.

        A call that was cut off is never returned as mended: arguments cut short are reported
        (`truncated`, unless the client was made with truncated="heal"), a call cut in the text
        is reported (`incomplete_call`), and so is every call of a choice whose
        `finish_reason` is "length" (the model was stopped mid-output).
        """
        mended = copy.deepcopy(response)
        problems = []
        for index, choice in enumerate(mended.get("choices", [])):
            message = choice.get("message") or {}
            if choice.get("finish_reason") == "length":
                for call in message.get("tool_calls") or []:
                    problems.append((index, call.get("id"), _cut_by_length()))
                if not message.get("tool_calls") and isinstance(message.get("content"), str):
                    record = self.extract_calls(message["content"])
                    if not record["ok"] or record["value"]["calls"]:
                        problems.append((index, None, _cut_by_length()))
                continue
            if message.get("tool_calls"):
                for call in message["tool_calls"]:
                    function = call.get("function", {})
                    record = self.mend_arguments(function.get("arguments") or "{}")
                    if record["ok"]:
                        # Python's json keeps the value, not every number's spelling (10.50).
                        function["arguments"] = json.dumps(
                            record["value"], ensure_ascii=False, separators=(",", ":")
                        )
                    else:
                        problems.append((index, call.get("id"), record["error"]))
            elif isinstance(message.get("content"), str):
                record = self.extract_calls(message["content"])
                if not record["ok"]:
                    problems.append((index, None, record["error"]))
                elif record["value"]["calls"]:
                    calls = record["value"]["calls"]
                    message["tool_calls"] = [
                        {
                            "id": call.get("id", f"call_{index}_{n}"),
                            "type": "function",
                            "function": {
                                "name": call["tool"],
                                "arguments": json.dumps(
                                    call["parameters"], ensure_ascii=False, separators=(",", ":")
                                ),
                            },
                        }
                        for n, call in enumerate(calls)
                    ]
                    message["content"] = record["value"]["text"]
                    choice["finish_reason"] = "tool_calls"
        return mended, problems


def _cut_by_length():
    return {
        "code": "incomplete_call",
        "message": 'the response was cut off (finish_reason "length"): its calls may be incomplete',
    }


def self_test():
    """Runs the client against the binary; exits non-zero on the first thing that is wrong."""
    binary = find_binary()
    checks = 0

    def expect(condition, what):
        nonlocal checks
        if not condition:
            raise SystemExit(f"self-test FAILED: {what}")
        checks += 1

    with Toolmend(binary) as tm:
        clean = tm.mend_arguments('{"command": "ls -la", "n": 10.50}')
        expect(clean["ok"] and clean["value"] == {"command": "ls -la", "n": 10.5}, f"clean: {clean}")
        expect(clean["repairs"] == [], f"clean value has no repairs: {clean}")

        broken = tm.mend_arguments("\"{\\\"city\\\": 'Oslo',}\"\n")
        expect(broken["ok"] and broken["value"] == {"city": "Oslo"}, f"broken: {broken}")
        kinds = [r["kind"] for r in broken["repairs"]]
        expect(kinds == ["unquote", "single_quotes", "trailing_comma"], f"repairs: {kinds}")

        multiline = tm.mend_arguments('{\n  "a": 1\n}')
        expect(multiline["ok"] and multiline["value"] == {"a": 1}, f"multi-line: {multiline}")

        error = tm.mend_arguments("[1, 2]")
        expect(not error["ok"] and error["error"]["code"] == "not_an_object", f"error: {error}")

        # Kill the child: the next request starts a new one and still gets its answer.
        old = tm.args.pid()
        tm.args.child.kill()
        tm.args.child.wait()
        after = tm.mend_arguments('{"after": "restart"}')
        expect(after["ok"] and after["value"] == {"after": "restart"}, f"after restart: {after}")
        expect(tm.args.restarts == 1 and tm.args.pid() != old, "the child was restarted")

        # Killed while a request waits (stopped first, so it cannot answer before it dies):
        # the request goes to a new child.
        stuck = tm.args.child
        os.kill(stuck.pid, signal.SIGSTOP)
        threading.Timer(0.2, stuck.kill).start()
        waited = tm.mend_arguments('{"x": 1,}')
        expect(waited["ok"] and waited["value"] == {"x": 1}, f"in flight: {waited}")
        expect(tm.args.restarts == 2, f"restarted again: {tm.args.restarts}")

        response = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {
                                    "name": "get_weather",
                                    "arguments": "\"{\\\"city\\\": \\\"Oslo\\\"}\"",
                                },
                            },
                            {
                                "id": "call_2",
                                "type": "function",
                                "function": {"name": "run", "arguments": "{'cmd': 'ls', 'all': True,}"},
                            },
                            {
                                "id": "call_3",
                                "type": "function",
                                "function": {"name": "run", "arguments": "not json at all"},
                            },
                        ],
                    },
                },
                {
                    "index": 1,
                    "finish_reason": "stop",
                    "message": {
                        "role": "assistant",
                        "content": 'Checking.\n<tool_call>\n{"name": "get_time", "arguments": {"tz": "UTC"}}\n</tool_call>',
                    },
                },
            ],
        }
        mended, problems = tm.mend_openai_response(response)
        calls = mended["choices"][0]["message"]["tool_calls"]
        expect(calls[0]["function"]["arguments"] == '{"city":"Oslo"}', f"call_1: {calls[0]}")
        expect(calls[1]["function"]["arguments"] == '{"cmd":"ls","all":true}', f"call_2: {calls[1]}")
        expect(calls[2]["function"]["arguments"] == "not json at all", "call_3 left as it was")
        expect(
            [(i, call_id, e["code"]) for i, call_id, e in problems] == [(0, "call_3", "not_an_object")],
            f"problems: {problems}",
        )
        second = mended["choices"][1]
        expect(
            second["message"]["tool_calls"][0]["function"]
            == {"name": "get_time", "arguments": '{"tz":"UTC"}'},
            f"calls from text: {second}",
        )
        expect(second["message"]["content"] == "Checking.", f"content: {second}")
        expect(response["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
               == "\"{\\\"city\\\": \\\"Oslo\\\"}\"", "the response given is not changed")

        # A cut-off call is never handed back as a call: arguments cut short, a call cut in
        # the text, and every call of a response stopped by its length are reported.
        cut = {
            "choices": [
                {
                    "finish_reason": "tool_calls",
                    "message": {"role": "assistant", "content": None, "tool_calls": [
                        {"id": "c1", "type": "function", "function": {
                            "name": "deploy", "arguments": '{"target": "prod", "dry_run": fal'}},
                        {"id": "c2", "type": "function", "function": {
                            "name": "deploy", "arguments": '{"target": "prod", "dry_run": false}'}},
                    ]},
                },
                {
                    "finish_reason": "stop",
                    "message": {"role": "assistant",
                                "content": '<tool_call>{"name": "deploy", "arguments": {"target": "pr'},
                },
                {
                    "finish_reason": "length",
                    "message": {"role": "assistant", "content": None, "tool_calls": [
                        {"id": "c3", "type": "function", "function": {
                            "name": "deploy", "arguments": '{"target": "prod"}'}},
                    ]},
                },
            ]
        }
        mended, problems = tm.mend_openai_response(cut)
        expect(
            [(i, call_id, e["code"]) for i, call_id, e in problems]
            == [(0, "c1", "truncated"), (1, None, "incomplete_call"), (2, "c3", "incomplete_call")],
            f"cut calls: {problems}",
        )
        first = mended["choices"][0]["message"]["tool_calls"]
        expect(first[0]["function"]["arguments"] == '{"target": "prod", "dry_run": fal',
               f"the cut call is left as it was: {first[0]}")
        expect(first[1]["function"]["arguments"] == '{"target":"prod","dry_run":false}',
               f"the whole call is mended: {first[1]}")
        expect("tool_calls" not in mended["choices"][1]["message"], "no call from cut text")
        with Toolmend(binary, truncated="heal") as healing:
            healed = healing.mend_arguments('{"target": "prod", "dry_run": fal')
            expect(healed["ok"] and healed["value"] == {"target": "prod", "dry_run": False}
                   and "truncated_literal" in [r["kind"] for r in healed["repairs"]],
                   f"truncated='heal' heals and says so: {healed}")

        found = tm.extract_calls("[TOOL_CALLS]get_time[ARGS]{\"tz\": \"UTC\"}")
        expect(found["ok"] and found["value"]["calls"][0]["tool"] == "get_time", f"calls: {found}")

    print(f"python client self-test: {checks} checks passed ({binary})")


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        try:
            self_test()
        except ToolmendError as e:
            sys.exit(f"self-test FAILED: {e}")
    else:
        sys.exit(f"usage: {sys.argv[0]} --self-test   (import Toolmend to use it)")
