"""Count reaches into another module's private names under a package (default gear_agent/).

A reach is either an import of a ``_private`` name from another module
(``from gear_agent.store.check import _check_graph_cache``) or an attribute access
``obj._private`` whose object is not ``self``/``cls``/``super()`` (``store._mget``) and
whose name the same module does not define (a module's functions may use the private
fields of the classes it defines). Dunder names (``__init__``) and private modules imported as a whole (``from . import
_steps``: a package's own internal module) are not reaches.

Usage::

    python scripts/private_reaches.py            # a table per file, then the total
    python scripts/private_reaches.py --list     # every reach with its line
"""

from __future__ import annotations

import argparse
import ast
from collections import Counter
from pathlib import Path


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _module_file(module: str, root: Path) -> bool:
    """Whether ``module`` names a module (not a package's name) under ``root``'s parent."""
    path = root.parent.joinpath(*module.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def _defined(tree: ast.AST) -> set[str]:
    """Private names the module defines: functions, classes, assigned names and attributes."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if _private(n)}


def reaches(path: Path, root: Path) -> list[tuple[int, str]]:
    """Every reach in the file at ``path`` as (line, what)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    own = _defined(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                if _private(alias.name) and not _module_file(f"{node.module}.{alias.name}", root):
                    found.append((node.lineno, f"from {node.module} import {alias.name}"))
        elif isinstance(node, ast.Attribute) and _private(node.attr) and node.attr not in own:
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                continue
            if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super":
                continue
            found.append((node.lineno, f"{ast.unparse(owner)}.{node.attr}"))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", nargs="?", default="gear_agent", help="the package folder to read")
    parser.add_argument("--list", action="store_true", help="print every reach with its line")
    args = parser.parse_args()
    root = Path(args.package)
    per_file: Counter[str] = Counter()
    for path in sorted(root.rglob("*.py")):
        for line, what in reaches(path, root):
            per_file[str(path)] += 1
            if args.list:
                print(f"{path}:{line}: {what}")
    if not args.list:
        print(f"{'file':<60} reaches")
        for name, n in sorted(per_file.items()):
            print(f"{name:<60} {n:>7}")
    print(f"total private reaches in {root}/: {sum(per_file.values())}")


if __name__ == "__main__":
    main()
