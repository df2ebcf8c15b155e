// Two builds of the Node package give the same results per call (issue 30, item 3: the per-call
// path changed, its results must not): `mendArgs`, `mendArgs` with `truncated: 'heal'` and
// `repair` of each package on every line of the given files and on agent lines
// (agent_lines.mjs), compared as the JSON text of the value or the error's code, message,
// offset and violations. Prints the first differences and {total, differ}; exits 1 if any.
//
//   usage: node percall_same.mjs OLD_PACKAGE_DIR NEW_PACKAGE_DIR FILE...
//   (each PACKAGE_DIR a folder holding the package, e.g. .../node_modules/toolmend)
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { agentLines } from './agent_lines.mjs';

const require = createRequire(import.meta.url);
const [oldDir, newDir, ...files] = process.argv.slice(2);
const old = require(oldDir);
const neu = require(newDir);
const sets = files.map((f) => [f, readFileSync(f, 'utf8').split('\n')]);
sets.push(['agent lines', agentLines(100000)]);
const outcome = (f) => {
  try {
    return JSON.stringify(f());
  } catch (e) {
    return 'error ' + JSON.stringify([e.code, e.message, e.offset, e.violations]);
  }
};
const calls = {
  mendArgs: (m, line) => m.mendArgs(line),
  mendArgsHeal: (m, line) => m.mendArgs(line, { truncated: 'heal' }),
  repair: (m, line) => m.repair(line),
};
let total = 0;
let differ = 0;
for (const [name, lines] of sets) {
  for (const line of lines) {
    for (const [what, call] of Object.entries(calls)) {
      total += 1;
      const a = outcome(() => call(old, line));
      const b = outcome(() => call(neu, line));
      if (a !== b) {
        differ += 1;
        if (differ <= 5) console.log('differ', name, what, JSON.stringify(line).slice(0, 200), a.slice(0, 200), b.slice(0, 200));
      }
    }
  }
}
console.log(JSON.stringify({ total, differ }));
process.exitCode = differ ? 1 : 0;
