#!/usr/bin/env node
'use strict';
// `npx toolmend …`: runs the toolmend binary this package ships, with this process's stdio,
// and ends with its exit status (or its signal).
const { spawnSync } = require('node:child_process');
const { binaryPath } = require('..');

let bin;
try {
  bin = binaryPath();
} catch (e) {
  process.stderr.write(`toolmend: ${e.message}\n`);
  process.exit(2);
}
const run = spawnSync(bin, process.argv.slice(2), { stdio: 'inherit' });
if (run.error) {
  process.stderr.write(`toolmend: cannot run ${bin}: ${run.error.message}\n`);
  process.exit(2);
}
if (run.signal) process.kill(process.pid, run.signal);
process.exit(run.status ?? 1);
