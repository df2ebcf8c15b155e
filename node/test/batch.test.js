'use strict';
// mendMany's bulk path (every input copied into the native module at once, every record back
// in a few long strings, fields read lazily) against the one-input path (Mender.mend): the
// same records, field by field, on inputs that are easy to get wrong.
const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync, spawnSync } = require('node:child_process');

const toolmend = require('toolmend');

/** Every field and getter of a record, and its own keys in order. */
function fields(record) {
  assert.ok(record instanceof toolmend.MendRecord);
  assert.strictEqual(toolmend.Record, toolmend.MendRecord);
  // Parsed once: the same value each time it is read.
  assert.strictEqual(record.value, record.value);
  return {
    keys: Object.keys(record),
    ok: record.ok,
    json: record.json,
    code: record.code,
    message: record.message,
    offset: record.offset,
    original: record.original,
    violations: record.violations,
    value: record.value,
    repairs: record.repairs,
    dropped: record.dropped,
    toJSON: record.toJSON(),
  };
}

const BIG = 1 << 18;
const TRICKY = [
  '',
  ' ',
  '\u0000',
  '{"a": "x\u0000y"}',
  '{"a\u0000": 1}\u0000',
  '{"a": 1}\u0000{"b": 2}',
  // Lone surrogates: high, low, reversed, at either end, and a pair split over two inputs.
  '\ud800',
  '\udfff',
  '{"a": "\udc00\ud800"}',
  '{"a": "x"}\ud83d',
  '\ude00{"a": "x"}',
  '{"a": "\ud83d',
  '\ude00"}',
  // Astral characters, whole and cut off, in values and keys.
  '{"e": "😀", "😀": "𝄞"}',
  "{'a': '𝄞𝄞',}",
  '{"a": "😀',
  '"{\\"a\\": \\"\\ud83d\\ude00\\"}"',
  '{"a": "\\ud800"}',
  // Latin-1 only, other scripts, and a mix in one input.
  '{"a": "café ÿ"}',
  '{"a": "日本語", "b": "ελληνικά",}',
  '{"a": "é", "b": "語"}',
  // Valid compact JSON (a batch's record takes the input string itself as its json), and
  // the same as bytes (whose json is a new string).
  '{"a":1}',
  '{"a":"café","b":[1,2.50,null]}',
  '{"e":"😀","語":"ελληνικά"}',
  '"x"',
  Buffer.from('{"a":"é"}'),
  // Repairs, dropped values, failures with and without an offset.
  "```json\n{'path': 'a.txt', 'force': True,}\n```",
  '{"a": 1}{"b": 2} {"c": [3]}',
  '[1, 2]',
  '{"a": ',
  'no json here',
  '{"id": 123456789012345678901234567890, "f": 1.50, "e": 1E400, "n": -0}',
  // Huge: mended, and (over maxBytes) refused.
  '{"a": "' + 'x'.repeat(BIG) + '"}',
  '{"é": "' + 'é'.repeat(BIG) + '", "z": "語"}',
  '{"a": "' + '語'.repeat(BIG) + '",',
  // Not strings: bytes and anything else.
  Buffer.from('{"city": "Zürich"}'),
  Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x20, 0x22, 0xff, 0x22, 0x7d]),
  new Uint8Array([0x7b, 0x7d]),
  new Uint8Array(Buffer.from('xx{"a": [1, 2,]}xx')).subarray(2, 16),
  Buffer.alloc(0),
  null,
  undefined,
  3,
  true,
  { a: 1 },
  ['{}'],
  new Uint16Array([0x7b, 0x7d]),
  10n,
];

function oneByOne(inputs, options) {
  const mender = new toolmend.Mender(options);
  return inputs.map((t) => fields(mender.mend(t)));
}

for (const options of [undefined, { target: 'any' }, { concat: 'all' }, { strict: true }, { maxBytes: 1000 }, { truncated: 'error' }]) {
  test(`mendMany gives the records of Mender.mend, field by field (${JSON.stringify(options)})`, async () => {
    const want = oneByOne(TRICKY, options);
    for (const threads of [1, 2, 0]) {
      const o = { ...options, threads };
      assert.deepEqual(toolmend.mendManySync(TRICKY, o).map(fields), want, `mendManySync, ${threads} threads`);
      assert.deepEqual((await toolmend.mendMany(TRICKY, o)).map(fields), want, `mendMany, ${threads} threads`);
    }
  });
}

