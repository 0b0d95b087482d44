"""Test doubles for the agent tests: a tiny 2-hop corpus index and a scripted chat model."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from gear_agent.config import GearSettings
from gear_agent.embedding.base import Embedder, normalise_rows
from gear_agent.ids import passage_id, triple_id
from gear_agent.llm.client import LLMClient
from gear_agent.llm.retry import RetryPolicy
from gear_agent.retrieval.search import QueryEncoder
from gear_agent.runtime import Runtime
from gear_agent.store.embedded import EmbeddedStore
from gear_agent.types import Passage, Triple

_TOKEN = re.compile(r"\w+")

INPUT_TOKENS = 10
"""Every scripted reply reports this many prompt tokens ..."""
OUTPUT_TOKENS = 2
"""... and this many completion tokens, so token sums are easy to check."""


class HashingEmbedder(Embedder):
    """Bag of words hashed into signed buckets (blake2b), L2-normalised; deterministic."""

    def __init__(self, dimension: int = 128) -> None:
        self._dimension = dimension
        self.name = f"test-hashing-{dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        matrix = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in _TOKEN.findall(text.lower()):
                digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
                bucket = int.from_bytes(digest[:4], "little") % self._dimension
                matrix[row, bucket] += 1.0 if digest[4] & 1 else -1.0
        return normalise_rows(matrix)


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
    store = EmbeddedStore.open(path, embedder or HashingEmbedder())
    passages = [Passage(passage_id(t, text), t, text, "test") for t, (text, _) in CORPUS.items()]
    store.add_passages(passages)
    triples = [
        Triple(triple_id(p.id, *spo), *spo, p.id) for p in passages for spo in CORPUS[p.title][1]
    ]
    store.add_triples(triples)
    store.mark_extracted([p.id for p in passages])
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
        "answer_top_k": 2,
    }
    values.update(overrides)
    return GearSettings(**values)


def make_runtime(path: Path, settings: GearSettings | None = None) -> Runtime:
    """A runtime over the tiny corpus (built at ``path``)."""
    embedder = HashingEmbedder()
    store = build_store(path, embedder)
    return Runtime(settings or make_settings(), embedder, store, QueryEncoder(embedder))


class ScriptedChat(GenericFakeChatModel):
    """``GenericFakeChatModel`` whose script may hold exceptions (raised in turn) and
    whose replies report fixed token usage; it records every prompt it was sent."""

    prompts: list[str] = []

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.prompts.append("\n".join(str(m.content) for m in messages))
        item = next(self.messages)
        if isinstance(item, BaseException):
            raise item
        message = AIMessage(
            content=item,
            usage_metadata={
                "input_tokens": INPUT_TOKENS,
                "output_tokens": OUTPUT_TOKENS,
                "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS,
            },
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


def scripted(replies: Sequence[str | BaseException]) -> ScriptedChat:
    """A fresh scripted model over ``replies``."""
    return ScriptedChat(messages=_iterate(list(replies)), prompts=[])


def _iterate(items: list[Any]) -> Iterator[Any]:
    yield from items


def client(model: Any, max_retries: int = 2) -> LLMClient:
    """An LLM client that retries without sleeping."""

    async def no_sleep(_seconds: float) -> None:
        return None

    return LLMClient(
        model,
        retry=RetryPolicy(max_retries=max_retries),
        sleep=lambda _s: None,
        async_sleep=no_sleep,
    )
