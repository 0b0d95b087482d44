"""The entity graph of an index, as a file Gephi, Cytoscape or networkx opens.

Nodes are entities (the heads and tails of triples, matched after lower-casing and
collapsing whitespace, as :meth:`~gear_agent.store.collections.Triples.neighbours` matches them)
and passages; edges are triples (head entity → tail entity, labelled by the predicate,
keyed by the triple id) and ``mentions`` (passage → each entity its triples name). Three
views: the whole index (:func:`index_graph`), the neighbourhood of one entity
(:func:`entity_neighbourhood`) and the triple chains that reached one question's passages
(:func:`chains_graph`). Three formats: GraphML (:meth:`ExportGraph.write_graphml`;
Gephi, Cytoscape, yEd, ``networkx.read_graphml``), node-link JSON
(:meth:`ExportGraph.node_link`; ``networkx.node_link_graph``, d3) and Cytoscape.js JSON
(:meth:`ExportGraph.cytoscape`).

Only the :class:`~gear_agent.store.base.Store` interface is used (``iter_passages``,
``iter_triples``, ``get_passages``), so any backend exports alike, and no embedding model
is needed.

Example:
    >>> graph = index_graph(store)  # doctest: +SKIP
    >>> graph.write_graphml(Path("graph.graphml"))  # doctest: +SKIP
    >>> import networkx as nx  # doctest: +SKIP
    >>> nx.read_graphml("graph.graphml").number_of_nodes()  # doctest: +SKIP
    1234
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections import Counter, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from xml.etree import ElementTree as ET

from gear_agent.errors import GearError
from gear_agent.retrieval.records import PassageRecord
from gear_agent.store.base import Store
from gear_agent.types import Passage, Triple

GraphFormat = Literal["graphml", "json", "cytoscape"]
"""``graphml`` (Gephi, Cytoscape, networkx), ``json`` (node-link: networkx, d3) or
``cytoscape`` (Cytoscape.js elements)."""

FORMATS: tuple[str, ...] = ("graphml", "json", "cytoscape")

_XML_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
"""Characters XML 1.0 cannot carry (control characters from scraped text)."""


class GraphExportError(GearError, ValueError):
    """An export that cannot be made as asked (an unknown entity or format, bad hops)."""


@dataclass(frozen=True)
class ExportOptions:
    """What an export carries.

    Attributes:
        passages: Passage nodes and ``mentions`` edges (False: entities and triples only).
        text_chars: Passage text kept on each passage node, in characters (0: none;
            None: all of it).
    """

    passages: bool = True
    text_chars: int | None = 300


@dataclass
class ExportGraph:
    """Nodes and edges ready to write; attributes are strings, numbers or booleans.

    Attributes:
        nodes: Node id → attributes (``kind`` is ``entity`` or ``passage``; ``label``).
        edges: ``(source, target, key, attributes)``; ``kind`` is ``triple``, ``mentions``
            (passage → entity) or ``reached`` (chain → ranked passage).
    """

    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    edges: list[tuple[str, str, str, dict[str, Any]]] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Nodes and edges by kind.

        Example:
            >>> ExportGraph().counts()
            {'entities': 0, 'passages': 0, 'triples': 0, 'mentions': 0, 'reached': 0}
        """
        nodes = Counter(attrs["kind"] for attrs in self.nodes.values())
        edges = Counter(attrs["kind"] for *_, attrs in self.edges)
        return {"entities": nodes["entity"], "passages": nodes["passage"],
                "triples": edges["triple"], "mentions": edges["mentions"],
                "reached": edges["reached"]}

    # ---- formats ----------------------------------------------------------------------
    def node_link(self) -> dict[str, Any]:
        """networkx's node-link form (a directed multigraph; edges under ``"edges"``, each
        keyed by ``"key"``): ``networkx.node_link_graph(data)`` reads it back (networkx
        before 3.4: ``node_link_graph(data, link="edges")``)."""
        return {
            "directed": True,
            "multigraph": True,
            "graph": {"name": "gear-agent entity graph"},
            "nodes": [{"id": node_id, **attrs} for node_id, attrs in self.nodes.items()],
            "edges": [{"source": s, "target": t, "key": k, **attrs} for s, t, k, attrs in self.edges],
        }

    def cytoscape(self) -> dict[str, Any]:
        """Cytoscape.js ``elements`` JSON (also imported by Cytoscape desktop)."""
        return {
            "data": {"name": "gear-agent entity graph"},
            "elements": {
                "nodes": [{"data": {"id": node_id, **attrs}} for node_id, attrs in self.nodes.items()],
                "edges": [{"data": {"id": k, "source": s, "target": t, **attrs}}
                          for s, t, k, attrs in self.edges],
            },
        }

    def graphml(self) -> ET.ElementTree:
        """The graph as a GraphML document (typed attribute keys, parallel edges by id)."""
        ns = "http://graphml.graphdrawing.org/xmlns"
        root = ET.Element("graphml", {"xmlns": ns})
        keys: dict[tuple[str, str], str] = {}
        for domain, rows in (("node", self.nodes.values()), ("edge", (a for *_, a in self.edges))):
            types: dict[str, str] = {}
            for attrs in rows:
                for name, value in attrs.items():
                    types.setdefault(name, _graphml_type(value))
            for name, kind in types.items():
                key = keys[(domain, name)] = f"{domain[0]}_{name}"
                ET.SubElement(root, "key", {"id": key, "for": domain, "attr.name": name,
                                            "attr.type": kind})
        graph = ET.SubElement(root, "graph", {"id": "G", "edgedefault": "directed"})
        for node_id, attrs in self.nodes.items():
            _data(ET.SubElement(graph, "node", {"id": _xml_text(node_id)}), attrs, keys, "node")
        for source, target, key, attrs in self.edges:
            element = ET.SubElement(graph, "edge", {"id": _xml_text(key), "source": _xml_text(source),
                                                    "target": _xml_text(target)})
            _data(element, attrs, keys, "edge")
        ET.indent(root)
        return ET.ElementTree(root)

    def to_bytes(self, fmt: GraphFormat) -> bytes:
        """The graph serialised in ``fmt`` (UTF-8).

        Raises:
            GraphExportError: ``fmt`` is not one of :data:`FORMATS`.

        Example:
            >>> ExportGraph().to_bytes("json").startswith(b"{")
            True
        """
        if fmt == "graphml":
            return ET.tostring(self.graphml().getroot(), encoding="utf-8", xml_declaration=True)
        if fmt == "json":
            data = self.node_link()
        elif fmt == "cytoscape":
            data = self.cytoscape()
        else:
            raise GraphExportError(f"unknown graph format {fmt!r}; known: {', '.join(FORMATS)}")
        return json.dumps(data, ensure_ascii=False, indent=1).encode("utf-8")


