'use strict';
// The in-process API of the installed package: values, records, errors, the CLI's results.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const toolmend = require('toolmend');

const ROOT = process.env.TOOLMEND_ROOT || path.resolve(__dirname, '..', '..');

test('mendArgs returns objects', () => {
  assert.deepEqual(toolmend.mendArgs('"{\\"city\\": \\"Oslo\\",}"'), { city: 'Oslo' });
  assert.deepEqual(toolmend.mendArgs("```json\n{'path': 'a.txt', 'force': True,}\n```"), { path: 'a.txt', force: true });
  assert.deepEqual(Object.keys(toolmend.mendArgs('{"z": 1, "a": 2}')), ['z', 'a']);
  assert.deepEqual(toolmend.repair('[1, 2, 3'), [1, 2, 3]);
  assert.equal(toolmend.repair("'text'"), 'text');
});

test('options', () => {
  assert.deepEqual(toolmend.mendArgs('{"a":1}{"b":2}', { concat: 'all' }), [{ a: 1 }, { b: 2 }]);
  assert.throws(() => toolmend.mendArgs('{"a":1}{"b":2}', { concat: 'error' }), { code: 'concatenated' });
  assert.throws(() => toolmend.mendArgs("{'a': 1}", { strict: true }), { code: 'invalid_json', offset: 1 });
  assert.throws(() => toolmend.mendArgs('['.repeat(50), { maxNesting: 10 }), { code: 'too_deep' });
  assert.throws(() => toolmend.mendArgs('{}', { concat: 'sometimes' }), /concat must be/);
  // Tool arguments are about to be run: cut-off ones are refused unless asked to heal (issue
  // 25); repair heals as jsonrepair does, and a record shows the repair.
  for (const cut of ['{"target": "prod", "dry_run": fal', '{"cmd": "rm -rf build/x']) {
    assert.throws(() => toolmend.mendArgs(cut), (e) => e.code === 'truncated' && !e.message.includes('--'));
    assert.throws(() => toolmend.mendArgs(cut, {}), { code: 'truncated' });
    assert.throws(() => toolmend.mendArgs(cut, { truncated: 'error' }), { code: 'truncated' });
  }
  const cut = '{"cmd": "rm -rf build/x';
  assert.deepEqual(toolmend.mendArgs(cut, { truncated: 'heal' }), { cmd: 'rm -rf build/x' });
  assert.deepEqual(toolmend.repair(cut), { cmd: 'rm -rf build/x' });
  const record = new toolmend.Mender().mend(cut);
  assert.ok(record.ok && record.repairs.some((r) => r.kind === 'unterminated_string'));
});

const BAD = [
  [null, 'empty_input'],
  [undefined, 'empty_input'],
  ['', 'empty_input'],
  [Buffer.from([0xff, 0xfe, 0x7b]), 'invalid_utf8'],
  [new Uint8Array([0x7b, 0xc3]), 'invalid_utf8'],
  ['\ud800', 'invalid_utf8'],
  [3, 'invalid_input'],
  [{ a: 1 }, 'invalid_input'],
  [['x'], 'invalid_input'],
  ['[1, 2]', 'not_an_object'],
];

for (const [bad, code] of BAD) {
  test(`bad input ${JSON.stringify(bad) ?? String(bad)} is a ToolmendError ${code}`, () => {
    assert.throws(() => toolmend.mendArgs(bad), (e) => {
      assert.ok(e instanceof toolmend.ToolmendError);
      assert.ok(e instanceof Error);
      assert.equal(e.code, code);
      assert.ok(e.message.length > 0);
      return true;
    });
    const record = new toolmend.Mender().mend(bad);
    assert.equal(record.ok, false);
    assert.equal(record.code, code);
    assert.equal(record.value, null);
  });
}

test('bytes are UTF-8 text', () => {
  assert.deepEqual(toolmend.mendArgs(Buffer.from('{"city": "Zürich"}')), { city: 'Zürich' });
  assert.throws(() => toolmend.mendArgs(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x20, 0x22, 0xff, 0x22, 0x7d])), {
    code: 'invalid_utf8',
    offset: 7,
  });
});

