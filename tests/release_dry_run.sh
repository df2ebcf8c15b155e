#!/usr/bin/env bash
# The release workflow's steps for linux-x64-gnu, dry-run here in the debug profile (the
# workflow builds release, with zig for glibc 2.17): the module and the CLI built in one cargo
# run, staged into the npm platform package (node/scripts/stage.js), that package and the main
# one installed into a fresh project as a user gets them (the loader finds the prebuilt package:
# no toolmend.node in the main one), and the CLI archive made and run.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/target/release-dry-run
KEY=linux-x64-gnu
TRIPLE=x86_64-unknown-linux-gnu
rm -rf "$OUT" && mkdir -p "$OUT/project" "$OUT/main" "$OUT/dist"
[ "$(uname -sm)" = "Linux x86_64" ] || { echo "release dry run: Linux x86_64 only; skipped"; exit 0; }

cargo build --locked -p toolmend-node -p toolmend
node node/scripts/stage.js "$KEY" target/debug

# The main package as npm publishes it from a clean checkout: no native parts of its own.
git ls-files -z node | tar --null -T - -cf - | tar -xf - -C "$OUT/main"
(cd "$OUT/main/node" && npm pack --silent --pack-destination "$OUT/project" >/dev/null)
cd "$OUT/project"
npm init -y >/dev/null
npm install --silent --no-audit --no-fund --omit=optional "$ROOT/node/npm/$KEY" ./toolmend-*.tgz
test ! -e node_modules/toolmend/toolmend.node
node -e "
  const t = require('toolmend');
  const got = JSON.stringify(t.repair('[1, 2'));
  if (got !== '[1,2]') { console.error('repair gave', got); process.exit(1); }
  if (!t.binaryPath().includes('$KEY')) { console.error('CLI from', t.binaryPath()); process.exit(1); }
"
test "$(echo '{"a": 1,}' | npx --no-install toolmend)" = '{"a":1}'
echo "npm platform package $KEY: installed through the loader, module and npx toolmend work"

# The CLI archive, as the workflow makes it.
name=toolmend-0.0.0-dry-run-$TRIPLE
mkdir -p "$OUT/dist/$name"
cp "$ROOT/README.md" "$ROOT/LICENSE-MIT" "$ROOT/LICENSE-APACHE" "$ROOT/target/debug/toolmend" "$OUT/dist/$name/"
tar -C "$OUT/dist" -czf "$OUT/dist/$name.tar.gz" "$name"
mkdir -p "$OUT/unpacked" && tar -C "$OUT/unpacked" -xzf "$OUT/dist/$name.tar.gz"
test "$(echo '{"a": 1,}' | "$OUT/unpacked/$name/toolmend")" = '{"a":1}'
echo "CLI archive $name.tar.gz: unpacked and run"
echo "release dry run: 2 passed, 0 failed"
