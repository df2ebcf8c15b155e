'use strict';
// One truth on real servers' transcripts (fixtures/server): extractCalls, the response helpers
// (callsFromOpenAI / callsFromAnthropic, on the raw HTTP body and on the `openai` client's
// object) and stream (on the SSE's chunks and on the `openai` client's chunks) give what
// `toolmend calls` gives (fixtures/server/expect.json, checked against the CLI by
// tests/server_transcripts.rs).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const toolmend = require('toolmend');

const ROOT = process.env.TOOLMEND_ROOT || path.resolve(__dirname, '..', '..');
const HERE = path.join(ROOT, 'fixtures', 'server');

function read(name, ext) {
  const file = path.join(HERE, name + ext);
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : null;
}

/**
 * The JSON payloads of an SSE text's events (lines may end with CR, LF or CRLF), read as
 * `calls --stream --input sse` reads them: an event's `data:` lines join with a newline, and
 * data that is a whole JSON value is a chunk at once (a chunk split over lines, chunks with no
 * blank line between them).
 */
function sseChunks(text) {
  const chunks = [];
  let data = null;
  for (const line of text.split(/\r\n|\r|\n/)) {
    if (line === '') {
      assert.ok(data === null || data.trim() === '', String(data));
      data = null;
    } else if (line.startsWith('data:')) {
      const piece = line.slice(5).startsWith(' ') ? line.slice(6) : line.slice(5);
      data = data === null ? piece : `${data}\n${piece}`;
      if (data.trim() === '[DONE]') {
        data = null;
        continue;
      }
      try {
        chunks.push(JSON.parse(data));
        data = null;
      } catch {
        // Not whole yet: more data lines follow.
      }
    }
  }
  return chunks;
}

/** A record or `end` event as compared (as tests/server_transcripts.rs compares them). */
function normal(record) {
  const out = { ...record };
  delete out.event;
  delete out.line;
  delete out.id;
  if (out.error) {
    out.error = { ...out.error };
    delete out.error.original;
    // Where a stream's error was found is the surface's own (a CLI input line, a chunk).
    out.error.message = out.error.message.replace(/^(line|chunk) \d+: /, '');
  }
  return out;
}

/** What an API call returns or throws, as a CLI record. */
function asRecord(call) {
  try {
    const value = call();
    const { repairs = [], ...rest } = value;
    return { ok: true, value: rest, repairs };
  } catch (e) {
    if (!(e instanceof toolmend.ToolmendError)) throw e;
    const record = { ok: false, error: { code: e.code, message: e.message } };
    if (e.offset !== null && e.offset !== undefined) record.error.offset = e.offset;
    if (e.value !== null && e.value !== undefined) record.value = e.value;
    return record;
  }
}

async function endOf(chunks) {
  let last;
  for await (const event of toolmend.stream(chunks)) last = event;
  return normal(last);
}

test('every surface gives the recorded truth of the server transcripts', async () => {
  const expect = JSON.parse(fs.readFileSync(path.join(HERE, 'expect.json'), 'utf8'));
  const transcripts = JSON.parse(fs.readFileSync(path.join(HERE, 'transcripts.json'), 'utf8'));
  assert.ok(transcripts.length >= 8, String(transcripts.length));
  const disagree = [];
  const same = (name, what, got, want) => {
    try {
      assert.deepEqual(got, want);
    } catch {
      disagree.push(`${name} ${what}:\n  got      ${JSON.stringify(got)}\n  expected ${JSON.stringify(want)}`);
    }
  };
  for (const t of transcripts) {
    const want = expect[t.name];
    // Gemini's API has no helper of its own: extractCalls reads it.
    const helper = { openai: toolmend.callsFromOpenAI, anthropic: toolmend.callsFromAnthropic }[t.api] ?? toolmend.extractCalls;
    for (const [what, text, truth] of [['raw HTTP', read(t.name, '.json'), want.whole], ['openai client', read(t.name, '.client.json'), want.client]]) {
      if (text === null) continue;
      const response = JSON.parse(text);
      same(t.name, `extractCalls on ${what}`, asRecord(() => toolmend.extractCalls(response)), truth);
      same(t.name, `${helper.name} on ${what}`, asRecord(() => helper(response)), truth);
    }
    same(t.name, 'stream on SSE chunks', await endOf(sseChunks(read(t.name, '.sse'))), want.stream);
    const chunks = read(t.name, '.chunks.jsonl');
    if (chunks !== null) {
      const items = chunks.split('\n').filter((l) => l).map((l) => JSON.parse(l));
      same(t.name, 'stream on openai client chunks', await endOf(items), want.chunks);
    }
  }
  assert.deepEqual(disagree, []);
});

test('stream on every recorded shape ends as the CLI does', async () => {
  // fixtures/stream: fragments, calls with no index or all at index 0, server tools, content
  // parts, stop reasons; `stream` on each one's chunks ends with the CLI's `end` event (`.jsonl`
  // ones, Ollama lines and Bedrock `ConverseStream` events: one chunk a line, `--input jsonl`).
  const { spawnSync } = require('node:child_process');
  const dir = path.join(ROOT, 'fixtures', 'stream');
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.sse') || f.endsWith('.jsonl')).sort();
  assert.ok(files.length >= 9, files.join(' '));
  for (const file of files) {
    const text = fs.readFileSync(path.join(dir, file), 'utf8');
    const framing = file.endsWith('.sse') ? 'sse' : 'jsonl';
    const out = spawnSync(toolmend.binaryPath(), ['calls', '--stream', '--input', framing], { input: text });
    const lines = out.stdout.toString().trim().split('\n');
    const cli = JSON.parse(lines[lines.length - 1]);
    const chunks = framing === 'sse' ? sseChunks(text) : text.split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
    assert.deepEqual(await endOf(chunks), normal(cli), file);
  }
});
