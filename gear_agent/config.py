"""All settings in one place: typed sections, composed into one pydantic-settings object.

Each component's settings are a *section*: a pydantic model declaring its fields once, with
their defaults, bounds and descriptions (:class:`LLMSettings`, :class:`BeamSettings`,
:class:`PPRSettings`, ...). :class:`GearSettings` inherits every section, so it *is* each of
them: a component takes its section as a parameter (``TripleBeamSearch(..., settings:
BeamSettings)``) and is given the whole ``GearSettings`` or a section built on its own
(``BeamSettings(beam_width=2)``, validated by the same declarations), with nothing copied
between the two. The field names are the flat ``GEAR_*`` names (``GEAR_BEAM_WIDTH`` is
``beam_width`` in every section and in ``GearSettings``), so the environment variables,
``GearSettings(beam_width=5)`` and ``settings.beam_width`` mean one thing everywhere.

Defaults are the GEAR paper's values (Shen et al., 2024/25, section 4 and appendix B)
where the paper gives one. Every field can be set from the environment, e.g.
``GEAR_EMBEDDING_MODEL=all-mpnet-base-v2`` or ``GEAR_BEAM_WIDTH=5``, or passed as a
keyword: ``GearSettings(beam_width=5)``. Only ``GearSettings`` reads the environment.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from gear_agent.errors import SettingsError
from gear_agent.types import BaseMode, ResponseFormatMode

Expansion = Literal["beam", "ppr", "both"]
"""How an iteration expands its linked triples: the paper's beam search, PPR, or RRF of both."""
EXPANSIONS: tuple[Expansion, ...] = get_args(Expansion)

BeamScorer = Literal["sum", "concat", "rerank", "shortlist"]
"""A sequence scorer of the beam search (:mod:`gear_agent.expansion.scorers`)."""


class Section(BaseModel):
    """A group of settings one component reads; :class:`GearSettings` inherits every one."""

    model_config = ConfigDict(extra="forbid", validate_default=True)

    @classmethod
    def default_of(cls, name: str) -> Any:
        """The declared default of setting ``name``: what a signature that defaults to None
        means, so that the value is written once, here.

        Example:
            >>> RetrievalSettings.default_of("rrf_k")
            60
        """
        return cls.model_fields[name].get_default(call_default_factory=True)


def split_names(names: str) -> tuple[str, ...]:
    """Names from a comma-separated setting, stripped, empty ones left out.

    Example:
        >>> split_names(" ollama:llama3.1, anthropic:claude-3-5-haiku-latest ,")
        ('ollama:llama3.1', 'anthropic:claude-3-5-haiku-latest')
    """
    return tuple(name.strip() for name in names.split(",") if name.strip())


class StoreSettings(Section):
    """Where the index lives and how it tokenises (``open_store``)."""

    index_dir: Path = Field(Path(".gear/index"), description="Directory of the embedded index.")
    backend: Literal["embedded", "elasticsearch"] = Field(
        "embedded", description="Where passages and triples live."
    )
    bm25_tokenizer: Literal["standard", "word"] = Field(
        "standard", description="'standard' approximates Elasticsearch's standard analyzer; "
        "'word' is lower-cased \\w+ runs (HippoRAG-style scripts).",
    )


class SnapshotSettings(Section):
    """Snapshots of the index (``gear snapshot``; ``gear check --repair`` restores the newest
    good one; :mod:`gear_agent.store.embedded.snapshot`)."""

    snapshot_every: float = Field(
        0.0, ge=0, description="gear serve snapshots the index every this many seconds when it has "
        "new commits (0: never); a snapshot copies index.sqlite with SQLite's online backup.",
    )
    snapshot_keep: int = Field(3, ge=1, description="Snapshots kept (the newest); older ones are removed.")
    es_snapshot_repository: str | None = Field(
        None, description="Elasticsearch: the snapshot repository that `gear snapshot` writes to and "
        "`gear snapshot --restore` reads (default PREFIX-snapshots, registered as an 'fs' repository "
        "under the cluster's path.repo when missing).",
    )


