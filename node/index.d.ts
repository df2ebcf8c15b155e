/** toolmend: broken LLM tool-call text in, clean validated JSON (or a structured error) out. */

/** An input: a string, or bytes that must be UTF-8. null/undefined is an empty input. */
export type Text = string | Buffer | Uint8Array | null | undefined;

/** Tool definitions (toolmend's, OpenAI's or MCP's), or the path of a JSON or TOML tools file. */
export type Tools = object[] | Record<string, unknown> | string;

export interface MendOptions {
  /** 'object' (args, the default) or 'any' (repair); only for Mender and mendMany. */
  target?: 'object' | 'any';
  /** Several values written one after another: keep the 'first' (default), 'all', or 'error'. */
  concat?: 'first' | 'all' | 'error';
  /** Input cut off before its end: 'heal' it (reported as repairs) or 'error' (code truncated).
   * The default is 'heal', but 'error' for mendArgs (tool arguments about to be run). */
  truncated?: 'heal' | 'error';
  /** Make no repairs: input that needs one fails with invalid_json. */
  strict?: boolean;
  /** String layers that may be unquoted (default 10). */
  maxDepth?: number;
  /** How deep arrays and objects may nest (default 1000). */
  maxNesting?: number;
  /** Inputs longer than this fail with too_large (default 64 MiB). */
  maxBytes?: number;
  /** Threads of mendMany (0, the default: one per core, at most 8, as the CLI). */
  threads?: number;
  /**
   * A JSON Schema object for the value (mendArgs, repair and Mender; not mendMany), as
   * `toolmend args --schema`: values coerced to it where the intent is unambiguous (`"3"` for
   * an integer, one value for an array, ...; nothing under `strict`); what still breaks it
   * fails with code invalid_parameters and `violations`.
   */
  schema?: object;
}

export interface CallsOptions {
  tools?: Tools;
  /** A format name of callFormats(); detected by its markers when unset. */
  format?: string;
  /** Each call must be {"tool", "parameters", "terminate"}. */
  requireTerminate?: boolean;
  strict?: boolean;
  maxDepth?: number;
  maxNesting?: number;
  maxBytes?: number;
}

export interface Repair {
  kind: string;
  offset?: number;
  layers?: number;
  text?: string;
  key?: string;
}

export interface Call {
  tool: string;
  parameters: Record<string, unknown>;
  terminate?: boolean;
  id?: unknown;
  /** What was mended to get the call: an empty list when nothing was. */
  repairs: Repair[];
  dropped?: unknown[];
}

export interface Incomplete {
  tool: string | null;
  id?: unknown;
  offset: number;
  message: string;
}

export interface Calls {
  calls: Call[];
  text: string | null;
  reasoning: string | null;
  incomplete: Incomplete[];
  /** When the reply itself was mended (one JSON string holding the reply, unquoted). */
  repairs?: Repair[];
  /** On a failure's `value` only: the calls that were found but cannot be used. */
  rejected?: Array<{ tool: string | null; id?: unknown; parameters?: object; code: string; message: string }>;
}

/** An input toolmend could not mend, or a call it could not use. */
export class ToolmendError extends Error {
  /** The stable error code: empty_input, invalid_json, not_an_object, depth_exceeded, too_deep,
   * too_large, invalid_utf8, concatenated, invalid_input, missing_field, wrong_type,
   * unknown_tool, invalid_parameters, incomplete_call, truncated, internal_error (toolmend
   * panicked on this input, a bug to report with it: any call can throw it, and a Mender's or
   * mendMany's record can say it; the next input is mended as usual). */
  code: string;
  /** The byte offset of the failure, or null. */
  offset: number | null;
  /** From extractCalls: what the reply held. */
  value: Calls | null;
  /** For invalid_parameters: each schema violation. */
  violations: Array<{ path: string; keyword?: string; message: string }>;
}

/** One input's result, with the fields of a `toolmend args --records` record. (Not named
 * `Record`, which would hide TypeScript's `Record<K, V>` in this file and its users'.) */
export class MendRecord {
  readonly ok: boolean;
  /** The value as compact JSON text, every number as the input wrote it (null on failure). */
  readonly json: string | null;
  readonly code: string | null;
  readonly message: string | null;
  readonly offset: number | null;
  readonly original: string | null;
  /** For invalid_parameters (a `schema` option): each violation of the schema. */
  readonly violations: Array<{ path: string; keyword: string; message: string }>;
  /** The mended value (null on failure). */
  readonly value: any;
  readonly repairs: Repair[];
  readonly dropped: unknown[];
  /** The value, or the failure thrown as a ToolmendError. */
  unwrap(): any;
  toJSON(): object;
}

/** The args or repair pipeline for many inputs; keeps its buffers between them. */
export class Mender {
  constructor(options?: MendOptions);
  /** One input's MendRecord; never throws for bad input. */
  mend(text: Text): MendRecord;
}

/**
 * Tool-call arguments mended into an object, as `toolmend args`. Throws ToolmendError.
 * Arguments cut off before their end are about to be run, so they are refused (code
 * `truncated`) unless `truncated: 'heal'` is given; `repair` heals them, and a Mender's
 * records show every repair.
 */
export function mendArgs(text: Text, options?: MendOptions): Record<string, any>;
/** Almost-JSON repaired into any JSON value, as `toolmend repair`. Throws ToolmendError. */
export function repair(text: Text, options?: MendOptions): any;
/** Every input's MendRecord, in order, mended off the main thread on the CLI's threads. */
export function mendMany(inputs: Iterable<Text>, options?: MendOptions): Promise<MendRecord[]>;
/** mendMany on the calling thread. */
export function mendManySync(inputs: Iterable<Text>, options?: MendOptions): MendRecord[];

