"""The Explore page's reads of the entity graph: find an entity, its neighbourhood (drawn
as SVG), the passages behind each triple, and a passage's own triples.

Entities are the subjects and objects of the index's triples, matched after lower-casing
and collapsing whitespace (the store's neighbour rule). Each request reads the triples
through the :class:`~gear_agent.store.base.Store` interface (``iter_triples``), so what
the page shows is the index as committed now, on either backend. :class:`EntityGraph`
keeps what it read under the store's generation and reads again when a write has moved
it (one read at a time; the requests that arrive meanwhile wait for it and share it).
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any

from gear_agent.errors import GearError
from gear_agent.serve._graph_svg import Edge, Node, graph_svg
from gear_agent.store.base import Store
from gear_agent.types import Triple

MAX_MATCHES = 20
"""Entities listed for one search."""
MAX_TRIPLES = 60
"""Triples drawn in one neighbourhood (the closest first); the rest are counted."""


class ExploreError(GearError, ValueError):
    """A request the Explore page cannot answer (an empty search, an unknown entity)."""


def key_of(name: str) -> str:
    """An entity's identity: lower-cased, whitespace collapsed.

    Example:
        >>> key_of("  Kestrel   Observatory ")
        'kestrel observatory'
    """
    return " ".join(name.lower().split())


@dataclass
class _Entities:
    """Every entity of the index: its triples and its most frequent spelling."""

    triples: dict[str, list[Triple]]
    spelling: dict[str, Counter[str]]

    @classmethod
    def read(cls, store: Store) -> _Entities:
        triples: dict[str, list[Triple]] = {}
        spelling: dict[str, Counter[str]] = {}
        for triple in store.triples.iterate():
            for name in {triple.subject, triple.object}:
                key = key_of(name)
                triples.setdefault(key, []).append(triple)
                spelling.setdefault(key, Counter())[" ".join(name.split())] += 1
        return cls(triples, spelling)

    def name(self, key: str) -> str:
        return self.spelling[key].most_common(1)[0][0] if key in self.spelling else key


class EntityGraph:
    """The entities of one store's triples, read once per store generation.

    Args:
        store: The index the page serves.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._kept: tuple[int, _Entities] | None = None

    def entities(self) -> _Entities:
        with self._lock:
            generation = self.store.generation()
            if self._kept is None or self._kept[0] != generation:
                self._kept = (generation, _Entities.read(self.store))
            return self._kept[1]

    def find(self, query: str, offset: int = 0, limit: int = MAX_MATCHES) -> dict[str, Any]:
        """:func:`find_entities_page` over the kept entities."""
        return find_entities_page(self.store, query, offset, limit, entities=self.entities())

    def neighbourhood(self, entity: str, hops: int = 1) -> dict[str, Any]:
        """:func:`neighbourhood` over the kept entities."""
        return neighbourhood(self.store, entity, hops, entities=self.entities())


def find_entities_page(store: Store, query: str, offset: int = 0, limit: int = MAX_MATCHES,
                       *, entities: _Entities | None = None) -> dict[str, Any]:
    """A page of at most ``limit`` (≤ :data:`MAX_MATCHES`) entities whose name contains
    ``query``, from ``offset``: exact match first, then names starting with it, then by
    how many triples name them; with how many match.

    Raises:
        ExploreError: ``query`` is empty.
    """
    wanted = key_of(query)
    if not wanted:
        raise ExploreError("type part of an entity's name to search for it")
    entities = entities or _Entities.read(store)
    hits = [key for key in entities.triples if wanted in key]
    hits.sort(key=lambda k: (k != wanted, not k.startswith(wanted), -len(entities.triples[k]), k))
    page = hits[offset:offset + max(0, min(limit, MAX_MATCHES))]
    return {"entities": [{"name": entities.name(k), "triples": len(entities.triples[k])} for k in page],
            "total": len(hits), "offset": offset, "limit": MAX_MATCHES}


def neighbourhood(store: Store, entity: str, hops: int = 1, *,
                  entities: _Entities | None = None) -> dict[str, Any]:
    """The triples within ``hops`` of ``entity``: drawn as SVG, and listed with the passage
    behind each (id and title).

    Raises:
        ExploreError: ``hops`` is not 1 or 2, or no triple names the entity.
    """
    if hops not in (1, 2):
        raise ExploreError(f"hops must be 1 or 2, got {hops}")
    entities = entities or _Entities.read(store)
    start = key_of(entity)
    if start not in entities.triples:
        raise ExploreError(f"no triple names the entity {entity!r} in this index")
    distance = {start: 0}
    queue, chosen, seen = deque([start]), [], set()
    while queue:
        key = queue.popleft()
        if distance[key] >= hops:
            continue
        for triple in entities.triples[key]:
            if triple.id in seen:
                continue
            seen.add(triple.id)
            chosen.append(triple)
            for other in (key_of(triple.subject), key_of(triple.object)):
                if other not in distance:
                    distance[other] = distance[key] + 1
                    queue.append(other)
    shown = chosen[:MAX_TRIPLES]
    titles = {p.id: p.title for p in store.passages.get(list({t.passage_id for t in shown}))}
    nodes: dict[str, Node] = {}
    edges = []
    for triple in shown:
        for name in (triple.subject, triple.object):
            key = key_of(name)
            nodes.setdefault(key, Node(key, entities.name(key), "focus" if key == start else "entity"))
        edges.append(Edge(key_of(triple.subject), key_of(triple.object), triple.predicate,
                          "triple", triple.id))
    name = entities.name(start)
    return {
        "entity": name,
        "hops": hops,
        "svg": graph_svg(list(nodes.values()), edges, f"entities within {hops} hop(s) of {name}"),
        "triples": [_triple_row(t, titles) for t in shown],
        "more": len(chosen) - len(shown),
    }


def passage_triples(store: Store, passage_id: str) -> dict[str, Any]:
    """One passage (title, text, source, metadata) with its triples.

    Raises:
        ExploreError: No passage has this id.
    """
    found = store.passages.get([passage_id])
    if not found:
        raise ExploreError(f"no passage with id {passage_id!r} in this index")
    passage = found[0]
    triples = store.triples.get(store.triples.of_passage(passage_id))
    return {
        "id": passage.id, "title": passage.title, "text": passage.text, "source": passage.source,
        "metadata": dict(passage.metadata),
        "triples": [_triple_row(t, {passage.id: passage.title}) for t in triples],
    }


def _triple_row(triple: Triple, titles: dict[str, str]) -> dict[str, Any]:
    return {"id": triple.id, "triple": [triple.subject, triple.predicate, triple.object],
            "passage_id": triple.passage_id, "passage_title": titles.get(triple.passage_id, "")}