class IngestSettings(Section):
    """How texts are split into passages (folder and record input)."""

    chunk_words: int = Field(
        200, ge=20, description="Words per passage when long texts are split (folder ingest) and the "
        "embedder has no tokenizer; with one, a chunk is what the encoder reads (its max sequence "
        "length in its own tokens, title included).",
    )
    chunk_overlap_words: int = Field(30, ge=0, description="Words shared by the windows of a long "
                                     "paragraph (with a tokenizer: the same share of its tokens).")
    record_max_words: int = Field(
        1000,
        ge=20,
        description="A JSON/JSONL record or dict longer than this is split into chunk_words "
        "chunks like folder input (title kept, one id per chunk); shorter ones stay whole.",
    )

    @model_validator(mode="after")
    def _check_overlap(self) -> IngestSettings:
        if self.chunk_overlap_words >= self.chunk_words:
            raise ValueError(
                f"chunk_overlap_words ({self.chunk_overlap_words}) must be smaller than "
                f"chunk_words ({self.chunk_words})"
            )
        return self


class GroundingSettings(Section):
    """Which extracted and reader triples are checked against their source text."""

    ground_triples: bool = Field(
        True,
        description="Drop LLM-extracted and reader triples whose subject or object is not "
        "found in their source text (text/grounding.py); counted as dropped.",
    )
    ground_openie: bool = Field(
        False,
        description="Also drop ungrounded triples of an imported OpenIE file (always counted).",
    )


class EmbeddingSettings(Section):
    """The embedding model (``make_embedder``)."""

    embedding_model: str = Field(
        "sentence-transformers/all-MiniLM-L6-v2",
        description="sentence-transformers name or local path, or a model name served at "
        "embedding_base_url.",
    )
    embedding_base_url: str | None = Field(
        None, description="OpenAI-compatible /v1 base URL; when set, embeddings come from there."
    )
    embedding_api_key: str | None = Field(None, description="API key for embedding_base_url.")
    embedding_batch_size: int = Field(64, ge=1, description="Texts per embedding batch.")
    embedding_device: str = Field("cpu", description="torch device for sentence-transformers.")


class LLMSettings(Section):
    """How the chat model is built and called (``LLMClient.from_settings``, ``ChatModels``)."""

    llm_model: str = Field(
        "gpt-4o-mini",
        description="Chat model: 'provider:model' (any LangChain integration) or a plain "
        "name for the OpenAI API / an OpenAI-compatible server.",
    )
    llm_models: str = Field(
        "",
        description="Comma-separated other chat models a run may choose (LangGraph "
        "context={'model': ...}); '*' allows any. Empty: only llm_model.",
    )
    llm_temperature: float = Field(0.0, ge=0.0, le=2.0)
    llm_max_tokens: int = Field(512, ge=1, description="Completion token cap per call.")
    llm_timeout_s: float = Field(60.0, gt=0, description="Per-request timeout.")
    llm_max_retries: int = Field(4, ge=0, le=10, description="Retries on 429/5xx/timeouts.")
    llm_response_format: ResponseFormatMode = Field(
        "text",
        description="How JSON replies are asked for: 'text' (the prompt only), "
        "'json_object' (OpenAI JSON mode), 'json_schema' (OpenAI structured outputs; vLLM, "
        "llama-server, Ollama), 'json_object_schema' (schema inline: llama-cpp-python's "
        "server constrains decoding to it). See gear_agent/llm/response_format.py.",
    )
    llm_cache_dir: Path | None = Field(
        None, description="On-disk response cache; a repeated evaluation then costs nothing."
    )
    llm_concurrency: int = Field(4, ge=1, le=64, description="Concurrent LLM calls (extraction, eval).")
    extract_max_tokens: int | None = Field(
        None, ge=1, description="Budget of one extraction run in tokens (prompt + completion, as "
        "billed): the run stops cleanly once it is spent, what was extracted is kept and the rest "
        "resumes on the next run. None: no budget.",
    )

    @property
    def run_models(self) -> tuple[str, ...]:
        """``llm_models`` as names: the other models a run may choose (``"*"``: any).

        Example:
            >>> LLMSettings(llm_models=" ollama:llama3.1 ,, anthropic:claude ").run_models
            ('ollama:llama3.1', 'anthropic:claude')
        """
        return split_names(self.llm_models)


