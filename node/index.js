'use strict';
/**
 * toolmend: broken LLM tool-call text in, clean validated JSON (or a structured error) out.
 *
 * In-process over the toolmend Rust library (napi-rs), and the `toolmend` command
 * (`npx toolmend`) from the same package. Every failure is a `ToolmendError` whose `code` is
 * the stable code of the CLI's records.
 *
 *   const toolmend = require('toolmend');
 *   toolmend.mendArgs('"{\\"city\\": \\"Oslo\\",}"');   // { city: 'Oslo' }
 *   const records = await toolmend.mendMany(lines);     // off the main thread
 */

const fs = require('node:fs');
const path = require('node:path');
const readline = require('node:readline');
const { spawn } = require('node:child_process');

// This platform's native module: built from source here, or its prebuilt package (loader.js).
const loader = require('./loader.js');
const native = loader.load();

/** An input toolmend could not mend, or a call it could not use. */
class ToolmendError extends Error {
  constructor(code, message, { offset = null, value = null, violations = [] } = {}) {
    super(message);
    this.name = 'ToolmendError';
    /** The stable error code (`invalid_json`, `not_an_object`, `incomplete_call`, ...). */
    this.code = code;
    /** The byte offset of the failure, or null. */
    this.offset = offset;
    /** From `extractCalls`: what the reply held (`calls`, `text`, `incomplete`, `rejected`). */
    this.value = value;
    /** For `invalid_parameters`: the schema violations, each `{path, message}`. */
    this.violations = violations;
  }
}

function typeName(x) {
  if (x === null) return 'null';
  if (Array.isArray(x)) return 'array';
  if (typeof x === 'object') return (x.constructor && x.constructor.name) || 'object';
  return typeof x;
}

// A lone surrogate, for Node versions without String.prototype.isWellFormed.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** The error of a string holding a lone surrogate (the library's, as Python and the CLI say it). */
function loneSurrogate(text) {
  const wellFormed = typeof text.toWellFormed === 'function' ? text.toWellFormed() : text.replace(LONE_SURROGATE, '\uFFFD');
  const { code, message, original } = native.loneSurrogate(wellFormed);
  return { code, message, original };
}

/** An input as the native module takes it (a string or a Buffer), or the error it already is. */
function checkInput(text) {
  if (text === null || text === undefined) {
    return { error: { code: 'empty_input', message: `input is ${text}`, original: '' } };
  }
  if (typeof text === 'string') {
    if (typeof text.isWellFormed === 'function' && !text.isWellFormed()) return { error: loneSurrogate(text) };
    return { text };
  }
  if (Buffer.isBuffer(text)) return { text };
  if (text instanceof Uint8Array) return { text: Buffer.from(text.buffer, text.byteOffset, text.byteLength) };
  return {
    error: { code: 'invalid_input', message: `expected a string or bytes, found ${typeName(text)}`, original: '' },
  };
}

/** One input's result, with the fields of a `toolmend args --records` record. */
class MendRecord {
  // Private fields, not defineProperty: V8 keeps the object's shape fast. Two: the fewer a
  // record's fields, the less V8 copies as it moves the batch's records out of its young
  // generation. `#src` is where the record's repairs and dropped values are (parsed only when
  // read): for a record of a batch its part (`{narrow, wide, meta}`: the two strings the native
  // module wrote the part's records into, and their numbers) with `#at` its place in `meta`;
  // else the native module's record with `#at` -1. Once the value is parsed, `#at` is
  // `{at, value}`.
  #src;
  #at;

  constructor(raw, part, k, input) {
    if (part !== undefined) {
      // A record of a batch: `meta[k..k + 7]` is kind, segment, four bounds, error offset.
      // Kind 3: ok, its value's text the input string itself (`input`), not in the segment.
      const meta = part.meta;
      const kind = meta[k];
      const segment = meta[k + 1] % 2 === 0 ? part.narrow : part.wide;
      if (kind !== 1) {
        this.ok = true;
        this.json = kind === 3 ? input : segment.slice(meta[k + 2], meta[k + 3]);
        this.code = null;
        this.message = null;
        this.offset = null;
        this.original = null;
      } else {
        this.ok = false;
        this.json = null;
        this.code = segment.slice(meta[k + 2], meta[k + 3]);
        this.message = segment.slice(meta[k + 3], meta[k + 4]);
        this.offset = meta[k + 6] < 0 ? null : meta[k + 6];
        this.original = segment.slice(meta[k + 4], meta[k + 5]);
      }
      this.violations = [];
      this.#src = part;
      this.#at = k;
      return;
    }
    /** True when the input gave a value. */
    this.ok = raw.ok;
    /** The value as compact JSON text, every number as the input wrote it (null on failure). */
    this.json = raw.json ?? null;
    /** The stable error code (null on success). */
    this.code = raw.code ?? null;
    /** What failed and where (null on success). */
    this.message = raw.message ?? null;
    /** The byte offset of the failure, where one applies. */
    this.offset = raw.offset ?? null;
    /** The input cut to 100 characters (failures only). */
    this.original = raw.original ?? null;
    /** For `invalid_parameters` (a `schema` option): the violations, `{path, keyword, message}` each. */
    this.violations = raw.violations ? JSON.parse(raw.violations) : [];
    this.#src = raw;
    this.#at = -1;
  }