test('the bulk path on many inputs: parts of the batch end anywhere, values of every width', async () => {
  const inputs = [];
  for (let i = 0; i < 30000; i++) {
    const pad = ['x', 'é', '語', '😀'][i % 4].repeat(i % 97);
    inputs.push(i % 1000 === 7 ? '\ud800' + pad : `{"n": ${i}, "pad": "${pad}", 'q': True,}`);
  }
  const want = oneByOne(inputs);
  const got = (await toolmend.mendMany(inputs)).map(fields);
  assert.equal(got.length, want.length);
  got.forEach((g, i) => assert.deepEqual(g, want[i], String(i)));
});

test('a batch many times larger than the ring of buffers: every thread count, bytes and non-text throughout', async () => {
  // Parts are cut at about 128 Ki units or 4096 inputs; the ring holds two per thread and two
  // more, so these batches go round it many times (mendMany is fed in many turns).
  const inputs = [];
  for (let i = 0; i < 40000; i++) {
    const text = `{"i": ${i}, "s": "${'ab語'.repeat(i % 50)}",}`;
    if (i % 997 === 3) inputs.push(Buffer.from(text));
    else if (i % 1009 === 5) inputs.push(i % 2 ? null : 42);
    else inputs.push(i % 5000 === 0 ? 'x'.repeat(300000) : text);
  }
  const want = oneByOne(inputs);
  for (const threads of [1, 3]) {
    const sync = toolmend.mendManySync(inputs, { threads }).map(fields);
    const async = (await toolmend.mendMany(inputs, { threads })).map(fields);
    assert.equal(sync.length, want.length);
    assert.equal(async.length, want.length);
    sync.forEach((g, i) => assert.deepEqual(g, want[i], `sync ${threads} ${i}`));
    async.forEach((g, i) => assert.deepEqual(g, want[i], `async ${threads} ${i}`));
  }
});

test('a batch the native module cannot read fails whole, its threads end and the process exits', () => {
  // index.js never gives such a batch (a length that says string for a number); the native
  // module must still throw, stop its threads and let go of its call back.
  const script = `
    const native = require(${JSON.stringify(require.resolve('toolmend/toolmend.node'))});
    const texts = Array.from({ length: 50000 }, (_, i) => (i === 49999 ? 5 : '{"a": ' + i + '}'));
    const lengths = Float64Array.from(texts, (t) => String(t).length);
    let threw = 0;
    try { native.mendManySync(texts, lengths, { threads: 2 }); } catch (e) { threw += 1; }
    const many = new native.Many(lengths, { threads: 2 }, () => {
      try { many.feed(texts); } catch (e) { threw += 1; many.abort(); }
    });
    try { many.feed(texts); } catch (e) { threw += 1; many.abort(); }
    process.on('exit', () => console.log('threw', threw));
  `;
  const out = execFileSync(process.execPath, ['-e', script], { timeout: 20000 }).toString();
  assert.equal(out.trim(), 'threw 2');
});

// Batches in a process of their own (--expose-gc, a fresh pool of segment buffers): every
// record against Mender.mend; the records of two batches are kept while later batches write
// into the buffers V8 let go of, and checked again at the end (a buffer reused while a string
// still shows it would change them). Prints the bad records and how much external memory
// the kept records hold.
const REUSE = `
  const toolmend = require('toolmend');
  const mender = new toolmend.Mender();
  const texts = (k) => Array.from({ length: 20000 }, (_, i) =>
    '{"i": ' + i + ', "s": "' + ['ab', 'é', '語', '😀'][(i + k) % 4].repeat((i * 7 + k * 13) % 400) + '",}');
  const check = (inputs, records) => {
    let bad = 0;
    records.forEach((r, i) => {
      const one = mender.mend(inputs[i]);
      const same = r.json === one.json && r.code === one.code
        && JSON.stringify(r.repairs) === JSON.stringify(one.repairs)
        && JSON.stringify(r.dropped) === JSON.stringify(one.dropped);
      if (!same) bad += 1;
    });
    return bad;
  };
  (async () => {
    global.gc();
    const before = process.memoryUsage().external;
    let bad = 0;
    const kept = [];
    for (let k = 0; k < 6; k++) {
      const inputs = texts(k);
      const records = k % 2 ? await toolmend.mendMany(inputs) : toolmend.mendManySync(inputs);
      bad += check(inputs, records);
      if (k === 0 || k === 3) kept.push([inputs, records]);
      global.gc();
      await new Promise((resolve) => setImmediate(resolve));
    }
    for (const [inputs, records] of kept) bad += check(inputs, records);
    global.gc();
    const mib = (process.memoryUsage().external - before) / 2 ** 20;
    console.log(JSON.stringify({ bad, keptMiB: Math.round(mib), records: kept[0][1].length + kept[1][1].length }));
  })();
`;