/** `toolmend calls` with one set of options and tools (loaded once). */
export class CallExtractor {
  constructor(options?: CallsOptions);
  /** The calls in one reply (text, or an assistant message); throws ToolmendError. */
  extract(reply: Text | object): Calls;
  /** The calls of an API response (`'openai'`: a chat completion or message; `'anthropic'`: a message or content array); throws ToolmendError. */
  extractResponse(response: object, api: 'openai' | 'anthropic', choice?: number): Calls;
}

/**
 * What the parameters of call `index` gained at `path` (a JSON pointer; `''`: the parameters
 * object, which starts as `{}`): `append`, text at the end of the string there; `members`, new
 * members of the object there; `items`, new items of the array there. Applied in order, a
 * call's events rebuild its parameters so far (event format 2, docs/streaming.md). A Stream
 * made with `argumentsEvents: 'snapshot'` adds `parameters`: all of them once this is added.
 */
export type ArgumentsEvent = {
  event: 'arguments';
  index: number;
  path: string;
  open: string | null;
  parameters?: { [key: string]: unknown };
} & (
  | { append: string }
  | { members: { [key: string]: unknown } }
  | { items: unknown[] }
);

/** One event of a Stream (see docs/streaming.md; event format 2). */
export type StreamEvent =
  | { event: 'call_start'; index: number; tool: string; id?: unknown }
  | ArgumentsEvent
  /** The model wrote the key at `path` (a JSON pointer in the parameters) again after its value was shown: what was shown there may not hold; the call's value comes with call_end. */
  | { event: 'revised'; index: number; path: string; reason: string }
  | { event: 'call_end'; index: number; call: { tool: string; parameters: { [key: string]: unknown }; [k: string]: unknown } }
  | { event: 'incomplete'; index: number; tool: string | null; id?: unknown; offset: number; message: string }
  | { event: 'invalid'; index: number; tool: string | null; id?: unknown; error: { code: string; message: string } }
  | { event: 'retracted'; index: number; reason: string }
  | { event: 'text' | 'reasoning'; delta: string }
  | { event: 'end'; ok: boolean; value?: Calls; error?: { code: string; message: string; [k: string]: unknown }; [k: string]: unknown };

/** A reply read as it arrives (`toolmend calls --stream`): feed, then finish. */
/** The options of a Stream: those of CallExtractor, and what its `arguments` events carry. */
export interface StreamOptions extends CallsOptions {
  /** 'delta' (the default): what the parameters gained; 'snapshot': that and `parameters`, all of them so far. */
  argumentsEvents?: 'delta' | 'snapshot';
  /** Bytes of a call's arguments before its first `arguments` event, and at least between two
   * (each also at least a quarter more; the final one comes when they close). Default 128; 1
   * shows a short call almost token by token. */
  argumentsStep?: number;
}

/** Should toolmend panic on the reply (a bug), that call's events are an `end` with error code
 * `internal_error`, and the stream gives no events after it. */
export class Stream {
  constructor(options?: StreamOptions);
  /** The next piece of the reply's text; the events it makes known. */
  feed(chunk: string): StreamEvent[];
  /** Reasoning a server sends apart from the text. */
  feedReasoning(delta: string): StreamEvent[];
  /** A piece of a tool call the server parsed (`key`: OpenAI's `tool_calls[i].index`). */
  feedCall(key: number, id?: string | null, name?: string | null, args?: string | null): StreamEvent[];
  /** A string, or a server's chunk (OpenAI chat-completions chunk, Anthropic event, Ollama line, Gemini or Responses event). */
  feedChunk(chunk: string | object): StreamEvent[];
  /** Ends the reply: the results and the `end` event. */
  finish(): StreamEvent[];
}

/** The events of a reply streamed as strings or a server's chunks (OpenAI chat-completions
 * chunks or Responses API events, Anthropic events, and the others `calls --stream --input jsonl`
 * reads). */
export function stream(
  chunks: Iterable<string | object> | AsyncIterable<string | object>,
  options?: StreamOptions,
): AsyncGenerator<StreamEvent, void, undefined>;

/** The tool calls in one model reply, as `toolmend calls`. Throws ToolmendError. */
export function extractCalls(reply: Text | object, options?: CallsOptions): Calls;
/** The calls of an OpenAI chat completion or message, or of a Responses API response (no
 * choices: `choice` must be 0); a cut-off call throws incomplete_call. */
export function callsFromOpenAI(response: object, options?: CallsOptions & { choice?: number }): Calls;
/** The calls of an Anthropic message; `stop_reason: "max_tokens"` throws incomplete_call. */
export function callsFromAnthropic(response: object, options?: CallsOptions): Calls;
/** The names `format` accepts. */
export function callFormats(): string[];
/** The toolmend binary: $TOOLMEND, else the one in this package. */
export function binaryPath(): string;

/** A CLI record, as `toolmend args|calls --records` writes it (without `line`). */
export interface CliRecord {
  ok: boolean;
  value?: any;
  repairs?: Repair[];
  dropped?: unknown[];
  error?: { code: string; message: string; original: string; offset?: number };
}

/** Two long-running toolmend children (args and calls) for those who want a subprocess. */
export class Process {
  constructor(options?: { binary?: string; args?: string[] });
  mendArgs(text: Text): Promise<CliRecord>;
  extractCalls(reply: Text | object): Promise<CliRecord>;
  readonly restarts: number;
  close(): void;
}

export const version: string;
