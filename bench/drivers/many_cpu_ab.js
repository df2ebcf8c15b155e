// mendMany of several builds of the Node package, alternating in one process, a full GC before
// each run (node --expose-gc): wall time and CPU time (process.cpuUsage: every thread of the
// process, the mending threads included), median and minimum of each.
//
//   usage (from bench/work/): node --expose-gc many_cpu_ab.js FILE ROUNDS DIR...
//   (each DIR a package directory: index.js, loader.js, package.json, toolmend.node)
const fs = require('node:fs');
const path = require('node:path');

const [file, rounds, ...dirs] = process.argv.slice(2);
const packages = dirs.map((d) => require(path.resolve(d, 'index.js')));
const lines = fs.readFileSync(file, 'utf8').split('\n');
if (lines[lines.length - 1] === '') lines.pop();
const wall = dirs.map(() => []);
const cpu = dirs.map(() => []);
(async () => {
  for (const p of packages) await p.mendMany(lines); // warm-up, untimed
  for (let r = 0; r < Number(rounds); r++) {
    for (let j = 0; j < dirs.length; j++) {
      const i = (j + r) % dirs.length;
      globalThis.gc();
      const c = process.cpuUsage();
      const t = process.hrtime.bigint();
      await packages[i].mendMany(lines);
      wall[i].push(Number(process.hrtime.bigint() - t) / 1e6);
      const u = process.cpuUsage(c);
      cpu[i].push((u.user + u.system) / 1e3);
    }
  }
  const med = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
  dirs.forEach((d, i) => console.log(d, 'wall median', med(wall[i]).toFixed(1), 'ms, min', Math.min(...wall[i]).toFixed(1),
    '| CPU median', med(cpu[i]).toFixed(1), 'ms, min', Math.min(...cpu[i]).toFixed(1)));
})();
