"""One tree's summary levels: cluster the level below, summarise each cluster, repeat.

Leaves are passages (the similarity tree) or proposition aggregates (the relatedness
tree). Each level above is built from the one below by :func:`soft_clusters` and one LLM
summary per cluster, until a level is small (``sirerag_stop_below``), one cluster holds it all,
or ``sirerag_max_levels`` is reached. A summary's provenance is its children's passages in turn.

Incremental: a cluster whose members are exactly those of a stored summary of the same
tree and level keeps that summary (no LLM call, nothing embedded). Adding passages can
move a mixture's boundaries, so any cluster it touches is summarised again; the report
counts both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gear_agent.config import SiReRAGSettings
from gear_agent.ids import node_id
from gear_agent.llm.client import LLMClient
from gear_agent.prompts import Prompt
from gear_agent.sirerag.clustering import soft_clusters
from gear_agent.sirerag.report import BuildReport
from gear_agent.sirerag.summaries import SummaryCalls, summarise
from gear_agent.store.nodes import NodeStore
from gear_agent.types import Node, TreeName


@dataclass(frozen=True)
class Leaf:
    """An item of a level: its id, text, passages and vector."""

    id: str
    text: str
    passage_ids: tuple[str, ...]


def summary_node(tree: TreeName, level: int, text: str, members: Sequence[Leaf]) -> Node:
    """The summary of ``members`` at ``level``; provenance is their passages in turn."""
    passages = tuple(dict.fromkeys(p for m in members for p in m.passage_ids))
    return Node(node_id("summary", tree, level, text), "summary", tree, level, text, passages,
                tuple(m.id for m in members))


async def build_levels(
    tree: TreeName,
    leaves: Sequence[Leaf],
    vectors: np.ndarray,
    nodes: NodeStore,
    llm: LLMClient,
    prompt: Prompt,
    settings: SiReRAGSettings,
    stored: dict[tuple[int, tuple[str, ...]], Node],
    report: BuildReport,
) -> list[Node]:
    """Build and store the summary levels above ``leaves``; returns every summary node.

    Args:
        tree: Which tree.
        leaves: Level 0, in a fixed order.
        vectors: Their embeddings, one row each.
        nodes: Where summaries are stored (each level is committed before the next).
        llm: The cached client.
        prompt: The summary template.
        settings: Clustering and summary knobs.
        stored: This tree's stored summaries by (level, children), for reuse.
        report: Counts are added here.
    """
    built: list[Node] = []
    current, matrix = list(leaves), vectors
    calls = SummaryCalls()
    for level in range(1, settings.sirerag_max_levels + 1):
        if len(current) < settings.sirerag_stop_below:
            break
        clusters = soft_clusters(matrix, settings)
        members = [[current[i] for i in cluster] for cluster in clusters]
        keys = [tuple(m.id for m in group) for group in members]
        missing = [i for i, key in enumerate(keys) if (level, key) not in stored]
        texts = await summarise([[m.text for m in members[i]] for i in missing], llm, prompt,
                                settings.sirerag_summary_max_words, settings.sirerag_concurrency, calls)
        fresh = dict(zip(missing, texts))
        level_nodes = [stored[(level, key)] if i not in fresh else summary_node(tree, level, fresh[i], members[i])
                       for i, key in enumerate(keys)]
        report.clusters_summarised += len(missing)
        report.clusters_reused += len(keys) - len(missing)
        result = nodes.add(list({n.id: n for n in level_nodes}.values()))
        report.nodes_added += len(result.added)
        report.nodes_kept += len(result.existing)
        unique = list({n.id: n for n in level_nodes}.values())
        built.extend(unique)
        if len(clusters) <= 1:
            break
        current = [Leaf(n.id, n.text, n.passage_ids) for n in unique]
        matrix = nodes.vectors([n.id for n in unique])
    report.input_tokens += calls.input_tokens
    report.output_tokens += calls.output_tokens
    report.cached_replies += calls.cached
    return built
