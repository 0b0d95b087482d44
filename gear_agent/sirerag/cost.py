"""How many tokens a full SiReRAG build would send, before any call (``--dry-run``).

Proposition extraction is counted exactly per passage (the prompt is known); its replies
are guessed at 1.5 times the passage. Summaries depend on clusters not yet computed, so
they are modelled: each level is summarised in clusters of about :data:`CLUSTER_SIZE` items
(soft membership puts each item in :data:`SOFT_OVERLAP` clusters on average), each member
cut to the prompt's limit, each summary about ``summary_max_words`` words; levels stop as
the build does. Both constants come from the clustering of MuSiQue's 1,890 passages
(``benchmarks/sirerag_structure.py``, docs/sirerag.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gear_agent.config import SiReRAGSettings
from gear_agent.llm.pricing import cost_usd
from gear_agent.llm.tokens import MESSAGE_OVERHEAD_TOKENS, count_tokens
from gear_agent.prompts import load_prompt
from gear_agent.sirerag.build import PROPOSITIONS_KEY
from gear_agent.sirerag.summaries import CHILD_MAX_CHARS
from gear_agent.store.backends import node_store_of
from gear_agent.store.base import Store

if TYPE_CHECKING:
    from gear_agent.config import GearSettings

OUTPUT_PER_PASSAGE_TOKEN = 1.5
"""Propositions restate a passage with entity lists: about 1.5 times its tokens."""
TOKENS_PER_WORD = 1.35
AGGREGATES_PER_PASSAGE = 2.8
"""Aggregates per passage, to model the relatedness tree before any proposition exists:
MuSiQue's ablation gives 5,243 aggregates over 1,890 passages (docs/sirerag.md)."""
SOFT_OVERLAP = 1.5
"""Clusters an item joins on average (MuSiQue level 1: 2,814 memberships of 1,890 passages)."""
CLUSTER_SIZE = 8.0
"""Items per new cluster (MuSiQue: 1,890 passages → 253 clusters, 2,223 aggregates → 373;
the levels above ~11)."""


@dataclass(frozen=True)
class BuildEstimate:
    """Expected calls and tokens of a full build.

    Attributes:
        extraction_calls: Passages still without propositions.
        extraction_input: Their prompt tokens (exact where tiktoken's encoding is cached).
        extraction_output: Guessed reply tokens.
        summary_calls: Modelled summary calls, both trees.
        summary_input: Their modelled prompt tokens.
        summary_output: Their modelled reply tokens.
        usd: Price at the model's published rates, or None for a model not in the table.
        model: The model priced.
    """

    extraction_calls: int
    extraction_input: int
    extraction_output: int
    summary_calls: int
    summary_input: int
    summary_output: int
    usd: float | None
    model: str

    @property
    def input_tokens(self) -> int:
        return self.extraction_input + self.summary_input

    @property
    def output_tokens(self) -> int:
        return self.extraction_output + self.summary_output

    def describe(self) -> str:
        """Lines for the CLI."""
        price = "unknown price" if self.usd is None else f"about ${self.usd:,.2f}"
        return (
            f"propositions: {self.extraction_calls:,} calls, {self.extraction_input:,} tokens in, "
            f"~{self.extraction_output:,} out\n"
            f"summaries (modelled): ~{self.summary_calls:,} calls, ~{self.summary_input:,} tokens in, "
            f"~{self.summary_output:,} out\n"
            f"total: ~{self.input_tokens:,} in, ~{self.output_tokens:,} out on {self.model}: {price}"
        )


def _tree_tokens(count: int, member_tokens: float, fixed: int, settings: SiReRAGSettings) -> tuple[int, int, int]:
    """Modelled (calls, input, output) of one tree's summary levels above ``count`` leaves."""
    calls = input_tokens = output_tokens = 0
    per_cluster = min(CLUSTER_SIZE, float(settings.sirerag_max_cluster_size))
    summary_tokens = settings.sirerag_summary_max_words * TOKENS_PER_WORD
    for _ in range(settings.sirerag_max_levels):
        if count < settings.sirerag_stop_below:
            break
        clusters = max(1, round(count / per_cluster))
        calls += clusters
        input_tokens += int(count * SOFT_OVERLAP * member_tokens + clusters * fixed)
        output_tokens += int(clusters * summary_tokens)
        if clusters == 1:
            break
        count, member_tokens = clusters, summary_tokens
    return calls, input_tokens, output_tokens


def estimate_build_cost(store: Store, gear: GearSettings, settings: SiReRAGSettings | None = None) -> BuildEstimate:
    """Estimate a full build over the store's passages; calls no model, embeds nothing.

    Example:
        >>> estimate_build_cost(store, GearSettings()).describe()  # doctest: +SKIP
    """
    settings = settings or gear
    model = gear.llm_model
    nodes = node_store_of(store)
    done = {k[len(PROPOSITIONS_KEY):] for k in nodes.meta_items(PROPOSITIONS_KEY)}
    propositions = load_prompt("sirerag_propositions", gear.prompts_dir)
    summary = load_prompt("sirerag_summary", gear.prompts_dir)
    fixed_extract = count_tokens(propositions.format(title="", passage=""), model) + MESSAGE_OVERHEAD_TOKENS
    fixed_summary = count_tokens(summary.format(texts="", max_words=settings.sirerag_summary_max_words), model) + MESSAGE_OVERHEAD_TOKENS
    calls = ext_in = ext_out = 0
    passages = 0
    passage_tokens = 0
    for passage in store.passages.iterate():
        tokens = count_tokens(passage.title, model) + count_tokens(passage.text, model)
        passages += 1
        passage_tokens += tokens
        if passage.id in done:
            continue
        calls += 1
        ext_in += fixed_extract + tokens
        ext_out += min(gear.llm_max_tokens, int(tokens * OUTPUT_PER_PASSAGE_TOKEN) + 12)
    cap = CHILD_MAX_CHARS / 4
    mean = min(passage_tokens / max(passages, 1), cap)
    sim = _tree_tokens(passages, mean, fixed_summary, settings)
    stored = (sum(n for (_, kind, _), n in nodes.levels().items() if kind == "aggregate")
              if nodes.get_meta("mode") == "full" else 0)
    aggregates = stored or int(passages * AGGREGATES_PER_PASSAGE)  # a full pool's own count when built
    rel = _tree_tokens(aggregates, min(mean, cap), fixed_summary, settings)
    s_calls, s_in, s_out = sim[0] + rel[0], sim[1] + rel[1], sim[2] + rel[2]
    return BuildEstimate(calls, ext_in, ext_out, s_calls, s_in, s_out,
                         cost_usd(model, ext_in + s_in, ext_out + s_out), model)
