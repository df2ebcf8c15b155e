'use strict';
// `npx toolmend` from the installed package, and the Process co-process client.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { execFileSync, spawnSync } = require('node:child_process');

const toolmend = require('toolmend');

test('npx toolmend runs the CLI', () => {
  const run = spawnSync('npx', ['--no-install', 'toolmend', 'args'], { input: "{'a': 1,}\n", encoding: 'utf8' });
  assert.equal(run.stdout, '{"a":1}\n', run.stderr);
  assert.equal(run.status, 0);
  const bad = spawnSync('npx', ['--no-install', 'toolmend', 'args'], { input: '[1]\n', encoding: 'utf8' });
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, /not_an_object/);
  assert.match(execFileSync('npx', ['--no-install', 'toolmend', '--version'], { encoding: 'utf8' }), /^toolmend /);
});

test('Process answers records', async () => {
  const tm = new toolmend.Process();
  try {
    const record = await tm.mendArgs('"{\\"city\\": \\"Oslo\\",}"');
    assert.deepEqual(record.value, { city: 'Oslo' });
    assert.deepEqual(record.repairs.map((r) => r.kind), ['unquote', 'trailing_comma']);
    assert.equal((await tm.mendArgs('[1]')).error.code, 'not_an_object');
    const found = await tm.extractCalls('<tool_call>{"name": "ls", "arguments": {}}</tool_call>');
    assert.deepEqual(found.value.calls, [{ tool: 'ls', parameters: {}, repairs: [] }]);
    assert.deepEqual((await tm.mendArgs('{"a":\n1}')).value, { a: 1 });
  } finally {
    tm.close();
  }
});

test('a null among concurrent calls rejects nothing else', async () => {
  const tm = new toolmend.Process();
  try {
    const inputs = [];
    for (let k = 0; k < 20; k++) inputs.push('{"n": 0}', '{"n": 1}', null, '{"n": 3}', Buffer.from([0xff]), '', '{"n": 6}');
    const records = await Promise.all(inputs.map((t) => tm.mendArgs(t)));
    records.forEach((r, i) => {
      const t = inputs[i];
      if (t === null || t === '') assert.equal(r.error.code, 'empty_input');
      else if (Buffer.isBuffer(t)) assert.equal(r.error.code, 'invalid_utf8');
      else assert.deepEqual(r.value, JSON.parse(t));
    });
  } finally {
    tm.close();
  }
});

test('a dead child is started again', async () => {
  const tm = new toolmend.Process();
  try {
    assert.equal((await tm.mendArgs('{}')).ok, true);
    tm._args.child.kill('SIGKILL');
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual((await tm.mendArgs('{"a": 1}')).value, { a: 1 });
    assert.equal(tm.restarts, 1);
  } finally {
    tm.close();
  }
});

test('a child killed while a request waits rejects that request alone; the next gets a new child', async () => {
  const tm = new toolmend.Process();
  try {
    assert.equal((await tm.mendArgs('{}')).ok, true);
    const stuck = tm._args.child;
    // Stopped first, so it cannot answer before it dies.
    stuck.kill('SIGSTOP');
    setTimeout(() => stuck.kill('SIGKILL'), 200);
    await assert.rejects(tm.mendArgs('{"x": 1,}'), (e) => e instanceof toolmend.ToolmendError && /ended \(SIGKILL\)/.test(e.message));
    assert.deepEqual((await tm.mendArgs('{"y": 2,}')).value, { y: 2 });
    assert.equal(tm.restarts, 1);
  } finally {
    tm.close();
  }
});

test('a missing binary is named plainly', async () => {
  const tm = new toolmend.Process({ binary: '/nonexistent/toolmend' });
  await assert.rejects(tm.mendArgs('{}'), (e) => e.code === 'invalid_input' && /nonexistent/.test(e.message));
  tm.close();
  const saved = process.env.TOOLMEND;
  const fs = require('node:fs');
  const bundled = path.join(path.dirname(require.resolve('toolmend')), 'bin', 'toolmend-cli');
  fs.renameSync(bundled, bundled + '.away');
  try {
    delete process.env.TOOLMEND;
    // It names what was searched, and no path in the user's project.
    assert.throws(
      () => toolmend.binaryPath(),
      (e) =>
        e.code === 'invalid_input' &&
        /npm install toolmend/.test(e.message) &&
        e.message.includes('$TOOLMEND') &&
        e.message.includes('bin/toolmend-cli') &&
        !e.message.includes(process.cwd()),
    );
  } finally {
    fs.renameSync(bundled + '.away', bundled);
    if (saved !== undefined) process.env.TOOLMEND = saved;
  }
});
