"""A tiny 2-hop corpus with its triples, and the index, settings and runtime built on it
(the agent tests' ground: every expected passage order was worked out on it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gear_agent.config import GearSettings
from gear_agent.embedding.base import Embedder
from gear_agent.embedding.hashing import HashingEmbedder
from gear_agent.ids import passage_id, triple_id
from gear_agent.open_index import OpenIndex
from gear_agent.retrieval.search import QueryEncoder
from gear_agent.store.embedded.store import EmbeddedStore
from gear_agent.types import Passage, Triple

# A 2-hop question: the bridge's town (hop 1), then the town's county (hop 2).
QUESTION = (
    "In which county is the town where the Rainbow Bridge over the American River is located?"
)

CORPUS: dict[str, tuple[str, list[tuple[str, str, str]]]] = {
    "Rainbow Bridge (Folsom)": (
        "The Rainbow Bridge is a concrete arch bridge over the American River in the town of "
        "Folsom, California. It opened in 1919.",
        [
            ("Rainbow Bridge", "spans", "American River"),
            ("Rainbow Bridge", "located in", "Folsom"),
            ("Rainbow Bridge", "opened in", "1919"),
        ],
    ),
    "Folsom, California": (
        "Folsom is a city in Sacramento County, California, east of Sacramento.",
        [("Folsom", "located in", "Sacramento County"), ("Folsom", "east of", "Sacramento")],
    ),
    "Rainbow Bridge (Niagara)": (
        "The Rainbow Bridge is an arch bridge across the Niagara River gorge between Niagara "
        "Falls, New York and Niagara Falls, Ontario.",
        [
            ("Rainbow Bridge", "crosses", "Niagara River"),
            ("Rainbow Bridge", "connects", "Niagara Falls, Ontario"),
        ],
    ),
    "American River": (
        "The American River runs from the Sierra Nevada to Sacramento, where it joins the "
        "Sacramento River.",
        [
            ("American River", "runs to", "Sacramento"),
            ("American River", "joins", "Sacramento River"),
        ],
    ),
    "Folsom State Prison": (
        "Folsom State Prison is a state prison in Folsom, opened in 1880.",
        [
            ("Folsom State Prison", "located in", "Folsom"),
            ("Folsom State Prison", "opened in", "1880"),
        ],
    ),
    "Sacramento County": (
        "Sacramento County is a county in the state of California. Its county seat is Sacramento.",
        [
            ("Sacramento County", "located in", "California"),
            ("Sacramento County", "county seat", "Sacramento"),
        ],
    ),
    "Rainbow Bridge National Monument": (
        "Rainbow Bridge National Monument is a natural arch in San Juan County, Utah.",
        [("Rainbow Bridge National Monument", "located in", "San Juan County")],
    ),
    "Placer County": (
        "Placer County lies north of the American River, in California.",
        [("Placer County", "north of", "American River")],
    ),
}


def pid(title: str) -> str:
    """The passage id of a corpus title."""
    return passage_id(title, CORPUS[title][0])


def build_store(path: Path, embedder: Embedder | None = None) -> EmbeddedStore:
    """The corpus and its triples in an embedded store at ``path``."""
    store = EmbeddedStore.open(path, embedder or HashingEmbedder(128))
    passages = [Passage(passage_id(t, text), t, text, "test") for t, (text, _) in CORPUS.items()]
    store.passages.add(passages)
    triples = [
        Triple(triple_id(p.id, *spo), *spo, p.id) for p in passages for spo in CORPUS[p.title][1]
    ]
    store.triples.add(triples)
    store.passages.mark_extracted([p.id for p in passages])
    return store


def make_settings(**overrides: Any) -> GearSettings:
    """Small settings for the tiny corpus."""
    values: dict[str, Any] = {
        "base_k": 3,
        "top_k": 5,
        "beam_width": 3,
        "beam_neighbours": 5,
        "passage_link_k": 2,
        "max_iterations": 3,
        "expansion": "beam",  # the expected passage orders below were worked out for beam search
        "base_retriever": "hybrid",  # ... from a hybrid base (the default before ppr)
        "answer_top_k": 2,
    }
    values.update(overrides)
    return GearSettings(**values)


def make_runtime(path: Path, settings: GearSettings | None = None) -> OpenIndex:
    """A runtime over the tiny corpus (built at ``path``)."""
    embedder = HashingEmbedder(128)
    store = build_store(path, embedder)
    return OpenIndex(settings or make_settings(), embedder, store, QueryEncoder(embedder))
