"""HippoRAG 1's query NER (Gutiérrez et al., NeurIPS 2024, section 2.2): ``hipporag+ner``.

An LLM lists the query's named entities (the ``hipporag_ner`` prompt, a JSON list); each
entity, normalised as phrase nodes are (:func:`~gear_agent.text.tokenizer.normalise_entity`)
and encoded by the graph's embedder, is linked to its single nearest phrase node by cosine
(the paper's retrieval encoder ``M``). The linked nodes are the query nodes, each with
restart mass ``s_i = 1 / |P_i|`` (node specificity,
:func:`~gear_agent.expansion.hipporag.entity_node_mass`); the walk over the phrase graph
and the passage scores ``P^T p`` are ``hipporag``'s
(:class:`~gear_agent.expansion.hipporag.HippoRAGRetriever`).

When the reply names no entity (an empty list), or is not a readable list of names, the
query nodes are ``hipporag``'s LLM-free ones (the phrases nearest the query), so the
ranking is ``hipporag``'s; a reply that cannot be read is logged as one warning line with
its start. The paper's code gives every passage the same score in both cases; falling
back keeps a ranking. A failed LLM call (after the client's retries, or past
``deadline_s``) raises :class:`~gear_agent.llm.errors.LLMCallError`: the question fails
rather than being answered by another method.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from gear_agent.expansion.hipporag import HippoRAGRetriever, entity_node_mass
from gear_agent.expansion.ppr_graph import PPRGraph
from gear_agent.llm.response_format import ENTITIES_REPLY
from gear_agent.parsing import ParseError, parse_entities_reply
from gear_agent.prompts import Prompt, load_prompt
from gear_agent.text.tokenizer import normalise_entity

if TYPE_CHECKING:
    from gear_agent.config import PPRSettings
    from gear_agent.expansion.ppr import PPRRetriever
    from gear_agent.llm.client import LLMClient

__all__ = ["HippoRAGNERRetriever", "QueryNER", "link_entities", "make_query_ner"]

logger = logging.getLogger(__name__)

QueryNER = Callable[[str], list[str]]
"""``ner(query) -> named entities``; raises :class:`~gear_agent.parsing.ParseError` on a
reply it cannot read."""


def make_query_ner(
    llm_client: LLMClient,
    prompt: Prompt | None = None,
    *,
    prompts_dir: Path | None = None,
    deadline_s: float | None = None,
) -> QueryNER:
    """A function that asks the model for a query's named entities.

    Args:
        llm_client: The client to call (node name ``hipporag_ner`` in usage and errors);
            its retry policy and cache apply.
        prompt: The template, filled with ``query``; ``load_prompt("hipporag_ner",
            prompts_dir)`` when None.
        prompts_dir: Your prompt folder (``GEAR_PROMPTS_DIR``), searched first.
        deadline_s: Seconds the call may take in all, retries included; None: no bound.

    Returns:
        ``ner(query) -> names``, distinct, in reply order. Raises
        :class:`~gear_agent.parsing.ParseError` when the reply is not a readable list and
        :class:`~gear_agent.llm.errors.LLMCallError` when the call fails.

    Example:
        >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
        >>> from gear_agent.llm import LLMClient
        >>> ner = make_query_ner(LLMClient(FakeListChatModel(
        ...     responses=['{"named_entities": ["Lake Bled"]}'])))
        >>> ner("Which country is Lake Bled in?")
        ['Lake Bled']
    """
    template = prompt if prompt is not None else load_prompt("hipporag_ner", prompts_dir)

    def named_entities(query: str) -> list[str]:
        reply = llm_client.invoke(
            template.format(query=query), node="hipporag_ner", schema=ENTITIES_REPLY,
            deadline_s=deadline_s,
        )
        return parse_entities_reply(reply.text)

    return named_entities


def link_entities(graph: PPRGraph, vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each entity vector's nearest phrase vertex, distinct, in entity order, with the best
    cosine that reached it (two entities may link to one node; it is one query node).

    Example:
        >>> link_entities(graph, embedder.embed(["lake bled"]))  # doctest: +SKIP
        (array([12]), array([1.], dtype=float32))
    """
    vertices: list[int] = []
    best: dict[int, float] = {}
    for vector in np.asarray(vectors, dtype=np.float32):
        nearest, cosine = graph.nearest_phrases(vector, 1)
        if not len(nearest):
            continue
        vertex, score = int(nearest[0]), float(cosine[0])
        if vertex not in best:
            vertices.append(vertex)
        best[vertex] = max(score, best.get(vertex, score))
    return np.array(vertices, dtype=np.int64), np.array([best[v] for v in vertices], np.float32)


class HippoRAGNERRetriever(HippoRAGRetriever):
    """``hipporag+ner``: HippoRAG 1's PPR from the query's named entities (an LLM prompt).

    Args:
        ppr: The ``ppr`` retriever whose store, encoder and graph it uses.
        ner: The query's named entities (:func:`make_query_ner`).
        settings: As :class:`~gear_agent.expansion.hipporag.HippoRAGRetriever`'s; the
            fallback uses ``hipporag_seed_phrases``.

    Example:
        >>> HippoRAGNERRetriever(index_parts(index).ppr(), make_query_ner(llm)).retrieve(
        ...     "Who ...?", 5)  # doctest: +SKIP
    """

    name = "hipporag+ner"

    def __init__(
        self,
        ppr: PPRRetriever,
        ner: QueryNER,
        settings: PPRSettings | None = None,
    ) -> None:
        super().__init__(ppr, settings)
        self.ner = ner

    def query_nodes(self, query: str, vector: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The phrase nodes linked to the query's named entities, weighted ``1 / |P_i|``;
        ``hipporag``'s query nodes when the reply names none or cannot be read."""
        try:
            entities = self.ner(query)
        except ParseError as exc:
            logger.warning("hipporag+ner: unreadable NER reply, linking the query's nearest "
                           "phrases instead: %s", exc)
            return super().query_nodes(query, vector)
        names = list(dict.fromkeys(n for n in map(normalise_entity, entities) if n))
        if not names:
            return super().query_nodes(query, vector)
        graph = self.ppr.graph
        seeds, _ = link_entities(graph, self.ppr.encode.embedder.embed(names))
        if not len(seeds):  # a graph without phrases: dense search ranks
            return seeds, np.empty(0)
        return seeds, entity_node_mass(graph, seeds)

