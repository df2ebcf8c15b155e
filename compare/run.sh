#!/bin/sh
# Differential comparison of toolmend against json_repair (Python) and jsonrepair (JavaScript).
#
#   compare/run.sh                 run every case, print the disagreement table, the counts and the
#                                  summary table (expected value per tool, per source of cases)
#   compare/run.sh --toolmend PATH another toolmend binary (say, an older build) over the same cases
#   compare/run.sh --markdown      the same table as Markdown
#   compare/run.sh --all           print every row, not only disagreements
#   compare/run.sh --only CLASS    only the cases of compare/cases/CLASS.{txt,multiline}
#   compare/run.sh --timing        adversarial inputs: time each tool on growing sizes
#   compare/run.sh --timing --tools toolmend --sizes 1000000,8000000   toolmend alone, larger inputs
#
# Needs python3 (with venv), node + npm and cargo. The peer libraries are installed under
# compare/work/ (gitignored) on the first run; set COMPARE_SKIP_INSTALL=1 to reuse them as they are.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
work="$here/work"
mkdir -p "$work"

if [ "${COMPARE_SKIP_INSTALL:-0}" != 1 ]; then
    if [ ! -x "$work/venv/bin/python" ]; then
        echo "compare: creating the Python venv in $work/venv" >&2
        python3 -m venv "$work/venv"
    fi
    if ! "$work/venv/bin/python" -c 'import json_repair' 2>/dev/null; then
        echo "compare: pip install json-repair" >&2
        "$work/venv/bin/pip" install --quiet --disable-pip-version-check json-repair
    fi
    if [ ! -f "$work/node_modules/jsonrepair/package.json" ]; then
        echo "compare: npm install jsonrepair" >&2
        [ -f "$work/package.json" ] || echo '{"private": true}' > "$work/package.json"
        (cd "$work" && npm install --silent --no-audit --no-fund jsonrepair)
    fi
fi

echo "compare: cargo build --release" >&2
(cd "$root" && cargo build --release --quiet)

exec "$work/venv/bin/python" "$here/compare.py" --root "$root" "$@"
