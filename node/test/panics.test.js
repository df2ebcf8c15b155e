'use strict';
// A panic on one input (a bug in toolmend) is that input's ToolmendError (or record) with code
// internal_error, on every call, and the next input is mended as usual; the process lives on.
// No input is known to panic: the test build has the library's trigger (feature panic-trigger,
// on in `make node-package`'s debug build), input holding `panicTrigger()` panics where a bug
// would.
const test = require('node:test');
const assert = require('node:assert/strict');

const toolmend = require('toolmend');
const native = require(require.resolve('toolmend/toolmend.node'));

const TRIGGER = typeof native.panicTrigger === 'function' ? native.panicTrigger() : null;
const skip = TRIGGER === null && 'a native module without the panic trigger (a release build)';

const MESSAGE =
  'toolmend failed on this input, a bug in toolmend (please report it with this input): ' +
  'the test trigger (feature panic-trigger)';

function internalError(e) {
  assert.ok(e instanceof toolmend.ToolmendError, String(e));
  assert.equal(e.code, 'internal_error');
  assert.equal(e.message, MESSAGE);
  return true;
}

function endsWithInternalError(events, original) {
  assert.equal(events.length, 1, JSON.stringify(events));
  const [end] = events;
  assert.equal(end.event, 'end');
  assert.equal(end.ok, false);
  assert.equal(end.error.code, 'internal_error');
  assert.equal(end.error.message, MESSAGE);
  assert.equal(end.error.original, original);
}

test('single calls throw internal_error and the next input is mended', { skip }, () => {
  const text = `{"a": "${TRIGGER}"}`;
  assert.throws(() => toolmend.mendArgs(text), internalError);
  assert.throws(() => toolmend.mendArgs(Buffer.from(text)), internalError);
  assert.throws(() => toolmend.mendArgs(text, { schema: { type: 'object' } }), internalError);
  assert.throws(() => toolmend.repair(text), internalError);
  assert.throws(() => toolmend.repair(text, { maxDepth: 3 }), internalError);
  // The same menders (kept between calls) mend the next input.
  assert.deepEqual(toolmend.mendArgs("{'a': 1,}"), { a: 1 });
  assert.deepEqual(toolmend.repair('[1, 2'), [1, 2]);
  assert.deepEqual(toolmend.repair('[1, 2', { maxDepth: 3 }), [1, 2]);

  assert.throws(() => toolmend.extractCalls(`<tool_call>${text}</tool_call>`), (e) => internalError(e) && e.value === null);
  assert.throws(() => toolmend.extractCalls({ role: 'assistant', content: TRIGGER }), internalError);
  assert.throws(
    () => toolmend.callsFromOpenAI({ choices: [{ message: { role: 'assistant', content: TRIGGER } }] }),
    internalError,
  );
  assert.throws(() => toolmend.callsFromAnthropic({ role: 'assistant', content: [{ type: 'text', text: TRIGGER }] }), internalError);
  const found = toolmend.extractCalls('<tool_call>{"name": "f", "arguments": {}}</tool_call>');
  assert.deepEqual(found.calls.map((c) => c.tool), ['f']);
});

test('records say internal_error and the mender goes on', { skip }, async () => {
  for (const options of [undefined, { schema: { type: 'object' } }]) {
    const mender = new toolmend.Mender(options);
    const input = `{'b': '${TRIGGER}'}`;
    for (const record of [mender.mend(input), mender.mend(Buffer.from(input))]) {
      assert.equal(record.ok, false);
      assert.equal(record.code, 'internal_error');
      assert.equal(record.message, MESSAGE);
      assert.equal(record.original, input);
      assert.throws(() => record.unwrap(), internalError);
    }
    assert.deepEqual(mender.mend("{'a': 1,}").value, { a: 1 });
  }

  const inputs = Array.from({ length: 20 }, (_, i) => `{'n': ${i}}`);
  inputs[7] = TRIGGER;
  inputs[12] = Buffer.from(TRIGGER);
  for (const threads of [1, 2]) {
    for (const records of [await toolmend.mendMany(inputs, { threads }), toolmend.mendManySync(inputs, { threads })]) {
      assert.deepEqual(
        records.map((r) => r.code).map((c, i) => (c ? `${i} ${c}` : null)).filter(Boolean),
        ['7 internal_error', '12 internal_error'],
      );
      assert.equal(records[7].message, MESSAGE);
      assert.deepEqual(
        records.filter((r) => r.ok).map((r) => r.value),
        inputs.map((_, i) => ({ n: i })).filter((_, i) => i !== 7 && i !== 12),
      );
    }
  }
});

test('a stream that panics ends with internal_error and gives nothing more', { skip }, async () => {
  const feeds = {
    feed: (s) => s.feed(TRIGGER),
    feedReasoning: (s) => s.feedReasoning(TRIGGER),
    feedCall: (s) => s.feedCall(0, 'id1', 'f', TRIGGER),
    feedChunk: (s) => s.feedChunk({ choices: [{ delta: { content: TRIGGER } }] }),
  };
  for (const [name, feed] of Object.entries(feeds)) {
    const stream = new toolmend.Stream();
    assert.ok(stream.feed('Hello ').length > 0, name);
    endsWithInternalError(feed(stream), 'Hello ');
    assert.deepEqual(stream.feed('more'), []);
    assert.deepEqual(stream.finish(), []);
  }

  const events = [];
  for await (const event of toolmend.stream(['Hello ', TRIGGER, 'more'])) events.push(event);
  const end = events[events.length - 1];
  assert.equal(end.event, 'end');
  assert.equal(end.error.code, 'internal_error');
});
