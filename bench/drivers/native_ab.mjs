// The native part of Node's mendArgs alone (the package's value function: the string into the
// library, its value's JSON text back, no JSON.parse), for several builds of the package,
// alternating in one process; CPU time (process.cpuUsage) of each run over every line, median
// and range. For instructions, run one build under
// `valgrind --tool=callgrind --toggle-collect='toolmend_node::value::call' node --jitless`
// with an unstripped toolmend.node.
//
//   usage (from bench/work/): node native_ab.mjs FILE ROUNDS DIR...   (each DIR a package
//   directory holding its toolmend.node)
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const [file, rounds, ...dirs] = process.argv.slice(2);
const lines = readFileSync(file, 'utf8').split('\n');
if (lines.at(-1) === '') lines.pop();
const fns = dirs.map((d) => {
  const native = require(d + '/toolmend.node');
  return native.valueFunction({ target: 'object', truncated: native.toolArgumentsTruncated() });
});
const cpu = dirs.map(() => []);
for (let r = 0; r < Number(rounds); r++) {
  for (let j = 0; j < dirs.length; j++) {
    const i = (j + r) % dirs.length;
    const f = fns[i];
    const started = process.cpuUsage();
    for (const l of lines) f(l);
    const used = process.cpuUsage(started);
    cpu[i].push((used.user + used.system) / 1e6);
  }
}
const med = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
dirs.forEach((d, i) => console.log(d, 'CPU median', med(cpu[i]).toFixed(3), 's, range', Math.min(...cpu[i]).toFixed(3), '-', Math.max(...cpu[i]).toFixed(3)));
