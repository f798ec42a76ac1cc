"""The package's modules import each other without cycles.

The graph holds what a module imports when it is itself imported: statements
at module level, in class bodies and under ``if``/``try``, and also under
``if TYPE_CHECKING:`` (a cycle of types is still two modules that each need
the other). Imports inside functions run on first call, after every module
involved has loaded, so they are left out: they are how a module defers an
expensive or optional dependency.

``from package import name`` depends on the submodule ``package.name`` when
there is one, else on the package itself (the name comes from its
``__init__``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import slurmrl

PACKAGE = Path(slurmrl.__file__).resolve().parent


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def load_time_imports(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """Import statements that run when the module is imported (see the module docstring)."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    yield from load_time_imports([child])
                elif isinstance(child, ast.excepthandler | ast.match_case):
                    yield from load_time_imports(child.body)


def imported_modules(
    node: ast.Import | ast.ImportFrom, importer: str, is_package: bool, known: set[str]
) -> set[str]:
    """The package's modules one import statement depends on."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name in known}
    base = node.module or ""
    if node.level:
        anchor = importer.split(".")
        if not is_package:
            anchor = anchor[:-1]
        anchor = anchor[: len(anchor) - node.level + 1]
        base = ".".join([*anchor, *([node.module] if node.module else [])])
    found = set()
    for alias in node.names:
        sub = f"{base}.{alias.name}"
        if sub in known:
            found.add(sub)
        elif base in known:
            found.add(base)
    return found


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module name -> the package's modules it imports at load time, for the package at ``root``."""
    paths = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    known = set(paths)
    graph = {}
    for name, path in paths.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        edges: set[str] = set()
        for node in load_time_imports(tree.body):
            edges |= imported_modules(node, name, path.name == "__init__.py", known)
        graph[name] = edges - {name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path that ends where it starts, or None."""
    done: set[str] = set()
    for start in sorted(graph):
        if start in done:
            continue
        path, on_path = [start], {start}
        stack = [iter(sorted(graph[start]))]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                finished = path.pop()
                on_path.discard(finished)
                done.add(finished)
                stack.pop()
                continue
            if nxt in on_path:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in done:
                path.append(nxt)
                on_path.add(nxt)
                stack.append(iter(sorted(graph[nxt])))
    return None


def test_the_package_has_no_import_cycle() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or ())


def test_the_checker_sees_cycles_through_type_checking_and_class_bodies_but_not_functions(
    tmp_path: Path,
) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import B\n"
    )
    (pkg / "b.py").write_text("class B:\n    from . import c\n")
    (pkg / "c.py").write_text("def f():\n    from pkg import a\n")
    (pkg / "d.py").write_text("try:\n    from pkg import a\nexcept ImportError:\n    pass\n")
    graph = import_graph(pkg)
    assert graph == {"pkg": set(), "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.c"}, "pkg.c": set(), "pkg.d": {"pkg.a"}}
    assert find_cycle(graph) is None
    (pkg / "c.py").write_text("import pkg.d\n")
    assert find_cycle(import_graph(pkg)) == ["pkg.a", "pkg.b", "pkg.c", "pkg.d", "pkg.a"]
