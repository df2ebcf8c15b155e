#!/usr/bin/env python3
"""Module import graph of src/ (file = module) and its cycles; run by tests/layers.rs.
Reads every `crate::a::b`, `crate::{a, b::c}`, `super::x` and (for the binary) `toolmend::` path,
resolves each to the longest module-file prefix, then prints strongly connected components of size > 1.
Usage: circles.py [repo] [--edges]"""
import os, re, sys
root = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith('-') else '.'
src = os.path.join(root, 'src')
# binary crate: main.rs and the modules it declares (recursively, under its dirs)
def modpath(rel):
    p = rel[:-3].split('/')
    if p[-1] == 'mod': p = p[:-1]
    return p
files = {}
for d, _, fs in os.walk(src):
    for f in fs:
        if f.endswith('.rs'):
            rel = os.path.relpath(os.path.join(d, f), src)
            files[rel] = open(os.path.join(d, f)).read()
main = files.get('main.rs', '')
bin_mods = set(re.findall(r'^\s*(?:pub\s+)?mod\s+(\w+)\s*;', main, re.M))
def crate_of(rel):
    p = modpath(rel)
    if rel == 'main.rs' or (p and p[0] in bin_mods) or rel.startswith('bin/'): return 'bin'
    return 'lib'
mods = {}
for rel in files:
    mods[(crate_of(rel), tuple(modpath(rel)) if rel not in ('lib.rs','main.rs') else ())] = rel
# `pub use a::b;` in lib.rs, where `a::b` is a module: `crate::b::…` is `crate::a::b::…`
aliases = {}
for a_, b_ in re.findall(r'^pub use ((?:\w+::)*)(\w+);', files.get('lib.rs', ''), re.M):
    full = [x for x in a_.split('::') if x] + [b_]
    if ('lib', tuple(full)) in mods:
        aliases[b_] = full
def resolve(crate, path):
    if crate == 'lib' and path and path[0] in aliases:
        path = aliases[path[0]] + path[1:]
    for n in range(len(path), 0, -1):
        if (crate, tuple(path[:n])) in mods: return mods[(crate, tuple(path[:n]))]
    return None
def strip_comments(t):
    t = re.sub(r'//[^\n]*', '', t)
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', t)
def expand(prefix, body):
    # body: contents of a brace group; returns list of paths
    out, depth, cur = [], 0, ''
    for ch in body + ',':
        if ch == '{': depth += 1
        if ch == '}': depth -= 1
        if ch == ',' and depth == 0:
            cur = cur.strip()
            if cur:
                m = re.match(r'([\w:]*?)(?:::)?\{(.*)\}$', cur, re.S)
                if m: out += expand(prefix + [x for x in m.group(1).split('::') if x], m.group(2))
                else: out.append(prefix + [x for x in re.split(r'\s+as\s+', cur)[0].split('::') if x])
            cur = ''
        else: cur += ch
    return out
edges = {}
for rel, text in files.items():
    c = crate_of(rel); me = modpath(rel) if rel not in ('lib.rs','main.rs') else []
    t = strip_comments(text)
    paths = []
    for m in re.finditer(r'\b(crate|super|toolmend)::(\{)?', t):
        kind = m.group(1)
        if m.group(2):
            depth, i = 1, m.end()
            while depth: depth += {'{':1,'}':-1}.get(t[i], 0); i += 1
            ps = expand([], t[m.end():i-1])
        else:
            ps = [re.match(r'[\w:]*', t[m.end():]).group(0).split('::')]
        for p in ps:
            p = [x for x in p if x]
            if kind == 'crate': paths.append((c, p))
            elif kind == 'toolmend': paths.append(('lib', p))
            else:
                base = me[:-1] if not rel.endswith('mod.rs') and rel not in ('lib.rs','main.rs') else me[:-1]
                # super:: inside `mod tests` of a file refers to the file itself: skip
                if re.search(r'mod tests', t[:m.start()]) and m.start() > t.find('mod tests'): continue
                paths.append((c, base + p))
    for cr, p in paths:
        tgt = resolve(cr, p)
        if tgt and tgt != rel: edges.setdefault(rel, set()).add(tgt)
if '--stage-order' in sys.argv:
    # src/args/: a stage imports only the stages declared above it in args/mod.rs
    order = re.findall(r'^\s*pub\(crate\) mod (\w+)\s*;', files.get('args/mod.rs', ''), re.M)
    rank = {'args/%s.rs' % m: i for i, m in enumerate(order)}
    late = [(a, b) for a in rank for b in edges.get(a, ()) if b in rank and rank[b] >= rank[a]]
    for a, b in late:
        print('LATER STAGE:', a, '->', b)
    print('stages in order:', ' '.join(order), '' if late else '(no stage imports a later one)')
    sys.exit(0)
if '--dirs' in sys.argv:
    # one node per top-level module (a folder and its files count as one)
    top = lambda f: f.split('/')[0].replace('.rs', '')
    e2 = {}
    for a, bs in edges.items():
        for b in bs:
            if top(a) != top(b): e2.setdefault(top(a), set()).add(top(b))
    edges = e2
    files = {top(f): 1 for f in files}
# Tarjan
idx, low, st, on, out, n = {}, {}, [], set(), [], [0]
def sc(v):
    idx[v] = low[v] = n[0]; n[0] += 1; st.append(v); on.add(v)
    for w in edges.get(v, ()):
        if w not in idx: sc(w); low[v] = min(low[v], low[w])
        elif w in on: low[v] = min(low[v], idx[w])
    if low[v] == idx[v]:
        comp = []
        while True:
            w = st.pop(); on.discard(w); comp.append(w)
            if w == v: break
        if len(comp) > 1: out.append(sorted(comp))
sys.setrecursionlimit(10000)
for v in files:
    if v not in idx: sc(v)
if '--edges' in sys.argv:
    for k in sorted(edges): print(k, '->', ' '.join(sorted(edges[k])))
if out:
    for comp in out:
        print('CIRCLE:', ' <-> '.join(comp))
        for a in comp:
            print('   ', a, '->', ' '.join(sorted(x for x in edges.get(a, ()) if x in comp)))
else:
    print('no circle among', len(files), 'files')
