#!/usr/bin/env python3
"""Checks the layering of every crate of the workspace: which module may import which.

Each top-level module of a crate's `src` sits on a layer (LAYERS, one list per crate, ground
first). A module may use what stands on its own layer or below; an import from a lower layer to a
higher one "runs back up". The script reads every `crate::`, `super::` and `self::` path in the
crate's source (in `use` lines and in code) and resolves it to the file that defines the name:
through the `pub use` re-exports on the way (so `crate::Error`, re-exported by lib.rs, is the
file that defines `Error`, not lib.rs). It prints:

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

    python3 scripts/layers.py              # the report, exit status as above
    python3 scripts/layers.py --quiet      # only the counts
    python3 scripts/layers.py --self-test  # the check itself, on small crates it writes
"""

import re
import sys
from pathlib import Path

WORKSPACE = Path(__file__).resolve().parent.parent

# Per crate, ground first. A module not listed is an error (say where a new one goes); a crate of
# the workspace that is not listed is an error too.
LAYERS = {
    "signet": [
        ["schema", "shared", "blocking", "child_env", "fs_atomic", "http", "python", "telemetry"],
        ["signature", "tool", "media"],
        ["lm", "embed"],
        ["adapter", "journal"],
        ["error", "trace", "structured", "adapted"],
        ["module", "data"],
        ["evaluate"],
        ["optimize"],
        ["testing"],
    ],
    "signet-macros": [["errors", "docs"], ["module", "signature", "tool"]],
    "signet-macros-ui": [],
    "signet-local": [["naming", "notice"], ["running", "prompt_cache"], ["server"], ["llama_cpp"]],
    "signet-sandbox": [["error", "limits"], ["host"], ["sandbox"]],
    "signet-mcp": [["error", "shed", "content", "auth"], ["telemetry"], ["client", "server"]],
    "signet-otel": [
        ["error", "reporting", "propagator", "metrics"],
        ["processor", "dataset"],
        ["config"],
    ],
    "signet-restate": [
        ["identity", "telemetry", "journal"],
        ["agent"],
        ["ingress"],
        ["evaluate", "server"],
    ],
}

# The budgets: lower them as the code improves; never raise them.
ALLOWED_BACK = 0
ALLOWED_CIRCLES = 0
MAX_LINES = 900
ALLOWED_LONG = 0

PATH = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
USE = re.compile(r"\buse\s+([^;]+);")


