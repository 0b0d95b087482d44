"""The backend table answers what callers used to branch on by the backend's name: whether
an index is already there (the facade's "created a new, empty one" warning) and whether the
backend has a previous format to migrate (``gear migrate``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gear_agent.config import settings_from
from gear_agent.embedding.hashing import HashingEmbedder
from gear_agent.store.backends import BACKENDS, backend
from gear_agent.store.base import StoreError
from gear_agent.store.embedded.store import EmbeddedStore
from gear_agent.types import Passage


def test_the_embedded_row_tells_whether_an_index_is_there(tmp_path: Path) -> None:
    settings = settings_from(index_dir=tmp_path / "ix")
    exists = backend("embedded").exists
    assert exists is not None and not exists(settings)
    with EmbeddedStore.open(tmp_path / "ix", HashingEmbedder(64)) as store:
        store.passages.add([Passage("p-1", "Paris", "Paris is in France.", "a.txt")])
    assert exists(settings)


def test_only_the_embedded_backend_has_a_previous_format(tmp_path: Path) -> None:
    assert [name for name, row in BACKENDS.items() if row.migrate is not None] == ["embedded"]
    assert backend("elasticsearch").exists is None  # it cannot tell without connecting
    with pytest.raises(StoreError, match="nothing to migrate"):
        backend("embedded").migrate(settings_from(index_dir=tmp_path / "empty"))  # type: ignore[misc]
