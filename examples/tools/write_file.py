#!/usr/bin/env python3
"""A tool that writes a file, for `toolmend loop` (it needs approval).

stdin: {"path": "relative/path.txt", "content": "..."}. Refuses absolute paths and `..`.
"""
import json
import os
import sys

params = json.load(sys.stdin)
path, content = params.get("path", ""), params.get("content", "")
if not isinstance(path, str) or os.path.isabs(path) or ".." in path.split(os.sep):
    sys.exit("write_file: only relative paths inside the current directory")
with open(path, "w", encoding="utf-8") as f:
    f.write(content)
print("wrote %d characters to %s" % (len(content), path))