test('a string\'s UTF-16 turned into UTF-8 sixteen units at a time: every width at every offset', async () => {
  // The native module narrows ASCII sixteen units at a time and stops at the first unit that
  // is not ASCII: characters of each width, and lone surrogates, at each offset around the
  // blocks' ends, in keys and values, against the same text given as UTF-8 bytes.
  const inputs = [];
  for (const c of ['é', 'ÿ', '\u0080', '語', '\uffff', '😀', '\ud800', '\udfff', '\udc00\ud800']) {
    for (let at = 0; at < 40; at++) {
      const pad = 'x'.repeat(at);
      inputs.push(`{"${pad}${c}": "${pad}${c}${'y'.repeat(40 - at)}", "k": "${c}"}`);
      inputs.push(`{"k": "${pad}${c}"}`);
    }
  }
  const mender = new toolmend.Mender();
  const want = inputs.map((text) => {
    if (!text.isWellFormed()) return { code: 'invalid_utf8' };
    const record = mender.mend(Buffer.from(text, 'utf8'));
    return record.ok ? { value: record.value } : { code: record.code };
  });
  const one = (text) => {
    try {
      return { value: toolmend.mendArgs(text) };
    } catch (e) {
      return { code: e.code };
    }
  };
  assert.deepEqual(inputs.map(one), want);
  assert.deepEqual(inputs.map((text) => mender.mend(text)).map((r) => (r.ok ? { value: r.value } : { code: r.code })), want);
  const many = await toolmend.mendMany(inputs);
  assert.deepEqual(many.map((r) => (r.ok ? { value: r.value } : { code: r.code })), want);
});

test('huge inputs are refused or mended, never a crash', () => {
  const big = '{"a": "' + 'x'.repeat(65 << 20) + '"}';
  assert.throws(() => toolmend.mendArgs(big), { code: 'too_large' });
  assert.equal(toolmend.mendArgs(big, { maxBytes: 1 << 30 }).a.length, 65 << 20);
  assert.throws(() => toolmend.repair('['.repeat(20000)), { code: 'too_deep' });
});

test('record fields', () => {
  const record = new toolmend.Mender().mend('{"a": 1}{"b": 2}');
  assert.equal(record.ok, true);
  assert.deepEqual(record.value, { a: 1 });
  assert.equal(record.json, '{"a":1}');
  assert.deepEqual(record.dropped, [{ b: 2 }]);
  assert.deepEqual(record.repairs, []);
  // Big numbers: the JSON text keeps every digit.
  assert.equal(new toolmend.Mender().mend('{"id": 123456789012345678901234567890}').json, '{"id":123456789012345678901234567890}');
  const failed = new toolmend.Mender().mend('[1]');
  assert.deepEqual(failed.toJSON(), {
    ok: false,
    error: { code: 'not_an_object', message: 'expected a JSON object, found an array', original: '[1]' },
  });
  assert.throws(() => failed.unwrap(), { code: 'not_an_object' });
});

function fixtureInputs() {
  const inputs = [];
  for (const dir of ['args', 'repair', 'fuzz']) {
    const full = path.join(ROOT, 'fixtures', dir);
    for (const name of fs.readdirSync(full).sort()) {
      if (!name.endsWith('.jsonl')) continue;
      for (const line of fs.readFileSync(path.join(full, name), 'utf8').split('\n')) {
        if (!line.trim()) continue;
        const c = JSON.parse(line);
        if ((c.command || 'args') !== 'calls' && typeof c.input === 'string') inputs.push(c.input);
      }
    }
  }
  return inputs;
}

