"""Path-aware source filters on every backend: a folder or file named relative, ``./``, with
a trailing slash or through a symlink matches the canonical sources stored under it, in
counts and in searches before ranking."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.fakes import make_passage

from gear_agent.filters import parse_where
from gear_agent.ingest.corpus import canonical_source
from gear_agent.sources import path_aware_where
from gear_agent.store.base import Store


def test_a_source_named_any_way_filters_on_every_backend(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "docs" / "sub").mkdir(parents=True)
    (tmp_path / "docs2").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "docs", target_is_directory=True)
    files = {"docs/a.txt": "river one", "docs/sub/b.md": "river two", "docs2/c.txt": "river three"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    store.passages.add([make_passage(name, text, source=canonical_source(tmp_path / name))
                        for name, text in files.items()])
    monkeypatch.chdir(tmp_path)
    for named, expected in (("docs", 2), ("./docs/", 2), ("link", 2), ("docs/sub/b.md", 1),
                            ("link/a.txt", 1), (str(tmp_path / "docs2"), 1)):
        where = path_aware_where(parse_where({"source": named}))
        assert store.passages.count(where) == expected, named
        assert len(store.passages.bm25_search("river", 10, where)) == expected, named
    outside = path_aware_where(parse_where(["source!=./docs"]))
    assert [h.id for h in store.passages.bm25_search("river", 10, outside)] == [
        make_passage("docs2/c.txt", "river three").id]
