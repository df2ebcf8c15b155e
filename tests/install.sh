#!/usr/bin/env bash
# `make test-install`: every way a user installs toolmend from source, each from a clean copy of
# the checkout (its tracked files, no target/) into a fresh environment, then tested there:
#   pip install ./python        (the wheel built from source: only a Rust toolchain needed)
#   maturin sdist, pip install of that sdist in a fresh venv
#   npm install ./node          (from a fresh Node project of the user's, not the checkout)
#   cargo install --locked --path .
# Each one's wall-clock and CPU time (user+sys, children included) goes to target/install/times.txt,
# and the sizes of what was built to target/install/sizes.txt. These are release builds, as a
# user gets: slow on a 2-core machine (51 min here under heavy load, 16 min of CPU), hence opt-in.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/target/install
PYTHON=${PYTHON:-python3}
rm -rf "$OUT" && mkdir -p "$OUT"
: >"$OUT/times.txt"

# A clean checkout: the tracked files as they are now, nothing built.
fresh_checkout() {
  rm -rf "$1" && mkdir -p "$1"
  git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$1"
}

# timed NAME COMMAND…: runs it, appends "NAME: wall W s, cpu C s" to times.txt.
timed() {
  local name=$1; shift
  /usr/bin/time -f "%e %U %S" -o "$OUT/time.tmp" "$@"
  read -r wall user sys <"$OUT/time.tmp"
  printf '%s: wall %.0f s, cpu %.0f s (load average before: %s)\n' "$name" "$wall" \
    "$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')" "$LOAD" | tee -a "$OUT/times.txt"
}

python_tests() { # VENV: python/tests against the package installed there
  "$1/bin/pip" install -q --disable-pip-version-check pytest pydantic
  (cd "$ROOT/python" && "$1/bin/pytest" -q -p no:cacheprovider tests)
}

echo "== pip install ./python (from a clean checkout, fresh venv)"
fresh_checkout "$OUT/checkout-pip"
"$PYTHON" -m venv "$OUT/venv-pip"
LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
timed "pip install ./python" "$OUT/venv-pip/bin/pip" install -q --disable-pip-version-check "$OUT/checkout-pip/python"
python_tests "$OUT/venv-pip"

echo "== maturin sdist, then pip install of the sdist (fresh venv)"
fresh_checkout "$OUT/checkout-sdist"
"$PYTHON" -m venv "$OUT/venv-maturin"
"$OUT/venv-maturin/bin/pip" install -q --disable-pip-version-check 'maturin>=1.9,<2'
"$OUT/venv-maturin/bin/maturin" sdist -m "$OUT/checkout-sdist/python/Cargo.toml" -o "$OUT/sdist"
SDIST=$(ls "$OUT"/sdist/toolmend-*.tar.gz)
# The sdist carries the Rust sources it needs, and none of the measurements or fixtures.
tar -tzf "$SDIST" >"$OUT/sdist.list"
if grep -E '/(bench|compare|fixtures|fuzz|node)/' "$OUT/sdist.list"; then
  echo "the sdist carries files that stay in the repository (above)"; exit 1
fi
grep -q 'crates/toolmend-core/src/lib.rs' "$OUT/sdist.list"
"$PYTHON" -m venv "$OUT/venv-sdist"
LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
timed "pip install sdist" "$OUT/venv-sdist/bin/pip" install -q --disable-pip-version-check "$SDIST"
python_tests "$OUT/venv-sdist"

echo "== npm install ./node (from a fresh project of the user's)"
fresh_checkout "$OUT/checkout-npm"
mkdir -p "$OUT/project" && (cd "$OUT/project" && npm init -y >/dev/null)
LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
(cd "$OUT/project" && timed "npm install ./node" npm install --no-audit --no-fund "$OUT/checkout-npm/node")
cp -r node/test "$OUT/project/test"
(cd "$OUT/project" && TOOLMEND_ROOT=$ROOT node --test test/)
test "$(cd "$OUT/project" && echo '{"a": 1,}' | npx --no-install toolmend)" = '{"a":1}'

echo "== cargo install --locked --path . (clean checkout)"
fresh_checkout "$OUT/checkout-cargo"
LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
timed "cargo install --locked --path ." cargo install -q --locked --path "$OUT/checkout-cargo" --root "$OUT/cargo-root" \
  --target-dir "$OUT/checkout-cargo/target"
test "$(echo '{"a": 1,}' | "$OUT/cargo-root/bin/toolmend")" = '{"a":1}'

{
  echo "sdist: $(du -k "$SDIST" | cut -f1) KiB"
  echo "installed _native (pip): $(du -k "$OUT"/venv-pip/lib/python*/site-packages/toolmend/_native*.so | cut -f1) KiB"
  echo "toolmend.node (npm): $(du -kL "$OUT/checkout-npm/node/toolmend.node" | cut -f1) KiB"
  echo "toolmend-cli (npm): $(du -kL "$OUT/checkout-npm/node/bin/toolmend-cli" | cut -f1) KiB"
  echo "toolmend (cargo install): $(du -k "$OUT/cargo-root/bin/toolmend" | cut -f1) KiB"
} | tee "$OUT/sizes.txt"
cat "$OUT/times.txt"
echo "test-install: 4 passed, 0 failed"