  /** The mended value (parsed from `json` on first use; null on failure). */
  get value() {
    if (!this.ok) return null;
    let at = this.#at;
    if (typeof at === 'number') this.#at = at = { at, value: JSON.parse(this.json) };
    return at.value;
  }

  /** What was changed: `{kind, offset?, layers?, text?, key?}` each. */
  get repairs() {
    if (!this.ok) return [];
    return JSON.parse(this.#partText(3) ?? this.#src.repairs);
  }

  /** Values in the input that are not in the value (concatenated values). */
  get dropped() {
    if (!this.ok) return [];
    const text = this.#partText(4);
    return text === undefined ? this.#src.dropped.map((d) => JSON.parse(d)) : JSON.parse(text);
  }

  /**
   * For a record of a batch, the text between bounds `from` and `from + 1` of its numbers in
   * its part; else undefined.
   */
  #partText(from) {
    const src = this.#src;
    const meta = src.meta;
    if (meta === undefined) return undefined;
    const k = typeof this.#at === 'number' ? this.#at : this.#at.at;
    return (meta[k + 1] % 2 === 0 ? src.narrow : src.wide).slice(meta[k + from], meta[k + from + 1]);
  }

  /** The value, or the failure thrown as a ToolmendError. */
  unwrap() {
    if (this.ok) return this.value;
    throw new ToolmendError(this.code, this.message, { offset: this.offset, violations: this.violations });
  }

  /** The record as `toolmend args --records` writes it (without `line`). */
  toJSON() {
    if (this.ok) return { ok: true, value: this.value, repairs: this.repairs, dropped: this.dropped };
    const error = { code: this.code, message: this.message, original: this.original };
    if (this.offset !== null) error.offset = this.offset;
    if (this.violations.length) error.violations = this.violations;
    return { ok: false, error };
  }
}

function failedRecord(error) {
  return new MendRecord({ ok: false, ...error });
}

function nativeOptions(options) {
  const o = options || {};
  return {
    target: o.target,
    concat: o.concat,
    truncated: o.truncated,
    strict: o.strict,
    maxDepth: o.maxDepth,
    maxNesting: o.maxNesting,
    maxBytes: o.maxBytes,
    threads: o.threads,
    // A JSON Schema object crosses as JSON text.
    schema: o.schema === undefined || o.schema === null ? undefined : JSON.stringify(o.schema),
  };
}

/** The args (`target: 'object'`) or repair (`target: 'any'`) pipeline for many inputs. */
class Mender {
  constructor(options) {
    const settings = nativeOptions(options);
    this._native = new native.Mender(settings);
    // With a schema the value comes with the record's coercions and violations (mendValue).
    this._schema = options != null && options.schema != null;
    // `value` of a string: a plain native function over a mender of its own, which costs less
    // per call than a method of the native class (made on first use).
    this._settings = settings;
    this._value = null;
  }

  /** One input's Record; never throws for bad input. */
  mend(text) {
    const input = checkInput(text);
    if (input.error) return failedRecord(input.error);
    return new MendRecord(this._native.mend(input.text));
  }

  /** The value, or the failure thrown as a ToolmendError: `mend(text).unwrap()` without the
   * Record (one string crosses from the native module, not a record). */
  value(text) {
    let out;
    if (typeof text === 'string' && !this._schema) {
      // The native module finds a lone surrogate itself (null), as it turns the text into UTF-8.
      this._value ??= native.valueFunction(this._settings);
      out = this._value(text) ?? loneSurrogate(text);
    } else {
      const input = checkInput(text);
      out = input.error ? input.error : this._native.mendValue(input.text);
    }
    if (typeof out === 'string') return JSON.parse(out);
    const violations = out.violations ? JSON.parse(out.violations) : [];
    throw new ToolmendError(out.code, out.message, { offset: out.offset ?? null, violations });
  }
}

