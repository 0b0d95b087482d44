"""``gear check`` of an Elasticsearch index: what the cluster holds under one prefix.

Reads, changes nothing, loads no model (the model is the one the index records):

* the cluster: reachable, a supported version, the health of the prefix's indices (red
  is damage: a primary shard is missing; yellow is a note: a replica is);
* the passage and triple indices: present, made by gear-agent, their mapping compatible
  (:func:`~gear_agent.store.elasticsearch.mappings.check_mapping`) and built with one model;
* documents: counts, every document has its vector, every triple names a stored passage
  (a ``composite`` aggregation over ``passage_id``, each page looked up with ``_mget``);
* SiReRAG nodes when the prefix has them, and indices under the prefix that gear-agent
  did not make (a note: e.g. one auto-created by a write to a deleted index);
* the PPR graph cache, which lives outside the cluster (``GEAR_ES_CACHE_DIR``);
* the identity of what is derived from the index and records the stamp it reflects: the
  expansion cache saved beside the PPR graph (:mod:`.graph_cache`: its vectors' checksum too)
  and the SiReRAG pool (node meta ``stamp``). Each must name a commit of these indices that
  the change feed reaches (:meth:`ElasticsearchStore.knows`); a stale or foreign one is named,
  and ``--repair`` rebuilds it (:func:`repair_elasticsearch` the expansion cache, the CLI the
  pool and the PPR graph).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gear_agent.store.base import StoreError
from gear_agent.store.changes import Stamp
from gear_agent.store.check_report import CheckReport, check_graph_cache, check_stamp, stamp_problem
from gear_agent.store.derived_files import verify
from gear_agent.store.elasticsearch.client import (
    ElasticsearchSettings,
    check_server,
    make_client,
    translate_errors,
)
from gear_agent.store.elasticsearch.graph_cache import CACHE_FILE
from gear_agent.store.elasticsearch.mappings import (
    VECTOR_FIELD,
    check_mapping,
    index_names,
    stored_tokenizer,
)

_PAGE = 1_000


def _body(response: Any) -> dict[str, Any]:
    return getattr(response, "body", response)


def check_elasticsearch(settings: ElasticsearchSettings) -> CheckReport:
    """Check the indices of ``settings.es_index_prefix`` at ``settings.es_url``.

    Example:
        >>> report = check_elasticsearch(GearSettings(backend="elasticsearch", es_url=url))  # doctest: +SKIP
        >>> report.ok
    """
    prefix = settings.es_index_prefix
    report = CheckReport(f"{settings.es_url} (indices {prefix}-*)")  # type: ignore[arg-type]
    client = make_client(settings)
    try:
        try:
            version, uuid = check_server(client, settings.es_url or "?")
        except StoreError as err:
            report.add("cluster", False, str(err))
            return report
        names = index_names(prefix)
        with translate_errors(f"listing indices {prefix}-*"):
            present = sorted(_body(client.indices.get(index=f"{prefix}-*", allow_no_indices=True,
                                                      expand_wildcards="open,closed")))
        with translate_errors("reading the cluster health"):
            health = _body(client.cluster.health(index=",".join(present)) if present else client.cluster.health())
        status = health.get("status", "?")
        report.add("cluster", status != "red",
                   f"Elasticsearch {version}, {health.get('number_of_nodes', '?')} node(s), "
                   f"health of {prefix}-* {status}"
                   + (f", {health.get('unassigned_shards')} shard(s) unassigned" if status != "green" else ""))
        model = None
        for collection, name in (("passage", names.passages), ("triple", names.triples)):
            if name not in present:
                report.add(f"{collection} index", False, f"{name} is missing: rebuild it with `gear index`")
                continue
            with translate_errors(f"reading the mapping of {name!r}"):
                response = _body(client.indices.get_mapping(index=name))
            mapping = next(iter(response.values()), {}).get("mappings", {})
            meta = (mapping.get("_meta") or {}).get("gear_agent") or {}
            try:
                check_mapping(name, mapping, collection, str(meta.get("embedding_model")),
                              int(meta.get("dimension") or 0), stored_tokenizer(mapping))
            except StoreError as err:
                report.add(f"{collection} index", False, str(err))
                continue
            if model is not None and model != meta.get("embedding_model"):
                report.add(f"{collection} index", False, f"{name} was built with "
                           f"{meta.get('embedding_model')!r}, the other index with {model!r}")
                continue
            model = meta.get("embedding_model")
            count = _count(client, name)
            unvectored = _count(client, name, {"bool": {"must_not": [{"exists": {"field": VECTOR_FIELD}}]}})
            report.add(f"{collection} index", unvectored == 0,
                       f"{name}: {count:,} documents, model {model}"
                       + (f"; {unvectored:,} without a vector" if unvectored else ", every one with its vector"))
        if names.passages in present and names.triples in present:
            orphans = _orphan_passage_ids(client, names.triples, names.passages)
            report.add("triples point at stored passages", not orphans,
                       f"{len(orphans)} passage id(s) named by triples are not stored, e.g. "
                       f"{', '.join(orphans[:3])}; delete those passages again to drop their triples"
                       if orphans else "yes")
        if f"{prefix}-nodes" in present:
            report.add("SiReRAG nodes", True, f"{_count(client, f'{prefix}-nodes'):,} nodes")
        known = {names.passages, names.triples, f"{prefix}-nodes", f"{prefix}-nodes-meta",
                 f"{prefix}-changes"}
        strangers = [n for n in present if n not in known]
        if strangers:
            report.add("other indices", True, f"{', '.join(strangers)} under the prefix were not made "
                       "by gear-agent (an index auto-created by a write to a deleted one?)")
        folder = Path(settings.es_cache_dir) / f"{uuid}-{prefix}"
        check_graph_cache(folder, report)
        if names.passages in present and names.triples in present:
            _check_derived_stamps(client, prefix, present, folder, report)
    finally:
        client.close()
    return report


def _check_derived_stamps(client: Any, prefix: str, present: list[str], folder: Path, report: CheckReport) -> None:
    """The stamps of the expansion cache (a file beside the PPR graph) and of the SiReRAG pool
    (node meta) against these indices: their uuids and the generations the feed reaches."""
    names = index_names(prefix)
    with translate_errors("reading the indices' uuids"):
        found = _body(client.indices.get_settings(index=",".join(names), name="index.uuid"))
    index_id = ".".join(str(found[name]["settings"]["index"]["uuid"]) for name in names)
    start, now = 0, -1  # no feed: no stamp is reached
    if f"{prefix}-changes" in present:
        try:
            with translate_errors(f"reading the generation from {prefix}-changes"):
                feed = _body(client.get(index=f"{prefix}-changes", id="generation"))["_source"]
            start, now = int(feed["start"]), int(feed["generation"])
        except StoreError:  # a feed not yet begun (no write since it was made): no stamp is reached
            pass

    def problem(what: str, held: Stamp | None) -> str | None:
        return stamp_problem(what, held, index_id, max(now, 0), lambda s: start <= s.generation <= now)

    manifest = folder / CACHE_FILE
    if manifest.exists():
        try:
            body = json.loads(manifest.read_text(encoding="utf-8"))
            whole = verify(manifest.with_suffix(".npy"), body["vectors"])
            held = Stamp.from_dict(body.get("stamp"))
        except (OSError, ValueError, KeyError, TypeError) as err:
            report.add("expansion cache", False, f"{CACHE_FILE} cannot be read ({err}); --repair rebuilds it",
                       derived=True)
        else:
            if not whole:
                report.add("expansion cache", False, f"{manifest.with_suffix('.npy').name} is missing or fails "
                           "its checksum; --repair rebuilds it", derived=True)
            else:
                check_stamp(report, "expansion cache", held, problem(CACHE_FILE, held), now)
    meta = f"{prefix}-nodes-meta"
    if meta in present:
        with translate_errors(f"reading the SiReRAG pool's stamp from {meta!r}"):
            docs = _body(client.mget(index=meta, ids=["mode", "stamp"]))["docs"]
        values = {d["_id"]: d["_source"].get("value") for d in docs if d.get("found")}
        if values.get("mode") is not None:
            try:
                held = Stamp.from_dict(json.loads(values.get("stamp") or "null"))
            except ValueError:
                held = None
            check_stamp(report, "SiReRAG pool", held, problem("the SiReRAG pool", held), now)


def repair_elasticsearch(settings: ElasticsearchSettings, report: CheckReport, embedder: Any,
                         progress: Any = None) -> list[str]:
    """``gear check --repair`` of what an Elasticsearch index derives outside the cluster and
    this module finds stale: the expansion cache, rebuilt by one walk and saved (the cluster
    owns its indices; the PPR graph and the SiReRAG pool are the CLI's, above the store)."""
    if not report.failing("expansion cache"):
        return []
    from gear_agent.store.elasticsearch.store import ElasticsearchStore

    store = ElasticsearchStore(settings, embedder, create=False)
    try:
        store.triples.of_passages([""])  # the first expansion brings the cache up to date, and saves it
    finally:
        store.close()
    return ["rebuilt the expansion cache from the triple index"]


def _count(client: Any, index: str, query: dict[str, Any] | None = None) -> int:
    with translate_errors(f"counting {index!r}"):
        body = {} if query is None else {"query": query}
        return int(_body(client.count(index=index, **body))["count"])


def _orphan_passage_ids(client: Any, triples: str, passages: str) -> list[str]:
    """Passage ids that triples name and the passage index does not hold."""
    orphans: list[str] = []
    after: dict[str, Any] | None = None
    while True:
        composite: dict[str, Any] = {"size": _PAGE, "sources": [{"pid": {"terms": {"field": "passage_id"}}}]}
        if after is not None:
            composite["after"] = after
        with translate_errors(f"reading the passage ids of {triples!r}"):
            response = _body(client.search(index=triples, size=0, track_total_hits=False,
                                           aggs={"pids": {"composite": composite}}))
        agg = response["aggregations"]["pids"]
        ids = [bucket["key"]["pid"] for bucket in agg["buckets"]]
        if ids:
            with translate_errors(f"looking up {len(ids)} passage(s) in {passages!r}"):
                docs = _body(client.mget(index=passages, ids=ids, source=False))["docs"]
            orphans.extend(d["_id"] for d in docs if not d.get("found"))
        after = agg.get("after_key")
        if len(ids) < _PAGE or after is None:
            return orphans
