// mendMany of several builds of the Node package and the CLI on the same file, alternating in one
// process (node --expose-gc), so that mendMany's ratio to the CLI comes from one run. Per run of
// mendMany: wall; CPU (process.cpuUsage: every thread); CPU with a scavenge and then a full GC
// after it, counted (the records move out of V8's young generation at the next GC: a build
// whose records fit the young generation leaves that work to after the batch). The CLI: wall of
// `CLI args FILE` (output thrown away, as bench/drivers/bindings_driver.mjs runs it), CPU of
// `perf stat -e task-clock CLI args < FILE > /dev/null`. Medians and ranges.
//
//   usage (from bench/work/): node --expose-gc many_cli_ab.js FILE ROUNDS CLI DIR...
//   (each DIR a package directory: index.js, loader.js, package.json, toolmend.node)
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const [file, rounds, cli, ...dirs] = process.argv.slice(2);
const packages = dirs.map((d) => require(path.resolve(d, 'index.js')));
const lines = fs.readFileSync(file, 'utf8').split('\n');
if (lines[lines.length - 1] === '') lines.pop();
const R = dirs.map(() => ({ wall: [], cpu: [], minor: [], full: [] }));
const C = { wall: [], cpu: [] };
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e3; };
// The CLI's wall as the bench takes it (`toolmend args FILE`, output thrown away), then its CPU
// in a second run under perf stat.
function runCli() {
  const t = performance.now();
  spawnSync(cli, ['args', file], { stdio: 'ignore' });
  const wall = performance.now() - t;
  const fd = fs.openSync(file, 'r');
  const r = spawnSync('perf', ['stat', '-x,', '-e', 'task-clock', cli, 'args'], { stdio: [fd, 'ignore', 'pipe'] });
  fs.closeSync(fd);
  const line = r.stderr.toString().split('\n').find((l) => l.includes('task-clock'));
  return [wall, Number(line.split(',')[0])];
}
(async () => {
  for (const p of packages) await p.mendMany(lines);
  runCli();
  for (let r = 0; r < Number(rounds); r++) {
    const order = [...dirs.keys(), -1];
    for (let j = 0; j < order.length; j++) {
      const i = order[(j + r) % order.length];
      globalThis.gc();
      if (i < 0) { const [w, c] = runCli(); C.wall.push(w); C.cpu.push(c); continue; }
      const c0 = cpu(); const t = performance.now();
      let out = await packages[i].mendMany(lines);
      R[i].wall.push(performance.now() - t);
      const c1 = cpu();
      globalThis.gc({ type: 'minor' });
      const c2 = cpu();
      globalThis.gc();
      const c3 = cpu();
      out = null;
      R[i].cpu.push(c1 - c0); R[i].minor.push(c2 - c0); R[i].full.push(c3 - c0);
    }
  }
  const med = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
  const rng = (a) => `${Math.min(...a).toFixed(0)}-${Math.max(...a).toFixed(0)}`;
  const cw = med(C.wall);
  console.log('cli   ', 'wall', cw.toFixed(1), rng(C.wall), '| CPU', med(C.cpu).toFixed(1), rng(C.cpu));
  dirs.forEach((d, i) => console.log(d, 'wall', med(R[i].wall).toFixed(1), rng(R[i].wall), `(${(med(R[i].wall) / cw).toFixed(2)}x CLI)`,
    '| CPU', med(R[i].cpu).toFixed(1), rng(R[i].cpu), '| +scavenge', med(R[i].minor).toFixed(1), rng(R[i].minor), '| +full GC', med(R[i].full).toFixed(1), rng(R[i].full)));
})();
