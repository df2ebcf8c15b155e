#!/usr/bin/env node
// A toolmend client for Node agents, with nothing beyond Node's standard library.
//
// It keeps one long-running `toolmend args` process and one `toolmend calls` process (a
// "co-process"): each request is one JSON line on the child's stdin, and the answer is the one
// record the child writes for it (`--records --line-buffered`). Starting a process per value
// would cost far more than the mending itself. If a child dies, it is started again and the
// requests it had not answered are sent once more.
//
//   import { Toolmend } from "./toolmend_client.mjs";
//   const tm = new Toolmend();
//   const record = await tm.mendArguments('"{\\"city\\": \\"Oslo\\",}"');
//   record.value;    // { city: "Oslo" }
//   const { response, problems } = await tm.mendOpenAIResponse(openaiResponse);
//   tm.close();
//
// Run `node toolmend_client.mjs --self-test` to check it against a toolmend binary (the
// TOOLMEND environment variable, else `toolmend` on PATH, else target/debug/toolmend).

import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

/** The toolmend binary: $TOOLMEND, else on PATH, else this repository's debug build. */
export function findBinary() {
  if (process.env.TOOLMEND) return process.env.TOOLMEND;
  for (const dir of (process.env.PATH || "").split(delimiter)) {
    if (dir && existsSync(join(dir, "toolmend"))) return join(dir, "toolmend");
  }
  const here = dirname(fileURLToPath(import.meta.url));
  return join(here, "..", "..", "target", "debug", "toolmend");
}

/**
 * One toolmend child: a JSON line in, one record out, in order.
 *
 * `--input jsonl` (each request is {"text": ..., "id": n}) keeps a value with line breaks in it
 * as one input, and the `id` copied into each record matches it to its request.
 */
export class CoProcess {
  constructor(argv) {
    this.argv = argv;
    this.child = null;
    this.nextId = 0;
    this.restarts = 0;
    this.started = false;
    this.pending = new Map(); // id -> { line, resolve, reject, attempts }
  }

  start() {
    const child = spawn(this.argv[0], this.argv.slice(1), {
      stdio: ["pipe", "pipe", "inherit"],
    });
    this.child = child;
    child.stdin.on("error", () => {}); // a dead child is handled on "exit"
    createInterface({ input: child.stdout }).on("line", (line) => {
      let record;
      try {
        record = JSON.parse(line);
      } catch (e) {
        return this.failAll(new Error(`unreadable record: ${line}`));
      }
      const waiting = this.pending.get(record.id);
      if (!waiting) return this.failAll(new Error(`answer out of step: ${line}`));
      this.pending.delete(record.id);
      waiting.resolve(record);
    });
    child.on("error", (e) => {
      // The child never ran: the next request starts one again.
      if (this.child === child) this.child = null;
      this.failAll(new Error(`cannot start ${this.argv[0]}: ${e.message}`));
    });
    child.on("exit", () => {
      if (this.child !== child) return;
      this.child = null;
      // What the dead child had not answered goes to a new one, once.
      if (this.pending.size === 0) return;
      this.restarts += 1;
      const retry = [...this.pending.values()];
      for (const waiting of retry) {
        if (waiting.attempts >= 2) {
          this.pending.delete(waiting.id);
          waiting.reject(new Error(`${this.argv.join(" ")} died twice on one request`));
        }
      }
      if (this.pending.size > 0) {
        this.start();
        for (const waiting of this.pending.values()) this.send(waiting);
      }
    });
  }

  send(waiting) {
    waiting.attempts += 1;
    this.child.stdin.write(waiting.line + "\n");
  }

  failAll(error) {
    for (const waiting of this.pending.values()) waiting.reject(error);
    this.pending.clear();
  }