for (const [target, command] of [['object', 'args'], ['any', 'repair']]) {
  test(`mendMany equals toolmend ${command} --records`, async () => {
    const inputs = fixtureInputs();
    assert.ok(inputs.length > 300);
    const stdin = inputs.map((t) => JSON.stringify({ text: t })).join('\n') + '\n';
    let out;
    try {
      out = execFileSync(toolmend.binaryPath(), [command, '--records', '--input', 'jsonl'], { input: stdin, maxBuffer: 1 << 28 });
    } catch (e) {
      out = e.stdout; // exit 1: some inputs failed
    }
    const expected = out.toString().trim().split('\n').map((l) => JSON.parse(l));
    const records = await toolmend.mendMany(inputs, { target });
    assert.equal(records.length, expected.length);
    records.forEach((r, i) => {
      delete expected[i].line;
      // Both through JSON text: 1E400 is Infinity in a parsed value, null once written.
      assert.deepEqual(JSON.parse(JSON.stringify(r)), JSON.parse(JSON.stringify(expected[i])), inputs[i]);
    });
  });
}

test('mendMany keeps order over threads and runs off the main thread', async () => {
  const inputs = Array.from({ length: 20000 }, (_, i) => `{"n": ${i}, "pad": "${'x'.repeat(i % 300)}",}`);
  inputs[777] = null;
  inputs[5000] = Buffer.from([0xff]);
  const one = toolmend.mendManySync(inputs, { threads: 1 });
  let ticks = 0;
  const timer = setInterval(() => { ticks += 1; }, 1);
  const big = Array.from({ length: 20000 }, () => '{"k": "' + 'v'.repeat(2000) + '", "n": [1, 2, 3],}');
  const started = Date.now();
  const [many] = await Promise.all([toolmend.mendMany(inputs, { threads: 4 }), toolmend.mendMany(big, { threads: 1 })]);
  const elapsed = Date.now() - started;
  clearInterval(timer);
  assert.deepEqual(many.map((r) => r.toJSON()), one.map((r) => r.toJSON()));
  assert.equal(many[10].value.n, 10);
  assert.equal(many[777].code, 'empty_input');
  assert.equal(many[5000].code, 'invalid_utf8');
  // The event loop kept turning while the batches were mended: a batch mended on the main
  // thread would let no timer fire until it was done. (Counted, not timed against the clock:
  // a rate of ticks per millisecond failed on a machine loaded by other work.)
  assert.ok(elapsed > 50, `${elapsed} ms`);
  assert.ok(ticks >= 2, `${ticks} ticks in ${elapsed} ms`);
  assert.deepEqual(await toolmend.mendMany([]), []);
});

test('extractCalls', () => {
  const reply = '<think>The user wants the weather.</think>Checking.\n<tool_call>\n{"name": "get_weather", "arguments": "{\\"city\\": \\"Oslo\\"}"}\n</tool_call>';
  const found = toolmend.extractCalls(reply);
  assert.deepEqual(found.calls, [{ tool: 'get_weather', parameters: { city: 'Oslo' }, repairs: [{ kind: 'unquote', layers: 1 }] }]);
  assert.equal(found.text, 'Checking.');
  assert.equal(found.reasoning, 'The user wants the weather.');
  assert.deepEqual(toolmend.extractCalls('just text').calls, []);
  assert.ok(toolmend.callFormats().includes('hermes'));
  assert.throws(() => toolmend.extractCalls('x', { format: 'no-such-format' }), /unknown format/);
});

test('format names are checked as the CLI checks them', () => {
  const reply = '<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>';
  // `auto`, which the CLI takes, is the default here too.
  assert.deepEqual(toolmend.extractCalls(reply, { format: 'auto' }), toolmend.extractCalls(reply));
  let message;
  assert.throws(() => toolmend.extractCalls('x', { format: 'hermes2' }), (e) => {
    message = e.message;
    return true;
  });
  let stderr = '';
  try {
    execFileSync(toolmend.binaryPath(), ['calls', '--format', 'hermes2'], { input: 'x', stdio: 'pipe' });
  } catch (e) {
    stderr = e.stderr.toString();
  }
  assert.ok(stderr.includes(message), `${message}\n${stderr}`);
});

