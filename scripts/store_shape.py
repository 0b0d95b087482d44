"""The shape of ``gear_agent/store/`` in one table: the public methods of the ``Store``
interface and of each backend's store class, files and lines.

Usage::

    python scripts/store_shape.py                # this checkout
    python scripts/store_shape.py /path/to/tree  # another checkout (e.g. an older commit)

Issue 35's targets: ``Store`` at most 20 public methods (import circles: ``farm-studio look
gear_agent/store``; private reaches: ``scripts/private_reaches.py``).
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

CLASSES = {
    "Store": ("base.py",),
    "EmbeddedStore": ("embedded/store.py", "embedded.py"),
    "ElasticsearchStore": ("elasticsearch/store.py", "elasticsearch.py"),
}


def public_methods(path: Path, name: str) -> list[str]:
    """Names of the public methods (and properties) of class ``name`` in the file at ``path``."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return [f.name for f in node.body
                    if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and not f.name.startswith("_")]
    return []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default=".", help="the checkout to read")
    store = Path(parser.parse_args().root) / "gear_agent" / "store"
    print(f"{'class':<22} {'file':<28} public methods")
    for name, candidates in CLASSES.items():
        path = next((store / c for c in candidates if (store / c).exists()), None)
        if path is not None:
            print(f"{name:<22} {str(path.relative_to(store)):<28} {len(public_methods(path, name)):>14}")
    files = sorted(store.rglob("*.py"))
    lines = sum(len(f.read_text(encoding="utf-8").splitlines()) for f in files)
    print(f"store/: {len(files)} files, {lines:,} lines")


if __name__ == "__main__":
    main()
