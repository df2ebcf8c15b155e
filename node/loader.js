'use strict';
// Finds this platform's native parts, the way napi-rs packages ship them: first a build from
// source in this package (toolmend.node and bin/toolmend-cli, made by scripts/install.js or
// `make node-package`), else the prebuilt package for this platform, one of the optional
// dependencies (toolmend-linux-x64-gnu, …), which npm installs only where its os/cpu/libc fit.
const fs = require('node:fs');
const path = require('node:path');

/** The platforms prebuilt packages exist for: `toolmend-<key>` on npm, node/npm/<key>/ here. */
const PLATFORMS = [
  'linux-x64-gnu',
  'linux-arm64-gnu',
  'linux-x64-musl',
  'linux-arm64-musl',
  'darwin-x64',
  'darwin-arm64',
  'win32-x64-msvc',
];

function isMusl() {
  if (process.platform !== 'linux') return false;
  try {
    // glibc's Node reports the glibc it runs on; musl's reports none.
    return !process.report.getReport().header.glibcVersionRuntime;
  } catch {
    return fs.existsSync('/etc/alpine-release');
  }
}

/** This platform's key (`linux-x64-gnu`, `darwin-arm64`, `win32-x64-msvc`, …). */
function platformKey() {
  const { platform, arch } = process;
  if (platform === 'linux') return `linux-${arch}-${isMusl() ? 'musl' : 'gnu'}`;
  if (platform === 'win32') return `win32-${arch}-msvc`;
  return `${platform}-${arch}`;
}

const CLI = process.platform === 'win32' ? 'toolmend-cli.exe' : 'toolmend-cli';

/** The prebuilt package's folder, or null when it is not installed (or there is none). */
function prebuiltDir() {
  const key = platformKey();
  if (!PLATFORMS.includes(key)) return null;
  try {
    return path.dirname(require.resolve(`toolmend-${key}/package.json`));
  } catch {
    return null;
  }
}

/** The native module's path and the CLI's, or null where neither source has them. */
function find() {
  const local = path.join(__dirname, 'toolmend.node');
  if (fs.existsSync(local)) return { native: local, cli: path.join(__dirname, 'bin', CLI) };
  const dir = prebuiltDir();
  if (dir) return { native: path.join(dir, 'toolmend.node'), cli: path.join(dir, CLI) };
  return null;
}

/** The native module, or an error that says what was looked for and how to get it. */
function load() {
  const found = find();
  if (found) return require(found.native);
  const key = platformKey();
  const prebuilt = PLATFORMS.includes(key)
    ? `its optional dependency toolmend-${key} is not installed (was npm run with --omit=optional or --no-optional?)`
    : `no prebuilt package exists for ${key}`;
  throw new Error(
    `toolmend: no native module for this platform (${key}): ${prebuilt}, and it was not built ` +
      'from source (install Rust from https://rustup.rs, then reinstall from a checkout: ' +
      'npm install path/to/toolmend/node)',
  );
}

/** The CLI binary beside the native module found, or null. */
function cliPath() {
  const found = find();
  return found && fs.existsSync(found.cli) ? found.cli : null;
}

module.exports = { PLATFORMS, platformKey, find, load, cliPath };
