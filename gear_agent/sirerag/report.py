"""What a SiReRAG build did: nodes per level, what was reused or rebuilt, tokens spent."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class BuildReport:
    """Counts of one ``gear sirerag build`` run (``levels`` is the whole pool after it).

    Attributes:
        mode: ``ablation`` or ``full``.
        propositions: Propositions the aggregates were grouped from.
        nodes_added: Nodes embedded and stored by this run.
        nodes_kept: Nodes already stored that the new trees still contain (not rebuilt).
        nodes_deleted: Stored nodes the new trees no longer contain.
        clusters_summarised: Clusters sent to the LLM for a summary.
        clusters_reused: Clusters whose members were unchanged, so their stored summary was kept.
        extracted_passages: Passages sent to the LLM for propositions.
        extraction_failures: Of those, how many failed (left for the next run).
        input_tokens: Prompt tokens billed by this run (cached replies count 0).
        output_tokens: Completion tokens billed.
        cached_replies: Replies that came from the LLM cache.
        levels: Node counts by (tree, kind, level), the whole pool after the run.
        replaced: The stored pool of the other mode was cleared first.
        notes: Honest remarks for the user (what was rebuilt and why).
    """

    mode: str
    propositions: int = 0
    nodes_added: int = 0
    nodes_kept: int = 0
    nodes_deleted: int = 0
    clusters_summarised: int = 0
    clusters_reused: int = 0
    extracted_passages: int = 0
    extraction_failures: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_replies: int = 0
    levels: dict[tuple[str, str, int], int] = field(default_factory=dict)
    replaced: bool = False
    notes: list[str] = field(default_factory=list)

    def level_rows(self) -> list[tuple[str, str, int, int]]:
        """(tree, kind, level, nodes) rows, passages excluded, in tree then level order."""
        return [(tree, kind, level, n) for (tree, kind, level), n in sorted(self.levels.items())]
