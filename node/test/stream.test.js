'use strict';
// toolmend.Stream and toolmend.stream: events as a reply arrives, agreeing with extractCalls.
const test = require('node:test');
const assert = require('node:assert/strict');

const toolmend = require('toolmend');

const REPLIES = [
  'Checking.<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo", "days": 12}}</tool_call>',
  '<think>Need the time.</think>[TOOL_CALLS][{"name": "get_time", "arguments": {"tz": "Europe/Oslo"}}, ' +
    '{"name": "f", "arguments": {"flag": true, "list": [1, "a"]}}]',
  '<|tool_calls_section_begin|><|tool_call_begin|>functions.search:0<|tool_call_argument_begin|>' +
    '{"query": "ünïcode ✓"}<|tool_call_end|><|tool_calls_section_end|>',
  'Sure: {"name": "save", "arguments": "{\\"path\\": \\"a.txt\\"}"} done.',
  'Just prose, no call.',
  'A plan opened by the template.</think>Done, no call.',
  '<tool_call>{"name": "rm", "arguments": {"path": "/tmp/x", "dry',
];

function run(chunks, options) {
  const s = new toolmend.Stream(options);
  let events = [];
  for (const chunk of chunks) events = events.concat(s.feed(chunk));
  events = events.concat(s.finish());
  assert.deepEqual(s.finish(), []);
  return events;
}

function expected(reply, options) {
  try {
    const found = toolmend.extractCalls(reply, options);
    return { calls: found.calls, text: found.text, reasoning: found.reasoning, code: null };
  } catch (e) {
    const v = e.value || {};
    return { calls: v.calls || [], text: v.text, reasoning: v.reasoning, code: e.code };
  }
}

// Adds an `arguments` event to the parameters its call's events built so far (docs/streaming.md):
// `append` to the string at `path`, `members` to the object there, `items` to the array there.
function apply(parameters, event) {
  const segs = event.path === '' ? [] : event.path.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  if ('append' in event) {
    const last = segs.pop();
    const parent = segs.reduce((at, s) => at[s], parameters);
    parent[last] += event.append;
    return;
  }
  const target = segs.reduce((at, s) => at[s], parameters);
  if ('members' in event) Object.assign(target, event.members);
  else target.push(...event.items);
}

// Each `arguments` event as the parameters so far it makes: { index, parameters, open }.
function rebuilt(events) {
  const parameters = [];
  return events
    .filter((e) => e.event === 'arguments')
    .map((e) => {
      parameters[e.index] ??= {};
      apply(parameters[e.index], e);
      return { index: e.index, parameters: structuredClone(parameters[e.index]), open: e.open };
    });
}

function check(reply, events) {
  const want = expected(reply);
  // The arguments events rebuild the parameters of each call not revised.
  const progress = rebuilt(events);
  for (const end of events.filter((e) => e.event === 'call_end')) {
    const last = progress.filter((e) => e.index === end.index).at(-1);
    const revised = events.some((e) => e.event === 'revised' && e.index === end.index);
    if (last && last.open === null && !revised) assert.deepEqual(last.parameters, end.call.parameters);
  }
  assert.deepEqual(events.filter((e) => e.event === 'call_end').map((e) => e.call), want.calls);
  // text and reasoning as a consumer shows them: deltas add, `corrected` replaces its field.
  const shown = { text: '', reasoning: '' };
  for (const e of events) {
    if (e.event === 'text' || e.event === 'reasoning') shown[e.event] += e.delta;
    else if (e.event === 'corrected') shown[e.field] = e.value;
  }
  assert.deepEqual(shown, { text: want.text || '', reasoning: want.reasoning || '' });
  const end = events[events.length - 1];
  assert.equal(end.event, 'end');
  assert.equal(end.ok, want.code === null);
  if (want.code) assert.equal(end.error.code, want.code);
  const started = events.filter((e) => e.event === 'call_start').map((e) => e.index);
  const ended = events
    .filter((e) => ['call_end', 'incomplete', 'invalid', 'retracted'].includes(e.event))
    .map((e) => e.index)
    .sort((a, b) => a - b);
  assert.deepEqual(ended, started);
}

test('agrees with extractCalls however the reply is split', () => {
  for (const reply of REPLIES) {
    const chars = Array.from(reply);
    check(reply, run([reply]));
    check(reply, run(chars));
    for (let at = 0; at <= chars.length; at++) {
      check(reply, run([chars.slice(0, at).join(''), chars.slice(at).join('')]));
    }
  }
});

test('text and reasoning come as they arrive', () => {
  let s = new toolmend.Stream();
  assert.deepEqual(s.feed('<think>Need the '), [{ event: 'reasoning', delta: 'Need the' }]);
  assert.deepEqual(s.feed('time.</think>It is '), [
    { event: 'reasoning', delta: ' time.' },
    { event: 'text', delta: 'It is' },
  ]);
  // A close with no open: what was shown as text was reasoning.
  s = new toolmend.Stream();
  assert.deepEqual(s.feed('A plan. '), [{ event: 'text', delta: 'A plan.' }]);
  assert.deepEqual(s.feed('</think>Done.'), [
    { event: 'corrected', field: 'text', value: '' },
    { event: 'reasoning', delta: 'A plan.' },
    { event: 'text', delta: 'Done.' },
  ]);
});