class PromptSettings(Section):
    """Where prompt templates come from, and how much passage text one prompt shows."""

    prompts_dir: Path | None = Field(None, description="Folder of your own prompt templates.")
    prompt_passage_tokens: int = Field(
        12_000,
        ge=200,
        description="Budget for the passages of one reader or QA prompt (estimated at 4 "
        "characters a token); the longest passages are cut first, the instructions never.",
    )
    reader_passages: int | None = Field(
        None, ge=1, description="Base passages the reader reads per iteration (the first of "
        "the base list); None: all base_k of them (15). Fewer passages, fewer prompt tokens: "
        "docs/quality.md has the count for 5, 8, 10 and 15.")
    reader_full_passages: int | None = Field(
        None, ge=1, description="Of the passages the reader reads, the first N with their "
        "text and the rest by title only; None: every one with its text.")


class RetrievalSettings(Section):
    """Base retrieval and fusion: what every retriever and the agent's searches read."""

    rrf_k: int = Field(60, ge=1, description="Reciprocal Rank Fusion constant (ranks are 1-based).")
    base_k: int = Field(15, ge=1, description="Passages the base retriever hands to expansion.")
    top_k: int = Field(15, ge=1, description="Passages returned to the caller.")
    base_retriever: str = Field(
        "ppr", description="The agent's and SyncGE's base retriever (their retrieve "
        "step): any retriever of `gear retrievers` that needs no LLM (bm25, dense, hybrid, "
        "ppr, hybrid+naive_ge, ...); checked when the agent is built. ppr: the agent's "
        "replayed R@5 92.3 on MuSiQue (hybrid 87.1) and 96 on HotpotQA (93) in fewer "
        "iterations (docs/quality.md).")
    link_mode: BaseMode | None = Field(
        None, description="The search of tripleLink and passageLink; default: "
        "base_retriever when it is bm25, dense or hybrid, else hybrid.")

    @property
    def link_search_mode(self) -> BaseMode:
        """The search of tripleLink and passageLink: ``link_mode``, else the base retriever
        when it is ``bm25``, ``dense`` or ``hybrid``, else ``hybrid``.

        Example:
            >>> RetrievalSettings(base_retriever="ppr").link_search_mode
            'hybrid'
            >>> RetrievalSettings(base_retriever="dense").link_search_mode
            'dense'
        """
        if self.link_mode is not None:
            return self.link_mode
        base = self.base_retriever
        return base if base in get_args(BaseMode) else "hybrid"  # type: ignore[return-value]


