'use strict';
// The OpenAI and Anthropic helpers: a cut-off call is never a call.
const test = require('node:test');
const assert = require('node:assert/strict');

const toolmend = require('toolmend');

function completion(args, finish = 'tool_calls', content = null) {
  return {
    id: 'chatcmpl-1',
    choices: [{
      index: 0,
      finish_reason: finish,
      message: {
        role: 'assistant',
        content,
        tool_calls: args === null ? null : [{ id: 'call_1', type: 'function', function: { name: 'deploy', arguments: args } }],
      },
    }],
  };
}

test('OpenAI calls are mended', () => {
  const [call] = toolmend.callsFromOpenAI(completion('"{\\"target\\": \\"prod\\",}"')).calls;
  assert.deepEqual([call.tool, call.id, call.parameters], ['deploy', 'call_1', { target: 'prod' }]);
  assert.ok(call.repairs.some((r) => r.kind === 'trailing_comma'));
});

test('OpenAI cut arguments are not a call', () => {
  assert.throws(() => toolmend.callsFromOpenAI(completion('{"target": "prod", "dry_run": fal')), (e) => {
    assert.equal(e.code, 'incomplete_call');
    assert.deepEqual(e.value.calls, []);
    assert.equal(e.value.incomplete[0].tool, 'deploy');
    return true;
  });
});

test('finish_reason length makes calls incomplete', () => {
  assert.throws(() => toolmend.callsFromOpenAI(completion('{"target": "prod"}', 'length')), (e) => {
    assert.equal(e.code, 'incomplete_call');
    assert.deepEqual(e.value.calls, []);
    assert.equal(e.value.incomplete[0].id, 'call_1');
    return true;
  });
});

test('calls in the text of a message', () => {
  const found = toolmend.callsFromOpenAI(completion(null, 'stop', 'Sure.\n<tool_call>{"name": "ls", "arguments": {}}</tool_call>'));
  assert.deepEqual(found.calls, [{ tool: 'ls', parameters: {}, repairs: [] }]);
  assert.equal(found.text, 'Sure.');
});

const anthropic = (content, stop = 'tool_use') => ({ id: 'msg_1', type: 'message', role: 'assistant', content, stop_reason: stop });

test('Anthropic tool_use', () => {
  const found = toolmend.callsFromAnthropic(anthropic([
    { type: 'text', text: 'Let me look.' },
    { type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'a.txt' } },
  ]));
  assert.deepEqual(found.calls, [{ tool: 'read_file', parameters: { path: 'a.txt' }, id: 'toolu_1', repairs: [] }]);
  assert.equal(found.text, 'Let me look.');
});

test('Anthropic max_tokens is cut', () => {
  assert.throws(
    () => toolmend.callsFromAnthropic(anthropic([{ type: 'tool_use', id: 'toolu_1', name: 'write_file', input: { path: 'a' } }], 'max_tokens')),
    (e) => e.code === 'incomplete_call' && e.value.calls.length === 0,
  );
});

test('ESM import gives the same API', async () => {
  const esm = await import('toolmend');
  assert.equal(typeof esm.mendArgs, 'function');
  assert.deepEqual(esm.mendArgs('{"a": 1,}'), { a: 1 });
  assert.equal(esm.default.ToolmendError, toolmend.ToolmendError);
});

test('the library rules the stop reason and the shapes (issue 26)', () => {
  const two = completion('{"target": "prod"}', 'length');
  two.choices[0].message.tool_calls.unshift({ id: 'call_0', type: 'function', function: { name: 'build', arguments: '{}' } });
  assert.throws(() => toolmend.callsFromOpenAI(two), (e) => {
    assert.equal(e.code, 'incomplete_call');
    assert.deepEqual(e.value.calls.map((c) => c.id), ['call_0']);
    assert.equal(e.value.incomplete[0].message, 'the API\'s stop reason says the output was cut: finish_reason "length"');
    return true;
  });
  const message = { type: 'message', role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'f', input: {} }], stop_reason: 'tool_use' };
  assert.throws(() => toolmend.callsFromOpenAI(message), (e) => e.code === 'invalid_input');
  assert.throws(() => toolmend.callsFromAnthropic(completion('{"target": "prod"}')), (e) => e.code === 'invalid_input');
  const both = completion('{"target": "prod"}');
  both.choices[0].message.function_call = { name: 'deploy', arguments: '{"target": "prod"}' };
  assert.equal(toolmend.callsFromOpenAI(both).calls.length, 1);
});

function responsesApi(items, status = 'completed', reason = null) {
  return { id: 'resp_1', object: 'response', status, output: items, incomplete_details: reason ? { reason } : null };
}

function functionCall(args) {
  return { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'deploy', arguments: args, status: 'completed' };
}

test('callsFromOpenAI reads the Responses API too', () => {
  const items = [
    { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Deploy.' }] },
    { type: 'message', id: 'msg_1', role: 'assistant', content: [{ type: 'output_text', text: 'On it.' }] },
    functionCall('{"target": "prod",}'),
  ];
  const found = toolmend.callsFromOpenAI(responsesApi(items));
  assert.equal(found.calls.length, 1);
  assert.equal(found.calls[0].tool, 'deploy');
  assert.equal(found.calls[0].id, 'call_1');
  assert.deepEqual(found.calls[0].parameters, { target: 'prod' });
  assert.deepEqual(found.calls[0].repairs.map((r) => r.kind), ['trailing_comma']);
  assert.equal(found.text, 'On it.');
  assert.equal(found.reasoning, 'Deploy.');
  assert.deepEqual(found, toolmend.extractCalls(responsesApi(items)));
  assert.throws(() => toolmend.callsFromOpenAI(responsesApi([functionCall('{"target": "prod"}')], 'incomplete', 'max_output_tokens')), (e) => {
    assert.equal(e.code, 'incomplete_call');
    assert.deepEqual(e.value.calls, []);
    assert.equal(e.value.incomplete[0].id, 'call_1');
    return true;
  });
  assert.throws(() => toolmend.callsFromOpenAI(responsesApi([functionCall('{}')]), { choice: 1 }),
    (e) => e.code === 'invalid_input' && /choice must be 0/.test(e.message));
  assert.throws(() => toolmend.callsFromAnthropic(responsesApi([functionCall('{}')])), (e) => e.code === 'invalid_input');
});
