"""The test doubles, in one place: a scripted chat model, an in-memory store, a counting
embedder and an LLM client that retries without sleeping.

``ScriptedChatModel`` is a real LangChain ``BaseChatModel`` (so ``LLMClient`` drives it
exactly like ``ChatOpenAI``) whose replies come from a function of the prompt text; the
function may return a string, an ``AIMessage``, :data:`EMPTY_CHOICES`, or an exception to
raise. :func:`scripted` makes one that replies from a list in turn and reports fixed token
usage. ``FakeStore`` implements the parts of ``Store`` that extraction uses. The embedder
is the package's own model-free :class:`~gear_agent.embedding.hashing.HashingEmbedder`;
:class:`CountingEmbedder` also counts what it embeds.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

import numpy as np
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import ConfigDict, Field

from gear_agent.embedding.hashing import HashingEmbedder
from gear_agent.ids import passage_id
from gear_agent.llm.client import LLMClient
from gear_agent.llm.retry import RetryPolicy
from gear_agent.store.base import Store
from gear_agent.store.collections import Passages, Triples
from gear_agent.types import AddResult, Hit, Passage, Triple

EMPTY_CHOICES = object()
"""Return this from a script to produce a reply with no choices at all."""

INPUT_TOKENS = 10
"""Every reply of a :func:`scripted` model reports this many prompt tokens ..."""
OUTPUT_TOKENS = 2
"""... and this many completion tokens, so token sums are easy to check."""


def prompt_text(messages: Sequence[BaseMessage]) -> str:
    return "\n".join(str(m.content) for m in messages)


class ScriptedChatModel(BaseChatModel):
    """Replies ``respond(prompt_text)``; records every call; optional async delay."""

    model_config = ConfigDict(arbitrary_types_allowed=True, protected_namespaces=())

    respond: Callable[[str], Any]
    model_name: str = "scripted-model"
    temperature: float = 0.0
    delay_s: float = 0.0
    calls: list[str] = Field(default_factory=list)
    usage: tuple[int, int] | None = None
    """``(input, output)`` tokens every reply reports; None reports none."""
    async_calls: int = 0
    in_flight: int = 0
    max_in_flight: int = 0

    @classmethod
    def from_list(cls, replies: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        """Replies in order, one per call; fails the test loudly when they run out."""
        items = list(replies)
        lock = threading.Lock()

        def respond(_: str) -> Any:
            with lock:
                if not items:
                    raise AssertionError("ScriptedChatModel: more calls than scripted replies")
                return items.pop(0)

        return cls(respond=respond, **kwargs)

    @property
    def prompts(self) -> list[str]:
        """Every prompt sent, in order (the same list as ``calls``)."""
        return self.calls

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _result(self, messages: list[BaseMessage]) -> ChatResult:
        text = prompt_text(messages)
        self.calls.append(text)
        outcome = self.respond(text)
        if isinstance(outcome, BaseException):
            raise outcome
        if outcome is EMPTY_CHOICES:
            return ChatResult(generations=[])
        message = outcome if isinstance(outcome, AIMessage) else AIMessage(content=outcome)
        if self.usage is not None and message.usage_metadata is None:
            tokens_in, tokens_out = self.usage
            message = message.model_copy(update={"usage_metadata": {
                "input_tokens": tokens_in, "output_tokens": tokens_out,
                "total_tokens": tokens_in + tokens_out,
            }})
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        return self._result(messages)

    async def _agenerate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.async_calls += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            return self._result(messages)
        finally:
            self.in_flight -= 1


class StreamingChatModel(ScriptedChatModel):
    """A :class:`ScriptedChatModel` that also streams: each reply comes out in word-sized
    tokens (a word with the space before it), ``token_delay_s`` apart, through LangChain's
    ``_stream``/``_astream``, as a server streaming its reply would."""

    token_delay_s: float = 0.0

    def _tokens(self, messages: list[BaseMessage]) -> list[str]:
        result = self._result(messages)
        if not result.generations:
            return []
        text = str(result.generations[0].message.content)
        return re.findall(r"\s*\S+|\s+$", text) or [text]

    def _stream(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> Iterator[ChatGenerationChunk]:
        for token in self._tokens(messages):
            if self.token_delay_s:
                time.sleep(self.token_delay_s)
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=token))
            if run_manager is not None:
                run_manager.on_llm_new_token(token, chunk=chunk)
            yield chunk

    async def _astream(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> AsyncIterator[ChatGenerationChunk]:
        for token in self._tokens(messages):
            if self.token_delay_s:
                await asyncio.sleep(self.token_delay_s)
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=token))
            if run_manager is not None:
                await run_manager.on_llm_new_token(token, chunk=chunk)
            yield chunk


def make_passages(count: int, source: str = "test") -> list[Passage]:
    """``count`` distinct passages titled ``Entity 0``, ``Entity 1``, ..."""
    passages = []
    for i in range(count):
        title, text = f"Entity {i}", f"Entity {i} was founded in {1900 + i} in City {i}."
        passages.append(Passage(passage_id(title, text), title, text, source))
    return passages


class _FakePassages(Passages):
    def __init__(self, store: FakeStore) -> None:
        self.store = store

    def add(self, passages: Sequence[Passage]) -> AddResult:
        result = AddResult()
        for passage in passages:
            target = result.existing if passage.id in self.store.passage_records else result.added
            target.append(passage.id)
            self.store.passage_records.setdefault(passage.id, passage)
        return result

    def mark_extracted(self, ids: Sequence[str]) -> None:
        self.store.extracted.update(ids)
        self.store.writes.append(("marks", len(ids)))

    def remove(self, ids: Sequence[str]) -> list[str]:
        raise NotImplementedError

    def ids_of_source(self, source: str) -> list[str]:
        return [p.id for p in self.store.passage_records.values() if p.source == source]

    def count(self, where: Any = None) -> int:
        return len(self.store.passage_records)

    def bm25_search(self, query: str, k: int, where: Any = None) -> list[Hit]:
        raise NotImplementedError

    def vector_search(self, vector: np.ndarray, k: int, where: Any = None) -> list[Hit]:
        raise NotImplementedError

    def get(self, ids: Sequence[str]) -> list[Passage]:
        return [self.store.passage_records[i] for i in ids if i in self.store.passage_records]

    def vectors(self, ids: Sequence[str]) -> np.ndarray:
        raise NotImplementedError

    def unextracted(self) -> list[Passage]:
        return [p for p in self.store.passage_records.values() if p.id not in self.store.extracted]

    def iterate(self) -> Iterator[Passage]:
        return iter(list(self.store.passage_records.values()))


class _FakeTriples(Triples):
    def __init__(self, store: FakeStore) -> None:
        self.store = store

    def add(self, triples: Sequence[Triple]) -> AddResult:
        result = AddResult()
        for triple in triples:
            if triple.passage_id not in self.store.passage_records:
                raise ValueError(f"unknown passage {triple.passage_id}")
            target = result.existing if triple.id in self.store.triple_records else result.added
            target.append(triple.id)
            self.store.triple_records.setdefault(triple.id, triple)
        self.store.writes.append(("triples", len(triples)))
        return result

    def count(self, where: Any = None) -> int:
        return len(self.store.triple_records)

    def bm25_search(self, query: str, k: int, where: Any = None) -> list[Hit]:
        raise NotImplementedError

    def vector_search(self, vector: np.ndarray, k: int, where: Any = None) -> list[Hit]:
        raise NotImplementedError

    def get(self, ids: Sequence[str]) -> list[Triple]:
        return [self.store.triple_records[i] for i in ids if i in self.store.triple_records]

    def vectors(self, ids: Sequence[str]) -> np.ndarray:
        raise NotImplementedError

    def of_passage(self, passage_id: str) -> list[str]:
        return [t.id for t in self.store.triple_records.values() if t.passage_id == passage_id]

    def neighbours(self, triple_id: str, query_vector: np.ndarray | None = None, limit: int = 100) -> list[str]:
        raise NotImplementedError

    def iterate(self) -> Iterator[Triple]:
        return iter(list(self.store.triple_records.values()))


class FakeStore(Store):
    """In memory: passages, triples and the extracted marks; no search."""

    embedding_model = "fake"
    dimension = 4

    def __init__(self, passages: Sequence[Passage] = ()) -> None:
        self.passage_records: dict[str, Passage] = {}
        self.triple_records: dict[str, Triple] = {}
        self.extracted: set[str] = set()
        self.writes: list[tuple[str, int]] = []  # ("triples" | "marks", size), in order
        self.passages = _FakePassages(self)
        self.triples = _FakeTriples(self)
        self.passages.add(passages)

    def generation(self) -> int:
        return len(self.writes)

    def changes_since(self, generation: int):  # noqa: ANN201 - no feed: readers rebuild
        from gear_agent.store.changes import Changes

        return Changes(generation, self.generation(), complete=False)


def scripted(replies: Sequence[str | BaseException]) -> ScriptedChatModel:
    """A model that replies from ``replies`` in turn (an exception is raised in its turn),
    each reply reporting :data:`INPUT_TOKENS` and :data:`OUTPUT_TOKENS`."""
    return ScriptedChatModel.from_list(replies, usage=(INPUT_TOKENS, OUTPUT_TOKENS))


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


class CountingEmbedder(HashingEmbedder):
    """The package's hashing embedder, counting the texts of every ``embed`` call."""

    def __init__(self, dimension: int = 64, name: str | None = None) -> None:
        super().__init__(dimension, name)
        self.calls: list[int] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(len(texts))
        return super().embed(texts)

    @property
    def texts_embedded(self) -> int:
        return sum(self.calls)


def make_passage(title: str, text: str, source: str = "test") -> Passage:
    """A passage with its content-hash id."""
    return Passage(passage_id(title, text), title, text, source)


def make_triple(passage: Passage, subject: str, predicate: str, obj: str) -> Triple:
    """A triple of ``passage`` with its content-hash id."""
    from gear_agent.ids import triple_id

    return Triple(triple_id(passage.id, subject, predicate, obj), subject, predicate, obj, passage.id)
