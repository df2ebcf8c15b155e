// Where Node's per-call time goes (issue 30, item 3): `mendArgs` split into the native call
// alone (the string into the library and its value's JSON text back) and V8's JSON.parse of
// those texts, beside JSON.parse(jsonrepair(line)) and JSON.parse(line) alone, on the bench
// corpus's lines and on as many lines as agents send them (agent_lines.mjs). CPU time
// (process.cpuUsage) of each run, a full GC before each, rounds alternating; prints one JSON
// object per set with each way's median and minimum in seconds.
//
//   native_alone     the package's native value function (what mendArgs calls) on every line
//   parse_results    JSON.parse of its results, made before the rounds (what V8 building the
//                    objects costs: both objects ways pay it)
//   mendArgs         both together, as a caller calls it
//   jsonrepair       JSON.parse(jsonrepair(line))
//   parse_line       JSON.parse(line) (the lines it refuses throw and count little)
//
//   usage (from bench/work/, beside node_modules with toolmend and jsonrepair, and
//   agent_lines.mjs); pinning to one core (taskset -c 1) steadies it on a shared machine:
//     node --expose-gc percall_split.mjs ROUNDS CORPUS_FILE
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { jsonrepair } from 'jsonrepair';
import { agentLines } from './agent_lines.mjs';

const require = createRequire(import.meta.url);
const toolmend = require('toolmend');
const native = require(require.resolve('toolmend').replace(/index\.js$/, 'toolmend.node'));
const [roundsArg, corpusFile] = process.argv.slice(2);
const corpus = readFileSync(corpusFile, 'utf8').split('\n');
if (corpus.at(-1) === '') corpus.pop();
const sets = { corpus, agent: agentLines(corpus.length) };
// mendArgs's own native function: target object, cut-off arguments refused.
const value = native.valueFunction({ target: 'object', truncated: native.toolArgumentsTruncated() });

for (const [set, lines] of Object.entries(sets)) {
  const results = lines.map((line) => value(line)).filter((r) => typeof r === 'string');
  const ways = {
    native_alone: () => { for (const l of lines) value(l); },
    parse_results: () => { for (const r of results) JSON.parse(r); },
    mendArgs: () => { for (const l of lines) { try { toolmend.mendArgs(l); } catch {} } },
    jsonrepair: () => { for (const l of lines) { try { JSON.parse(jsonrepair(l)); } catch {} } },
    parse_line: () => { for (const l of lines) { try { JSON.parse(l); } catch {} } },
  };
  const names = Object.keys(ways);
  const cpu = Object.fromEntries(names.map((n) => [n, []]));
  const run = (n) => {
    globalThis.gc?.();
    const started = process.cpuUsage();
    ways[n]();
    const used = process.cpuUsage(started);
    return (used.user + used.system) / 1e6;
  };
  for (const n of names) run(n); // warm-up, untimed
  for (let r = 0; r < Number(roundsArg); r++) {
    for (const n of [...names.slice(r % names.length), ...names.slice(0, r % names.length)]) cpu[n].push(run(n));
  }
  const med = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
  const row = Object.fromEntries(names.map((n) => [n, { cpu_median_s: +med(cpu[n]).toFixed(3), cpu_min_s: +Math.min(...cpu[n]).toFixed(3) }]));
  console.log(JSON.stringify({ set, lines: lines.length, results: results.length, ...row,
    jsonrepair_over_mendArgs: +(med(cpu.jsonrepair) / med(cpu.mendArgs)).toFixed(2),
    jsonrepair_over_parse_results: +(med(cpu.jsonrepair) / med(cpu.parse_results)).toFixed(2) }));
}