class BeamSettings(Section):
    """The diverse triple beam search (paper, Algorithm 1), the paper's values as defaults."""

    beam_width: int = Field(10, ge=1, description="b: beams kept.")
    beam_length: int = Field(2, ge=1, description="l: triples per beam.")
    beam_neighbours: int = Field(100, ge=1, description="Neighbours per beam, most query-similar.")
    beam_gamma: float | None = Field(None, gt=0, description="gamma; defaults to 2 x beam_width.")
    beam_scorer: Literal["auto", BeamScorer] = Field(
        "auto", description="Sequence scorer: normalised sum of stored triple vectors, the "
        "paper's encoding of the concatenated triples, sum with the best beam_rerank "
        "candidates per beam re-scored by concat, or sum with the best beam_shortlist "
        "sequences of each step (over all beams, rank penalty applied) re-scored by concat; "
        "auto: shortlist where an LLM is in the loop (syncge, gear), sum for the LLM-free "
        "naive_ge.",
    )
    beam_rerank: int = Field(
        3, ge=1, description="rerank scorer: candidates per beam and step re-scored by concat.")
    beam_shortlist: int | None = Field(
        None, ge=1, description="shortlist scorer: sequences per step re-scored by concat; "
        "defaults to 2 x beam_width.")
    beam_encoder: Literal["model", "int8"] = Field(
        "model", description="Encoder of sequence texts for concat, rerank and shortlist: the "
        "embedding model, or its int8 ONNX Runtime copy (CPU only, about 2.5x faster; "
        "pip install 'gear-agent[int8]'; exported once from the local model folder and cached).",
    )
    beam_diverse: bool = Field(True, description="Rank penalty on; False is plain beam search.")

    @property
    def gamma(self) -> float:
        """The beam rank-penalty constant: ``beam_gamma`` or 2 x ``beam_width`` (paper)."""
        return self.beam_gamma if self.beam_gamma is not None else 2.0 * self.beam_width

    @property
    def shortlist_size(self) -> int:
        """Sequences per step the ``shortlist`` scorer re-scores: ``beam_shortlist`` or
        2 x ``beam_width``."""
        return self.beam_shortlist if self.beam_shortlist is not None else 2 * self.beam_width

    def scorer_for(self, llm_in_loop: bool) -> BeamScorer:
        """The scorer a search uses: ``beam_scorer``, with ``auto`` read as ``shortlist``
        where an LLM is in the loop (SyncGE and the agent: the paper's ``concat`` quality
        for tens of ms beside seconds of LLM calls) and ``sum`` for the LLM-free NaiveGE,
        whose whole query takes a few ms.

        Example:
            >>> BeamSettings().scorer_for(True), BeamSettings().scorer_for(False)
            ('shortlist', 'sum')
        """
        if self.beam_scorer == "auto":
            return "shortlist" if llm_in_loop else "sum"
        return self.beam_scorer


class PPRSettings(Section):
    """Personalized PageRank: ``ppr``, ``ppr+filter``, ``hipporag`` and the PPR expansion
    (HippoRAG 2, and HippoRAG 1 for the ``hipporag_*`` fields)."""

    ppr_damping: float = Field(0.5, gt=0, lt=1)
    ppr_synonym_threshold: float = Field(0.8, ge=0, le=1)
    ppr_passage_weight: float = Field(0.05, ge=0)
    ppr_seed_triples: int = Field(5, ge=1, description="Query-to-triple matches used as seeds.")
    ppr_filter: bool = Field(False, description="LLM recognition-memory filter on the seeds.")
    ppr_method: Literal["local", "global"] = Field(
        "local", description="PPR by local push from the seeds (cost follows the seeds' "
        "neighbourhood) or by power iteration over the whole graph (exact; for checking).")
    ppr_tolerance: float = Field(
        1e-7, gt=0, description="Local push: residual per unit of weighted degree left unpushed "
        "(times passages / ppr_dense_passages when the corpus has more passages than that).")
    ppr_dense_passages: int = Field(
        1000, ge=1, description="Local push: the query's nearest passages that get restart mass "
        "(global gives it to every passage).")
    hipporag_seed_phrases: int = Field(
        3, ge=1, description="hipporag: phrase nodes nearest the query used as query nodes "
        "(HippoRAG 1's query_to_node linking, link_top_k 3).")
    hipporag_damping: float = Field(
        0.5, gt=0, lt=1, description="hipporag: probability of following an edge in its PPR.")
    ppr_title_weight: float = Field(
        2.0, ge=0, description="ppr (seeds from the query): weight of the edge joining a "
        "passage to the phrase node its title names; 0: HippoRAG 2's graph (docs/ppr.md).")
    ppr_passage_sharpness: float = Field(
        1.0, ge=1, description="ppr (seeds from the query): power of the normalised dense "
        "score in a passage's restart mass; 1: HippoRAG 2's linear weights (3 was measured: "
        "docs/ppr.md).")
    ppr_query_entities: float = Field(
        0.25, ge=0, description="ppr (seeds from the query): restart mass, over specificity, "
        "of each phrase node the query names (capitalised spans, longest match); 0: none.")
    ppr_expand_title_weight: float = Field(
        0.0, ge=0, description="PPR expansion of the agent and SyncGE (seeds: linked "
        "triples): title edge weight; 0 keeps the walk the LLM replay recorded.")
    ppr_expand_passage_sharpness: float = Field(
        1.0, ge=1, description="PPR expansion of the agent and SyncGE: passage sharpness; "
        "1 keeps the walk the LLM replay recorded.")

    @classmethod
    def hipporag2(cls, **changes: Any) -> PPRSettings:
        """HippoRAG 2's walk exactly: no title edges, linear passage weights, no query
        names; for checks against its formula (``changes`` set other fields)."""
        return cls(**{"ppr_title_weight": 0.0, "ppr_passage_sharpness": 1.0,
                      "ppr_query_entities": 0.0, **changes})

    def knobs(self, seeds_given: bool) -> tuple[float, float, float]:
        """``(title_weight, passage_sharpness, query_entity_weight)`` of a walk whose seeds
        come from the query (``seeds_given`` False) or are given (the agent's linked triples).

        Example:
            >>> PPRSettings().knobs(False), PPRSettings().knobs(True)
            ((2.0, 1.0, 0.25), (0.0, 1.0, 0.0))
        """
        if seeds_given:
            return self.ppr_expand_title_weight, self.ppr_expand_passage_sharpness, 0.0
        return self.ppr_title_weight, self.ppr_passage_sharpness, self.ppr_query_entities