  /** Sends `payload` (an object, given an `id` here); resolves to its record. */
  request(payload) {
    if (this.child === null || this.child.exitCode !== null || this.child.signalCode !== null) {
      if (this.started) this.restarts += 1;
      this.started = true;
      this.start();
    }
    const id = ++this.nextId;
    return new Promise((resolve, reject) => {
      const waiting = { id, line: JSON.stringify({ ...payload, id }), resolve, reject, attempts: 0 };
      this.pending.set(id, waiting);
      this.send(waiting);
    });
  }

  pid() {
    return this.child ? this.child.pid : null;
  }

  close() {
    if (this.child) {
      const child = this.child;
      this.child = null;
      child.stdin.end();
    }
  }
}

/** The two co-processes: `args` for tool-call arguments, `calls` for raw model replies. */
export class Toolmend {
  /**
   * `truncated`: what `mendArguments` does with arguments that were cut off before their end
   * (`{"dry_run": fal`). "error" (the default, for an agent about to run the calls) refuses them
   * with the code `truncated`; "heal" closes them and reports it.
   */
  constructor(binary = findBinary(), { truncated = "error" } = {}) {
    const common = ["--records", "--line-buffered", "--input", "jsonl"];
    this.args = new CoProcess([binary, "args", ...common, "--truncated", truncated]);
    this.calls = new CoProcess([binary, "calls", ...common]);
  }

  close() {
    this.args.close();
    this.calls.close();
  }

  /**
   * Mends tool-call arguments. Resolves to the record: {ok: true, value, repairs, dropped} or
   * {ok: false, error: {code, message, original, offset?}}.
   */
  mendArguments(text) {
    return this.args.request({ text });
  }

  /**
   * Finds the tool calls in a raw model reply (a string) or an assistant message (an object).
   * A success record's value is {calls: [{tool, parameters, ...}], text, reasoning, incomplete}.
   */
  extractCalls(reply) {
    return this.calls.request(typeof reply === "string" ? { text: reply } : reply);
  }

  /**
   * Returns {response, problems}: a copy of an OpenAI-style chat completion whose tool calls are
   * clean, and the problems found as [{choice, id, error}].
   *
   * Each `tool_calls[].function.arguments` string is mended in place; a call whose arguments
   * cannot be mended is left as it was and reported. A message with no `tool_calls` whose text
   * holds calls (an open model writing `<tool_call>…`, `[TOOL_CALLS]…`) gets them as
   * `tool_calls`, and its `content` becomes the text around them.
   *
   * A call that was cut off is never returned as mended: arguments cut short are reported
   * (`truncated`, unless the client was made with {truncated: "heal"}), a call cut in the text
   * is reported (`incomplete_call`), and so is every call of a choice whose `finish_reason` is
   * "length" (the model was stopped mid-output).
   */
  async mendOpenAIResponse(original) {
    const response = structuredClone(original);
    const problems = [];
    for (const [index, choice] of (response.choices || []).entries()) {
      const message = choice.message || {};
      if (choice.finish_reason === "length") {
        for (const call of message.tool_calls || []) {
          problems.push({ choice: index, id: call.id ?? null, error: cutByLength() });
        }
        if (!(message.tool_calls || []).length && typeof message.content === "string") {
          const record = await this.extractCalls(message.content);
          if (!record.ok || record.value.calls.length > 0) {
            problems.push({ choice: index, id: null, error: cutByLength() });
          }
        }
        continue;
      }
      if (message.tool_calls && message.tool_calls.length > 0) {
        // Sent together: the child answers them in order.
        const records = await Promise.all(
          message.tool_calls.map((call) => this.mendArguments(call.function?.arguments || "{}")),
        );
        records.forEach((record, n) => {
          const call = message.tool_calls[n];
          // JSON.stringify keeps the value, not every number's spelling (10.50, big integers).
          if (record.ok) call.function.arguments = JSON.stringify(record.value);
          else problems.push({ choice: index, id: call.id ?? null, error: record.error });
        });
      } else if (typeof message.content === "string") {
        const record = await this.extractCalls(message.content);
        if (!record.ok) {
          problems.push({ choice: index, id: null, error: record.error });
        } else if (record.value.calls.length > 0) {
          message.tool_calls = record.value.calls.map((call, n) => ({
            id: call.id ?? `call_${index}_${n}`,
            type: "function",
            function: { name: call.tool, arguments: JSON.stringify(call.parameters) },
          }));
          message.content = record.value.text;
          choice.finish_reason = "tool_calls";
        }
      }
    }
    return { response, problems };
  }
}