test('a cut-off call is never a call', () => {
  assert.throws(() => toolmend.extractCalls('<tool_call>{"name": "rm", "arguments": {"path": "/tmp/x", "dry'), (e) => {
    assert.equal(e.code, 'incomplete_call');
    assert.deepEqual(e.value.calls, []);
    assert.equal(e.value.incomplete[0].tool, 'rm');
    return true;
  });
  const message = {
    role: 'assistant',
    content: null,
    tool_calls: [
      { id: 'c1', type: 'function', function: { name: 'ok', arguments: '{}' } },
      { id: 'c2', type: 'function', function: { name: 'deploy', arguments: '{"target": "prod", "dry_run": fal' } },
    ],
  };
  assert.throws(() => toolmend.extractCalls(message), (e) => e.code === 'incomplete_call' && e.value.incomplete[0].tool === 'deploy');
});

const TOOLS = [{
  name: 'get_weather',
  description: 'Weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } }, required: ['city'] },
}];

test('tools check calls', () => {
  assert.deepEqual(toolmend.extractCalls('{"name": "get_weather", "arguments": {"city": "Oslo"}}', { tools: TOOLS }).calls[0].parameters, { city: 'Oslo' });
  assert.throws(() => toolmend.extractCalls('{"tool": "rm", "parameters": {}}', { tools: TOOLS }), { code: 'unknown_tool' });
  assert.throws(() => toolmend.extractCalls('{"name": "get_weather", "arguments": {"days": 2}}', { tools: TOOLS }), (e) => {
    assert.equal(e.code, 'invalid_parameters');
    assert.ok(e.violations.length > 0 && e.violations[0].message);
    return true;
  });
  const file = path.join(require('node:os').tmpdir(), `toolmend-tools-${process.pid}.json`);
  fs.writeFileSync(file, JSON.stringify(TOOLS));
  const extractor = new toolmend.CallExtractor({ tools: file });
  assert.equal(extractor.extract('{"name": "get_weather", "arguments": {"city": "Oslo"}}').calls[0].tool, 'get_weather');
  fs.unlinkSync(file);
  assert.throws(() => new toolmend.CallExtractor({ tools: file }), { code: 'invalid_input' });
});

for (const bad of [null, Buffer.from([0xff]), 7, '\udfff', '']) {
  test(`extractCalls(${String(bad)}) throws a ToolmendError`, () => {
    assert.throws(() => toolmend.extractCalls(bad), (e) => e instanceof toolmend.ToolmendError && ['empty_input', 'invalid_utf8', 'invalid_input'].includes(e.code));
  });
}

test('one null among five concurrent calls rejects only that one', async () => {
  const inputs = ['{"n": 0}', '{"n": 1}', null, '{"n": 3}', '{"n": 4}'];
  const settled = await Promise.allSettled(inputs.map(async (t) => toolmend.mendArgs(t)));
  assert.deepEqual(settled.map((s) => s.status), ['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
  assert.ok(settled[2].reason instanceof toolmend.ToolmendError);
  assert.equal(settled[2].reason.code, 'empty_input');
  settled.forEach((s, i) => i === 2 || assert.deepEqual(s.value, JSON.parse(inputs[i])));
  // Batches: a null input is its record; a null batch rejects with the error, alone.
  const batches = await Promise.allSettled([...inputs.map((t) => toolmend.mendMany([t])), toolmend.mendMany(null)]);
  assert.deepEqual(batches.map((s) => s.status), ['fulfilled', 'fulfilled', 'fulfilled', 'fulfilled', 'fulfilled', 'rejected']);
  assert.equal(batches[2].value[0].code, 'empty_input');
  assert.deepEqual(batches[4].value[0].value, { n: 4 });
  assert.ok(batches[5].reason instanceof toolmend.ToolmendError);
  assert.equal(batches[5].reason.code, 'invalid_input');
  assert.throws(() => toolmend.mendManySync(null), { code: 'invalid_input' });
});
