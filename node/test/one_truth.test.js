'use strict';
// One truth: extractCalls gives what `toolmend calls` gives, for every reply of the calls
// fixtures with its options (tools files, formats, the envelope required), success or failure.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const toolmend = require('toolmend');

const ROOT = process.env.TOOLMEND_ROOT || path.resolve(__dirname, '..', '..');

/** [name, reply, CLI options, API options] of every calls fixture case the API's options cover. */
function callsCases() {
  const dir = path.join(ROOT, 'fixtures', 'calls');
  const cases = [];
  for (const file of fs.readdirSync(dir).sort()) {
    if (!file.endsWith('.jsonl')) continue;
    fs.readFileSync(path.join(dir, file), 'utf8').split('\n').forEach((line, i) => {
      if (!line.trim()) return;
      const c = JSON.parse(line);
      if (c.command !== 'calls') return;
      const cli = [...(c.options || [])];
      const options = {};
      for (let k = 0; k < cli.length; k++) {
        const flag = cli[k];
        if (flag === '--tools') {
          const tools = path.join(dir, cli[k + 1]);
          cli[k + 1] = tools;
          options.tools = tools.endsWith('.json') ? JSON.parse(fs.readFileSync(tools, 'utf8')) : tools;
          k++;
        } else if (flag === '--format') {
          options.format = cli[++k];
        } else if (flag === '--max-nesting') {
          options.maxNesting = Number(cli[++k]);
        } else if (flag === '--require-terminate') {
          options.requireTerminate = true;
        } else if (flag === '--strict') {
          options.strict = true;
        } else {
          return; // --shape and other output-only flags: not the extractor's business
        }
      }
      cases.push([`${file}:${i + 1} ${c.name || ''}`, c.input, cli, options]);
    });
  }
  return cases;
}

function cliRecord(options, reply) {
  const framing = typeof reply === 'string' ? [] : ['--input', 'jsonl'];
  const input = typeof reply === 'string' ? reply : JSON.stringify(reply) + '\n';
  const out = spawnSync(toolmend.binaryPath(), ['calls', ...options, ...framing, '--records'], { input });
  const lines = out.stdout.toString().trim().split('\n');
  assert.equal(lines.length, 1, out.stderr.toString());
  return JSON.parse(lines[0]);
}

test('extractCalls equals toolmend calls on every calls fixture', () => {
  const cases = callsCases();
  assert.ok(cases.length > 300, String(cases.length));
  const disagree = [];
  for (const [name, input, cli, options] of cases) {
    const expected = cliRecord(cli, input);
    let reply = input;
    if (typeof input !== 'string') {
      // A JSON-lines record: the reply is its `text`, or the API response it is.
      const keys = Object.keys(input);
      reply = keys.every((k) => k === 'text' || k === 'id') && 'text' in input ? input.text : input;
    }
    let got;
    try {
      got = { ok: true, value: toolmend.extractCalls(reply, options) };
    } catch (e) {
      if (!(e instanceof toolmend.ToolmendError)) throw e;
      got = { ok: false, code: e.code, message: e.message, value: e.value ?? null };
    }
    let want;
    if (expected.ok) {
      want = { ok: true, value: expected.value };
      if (expected.repairs && expected.repairs.length) want.value = { ...expected.value, repairs: expected.repairs };
    } else {
      want = { ok: false, code: expected.error.code, message: expected.error.message, value: expected.value ?? null };
    }
    // Both through JSON text: 1E400 is Infinity in a parsed value, null once written.
    const norm = (v) => JSON.parse(JSON.stringify(v));
    try {
      assert.deepEqual(norm(got), norm(want));
    } catch {
      disagree.push(`${name}\n  cli:  ${JSON.stringify(want)}\n  node: ${JSON.stringify(got)}`);
    }
  }
  assert.deepEqual(disagree.slice(0, 10), []);
});
