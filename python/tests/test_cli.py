"""The wheel's `toolmend` command: a console script that runs the CLI in the native module
(no second binary), with the binary's exit codes, quiet end on a closed pipe, and Ctrl-C."""

import os
import signal
import subprocess
import sys
from importlib.metadata import distribution

import pytest

import toolmend


def command():
    name = "toolmend.exe" if os.name == "nt" else "toolmend"
    return os.path.join(os.path.dirname(sys.executable), name)


def run(*args, stdin=b""):
    return subprocess.run([command(), *args], input=stdin, capture_output=True, timeout=60)


def test_the_command_is_a_console_script_into_the_native_module():
    dist = distribution("toolmend")
    scripts = {e.name: e.value for e in dist.entry_points if e.group == "console_scripts"}
    assert scripts == {"toolmend": "toolmend._cli:main"}
    # Nothing else is installed beside it: the module is the CLI.
    assert not [f for f in dist.files if ".data" in str(f)], dist.files
    assert os.path.exists(command())
    assert toolmend.binary_path() == os.path.realpath(command())


def test_exit_codes_and_output_are_the_binarys():
    ok = run(stdin=b'{"a": 1,}\n')
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, b'{"a":1}\n', b"")
    refused = run("--records", stdin=b"[1]\n")
    assert refused.returncode == 1
    assert b'"not_an_object"' in refused.stdout
    usage = run("--no-such-option")
    assert usage.returncode == 2
    assert b"unexpected argument '--no-such-option'" in usage.stderr
    assert b"Usage: toolmend" in usage.stderr
    version = run("--version")
    assert (version.returncode, version.stdout) == (0, f"toolmend {toolmend.__version__}\n".encode())
    missing = run("args", "/no/such/file")
    assert missing.returncode == 2 and missing.stderr.startswith(b"toolmend: ")


def test_output_without_a_final_newline_is_flushed(tmp_path):
    out = tmp_path / "out"
    with open(out, "wb") as f:
        subprocess.run([command(), "repair"], input=b"[1, 2", stdout=f, check=True, timeout=60)
    assert out.read_bytes() == b"[1,2]\n"


@pytest.mark.skipif(os.name == "nt", reason="a closed pipe and SIGINT are Unix behaviour")
def test_a_closed_pipe_ends_quietly():
    proc = subprocess.Popen(
        [command()], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    proc.stdout.close()  # as `| head` does once it has read enough
    _, err = proc.communicate(b'{"a": 1}\n' * 200_000, timeout=120)
    assert (proc.returncode, err) == (0, b"")


@pytest.mark.skipif(os.name == "nt", reason="a closed pipe and SIGINT are Unix behaviour")
def test_ctrl_c_ends_a_command_waiting_for_input():
    proc = subprocess.Popen(
        [command(), "--line-buffered"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    proc.stdin.write(b'{"a": 1}\n')
    proc.stdin.flush()
    # Its first line out: the command is running, in the native module, waiting for more input.
    assert proc.stdout.readline() == b'{"a":1}\n'
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == -signal.SIGINT
