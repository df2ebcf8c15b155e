// Node per call, objects back, on what real agents send (agent_lines.mjs: the same few tools'
// arguments again and again, one in ten broken). Each way alternates with the others in one process, a full GC
// before each run (`node --expose-gc`); prints the median and minimum of each way and the
// ratios. Also the bench corpus's lines, when a file is given.
//
//   usage (from bench/work/, beside node_modules with toolmend and jsonrepair):
//     node --expose-gc agent_args.mjs ROUNDS [LINES] [CORPUS_FILE]
import { readFileSync } from 'node:fs';
import toolmend from 'toolmend';
import { jsonrepair } from 'jsonrepair';
import { agentLines } from './agent_lines.mjs';

const [roundsArg, countArg, corpusFile] = process.argv.slice(2);
const rounds = Number(roundsArg || 5);
const count = Number(countArg || 100000);

const sets = { agent: agentLines(count) };
if (corpusFile) {
  let lines = readFileSync(corpusFile, 'utf8').split('\n');
  if (lines.at(-1) === '') lines.pop();
  sets.corpus = lines.slice(0, count);
}

const ways = {
  mendArgs: (lines) => { for (const l of lines) { try { toolmend.mendArgs(l); } catch {} } },
  jsonrepair: (lines) => { for (const l of lines) { try { JSON.parse(jsonrepair(l)); } catch {} } },
  // The floor of both: V8 parsing the text it is given (the broken lines fail and are skipped).
  'JSON.parse': (lines) => { for (const l of lines) { try { JSON.parse(l); } catch {} } },
};

for (const [name, lines] of Object.entries(sets)) {
  const bytes = lines.reduce((n, l) => n + Buffer.byteLength(l), 0);
  const names = Object.keys(ways);
  const times = Object.fromEntries(names.map((n) => [n, []]));
  for (const n of names) ways[n](lines); // warm-up, untimed
  for (let r = 0; r < rounds; r++) {
    for (const n of [...names.slice(r % names.length), ...names.slice(0, r % names.length)]) {
      globalThis.gc?.();
      const t = process.hrtime.bigint();
      ways[n](lines);
      times[n].push(Number(process.hrtime.bigint() - t) / 1e9);
    }
  }
  const med = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
  const row = Object.fromEntries(names.map((n) => [n, { median_s: +med(times[n]).toFixed(3), min_s: +Math.min(...times[n]).toFixed(3) }]));
  console.log(JSON.stringify({ set: name, lines: lines.length, MB: +(bytes / 1e6).toFixed(1), ...row,
    jsonrepair_over_mendArgs: +(med(times.jsonrepair) / med(times.mendArgs)).toFixed(2),
    mendArgs_over_JSON_parse: +(med(times.mendArgs) / med(times['JSON.parse'])).toFixed(2) }));
}
