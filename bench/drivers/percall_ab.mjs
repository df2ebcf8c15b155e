// Node per call, objects back, before and after the UTF-16 string path (nodeperf): the path
// mendArgs took before (isWellFormed in JS, then the native mendValue, the text crossing as
// UTF-8 both ways), mendArgs now (the native mendString: UTF-16 in, Latin-1/UTF-16 out), and
// JSON.parse(jsonrepair(line)), alternating in one process. Prints medians and minimums.
//
//   usage (from bench/work/, beside node_modules): node percall_ab.mjs FILE ROUNDS [LINES]
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import toolmend from 'toolmend';
import { jsonrepair } from 'jsonrepair';
const require = createRequire(import.meta.url);
const native = require('toolmend/toolmend.node');
const [file, roundsArg, countArg] = process.argv.slice(2);
let lines = readFileSync(file, 'utf8').split('\n');
if (lines.at(-1) === '') lines.pop();
lines = lines.slice(0, Number(countArg || lines.length));
const m = new native.Mender({});
const ways = {
  before: () => { for (const l of lines) { if (!l.isWellFormed()) continue; const o = m.mendValue(l); if (typeof o === 'string') JSON.parse(o); } },
  now: () => { for (const l of lines) { try { toolmend.mendArgs(l); } catch {} } },
  jsonrepair: () => { for (const l of lines) { try { JSON.parse(jsonrepair(l)); } catch {} } },
};
const names = Object.keys(ways);
const times = Object.fromEntries(names.map((n) => [n, []]));
for (let r = 0; r < Number(roundsArg); r++) {
  for (const n of [...names.slice(r % 3), ...names.slice(0, r % 3)]) {
    const t = process.hrtime.bigint();
    ways[n]();
    times[n].push(Number(process.hrtime.bigint() - t) / 1e9);
  }
}
const med = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const out = Object.fromEntries(names.map((n) => [n, { median_s: +med(times[n]).toFixed(3), min_s: +Math.min(...times[n]).toFixed(3) }]));
console.log(JSON.stringify(out), 'jsonrepair/before', (med(times.jsonrepair) / med(times.before)).toFixed(2), 'jsonrepair/now', (med(times.jsonrepair) / med(times.now)).toFixed(2));
