"""Requests a re-sync of many sources sends to Elasticsearch before it writes anything: the
stored passages of each source listed one query per source (the ``Store`` default) or by
``terms`` queries of 1,000 sources (``Passages.ids_of_sources`` on Elasticsearch).

Every source (one file of one passage) is indexed, then read again unchanged and planned
(:func:`gear_agent.sources.plan_sync`); the table gives the HTTP requests the plan sent and
its seconds. Against ``GEAR_ES_URL`` when set, else a one-node test cluster started here.

    python benchmarks/es_sync_requests.py
    python benchmarks/es_sync_requests.py --sources 200 2000 5000
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

from support.fakes import make_passage  # noqa: E402

from gear_agent.config import GearSettings  # noqa: E402
from gear_agent.embedding.hashing import HashingEmbedder  # noqa: E402
from gear_agent.sources import plan_sync  # noqa: E402
from gear_agent.store.collections import Passages  # noqa: E402
from gear_agent.store.elasticsearch.store import ElasticsearchStore  # noqa: E402


def counted(store: ElasticsearchStore) -> list[int]:
    """Count the HTTP requests the store's client sends from now on."""
    client, count = store._client, [0]  # noqa: SLF001 - a benchmark looks inside
    send: Callable[..., Any] = client.perform_request

    def perform_request(*args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        return send(*args, **kwargs)

    client.perform_request = perform_request  # type: ignore[method-assign]
    return count


def run(url: str, sources: int) -> list[tuple[str, int, float]]:
    prefix = f"gear-bench-sync-{uuid.uuid4().hex[:8]}"
    settings = GearSettings(backend="elasticsearch", es_url=url, es_index_prefix=prefix)
    store = ElasticsearchStore(settings, HashingEmbedder(64))
    try:
        passages = [make_passage(f"File {i}", f"File {i} says river {i} floods.", source=f"/docs/f{i}.txt")
                    for i in range(sources)]
        store.passages.add(passages)
        names = [p.source for p in passages]
        rows = []
        for label, listing in (("one query per source", lambda s: Passages.ids_of_sources(store.passages, s)),
                               ("terms of 1,000 sources", store.passages.ids_of_sources)):
            store.passages.ids_of_sources = listing  # type: ignore[method-assign]
            count = counted(store)
            started = time.perf_counter()
            plan = plan_sync(store, passages, names)
            seconds = time.perf_counter() - started
            assert plan.counts().unchanged == sources
            rows.append((label, count[0], seconds))
            del store._client.perform_request  # noqa: SLF001 - the class's own again
        return rows
    finally:
        names = ",".join(f"{prefix}-{n}" for n in ("passages", "triples", "nodes", "nodes-meta", "changes"))
        store._client.indices.delete(index=names, ignore_unavailable=True)  # noqa: SLF001
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=int, nargs="+", default=[100, 1000, 3000])
    args = parser.parse_args()
    url = os.environ.get("GEAR_ES_URL")
    cluster = None
    if not url:
        from support import es_cluster

        cluster = es_cluster.start(1, "512m")
        url = cluster.url
    try:
        print("| sources | listing | requests | seconds |")
        print("|---:|---|---:|---:|")
        for n in args.sources:
            for label, requests, seconds in run(url, n):
                print(f"| {n:,} | {label} | {requests:,} | {seconds:.2f} |")
    finally:
        if cluster is not None:
            cluster.close()


if __name__ == "__main__":
    main()
