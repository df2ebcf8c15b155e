// Node per call, objects back: two builds of the package (before and after a change) and
// JSON.parse(jsonrepair(line)), alternating in one process, a full GC before each run, on the
// agent lines (agent_lines.mjs: the same tools' arguments again and again) and on a corpus file.
// Prints each way's median and minimum and the ratios to jsonrepair.
//
//   usage (from bench/work/, beside node_modules/jsonrepair):
//     node --expose-gc percall_packages.mjs ROUNDS LINES CORPUS_FILE BEFORE_DIR AFTER_DIR
//   (each DIR a package directory: index.js, loader.js, package.json and the release toolmend.node)
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { jsonrepair } from 'jsonrepair';
import { agentLines } from './agent_lines.mjs';

const [roundsArg, countArg, corpusFile, beforeDir, afterDir] = process.argv.slice(2);
const require = createRequire(import.meta.url);
const before = require(beforeDir + '/index.js');
const after = require(afterDir + '/index.js');
const count = Number(countArg);
let corpus = readFileSync(corpusFile, 'utf8').split('\n');
if (corpus.at(-1) === '') corpus.pop();
const sets = { agent: agentLines(count), corpus: corpus.slice(0, count) };
const ways = {
  before: (lines) => { for (const l of lines) { try { before.mendArgs(l); } catch {} } },
  after: (lines) => { for (const l of lines) { try { after.mendArgs(l); } catch {} } },
  jsonrepair: (lines) => { for (const l of lines) { try { JSON.parse(jsonrepair(l)); } catch {} } },
};
const names = Object.keys(ways);
for (const [name, lines] of Object.entries(sets)) {
  const times = Object.fromEntries(names.map((n) => [n, []]));
  for (const n of names) ways[n](lines); // warm-up, untimed
  for (let r = 0; r < Number(roundsArg); r++) {
    for (const n of [...names.slice(r % names.length), ...names.slice(0, r % names.length)]) {
      globalThis.gc?.();
      const t = process.hrtime.bigint();
      ways[n](lines);
      times[n].push(Number(process.hrtime.bigint() - t) / 1e9);
    }
  }
  const med = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
  const row = Object.fromEntries(names.map((n) => [n, { median_s: +med(times[n]).toFixed(3), min_s: +Math.min(...times[n]).toFixed(3) }]));
  console.log(JSON.stringify({ set: name, lines: lines.length, ...row,
    jsonrepair_over_before: +(med(times.jsonrepair) / med(times.before)).toFixed(2),
    jsonrepair_over_after: +(med(times.jsonrepair) / med(times.after)).toFixed(2) }));
}