def format_for(path: Path | None) -> GraphFormat:
    """The format a file name asks for: ``.graphml``/``.xml`` GraphML, ``.cyjs`` Cytoscape.js,
    ``.json`` node-link; GraphML otherwise.

    Example:
        >>> format_for(Path("g.json")), format_for(None)
        ('json', 'graphml')
    """
    suffix = path.suffix.lower() if path is not None else ""
    return {".json": "json", ".cyjs": "cytoscape"}.get(suffix, "graphml")  # type: ignore[return-value]


def entity_key(name: str) -> str:
    """An entity's identity: lower-cased, whitespace collapsed (the store's neighbour rule).

    Example:
        >>> entity_key("  Kestrel   Observatory ")
        'kestrel observatory'
    """
    return " ".join(name.lower().split())


def entity_node_id(name: str) -> str:
    """The node id of an entity: ``e-`` and a hash of its :func:`entity_key` (GraphML ids
    may not hold spaces; the name is the node's ``label``).

    Example:
        >>> entity_node_id("Kestrel Observatory") == entity_node_id("kestrel  observatory")
        True
    """
    return "e-" + hashlib.sha256(entity_key(name).encode("utf-8")).hexdigest()[:24]


class _Builder:
    """Adds triples, their entities and passages to an :class:`ExportGraph` once each."""

    def __init__(self, options: ExportOptions) -> None:
        self.options = options
        self.graph = ExportGraph()
        self._surface: dict[str, Counter[str]] = {}
        self._triples: set[str] = set()
        self._mentions: set[tuple[str, str]] = set()

    def triple(self, triple: Triple, **extra: Any) -> None:
        if triple.id in self._triples:
            return
        self._triples.add(triple.id)
        head, tail = self._entity(triple.subject), self._entity(triple.object)
        self.graph.edges.append((head, tail, triple.id, {
            "kind": "triple", "label": triple.predicate, "predicate": triple.predicate,
            "passage_id": triple.passage_id, **extra,
        }))
        if self.options.passages:
            for entity in (head, tail):
                pair = (triple.passage_id, entity)
                if pair not in self._mentions:
                    self._mentions.add(pair)
                    self.graph.edges.append((triple.passage_id, entity,
                                             f"m-{triple.passage_id}-{entity}", {"kind": "mentions"}))

    def passage(self, passage: Passage, **extra: Any) -> None:
        attrs = self.graph.nodes.setdefault(passage.id, {"kind": "passage"})
        attrs.update({"label": passage.title or passage.id, "title": passage.title,
                      "source": passage.source})
        limit = self.options.text_chars
        if limit is None or limit > 0:
            attrs["text"] = passage.text if limit is None else passage.text[:limit]
        attrs.update(extra)

    def finish(self, store: Store, every_passage: Iterable[Passage] | None = None) -> ExportGraph:
        """Label entities by their most frequent spelling; add the passages the triples
        come from (or ``every_passage``, when given)."""
        for node_id, spellings in self._surface.items():
            attrs = self.graph.nodes[node_id]
            attrs["label"] = spellings.most_common(1)[0][0]
            attrs["mentions"] = sum(spellings.values())
        if not self.options.passages:
            return self.graph
        wanted = list(dict.fromkeys(pid for pid, _ in self._mentions))
        for passage in every_passage if every_passage is not None else store.passages.get(wanted):
            self.passage(passage)
        for pid in wanted:  # a triple whose passage is gone still has a node to point from
            self.graph.nodes.setdefault(pid, {"kind": "passage", "label": pid})
        return self.graph

    def _entity(self, name: str) -> str:
        node_id = entity_node_id(name)
        if node_id not in self.graph.nodes:
            self.graph.nodes[node_id] = {"kind": "entity", "key": entity_key(name)}
            self._surface[node_id] = Counter()
        self._surface[node_id][" ".join(name.split())] += 1
        return node_id