// Menders of the one-call functions, by their options: their buffers are kept between calls.
const menders = new Map();
// Without options (the common call) no key is built.
const defaultMenders = { object: null, any: null, args: null };
function menderFor(options, target) {
  if (options === undefined || options === null) {
    return (defaultMenders[target] ??= new Mender({ target }));
  }
  options = { ...options, target };
  const key = JSON.stringify(options || {});
  let mender = menders.get(key);
  if (!mender) {
    if (menders.size >= 16) menders.clear();
    mender = new Mender(options);
    menders.set(key, mender);
  }
  return mender;
}

// What mendArgs does with arguments cut off before their end when no `truncated` is given:
// the library's rule for tool arguments about to be run (refused: code truncated).
const ARGS_TRUNCATED = native.toolArgumentsTruncated();

/** Tool-call arguments mended into an object, as `toolmend args`. Throws ToolmendError.
 * Arguments cut off before their end are refused unless `truncated: 'heal'` is given. */
function mendArgs(text, options) {
  if (options === undefined || options === null) {
    defaultMenders.args ??= new Mender({ target: 'object', truncated: ARGS_TRUNCATED });
    return defaultMenders.args.value(text);
  }
  return menderFor({ ...options, truncated: options.truncated ?? ARGS_TRUNCATED }, 'object').value(text);
}

/** Almost-JSON repaired into any JSON value, as `toolmend repair`. Throws ToolmendError. */
function repair(text, options) {
  return menderFor(options, 'any').value(text);
}

/**
 * A batch as the native module takes it: the inputs (a copy: a caller may change its array
 * while an async batch runs) and, for each, the length of a string, `-1 - byteLength` for
 * bytes (a Uint8Array), or NaN for anything else, whose record is made here.
 */
function batch(inputs) {
  // The batch itself must be iterable (not a string): `mendMany(null)` is a ToolmendError.
  if (inputs == null || typeof inputs === 'string' || typeof inputs[Symbol.iterator] !== 'function') {
    throw new ToolmendError('invalid_input', `expected an array of inputs, found ${typeName(inputs)}`);
  }
  const items = Array.isArray(inputs) ? inputs.slice() : Array.from(inputs);
  const lengths = new Float64Array(items.length);
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    if (typeof item === 'string') lengths[i] = item.length;
    else lengths[i] = item instanceof Uint8Array ? -1 - item.byteLength : NaN;
  }
  return { items, lengths };
}

/**
 * The records of a batch from the native module's `[segments, meta]`. The native module leaves
 * to checkInput what is not text and strings with a lone surrogate (kind 2).
 */
function records([segments, meta], items) {
  const out = [];
  // A record keeps only its part (its two segments and its own numbers), not the batch's.
  for (let i = 0, start = 0; start < meta.length; ) {
    const first = meta[start + 1] - (meta[start + 1] % 2);
    let end = start + 7;
    while (end < meta.length && meta[end + 1] - (meta[end + 1] % 2) === first) end += 7;
    const part = { narrow: segments[first], wide: segments[first + 1], meta: meta.slice(start, end) };
    for (let k = 0; k < end - start; i++, k += 7) {
      if (part.meta[k] !== 2) {
        out.push(new MendRecord(null, part, k, items[i]));
      } else {
        // Without isWellFormed (Node 18) checkInput passes a string the native module refused.
        const item = items[i];
        out.push(failedRecord(checkInput(item).error ?? loneSurrogate(item)));
      }
    }
    start = end;
  }
  return out;
}

// The native module keeps the segment buffers V8 lets go of for the next batch's records; once
// no batch has run for a while (10 s, or TOOLMEND_NODE_POOL_IDLE_MS) it frees them. An unref'd
// timer: it never keeps the process alive.
const poolIdle = native.poolIdleMs();
let trimTimer = null;
function trimLater() {
  if (trimTimer !== null) clearTimeout(trimTimer);
  trimTimer = setTimeout(() => {
    trimTimer = null;
    native.trimPool();
  }, poolIdle + 500);
  trimTimer.unref();
}

