"""The `toolmend` command of the wheel: the CLI itself, run in the native module."""

import signal
import sys


def main() -> int:
    """Runs `toolmend` with this process's arguments and returns its exit status."""
    # As in the binary: Ctrl-C ends a command at once (Python's handler would only note it until
    # the native call returns); `toolmend loop` catches its own. An ignored SIGINT (a background
    # job, nohup) stays ignored. SIGPIPE is ignored by Python as by Rust, so `toolmend … | head`
    # ends quietly.
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    from ._native import run_cli

    sys.stdout.flush()
    return run_cli(["toolmend", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
