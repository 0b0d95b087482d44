"""Faults of a real Elasticsearch cluster: one clear line each, nothing committed lost, a
rerun completes (``support.es_faults``; ``benchmarks/es_faults.py`` prints the table).
And ``gear check`` of an Elasticsearch index, healthy and damaged.

These need the test cluster itself (they stop and restart its nodes), so they skip where
``GEAR_ES_URL`` names another cluster.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("elasticsearch")

from support import es_cluster, es_faults  # noqa: E402

pytestmark = [pytest.mark.es, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def cluster() -> Iterator[es_cluster.EsCluster]:
    if os.environ.get("GEAR_ES_URL"):
        pytest.skip("the fault tests stop and restart nodes of the test cluster; GEAR_ES_URL names another")
    try:
        started = es_cluster.start(3)
    except es_cluster.ClusterUnavailable as err:
        if os.environ.get("GEAR_ES_REQUIRED") == "1":
            pytest.fail(f"GEAR_ES_REQUIRED=1 but no test cluster can start: {err}")
        pytest.skip(str(err))
    try:
        yield started
    finally:
        started.close()


@pytest.mark.parametrize("scenario", es_faults.SCENARIOS, ids=lambda s: s.__name__)
def test_a_fault_reads_as_one_line_loses_nothing_and_a_rerun_completes(
    scenario, cluster: es_cluster.EsCluster, tmp_path: Path
) -> None:
    outcome = scenario(cluster, tmp_path)
    assert outcome.one_line, outcome.error
    assert outcome.committed_kept, outcome
    assert outcome.rerun_ok, outcome
    if scenario is not es_faults.node_stopped_during_bulk:  # a replica takes over silently
        assert outcome.error, f"{outcome.fault}: expected an error"
    words = {
        "cluster_unreachable_mid_query": "cannot reach the cluster",
        "index_deleted_underneath": "does not exist",
        "mapping_conflict": "not created by gear-agent",
        "rejected_429": "429",
    }
    if scenario.__name__ in words:
        assert words[scenario.__name__] in outcome.error


def test_gear_check_reports_an_elasticsearch_index(cluster: es_cluster.EsCluster, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from elasticsearch import Elasticsearch
    from typer.testing import CliRunner

    from gear_agent.cli import app
    from gear_agent.expansion.ppr import PPRRetriever
    from gear_agent.retrieval.search import QueryEncoder

    prefix = "fault-check"
    passages, triples = es_faults.corpus(40)
    with es_faults._open(cluster.url, prefix, tmp_path) as store:
        store.passages.add(passages)
        store.triples.add(triples)
        PPRRetriever(store, QueryEncoder(store.embedder)).retrieve("Person 3", 3)  # the graph cache
    for key, value in {"GEAR_BACKEND": "elasticsearch", "GEAR_ES_URL": cluster.url,
                       "GEAR_ES_INDEX_PREFIX": prefix, "GEAR_ES_CACHE_DIR": str(tmp_path)}.items():
        monkeypatch.setenv(key, value)
    from gear_agent.config import GearSettings
    from gear_agent.store.elasticsearch.check import check_elasticsearch

    def report() -> dict[str, tuple[bool, str]]:
        checked = check_elasticsearch(GearSettings())
        return {item.name: (item.ok, item.detail) for item in checked.items}

    runner = CliRunner()
    healthy = runner.invoke(app, ["check"])
    assert healthy.exit_code == 0, healthy.output
    items = report()
    assert [name for name, (ok, _) in items.items() if ok] == [
        "cluster", "passage index", "triple index", "triples point at stored passages", "PPR graph cache",
        "expansion cache"]  # ppr keeps the expansion's triples on an index this small
    assert "40 documents" in items["passage index"][1] and "every one with its vector" in items["triple index"][1]
    client = Elasticsearch(cluster.url)
    client.delete(index=f"{prefix}-passages", id=passages[0].id, refresh=True)  # behind gear's back
    damaged = runner.invoke(app, ["check"])
    assert damaged.exit_code == 1 and "damaged:" in damaged.output
    assert report()["triples point at stored passages"] == (
        False, f"1 passage id(s) named by triples are not stored, e.g. {passages[0].id}; delete those "
        "passages again to drop their triples")
    client.indices.delete(index=f"{prefix}-passages,{prefix}-triples")
    client.close()
    gone = runner.invoke(app, ["check"])
    assert gone.exit_code == 1
    assert report()["passage index"] == (False, f"{prefix}-passages is missing: rebuild it with `gear index`")
