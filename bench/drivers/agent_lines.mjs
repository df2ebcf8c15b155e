// What real agents send as tool-call arguments: the same few tools again and again (a shell
// command, a file read, an edit, a search, a todo list), most of them valid JSON, one in ten
// broken as models break them (a trailing comma, single quotes, Python literals, a JSON string
// around the object, spaces after colons and commas). Deterministic: every run, the same lines.
// Used by agent_args.mjs and percall_packages.mjs.

// A small deterministic generator, so that every run sends the same lines.
let seed = 20261128;
const rand = (n) => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed % n;
};
const pick = (a) => a[rand(a.length)];
const words = ['src', 'lib', 'main', 'test', 'build', 'config', 'utils', 'index', 'server', 'client',
  'parse', 'render', 'handler', 'model', 'view', 'error', 'cache', 'query', 'user', 'data'];
const path = () => '/repo/' + Array.from({ length: 1 + rand(4) }, () => pick(words)).join('/') + pick(['.rs', '.ts', '.py', '.md', '.json']);
const sentence = (n) => Array.from({ length: n }, () => pick(words)).join(' ');
const code = () => Array.from({ length: 1 + rand(6) }, () => `    let ${pick(words)} = ${pick(words)}(${rand(100)});`).join('\n');

const tools = [
  () => ({ command: pick(['ls -la ', 'cargo test ', 'git status', 'rg -n ', 'cat ']) + path(), timeout: 120000, description: sentence(3 + rand(5)) }),
  () => ({ file_path: path(), offset: rand(500), limit: 200 }),
  () => ({ file_path: path(), old_string: code(), new_string: code(), replace_all: rand(4) === 0 }),
  () => ({ pattern: pick(words) + '\\s+' + pick(words), path: path(), output_mode: 'content', '-n': true, head_limit: 50 }),
  () => ({ todos: Array.from({ length: 1 + rand(4) }, (_, i) => ({ content: sentence(4 + rand(6)), status: pick(['pending', 'in_progress', 'completed']), id: String(i + 1) })) }),
];

function broken(object) {
  const text = JSON.stringify(object);
  switch (rand(5)) {
    case 0: return text.replace(/}$/, ',}');
    case 1: return text.replace(/"/g, "'");
    case 2: return text.replace(/true/g, 'True').replace(/false/g, 'False');
    case 3: return JSON.stringify(text);
    default: return text.replace(/":/g, '": ').replace(/,"/g, ', "');
  }
}

/** `count` tool-call arguments as an agent sends them, the same every run. */
export function agentLines(count) {
  seed = 20261128;
  const lines = [];
  for (let i = 0; i < count; i++) {
    const object = pick(tools)();
    lines.push(rand(10) === 0 ? broken(object) : JSON.stringify(object));
  }
  return lines;
}
