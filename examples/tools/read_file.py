#!/usr/bin/env python3
"""A read-only tool for `toolmend loop`: prints a text file under the current directory.

stdin: {"path": "relative/path.txt"}. Refuses absolute paths and `..`, so the model can only
read inside the directory toolmend runs in.
"""
import json
import os
import sys

params = json.load(sys.stdin)
path = params.get("path", "")
if not isinstance(path, str) or os.path.isabs(path) or ".." in path.split(os.sep):
    sys.exit("read_file: only relative paths inside the current directory")
with open(path, encoding="utf-8", errors="replace") as f:
    sys.stdout.write(f.read(100_000))
