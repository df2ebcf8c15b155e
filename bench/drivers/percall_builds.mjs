// Node per call, two builds of the package against each other and against jsonrepair (issue
// 30, item 3): `mendArgs(line)` of each and JSON.parse(jsonrepair(line)), on the bench corpus's
// lines and on as many agent lines (agent_lines.mjs); rounds alternate the order, a full GC
// before each run; prints per set each way's median wall and CPU seconds and jsonrepair's
// ratio to each build. Pinning to one core (taskset -c 1) steadies it on a shared machine.
//
//   usage: node --expose-gc percall_builds.mjs OLD_PACKAGE_DIR NEW_PACKAGE_DIR JSONREPAIR_DIR ROUNDS FILE
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { agentLines } from './agent_lines.mjs';

const require = createRequire(import.meta.url);
const [oldDir, newDir, jsonrepairDir, roundsArg, file] = process.argv.slice(2);
const old = require(oldDir);
const neu = require(newDir);
const { jsonrepair } = require(jsonrepairDir);
const corpus = readFileSync(file, 'utf8').split('\n');
if (corpus.at(-1) === '') corpus.pop();
const sets = { corpus, agent: agentLines(corpus.length) };
const med = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
for (const [set, lines] of Object.entries(sets)) {
  const ways = {
    old: () => { for (const l of lines) { try { old.mendArgs(l); } catch {} } },
    new: () => { for (const l of lines) { try { neu.mendArgs(l); } catch {} } },
    jsonrepair: () => { for (const l of lines) { try { JSON.parse(jsonrepair(l)); } catch {} } },
  };
  const names = Object.keys(ways);
  const wall = Object.fromEntries(names.map((n) => [n, []]));
  const cpu = Object.fromEntries(names.map((n) => [n, []]));
  const run = (n) => {
    globalThis.gc?.();
    const c = process.cpuUsage();
    const t = process.hrtime.bigint();
    ways[n]();
    const w = Number(process.hrtime.bigint() - t) / 1e9;
    const u = process.cpuUsage(c);
    return [w, (u.user + u.system) / 1e6];
  };
  for (const n of names) run(n); // warm-up, untimed
  for (let r = 0; r < Number(roundsArg); r++) {
    for (const n of [...names.slice(r % 3), ...names.slice(0, r % 3)]) {
      const [w, c] = run(n);
      wall[n].push(w);
      cpu[n].push(c);
    }
  }
  const out = { set, lines: lines.length };
  for (const n of names) out[n] = { wall_s: +med(wall[n]).toFixed(3), cpu_s: +med(cpu[n]).toFixed(3) };
  for (const n of ['old', 'new']) {
    out[`jsonrepair_over_${n}`] = {
      wall: +(med(wall.jsonrepair) / med(wall[n])).toFixed(2),
      cpu: +(med(cpu.jsonrepair) / med(cpu[n])).toFixed(2),
    };
  }
  console.log(JSON.stringify(out));
}