test('batches after V8 let go of earlier ones write into their reused buffers: kept records do not change', () => {
  const out = execFileSync(process.execPath, ['--expose-gc', '-e', REUSE], { timeout: 300000 }).toString();
  const got = JSON.parse(out);
  assert.equal(got.bad, 0);
  assert.equal(got.records, 40000);
  // The kept records' segments are V8 external strings (the memory V8 is told of).
  assert.ok(got.keptMiB >= 12, out);
});

test('a Node without external strings: the segments are copied into V8 strings, the same records', () => {
  const env = { ...process.env, TOOLMEND_NODE_COPY_SEGMENTS: '1' };
  const out = execFileSync(process.execPath, ['--expose-gc', '-e', REUSE], { timeout: 300000, env }).toString();
  const got = JSON.parse(out);
  assert.equal(got.bad, 0);
  assert.equal(got.records, 40000);
  // Copied: nothing outside V8's heap but the records' numbers (2 x 20000 x 7 doubles).
  assert.ok(got.keptMiB <= 4, out);
});

test('the segment buffers kept for later batches are freed once no batch has run for a while', () => {
  const script = `
    const toolmend = require('toolmend');
    const native = require(${JSON.stringify(require.resolve('toolmend/toolmend.node'))});
    const inputs = Array.from({ length: 20000 }, (_, i) => '{"i": ' + i + ', "s": "' + 'é語'.repeat(i % 300) + '",}');
    // V8 lets go of a batch's strings over a few collections.
    const collect = async () => {
      for (let i = 0; i < 6; i++) {
        global.gc();
        await new Promise((resolve) => setImmediate(resolve));
      }
    };
    (async () => {
      let first = await toolmend.mendMany(inputs);
      let second = toolmend.mendManySync(inputs);
      first = null;
      await collect();
      const pooled = native.poolBytes();
      // Polled, not one fixed wait: on a loaded machine the idle timer may fire late.
      const idleSince = Date.now();
      while (native.poolBytes() !== 0 && Date.now() - idleSince < 30000) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const trimmed = native.poolBytes();
      second = null;
      await collect();
      console.log(JSON.stringify({ pooled, trimmed, later: native.poolBytes() }));
    })();
  `;
  // Idle after 1 s here (10 s by default).
  const env = { ...process.env, TOOLMEND_NODE_POOL_IDLE_MS: '1000' };
  const out = execFileSync(process.execPath, ['--expose-gc', '-e', script], { timeout: 300000, env }).toString();
  const got = JSON.parse(out);
  // V8 let go of the first batch's segments: kept for the next batch…
  assert.ok(got.pooled > 1 << 20, out);
  // …freed once idle, and the second batch's, let go of after that, are not kept.
  assert.equal(got.trimmed, 0, out);
  assert.equal(got.later, 0, out);
});

