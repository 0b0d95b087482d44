"""Building SiReRAG's pool into a store: the LLM-free ablation, or the full method.

The front of the package: it only wires propositions, aggregates, clustering and
summaries together and writes the nodes. A rebuild stores only nodes that are new
(ids are content hashes) and deletes those the new trees no longer hold, so an
unchanged aggregate or summary is never embedded or summarised twice.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from gear_agent.config import SiReRAGSettings
from gear_agent.llm.client import LLMClient
from gear_agent.prompts import load_prompt
from gear_agent.sirerag.aggregates import group_by_entity
from gear_agent.sirerag.extract import extract_propositions
from gear_agent.sirerag.pool_meta import built_meta
from gear_agent.sirerag.propositions import Proposition, from_triples
from gear_agent.sirerag.report import BuildReport
from gear_agent.sirerag.tree import Leaf, build_levels
from gear_agent.store.backends import node_store_of
from gear_agent.store.base import Store
from gear_agent.store.nodes import NodeStore
from gear_agent.types import Node, TreeName

NODE_BATCH = 1024
GENERATION_KEY = "generation"
"""Meta key of the store generation the last build reflects (``gear sirerag info``); the
pool's freshness is its stamp (:mod:`gear_agent.sirerag.freshness`): passages added since
are placed in the trees, those deleted left them in their commit."""
PROPOSITIONS_KEY = "propositions:"
"""Meta key prefix under which a full build records each passage's propositions."""


def start_mode(nodes: NodeStore, mode: str, report: BuildReport) -> None:
    """Clear the pool when it was built in the other mode (the two are never mixed)."""
    previous = nodes.get_meta("mode")
    if previous is not None and previous != mode and nodes.count():
        report.nodes_deleted += nodes.clear()
        report.replaced = True
        report.notes.append(f"the stored {previous} pool was cleared: one index holds one pool")


def sync_nodes(nodes: NodeStore, wanted: Sequence[Node], stale: Sequence[str], report: BuildReport) -> None:
    """Store ``wanted`` (new ids only, in committed batches), then delete ``stale`` ids that
    ``wanted`` does not hold."""
    for start in range(0, len(wanted), NODE_BATCH):
        result = nodes.add(wanted[start : start + NODE_BATCH])
        report.nodes_added += len(result.added)
        report.nodes_kept += len(result.existing)
    keep = {n.id for n in wanted}
    doomed = [i for i in stale if i not in keep]
    if doomed:
        report.nodes_deleted += len(nodes.remove(doomed))


def build_ablation(store: Store, settings: SiReRAGSettings | None = None) -> BuildReport:
    """The LLM-free ablation: stored triples as propositions, aggregates by shared entity.

    Incremental: aggregates whose propositions did not change are kept as they are; a
    changed one (its entity gained or lost a proposition) is a new node, and the old one is
    deleted.

    Raises:
        NodesNotSupportedError: the backend keeps no nodes.

    Example:
        >>> report = build_ablation(store)  # doctest: +SKIP
        >>> report.level_rows()  # doctest: +SKIP
        [('relatedness', 'aggregate', 0, 3650)]
    """
    settings = settings or SiReRAGSettings()
    nodes = node_store_of(store)
    report = BuildReport("ablation")
    start_mode(nodes, "ablation", report)
    with store.snapshot():  # the pool reflects one commit, recorded with it
        generation, stamp = store.generation(), store.stamp()
        propositions = from_triples(store.triples.iterate())
    report.propositions = len(propositions)
    aggregates = group_by_entity(propositions, settings.sirerag_min_propositions, settings.sirerag_min_passages)
    stored = [n.id for n in nodes.iterate()]
    sync_nodes(nodes, aggregates, stored, report)
    nodes.set_meta({"mode": "ablation", GENERATION_KEY: str(generation), **built_meta(stamp)})
    report.levels = nodes.levels()
    return report


