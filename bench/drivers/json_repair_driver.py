"""Drives json_repair (Python) line by line in one process: each line of stdin is repaired with
json_repair.repair_json (default settings) and written as one line on stdout.
A line it cannot mend (an exception) gets a short error line on stderr."""

import sys

from json_repair import repair_json


def main():
    out = sys.stdout
    err = sys.stderr
    for number, line in enumerate(sys.stdin, 1):
        line = line.rstrip("\r\n")
        try:
            out.write(repair_json(line))
            out.write("\n")
        except Exception as e:  # noqa: BLE001 - count it and go on, as the other tools do
            err.write("line %d: %s\n" % (number, e))
    out.flush()


if __name__ == "__main__":
    main()