test('worker threads: each isolate is told of its own strings V8 let go of, not of those of another', () => {
  // Each isolate is told of the memory its records' strings hold outside its heap, and of what
  // it let go of when its next batch comes; a worker's frees must not lower what the main
  // thread's isolate is told while it still holds its records.
  const script = `
    const { Worker, isMainThread, parentPort } = require('node:worker_threads');
    const toolmend = require('toolmend');
    const native = require(${JSON.stringify(require.resolve('toolmend/toolmend.node'))});
    const inputs = Array.from({ length: 20000 }, (_, i) => '{"i": ' + i + ', "s": "' + 'é語'.repeat(i % 300) + '",}');
    const collect = async () => {
      for (let i = 0; i < 6; i++) {
        global.gc();
        await new Promise((resolve) => setImmediate(resolve));
      }
    };
    const told = () => Math.round(native.toldExternalMemory() / 2 ** 20);
    if (isMainThread) {
      (async () => {
        await collect();
        const base = told();
        let held = await toolmend.mendMany(inputs);
        const holding = told();
        const worker = new Worker(script, { eval: true });
        const next = () => new Promise((resolve) => worker.once('message', resolve));
        // The worker's batches are let go of; its isolate has not been told yet.
        const workerBase = await next();
        toolmend.mendManySync(['{}']);
        const afterWorker = told();
        worker.postMessage('again');
        const workerTold = await next();
        await worker.terminate();
        held = null;
        await collect();
        toolmend.mendManySync(['{}']);
        console.log(JSON.stringify({ base, holding, afterWorker, workerBase, workerTold, released: told() }));
      })();
    } else {
      (async () => {
        await collect();
        const base = told();
        for (let k = 0; k < 3; k++) {
          let records = await toolmend.mendMany(inputs);
          records = null;
          await collect();
        }
        parentPort.postMessage(base);
        parentPort.once('message', () => {
          toolmend.mendManySync(['{}']);
          parentPort.postMessage(told());
        });
      })();
    }
  `;
  const out = execFileSync(process.execPath, ['--expose-gc', '-e', `const script = ${JSON.stringify(script)};\n${script}`], { timeout: 300000 }).toString();
  const got = JSON.parse(out);
  assert.ok(got.holding - got.base >= 10, out);
  // The worker's three batches (each as large as the one held here) changed nothing here…
  assert.ok(Math.abs(got.afterWorker - got.holding) <= 2, out);
  // …the worker was told of its own frees, and this isolate of its own once let go.
  assert.ok(Math.abs(got.workerTold - got.workerBase) <= 2, out);
  assert.ok(Math.abs(got.released - got.base) <= 2, out);
});

test('a worker thread terminated mid-batch, or a process exiting mid-batch, ends cleanly', () => {
  // The worker's environment goes while its mending threads still run: they must not call
  // back into it (Node before 24.14 aborts the whole process on such a call).
  const worker = `
    const { parentPort } = require('node:worker_threads');
    const toolmend = require('toolmend');
    const inputs = Array.from({ length: 200000 }, (_, i) => '{"i": ' + i + ', "s": "' + 'é語'.repeat(i % 300) + '",}');
    parentPort.postMessage('started');
    toolmend.mendMany(inputs).then(() => parentPort.postMessage('done'));
  `;
  const script = `
    const { Worker } = require('node:worker_threads');
    const toolmend = require('toolmend');
    (async () => {
      for (const ms of [0, 5, 20, 50, 100, 200]) {
        const w = new Worker(${JSON.stringify(worker)}, { eval: true });
        await new Promise((resolve) => w.once('message', resolve));
        await new Promise((resolve) => setTimeout(resolve, ms));
        await w.terminate();
      }
      const records = await toolmend.mendMany(Array.from({ length: 1000 }, (_, i) => '{"i": ' + i + ',}'));
      console.log(records.length, records[999].json);
    })();
  `;
  const out = execFileSync(process.execPath, ['-e', script], { timeout: 120000 }).toString();
  assert.equal(out.trim(), '1000 {"i":999}');
  const exiting = `
    const toolmend = require('toolmend');
    const inputs = Array.from({ length: 200000 }, (_, i) => '{"i": ' + i + ', "s": "' + 'é'.repeat(i % 300) + '",}');
    toolmend.mendMany(inputs).then(() => console.log('done'));
    setTimeout(() => process.exit(3), 20);
  `;
  const exited = spawnSync(process.execPath, ['-e', exiting], { timeout: 300000 });
  assert.equal(exited.status, 3, exited.stderr.toString());
});

test('a batch is its own copy: changing the array while mendMany runs changes nothing', async () => {
  const inputs = Array.from({ length: 5000 }, (_, i) => `{"n": ${i}}`);
  const pending = toolmend.mendMany(inputs);
  inputs.fill(null);
  const records = await pending;
  assert.deepEqual(records.map((r) => r.value.n), Array.from({ length: 5000 }, (_, i) => i));
});