class AgentSettings(RetrievalSettings, PromptSettings, GroundingSettings, BeamSettings, PPRSettings):
    """The GEAR loop (and SyncGE, one step of it): its own knobs, plus the sections its
    steps read (retrieval, prompts, grounding, and its expansions: beam search and PPR)."""

    max_iterations: int = Field(4, ge=1, le=16, description="4 for MuSiQue, 2 for 2Wiki/HotpotQA.")
    expansion: Expansion = Field(
        "ppr", description="Expansion node: PPR (measured best, README), beam (the paper), both."
    )
    passage_link_k: int = Field(5, ge=1, description="Hits per index in passageLink.")
    answer: bool = Field(True, description="Answer the question from the top passages.")
    answer_top_k: int = Field(5, ge=1, description="Passages shown to the QA prompt.")
    max_question_chars: int = Field(2000, ge=1, description="Longer questions are refused.")
    deadline_s: float = Field(
        300.0, ge=0, description="Seconds one question may take in all (every LLM call, "
        "retry and Retry-After wait); then the run stops with stop_reason='deadline'. "
        "0: no deadline.")


class ServeSettings(Section):
    """What ``gear serve`` accepts at its door (:mod:`gear_agent.serve.limits`)."""

    serve_max_body_bytes: int = Field(1_000_000, ge=1_000, description="Largest request body.")
    serve_max_batch: int = Field(16, ge=1, description="Most inputs in one /gear/batch request.")
    serve_max_concurrent: int = Field(
        8, ge=1, description="Most agent runs at once (batch inputs each count); more get 503."
    )
    serve_request_timeout_s: float = Field(
        360.0, gt=0, description="A request whose response has not started by then gets 504."
    )
    serve_body_timeout_s: float = Field(10.0, gt=0, description="Time to receive a request body.")
    serve_header_timeout_s: float = Field(
        10.0, gt=0, description="Time to receive a request line and headers; slower "
        "connections are closed.")
    serve_cors_origins: str = Field(
        "", description="Comma-separated origins allowed by CORS; empty: CORS off."
    )
    api_key: SecretStr | None = Field(
        None, description="GEAR_API_KEY: when set, requests need Authorization: Bearer <key>."
    )
    serve_allowed_hosts: str = Field(
        "", description="Comma-separated host names the server answers to besides the bound "
        "address, localhost, 127.0.0.1 and [::1]; other Host headers get 400.")
    serve_cors_any_origin_writes: bool = Field(
        False, description="Allow GEAR_SERVE_CORS_ORIGINS='*' while write routes are served "
        "(any site could then add and delete documents); refused at start-up otherwise.")
    serve_read_only: bool = Field(
        False, description="Serve the page and the agent without the routes that write to the index.")
    serve_write_key: SecretStr | None = Field(
        None, description="GEAR_SERVE_WRITE_KEY: when set, routes that write to the index need "
        "Authorization: Bearer <key>; reads stay as GEAR_API_KEY says.")
    serve_max_reads: int = Field(
        4, ge=1, description="Most page reads (GET /ui/api/..., schemas) at once; more get 503.")

    @property
    def allowed_origins(self) -> tuple[str, ...]:
        """``serve_cors_origins`` as origins; empty: CORS off.

        Example:
            >>> ServeSettings(serve_cors_origins="https://a.example, ").allowed_origins
            ('https://a.example',)
        """
        return split_names(self.serve_cors_origins)


