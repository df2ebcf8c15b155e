#!/usr/bin/env node
'use strict';
// npm's install step. Installed from a checkout of the repository (`npm install ./node`) with
// Rust present, it builds the native module and the CLI from that source, in one cargo run, so
// the checkout's own code is what runs (TOOLMEND_BUILD_PROFILE=debug builds faster, runs
// slower). Installed from the registry, there is nothing to build: the prebuilt optional
// dependency for this platform carries both; where none fits, it says so.
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const loader = require('../loader.js');

const pkg = path.resolve(__dirname, '..');
const root = path.resolve(pkg, '..');

function fail(message) {
  process.stderr.write(`toolmend: ${message}\n`);
  process.exit(1);
}

const key = loader.platformKey();
const inCheckout =
  fs.existsSync(path.join(root, 'Cargo.toml')) && fs.existsSync(path.join(root, 'crates', 'toolmend-core'));
const cargo = process.env.CARGO || 'cargo';
const hasCargo = inCheckout && spawnSync(cargo, ['--version'], { stdio: 'ignore' }).status === 0;
if (!hasCargo && loader.find()) process.exit(0);
if (!inCheckout) {
  fail(
    `no native module for ${key}: its prebuilt package toolmend-${key} is not installed ` +
      '(npm install without --omit=optional), and this is no checkout of the repository to ' +
      'build from (clone it, install Rust from https://rustup.rs, then npm install path/to/toolmend/node)',
  );
}
if (!hasCargo) {
  fail(`no prebuilt native module for ${key}, and no cargo to build one: install Rust from https://rustup.rs`);
}

const profile = process.env.TOOLMEND_BUILD_PROFILE === 'debug' ? 'debug' : 'release';
const args = ['build', '--locked', '-p', 'toolmend-node', '-p', 'toolmend'];
if (profile === 'release') args.push('--release');
process.stderr.write(`toolmend: building the native module and the CLI from source (cargo ${args.join(' ')})\n`);
const built = spawnSync(cargo, args, { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
if (built.status !== 0) fail(`cargo ${args.join(' ')} failed (status ${built.status ?? built.signal})`);

const target = process.env.CARGO_TARGET_DIR ? path.resolve(root, process.env.CARGO_TARGET_DIR) : path.join(root, 'target');
const out = path.join(target, profile);
const library = ['libtoolmend_node.so', 'libtoolmend_node.dylib', 'toolmend_node.dll']
  .map((name) => path.join(out, name))
  .find((file) => fs.existsSync(file));
const exe = process.platform === 'win32' ? '.exe' : '';
if (!library) fail(`cargo built no toolmend_node library in ${out}`);
fs.mkdirSync(path.join(pkg, 'bin'), { recursive: true });
fs.copyFileSync(library, path.join(pkg, 'toolmend.node'));
fs.copyFileSync(path.join(out, `toolmend${exe}`), path.join(pkg, 'bin', `toolmend-cli${exe}`));
fs.chmodSync(path.join(pkg, 'bin', `toolmend-cli${exe}`), 0o755);
