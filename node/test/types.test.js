'use strict';
// The package's types (index.d.ts) compile for a strict TypeScript user: test/types/consumer.ts
// through the TypeScript compiler from npm (`make test-node` installs typescript and
// @types/node into the test project), with --strict and without skipLibCheck. Issue 25: a class
// named `Record` hid TypeScript's Record<K, V> (TS2315).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const project = path.resolve(__dirname, '..');
const tsc = path.join(project, 'node_modules', 'typescript', 'bin', 'tsc');

test('a strict TypeScript consumer compiles against index.d.ts', (t) => {
  if (!fs.existsSync(tsc)) {
    t.skip('typescript is not installed in the test project (make test-node installs it)');
    return;
  }
  const consumer = path.join(__dirname, 'types', 'consumer.ts');
  const r = spawnSync(
    process.execPath,
    [tsc, '--strict', '--noEmit', '--module', 'commonjs', '--target', 'es2022', '--moduleResolution', 'node',
      '--types', 'node', consumer],
    { cwd: project, encoding: 'utf8' },
  );
  assert.equal(r.status, 0, `tsc failed:\n${r.stdout}${r.stderr}`);
});
