#!/usr/bin/env python3
"""Fails if a module of a crate imports a module that imports it back.

Usage: scripts/check-module-cycles.py [CRATE_DIR ...]
(default: crates/brisvox-engine crates/brisvox-server)

Each source file under CRATE_DIR/src is one module (src/a/b.rs and
src/a/b/mod.rs are `a::b`; a file named by `#[path]` is the module that
declares it; inline `mod x { .. }` blocks belong to their file). An edge
A -> B is a `crate::`, `super::` or `self::` path in A's code (not in its
comments) that names B or an item of B. A path to an item a module only
re-exports (`pub use child::Item`, the crate root's `pub use`) counts as a
path to the module that defines it; the crate root's own `pub use` lines are
re-exports, not imports. Declaring a child (`mod x;`) is not an import.

Any strongly connected group of two or more modules is reported with one
cycle through it, and the script exits 1. Exit 0: no module imports a
module that imports it back, directly or around a ring.
"""

import os
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
PATH_RE = re.compile(r"\b(crate|super|self)((?:::(?:" + IDENT + r"|\{))+)")
MOD_DECL_RE = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*;")
INLINE_MOD_RE = re.compile(r"\bmod\s+(" + IDENT + r")\s*\{")
PATH_ATTR_RE = re.compile(r'#\[path\s*=\s*"([^"]+)"\]')
PUB_USE_RE = re.compile(r"^\s*pub(?:\([^)]*\))?\s+use\s+(.*?);", re.S | re.M)


def strip_comments_and_strings(text):
    """Blanks out comments, string and char literals (keeps line breaks)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and (i == 0 or not text[i - 1].isalnum()):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = '"' + hashes
            j = text.find(end, i + 2 + len(hashes))
            j = n if j < 0 else j + len(end)
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:i + 4]):
            m = re.match(r"'(\\.|[^\\'])'", text[i:i + 4])
            out.append("' '")
            i += len(m.group(0))
        else:
            out.append(c)
            i += 1
    return "".join(out)


def module_files(src):
    """Maps each .rs file under src to its module path (a tuple)."""
    modules = {}
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            full = os.path.join(root, f)
            rel = os.path.relpath(full, src)[:-3].split(os.sep)
            if rel in (["lib"], ["main"]):
                modules[full] = ()
            elif rel[-1] == "mod":
                modules[full] = tuple(rel[:-1])
            else:
                modules[full] = tuple(rel)
    # Files named by #[path] belong under the module that declares them.
    for full, mod in list(modules.items()):
        text = open(full, encoding="utf-8").read()
        for m in re.finditer(PATH_ATTR_RE.pattern + r"\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*;", text):
            target = os.path.normpath(os.path.join(os.path.dirname(full), m.group(1)))
            if target in modules:
                modules[target] = mod + (m.group(2),)
    return modules


def split_group(body):
    """Splits `a, b::{c, d}, e` at top-level commas."""
    parts, depth, cur = [], 0, ""
    for ch in body:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def expand(prefix, rest):
    """All paths of a (possibly grouped) path: ['a', 'b'] lists."""
    rest = rest.strip()
    if rest.startswith("{"):
        inner = rest[1:rest.rfind("}")]
        out = []
        for part in split_group(inner):
            out.extend(expand(prefix, part))
        return out
    head, sep, tail = rest.partition("::")
    head = head.split(" as ")[0].strip()
    if not head or head == "*":
        return [prefix]
    if head == "self":
        return [prefix]
    if not sep:
        return [prefix + [head]]
    return expand(prefix + [head], tail)


def full_path_at(text, start):
    """The path text starting at `start` (through a balanced `{...}` group)."""
    i, depth = start, 0
    while i < len(text):
        ch = text[i]
        if ch == "{":
            depth += 1
        elif ch == "}":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and not (ch.isalnum() or ch in "_:"):
            break
        i += 1
    return text[start:i]


def reexports(text, mod):
    """Items a module re-exports from a child: {item: child module path}."""
    out = {}
    for m in PUB_USE_RE.finditer(text):
        body = m.group(1).strip()
        base = list(mod)
        if body.startswith("self::"):
            body = body[len("self::"):]
        elif body.startswith("crate::"):
            base, body = [], body[len("crate::"):]
        elif body.startswith("super::"):
            continue
        for p in expand([], body):
            if len(p) >= 2:
                out[p[-1]] = tuple(base + p[:-1])
    return out


def edges_of(text, mod, is_root, known, exported):
    """The modules `mod`'s code names."""
    clean = strip_comments_and_strings(text)
    targets = set()
    # Inline `mod x {` blocks shift what `super` and `self` mean.
    inline = []  # (brace depth at open, name)
    depth = 0
    pos = 0
    lines = clean.split("\n")
    for line in lines:
        if is_root and PUB_USE_RE.match(line + ";" if not line.rstrip().endswith(";") else line):
            pass
        for m in INLINE_MOD_RE.finditer(line):
            inline.append((depth + line[: m.end()].count("{") - line[: m.end()].count("}") - 1, m.group(1)))
        base = tuple(list(mod) + [name for _, name in inline])
        skip = is_root and re.match(r"^\s*pub(?:\([^)]*\))?\s+use\b", line)
        if not skip:
            for m in PATH_RE.finditer(line):
                kind = m.group(1)
                start = m.start(2) + 2
                rest = full_path_at(line, start)
                if kind == "crate":
                    anchor = []
                elif kind == "super":
                    anchor = list(base[:-1])
                else:
                    anchor = list(base)
                for p in expand(anchor, rest):
                    t = resolve(tuple(p), known, exported)
                    if t is not None:
                        targets.add(t)
        depth += line.count("{") - line.count("}")
        while inline and depth <= inline[-1][0]:
            inline.pop()
    # A module's inline children are the module itself.
    return {t for t in targets if t != mod}


def resolve(path, known, exported):
    """The module a path names: its longest prefix that is a module, or the
    module that defines an item the prefix only re-exports."""
    for k in range(len(path), -1, -1):
        prefix = path[:k]
        if prefix in known:
            if k < len(path):
                origin = exported.get(prefix, {}).get(path[k])
                if origin is not None and origin in known:
                    return origin
            return prefix
    return None


def cycles(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
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
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def one_cycle(graph, comp):
    """A cycle through the first module of `comp`, as a list of modules."""
    members = set(comp)
    start = comp[0]
    prev = {start: None}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph.get(v, ())):
            if w not in members:
                continue
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return comp


def name(crate, mod):
    return crate + ("::" + "::".join(mod) if mod else " (crate root)")


def check(crate_dir):
    src = os.path.join(crate_dir, "src")
    crate = os.path.basename(os.path.normpath(crate_dir)).replace("-", "_")
    files = module_files(src)
    known = set(files.values())
    texts = {f: open(f, encoding="utf-8").read() for f in files}
    exported = {}
    for f, mod in files.items():
        exported.setdefault(mod, {}).update(reexports(texts[f], mod))
    graph = {}
    for f, mod in files.items():
        is_root = mod == ()
        graph.setdefault(mod, set()).update(edges_of(texts[f], mod, is_root, known, exported))
    found = cycles(graph)
    for comp in found:
        ring = one_cycle(graph, comp)
        print(f"{crate}: modules import each other: " + " -> ".join(name(crate, m) for m in ring))
    return len(found), len(known)


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    crates = argv[1:] or [os.path.join(root, "crates", c) for c in ("brisvox-engine", "brisvox-server")]
    bad = 0
    for c in crates:
        n, modules = check(c)
        bad += n
        print(f"{os.path.basename(os.path.normpath(c))}: {modules} modules, {n} import cycle(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
