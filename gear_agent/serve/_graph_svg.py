"""Small graphs drawn as SVG on the server: python-igraph computes the layout, this module
writes the picture (no script in the browser lays anything out).

Two shapes: a triple chain (:func:`chain_svg`: the entities a passage's chain walks, top to
bottom with every label on a row of its own, ending at the passage) and a neighbourhood (:func:`graph_svg`: entities and the
triples between them, force-directed with a fixed seed, so a page shows the same picture
on every load). Every label is XML-escaped; nodes carry ``data-entity`` (entities) or
``data-passage`` (passages) and ``tabindex="0"``, so the page can open them by click or
keyboard.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

import igraph as ig

LABEL_CHARS = 26
"""Longest node or edge label drawn; longer ones end with an ellipsis (the full text is in
the element's ``<title>``, which browsers show on hover and screen readers read)."""


@dataclass(frozen=True)
class Node:
    """A node to draw: ``kind`` is ``entity``, ``focus`` (the entity asked about) or ``passage``."""

    key: str
    label: str
    kind: str = "entity"


@dataclass(frozen=True)
class Edge:
    """A directed edge between two node keys; ``kind`` is ``triple``, ``chain`` or ``reached``."""

    source: str
    target: str
    label: str = ""
    kind: str = "triple"
    triple_id: str = ""


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


def _fit(coords: Sequence[Sequence[float]], width: float, height: float,
         margin_x: float, margin_y: float) -> list[tuple[float, float]]:
    """Layout coordinates scaled into the box (aspect kept; a flat side takes no part),
    centred."""
    xs, ys = [c[0] for c in coords], [c[1] for c in coords]
    span_x, span_y = max(xs) - min(xs), max(ys) - min(ys)
    scales = [(width - 2 * margin_x) / span_x if span_x > 1e-9 else math.inf,
              (height - 2 * margin_y) / span_y if span_y > 1e-9 else math.inf]
    scale = min(scales) if min(scales) < math.inf else 1.0
    off_x = (width - scale * span_x) / 2
    off_y = (height - scale * span_y) / 2
    return [(off_x + scale * (x - min(xs)), off_y + scale * (y - min(ys))) for x, y in coords]


def _layout(nodes: Sequence[Node], edges: Sequence[Edge], kind: str) -> list[tuple[float, float]]:
    index = {node.key: i for i, node in enumerate(nodes)}
    graph = ig.Graph(n=len(nodes), edges=[(index[e.source], index[e.target]) for e in edges], directed=True)
    if len(nodes) == 1:
        return [(0.0, 0.0)]
    if kind == "chain":  # layered left to right: sugiyama's layers are rows, so turn them
        layout = graph.layout_sugiyama()
        return [(float(y), float(x)) for x, y in layout.coords[: len(nodes)]]
    start = [(math.cos(2 * math.pi * i / len(nodes)), math.sin(2 * math.pi * i / len(nodes)))
             for i in range(len(nodes))]  # a fixed start, so the same graph is drawn the same
    return [tuple(c) for c in graph.layout_fruchterman_reingold(seed=start, niter=500).coords]


def draw(nodes: Sequence[Node], edges: Sequence[Edge], *, kind: str = "neighbourhood",
         width: int = 640, height: int = 420, title: str = "") -> str:
    """The SVG of ``nodes`` and ``edges``, laid out by igraph (``kind`` ``chain``: layered
    left to right; else force-directed).

    Example:
        >>> svg = draw([Node("a", "Oskar Brenner"), Node("b", "Ilse Brenner")],
        ...            [Edge("a", "b", "spouse")], kind="chain", width=300, height=80)
        >>> svg.startswith("<svg") and "spouse" in svg
        True
    """
    if not nodes:
        return ""
    margin_x, margin_y = (75.0, 30.0) if kind == "chain" else (80.0, 40.0)
    points = _fit(_layout(nodes, edges, kind), width, height, margin_x, margin_y)
    at = {node.key: points[i] for i, node in enumerate(nodes)}
    # The marker's id is the drawing's own: a page holds many SVGs, and an id shared with
    # one in a hidden section would draw no arrowheads.
    arrow = "arrow-" + hashlib.sha1("\n".join(n.key for n in nodes).encode()).hexdigest()[:10]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="graph {kind}" viewBox="0 0 {width} {height}" '
        + (f'width="{width}" height="{height}" ' if kind == "chain" else "")
        + f'role="img" aria-label={quoteattr(title or "graph")}>',
        f'<defs><marker id="{arrow}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="9" '
        'markerHeight="9" markerUnits="userSpaceOnUse" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z"/></marker></defs>',
    ]
    for edge in edges:
        (x1, y1), (x2, y2) = at[edge.source], at[edge.target]
        dx, dy = x2 - x1, y2 - y1
        length = math.hypot(dx, dy) or 1.0
        pad = 9.0
        x1, y1 = x1 + dx / length * pad, y1 + dy / length * pad
        x2, y2 = x2 - dx / length * pad, y2 - dy / length * pad
        data = f' data-triple={quoteattr(edge.triple_id)}' if edge.triple_id else ""
        parts.append(f'<g class="edge {edge.kind}"{data}><title>{escape(edge.label)}</title>'
                     f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" marker-end="url(#{arrow})"/>')
        if edge.label:
            parts.append(f'<text x="{(x1 + x2) / 2:.1f}" y="{(y1 + y2) / 2 - 4:.1f}" '
                         f'text-anchor="middle">{escape(_short(edge.label))}</text>')
        parts.append("</g>")
    for node in nodes:
        x, y = at[node.key]
        attr = "data-passage" if node.kind == "passage" else "data-entity"
        shape = (f'<rect x="{x - 8:.1f}" y="{y - 8:.1f}" width="16" height="16" rx="3"/>'
                 if node.kind == "passage" else f'<circle cx="{x:.1f}" cy="{y:.1f}" r="8"/>')
        parts.append(f'<g class="node {node.kind}" {attr}={quoteattr(node.key)} tabindex="0" '
                     f'role="button"><title>{escape(node.label)}</title>{shape}'
                     f'<text x="{x:.1f}" y="{y + 22:.1f}" text-anchor="middle">'
                     f"{escape(_short(node.label))}</text></g>")
    parts.append("</svg>")
    return "".join(parts)


CHAIN_WIDTH = 320
"""Width of a drawn chain: it fits a phone's screen without being scaled down."""
ROW = 19
"""Height of one row of a drawn chain (a node's name or an edge's predicate)."""


def chain_svg(chain: Sequence[Sequence[str]], passage_id: str, passage_title: str,
              kind: str = "path") -> str:
    """A passage's triple chain drawn top to bottom, one label per row, so no two labels
    share a line however long the chain: each triple is an edge from its subject to its
    object with its predicate beside it (a triple starting where the last one ended
    continues the line), and at the bottom the passage it reached. ``kind="seeds"``: the
    PPR seed triples whose mass reached the passage, each on its own, with a dashed line
    from all of them to it ('' for an empty chain).

    Example:
        >>> "Ilse Brenner" in chain_svg([["Oskar Brenner", "spouse", "Ilse Brenner"]], "p1", "Oskar")
        True
    """
    if not chain:
        return ""
    rows: list[Node | Edge | None] = []  # a node, an edge, or None: a gap between two triples
    last: str | None = None
    for subject, predicate, obj in (tuple(t)[:3] for t in chain):
        head, tail = _entity_key(subject), _entity_key(obj)
        if head != last or kind == "seeds":
            if last is not None:
                rows.append(None)
            rows.append(Node(head, subject))
        rows.append(Edge(head, tail, predicate, "chain"))
        rows.append(Node(tail, obj))
        last = tail
    reach = "their mass reached" if kind == "seeds" else "reached"
    rows.append(Edge(last or "", passage_id, reach, "reached"))
    rows.append(Node(passage_id, passage_title or passage_id, "passage"))
    height = ROW * len(rows) + 12
    what = "seed triples whose mass reached" if kind == "seeds" else "triple chain to"
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="graph chain {escape(kind)}" '
             f'viewBox="0 0 {CHAIN_WIDTH} {height}" width="{CHAIN_WIDTH}" height="{height}" '
             f'role="img" aria-label={quoteattr(f"{what} {passage_title}")}>']
    x, text_x = 22.0, 40.0
    for i, item in enumerate(rows):
        y = 6 + ROW * i + ROW / 2
        if isinstance(item, Node):
            attr = "data-passage" if item.kind == "passage" else "data-entity"
            shape = (f'<rect x="{x - 7:.1f}" y="{y - 7:.1f}" width="14" height="14" rx="3"/>'
                     if item.kind == "passage" else f'<circle cx="{x:.1f}" cy="{y:.1f}" r="6"/>')
            parts.append(f'<g class="node {item.kind}" {attr}={quoteattr(item.key)} tabindex="0" '
                         f'role="button"><title>{escape(item.label)}</title>{shape}'
                         f'<text x="{text_x:.1f}" y="{y + 4:.1f}">{escape(_short(item.label))}</text></g>')
        elif isinstance(item, Edge):
            top, bottom = y - ROW / 2 + 3, y + ROW / 2 - 3
            if item.kind == "reached" and kind == "seeds":
                top, bottom = 6.0, y + ROW / 2 - 3  # from every seed: a bracket down the side
                parts.append(f'<g class="edge reached seeds"><title>{escape(item.label)}</title>'
                             f'<line x1="6" y1="{top:.1f}" x2="6" y2="{bottom:.1f}"/>'
                             f'<line x1="6" y1="{bottom:.1f}" x2="{x - 8:.1f}" y2="{bottom + 3:.1f}"/>'
                             f'<text x="{text_x:.1f}" y="{y + 4:.1f}">{escape(_short(item.label))}</text></g>')
                continue
            parts.append(f'<g class="edge {item.kind}"><title>{escape(item.label)}</title>'
                         f'<line x1="{x:.1f}" y1="{top:.1f}" x2="{x:.1f}" y2="{bottom:.1f}"/>'
                         f'<path d="M{x - 4:.1f},{bottom - 5:.1f} L{x:.1f},{bottom:.1f} L{x + 4:.1f},{bottom - 5:.1f}"/>'
                         f'<text x="{text_x:.1f}" y="{y + 4:.1f}">{escape(_short(item.label))}</text></g>')
    parts.append("</svg>")
    return "".join(parts)


def graph_svg(nodes: Sequence[Node], edges: Sequence[Edge], title: str) -> str:
    """A neighbourhood, force-directed (see :func:`draw`)."""
    size = len(nodes)
    return draw(nodes, edges, width=max(520, 60 * size), height=max(380, 40 * size), title=title)


def _entity_key(name: str) -> str:
    return " ".join(str(name).lower().split())
