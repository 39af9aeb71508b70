#!/usr/bin/env python3
"""Checks the layering of the `signet` crate: which module may import which.

Each top-level module of crates/signet/src sits on a layer (LAYERS, ground first). A module may
use what stands on its own layer or below; an import from a lower layer to a higher one "runs back
up". The script reads every `crate::`, `super::` and `self::` path in the crate's source (in `use`
lines and in code), resolves it to a file, and prints:

- every import that runs back up a layer (file, line, the path);
- every circle of files that import each other (a strongly connected set of more than one file);
- every library file over MAX_LINES lines (unit tests included).

Unit tests may import anything: the code after `#[cfg(test)] mod tests`, and a `tests.rs` file
(such a module in its own file), are not read for imports.

A module's `use child::X` of its own submodules (no `crate`, `super` or `self`) is not read: a
parent may always use its children, and re-exporting them is how a module shows its face.

It exits 1 when there are more back-imports, circles or long files than their budgets
(ALLOWED_BACK, ALLOWED_CIRCLES, ALLOWED_LONG: budgets that only go down), or a module on no layer,
so CI catches a new one. Run:

    python3 scripts/layers.py            # the report, exit status as above
    python3 scripts/layers.py --quiet    # only the counts
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "crates" / "signet" / "src"

# Ground first. A module not listed is an error (say where a new one goes).
LAYERS = [
    ["schema", "shared", "blocking", "child_env", "fs_atomic", "python", "telemetry"],
    ["signature", "tool", "media"],
    ["lm", "embed"],
    ["adapter", "journal"],
    ["error", "trace", "structured"],
    ["module", "data"],
    ["evaluate"],
    ["optimize"],
    ["testing"],
]

# The budgets: lower them as the code improves; never raise them.
ALLOWED_BACK = 0
ALLOWED_CIRCLES = 0
MAX_LINES = 900
ALLOWED_LONG = 0

PATH = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
USE_GROUP = re.compile(r"\buse\s+(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)*)::\{", re.S)


def module_of(path: Path) -> list[str]:
    """The module path of a source file: src/adapter/xml.rs -> ["adapter", "xml"]."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] in ("lib", "mod"):
        parts = parts[:-1]
    return parts


def file_of(module: list[str], files: dict) -> tuple | None:
    """The file that defines the longest prefix of `module`."""
    for n in range(len(module), 0, -1):
        key = tuple(module[:n])
        if key in files:
            return key
    return None


def strip_comments_and_strings(text: str) -> str:
    """The code without comments, doc comments and string literals (kept line by line)."""
    out = []
    for line in text.split("\n"):
        line = re.sub(r'"(?:\\.|[^"\\])*"', '""', line)
        cut = line.find("//")
        out.append(line if cut < 0 else line[:cut])
    return "\n".join(out)


def strip_tests(text: str) -> str:
    """The code before `#[cfg(test)] mod tests` (tests may import anything)."""
    match = re.search(r"#\[cfg\(test\)\]\s*mod tests", text)
    return text if match is None else text[: match.start()]


def resolve(kind: str, rest: list[str], here: list[str]) -> list[str]:
    """An absolute module path for `crate::a::b`, `super::a` or `self::a` written in `here`."""
    if kind == "crate":
        return rest
    base = list(here)
    if kind == "super":
        base = base[:-1]
        while rest and rest[0] == "super":
            rest = rest[1:]
            base = base[:-1]
    return base + rest


def main() -> int:
    quiet = "--quiet" in sys.argv
    layer_of = {name: i for i, names in enumerate(LAYERS) for name in names}
    files = {}
    for path in sorted(ROOT.rglob("*.rs")):
        files[tuple(module_of(path))] = path
    edges = {}
    back = []
    unknown = set()
    for key, path in files.items():
        if not key:
            continue  # lib.rs: the facade re-exports everything
        text = path.read_text()
        # A `tests.rs` is a `#[cfg(test)] mod tests;` in its own file: tests may import anything.
        if path.name == "tests.rs":
            text = ""
        code = strip_comments_and_strings(strip_tests(text))
        here = list(key)
        found = []
        for match in PATH.finditer(code):
            found.append((match.start(), match.group(1), match.group(2).split("::")[1:]))
        for match in USE_GROUP.finditer(code):
            # `use crate::a::{b, c::d}`: each inner path
            start = match.end()
            depth, end = 1, start
            while end < len(code) and depth:
                depth += {"{": 1, "}": -1}.get(code[end], 0)
                end += 1
            prefix = match.group(2).split("::")[1:]
            for item in re.split(r"[,{}]", code[start : end - 1]):
                item = item.strip().split(" as ")[0]
                if item and item != "self" and re.match(r"^[A-Za-z_][A-Za-z0-9_:]*$", item):
                    found.append((match.start(), match.group(1), prefix + item.split("::")))
        for offset, kind, rest in found:
            target = resolve(kind, rest, here)
            if not target:
                continue
            to = file_of(target, files)
            if to is None or to == key or not to:
                continue
            edges.setdefault(key, {}).setdefault(to, code.count("\n", 0, offset) + 1)
    for source, targets in sorted(edges.items()):
        for target, line in sorted(targets.items()):
            a, b = source[0], target[0]
            for top in (a, b):
                if top not in layer_of:
                    unknown.add(top)
            if a in layer_of and b in layer_of and layer_of[b] > layer_of[a]:
                back.append((files[source], line, "::".join(target)))
    circles = strongly_connected(edges)
    long_files = [
        (path, n)
        for path in files.values()
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    ]
    rel = lambda p: p.relative_to(ROOT.parent.parent.parent)
    if not quiet:
        for path, line, target in back:
            print(f"back up: {rel(path)}:{line} uses crate::{target}")
        for circle in circles:
            print("circle: " + " <-> ".join(str(rel(files[k])) for k in sorted(circle)))
        for path, n in long_files:
            print(f"over {MAX_LINES} lines: {rel(path)} ({n} lines)")
        for top in sorted(unknown):
            print(f"module `{top}` is on no layer: add it to LAYERS in scripts/layers.py")
    print(
        f"{len(back)} imports run back up a layer (budget {ALLOWED_BACK}), "
        f"{len(circles)} circles of files (budget {ALLOWED_CIRCLES}), "
        f"{len(long_files)} files over {MAX_LINES} lines (budget {ALLOWED_LONG})"
    )
    failed = (
        len(back) > ALLOWED_BACK
        or len(circles) > ALLOWED_CIRCLES
        or len(long_files) > ALLOWED_LONG
        or unknown
    )
    return 1 if failed else 0


def strongly_connected(edges: dict) -> list[set]:
    """Tarjan's algorithm; the components of more than one file."""
    index, low, stack, on_stack, result = {}, {}, [], set(), []
    counter = [0]
    nodes = set(edges) | {t for targets in edges.values() for t in targets}

    def visit(v):
        work = [(v, iter(edges.get(v, {})))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        while work:
            node, children = work[-1]
            advanced = False
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(edges.get(w, {}))))
                    advanced = True
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.add(w)
                    if w == node:
                        break
                if len(component) > 1:
                    result.append(component)

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return result


if __name__ == "__main__":
    sys.exit(main())
