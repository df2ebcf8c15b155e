// mendMany of two builds of the Node package and the CLI, alternating in one process: the
// before/after figure of notes/nodeperf.md. OLD and NEW are directories each holding a
// package's index.js and toolmend.node (e.g. OLD built from 4c1f4a7 with
// `cargo build --release -p toolmend-node`, libtoolmend_node.so copied as toolmend.node).
//
//   usage: node many_ab.js FILE ROUNDS OLD NEW CLI
const fs = require('fs'); const { spawnSync } = require('child_process');
const [file, rounds, oldDir, newDir, cli] = process.argv.slice(2);
const path = require('path');
const old = require(path.resolve(oldDir, 'index.js')); const now = require(path.resolve(newDir, 'index.js'));
const lines = fs.readFileSync(file, 'utf8').split('\n'); lines.pop();
const ways = {
  before: async () => (await old.mendMany(lines)).filter((r) => !r.ok).length,
  now: async () => (await now.mendMany(lines)).filter((r) => !r.ok).length,
  cli: async () => spawnSync(cli, ['args', file], { stdio: 'ignore' }),
};
const names = Object.keys(ways); const times = Object.fromEntries(names.map((n) => [n, []]));
(async () => {
  for (let r = 0; r < Number(rounds); r++) {
    for (const n of [...names.slice(r % 3), ...names.slice(0, r % 3)]) {
      const t = process.hrtime.bigint(); await ways[n](); times[n].push(Number(process.hrtime.bigint() - t) / 1e9);
    }
  }
  const med = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
  for (const n of names) console.log(n, 'median', med(times[n]).toFixed(3), 'min', Math.min(...times[n]).toFixed(3), 'runs', times[n].map((t) => t.toFixed(3)).join(' '));
  console.log('before/cli', (med(times.before) / med(times.cli)).toFixed(2), 'now/cli', (med(times.now) / med(times.cli)).toFixed(2));
})();
