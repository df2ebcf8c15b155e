#!/usr/bin/env python3
"""The module import graph of the workspace's two Rust crates, run by tests/layers.rs.

The core library (crates/toolmend-core/src) and the binary (src/) are read file by file (a file
is a module). Every `crate::a::b`, `crate::{a, b::c}`, `super::x`, a path that starts with one
of the file's own child modules (`formats::json` in calls/mod.rs) and, in the binary,
`toolmend_core::` path is resolved to the longest module-file prefix. Then, by the flags:

  (none)          strongly connected components of more than one file (import circles; a
                  module's edges into its own child modules are left out, see `owns`)
  --dirs          the same with a folder and its files counted as one module
  --edges         every edge, then the circles
  --stage-order   src/args/: the stages in their declared order, and any import of a later one
  --layers        the top-level modules in the order docs/architecture.md declares (LAYERS
                  below); any import that points up that list is printed as UPWARD

Usage: import_circles.py [repo] [flags]"""
import os, re, sys

root = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith('-') else '.'
CRATES = {'core': os.path.join(root, 'crates', 'toolmend-core', 'src'), 'bin': os.path.join(root, 'src')}
# Bottom first: a module may import only modules listed before it (docs/architecture.md).
LAYERS = ['core:bytes', 'core:error', 'core:repair', 'core:exact', 'core:args', 'core:tools',
          'core:io', 'core:calls', 'core:kept_stream', 'core:prompt', 'core:lib',
          'bin:check', 'bin:agent', 'bin:cli', 'bin:lib', 'bin:main']


def modpath(rel):
    p = rel[:-3].split('/')
    if p[-1] == 'mod':
        p = p[:-1]
    return p


files = {}  # 'core:calls/mod.rs' -> text
for crate, src in CRATES.items():
    for d, _, fs in os.walk(src):
        for f in fs:
            if f.endswith('.rs'):
                rel = os.path.relpath(os.path.join(d, f), src)
                files['%s:%s' % (crate, rel)] = open(os.path.join(d, f)).read()

mods = {}
for key in files:
    crate, rel = key.split(':', 1)
    mods[(crate, tuple(modpath(rel)) if rel not in ('lib.rs', 'main.rs') else ())] = key

# `pub use a::b;` in lib.rs, where `a::b` is a module: `crate::b::…` is `crate::a::b::…`
aliases = {}
for a_, b_ in re.findall(r'^pub use ((?:\w+::)*)(\w+);', files.get('core:lib.rs', ''), re.M):
    full = [x for x in a_.split('::') if x] + [b_]
    if ('core', tuple(full)) in mods:
        aliases[b_] = full


# `pub use a::{B, c::D};` in lib.rs: the root's item `B` is `a::B`
reexports = {}


def resolve(crate, path):
    if crate == 'core' and path and path[0] in aliases:
        path = aliases[path[0]] + path[1:]
    if crate == 'core' and path and path[0] in reexports:
        path = reexports[path[0]] + path[1:]
    for n in range(len(path), 0, -1):
        if (crate, tuple(path[:n])) in mods:
            return mods[(crate, tuple(path[:n]))]
    # an item of the crate root (`crate::Error`, `toolmend_core::cut`)
    return mods.get((crate, ())) if path else None


def strip_comments(t):
    t = re.sub(r'//[^\n]*', '', t)
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', t)


def expand(prefix, body):
    """The paths of a brace group's body."""
    out, depth, cur = [], 0, ''
    for ch in body + ',':
        if ch == '{':
            depth += 1
        if ch == '}':
            depth -= 1
        if ch == ',' and depth == 0:
            cur = cur.strip()
            if cur:
                m = re.match(r'([\w:]*?)(?:::)?\{(.*)\}$', cur, re.S)
                if m:
                    out += expand(prefix + [x for x in m.group(1).split('::') if x], m.group(2))
                else:
                    out.append(prefix + [x for x in re.split(r'\s+as\s+', cur)[0].split('::') if x])
            cur = ''
        else:
            cur += ch
    return out


# Only for --layers: a root item is counted as the top-level module it comes from (per file, the
# re-exporting module may be another file of that folder than the one defining the item).
for m in re.finditer(r'^pub use ([^;]*);', strip_comments(files.get('core:lib.rs', '')), re.M) if '--layers' in sys.argv else ():
    for full in expand([], m.group(1)):
        if len(full) > 1 and full[-1] not in aliases:
            reexports[full[-1]] = full

def paths_after(t, at, brace):
    """The paths written at `at` of `t`, after `prefix::`: a brace group's (`brace` is its `{`)
    or the one path there, each a list of names."""
    if brace:
        depth, i = 1, at
        while depth:
            depth += {'{': 1, '}': -1}.get(t[i], 0)
            i += 1
        ps = expand([], t[at:i - 1])
    else:
        ps = [re.match(r'[\w:]*', t[at:]).group(0).split('::')]
    return [[x for x in p if x] for p in ps]


