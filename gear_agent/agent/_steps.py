"""GEAR's operations over an index, shared by the agent's nodes and the SyncGE retriever.

Each is a plain function of the index parts it uses (the store, or
:class:`~gear_agent.parts.IndexParts`: store, query encoder, the parts built once),
the settings section it reads, passed explicitly, and its inputs: building the reader
prompt and reading its reply, tripleLink, expansion (beam search, PPR, or both), passageLink and the final fusion (Shen et al.,
sections 3.2-3.4).
"""

from __future__ import annotations

from collections.abc import Sequence

from gear_agent.config import (
    EXPANSIONS,
    AgentSettings,
    BeamSettings,
    Expansion,
    PromptSettings,
    RetrievalSettings,
)
from gear_agent.expansion.beam import TripleBeamSearch, beams_to_passages
from gear_agent.filters import Where
from gear_agent.parsing import parse_triples
from gear_agent.parts import IndexParts
from gear_agent.prompts import load_prompt, render_passages, render_triples
from gear_agent.questions import check_question
from gear_agent.retrieval.base import RankedPassage, fuse_passages
from gear_agent.retrieval.filtering import keep_passing
from gear_agent.retrieval.search import search
from gear_agent.store import Store
from gear_agent.text.grounding import Grounding


def reader_ids(settings: PromptSettings, passage_ids: Sequence[str]) -> list[str]:
    """The base passages the reader reads: the first ``reader_passages`` (all when None).

    Example:
        >>> reader_ids(PromptSettings(reader_passages=2), ["p1", "p2", "p3"])
        ['p1', 'p2']
    """
    return list(passage_ids[: settings.reader_passages])


def render_read_passages(store: Store, settings: PromptSettings, passage_ids: Sequence[str]) -> str:
    """The reader's passages as its prompt shows them: the first ``reader_full_passages``
    numbered with title and text (within ``prompt_passage_tokens``), the rest by title only."""
    passages = store.passages.get(reader_ids(settings, passage_ids))
    full = settings.reader_full_passages
    budget = settings.prompt_passage_tokens
    if full is None or full >= len(passages):
        return render_passages(passages, budget)
    titles = [f"[{number}] {p.title}".rstrip()
              for number, p in enumerate(passages[full:], start=full + 1)]
    return "\n\n".join([render_passages(passages[:full], budget), *titles])


def reader_prompt(
    store: Store, settings: PromptSettings, question: str, passage_ids: Sequence[str],
    memory: Sequence[Sequence[str]],
) -> str:
    """The reader prompt over the passages it reads (:func:`reader_ids`; past
    ``reader_full_passages``, their titles only); with the gist memory once there is one."""
    passages = render_read_passages(store, settings, passage_ids)
    folder = settings.prompts_dir
    if memory:
        return load_prompt("reader_with_memory", folder).format(
            question=question, passages=passages, memory=render_triples([tuple(t) for t in memory])
        )
    return load_prompt("reader", folder).format(question=question, passages=passages)


def read_reply(text: str) -> tuple[list[list[str]], list[str]]:
    """Proximal triples in a reader reply, and the items the parser dropped."""
    parsed = parse_triples(text)
    return [list(t) for t in parsed.triples], list(parsed.dropped)


def ground_triples(
    store: Store,
    passage_ids: Sequence[str],
    memory: Sequence[Sequence[str]],
    triples: Sequence[Sequence[str]],
    full_texts: int | None = None,
) -> tuple[list[list[str]], list[list[str]]]:
    """Reader triples split into those grounded in what the reader was shown (the
    passages' titles and texts, and the gist memory) and those that are not; past the
    first ``full_texts`` passages (all when None) the reader saw titles only.

    Returns:
        (grounded, ungrounded), each in the reply's order.
    """
    passages = store.passages.get(list(passage_ids))
    shown = [f"{p.title}\n{p.text}" for p in passages[:full_texts]]
    shown += [p.title for p in passages[len(shown):]]
    source = Grounding.of(*shown,
                          *(" ".join(t) for t in memory))
    kept: list[list[str]] = []
    left: list[list[str]] = []
    for triple in triples:
        (kept if source.grounds(triple[0], triple[2]) else left).append(list(triple))
    return kept, left


def link_triples(
    parts: IndexParts, settings: RetrievalSettings, triples: Sequence[Sequence[str]],
    where: Where | None = None,
) -> list[str]:
    """tripleLink: each triple's nearest indexed triple (``link_search_mode`` search, top 1;
    a triple of a passage that passes ``where``), unique, in order."""
    mode, rrf_k = settings.link_search_mode, settings.rrf_k
    linked: list[str] = []
    for triple in triples:
        text = " ".join(triple)
        hits = search(parts.store, parts.encode, "triple", text, 1, mode, rrf_k, where)
        if hits and hits[0].id not in linked:
            linked.append(hits[0].id)
    return linked