def index_graph(store: Store, options: ExportOptions | None = None) -> ExportGraph:
    """Every triple of the index with its entities (and every passage, with ``options``).

    Example:
        >>> index_graph(store).counts()  # doctest: +SKIP
        {'entities': 61, 'passages': 12, 'triples': 34, 'mentions': 66, 'reached': 0}
    """
    builder = _Builder(options or ExportOptions())
    for triple in store.triples.iterate():
        builder.triple(triple)
    return builder.finish(store, store.passages.iterate() if builder.options.passages else None)


def entity_neighbourhood(
    store: Store, entity: str, hops: int = 1, options: ExportOptions | None = None
) -> ExportGraph:
    """The triples within ``hops`` triples of ``entity``, with their entities and passages.

    Hop 1 is every triple naming the entity; hop 2 adds every triple naming an entity of
    hop 1, and so on. The entity node carries ``hop`` 0, the others their distance.

    Args:
        store: The index.
        entity: An entity name (matched after lower-casing and collapsing whitespace).
        hops: How far to go, at least 1.
        options: What the export carries.

    Raises:
        GraphExportError: ``hops`` is below 1, or no triple names the entity (the message
            suggests close names).

    Example:
        >>> entity_neighbourhood(store, "Kestrel Observatory", hops=1).counts()  # doctest: +SKIP
        {'entities': 4, 'passages': 3, 'triples': 3, 'mentions': 6, 'reached': 0}
    """
    if hops < 1:
        raise GraphExportError(f"--hops must be at least 1, got {hops}")
    by_entity: dict[str, list[Triple]] = {}
    for triple in store.triples.iterate():
        for name in {entity_key(triple.subject), entity_key(triple.object)}:
            by_entity.setdefault(name, []).append(triple)
    start = entity_key(entity)
    if start not in by_entity:
        close = difflib.get_close_matches(start, list(by_entity), n=5, cutoff=0.6)
        hint = f"; close: {', '.join(close)}" if close else ""
        raise GraphExportError(f"no triple names the entity {entity!r} in this index{hint}")
    builder = _Builder(options or ExportOptions())
    distance = {start: 0}
    queue = deque([start])
    while queue:
        name = queue.popleft()
        if distance[name] >= hops:
            continue
        for triple in by_entity[name]:
            builder.triple(triple)
            for other in (entity_key(triple.subject), entity_key(triple.object)):
                if other not in distance:
                    distance[other] = distance[name] + 1
                    queue.append(other)
    graph = builder.finish(store)
    for name, hop in distance.items():
        node = graph.nodes.get(entity_node_id(name))
        if node is not None:
            node["hop"] = hop
    return graph


def chains_graph(
    store: Store, records: Sequence[PassageRecord], options: ExportOptions | None = None
) -> ExportGraph:
    """The triple chains that reached one question's ranked passages.

    Each chain triple is an edge with ``step`` (its position in the chain, from 1); each
    ranked passage is a node with ``rank`` (from 1) and ``score``, linked from the tail
    entity of its chain's last triple by a ``reached`` edge.

    Args:
        store: The index (for the passages the chain triples come from).
        records: The ranked passages with their chains, e.g. from
            :func:`~gear_agent.retrieval.records.passage_records`.
        options: What the export carries.

    Example:
        >>> chains_graph(store, passage_records(store, ranked)).counts()  # doctest: +SKIP
        {'entities': 5, 'passages': 4, 'triples': 3, 'mentions': 6, 'reached': 3}
    """
    builder = _Builder(options or ExportOptions())
    for record in records:
        for step, triple in enumerate(record.chain, start=1):
            builder.triple(triple, step=step)
    graph = builder.finish(store)
    for rank, record in enumerate(records, start=1):
        passage = Passage(record.id, record.title, record.text, record.source)
        builder.passage(passage, rank=rank, score=float(record.score))
        if record.chain:
            tail = entity_node_id(record.chain[-1].object)
            graph.edges.append((tail, record.id, f"r-{record.id}", {"kind": "reached", "rank": rank}))
    return graph


def _graphml_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "long"
    if isinstance(value, float):
        return "double"
    return "string"


def _data(element: ET.Element, attrs: dict[str, Any], keys: dict[tuple[str, str], str], domain: str) -> None:
    for name, value in attrs.items():
        if value is None:
            continue
        data = ET.SubElement(element, "data", {"key": keys[(domain, name)]})
        data.text = ("true" if value else "false") if isinstance(value, bool) else _xml_text(str(value))


def _xml_text(text: str) -> str:
    return _XML_UNSAFE.sub("\ufffd", text)
