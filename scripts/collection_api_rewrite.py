"""Rewrite callers of the store's old flat API to the collection API (issue 35), in place.

``get_passages(ids)`` becomes ``passages.get(ids)``, ``bm25_search("passage", q, k)``
becomes ``passages.bm25_search(q, k)``, ``count(collection)`` becomes
``collection(collection).count()``, ``node_store()`` becomes ``nodes``, ``add_nodes(...)``
becomes ``add(...)`` (each after ``store.`` or any other receiver), and the rest of
:data:`NAMES`. For branches written against the old API; running it twice changes
nothing. Receivers it cannot see (``served[2].store``, a call's result) and ``self``
(inside a backend) are left for a reader: ``grep`` for the old names after.

Usage::

    python scripts/collection_api_rewrite.py gear_agent tests benchmarks
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

NAMES = {
 "add_passages": "passages.add", "add_triples": "triples.add", "mark_extracted": "passages.mark_extracted",
 "delete_passages": "passages.remove", "delete_source": "passages.remove_source",
 "passage_ids_of_source": "passages.ids_of_source", "stored_sources": "passages.sources",
 "replace_passages": "passages.replace", "sources_like": "passages.sources_like",
 "filter_passage_ids": "passages.filter_ids", "get_passages": "passages.get", "get_triples": "triples.get",
 "triple_vectors": "triples.vectors", "passage_vectors": "passages.vectors",
 "triples_of_passages": "triples.of_passages", "triples_of_passage": "triples.of_passage",
 "neighbours_many": "triples.neighbours_many", "neighbours": "triples.neighbours",
 "unextracted_passages": "passages.unextracted", "iter_passages": "passages.iterate",
 "iter_triples": "triples.iterate", "passage_ids": "passages.ids", "triple_batches": "triples.batches",
}
SEARCH = ["count", "bm25_search", "vector_search", "lowest_similarity", "exact_vector_search"]
EXCLUDE_RECV = {"nodes", "coll", "tokenizer", "tokens", "doc"}

_names_re = re.compile(r"(?<![\w.])(?P<recv>[A-Za-z_][\w.]*(?:\(\))?)\.(?P<m>" + "|".join(sorted(NAMES, key=len, reverse=True)) + r")\(")
_lit_re = re.compile(r"(?<![\w.])(?P<recv>[A-Za-z_][\w.]*(?:\(\))?)\.(?P<m>" + "|".join(SEARCH) + r")\((?P<ws>\s*)(?P<q>[\"'])(?P<c>passage|triple)(?P=q)(?P<rest>,[ \t]*|\s*\))")
_var_re = re.compile(r"(?<![\w.])(?P<recv>[A-Za-z_][\w.]*(?:\(\))?)\.(?P<m>" + "|".join(SEARCH) + r")\((?P<ws>\s*)collection(?P<rest>,[ \t]*|\s*\))")


def _skip(recv: str, m: str) -> bool:
    last = recv.split(".")[-1]
    if last in ("passages", "triples"):  # already the collection API: run it twice, nothing changes
        return True
    if recv == "self":  # a store's or a collection's own method: read by hand
        return True
    if last in EXCLUDE_RECV or last.endswith("_parts") or recv.endswith("node_store()"):
        return True
    if m == "passage_ids" and "store" not in recv and recv not in {"filled", "reopened", "self"}:
        return True
    return False


def rewrite(text: str) -> str:
    def names(mo):
        recv, m = mo.group("recv"), mo.group("m")
        if _skip(recv, m):
            return mo.group(0)
        return f"{recv}.{NAMES[m]}("
    def lit(mo):
        recv, m = mo.group("recv"), mo.group("m")
        if _skip(recv, m):
            return mo.group(0)
        coll = "passages" if mo.group("c") == "passage" else "triples"
        if mo.group("rest").startswith(","):
            return f"{recv}.{coll}.{m}(" + mo.group("ws")
        return f"{recv}.{coll}.{m}()"
    def var(mo):
        recv, m = mo.group("recv"), mo.group("m")
        if _skip(recv, m):
            return mo.group(0)
        if mo.group("rest").startswith(","):
            return f"{recv}.collection(collection).{m}(" + mo.group("ws")
        return f"{recv}.collection(collection).{m}()"
    text = _lit_re.sub(lit, text)
    text = _var_re.sub(var, text)
    text = _names_re.sub(names, text)
    return text


NODE_NAMES = {"add_nodes": "add", "delete_nodes": "remove", "get_nodes": "get", "iter_nodes": "iterate"}


def rewrite_nodes(text: str) -> str:
    """The node collection's old names and ``store.nodes``."""
    for old, new in NODE_NAMES.items():
        text = re.sub(rf"\.{old}\(", f".{new}(", text)
    return text.replace(".node_store()", ".nodes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path, help="files or folders (.py and .md files are read)")
    changed = 0
    for root in parser.parse_args().paths:
        files = [root] if root.is_file() else sorted([*root.rglob("*.py"), *root.rglob("*.md")])
        for path in files:
            text = path.read_text(encoding="utf-8")
            new = rewrite_nodes(rewrite(text))
            if new != text:
                path.write_text(new, encoding="utf-8")
                changed += 1
                print(path)
    print(f"{changed} file(s) rewritten")


if __name__ == "__main__":
    main()