test('batches from any iterable, a fresh array of repairs on each read', async () => {
  const inputs = new Set(["{'a': 1}", '{"b": 2}']);
  const records = await toolmend.mendMany(inputs.values());
  assert.deepEqual(records.map((r) => r.value), [{ a: 1 }, { b: 2 }]);
  const [first] = records;
  assert.equal(first.repairs.length, 1);
  first.repairs.push('changed');
  assert.equal(first.repairs.length, 1);
  assert.equal(first.value, first.value);
});

/** A value, or the error thrown, as plain data. */
function outcome(f) {
  try {
    return { value: f() };
  } catch (e) {
    assert.ok(e instanceof toolmend.ToolmendError, String(e));
    return { code: e.code, message: e.message, offset: e.offset, violations: e.violations };
  }
}

test('mendArgs and repair take strings their own way and give what a record unwraps to', () => {
  // mendArgs refuses cut-off arguments (truncated: 'error' unless told): its Mender does too.
  for (const [options, one] of [[{ truncated: 'error' }, toolmend.mendArgs], [{ target: 'any' }, toolmend.repair], [{ strict: true, truncated: 'error' }, (t) => toolmend.mendArgs(t, { strict: true })]]) {
    const mender = new toolmend.Mender(options);
    for (const text of TRICKY) {
      assert.deepEqual(outcome(() => one(text)), outcome(() => mender.mend(text).unwrap()), String(typeof text === "string" ? text.slice(0, 80) : text));
    }
  }
  // Numbers as JSON.parse reads them, the same as before: a big integer loses digits in the
  // value (the record's `json` keeps them).
  assert.equal(toolmend.mendArgs('{"id": 123456789012345678901234567890}').id, 1.2345678901234568e29);
  assert.equal(Object.is(toolmend.repair('-0'), -0), true);
});

test('mendArgs per call: inputs around the kept buffer\'s size, returned as given when valid and compact', () => {
  // The native function copies a string into a buffer of at least 256 units kept between calls,
  // and asks for the length only of a string that fills it; a value whose text is the input's
  // goes back as the input string itself.
  const mender = new toolmend.Mender({ truncated: 'error' });
  const inputs = [];
  for (const n of [0, 1, 200, 240, 250, 251, 252, 253, 254, 255, 256, 257, 300, 511, 512, 513, 5000, 70000]) {
    for (const fill of ['a', 'é', '€', '😀', '\\n', '"']) {
      const body = fill === '"' ? '\\"'.repeat(n) : fill.repeat(n);
      inputs.push(`{"k":"${body}"}`);
      inputs.push(`{"k": "${body}", "n": 1,}`);
      inputs.push(`{"k":"${body}","k":2}`);
      inputs.push(JSON.stringify(`{"k":"${body}"}`));
    }
  }
  // Growing and shrinking sizes, so that the buffer kept is sometimes larger, sometimes smaller.
  for (const text of [...inputs, ...inputs.reverse()]) {
    assert.deepEqual(outcome(() => toolmend.mendArgs(text)), outcome(() => mender.mend(text).unwrap()), text.slice(0, 80));
  }
  const compact = '{"a":[1,2.50,{"b":null}],"c":"x\\u00e9"}';
  assert.deepEqual(toolmend.mendArgs(compact), JSON.parse(compact));
});

test('a lone surrogate is the library\'s invalid_utf8: its message and its original cut as Python and the CLI cut it', async () => {
  const long = '\ud800' + 'x'.repeat(200);
  for (const record of [new toolmend.Mender().mend(long), (await toolmend.mendMany([long]))[0], toolmend.mendManySync([long])[0]]) {
    assert.equal(record.code, 'invalid_utf8');
    assert.equal(record.message, 'text holds a lone surrogate, which is not valid Unicode');
    // The first 100 characters, the surrogate shown as U+FFFD, and '…' for the rest.
    assert.equal(record.original, '\ufffd' + 'x'.repeat(99) + '\u2026');
  }
  assert.equal(new toolmend.Mender().mend('\udfff').original, '\ufffd');
});

test('too_large says what the CLI says (`toolmend args --records --max-bytes 4`)', async () => {
  for (const record of [new toolmend.Mender({ maxBytes: 4 }).mend('{"a": 1}'), (await toolmend.mendMany(['{"a": 1}'], { maxBytes: 4 }))[0]]) {
    assert.equal(record.code, 'too_large');
    assert.equal(record.message, 'input is 8 bytes, more than the limit of 4 bytes');
  }
});
