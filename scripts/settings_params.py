"""Count the functions and methods of a package that take the whole ``GearSettings``.

A component should take the settings section it reads (``settings.retrieval``,
``settings.serve``, ...); only the entry points (the facade, the CLI commands, the server
factory) take the whole ``GearSettings``. This lists every function or method with a
parameter annotated ``GearSettings`` (``GearSettings | None`` included), one a line, and
their count last, so the count is reproducible::

    python scripts/settings_params.py            # gear_agent
    python scripts/settings_params.py --count    # the count alone
"""

from __future__ import annotations

import argparse
import ast
from collections.abc import Iterator
from pathlib import Path


def _names(annotation: ast.expr | None) -> set[str]:
    """The names an annotation mentions (string annotations parsed too)."""
    if annotation is None:
        return set()
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return set()
    return {n.id for n in ast.walk(annotation) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(annotation) if isinstance(n, ast.Attribute)
    }


def settings_params(root: Path, type_name: str = "GearSettings") -> Iterator[tuple[str, int, str, str]]:
    """``(path, line, function, parameter)`` for each parameter annotated ``type_name``."""
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        parents: dict[ast.AST, ast.AST] = {c: p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            a = node.args
            for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs]:
                if type_name in _names(arg.annotation):
                    owner = parents.get(node)
                    name = f"{owner.name}.{node.name}" if isinstance(owner, ast.ClassDef) else node.name
                    yield str(path), node.lineno, name, arg.arg
                    break


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default="gear_agent", type=Path)
    parser.add_argument("--count", action="store_true", help="print the count alone")
    args = parser.parse_args()
    found = list(settings_params(args.root))
    if not args.count:
        for path, line, name, param in found:
            print(f"{path}:{line}  {name}({param})")
    print(len(found))


if __name__ == "__main__":
    main()
