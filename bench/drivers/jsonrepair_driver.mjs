// Drives jsonrepair (JavaScript) line by line in one process: each line of stdin is repaired
// with jsonrepair() and written as one line on stdout (the library's own JSON text).
// A line it cannot mend (it throws) gets a short error line on stderr.
import { createInterface } from 'node:readline';
import { jsonrepair } from 'jsonrepair';

const out = [];
let pending = 0;
function flush() {
  if (out.length) {
    process.stdout.write(out.join(''));
    out.length = 0;
    pending = 0;
  }
}

let number = 0;
const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  number += 1;
  try {
    const text = jsonrepair(line);
    out.push(text, '\n');
    pending += text.length;
  } catch (e) {
    process.stderr.write(`line ${number}: ${e.message}\n`);
  }
  if (pending > 1 << 16) flush();
}
flush();