def module_of(path: Path, root: Path) -> list[str]:
    """The module path of a source file: src/adapter/xml.rs -> ["adapter", "xml"]."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] in ("lib", "mod"):
        parts = parts[:-1]
    return parts


def file_of(module: list[str], files: dict) -> tuple | None:
    """The file that defines the longest prefix of `module`."""
    for n in range(len(module), -1, -1):
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


PUB_USE = re.compile(r"\bpub(?:\([a-z]+\))?\s+use\s+([^;]+);")


def use_items(module: list[str], tree: str) -> list[tuple[str, list[str]]]:
    """The (name, absolute path) pairs of one `use` tree written in `module`: `a::{B, c::D as E}`
    gives ("B", a::B) and ("E", a::c::D). A path that does not start with `crate`, `super` or
    `self` is read as relative to `module` (an external crate's path never resolves to a file)."""
    # Spaces only where `as` needs them: `a :: { b as c }` -> `a::{b as c}`.
    tree = re.sub(r"\s*(::|\{|\}|,)\s*", r"\1", " ".join(tree.split()))
    out = []

    def walk(prefix: list[str], rest: str):
        rest = rest.strip()
        if "{" in rest and not rest.startswith("{"):
            head, _, inner = rest.partition("{")
            walk(prefix + [p for p in head.split("::") if p], "{" + inner)
            return
        if rest.startswith("{"):
            depth, start, parts = 0, 1, []
            for i, ch in enumerate(rest):
                depth += {"{": 1, "}": -1}.get(ch, 0)
                if ch == "," and depth == 1:
                    parts.append(rest[start:i])
                    start = i + 1
                if depth == 0:
                    parts.append(rest[start:i])
                    break
            for part in parts:
                if part.strip():
                    walk(prefix, part)
            return
        path, _, alias = rest.partition(" as ")
        segments = [p for p in path.split("::") if p]
        if not segments or segments[-1] in ("self", "*"):
            return
        out.append((alias.strip() or segments[-1], prefix + segments))

    walk([], tree)
    absolute = []
    for name, path in out:
        kind = path[0] if path[0] in ("crate", "super", "self") else "self"
        rest = path[1:] if path[0] in ("crate", "super", "self") else path
        absolute.append((name, resolve(kind, rest, module)))
    return absolute


def reexports_of(files: dict) -> dict:
    """Per module, the names it re-exports (`pub use`) and the path each stands for."""
    found = {}
    for key, path in files.items():
        code = strip_comments_and_strings(strip_tests(path.read_text()))
        for match in PUB_USE.finditer(code):
            for name, target in use_items(list(key), match.group(1)):
                # The first wins: a later one is an inline module's (lib.rs's `prelude`), read
                # here as if it were the file's own.
                found.setdefault(key, {}).setdefault(name, target)
    return found


def defining_file(target: list[str], files: dict, reexports: dict):
    """The file that defines what `target` names: the file of its longest module prefix, then
    through that module's re-exports (a few hops at most)."""
    for _ in range(8):
        key = file_of(target, files)
        if key is None:
            return None
        rest = target[len(key) :]
        if not rest or rest[0] not in reexports.get(key, {}):
            return key
        followed = reexports[key][rest[0]] + rest[1:]
        if followed == target:
            return key
        target = followed
    return key


def check_crate(name: str, root: Path, quiet: bool) -> tuple[int, int, int, bool]:
    """The crate's back-imports, circles and long files (printed unless `quiet`), and whether a
    module is on no layer."""
    layers = LAYERS[name]
    layer_of = {module: i for i, names in enumerate(layers) for module in names}
    files = {}
    for path in sorted(root.rglob("*.rs")):
        files[tuple(module_of(path, root))] = path
    reexports = reexports_of(files)
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
            rest = match.group(2).split("::")[1:]
            found.append((match.start(), resolve(match.group(1), rest, here)))
        for match in USE.finditer(code):
            # `use crate::a::{b, c::{d, e as f}}`: each path of the tree.
            for _, target in use_items(here, match.group(1)):
                found.append((match.start(), target))
        for offset, target in found:
            if not target:
                continue
            to = defining_file(target, files, reexports)
            # A module's own children, and lib.rs's own items (a crate's error type, say).
            if to is None or to == key or not to or to[: len(key)] == key:
                continue
            edges.setdefault(key, {}).setdefault(to, code.count("\n", 0, offset) + 1)
    for key in files:
        if key and key[0] not in layer_of:
            unknown.add(key[0])
    for source, targets in sorted(edges.items()):
        for target, line in sorted(targets.items()):
            a, b = source[0], target[0]
            if a in layer_of and b in layer_of and layer_of[b] > layer_of[a]:
                back.append((files[source], line, "::".join(target)))
    circles = strongly_connected(edges)
    long_files = [
        (path, n)
        for path in files.values()
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    ]
    rel = lambda p: p.relative_to(WORKSPACE) if p.is_relative_to(WORKSPACE) else p
    if not quiet:
        for path, line, target in back:
            print(f"back up: {rel(path)}:{line} uses crate::{target}")
        for circle in circles:
            print("circle: " + " <-> ".join(str(rel(files[k])) for k in sorted(circle)))
        for path, n in long_files:
            print(f"over {MAX_LINES} lines: {rel(path)} ({n} lines)")
        for top in sorted(unknown):
            print(f"{name}: module `{top}` is on no layer: add it to LAYERS in scripts/layers.py")
    return len(back), len(circles), len(long_files), bool(unknown)


def self_test() -> int:
    """The check run on a small crate written here: a back-import through a re-export, a circle
    through one, and a long file must each be found, and a clean crate must pass."""
    import tempfile

    def crate(files: dict) -> tuple:
        with tempfile.TemporaryDirectory() as dir:
            root = Path(dir)
            for name, text in files.items():
                (root / name).write_text(text)
            LAYERS["probe"] = [["base"], ["top"]]
            try:
                return check_crate("probe", root, quiet=True)
            finally:
                del LAYERS["probe"]

    lib = "mod base;\nmod top;\npub use base::Base;\npub use top::Top;\n"
    clean = crate({"lib.rs": lib, "base.rs": "pub struct Base;\n", "top.rs": "use crate::Base;\npub struct Top;\n"})
    back = crate({"lib.rs": lib, "base.rs": "pub struct Base(crate::Top);\n", "top.rs": "pub struct Top;\n"})
    circle = crate({"lib.rs": lib, "base.rs": "pub struct Base(crate::Top);\n", "top.rs": "pub struct Top(crate::Base);\n"})
    long = crate({"lib.rs": lib, "base.rs": "pub struct Base;\n" * (MAX_LINES + 1), "top.rs": "pub struct Top;\n"})
    unknown = crate({"lib.rs": "mod other;\n", "other.rs": "pub struct Other;\n"})
    checks = [
        ("a clean crate passes", clean == (0, 0, 0, False)),
        ("a back-import through lib.rs's re-export is found", back[0] == 1),
        ("a circle through re-exports is found", circle[1] == 1),
        ("a long file is found", long[2] == 1),
        ("a module on no layer is found", unknown[3]),
    ]
    for what, ok in checks:
        print(f"{'ok' if ok else 'FAILED'}: {what}")
    return 0 if all(ok for _, ok in checks) else 1


def main() -> int:
    if "--self-test" in sys.argv:
        return self_test()
    quiet = "--quiet" in sys.argv
    back = circles = long_files = 0
    unknown = False
    for manifest in sorted((WORKSPACE / "crates").glob("*/Cargo.toml")):
        name = manifest.parent.name
        if name not in LAYERS:
            print(f"crate `{name}` has no layers: add it to LAYERS in scripts/layers.py")
            unknown = True
            continue
        counts = check_crate(name, manifest.parent / "src", quiet)
        back, circles, long_files = back + counts[0], circles + counts[1], long_files + counts[2]
        unknown = unknown or counts[3]
    print(
        f"{back} imports run back up a layer (budget {ALLOWED_BACK}), "
        f"{circles} circles of files (budget {ALLOWED_CIRCLES}), "
        f"{long_files} files over {MAX_LINES} lines (budget {ALLOWED_LONG}), "
        f"in {len(LAYERS)} crates"
    )
    failed = (
        back > ALLOWED_BACK
        or circles > ALLOWED_CIRCLES
        or long_files > ALLOWED_LONG
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