test('progress comes before the end and only grows', () => {
  // An `arguments` event due at every byte: this call is short (the default waits 128).
  const events = run(['<tool_call>{"name": "get_weather", "arguments": {"city": "Os', 'lo", "unit": "c', '"}}</tool_call>'], { argumentsStep: 1 });
  assert.equal(events[0].event, 'call_start');
  assert.equal(events[0].tool, 'get_weather');
  const args = events.filter((e) => e.event === 'arguments');
  // What each adds: the first, the parameters so far; then the rest of the city, and the unit.
  assert.deepEqual(args[0], { event: 'arguments', index: 0, path: '', members: { city: 'Os' }, open: '/city' });
  assert.deepEqual(args[1], { event: 'arguments', index: 0, path: '/city', append: 'lo', open: '' });
  const shown = rebuilt(events);
  assert.deepEqual(shown.at(-1).parameters, { city: 'Oslo', unit: 'c' });
  assert.equal(shown.at(-1).open, null);
});

test('a key written again is revised', () => {
  // /a is shown closed, then the model writes "a" again: `revised` names it before call_end,
  // whose parameters keep the last value (as extractCalls does).
  const reply = '<tool_call>{"name": "set", "arguments": {"a": 1, "b": 2, "a": 3}}</tool_call>';
  const events = run(['<tool_call>{"name": "set", "arguments": {"a": 1, ', '"b": 2, "a"', ': 3}}</tool_call>'], { argumentsStep: 1 });
  check(reply, events);
  const kinds = events.map((e) => e.event);
  assert.ok(rebuilt(events).some((e) => e.parameters.a === 1 && e.open === ''), JSON.stringify(events));
  const revised = events.filter((e) => e.event === 'revised');
  assert.equal(revised.length, 1, JSON.stringify(events));
  assert.equal(revised[0].index, 0);
  assert.equal(revised[0].path, '/a');
  assert.match(revised[0].reason, /again/);
  assert.ok(kinds.indexOf('revised') < kinds.indexOf('call_end'));
  assert.ok(!kinds.slice(kinds.indexOf('revised')).includes('arguments'));
  const call = events.find((e) => e.event === 'call_end').call;
  assert.deepEqual(call.parameters, { a: 3, b: 2 });
  assert.deepEqual(call.repairs.map((r) => r.kind), ['duplicate_key']);
  // A key inside a string's text is no repeat.
  const quoted = run(['<tool_call>{"name": "set", "arguments": {"a": 1, ', '"b": "\\"a\\": 2"}}</tool_call>'], { argumentsStep: 1 });
  assert.equal(quoted.filter((e) => e.event === 'revised').length, 0);
});

test('the arguments step', () => {
  // The default: a short call's one `arguments` event is its final one; a long string shows
  // progress, each event at least 128 bytes of arguments after the one before.
  const short = '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>';
  assert.deepEqual(run([...short]).filter((e) => e.event === 'arguments'), [
    { event: 'arguments', index: 0, path: '', members: { city: 'Oslo' }, open: null },
  ]);
  assert.ok(run([...short], { argumentsStep: 1 }).filter((e) => e.event === 'arguments').length > 2);
  const content = 'All work and no play makes Jack a dull boy. '.repeat(100);
  const reply = `<tool_call>{"name": "write_file", "arguments": {"content": "${content}"}}</tool_call>`;
  const shown = rebuilt(run([...reply])).map((e) => (e.parameters.content || '').length);
  assert.ok(shown.length >= 8, String(shown));
  for (let i = 1; i < shown.length - 1; i++) assert.ok(shown[i] - shown[i - 1] >= 128, String(shown));
  assert.equal(shown.at(-1), content.length);
  assert.throws(() => new toolmend.Stream({ argumentsStep: 0 }), /the arguments step .* 1 or more, not 0/);
  for (const bad of [-1, 1.5, NaN]) {
    assert.throws(() => new toolmend.Stream({ argumentsStep: bad }), /argumentsStep must be a whole number/);
  }
});

test('a cut-off call is never a call', () => {
  const events = run(['<tool_call>{"name": "rm", "arguments": {"path": "/tmp/x", "dry']);
  assert.equal(events.filter((e) => e.event === 'call_end').length, 0);
  assert.equal(events.find((e) => e.event === 'incomplete').tool, 'rm');
  assert.equal(events[events.length - 1].error.code, 'incomplete_call');
});

test('options reach the stream', () => {
  const reply = '<tool_call>{"name": "count", "arguments": {"n": "3"}}</tool_call>';
  const tools = [{ name: 'count', parameters: { type: 'object', properties: { n: { type: 'integer' } } } }];
  const events = run([reply.slice(0, 20), reply.slice(20)], { tools });
  assert.deepEqual(events.find((e) => e.event === 'call_end').call, toolmend.extractCalls(reply, { tools }).calls[0]);
  assert.throws(() => new toolmend.Stream({ format: 'no-such-format' }));
  assert.throws(() => new toolmend.Stream().feed(42), TypeError);
});