/**
 * Every input's Record, in order: mended off the main thread on the CLI's threads
 * (`threads: 0`, one per core). Resolves to an array; never rejects for bad input.
 */
async function mendMany(inputs, options) {
  const { items, lengths } = batch(inputs);
  return new Promise((resolve, reject) => {
    // The main thread copies the inputs into the native module part by part (`feed`), called
    // back by the mending threads as they free room, so the event loop keeps turning.
    let settled = false;
    const wake = () => {
      if (settled) return;
      try {
        if (!many.feed(items)) return;
        settled = true;
        resolve(records(many.finish(), items));
        trimLater();
      } catch (e) {
        settled = true;
        many.abort();
        reject(e);
      }
    };
    const many = new native.Many(lengths, nativeOptions(options), wake);
    wake();
  });
}

/** `mendMany` on the calling thread (its worker threads still run in parallel). */
function mendManySync(inputs, options) {
  const { items, lengths } = batch(inputs);
  const out = records(native.mendManySync(items, lengths, nativeOptions(options)), items);
  trimLater();
  return out;
}

/** `toolmend calls` with one set of options and tools (loaded once). */
class CallExtractor {
  /**
   * `tools`: tool definitions (toolmend's, OpenAI's or MCP's) as an array or object, or the
   * path of a JSON or TOML tools file.
   */
  constructor(options) {
    this._native = nativeCalls(native.CallExtractor, options);
  }

  /**
   * The calls in one reply (text, or an assistant message as an object or content array):
   * `{calls, text, reasoning, incomplete}`. Throws ToolmendError when a call was cut off
   * (`incomplete_call`) or cannot be used, with what was found in `error.value`.
   */
  /**
   * The calls of one API response: `api` is `'openai'` (a chat completion or one of its
   * messages; `choice` picks the choice) or `'anthropic'` (a message or its content array).
   * Another API's response throws `invalid_input`; a stop reason that says the output was cut
   * makes the call written last `incomplete_call`.
   */
  extractResponse(response, api, choice = 0) {
    return thrown(this._native.extractResponse(JSON.stringify(response ?? null), api, choice));
  }

  extract(reply) {
    let raw;
    if (reply !== null && typeof reply === 'object' && !(reply instanceof Uint8Array)) {
      raw = this._native.extract(JSON.stringify(reply), true);
    } else {
      const input = checkInput(reply);
      if (input.error) throw new ToolmendError(input.error.code, input.error.message);
      raw = this._native.extract(input.text, false);
    }
    return thrown(raw);
  }
}

/** A native RawCalls as the value it holds, or thrown as a ToolmendError. */
function thrown(raw) {
  if (raw.ok) return JSON.parse(raw.json);
  throw new ToolmendError(raw.code, raw.message, {
    offset: raw.offset ?? null,
    value: raw.json ? JSON.parse(raw.json) : null,
    violations: raw.violations ? JSON.parse(raw.violations) : [],
  });
}

/** A native CallExtractor or Stream with these options (tools given as data or a path). */
function nativeCalls(Class, options, ...more) {
  const o = options || {};
  const tools = o.tools;
  try {
    return new Class({
      toolsPath: typeof tools === 'string' ? tools : undefined,
      toolsJson: tools && typeof tools === 'object' ? JSON.stringify(tools) : undefined,
      format: o.format,
      requireTerminate: o.requireTerminate,
      strict: o.strict,
      maxDepth: o.maxDepth,
      maxNesting: o.maxNesting,
      maxBytes: o.maxBytes,
    }, ...more);
  } catch (e) {
    if (/^invalid_input: /.test(e.message)) throw new ToolmendError('invalid_input', e.message.slice(15));
    throw e;
  }
}

/**
 * A reply read as it arrives (`toolmend calls --stream`; see docs/streaming.md). Each method
 * returns the events it makes known, objects with an `event` key: `call_start`, `arguments`
 * {index, path, open, and one of append / members / items: what the parameters gained at
 * `path`; with `argumentsEvents: 'snapshot'` also `parameters`, all of them so far},
 * `revised` {index, path: a key the model wrote again after its value was shown},
 * `call_end`, `incomplete`, `invalid`, `retracted`, `text`, `reasoning`, and last `end` (a
 * `toolmend calls --records` record).
 */
