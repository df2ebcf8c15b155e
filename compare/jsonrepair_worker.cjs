// Runs jsonrepair over many inputs in one process.
// stdin: one JSON string per line (the raw input). stdout: one JSON record per line:
//   {"ok":true,"text":"<repaired JSON text>","ms":0.12}  or  {"ok":false,"error":"...","ms":0.12}
// The repaired text is checked with JSON.parse but returned as text, so that the comparison
// sees numbers exactly as jsonrepair wrote them (JSON.parse would round big integers).
'use strict';
const path = require('path');
const readline = require('readline');

const work = process.argv[2];
const { jsonrepair } = require(path.join(work, 'node_modules', 'jsonrepair'));

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
const out = [];
rl.on('line', (line) => {
  if (line === '') return;
  const input = JSON.parse(line);
  const t0 = process.hrtime.bigint();
  let rec;
  try {
    const text = jsonrepair(input);
    JSON.parse(text);
    rec = { ok: true, text };
  } catch (e) {
    rec = { ok: false, error: String(e && e.message ? e.message : e) };
  }
  rec.ms = Number(process.hrtime.bigint() - t0) / 1e6;
  out.push(JSON.stringify(rec));
  if (out.length >= 256) {
    process.stdout.write(out.join('\n') + '\n');
    out.length = 0;
  }
});
rl.on('close', () => {
  if (out.length) process.stdout.write(out.join('\n') + '\n');
});