async function* openaiChunks() {
  const delta = (d) => ({ choices: [{ index: 0, delta: d, finish_reason: null }] });
  yield delta({ role: 'assistant', content: 'Let me check.' });
  yield delta({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } }] });
  yield delta({ tool_calls: [{ index: 0, function: { arguments: '{"city": "Os' } }] });
  yield delta({ tool_calls: [{ index: 0, function: { arguments: 'lo"}' } }] });
  yield delta({ tool_calls: [{ index: 1, id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '{"tz": "UTC"}' } }] });
}

test('stream over an async iterable of OpenAI chunks', async () => {
  const events = [];
  // An `arguments` event due at every byte: the calls are short (the default waits 128).
  for await (const event of toolmend.stream(openaiChunks(), { argumentsStep: 1 })) events.push(event);
  const message = {
    role: 'assistant',
    content: 'Let me check.',
    tool_calls: [
      { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Oslo"}' } },
      { id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '{"tz": "UTC"}' } },
    ],
  };
  assert.deepEqual(events.filter((e) => e.event === 'call_end').map((e) => e.call), toolmend.extractCalls(message).calls);
  assert.ok(rebuilt(events).some((e) => e.parameters.city === 'Os'));
  // And over a plain iterable of strings.
  const plain = [];
  for await (const event of toolmend.stream([REPLIES[0].slice(0, 15), REPLIES[0].slice(15)])) plain.push(event);
  check(REPLIES[0], plain);
});

test('server chunks are read by the library (issue 26)', async () => {
  const chunk = (delta, finish = null) => ({ choices: [{ index: 0, delta, finish_reason: finish }] });
  const chunks = [chunk({
    function_call: { name: 'get_weather', arguments: '' },
    tool_calls: [{ index: 0, id: 'call_1', function: { name: 'get_weather', arguments: '' } }],
  })];
  for (const piece of ['{"ci', 'ty": "Os', 'lo"}']) {
    chunks.push(chunk({ function_call: { arguments: piece }, tool_calls: [{ index: 0, function: { arguments: piece } }] }));
  }
  const all = async (items) => {
    const out = [];
    for await (const e of toolmend.stream(items)) out.push(e);
    return out;
  };
  let events = await all([...chunks, chunk({}, 'tool_calls')]);
  assert.equal(events.at(-1).ok, true);
  assert.deepEqual(events.at(-1).value.calls.map((c) => c.parameters), [{ city: 'Oslo' }]);
  events = await all([...chunks, chunk({}, 'length')]);
  assert.equal(events.at(-1).error.code, 'incomplete_call');
  events = await all([
    { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {} } },
    { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"city": "Oslo"}' } },
    { type: 'message_delta', delta: { stop_reason: 'tool_use' } },
  ]);
  assert.deepEqual(events.at(-1).value.calls, [{ tool: 'get_weather', parameters: { city: 'Oslo' }, id: 'toolu_1', repairs: [] }]);
});

test('a whole response as a chunk reads as extractCalls', async () => {
  // A server that ignored `"stream": true`: an Anthropic message read as the whole message is
  // (it was refused), and a cut after text written after the call is the text's.
  const message = {
    type: 'message', role: 'assistant', stop_reason: 'max_tokens', content: [
      { type: 'text', text: 'Checking.' },
      { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } },
      { type: 'text', text: 'Now I will expl' }],
  };
  const events = [];
  for await (const e of toolmend.stream([message])) events.push(e);
  const whole = toolmend.extractCalls(JSON.stringify(message));
  assert.equal(events.at(-1).ok, true);
  assert.deepEqual(events.at(-1).value.calls, whole.calls);
  assert.deepEqual(whole.calls[0].parameters, { city: 'Oslo' });
  assert.equal(events.at(-1).value.text, 'Checking.\nNow I will expl');
  assert.equal(whole.text, 'Checking.\nNow I will expl');
});

test('whole parameters on request (argumentsEvents: snapshot)', () => {
  for (const reply of REPLIES) {
    const chars = Array.from(reply);
    // An `arguments` event due at every byte, for the most snapshots to compare.
    const plain = run(chars, { argumentsStep: 1 });
    const whole = run(chars, { argumentsEvents: 'snapshot', argumentsStep: 1 });
    assert.ok(plain.every((e) => !('parameters' in e)));
    // Each carries what the deltas so far add up to (the library's rule, issue 30).
    // `rebuilt` adds the events' own arrays and objects to what it builds: a copy keeps them.
    const shown = rebuilt(structuredClone(whole));
    const args = whole.filter((e) => e.event === 'arguments');
    args.forEach((e, i) => assert.deepEqual(e.parameters, shown[i].parameters));
    assert.deepEqual(
      whole.map(({ parameters, ...rest }) => rest),
      plain,
    );
    assert.deepEqual(run(chars, { argumentsEvents: 'delta', argumentsStep: 1 }), plain);
  }
  assert.throws(() => new toolmend.Stream({ argumentsEvents: 'whole' }), /snapshot/);
});
