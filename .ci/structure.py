#!/usr/bin/env python3
"""Structure checks of issue 16, run by `.ci/run layering`.

1. No source file over 700 lines of code: blank lines and comment lines are not code, and neither
   is a trailing `#[cfg(test)]` module nor a file that is itself a test module. The initial
   migration is excepted (it is the schema, written once).
2. No import circle between the top-level modules of any crate: `crate::a` used in module `b` is
   an edge b -> a; a strongly connected component of more than one module fails.
3. No HTTP handler over 40 lines: every function in `crates/http/src/routes/`.

Prints every violation and exits 1 if there is one.
"""
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_LOC = 700
MAX_HANDLER = 40
EXCEPTED = {"migrations/src/m20261123_000001_initial_schema.rs"}
SOURCE_ROOTS = [p for pat in ("crates/*/src", "apps/*/src", "migrations/src", "bench/src") for p in ROOT.glob(pat)]


def crate_files():
    for src in SOURCE_ROOTS:
        for path in sorted(src.rglob("*.rs")):
            yield src, path


def test_module_files(src):
    """Files declared as `#[cfg(test)] mod x;` somewhere in the crate."""
    found = set()
    for path in src.rglob("*.rs"):
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            m = re.match(r"\s*(pub(\(\w+\))?\s+)?mod\s+(\w+)\s*;", line)
            if m and i > 0 and "#[cfg(test)]" in lines[i - 1]:
                base = path.parent if path.name in ("mod.rs", "lib.rs", "main.rs") else path.parent / path.stem
                found.add(base / f"{m.group(3)}.rs")
                found.add(base / m.group(3) / "mod.rs")
    return found


def code_lines(text):
    lines = text.splitlines()
    # A trailing test module: the last top-level `#[cfg(test)]` followed by `mod name {`.
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith("#[cfg(test)]") and i + 1 < len(lines) and re.match(r"(pub\s+)?mod\s+\w+\s*\{", lines[i + 1]):
            lines = lines[:i]
            break
    count = 0
    in_block = False
    for line in lines:
        s = line.strip()
        if in_block:
            if "*/" in s:
                in_block = False
            continue
        if not s or s.startswith("//"):
            continue
        if s.startswith("/*"):
            in_block = "*/" not in s
            continue
        count += 1
    return count


def top_module(src, path):
    rel = path.relative_to(src)
    if rel.parts[0] in ("lib.rs", "main.rs"):
        return None
    return rel.parts[0][:-3] if rel.parts[0].endswith(".rs") else rel.parts[0]


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(line.split("//", 1)[0] for line in text.splitlines())


def uses(text):
    """Top-level modules named by `crate::x` paths, including inside `use crate::{a, b::c}`."""
    names = set(re.findall(r"\bcrate::(\w+)", text))
    for group in re.findall(r"\bcrate::\{([^;]*?)\}\s*;", text, flags=re.S):
        depth = 0
        item = ""
        for ch in group + ",":
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                m = re.match(r"\s*(\w+)", item)
                if m:
                    names.add(m.group(1))
                item = ""
            else:
                item += ch
    return names


def sccs(graph):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
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
            out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def handlers(path):
    """(name, lines) of every fn in a routes file, outside a trailing test module."""
    lines = path.read_text().splitlines()
    out = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#[cfg(test)]"):
            break
        m = re.match(r"\s*(pub(\([\w:]+\))?\s+)?(async\s+)?fn\s+(\w+)", line)
        if m:
            depth, j, opened = 0, i, False
            while j < len(lines):
                depth += lines[j].count("{") - lines[j].count("}")
                if "{" in lines[j]:
                    opened = True
                if opened and depth <= 0:
                    break
                if not opened and lines[j].rstrip().endswith(";"):
                    break
                j += 1
            # Attributes directly above belong to the handler (`#[get(...)]`, `#[utoipa::path]`)
            # but are its routing, not its body: count from the `fn` line.
            out.append((m.group(4), j - i + 1))
            i = j + 1
            continue
        i += 1
    return out


def main():
    problems = []
    graphs = {}
    tests_of = {src: test_module_files(src) for src in SOURCE_ROOTS}
    for src, path in crate_files():
        rel = str(path.relative_to(ROOT))
        text = path.read_text()
        if rel not in EXCEPTED and path not in tests_of[src]:
            n = code_lines(text)
            if n > MAX_LOC:
                problems.append(f"{rel}: {n} lines of code (at most {MAX_LOC})")
        top = top_module(src, path)
        if top is not None:
            g = graphs.setdefault(src, {})
            g.setdefault(top, set()).update(m for m in uses(strip_comments(text)) if m != top)
    for src, graph in graphs.items():
        known = set(graph)
        trimmed = {k: {m for m in v if m in known} for k, v in graph.items()}
        for comp in sccs(trimmed):
            if len(comp) > 1:
                problems.append(f"{src.relative_to(ROOT)}: import circle between modules {', '.join(comp)}")
    routes = ROOT / "crates/http/src/routes"
    for path in sorted(routes.rglob("*.rs")):
        for name, n in handlers(path):
            if n > MAX_HANDLER:
                problems.append(f"{path.relative_to(ROOT)}: fn {name} is {n} lines (at most {MAX_HANDLER})")
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} structure problem(s)", file=sys.stderr)
        return 1
    print("structure: no file over 700 lines of code, no import circle, no handler over 40 lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