class TraceSettings(Section):
    """Where run trees are written (:class:`~gear_agent.tracing.jsonl_tracer.JsonlTracer`)."""

    trace_dir: Path | None = Field(None, description="Folder for JSON Lines run trees.")
    trace_max_bytes: int = Field(20_000_000, ge=10_000, description="Rotate a trace file past this.")


def _prefixed_names(section: type[BaseModel], data: Any, prefix: str) -> Any:
    """A section's old short field names (``url=``) as its prefixed ones (``es_url=``),
    with a DeprecationWarning: the one rename shim of every section that gained a prefix."""
    if not isinstance(data, dict):
        return data
    short = [name for name in data if f"{prefix}{name}" in section.model_fields]
    if short:
        from gear_agent._deprecated import NEXT_REMOVAL, warn_deprecated

        warn_deprecated(f"{section.__name__}({', '.join(short)}=...) is now "
                        f"{section.__name__}({', '.join(prefix + n for n in short)}=...)",
                        removed_in=NEXT_REMOVAL, stacklevel=5)
        data = {(f"{prefix}{k}" if k in short else k): v for k, v in data.items()}
    return data


class ElasticsearchSettings(Section):
    """The Elasticsearch backend's cluster, credentials and index names
    (:mod:`gear_agent.store.elasticsearch.client`, ``GEAR_BACKEND=elasticsearch``).

    The short names it had as a dataclass of its own (``url=``, ``index_prefix=``, ...)
    are still accepted by ``ElasticsearchSettings(...)``, with a DeprecationWarning.

    Example:
        >>> ElasticsearchSettings(es_url="http://localhost:9200").es_index_prefix
        'gear'
    """

    es_url: str | None = Field(None, description="Cluster URL, e.g. http://localhost:9200.")
    es_api_key: str | None = Field(None, description="API key; wins over username and password.")
    es_username: str | None = Field(None, description="Basic-auth user; needs es_password.")
    es_password: str | None = Field(None, description="Basic-auth password.")
    es_verify_certs: bool = Field(True, description="Verify the server's TLS certificate.")
    es_index_prefix: str = Field(
        "gear", pattern=r"^[a-z0-9][a-z0-9_\-]*$",
        description="Indices are {prefix}-passages and {prefix}-triples.")
    es_cache_dir: Path = Field(
        Path(".gear/es-cache"),
        description="Local folder for what is derived from an Elasticsearch index (the PPR "
        "graph cache), one subfolder per cluster and index prefix; never inside the cluster.",
    )
    es_exact_bm25: bool = Field(
        False, description="Rescore BM25 hits with exact document lengths (term vectors), as the "
        "embedded store scores, instead of Lucene's one-byte lengths: identical rankings, two more "
        "requests per BM25 search.",
    )

    @model_validator(mode="before")
    @classmethod
    def _short_names(cls, data: Any) -> Any:
        """``url=``, ``index_prefix=``, ... (the old dataclass's names) as ``es_url=``, ..."""
        return data if cls is not ElasticsearchSettings else _prefixed_names(cls, data, "es_")

    @classmethod
    def from_gear(cls, settings: ElasticsearchSettings) -> ElasticsearchSettings:
        """Deprecated: a ``GearSettings`` *is* an :class:`ElasticsearchSettings`; pass it."""
        from gear_agent._deprecated import NEXT_REMOVAL, warn_deprecated

        warn_deprecated("ElasticsearchSettings.from_gear(settings) is not needed: GearSettings is "
                        "an ElasticsearchSettings; pass it as it is", removed_in=NEXT_REMOVAL)
        return settings


