"""Checks a built wheel is what we ship: one abi3 wheel (CPython 3.10 and later), manylinux2014
on Linux as `auditwheel show` reads it, the `toolmend` command a console script into the native
module, and nothing else beside the package. Usage: python check_wheel.py WHEEL"""

import os
import platform
import subprocess
import sys
import zipfile


def main(path: str) -> None:
    name = os.path.basename(path)
    names = zipfile.ZipFile(path).namelist()
    read = lambda member: zipfile.ZipFile(path).read(member).decode()  # noqa: E731
    info = next(n for n in names if n.endswith(".dist-info/WHEEL"))
    tags = [line.split(": ", 1)[1] for line in read(info).splitlines() if line.startswith("Tag: ")]
    problems = []
    if not tags or not all(t.startswith("cp310-abi3-") for t in tags):
        problems.append(f"not an abi3 wheel for CPython 3.10+: tags {tags}")
    if not any(n.startswith("toolmend/_native") and ".abi3." in n for n in names):
        problems.append(f"no toolmend/_native.abi3 module in {names}")
    entry = next((n for n in names if n.endswith(".dist-info/entry_points.txt")), None)
    if entry is None or "toolmend=toolmend._cli:main" not in read(entry).replace(" ", ""):
        problems.append("the toolmend command is no console script into toolmend._cli:main")
    if any(".data/" in n for n in names):
        problems.append(f"files beside the package: {[n for n in names if '.data/' in n]}")
    if sys.platform == "linux" and platform.machine() == "x86_64":
        if "manylinux2014_x86_64" not in name:
            problems.append(f"{name}: not tagged manylinux2014")
        shown = subprocess.run(
            [sys.executable, "-m", "auditwheel", "show", path], capture_output=True, text=True
        )
        print(shown.stdout.strip())
        if shown.returncode != 0 or '"manylinux_2_17_x86_64"' not in shown.stdout:
            problems.append(f"auditwheel show does not read manylinux_2_17 (manylinux2014):\n{shown.stdout}{shown.stderr}")
    for problem in problems:
        print(f"check_wheel: {problem}", file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"check_wheel: {name}: abi3 (cp310), {', '.join(tags)}; 1 passed, 0 failed")


if __name__ == "__main__":
    main(sys.argv[1])
