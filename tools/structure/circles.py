#!/usr/bin/env python3
"""File import circles and the longest functions of the workspace's Rust sources.

A file A *imports* file B when A names an item of B's module (in a `use` or inline, through
`crate::`, `super::`, `self::` or a child module's name), B being the deepest module file the
path reaches, followed through the `pub use` re-exports of a `mod.rs`/`lib.rs`. A module file
and its own submodules are not counted as importing each other (declaring and re-exporting
children is what a `mod.rs` is for). A circle is a pair A ↔ B importing each other, or a
longer cycle among files (strongly connected components of more than one file).

Usage: python3 tools/structure/circles.py [--check] [--functions N] [CRATE_SRC ...]
(default: every `*/src` of the workspace, the root `src`, and every example of more than one
file, `*/examples/NAME/`). Prints the circles of each crate
and, with --functions, the N longest functions (lines from `fn` to its closing brace). With
--check it exits 1 when it finds a circle or a function of the command line (`src/`) longer
than HANDLER_LIMIT lines: the handlers stay thin, the work in the libraries (`cargo xtask
test` runs it so).
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The most lines a function of the command line (`src/`) may have.
HANDLER_LIMIT = 40


def modules(src):
    """module path (tuple) -> file, for every .rs file under src."""
    out = {}
    for d, _, files in os.walk(src):
        for f in files:
            if not f.endswith('.rs'):
                continue
            rel = os.path.relpath(os.path.join(d, f), src)[:-3].split(os.sep)
            if rel[-1] in ('mod', 'lib', 'main'):
                rel = rel[:-1]
            out[tuple(rel)] = os.path.join(d, f)
    return out


def own_module(src, path):
    rel = os.path.relpath(path, src)[:-3].split(os.sep)
    is_dir_module = rel[-1] in ('mod', 'lib', 'main')
    if is_dir_module:
        rel = rel[:-1]
    return tuple(rel), is_dir_module


def expand(use):
    """The paths of one `use` tree (braces expanded)."""
    use = re.sub(r'\s+', '', use)
    m = re.search(r'\{', use)
    if not m:
        return [use]
    depth, end = 0, None
    for i in range(m.start(), len(use)):
        depth += {'{': 1, '}': -1}.get(use[i], 0)
        if depth == 0:
            end = i
            break
    prefix, inner = use[:m.start()], use[m.start() + 1:end]
    parts, depth, cur = [], 0, ''
    for ch in inner:
        if ch == ',' and depth == 0:
            parts.append(cur)
            cur = ''
            continue
        depth += {'{': 1, '}': -1}.get(ch, 0)
        cur += ch
    parts.append(cur)
    return [p for part in parts if part for p in expand(prefix + part)]


def paths_of(text):
    text = re.sub(r'//[^\n]*', '', text)
    found = []
    for m in re.finditer(r'\buse\s+([^;]+);', text):
        found += expand(m.group(1))
    found += re.findall(r'\b(?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+', text)
    found += re.findall(r'(?<![:\w])[a-z_][a-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)+', text)
    return found


def reexports(mods):
    """For each directory module: item name -> the path it re-exports (`pub use a::b::Name`)."""
    out = {}
    for mod, f in mods.items():
        if not re.search(r'(mod|lib|main)\.rs$', f):
            continue
        table = {}
        text = re.sub(r'//[^\n]*', '', open(f, encoding='utf-8').read())
        for m in re.finditer(r'\bpub(?:\([a-z]+\))?\s+use\s+([^;]+);', text):
            for path in expand(m.group(1)):
                name = path.split('::')[-1].split(' as ')[-1]
                table[name] = path.split(' as ')[0]
        out[f] = table
    return out


def resolve(path, here, is_dir_module, mods, reexp=None, depth=0):
    parts = [p.split(' as ')[0] for p in path.split('::') if p]
    if not parts:
        return None
    base = list(here) if is_dir_module else list(here[:-1])
    if parts[0] == 'crate':
        cur, parts = [], parts[1:]
    elif parts[0] == 'self':
        cur, parts = list(here) if is_dir_module else list(here), parts[1:]
    elif parts[0] == 'super':
        cur = base
        parts = parts[1:]
        while parts and parts[0] == 'super':
            cur, parts = cur[:-1], parts[1:]
    elif tuple(list(here) + [parts[0]]) in mods:
        # A path relative to the current module (`use child::Item` in a module with children).
        cur = list(here)
    else:
        return None
    best = tuple(cur)
    rest = list(parts)
    for p in parts:
        cand = tuple(list(best) + [p])
        if cand in mods:
            best = cand
            rest = rest[1:]
        else:
            break
    f = mods.get(best)
    if reexp and f in reexp and rest and rest[0] in reexp[f] and depth < 8:
        target = resolve(reexp[f][rest[0]], best, True, mods, reexp, depth + 1)
        if target:
            return target
    return f


def related(a, b):
    """Whether one module contains the other."""
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def graph(src):
    mods = modules(src)
    reexp = reexports(mods)
    owner = {f: m for m, f in mods.items()}
    edges = {}
    for mod, f in mods.items():
        here, is_dir = own_module(src, f)
        text = open(f, encoding='utf-8').read()
        targets = set()
        for p in paths_of(text):
            t = resolve(p, here, is_dir, mods, reexp)
            if t and t != f and not related(owner[f], owner[t]):
                targets.add(t)
        edges[f] = targets
    return edges


def cycles(edges):
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in list(edges):
        if v not in index:
            strong(v)
    return comps


def functions(path):
    lines = open(path, encoding='utf-8').read().split('\n')
    out = []
    for i, line in enumerate(lines):
        m = re.match(r'\s*(?:pub(?:\([a-z]+\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+(\w+)', line)
        if not m:
            continue
        depth, started = 0, False
        for j in range(i, len(lines)):
            depth += lines[j].count('{') - lines[j].count('}')
            started |= '{' in lines[j]
            if started and depth <= 0:
                out.append((j - i + 1, f'{os.path.relpath(path, ROOT)}:{i + 1} {m.group(1)}'))
                break
            if not started and lines[j].rstrip().endswith(';'):
                break
    return out


def default_roots():
    """Every crate's `src` (the workspace members' and the root's), and every example of more
    than one file (`examples/NAME/main.rs`, its own crate root)."""
    crates = [ROOT] + [os.path.join(ROOT, d) for d in sorted(os.listdir(ROOT))
                       if d != 'target' and os.path.isfile(os.path.join(ROOT, d, 'Cargo.toml'))]
    roots = []
    for c in crates:
        if os.path.isdir(os.path.join(c, 'src')):
            roots.append(os.path.join(c, 'src'))
        examples = os.path.join(c, 'examples')
        if os.path.isdir(examples):
            roots += [os.path.join(examples, e) for e in sorted(os.listdir(examples))
                      if os.path.isfile(os.path.join(examples, e, 'main.rs'))]
    return roots


def main():
    args = sys.argv[1:]
    check = '--check' in args
    args = [a for a in args if a != '--check']
    n_fn = 0
    if args[:1] == ['--functions']:
        n_fn, args = int(args[1]), args[2:]
    srcs = args or default_roots()
    total, fns = 0, []
    for src in dict.fromkeys(srcs):
        edges = graph(src)
        for comp in cycles(edges):
            total += 1
            names = [os.path.relpath(c, ROOT) for c in comp]
            print(f'circle: {" <-> ".join(names)}')
        for mod_file in edges:
            fns += functions(mod_file)
    print(f'{total} circle(s)')
    if n_fn:
        for length, name in sorted(fns, reverse=True)[:n_fn]:
            print(f'{length:5} {name}')
    cli = os.path.join(ROOT, 'src') + os.sep
    long = [(n, name) for n, name in fns
            if n > HANDLER_LIMIT and os.path.join(ROOT, name.split(':')[0]).startswith(cli)]
    for n, name in sorted(long, reverse=True):
        print(f'handler too long: {name} has {n} lines (at most {HANDLER_LIMIT})')
    if check and (total or long):
        sys.exit(1)


if __name__ == '__main__':
    main()