class Stream {
  /**
   * The options of CallExtractor (tools, format, requireTerminate, ...), `argumentsEvents`:
   * 'delta' (the default) or 'snapshot', and `argumentsStep`: bytes of a call's arguments
   * before its first `arguments` event and at least between two (default 128; 1 shows a short
   * call almost token by token).
   */
  constructor(options) {
    const kind = options && options.argumentsEvents;
    const step = options && options.argumentsStep;
    this._native = nativeCalls(
      native.Stream,
      options,
      kind == null ? undefined : String(kind),
      step == null ? undefined : Number(step),
    );
  }

  /** The next piece of the reply's text, split anywhere. */
  feed(chunk) {
    if (typeof chunk !== 'string') throw new TypeError(`feed takes a string, not ${typeName(chunk)}`);
    return JSON.parse(this._native.feed(chunk));
  }

  /** Reasoning a server sends apart from the text (`reasoning_content`, `thinking`). */
  feedReasoning(delta) {
    return JSON.parse(this._native.feedReasoning(String(delta)));
  }

  /** A piece of a tool call the server parsed (OpenAI `delta.tool_calls[i]`: `key` is its index). */
  feedCall(key, id, name, args) {
    return JSON.parse(this._native.feedCall(key, id ?? undefined, name ?? undefined, args ?? undefined));
  }

  /**
   * One chunk: a string (text), or a server's chunk as an object (an OpenAI chat-completions
   * chunk, an Anthropic event, an Ollama line, a Gemini or Responses event), read by the
   * library's rules (as `calls --stream --input jsonl` reads a line).
   */
  feedChunk(chunk) {
    if (typeof chunk === 'string') return this.feed(chunk);
    return JSON.parse(this._native.feedChunk(JSON.stringify(chunk)));
  }

  /** Ends the reply: the results and the `end` event (nothing on a second call). */
  finish() {
    return JSON.parse(this._native.finish());
  }
}

/**
 * The events of a reply whose pieces an iterable or async iterable yields (strings, or
 * OpenAI chat-completions chunks), ending with `end`.
 */
async function* stream(chunks, options) {
  const s = new Stream(options);
  for await (const chunk of chunks) yield* s.feedChunk(chunk);
  yield* s.finish();
}

/** The tool calls in one model reply, as `toolmend calls`. See CallExtractor. */
function extractCalls(reply, options) {
  return new CallExtractor(options).extract(reply);
}

/**
 * The tool calls of an OpenAI chat completion (or one of its messages), or of a Responses API
 * response (no choices: `choice` must be 0), by the library's rules (`extractResponse`). A call
 * cut off in its arguments, or written last before `finish_reason: "length"` (a Responses
 * `status: "incomplete"`), is never a call: it throws `incomplete_call`. An Anthropic message
 * throws `invalid_input`.
 */
function callsFromOpenAI(response, options = {}) {
  const { choice = 0, ...rest } = options;
  return new CallExtractor(rest).extractResponse(response, 'openai', choice);
}

/**
 * The tool calls of an Anthropic message (or its content array). `stop_reason:
 * "max_tokens"` means the output was cut: the call written last throws `incomplete_call`. An
 * OpenAI completion throws `invalid_input`.
 */
function callsFromAnthropic(response, options = {}) {
  return new CallExtractor(options).extractResponse(response, 'anthropic', 0);
}

/** The names `format` accepts, most specific first. */
function callFormats() {
  return native.callFormats();
}

const MISSING =
  'the toolmend binary was not found: $TOOLMEND is not set and the toolmend package has no ' +
  'bin/toolmend-cli (reinstall the package: npm install toolmend); set TOOLMEND to a toolmend ' +
  'binary to use another one';

/** The `toolmend` binary: $TOOLMEND, else the one in this package. Throws ToolmendError. */
function binaryPath() {
  if (process.env.TOOLMEND) return process.env.TOOLMEND;
  const bundled = loader.cliPath();
  if (bundled) return bundled;
  throw new ToolmendError('invalid_input', MISSING);
}

/** One toolmend child: a JSON line in, one record out, matched by its line number. */
class Child {
  constructor(argv) {
    this.argv = argv;
    this.child = null;
    this.pending = [];
    this.sent = 0;
    this.restarts = 0;
    this.started = false;
  }

