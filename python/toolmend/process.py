"""The co-process client: one long-running `toolmend` child answering one JSON line at a time.

For those who want the CLI in a subprocess rather than in-process (to keep the mending out of
the interpreter, or to share one binary with shell pipelines). Each request is one line of
`--input jsonl` on the child's stdin; the answer is the one record the child writes for it
(`--records --line-buffered`), matched by its line number.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from typing import Any, Dict, List, Optional

from ._native import Error

_MISSING = (
    "the toolmend binary was not found: $TOOLMEND is not set, the toolmend package installed "
    "no toolmend command, and there is none on PATH (reinstall the package: pip install "
    "toolmend); set TOOLMEND to a toolmend binary to use another one"
)


def binary_path() -> str:
    """The `toolmend` binary: $TOOLMEND, else the one this package installed, else PATH.

    Raises `toolmend.Error` (code `invalid_input`) when there is none."""
    env = os.environ.get("TOOLMEND")
    if env:
        return env
    try:
        from importlib.metadata import PackageNotFoundError, distribution

        dist = distribution("toolmend")
        for f in dist.files or ():
            if f.name == "toolmend" and "bin" in f.parts[:-1] or f.name == "toolmend.exe":
                path = str(dist.locate_file(f))
                if os.access(path, os.X_OK):
                    return os.path.realpath(path)
    except (ImportError, PackageNotFoundError):
        pass
    found = shutil.which("toolmend")
    if found:
        return found
    raise _error("invalid_input", _MISSING)


def _error(code: str, message: str) -> Error:
    err = Error(f"{code}: {message}")
    err.code, err.message, err.offset, err.value, err.violations = code, message, None, None, []
    return err


def _local_failure(text: Any) -> Optional[Dict[str, Any]]:
    """The record for an input the child cannot be sent, as the in-process functions give it."""
    if text is None:
        code, message = "empty_input", "input is None"
    elif isinstance(text, (bytes, bytearray)):
        try:
            bytes(text).decode("utf-8")
            return None
        except UnicodeDecodeError as e:
            return {"ok": False, "error": {"code": "invalid_utf8", "offset": e.start,
                                           "message": f"invalid UTF-8 at byte {e.start}",
                                           "original": bytes(text)[:100].decode("utf-8", "replace")}}
    elif not isinstance(text, (str, dict, list)):
        code, message = "invalid_input", f"expected str or bytes, found {type(text).__name__}"
    else:
        return None
    return {"ok": False, "error": {"code": code, "message": message, "original": ""}}


class _Child:
    """One toolmend child: a JSON line in, one record out, in order."""

    def __init__(self, argv: List[str]):
        self.argv = argv
        self.child: Optional[subprocess.Popen] = None
        self.sent = 0  # lines sent to this child: the `line` of its next record
        self.restarts = 0
        self.started = False
        self.lock = threading.Lock()  # requests from several threads must not interleave

    def _start(self) -> None:
        try:
            self.child = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          text=True, encoding="utf-8", errors="surrogatepass",
                                          bufsize=1)
        except OSError as e:
            raise _error("invalid_input", f"cannot start {self.argv[0]}: {e}") from e
        self.started = True
        self.sent = 0

    def request(self, payload: Dict[str, Any]) -> Dict[str, Any]:
        line = json.dumps(payload, ensure_ascii=False)
        with self.lock:
            # A dead child is started again, and the request sent once more.
            for _ in range(2):
                if self.child is None or self.child.poll() is not None:
                    if self.started:
                        self.restarts += 1
                    self._start()
                assert self.child is not None and self.child.stdin and self.child.stdout
                try:
                    self.child.stdin.write(line + "\n")
                    self.child.stdin.flush()
                    self.sent += 1
                    answer = self.child.stdout.readline()
                except OSError:
                    answer = ""
                if answer:
                    record = json.loads(answer)
                    if record.get("line") != self.sent:
                        self._stop()
                        raise _error("invalid_input", f"answer out of step: {answer.strip()}")
                    record.pop("line", None)
                    return record
                self._stop()
            raise _error("invalid_input", f"{' '.join(self.argv)} died twice on one request")

    def pid(self) -> Optional[int]:
        return self.child.pid if self.child else None

    def _stop(self) -> None:
        child, self.child = self.child, None
        if child is None:
            return
        try:
            assert child.stdin
            child.stdin.close()
        except OSError:
            pass
        try:
            child.wait(timeout=5)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        if child.stdout:
            child.stdout.close()

    def close(self) -> None:
        with self.lock:
            self._stop()


class Process:
    """Two long-running `toolmend` children: `args` for arguments, `calls` for model replies.

    Answers are the CLI's records as dicts (``{"ok": True, "value", "repairs", "dropped"}`` or
    ``{"ok": False, "error": {"code", "message", "original", "offset"?}}``). Safe to share
    between threads; a child that dies is started again. Use as a context manager, or call
    `close()`.

    ``binary`` defaults to `binary_path()`; ``args`` are extra options for both commands
    (``["--strict"]``, ``["--max-bytes", "1000000"]``).
    """

    def __init__(self, binary: Optional[str] = None, args: Optional[List[str]] = None):
        binary = binary or binary_path()
        common = ["--records", "--line-buffered", "--input", "jsonl", *(args or [])]
        self._args = _Child([binary, "args", *common])
        self._calls = _Child([binary, "calls", *common])

    def __enter__(self) -> "Process":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Ends both children."""
        self._args.close()
        self._calls.close()

    def mend_args(self, text: Any) -> Dict[str, Any]:
        """The record of `toolmend args --records` for one input (str or UTF-8 bytes)."""
        failed = _local_failure(text)
        if failed:
            return failed
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("utf-8")
        if not isinstance(text, str):
            return {"ok": False, "error": {"code": "invalid_input", "original": "",
                                           "message": f"expected str or bytes, found {type(text).__name__}"}}
        return self._args.request({"text": text})

    def extract_calls(self, reply: Any) -> Dict[str, Any]:
        """The record of `toolmend calls --records` for one reply: text, or an assistant
        message as a dict (OpenAI `tool_calls`, Anthropic content blocks)."""
        failed = _local_failure(reply)
        if failed:
            return failed
        if isinstance(reply, (bytes, bytearray)):
            reply = bytes(reply).decode("utf-8")
        if isinstance(reply, list):
            reply = {"content": reply}
        payload = reply if isinstance(reply, dict) else {"text": reply}
        return self._calls.request(payload)

    @property
    def pids(self) -> Dict[str, Optional[int]]:
        """The children's process ids (None before the first request)."""
        return {"args": self._args.pid(), "calls": self._calls.pid()}

    @property
    def restarts(self) -> int:
        """How many times a dead child was started again."""
        return self._args.restarts + self._calls.restarts