def beam_expand(
    parts: IndexParts, settings: BeamSettings, query: str, start: Sequence[str]
) -> list[RankedPassage]:
    """Diverse triple beam search from ``start`` triples (an LLM in the loop: ``auto`` is
    the ``shortlist`` scorer); their passages with chains."""
    if not start:
        return []
    beam = TripleBeamSearch(
        parts.store, parts.sequence_encoder(), settings, llm_in_loop=True
    )
    return beams_to_passages(parts.store, beam.run(parts.encode(query), list(start)))


def ppr_expand(parts: IndexParts, query: str, start: Sequence[str], k: int) -> list[RankedPassage]:
    """Personalized PageRank from the ``start`` triples (HippoRAG 2 seeding); passages with chains."""
    if not start:
        return []
    return parts.ppr().expand(query, list(start), k)


def expand(
    parts: IndexParts,
    settings: AgentSettings,
    query: str,
    start: Sequence[str],
    expansion: Expansion,
    where: Where | None = None,
) -> list[RankedPassage]:
    """The expansion list: ``beam`` (Algorithm 1), ``ppr``, or ``both`` (RRF of the two);
    only passages that pass ``where``."""
    s = settings
    if expansion == "beam":
        return keep_passing(parts.store, beam_expand(parts, s, query, start), where)
    if expansion == "ppr":
        return keep_passing(parts.store, ppr_expand(parts, query, start, s.base_k), where)
    if expansion != "both":
        raise ValueError(f"unknown expansion {expansion!r}; choose one of {', '.join(EXPANSIONS)}")
    lists = [beam_expand(parts, s, query, start), ppr_expand(parts, query, start, s.base_k)]
    fused = fuse_passages(lists, k=max(len(lists[0]) + len(lists[1]), 1), rrf_k=s.rrf_k)
    return keep_passing(parts.store, fused, where)


def passage_link(
    parts: IndexParts, settings: AgentSettings, triple: Sequence[str], where: Where | None = None
) -> list[RankedPassage]:
    """passageLink of one memory triple: RRF of its top passages and its top triples' passages.

    Both searches use ``link_search_mode`` and take ``passage_link_k`` hits (among passages
    that pass ``where``); a passage reached through a triple carries that triple as its chain.
    """
    s = settings
    text = " ".join(triple)
    k = s.passage_link_k
    mode = s.link_search_mode
    direct = search(parts.store, parts.encode, "passage", text, k, mode, s.rrf_k, where)
    hits = search(parts.store, parts.encode, "triple", text, k, mode, s.rrf_k, where)
    via: list[RankedPassage] = []
    seen: set[str] = set()
    for t in parts.store.triples.get([h.id for h in hits]):
        if t.passage_id not in seen:
            seen.add(t.passage_id)
            via.append(RankedPassage(t.passage_id, 1.0 / (len(via) + 1), (t.id,)))
    direct_list = [RankedPassage(h.id, h.score) for h in direct]
    return fuse_passages([direct_list, via], k=2 * k, rrf_k=s.rrf_k)


def final_ranking(
    parts: IndexParts,
    settings: AgentSettings,
    memory: Sequence[Sequence[str]],
    retrieved: Sequence[Sequence[RankedPassage]],
    k: int,
    where: Where | None = None,
) -> list[RankedPassage]:
    """One list: RRF of every memory triple's passageLink list and every iteration's list."""
    lists = [passage_link(parts, settings, t, where) for t in memory]
    lists += [list(r) for r in retrieved]
    return fuse_passages(lists, k=k, rrf_k=settings.rrf_k)


def named_for(family: str, expansion: Expansion) -> str:
    """The retriever table's name of ``family`` (``syncge``, ``gear``) with ``expansion``.

    Example:
        >>> named_for("syncge", "beam"), named_for("gear", "ppr"), named_for("gear", "both")
        ('syncge', 'gear-ppr', 'gear-fused')
    """
    return family + {"beam": "", "ppr": "-ppr", "both": "-fused"}.get(expansion, f"-{expansion}")


__all__ = [
    "EXPANSIONS",
    "Expansion",
    "beam_expand",
    "check_question",
    "expand",
    "final_ranking",
    "ground_triples",
    "link_triples",
    "named_for",
    "passage_link",
    "ppr_expand",
    "read_reply",
    "reader_ids",
    "reader_prompt",
    "render_read_passages",
]
