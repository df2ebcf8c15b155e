#!/usr/bin/env bash
# `make bench`: builds toolmend and the floor, installs the peers into bench/work/, generates the
# corpus (deterministic, cached in bench/work/corpus/) and runs bench/run.py, which writes
# bench/RESULTS.md. Not part of `make test` or CI.
#
# Environment (all optional):
#   BENCH_ARGS          extra arguments for bench/run.py (e.g. "--sizes 10k,100k --rounds 3")
#   BENCH_SIZES         corpus sizes to generate and run (default 10k,100k,1m)
#   BENCH_NO_PEERS=1    skip installing and running json_repair and jsonrepair
#   BENCH_NO_BINDINGS=1 skip building the Python and Node packages (release) for the bindings series
#   JSON_REPAIR_VERSION / JSONREPAIR_VERSION   peer versions to install (defaults below)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
work="$here/work"
sizes="${BENCH_SIZES:-10k,100k,1m}"
json_repair_version="${JSON_REPAIR_VERSION:-0.64.5}"
jsonrepair_version="${JSONREPAIR_VERSION:-3.15.0}"
mkdir -p "$work"

say() { printf '\n### %s\n' "$*" >&2; }

say "building toolmend and the stream driver (cargo build --release)"
(cd "$root" && cargo build --release --quiet && cargo build --release --quiet --example stream_feed)

say "building the floor (bench/floor, cargo build --release)"
(cd "$here/floor" && cargo build --release --quiet)

say "building the sonic-rs floor (bench/floor-sonic, cargo build --release)"
(cd "$here/floor-sonic" && cargo build --release --quiet) || echo "the sonic-rs floor did not build: it will be skipped" >&2

# The C++ SIMD floor: simdjson from Debian's libsimdjson-dev (root installs it), built with g++
# (bench/floor-simdjson/floor.cpp; the library picks its SIMD kernel at run time).
simdjson_floor() {
    if [ ! -f /usr/include/simdjson.h ]; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
            say "installing libsimdjson-dev (apt-get)"
            apt-get update -qq && apt-get install -y -qq libsimdjson-dev >/dev/null || return 1
        else
            return 1
        fi
    fi
    say "building the simdjson floor (bench/floor-simdjson, g++ -O3)"
    g++ -O3 -std=c++17 -o "$here/floor-simdjson/floor-simdjson" "$here/floor-simdjson/floor.cpp" -lsimdjson
}
simdjson_floor || echo "libsimdjson-dev or g++ is missing: the simdjson floor will be skipped" >&2

# Installs the Debian package $1 when its command is missing (as root, with apt-get); else says
# what will be skipped without it ($2).
need() {
    command -v "$1" >/dev/null 2>&1 && return
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        say "installing $1 (apt-get)"
        apt-get update -qq && apt-get install -y -qq "$1" >/dev/null || echo "$1 install failed: $2 will be skipped" >&2
    else
        echo "$1 is not installed: $2 will be skipped" >&2
    fi
}
need jq jq
# The stream series counts instructions with callgrind (a load-independent ratio beside CPU time).
need valgrind "the stream's instruction counts"

peers=1
if [ "${BENCH_NO_PEERS:-0}" = 1 ]; then peers=0; fi
if [ "$peers" = 1 ]; then
    if [ ! -x "$work/venv/bin/python" ]; then
        say "creating the Python virtual environment for json_repair"
        if ! python3 -m venv "$work/venv" 2>/dev/null; then
            rm -rf "$work/venv"
            if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
                apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
                python3 -m venv "$work/venv"
            else
                echo "python3 -m venv failed (install python3-venv): json_repair will be skipped" >&2
            fi
        fi
    fi
    if [ -x "$work/venv/bin/python" ]; then
        "$work/venv/bin/python" -c "import importlib.metadata as m,sys; sys.exit(m.version('json-repair')!='$json_repair_version')" 2>/dev/null \
            || { say "pip install json-repair==$json_repair_version"; "$work/venv/bin/pip" install -q "json-repair==$json_repair_version"; }
    fi
    if command -v npm >/dev/null 2>&1; then
        if [ "$(node -p "try{require('$work/node_modules/jsonrepair/package.json').version}catch(e){''}" 2>/dev/null)" != "$jsonrepair_version" ]; then
            say "npm install jsonrepair@$jsonrepair_version"
            [ -f "$work/package.json" ] || echo '{"name":"toolmend-bench-work","private":true}' > "$work/package.json"
            (cd "$work" && npm install --silent --no-audit --no-fund "jsonrepair@$jsonrepair_version")
        fi
        # the driver is run from bench/work/ so that `import 'jsonrepair'` finds node_modules there
        cp "$here/drivers/jsonrepair_driver.mjs" "$work/jsonrepair_driver.mjs"
    else
        echo "npm is not installed: jsonrepair will be skipped" >&2
    fi
fi

# The bindings series: the release wheel into the json_repair venv, the release npm package
# beside jsonrepair, so that each runs against its peer in one process.
if [ "$peers" = 1 ] && [ "${BENCH_NO_BINDINGS:-0}" != 1 ]; then
    say "building the packages (make python-wheel node-package PROFILE=release)"
    if (cd "$root" && make --no-print-directory python-wheel PROFILE=release >&2); then
        [ -x "$work/venv/bin/pip" ] && "$work/venv/bin/pip" install -q --disable-pip-version-check \
            --force-reinstall --no-deps "$root"/target/wheels/release/toolmend-*.whl
    else
        echo "the Python package did not build: its bindings figures will be skipped" >&2
    fi
    if command -v npm >/dev/null 2>&1 && (cd "$root" && make --no-print-directory node-package PROFILE=release >&2); then
        (cd "$work" && npm install --silent --no-audit --no-fund "$root"/target/npm/release/toolmend-*.tgz)
        cp "$here/drivers/bindings_driver.mjs" "$here/drivers/agent_lines.mjs" "$work/"
    else
        echo "the Node package did not build: its bindings figures will be skipped" >&2
    fi
fi

say "generating the corpus (bench/gen_corpus.py; cached)"
python3 "$here/gen_corpus.py" --sizes "$sizes"

say "running (bench/run.py)"
extra=()
[ "$peers" = 1 ] || extra+=(--no-peers)
# shellcheck disable=SC2086
BENCH_COMMAND="bash bench/run.sh${BENCH_ARGS:+ (BENCH_ARGS=\"$BENCH_ARGS\")}" \
    python3 "$here/run.py" --sizes "$sizes" "${extra[@]}" ${BENCH_ARGS:-}