def _stored_propositions(nodes: NodeStore) -> dict[str, list[Proposition]]:
    """Propositions recorded by earlier full builds, per passage id."""
    found: dict[str, list[Proposition]] = {}
    for key, value in nodes.meta_items(PROPOSITIONS_KEY).items():
        pid = key[len(PROPOSITIONS_KEY):]
        found[pid] = [Proposition(text, tuple(entities), pid) for text, entities in json.loads(value)]
    return found


def build_full(
    store: Store, llm: LLMClient, settings: SiReRAGSettings | None = None,
    *, prompts_dir: Path | str | None = None,
) -> BuildReport:
    """The full method: LLM propositions → aggregates → relatedness summaries, and the
    similarity tree's summaries over passages; every LLM call goes through ``llm`` (cached).

    What a rerun costs: propositions are extracted only for passages that have none yet
    (they are recorded in the index); aggregates are rebuilt from all propositions without
    the LLM, and only new ones are embedded; both trees are clustered again (clustering is
    global) and only clusters whose members changed are summarised again.

    Raises:
        NodesNotSupportedError: the backend keeps no nodes.
        LLMCallError: a summary call failed for good, or an error every call would hit.
    """
    from gear_agent.indexing import run_coroutine

    return run_coroutine(_build_full(store, llm, settings or SiReRAGSettings(), prompts_dir))


async def _build_full(
    store: Store, llm: LLMClient, settings: SiReRAGSettings, prompts_dir: Path | str | None
) -> BuildReport:
    nodes = node_store_of(store)
    report = BuildReport("full")
    start_mode(nodes, "full", report)
    with store.snapshot():
        generation, stamp = store.generation(), store.stamp()
        passages = list(store.passages.iterate())
    known = _stored_propositions(nodes)
    todo = [p for p in passages if p.id not in known]
    if todo:
        outcome = await extract_propositions(todo, llm, load_prompt("sirerag_propositions", prompts_dir),
                                             settings.sirerag_concurrency)
        nodes.set_meta({
            f"{PROPOSITIONS_KEY}{pid}": json.dumps([[p.text, list(p.entities)] for p in props], ensure_ascii=False)
            for pid, props in outcome.propositions.items()
        })
        known.update(outcome.propositions)
        report.extracted_passages = len(todo)
        report.extraction_failures = len(outcome.failures)
        report.input_tokens += outcome.input_tokens
        report.output_tokens += outcome.output_tokens
        report.cached_replies += outcome.cached
        if outcome.failures:
            report.notes.append(f"{len(outcome.failures)} passages gave no propositions (left for the next "
                                f"run), e.g. {next(iter(outcome.failures.values()))}")
    propositions = [prop for p in passages for prop in known.get(p.id, [])]
    report.propositions = len(propositions)
    before = list(nodes.iterate())
    aggregates = group_by_entity(propositions, settings.sirerag_min_propositions, settings.sirerag_min_passages)
    sync_nodes(nodes, aggregates, [], report)
    summary_prompt = load_prompt("sirerag_summary", prompts_dir)
    kept: set[str] = {a.id for a in aggregates}
    trees: list[tuple[TreeName, list[Leaf], Callable[[list[str]], np.ndarray]]] = [
        ("relatedness", [Leaf(a.id, a.text, a.passage_ids) for a in aggregates], nodes.vectors),
        ("similarity", [Leaf(p.id, p.content, (p.id,)) for p in passages], nodes.passage_vectors),
    ]
    for tree, leaves, vectors in trees:
        stored = {(n.level, n.children): n for n in before if n.tree == tree and n.kind == "summary"}
        matrix = vectors([leaf.id for leaf in leaves]) if leaves else np.zeros((0, 1), dtype=np.float32)
        built = await build_levels(tree, leaves, matrix, nodes, llm, summary_prompt, settings, stored, report)
        kept.update(n.id for n in built)
    doomed = [n.id for n in before if n.id not in kept]
    if doomed:
        report.nodes_deleted += len(nodes.remove(doomed))
    report.nodes_kept = sum(1 for n in before if n.id in kept)
    report.nodes_added = len(kept) - report.nodes_kept
    nodes.set_meta({"mode": "full", GENERATION_KEY: str(generation), **built_meta(stamp)})
    report.levels = nodes.levels()
    return report
