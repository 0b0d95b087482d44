"""``gear index`` on Elasticsearch builds inside ``bulk_load()`` (no refresh per write,
one at the end, the indices' settings put back) and leaves an index that answers."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

pytest.importorskip("elasticsearch")

from typer.testing import CliRunner  # noqa: E402

from gear_agent.cli import app  # noqa: E402
from gear_agent.config import GearSettings  # noqa: E402
from gear_agent.embedding.hashing import HashingEmbedder  # noqa: E402
from gear_agent.store.elasticsearch.connection import Connection  # noqa: E402
from gear_agent.store.elasticsearch.store import ElasticsearchStore  # noqa: E402

pytestmark = pytest.mark.es

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"


def test_gear_index_on_elasticsearch_builds_inside_bulk_load_and_is_searchable(
    es_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prefix = f"cli-{uuid.uuid4().hex[:8]}"
    for key, value in {"GEAR_BACKEND": "elasticsearch", "GEAR_ES_INDEX_PREFIX": prefix,
                       "GEAR_EMBEDDING_MODEL": "hashing-384", "GEAR_ES_CACHE_DIR": str(tmp_path / "cache")}.items():
        monkeypatch.setenv(key, value)
    refreshes: list[str] = []  # the refreshes the build sent, and whether inside the block
    state = {"inside": False}
    bulk_load, refresh = ElasticsearchStore.bulk_load, Connection.refresh

    def watched_bulk_load(self):  # noqa: ANN001, ANN202
        block = bulk_load(self)

        class Watched:
            def __enter__(self_inner):  # noqa: ANN001, ANN204, N805
                block.__enter__()
                state["inside"] = True

            def __exit__(self_inner, *exc):  # noqa: ANN001, ANN204, N805
                state["inside"] = False
                return block.__exit__(*exc)

        return Watched()

    def watched_refresh(self, *indices):  # noqa: ANN001, ANN202
        refreshes.append("inside" if state["inside"] else "outside")
        return refresh(self, *indices)

    monkeypatch.setattr(ElasticsearchStore, "bulk_load", watched_bulk_load)
    monkeypatch.setattr(Connection, "refresh", watched_refresh)
    result = CliRunner().invoke(app, ["index", str(DEMO / "corpus.json"), "--openie", str(DEMO / "openie.json")])
    assert result.exit_code == 0, result.output
    assert refreshes == ["outside"], refreshes  # none per write: one, as the block ends
    settings = GearSettings()
    with ElasticsearchStore(settings, HashingEmbedder(384)) as store:
        try:
            passages, triples = store.passages.count(), store.triples.count()
            assert passages > 0 and triples > 0
            first = next(store.passages.iterate())
            assert store.passages.bm25_search(first.title, 3)[0].id == first.id
            for name in store.indices:  # the build's settings were put back
                index = store._client.indices.get_settings(index=name, flat_settings=True).body[name]["settings"]
                assert index.get("index.refresh_interval") != "-1"
        finally:
            for name in store.indices:
                store._client.indices.delete(index=name, ignore_unavailable=True)