  start() {
    if (this.started) this.restarts += 1;
    this.started = true;
    const child = spawn(this.argv[0], this.argv.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] });
    this.child = child;
    this.sent = 0;
    const pending = this.pending;
    const fail = (why) => {
      if (this.child === child) this.child = null;
      while (pending.length) pending.shift().reject(new ToolmendError('invalid_input', why));
    };
    child.on('error', (e) => fail(`cannot start ${this.argv[0]}: ${e.message}`));
    child.on('exit', (code, signal) => fail(`${this.argv[0]} ended (${signal || code}) before answering`));
    child.stdin.on('error', () => {});
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
      const waiting = pending.shift();
      if (!waiting) return;
      let record;
      try {
        record = JSON.parse(line);
      } catch (e) {
        waiting.reject(new ToolmendError('invalid_input', `not a record: ${line.slice(0, 100)}`));
        return;
      }
      if (record.line !== waiting.line) {
        waiting.reject(new ToolmendError('invalid_input', `answer out of step: ${line.slice(0, 200)}`));
        return;
      }
      delete record.line;
      waiting.resolve(record);
    });
  }

  request(payload) {
    if (!this.child) this.start();
    return new Promise((resolve, reject) => {
      this.sent += 1;
      this.pending.push({ line: this.sent, resolve, reject });
      this.child.stdin.write(JSON.stringify(payload) + '\n');
    });
  }

  close() {
    if (this.child) {
      this.child.stdin.end();
      this.child = null;
    }
  }
}

/**
 * Two long-running `toolmend` children (`args` and `calls`) answering one request at a time,
 * for those who want the CLI in a subprocess. Answers are the CLI's records. `close()` ends them.
 */
class Process {
  constructor({ binary, args = [] } = {}) {
    const bin = binary || binaryPath();
    const common = ['--records', '--line-buffered', '--input', 'jsonl', ...args];
    this._args = new Child([bin, 'args', ...common]);
    this._calls = new Child([bin, 'calls', ...common]);
  }

  /** The record of `toolmend args --records` for one input (string or UTF-8 bytes). */
  async mendArgs(text) {
    const input = checkInput(text);
    if (input.error) return { ok: false, error: input.error };
    const value = typeof input.text === 'string' ? input.text : decodeUtf8(input.text);
    if (value.error) return { ok: false, error: value.error };
    return this._args.request({ text: value });
  }

  /** The record of `toolmend calls --records` for one reply: text or an assistant message. */
  async extractCalls(reply) {
    if (reply !== null && typeof reply === 'object' && !(reply instanceof Uint8Array)) {
      return this._calls.request(Array.isArray(reply) ? { content: reply } : reply);
    }
    const input = checkInput(reply);
    if (input.error) return { ok: false, error: input.error };
    const value = typeof input.text === 'string' ? input.text : decodeUtf8(input.text);
    if (value.error) return { ok: false, error: value.error };
    return this._calls.request({ text: value });
  }

  /** How many times a dead child was started again. */
  get restarts() {
    return this._args.restarts + this._calls.restarts;
  }

  /** Ends both children. */
  close() {
    this._args.close();
    this._calls.close();
  }
}

/** The first byte where `b` is not UTF-8, or -1. */
function utf8ErrorAt(b) {
  let i = 0;
  while (i < b.length) {
    const c = b[i];
    let n;
    let min;
    if (c < 0x80) { i += 1; continue; }
    if (c >= 0xc2 && c <= 0xdf) { n = 1; min = 0x80; }
    else if (c >= 0xe0 && c <= 0xef) { n = 2; min = 0x800; }
    else if (c >= 0xf0 && c <= 0xf4) { n = 3; min = 0x10000; }
    else return i;
    let cp = c & (0x3f >> n);
    for (let k = 1; k <= n; k++) {
      const d = b[i + k];
      if (d === undefined || (d & 0xc0) !== 0x80) return i;
      cp = (cp << 6) | (d & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += n + 1;
  }
  return -1;
}

function decodeUtf8(buffer) {
  const at = utf8ErrorAt(buffer);
  if (at < 0) return buffer.toString('utf8');
  return { error: { code: 'invalid_utf8', message: `invalid UTF-8 at byte ${at}`, offset: at, original: '' } };
}

module.exports = {
  CallExtractor,
  Mender,
  MendRecord,
  Process,
  // The old name, for code written before MendRecord (index.d.ts declares only MendRecord:
  // a `Record` there hid TypeScript's Record<K, V>).
  Record: MendRecord,
  Stream,
  ToolmendError,
  binaryPath,
  callFormats,
  callsFromAnthropic,
  callsFromOpenAI,
  extractCalls,
  mendArgs,
  mendMany,
  mendManySync,
  repair,
  stream,
  version: native.version(),
};