class BackendSettings(StoreSettings, SnapshotSettings, ElasticsearchSettings):
    """What a store backend reads (``open_store``, the backend table, ``gear check``,
    snapshots): where the index lives, its snapshots, and the Elasticsearch cluster."""


class SiReRAGSettings(Section):
    """How SiReRAG's trees are built (``gear sirerag build``, :mod:`gear_agent.sirerag`).

    The names it had as a dataclass of its own (``min_propositions=``, ``seed=``, ...) are
    still accepted by ``SiReRAGSettings(...)``, with a DeprecationWarning.

    Example:
        >>> SiReRAGSettings(sirerag_seed=3).sirerag_max_levels
        3
    """

    sirerag_min_propositions: int = Field(
        2, ge=1, description="An entity makes an aggregate when at least this many propositions "
        "name it ('propositions sharing an entity'); 1 would make one per entity.")
    sirerag_min_passages: int = Field(
        1, ge=1, description="... and when they come from at least this many passages (2 keeps "
        "only aggregates that relate passages to each other).")
    sirerag_reduction_dim: int = Field(
        10, ge=1, description="Dimensions the embeddings are reduced to before clustering (PCA; "
        "RAPTOR reduces with UMAP to 10).")
    sirerag_max_clusters: int = Field(
        50, ge=1, description="The most mixture components the BIC search tries at one level.")
    sirerag_threshold: float = Field(
        0.1, gt=0, le=1, description="Soft clustering: a node joins every cluster whose "
        "posterior is at least this (RAPTOR's 0.1); it always joins its most likely one.")
    sirerag_max_cluster_size: int = Field(
        12, ge=1, description="A cluster with more members is clustered again on its own "
        "(RAPTOR reclusters clusters over its token budget).")
    sirerag_max_levels: int = Field(3, ge=1, description="Summary levels above the leaves, at most.")
    sirerag_stop_below: int = Field(
        4, ge=1, description="A level with fewer nodes than this is not clustered further.")
    sirerag_seed: int = Field(
        0, description="Seed of the mixture fits (clustering is deterministic for a seed).")
    sirerag_summary_max_words: int = Field(
        100, ge=1, description="Length the summary prompt asks for.")
    sirerag_concurrency: int = Field(4, ge=1, description="LLM calls in flight at once (full build).")

    @model_validator(mode="before")
    @classmethod
    def _short_names(cls, data: Any) -> Any:
        """``min_propositions=``, ``seed=``, ... (the old dataclass's names) as
        ``sirerag_min_propositions=``, ..."""
        return data if cls is not SiReRAGSettings else _prefixed_names(cls, data, "sirerag_")


class GearSettings(
    BackendSettings,
    IngestSettings,
    EmbeddingSettings,
    LLMSettings,
    AgentSettings,
    ServeSettings,
    TraceSettings,
    SiReRAGSettings,
    BaseSettings,
):
    """Configuration of the index, retrieval, expansion, the agent and its services: every
    section above, read from ``GEAR_*`` environment variables and keywords."""

    model_config = SettingsConfigDict(env_prefix="GEAR_", extra="forbid", validate_default=True)


def settings_from(**values: Any) -> GearSettings:
    """``GearSettings(**values)`` (environment underneath), with a bad value as a
    :class:`~gear_agent.errors.SettingsError` naming the setting, not a pydantic error.

    Example:
        >>> settings_from(beam_width=0)  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        gear_agent.errors.SettingsError: beam_width (GEAR_BEAM_WIDTH): Input should be ...
    """
    try:
        return GearSettings(**values)
    except ValidationError as exc:
        raise SettingsError(describe_validation_error(exc)) from None


def describe_validation_error(exc: ValidationError) -> str:
    """A pydantic error of the settings as one line: each bad field with its variable."""
    parts = []
    for error in exc.errors():
        field = ".".join(str(p) for p in error.get("loc", ())) or "settings"
        variable = f" (GEAR_{field.upper()})" if field in GearSettings.model_fields else ""
        parts.append(f"{field}{variable}: {error.get('msg', 'invalid')}")
    return "; ".join(parts) or str(exc)
