'use strict';
// Schema-guided coercion in the package: mendArgs(text, {schema}) with a JSON Schema object, and
// extractCalls(text, {tools}), as `toolmend args --schema` and `toolmend calls --tools`.
const test = require('node:test');
const assert = require('node:assert/strict');

const toolmend = require('toolmend');

const PLAN = {
  type: 'object',
  properties: {
    days: { type: 'integer' },
    ratio: { type: 'number' },
    metric: { type: 'boolean' },
    city: { type: 'string' },
    unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
    tags: { type: 'array', items: { type: 'string' } },
    options: { type: 'object', properties: { depth: { type: 'integer' } } },
  },
  required: ['days'],
};

test('a schema coerces each value where the intent is unambiguous', () => {
  const text =
    '{"days": "3", "ratio": "2.5", "metric": "true", "city": 10115, ' +
    '"unit": " Celsius ", "tags": "news", "options": "{\\"depth\\": \\"2\\"}"}';
  assert.deepEqual(toolmend.mendArgs(text, { schema: PLAN }), {
    days: 3,
    ratio: 2.5,
    metric: true,
    city: '10115',
    unit: 'celsius',
    tags: ['news'],
    options: { depth: 2 },
  });
  assert.deepEqual(toolmend.mendArgs("{days: '4', tags: ['a',],}", { schema: PLAN }), { days: 4, tags: ['a'] });
  assert.deepEqual(toolmend.mendArgs('{"days": "3"}'), { days: '3' });
  // A Mender reports each coercion with the value's pointer.
  const record = new toolmend.Mender({ schema: PLAN }).mend('{"days": "3", "tags": "x"}');
  assert.deepEqual(record.value, { days: 3, tags: ['x'] });
  assert.deepEqual(
    record.repairs.filter((r) => r.kind === 'schema_type').map((r) => r.path),
    ['/days', '/tags'],
  );
});

test('what cannot be coerced without loss is refused, every violation listed', () => {
  for (const [text, path, message] of [
    ['{"days": "3.7"}', '/days', '"3.7" is not of type "integer"'],
    ['{"days": 1, "metric": "yes"}', '/metric', '"yes" is not of type "boolean"'],
    ['{"days": "007"}', '/days', '"007" is not of type "integer"'],
  ]) {
    assert.throws(
      () => toolmend.mendArgs(text, { schema: PLAN }),
      (e) => {
        assert.equal(e.code, 'invalid_parameters');
        assert.ok(e.message.includes(message), e.message);
        assert.deepEqual(e.violations.map((v) => v.path), [path]);
        assert.equal(e.violations[0].keyword, 'type');
        return true;
      },
    );
  }
  const record = new toolmend.Mender({ schema: PLAN }).mend('{"days": "three", "unit": "kelvin"}');
  assert.equal(record.ok, false);
  assert.equal(record.code, 'invalid_parameters');
  assert.deepEqual(record.violations.map((v) => v.path).sort(), ['/days', '/unit']);
  assert.deepEqual(record.toJSON().error.violations, record.violations);
});

test('strict checks the schema and coerces nothing', () => {
  assert.deepEqual(toolmend.mendArgs('{"days": 3}', { schema: PLAN, strict: true }), { days: 3 });
  assert.throws(() => toolmend.mendArgs('{"days": "3"}', { schema: PLAN, strict: true }), { code: 'invalid_parameters' });
});

test('a bad schema, or a schema for mendMany, is refused', async () => {
  assert.throws(() => toolmend.mendArgs('{}', { schema: { type: 5 } }), /schema/);
  await assert.rejects(() => toolmend.mendMany(['{}'], { schema: PLAN }), /mendMany/);
});

test('extractCalls coerces parameters to the tools schemas', () => {
  const tools = [{ name: 'plan', description: 'Plan a trip', parameters: PLAN }];
  const found = toolmend.extractCalls(
    '<tool_call>{"name": "plan", "arguments": {"days": "3", "tags": "news"}}</tool_call>',
    { tools },
  );
  assert.deepEqual(found.calls[0].parameters, { days: 3, tags: ['news'] });
  assert.ok(found.calls[0].repairs.some((r) => r.kind === 'schema_type' && r.path === '/days'));
  assert.throws(
    () => toolmend.extractCalls('{"name": "plan", "arguments": {"days": "3.7"}}', { tools }),
    (e) => e.code === 'invalid_parameters' && e.violations[0].path === '/days',
  );
});

test('a recursive schema is an error, never a crash (issue 25.1)', () => {
  // A value that fits no branch once killed node (SIGSEGV): the case runs in a child process.
  const { spawnSync } = require('node:child_process');
  const child = `
    const assert = require('node:assert/strict');
    const toolmend = require('toolmend');
    const RECURSIVE = {
      type: 'object',
      properties: { v: { $ref: '#/$defs/N' } },
      $defs: { N: { anyOf: [{ type: 'integer' }, { type: 'array', items: { $ref: '#/$defs/N' } }] } },
    };
    const tools = [{ name: 'f', parameters: RECURSIVE }];
    assert.throws(() => toolmend.mendArgs('{"v": "x"}', { schema: RECURSIVE }), { code: 'invalid_parameters' });
    assert.throws(
      () => toolmend.extractCalls('<tool_call>{"name": "f", "arguments": {"v": "x"}}</tool_call>', { tools }),
      { code: 'invalid_parameters' },
    );
    assert.deepEqual(toolmend.mendArgs('{"v": [1, [2]]}', { schema: RECURSIVE }), { v: [1, [2]] });
    assert.throws(
      () => toolmend.mendArgs('{}', { schema: { $defs: { x: { $ref: '#/$defs/x' } }, $ref: '#/$defs/x' } }),
      /never reaches a constraint/,
    );
    process.stdout.write('ok');
  `;
  const out = spawnSync(process.execPath, ['-e', child], { cwd: __dirname, encoding: 'utf8', timeout: 120000 });
  assert.equal(out.status, 0, `${out.signal} ${out.stderr}`);
  assert.equal(out.stdout, 'ok');
});
