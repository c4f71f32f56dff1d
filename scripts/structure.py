"""The shape of src/ragexp, in figures: modules and their sizes, import cycles, how deep the
packages stack, imports that run against the layers of pyproject.toml, and the longest and most
branching functions.

    .venv/bin/python scripts/structure.py            # this checkout
    .venv/bin/python scripts/structure.py --src DIR  # another checkout's src/ (e.g. an old commit)

Imports are read from the source (every import, those inside functions and ``TYPE_CHECKING``
blocks included), so the figures need nothing installed. A "room" is a top-level module or
package of ragexp, as ``ls src/ragexp`` shows it; floors count rooms stacked by their imports.
"""

from __future__ import annotations

import argparse
import ast
import statistics
import tomllib
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "ragexp"


def modules(src: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package under ``src``."""
    found = {}
    for path in sorted((src / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package's modules that module ``name`` imports, anywhere in its file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets |= {_owner(a.name, known) for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                targets.add(full if full in known else _owner(base, known))
    return {t for t in targets if t and t != name}


def _owner(dotted: str, known: dict[str, Path]) -> str:
    parts = dotted.split(".")
    while parts and ".".join(parts) not in known:
        parts.pop()
    return ".".join(parts)


def room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def floors(graph: dict[str, set[str]]) -> dict[str, int]:
    """Each node's floor: 1 + the highest floor it imports (1 for none); nodes of one cycle
    share a floor."""
    member = {v: tuple(c) for c in cycles(graph) for v in c}
    floor: dict[str, int] = {}

    def height(v: str, seen: frozenset[str]) -> int:
        if v in floor:
            return floor[v]
        group = member.get(v, (v,))
        below = {w for g in group for w in graph.get(g, ()) if w not in group and w not in seen}
        h = 1 + max((height(w, seen | set(group)) for w in below), default=0)
        for g in group:
            floor[g] = h
        return h

    for v in graph:
        height(v, frozenset())
    return floor


def layer_order() -> list[list[str]]:
    """The rooms of the layers contract in pyproject.toml, top to bottom ([] without one)."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config.get("tool", {}).get("importlinter", {}).get("contracts", [])
    layers = next((c["layers"] for c in contracts if c.get("type") == "layers"), [])
    return [[part.strip() for part in layer.split("|")] for layer in layers]


def functions(path: Path) -> Iterator[tuple[int, int, str]]:
    """(lines, branches + 1, name) of every function in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            branches = sum(
                isinstance(n, ast.If | ast.For | ast.While | ast.Try | ast.With | ast.BoolOp
                           | ast.IfExp | ast.comprehension | ast.ExceptHandler | ast.match_case)
                for n in ast.walk(node)
            )  # fmt: skip
            yield lines, branches + 1, node.name


def report(src: Path) -> str:
    known = modules(src)
    graph = {name: imports(name, path, known) for name, path in known.items()}
    sizes = {
        name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in known.items()
    }
    rooms: dict[str, set[str]] = {}
    for name, targets in graph.items():
        rooms.setdefault(room(name), set()).update(
            room(t) for t in targets if room(t) != room(name)
        )
    rooms.pop("__init__", None)  # the public face imports everything by design
    for targets in rooms.values():
        targets.discard("__init__")
    room_floor = floors(rooms)
    order = layer_order()
    rank = {r: i for i, layer in enumerate(order) for r in layer}
    upward = sorted(
        (a, b) for a, targets in rooms.items() for b in targets
        if a in rank and b in rank and (rank[b] < rank[a] or (rank[b] == rank[a] and a != b))
    )  # fmt: skip
    funcs = sorted(
        ((lines, branches, f"{name}.{func}") for name, path in known.items()
         for lines, branches, func in functions(path)),
        reverse=True,
    )  # fmt: skip
    lines = [
        f"modules: {len(known)}; lines: median {statistics.median(sizes.values()):.0f}, "
        f"largest {max(sizes.values())} ({max(sizes, key=lambda k: sizes[k])}); "
        f"over 400: {sum(n > 400 for n in sizes.values())}",
        f"module import cycles: {len(cycles(graph))}"
        + "".join(f"\n  {' -> '.join(c)}" for c in cycles(graph)),
        f"room cycles: {len(cycles(rooms))}"
        + "".join(f"\n  {' -> '.join(c)}" for c in cycles(rooms)),
        f"floors (rooms stacked by their imports): {max(room_floor.values(), default=0)}",
        f"imports against the layers of pyproject.toml: {len(upward) if order else 'no layers'}"
        + "".join(f"\n  {a} -> {b}" for a, b in upward),
        "longest functions: " + ", ".join(f"{name} {n}" for n, _, name in funcs[:5]),
        f"functions over 60 lines: {sum(n > 60 for n, _, _ in funcs)}; "
        "most branching: "
        + ", ".join(
            f"{name} {b}" for b, name in sorted(((b, n) for _, b, n in funcs), reverse=True)[:3]
        ),
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=REPO / "src", help="the src/ folder to read")
    print(report(parser.parse_args().src))


if __name__ == "__main__":
    main()
