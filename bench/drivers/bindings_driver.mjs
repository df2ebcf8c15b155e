// The Node package against jsonrepair in one process, on the lines of one corpus file (read
// into memory first, not timed). Rounds alternate the order of the ways; prints one JSON
// object: {times: {way: [seconds per round]}, failed: {way: count}}.
//
//   per_call_toolmend           toolmend.mendArgs(line) in a JS loop: an object back (or
//                               ToolmendError)
//   per_call_jsonrepair_objects JSON.parse(jsonrepair(line)): an object back
//   per_call_toolmend_text      mender.mend(line).json: the JSON text back (null on failure)
//   per_call_jsonrepair_text    jsonrepair(line): the JSON text back
//   per_call_toolmend_agent     toolmend.mendArgs(line) on as many lines as agents send them
//                               (agent_lines.mjs: the same five tools' arguments again and
//                               again, one in ten broken), made before the rounds
//   per_call_jsonrepair_agent   JSON.parse(jsonrepair(line)) on those agent lines
//   mend_many                   await toolmend.mendMany(lines): one call, off the main thread
//   cli                         `toolmend args FILE` (the package's binary), output thrown away:
//                               in the same rounds, so that mendMany's ratio to it is fair
//   objects_alone               JSON.parse of every line's result text, made untimed just
//                               before: what building the objects costs V8 on its own, a floor
//                               under both per-call objects ways (each parses the JSON text a
//                               library made); not a way to mend
//
// Every way runs once before the timed rounds, untimed (as `hyperfine --warmup`): a way's
// first run pays one-time costs (V8 compiling it, the first batch's fresh memory and threads)
// that no later run does. Before each run a full GC (with --expose-gc) leaves every way the
// same heap: without it a way that built objects of the corpus's shapes just before (V8 keeps
// the hidden classes until a full GC) made the next way's objects cheaper, by the order of the
// round alone.
//
// Each run's CPU time (process.cpuUsage: the main thread and V8's GC helpers) is kept beside
// its wall time: on a machine shared with other work it moves less than the wall time.
//
// usage: node --expose-gc bindings_driver.mjs FILE ROUNDS [WARMUP]   (run from bench/work/,
// beside node_modules and agent_lines.mjs)
import { readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import toolmend from 'toolmend';
import { jsonrepair } from 'jsonrepair';
import { agentLines } from './agent_lines.mjs';

const [file, roundsArg, warmupArg = '1'] = process.argv.slice(2);
const text = readFileSync(file, 'utf8');
const lines = text.split('\n');
if (lines[lines.length - 1] === '') lines.pop();
const agent = agentLines(lines.length);

// objects_alone's texts: toolmend's result for each line (null where it fails), made before
// each of its runs and dropped after, so that other ways do not carry them in their heap.
let results = null;
const prepare = {
  objects_alone: () => {
    const mender = new toolmend.Mender();
    results = lines.map((line) => mender.mend(line).json);
  },
};

const ways = {
  per_call_toolmend: async () => {
    let failed = 0;
    for (const line of lines) {
      try {
        toolmend.mendArgs(line);
      } catch (e) {
        if (!(e instanceof toolmend.ToolmendError)) throw e;
        failed += 1;
      }
    }
    return failed;
  },
  per_call_jsonrepair_objects: async () => {
    let failed = 0;
    for (const line of lines) {
      try {
        JSON.parse(jsonrepair(line));
      } catch {
        failed += 1;
      }
    }
    return failed;
  },
  per_call_toolmend_agent: async () => {
    let failed = 0;
    for (const line of agent) {
      try {
        toolmend.mendArgs(line);
      } catch (e) {
        if (!(e instanceof toolmend.ToolmendError)) throw e;
        failed += 1;
      }
    }
    return failed;
  },
  per_call_jsonrepair_agent: async () => {
    let failed = 0;
    for (const line of agent) {
      try {
        JSON.parse(jsonrepair(line));
      } catch {
        failed += 1;
      }
    }
    return failed;
  },
  per_call_toolmend_text: async () => {
    const mender = new toolmend.Mender();
    let failed = 0;
    for (const line of lines) if (mender.mend(line).json === null) failed += 1;
    return failed;
  },
  per_call_jsonrepair_text: async () => {
    let failed = 0;
    for (const line of lines) {
      try {
        jsonrepair(line);
      } catch {
        failed += 1;
      }
    }
    return failed;
  },
  mend_many: async () => (await toolmend.mendMany(lines)).filter((r) => !r.ok).length,
  objects_alone: async () => {
    let failed = 0;
    for (const text of results) {
      if (text === null) failed += 1;
      else JSON.parse(text);
    }
    return failed;
  },
  cli: async () => {
    spawnSync(toolmend.binaryPath(), ['args', file], { stdio: 'ignore' });
    return 0;
  },
};

const names = Object.keys(ways);
const times = Object.fromEntries(names.map((n) => [n, []]));
const cpu = Object.fromEntries(names.map((n) => [n, []]));
const failed = {};
const rounds = Number(roundsArg);
const run = async (n) => {
  prepare[n]?.();
  globalThis.gc?.();
  const cpuStarted = process.cpuUsage();
  const started = process.hrtime.bigint();
  failed[n] = await ways[n]();
  const took = Number(process.hrtime.bigint() - started) / 1e9;
  const used = process.cpuUsage(cpuStarted);
  results = null;
  // The CLI's CPU time is its own process's, which cpuUsage does not count.
  return [took, n === 'cli' ? null : (used.user + used.system) / 1e6];
};
for (let w = 0; w < Number(warmupArg); w++) {
  for (const n of names) await run(n);
}
for (let r = 0; r < rounds; r++) {
  for (const n of [...names.slice(r % names.length), ...names.slice(0, r % names.length)]) {
    const [took, used] = await run(n);
    times[n].push(took);
    cpu[n].push(used);
    process.stderr.write(`  round ${r + 1}: ${n} ${took.toFixed(3)}s (CPU ${used?.toFixed(3)}s)\n`);
  }
}
console.log(JSON.stringify({ times, cpu, failed, lines: lines.length }));
