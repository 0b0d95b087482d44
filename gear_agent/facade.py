"""``Gear``: the one object a Python user needs — index texts, retrieve, ask.

It only wires the parts (settings, embedder, store, LLM client, retriever table, agent);
everything it does is also importable on its own for those who need more control.

Example:
    >>> from gear_agent import Gear  # doctest: +SKIP
    >>> gear = Gear("my-index", chat_model="openai:gpt-4o-mini")  # doctest: +SKIP
    >>> gear.index(["Oskar Brenner founded the Kestrel Observatory.",
    ...             "Oskar Brenner was married to Ilse Brenner."])  # doctest: +SKIP
    >>> gear.ask("Who was the spouse of the founder of the Kestrel Observatory?").answer  # doctest: +SKIP
    'Ilse Brenner'
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gear_agent._deprecated import NEXT_REMOVAL, warn_deprecated
from gear_agent.config import GearSettings, settings_from
from gear_agent.embedding import Embedder, make_embedder
from gear_agent.embedding.base import QueryEncoder
from gear_agent.errors import GearWarning
from gear_agent.extraction import ExtractionBudget
from gear_agent.filters import WhereInput, parse_where
from gear_agent.indexing import (
    IndexReport,
    Progress,
    add_passages,
    cut_warning,
    extract_with_llm,
    import_openie,
)
from gear_agent.ingest.corpus import count_cut, make_chunker
from gear_agent.ingest.items import Item, passages_from_items, read_items
from gear_agent.llm.client import LLMClient
from gear_agent.llm.errors import LLMConfigError
from gear_agent.llm.usage import UsageDict
from gear_agent.open_index import OpenIndex
from gear_agent.parts import index_parts
from gear_agent.questions import check_question
from gear_agent.registry import DEFAULT_RETRIEVER, check_name, make_retriever
from gear_agent.retrieval.base import Retriever
from gear_agent.retrieval.filtering import checked_where
from gear_agent.retrieval.records import CitedPassage, PassageRecord, cite, passage_records
from gear_agent.sources import DeleteResult, delete_passages, sync_passages
from gear_agent.store import open_store
from gear_agent.store.backends import backend
from gear_agent.text.token_chunking import Chunker

if TYPE_CHECKING:
    from langchain_core.retrievers import BaseRetriever
    from langgraph.graph.state import CompiledStateGraph

    from gear_agent.extraction import CostEstimate


def _noop(stage: str, done: int, total: int) -> None:
    return None


@dataclass(frozen=True)
class Answer:
    """What :meth:`Gear.ask` returns.

    Attributes:
        question: The question asked.
        answer: The answer (None when the model gave none).
        passages: The final ranked passages the answer rests on, with their triple chains.
        gist_memory: The triples the agent gathered, in order.
        tokens: LLM usage, in total and per node (``{"input", "output", "by_node"}``).
        iterations: Iterations of the loop run.
        stop_reason: ``"answerable"`` or ``"max_iterations"``.
        queries: Every retrieval query used, in order.
        dropped: Reader items, replies, citations and calls that were left out, with why.
        citations: The passages the answer cites, numbered by their place in this list
            (1-based), each with the chain of triples that reached it and the quote the
            model gave as support (when it is really in the passage); only passages the
            QA prompt was shown can be cited.
    """

    question: str
    answer: str | None
    passages: list[PassageRecord]
    gist_memory: list[tuple[str, str, str]]
    tokens: UsageDict
    iterations: int
    stop_reason: str | None
    queries: list[str] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)
    citations: list[CitedPassage] = field(default_factory=list)


class Gear:
    """Graph-enhanced retrieval over one index: ``index``, ``retrieve``, ``ask``.

    Args:
        index_dir: The embedded index's folder (see ``create``); the
            ``GEAR_INDEX_DIR`` setting when None. With ``backend="elasticsearch"`` the
            index lives in the cluster at ``es_url`` instead.
        chat_model: A LangChain chat model, or a model name: ``"provider:model"``
            (``"openai:gpt-4o-mini"``, ``"ollama:llama3.1"``, ...) or a plain name for an
            OpenAI-compatible server (``OPENAI_BASE_URL``). None: ``GEAR_LLM_MODEL``. Only
            extraction, :meth:`ask` and the LLM retrievers need one.
        embedding_model: A sentence-transformers name or folder, ``"hashing-384"`` (a
            model-free stand-in), a gear-agent ``Embedder`` or a LangChain ``Embeddings``.
            None: ``GEAR_EMBEDDING_MODEL`` (all-MiniLM-L6-v2).
        settings: Settings to start from; ``GearSettings()`` (the ``GEAR_*`` environment)
            when None.
        create: Create the index when there is none, announcing it with a
            :class:`~gear_agent.errors.GearWarning` (a mistyped folder is then seen at
            once); False: a missing index is a ``StoreError``.
        **overrides: Any other setting by its field name (``top_k=10``, ``beam_width=5``,
            ``backend="elasticsearch"``, ``es_url=...``).

    Attributes:
        settings: The settings in force.
        open_index: The open index: its settings, embedder, store and query encoder
            (:class:`~gear_agent.open_index.OpenIndex`; formerly ``Gear.runtime``).
        parts: The parts assembled over it once (:func:`~gear_agent.parts.index_parts`),
            shared by the agent and every retriever (one PPR graph).

    Raises:
        SettingsError: A setting has a value that cannot be used.
        StoreError: The index cannot be opened (another embedding model, unreachable
            cluster, a file where the folder should be).
    """

    def __init__(
        self,
        index_dir: str | Path | None = None,
        *,
        chat_model: Any | None = None,
        embedding_model: Any | None = None,
        settings: GearSettings | None = None,
        create: bool = True,
        **overrides: Any,
    ) -> None:
        values = dict(overrides)
        if index_dir is not None:
            values["index_dir"] = Path(index_dir)
        if isinstance(embedding_model, str):
            values["embedding_model"] = embedding_model
        if isinstance(chat_model, str):
            values["llm_model"] = chat_model
        if settings is None:
            self.settings = settings_from(**values)
        else:
            self.settings = settings_from(**{**settings.model_dump(exclude_unset=True), **values})
        embedder = _embedder(embedding_model, self.settings)
        exists = backend(self.settings.backend).exists
        new = exists is not None and not exists(self.settings)
        store = open_store(self.settings, embedder, create=create)
        if new and create:
            warnings.warn(f"no index at {self.settings.index_dir}: created a new, empty one "
                          "(Gear(..., create=False) refuses instead)", GearWarning, stacklevel=2)
        self.open_index = OpenIndex(self.settings, embedder, store, QueryEncoder(embedder))
        self.parts = index_parts(self.open_index)  # shared by the agent and every retriever
        self._chat_model = None if isinstance(chat_model, str) else chat_model
        self._llm: LLMClient | None = None
        self._agent: CompiledStateGraph | None = None
        self._retrievers: dict[str, Retriever] = {}

    # ---- parts -------------------------------------------------------------
    @property
    def runtime(self) -> OpenIndex:
        """Deprecated: the open index is :attr:`open_index`."""
        warn_deprecated("Gear.runtime is now Gear.open_index", removed_in=NEXT_REMOVAL)
        return self.open_index

    @property
    def store(self) -> Any:
        """The index (a :class:`~gear_agent.store.base.Store`)."""
        return self.open_index.store

    @property
    def llm(self) -> LLMClient:
        """The LLM client (retries, token accounting, cache), built on first use.

        Raises:
            LLMConfigError: No chat model was given and none is configured.
        """
        if self._llm is None:
            self._llm = LLMClient.from_settings(self.settings, self._chat_model)
        return self._llm

    @property
    def agent(self) -> CompiledStateGraph:
        """The compiled GEAR agent (LangGraph): ``invoke``, ``stream``, ``ainvoke``, ...;
        ``context={"model": ...}`` picks another chat model for a run (``GEAR_LLM_MODELS``)."""
        if self._agent is None:
            from gear_agent.agent.graph import build_graph
            from gear_agent.agent.models import ChatModels

            models = ChatModels(self.settings, self.llm)
            self._agent = build_graph(self.parts, models, self.settings).compile(name="gear")
        return self._agent

    # ---- indexing ----------------------------------------------------------
    def index(
        self,
        items: Item | Iterable[Item],
        *,
        openie: str | Path | None = None,
        extract: bool | None = None,
        progress: Progress | None = None,
        sync: bool = True,
        prune: bool = False,
        max_cost: float | None = None,
    ) -> IndexReport:
        """Bring the index in line with ``items`` and extract their triples; only new or
        changed passages are embedded.

        Each source the items name owns its passages (sync by source): a file indexed again
        keeps its unchanged chunks untouched (not embedded or extracted again), and its
        edited or removed chunks are replaced or deleted with their triples, in one commit.
        Plain strings belong to no source and are only added.

        Args:
            items: Strings, dicts (``title``, ``text``, ``source``; any other keys kept as
                metadata), LangChain ``Document``s, or a ``pathlib.Path`` to a corpus file or
                folder; one item or an iterable of them.
            openie: A HippoRAG-format OpenIE file whose triples to import for these passages.
            extract: Extract triples with the chat model for every passage without any.
                None: extract when a chat model is configured and no ``openie`` is given.
            progress: Called as ``progress(stage, done, total)``.
            sync: Replace each source's old passages (True); False only adds.
            prune: Also delete the passages of files no longer under a folder given.
            max_cost: Stop extracting once the run has cost this many dollars (the
                ``extract_max_tokens`` setting caps tokens); the rest resumes next time.

        Returns:
            What the run did: passages added, replaced, removed and unchanged, triples added,
            removed and unchanged, the extraction summary (tokens, failures: failed passages
            stay unextracted, so calling ``index`` again resumes), and warnings to read.

        Example:
            >>> gear.index(Path("docs"), prune=True).passages_replaced  # doctest: +SKIP
            1
        """
        settings = self.settings
        progress = progress or _noop
        chunker = self._chunker()
        read = read_items(items, settings.chunk_words, settings.chunk_overlap_words,
                          settings.record_max_words, chunker=chunker)
        report = IndexReport()
        if chunker.counter.name != "words":
            report.passages_cut = count_cut(read.passages, chunker)
        llm = self._extraction_llm(extract, openie is not None, report)
        budget = ExtractionBudget.of(settings, max_cost) if llm is not None else None
        if sync:
            sync_passages(self.store, read.passages, read.sources, report, progress,
                          prune=read.folders if prune else ())
        else:
            add_passages(self.store, read.passages, report, progress)
        if openie is not None:
            import_openie(self.store, Path(openie), report, progress,
                          drop_ungrounded=settings.ground_openie)
        if llm is not None:
            from gear_agent.prompts import load_prompt

            summary = extract_with_llm(
                self.store, llm, report, progress, concurrency=settings.llm_concurrency,
                prompt=load_prompt("extraction", settings.prompts_dir),
                ground=settings.ground_triples, budget=budget,
            )
            report.warnings.extend(summary.warnings())
        if report.passages_cut:
            report.warnings.append(cut_warning(report.passages_cut, chunker))
        for warning in report.warnings:  # in the report, and where a person sees them
            warnings.warn(warning, GearWarning, stacklevel=2)
        return report

    def _chunker(self) -> Chunker:
        s = self.settings
        return make_chunker(self.open_index.embedder.tokenizer(), s.chunk_words, s.chunk_overlap_words)

    def estimate_cost(self, items: Item | Iterable[Item]) -> CostEstimate:
        """Tokens and dollars that extracting triples from ``items`` would cost; sends nothing."""
        from gear_agent.extraction import estimate_cost

        s = self.settings
        passages = passages_from_items(items, s.chunk_words, s.chunk_overlap_words, s.record_max_words,
                                       chunker=self._chunker())
        return estimate_cost(passages, s)

    def _extraction_llm(self, extract: bool | None, has_openie: bool, report: IndexReport) -> LLMClient | None:
        if extract is False or (extract is None and has_openie):
            return None
        try:
            return self.llm
        except LLMConfigError as exc:
            if extract:
                raise
            report.warnings.append(
                "no chat model configured, so no triples were extracted: graph retrievers "
                "give the base ranking until you index with chat_model= or openie= "
                f"({' '.join(str(exc).split())[:120]}...)"
            )
            return None

    def delete(
        self, ids: Sequence[str] | None = None, *, source: str | None = None, dry_run: bool = False
    ) -> DeleteResult:
        """Delete passages by id, and/or every passage of a ``source``, with their triples.

        ``source`` is a file however named (relative, absolute, ``./``, through a symlink:
        one canonical path), or every file under a folder, or a name a caller gave;
        ``a/corpus.json`` never matches ``b/corpus.json``. Ids that are not stored, and a
        source that matches nothing, are reported with a :class:`GearWarning` (and in the
        result), never ignored silently.

        Args:
            ids: Passage ids.
            source: A file or folder path, or a source name as stored.
            dry_run: Only say what would be deleted.

        Returns:
            A :class:`~gear_agent.sources.DeleteResult`: ``passages`` (the passages deleted,
            or that would be: id, title, text, source), ``ids``, ``triples`` (how many went
            with them), ``unknown_ids``; ``len()`` is the number of passages.

        Example:
            >>> gear.delete(source="reports/2024.json", dry_run=True).ids  # doctest: +SKIP
            ['p-...']
        """
        result = delete_passages(self.store, list(ids or ()), source=source, dry_run=dry_run)
        for message in result.messages():
            warnings.warn(message, GearWarning, stacklevel=2)
        return result

    # ---- retrieval ---------------------------------------------------------
    def retriever(self, name: str = DEFAULT_RETRIEVER) -> Retriever:
        """The retriever called ``name`` (see ``gear retrievers``), built once and kept."""
        spec = check_name(name)
        if spec.name not in self._retrievers:
            llm = self.llm if spec.needs_llm else None
            self._retrievers[spec.name] = make_retriever(spec.name, self.parts, llm)
        return self._retrievers[spec.name]

    def retrieve(
        self,
        question: str,
        k: int | None = None,
        retriever: str = DEFAULT_RETRIEVER,
        where: WhereInput | None = None,
    ) -> list[PassageRecord]:
        """The top ``k`` passages for ``question``, best first, each with its score and the
        chain of triples that reached it.

        Args:
            question: The question or query.
            k: Passages to return; ``top_k`` (15) when None.
            retriever: A retriever name (``gear retrievers`` lists them); ``ppr`` by
                default, the best LLM-free row measured on both dev sets
                (:data:`~gear_agent.registry.DEFAULT_WHY`).
            where: Only passages that pass this filter, applied before ranking:
                ``{"source": "reports/2024", "year": {"$gte": 2020}}`` or
                ``["source=reports/2024", "year>=2020"]`` (see :mod:`gear_agent.filters`).

        Raises:
            FilterError: ``where`` cannot be read, or no passage passes it
                (:class:`~gear_agent.retrieval.filtering.NothingMatchesError`).

        Example:
            >>> gear.retrieve("Who founded the observatory?", k=3, where={"year": {"$gte": 1900}})  # doctest: +SKIP
        """
        question = check_question(question, self.settings.max_question_chars)
        k = self.settings.top_k if k is None else _positive(k, "k")
        self._warn_if_empty()
        with self.store.snapshot():  # one query, one commit: the ranking and the records
            parsed = checked_where(self.store, where)
            ranked = self.retriever(retriever).retrieve(question, k, parsed)
            return passage_records(self.store, ranked)

    def ask(
        self,
        question: str,
        *,
        max_iterations: int | None = None,
        top_k: int | None = None,
        model: str | None = None,
        where: WhereInput | None = None,
        stream: Callable[[str], object] | None = None,
    ) -> Answer:
        """Run the GEAR agent: retrieve, read into the gist memory, reason, rewrite, answer
        with numbered citations of the passages the answer rests on.

        Args:
            question: The question.
            max_iterations: Iterations at most; the ``max_iterations`` setting when None.
            top_k: Passages in the final ranking; the ``top_k`` setting when None.
            model: Another chat model for this question (``"provider:model"``); it must be
                listed in ``GEAR_LLM_MODELS`` (``llm_models=``). None: the configured one.
            where: Only passages that pass this filter are retrieved (as in :meth:`retrieve`).
            stream: Called with each piece of the answer's text as the chat model writes
                it (a model that streams: ``ChatOpenAI``, Ollama, ...); the pieces joined
                are the answer. A model that does not stream calls it never.

        Example:
            >>> answer = gear.ask("Who was the spouse of the founder of the Kestrel Observatory?")  # doctest: +SKIP
            >>> answer.answer, [(c.number, c.passage.title) for c in answer.citations]  # doctest: +SKIP
            ('Ilse Brenner', [(1, 'Oskar Brenner')])
            >>> gear.ask("Who founded it?", stream=lambda text: print(text, end="", flush=True))  # doctest: +SKIP
        """
        state: dict[str, Any] = {"question": check_question(question, self.settings.max_question_chars)}
        self._warn_if_empty()
        if max_iterations is not None:
            state["max_iterations"] = _positive(max_iterations, "max_iterations")
        if top_k is not None:
            state["top_k"] = _positive(top_k, "top_k")
        parsed = parse_where(where)  # the agent's start node checks that something passes
        if parsed is not None:
            state["where"] = parsed.to_dict()
        context = {"model": model} if model else None
        if stream is None:
            result = self.agent.invoke(state, context=context)
        else:
            from gear_agent.agent.streaming import run_events

            result = {}
            for event in run_events(self.agent, state, context=context):
                if event.kind == "token":
                    stream(event.data["text"])
                elif event.kind == "final":
                    result = event.data
        passages = [PassageRecord.from_dict(p) for p in result.get("passages", [])]
        return Answer(
            question=state["question"],
            answer=result.get("answer"),
            passages=passages,
            gist_memory=[tuple(t) for t in result.get("gist_memory", [])],  # type: ignore[misc]
            tokens=result.get("tokens") or {"input": 0, "output": 0, "by_node": {}},
            iterations=int(result.get("iterations") or 0),
            stop_reason=result.get("stop_reason"),
            queries=list(result.get("queries", [])),
            dropped=list(result.get("dropped", [])),
            citations=cite(result.get("citations") or [], passages),
        )

    def _warn_if_empty(self) -> None:
        if self.store.passages.count() == 0:
            warnings.warn(f"the index at {self.settings.index_dir} holds no passages, so nothing "
                          "can be retrieved: add some with Gear.index(...)", GearWarning, stacklevel=3)

    def as_retriever(
        self, retriever: str = DEFAULT_RETRIEVER, k: int = 5, where: WhereInput | None = None
    ) -> BaseRetriever:
        """A LangChain ``BaseRetriever`` over ``retriever``: Documents with the passage text,
        and ``id``, ``title``, ``source``, ``score``, ``chain`` and the passage's metadata;
        ``where`` restricts every search to passages that pass it."""
        from gear_agent.agent.langchain_retriever import GearLangChainRetriever

        parsed = checked_where(self.store, where)
        return GearLangChainRetriever(
            retriever=self.retriever(retriever), store=self.store, k=k,
            where=None if parsed is None else parsed.to_dict(),
        )

    # ---- lifecycle ---------------------------------------------------------
    def close(self) -> None:
        """Release the index (locks, connections)."""
        self.store.close()

    def __enter__(self) -> Gear:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = backend(self.settings.backend).location(self.settings)
        return (
            f"Gear({where!r}, passages={self.store.passages.count()}, "
            f"triples={self.store.triples.count()}, embedding_model={self.open_index.embedder.name!r})"
        )


def _embedder(embedding_model: Any, settings: GearSettings) -> Embedder:
    if isinstance(embedding_model, Embedder):
        return embedding_model
    if embedding_model is not None and not isinstance(embedding_model, str):
        from gear_agent.embedding.langchain import LangChainEmbedder

        return LangChainEmbedder(embedding_model)
    return make_embedder(settings)


def _positive(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        from gear_agent.errors import SettingsError

        raise SettingsError(f"{what} must be a positive integer, got {value!r}")
    return value