edges = {}
for key, text in files.items():
    crate, rel = key.split(':', 1)
    me = modpath(rel) if rel not in ('lib.rs', 'main.rs') else []
    t = strip_comments(text)
    paths = []
    for m in re.finditer(r'\b(crate|super|toolmend_core)::(\{)?', t):
        kind = m.group(1)
        for p in paths_after(t, m.end(), m.group(2)):
            if kind == 'crate':
                paths.append((crate, p))
            elif kind == 'toolmend_core':
                paths.append(('core', p))
            else:
                # super:: inside `mod tests` of a file refers to the file itself: skip
                if 'mod tests' in t[:m.start()] and m.start() > t.find('mod tests'):
                    continue
                paths.append((crate, me[:-1] + p))
    # A path that starts with a child module of this file (`use formats::json;` in calls/mod.rs)
    # names that child: Rust 2018 paths are relative to the module they are written in.
    children = re.findall(r'^\s*(?:pub(?:\([\w:\s]+\))?\s+)?mod\s+(\w+)\s*;', t, re.M)
    for child in children:
        for m in re.finditer(r'(?<![\w:])(?:self::)?%s::(\{)?' % child, t):
            for p in paths_after(t, m.end(), m.group(1)):
                paths.append((crate, me + [child] + p))
        for m in re.finditer(r'^\s*(?:pub(?:\([\w:\s]+\))?\s+)?use\s+(?:self::)?%s\s*;' % child, t, re.M):
            paths.append((crate, me + [child]))
    for cr, p in paths:
        tgt = resolve(cr, p)
        if tgt and tgt != key:
            edges.setdefault(key, set()).add(tgt)


def owns(parent, child):
    """Whether module file `child` is `parent` itself or below it (`calls/mod.rs` owns
    `calls/formats/json.rs`; `lib.rs` owns every file of its crate)."""
    pc, pr = parent.split(':', 1)
    cc, cr = child.split(':', 1)
    if pc != cc:
        return False
    pm = modpath(pr) if pr not in ('lib.rs', 'main.rs') else []
    cm = modpath(cr) if cr not in ('lib.rs', 'main.rs') else []
    return cm[:len(pm)] == pm


# A module calling into its own children while they use its items is how Rust splits one module
# into files, not an import circle: the circle search leaves out edges into a module's own
# descendants (`--edges` lists them; `--dirs` folds a folder into one module anyway).
circle_edges = {a: {b for b in bs if not owns(a, b)} for a, bs in edges.items()}


def top(key):
    crate, rel = key.split(':', 1)
    return '%s:%s' % (crate, rel.split('/')[0].replace('.rs', ''))


if '--stage-order' in sys.argv:
    order = re.findall(r'^\s*pub\(crate\) mod (\w+)\s*;', files.get('core:args/mod.rs', ''), re.M)
    rank = {'core:args/%s.rs' % m: i for i, m in enumerate(order)}
    late = [(a, b) for a in rank for b in edges.get(a, ()) if b in rank and rank[b] >= rank[a]]
    for a, b in late:
        print('LATER STAGE:', a, '->', b)
    print('stages in order:', ' '.join(order), '' if late else '(no stage imports a later one)')
    sys.exit(0)

if '--layers' in sys.argv:
    rank = {name: i for i, name in enumerate(LAYERS)}
    unlisted = sorted({top(k) for k in files} - set(rank))
    for name in unlisted:
        print('UNLISTED:', name)
    upward = sorted((a, b) for a, bs in edges.items() for b in bs
                    if top(a) != top(b) and top(a) in rank and top(b) in rank
                    and rank[top(b)] > rank[top(a)])
    for a, b in upward:
        print('UPWARD:', a, '->', b)
    if not upward and not unlisted:
        print('layers in order:', ' '.join(LAYERS), '(every import points down)')
    sys.exit(0)

if '--dirs' in sys.argv:
    e2 = {}
    for a, bs in circle_edges.items():
        for b in bs:
            if top(a) != top(b):
                e2.setdefault(top(a), set()).add(top(b))
    circle_edges = e2
    files = {top(f): 1 for f in files}

# Tarjan's strongly connected components
idx, low, st, on, out, n = {}, {}, [], set(), [], [0]


def sc(v):
    idx[v] = low[v] = n[0]
    n[0] += 1
    st.append(v)
    on.add(v)
    for w in circle_edges.get(v, ()):
        if w not in idx:
            sc(w)
            low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], idx[w])
    if low[v] == idx[v]:
        comp = []
        while True:
            w = st.pop()
            on.discard(w)
            comp.append(w)
            if w == v:
                break
        if len(comp) > 1:
            out.append(sorted(comp))


sys.setrecursionlimit(10000)
for v in files:
    if v not in idx:
        sc(v)
if '--edges' in sys.argv:
    for k in sorted(edges):
        print(k, '->', ' '.join(sorted(edges[k])))
if out:
    for comp in out:
        print('CIRCLE:', ' <-> '.join(comp))
        for a in comp:
            print('   ', a, '->', ' '.join(sorted(x for x in circle_edges.get(a, ()) if x in comp)))
else:
    print('no circle among', len(files), 'files')