function cutByLength() {
  return {
    code: "incomplete_call",
    message: 'the response was cut off (finish_reason "length"): its calls may be incomplete',
  };
}

async function selfTest() {
  const binary = findBinary();
  let checks = 0;
  const expect = (condition, what) => {
    if (!condition) {
      console.error(`self-test FAILED: ${what}`);
      process.exit(1);
    }
    checks += 1;
  };
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  const show = (v) => JSON.stringify(v);

  const tm = new Toolmend(binary);
  try {
    const clean = await tm.mendArguments('{"command": "ls -la", "n": 10.50}');
    expect(clean.ok && same(clean.value, { command: "ls -la", n: 10.5 }), `clean: ${show(clean)}`);
    expect(same(clean.repairs, []), `clean value has no repairs: ${show(clean)}`);

    const broken = await tm.mendArguments("\"{\\\"city\\\": 'Oslo',}\"\n");
    expect(broken.ok && same(broken.value, { city: "Oslo" }), `broken: ${show(broken)}`);
    const kinds = broken.repairs.map((r) => r.kind);
    expect(same(kinds, ["unquote", "single_quotes", "trailing_comma"]), `repairs: ${kinds}`);

    const multiline = await tm.mendArguments('{\n  "a": 1\n}');
    expect(multiline.ok && same(multiline.value, { a: 1 }), `multi-line: ${show(multiline)}`);

    const error = await tm.mendArguments("[1, 2]");
    expect(!error.ok && error.error.code === "not_an_object", `error: ${show(error)}`);

    // Many requests in flight at once come back matched to their own inputs.
    const many = await Promise.all([...Array(50).keys()].map((i) => tm.mendArguments(`{"i": ${i},}`)));
    expect(many.every((r, i) => r.ok && r.value.i === i), "50 concurrent requests");

    // Kill the child: the next request starts a new one and still gets its answer.
    const old = tm.args.pid();
    const exited = new Promise((resolve) => tm.args.child.once("exit", resolve));
    tm.args.child.kill("SIGKILL");
    await exited;
    const after = await tm.mendArguments('{"after": "restart"}');
    expect(after.ok && same(after.value, { after: "restart" }), `after restart: ${show(after)}`);
    expect(tm.args.restarts === 1 && tm.args.pid() !== old, "the child was restarted");

    // Killed with requests in flight (stopped first, so it cannot answer them before it dies):
    // they are sent again to a new child.
    tm.args.child.kill("SIGSTOP");
    const inFlight = [tm.mendArguments('{"x": 1,}'), tm.mendArguments('{"y": 2}')];
    tm.args.child.kill("SIGKILL");
    const answers = await Promise.all(inFlight);
    expect(same(answers.map((r) => r.value), [{ x: 1 }, { y: 2 }]), `in flight: ${show(answers)}`);
    expect(tm.args.restarts === 2, `restarted again: ${tm.args.restarts}`);

    const response = {
      id: "chatcmpl-1",
      object: "chat.completion",
      choices: [
        {
          index: 0,
          finish_reason: "tool_calls",
          message: {
            role: "assistant",
            content: null,
            tool_calls: [
              {
                id: "call_1",
                type: "function",
                function: { name: "get_weather", arguments: '"{\\"city\\": \\"Oslo\\"}"' },
              },
              {
                id: "call_2",
                type: "function",
                function: { name: "run", arguments: "{'cmd': 'ls', 'all': True,}" },
              },
              { id: "call_3", type: "function", function: { name: "run", arguments: "not json at all" } },
            ],
          },
        },
        {
          index: 1,
          finish_reason: "stop",
          message: {
            role: "assistant",
            content: 'Checking.\n<tool_call>\n{"name": "get_time", "arguments": {"tz": "UTC"}}\n</tool_call>',
          },
        },
      ],
    };
    const { response: mended, problems } = await tm.mendOpenAIResponse(response);
    const calls = mended.choices[0].message.tool_calls;
    expect(calls[0].function.arguments === '{"city":"Oslo"}', `call_1: ${show(calls[0])}`);
    expect(calls[1].function.arguments === '{"cmd":"ls","all":true}', `call_2: ${show(calls[1])}`);
    expect(calls[2].function.arguments === "not json at all", "call_3 left as it was");
    expect(
      same(problems.map((p) => [p.choice, p.id, p.error.code]), [[0, "call_3", "not_an_object"]]),
      `problems: ${show(problems)}`,
    );
    const second = mended.choices[1];
    expect(
      same(second.message.tool_calls[0].function, { name: "get_time", arguments: '{"tz":"UTC"}' }),
      `calls from text: ${show(second)}`,
    );
    expect(second.message.content === "Checking.", `content: ${show(second)}`);
    expect(
      response.choices[0].message.tool_calls[0].function.arguments === '"{\\"city\\": \\"Oslo\\"}"',
      "the response given is not changed",
    );

    // A cut-off call is never handed back as a call: arguments cut short, a call cut in the
    // text, and every call of a response stopped by its length are reported.
    const call = (id, args) => ({ id, type: "function", function: { name: "deploy", arguments: args } });
    const cut = {
      choices: [
        {
          finish_reason: "tool_calls",
          message: {
            role: "assistant",
            content: null,
            tool_calls: [
              call("c1", '{"target": "prod", "dry_run": fal'),
              call("c2", '{"target": "prod", "dry_run": false}'),
            ],
          },
        },
        {
          finish_reason: "stop",
          message: { role: "assistant", content: '<tool_call>{"name": "deploy", "arguments": {"target": "pr' },
        },
        {
          finish_reason: "length",
          message: { role: "assistant", content: null, tool_calls: [call("c3", '{"target": "prod"}')] },
        },
      ],
    };
    const { response: cutMended, problems: cutProblems } = await tm.mendOpenAIResponse(cut);
    expect(
      same(cutProblems.map((p) => [p.choice, p.id, p.error.code]), [
        [0, "c1", "truncated"],
        [1, null, "incomplete_call"],
        [2, "c3", "incomplete_call"],
      ]),
      `cut calls: ${show(cutProblems)}`,
    );
    const first = cutMended.choices[0].message.tool_calls;
    expect(first[0].function.arguments === '{"target": "prod", "dry_run": fal', `cut call left: ${show(first[0])}`);
    expect(first[1].function.arguments === '{"target":"prod","dry_run":false}', `whole call: ${show(first[1])}`);
    expect(!("tool_calls" in cutMended.choices[1].message), "no call from cut text");
    const healing = new Toolmend(binary, { truncated: "heal" });
    try {
      const healed = await healing.mendArguments('{"target": "prod", "dry_run": fal');
      expect(
        healed.ok && same(healed.value, { target: "prod", dry_run: false }) &&
          healed.repairs.some((r) => r.kind === "truncated_literal"),
        `truncated: "heal" heals and says so: ${show(healed)}`,
      );
    } finally {
      healing.close();
    }

    const found = await tm.extractCalls('[TOOL_CALLS]get_time[ARGS]{"tz": "UTC"}');
    expect(found.ok && found.value.calls[0].tool === "get_time", `calls: ${show(found)}`);
  } finally {
    tm.close();
  }
  console.log(`node client self-test: ${checks} checks passed (${binary})`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv.slice(2).join(" ") === "--self-test") {
    await selfTest().catch((e) => {
      console.error(`self-test FAILED: ${e.message}`);
      process.exit(1);
    });
  } else {
    console.error(`usage: node ${process.argv[1]} --self-test   (import { Toolmend } to use it)`);
    process.exit(2);
  }
}
