#!/usr/bin/env node
'use strict';
// Release step: `node scripts/stage.js KEY DIR` copies the native module and the CLI that cargo
// built in DIR (target/<triple>/release) into npm/KEY/, the prebuilt package for platform KEY
// (linux-x64-gnu, …), ready for `npm publish npm/KEY`.
const fs = require('node:fs');
const path = require('node:path');
const { PLATFORMS } = require('../loader.js');

const [key, dir] = process.argv.slice(2);
if (!PLATFORMS.includes(key) || !dir) {
  process.stderr.write(`usage: stage.js KEY DIR (KEY one of ${PLATFORMS.join(', ')})\n`);
  process.exit(2);
}
const windows = key.startsWith('win32-');
const library = (windows ? ['toolmend_node.dll'] : ['libtoolmend_node.so', 'libtoolmend_node.dylib'])
  .map((name) => path.join(dir, name))
  .find((file) => fs.existsSync(file));
if (!library) {
  process.stderr.write(`stage.js: no toolmend_node library in ${dir}\n`);
  process.exit(1);
}
const out = path.join(__dirname, '..', 'npm', key);
const cli = windows ? 'toolmend-cli.exe' : 'toolmend-cli';
fs.copyFileSync(library, path.join(out, 'toolmend.node'));
fs.copyFileSync(path.join(dir, windows ? 'toolmend.exe' : 'toolmend'), path.join(out, cli));
fs.chmodSync(path.join(out, cli), 0o755);
process.stdout.write(`staged ${path.relative(process.cwd(), out)}: toolmend.node, ${cli}\n`);
