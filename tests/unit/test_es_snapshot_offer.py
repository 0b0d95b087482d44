"""``gear check`` on Elasticsearch offers the newest good snapshot only for damage a restore
mends (the passage or triple index, a red prefix), and only when the repository holds one;
a missing repository is no snapshot, not an error. A stub cluster answers ``_snapshot``."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("elasticsearch", reason="the elasticsearch extra is not installed")

from elastic_transport import ApiResponseMeta, BaseNode, HttpHeaders  # noqa: E402
from elastic_transport._node import NodeApiResponse  # noqa: E402

from gear_agent.config import GearSettings  # noqa: E402
from gear_agent.store.check_report import CheckReport  # noqa: E402
from gear_agent.store.elasticsearch import snapshot as snapshot_mod  # noqa: E402

PREFIX = "team"
SETTINGS = GearSettings(backend="elasticsearch", es_url="http://stub-es:9200", es_index_prefix=PREFIX)


def stub_client(answer: tuple[int, Any], seen: list[str]) -> Any:
    """A client whose every request gets ``answer`` (status, body); ``seen`` gets the paths."""
    from elasticsearch import Elasticsearch

    class Node(BaseNode):
        _CLIENT_META_HTTP_CLIENT = ("stub", "1.0")

        def perform_request(self, method, target, body=None, headers=None, request_timeout=None):  # type: ignore[override]  # noqa: ANN001, ANN202, ARG002
            seen.append(target.split("?")[0])
            meta = ApiResponseMeta(status=answer[0], http_version="1.1", duration=0.0, node=self.config,
                                   headers=HttpHeaders({"content-type": "application/json",
                                                        "x-elastic-product": "Elasticsearch"}))
            return NodeApiResponse(meta, json.dumps(answer[1]).encode())

    return Elasticsearch("http://stub-es:9200", node_class=Node)


def report(*failing: tuple[str, str]) -> CheckReport:
    out = CheckReport("stub")  # type: ignore[arg-type]
    out.add("cluster", True, f"Elasticsearch 8.19.4, 1 node(s), health of {PREFIX}-* green")
    for name, detail in failing:
        out.add(name, False, detail)
    return out


GOOD = (200, {"snapshots": [
    {"snapshot": f"{PREFIX}-snapshot-old", "state": "SUCCESS", "start_time_in_millis": 1_000},
    {"snapshot": f"{PREFIX}-snapshot-new", "state": "SUCCESS", "start_time_in_millis": 2_000},
    {"snapshot": f"{PREFIX}-snapshot-broken", "state": "FAILED", "start_time_in_millis": 3_000}]})


def offered(monkeypatch: pytest.MonkeyPatch, answer: tuple[int, Any], checked: CheckReport) -> list[str]:
    seen: list[str] = []
    monkeypatch.setattr(snapshot_mod, "make_client", lambda _settings: stub_client(answer, seen))
    snapshot_mod.offer_es_snapshot(SETTINGS, checked)
    return seen


@pytest.mark.parametrize("item", [("passage index", f"{PREFIX}-passages is missing"),
                                  ("triple index", f"{PREFIX}-triples: mapping is not gear-agent's")])
def test_a_missing_or_foreign_index_is_offered_the_newest_good_snapshot(
        monkeypatch: pytest.MonkeyPatch, item: tuple[str, str]) -> None:
    checked = report(item)
    assert offered(monkeypatch, GOOD, checked) == [f"/_snapshot/{PREFIX}-snapshots/{PREFIX}-snapshot-*"]
    assert checked.restorable_from == (f"snapshot {PREFIX}-snapshot-new in repository {PREFIX}-snapshots "
                                       "(taken 1970-01-01 00:00:02 UTC)")
    assert checked.items[-1].detail.endswith(f"; --repair restores it from {checked.restorable_from}")
    assert checked.repairable


def test_a_red_prefix_is_offered_it_too(monkeypatch: pytest.MonkeyPatch) -> None:
    checked = CheckReport("stub")  # type: ignore[arg-type]
    checked.add("cluster", False, f"Elasticsearch 8.19.4, 3 node(s), health of {PREFIX}-* red, 2 shard(s) unassigned")
    offered(monkeypatch, GOOD, checked)
    assert checked.restorable_from is not None and "--repair restores it" in checked.items[0].detail


def test_damage_a_restore_does_not_mend_asks_the_cluster_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    unreachable = CheckReport("stub")  # type: ignore[arg-type]
    unreachable.add("cluster", False, "cannot reach the cluster")
    for checked in (report(("triples point at stored passages", "2 passage id(s) named by triples are not stored")),
                    report(("PPR graph cache", "stale")), unreachable):
        assert offered(monkeypatch, GOOD, checked) == [] and checked.restorable_from is None


def test_no_repository_or_no_good_snapshot_offers_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = (404, {"error": {"type": "repository_missing_exception", "reason": f"[{PREFIX}-snapshots] missing"},
                     "status": 404})
    for answer in (missing, (200, {"snapshots": [GOOD[1]["snapshots"][2]]}), (200, {"snapshots": []})):
        checked = report(("passage index", f"{PREFIX}-passages is missing"))
        offered(monkeypatch, answer, checked)
        assert checked.restorable_from is None and "--repair" not in checked.items[-1].detail
        assert not checked.repairable


def test_a_cluster_that_refuses_the_listing_is_an_error_not_silence(monkeypatch: pytest.MonkeyPatch) -> None:
    from gear_agent.store.base import StoreError

    with pytest.raises(StoreError, match="listing the snapshots of team"):
        offered(monkeypatch, (500, {"error": {"type": "exception", "reason": "boom"}, "status": 500}),
                report(("passage index", f"{PREFIX}-passages is missing")))
