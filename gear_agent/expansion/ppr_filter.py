"""Recognition memory for PPR seeds: an LLM keeps the candidate triples relevant to the query.

HippoRAG 2 (Gutiérrez et al., 2025, section 3.2, "recognition memory") shows the
query-to-triple matches to an LLM and seeds the graph only with the ones it keeps.
:func:`make_llm_filter` builds that step as the ``filter_fn`` that
:class:`~gear_agent.expansion.ppr.PPRRetriever` and
:func:`~gear_agent.expansion.ppr.ppr_expand` take, with the ``ppr_filter`` prompt.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gear_agent.llm.response_format import TRIPLES_REPLY
from gear_agent.parsing import ParseError, extract_json, parse_triples
from gear_agent.prompts import Prompt, load_prompt, render_triples
from gear_agent.text.tokenizer import normalise_entity
from gear_agent.types import Triple

if TYPE_CHECKING:
    from gear_agent.expansion.ppr import FilterFn
    from gear_agent.llm.client import LLMClient

logger = logging.getLogger(__name__)

CLOSE_MATCH = 0.9
"""Similarity (difflib ratio) at which a slightly mis-copied triple still counts as its candidate."""


def _key(parts: Sequence[str]) -> tuple[str, ...]:
    return tuple(normalise_entity(p) for p in parts)


def match_candidates(
    returned: Sequence[tuple[str, str, str]], candidates: Sequence[Triple]
) -> list[Triple]:
    """The candidates the model gave back, in candidate order.

    A returned triple matches a candidate with the same parts after case and whitespace
    normalisation, else the most similar remaining candidate text when their difflib
    ratio is at least :data:`CLOSE_MATCH`; returned triples matching none are ignored
    (the model may not add facts).

    Example:
        >>> t = Triple("t-1", "Bled", "located in", "Slovenia", "p-1")
        >>> [c.id for c in match_candidates([("bled", "Located in", "Slovenia ")], [t])]
        ['t-1']
    """
    by_key = {_key(c.as_tuple()): c for c in candidates}
    kept: set[str] = set()
    for parts in returned:
        match = by_key.get(_key(parts))
        if match is None:
            remaining = {" ".join(k): c for k, c in by_key.items() if c.id not in kept}
            close = difflib.get_close_matches(
                " ".join(_key(parts)), list(remaining), n=1, cutoff=CLOSE_MATCH
            )
            match = remaining[close[0]] if close else None
        if match is not None:
            kept.add(match.id)
    return [c for c in candidates if c.id in kept]


def _empty_answer(text: str) -> bool:
    """True when the reply is an explicit empty list (``[]`` or ``{"triples": []}``)."""
    try:
        value = extract_json(text, want=(dict, list))
    except ParseError:
        return False
    if isinstance(value, dict):
        return any(isinstance(v, list) and not v for v in value.values())
    return value == []


def make_llm_filter(
    llm_client: LLMClient, prompt: Prompt | None = None, *, prompts_dir: Path | None = None
) -> FilterFn:
    """A ``filter_fn`` that asks the model which candidate triples help answer the query.

    Args:
        llm_client: The client to call (node name ``ppr_filter`` in usage and errors).
        prompt: The template; ``load_prompt("ppr_filter", prompts_dir)`` when None. It is
            filled with ``query`` and ``triples`` (one JSON array per line).
        prompts_dir: Your prompt folder (``GEAR_PROMPTS_DIR``), searched first.

    Returns:
        ``filter_fn(query, candidates) -> kept``. An explicit empty reply (``[]``,
        ``{"triples": []}``) keeps none, so PPR falls back to dense retrieval; a reply
        with no readable triples and no empty list keeps every candidate and logs a
        warning, since the filter may only narrow the seeds. LLM call failures raise
        :class:`~gear_agent.llm.errors.LLMCallError`.

    Example:
        >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
        >>> from gear_agent.llm import LLMClient
        >>> keep = make_llm_filter(LLMClient(FakeListChatModel(
        ...     responses=['{"triples": [["Bled", "located in", "Slovenia"]]}'])))
        >>> t = Triple("t-1", "Bled", "located in", "Slovenia", "p-1")
        >>> u = Triple("t-2", "Bled", "has", "a lake", "p-1")
        >>> [c.id for c in keep("Where is Bled?", [t, u])]
        ['t-1']
    """
    template = prompt if prompt is not None else load_prompt("ppr_filter", prompts_dir)

    def keep_relevant(query: str, candidates: list[Triple]) -> list[Triple]:
        if not candidates:
            return []
        text = template.format(query=query, triples=render_triples(candidates))
        reply = llm_client.invoke(text, node="ppr_filter", schema=TRIPLES_REPLY).text
        parsed = parse_triples(reply)
        if parsed.triples:
            return match_candidates(parsed.triples, candidates)
        if _empty_answer(reply):
            return []
        logger.warning(
            "ppr_filter: no triples in the reply, keeping all %d candidates (reply starts %r; "
            "dropped %d malformed items)",
            len(candidates),
            reply[:120],
            len(parsed.dropped),
        )
        return list(candidates)

    return keep_relevant
