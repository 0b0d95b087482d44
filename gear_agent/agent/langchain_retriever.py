"""A LangChain ``BaseRetriever`` over the GEAR agent or any gear-agent retriever.

Each passage becomes a ``Document`` whose ``page_content`` is the passage text and whose
metadata holds the passage's own metadata fields plus ``id``, ``title``, ``source``,
``score``, ``chain`` (the ``[s, p, o]`` triples whose path reached it) and ``chain_ids``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from gear_agent.filters import parse_where
from gear_agent.retrieval.records import PassageRecord, passage_records

_RECORD_KEYS = ("id", "title", "source", "score", "chain", "chain_ids")


def to_documents(records: list[PassageRecord]) -> list[Document]:
    """Passage records as Documents (the one conversion to LangChain's shape); the record's
    fields win over metadata keys of the same name."""
    documents = []
    for p in (r.to_dict() for r in records):
        metadata = dict(p.get("metadata") or {})
        metadata.update({key: p.get(key) for key in _RECORD_KEYS if key in p})
        metadata.setdefault("source", "")
        documents.append(Document(page_content=p["text"], id=p["id"], metadata=metadata))
    return documents


class GearLangChainRetriever(BaseRetriever):
    """Documents from the compiled GEAR agent (``agent``), or a gear ``retriever`` and its ``store``.

    Example:
        >>> docs = GearLangChainRetriever(agent=build_agent(), k=5).invoke("Who ...?")  # doctest: +SKIP
        >>> docs[0].metadata["chain"]  # doctest: +SKIP
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    agent: Any | None = Field(None, description="A compiled GEAR graph (build_agent()).")
    retriever: Any | None = Field(None, description="A gear_agent Retriever, used with store.")
    store: Any | None = Field(None, description="The store the retriever searches.")
    k: int = Field(15, ge=1, description="Documents returned.")
    where: dict[str, Any] | list[str] | None = Field(
        None, description='Only passages passing this filter, e.g. {"year": {"$gte": 2020}}.'
    )

    def model_post_init(self, context: Any) -> None:
        if (self.agent is None) == (self.retriever is None):
            raise ValueError("give exactly one of agent= or retriever= (with store=)")
        if self.retriever is not None and self.store is None:
            raise ValueError("retriever= needs store= to read the passages' text")

    def _input(self, query: str) -> dict[str, Any]:
        given: dict[str, Any] = {"question": query, "top_k": self.k}
        if self.where is not None:
            given["where"] = self.where
        return given

    def _records(self, query: str) -> list[PassageRecord]:
        with self.store.snapshot():  # type: ignore[union-attr] - one commit: ranking and records
            ranked = self.retriever.retrieve(query, self.k, parse_where(self.where))  # type: ignore[union-attr]
            return passage_records(self.store, ranked)  # type: ignore[arg-type]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        if self.agent is not None:
            config = {"callbacks": run_manager.get_child()}
            result = self.agent.invoke(self._input(query), config)
            return to_documents([PassageRecord.from_dict(p) for p in result["passages"]])
        return to_documents(self._records(query))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        if self.agent is not None:
            config = {"callbacks": run_manager.get_child()}
            result = await self.agent.ainvoke(self._input(query), config)
            return to_documents([PassageRecord.from_dict(p) for p in result["passages"]])
        return to_documents(await asyncio.to_thread(self._records, query))
