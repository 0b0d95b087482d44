"""All settings in one place: one pydantic-settings object, environment prefix ``GEAR_``.

Defaults are the GEAR paper's values (Shen et al., 2024/25, section 4 and
appendix B) where the paper gives one. Every field can be set from the
environment, e.g. ``GEAR_EMBEDDING_MODEL=all-mpnet-base-v2`` or
``GEAR_BEAM_WIDTH=5``, or passed as a keyword: ``GearSettings(beam_width=5)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from gear_agent.errors import SettingsError
from gear_agent.types import ResponseFormatMode


class GearSettings(BaseSettings):
    """Configuration of the index, retrieval, expansion, the agent and its services."""

    model_config = SettingsConfigDict(env_prefix="GEAR_", extra="forbid", validate_default=True)

    # ---- index -------------------------------------------------------------
    index_dir: Path = Field(Path(".gear/index"), description="Directory of the embedded index.")
    backend: Literal["embedded", "elasticsearch"] = Field(
        "embedded", description="Where passages and triples live."
    )
    chunk_words: int = Field(
        200, ge=20, description="Words per passage when long texts are split (folder ingest)."
    )
    chunk_overlap_words: int = Field(30, ge=0, description="Words shared by consecutive chunks.")
    record_max_words: int = Field(
        1000,
        ge=20,
        description="A JSON/JSONL record or dict longer than this is split into chunk_words "
        "chunks like folder input (title kept, one id per chunk); shorter ones stay whole.",
    )
    prompt_passage_tokens: int = Field(
        12_000,
        ge=200,
        description="Budget for the passages of one reader or QA prompt (estimated at 4 "
        "characters a token); the longest passages are cut first, the instructions never.",
    )

    # ---- embeddings --------------------------------------------------------
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

    # ---- LLM ---------------------------------------------------------------
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
    prompts_dir: Path | None = Field(None, description="Folder of your own prompt templates.")

    # ---- retrieval ---------------------------------------------------------
    rrf_k: int = Field(60, ge=1, description="Reciprocal Rank Fusion constant (ranks are 1-based).")
    base_k: int = Field(15, ge=1, description="Passages the base retriever hands to expansion.")
    top_k: int = Field(15, ge=1, description="Passages returned to the caller.")
    base_retriever: str = Field(
        "hybrid", description="The agent's and SyncGE's base retriever (their retrieve "
        "step): any retriever of `gear retrievers` that needs no LLM (bm25, dense, hybrid, "
        "ppr, hybrid+naive_ge, ...); checked when the agent is built.")
    link_mode: Literal["bm25", "dense", "hybrid"] | None = Field(
        None, description="The search of tripleLink and passageLink; default: "
        "base_retriever when it is bm25, dense or hybrid, else hybrid.")
    bm25_tokenizer: Literal["standard", "word"] = Field(
        "standard", description="'standard' approximates Elasticsearch's standard analyzer; "
        "'word' is lower-cased \\w+ runs (HippoRAG-style scripts).",
    )

    # ---- diverse triple beam search (paper, Algorithm 1) ---------------------
    beam_width: int = Field(10, ge=1, description="b: beams kept.")
    beam_length: int = Field(2, ge=1, description="l: triples per beam.")
    beam_neighbours: int = Field(100, ge=1, description="Neighbours per beam, most query-similar.")
    beam_gamma: float | None = Field(None, gt=0, description="gamma; defaults to 2 x beam_width.")
    beam_scorer: Literal["auto", "sum", "concat", "rerank", "shortlist"] = Field(
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

    # ---- grounding -----------------------------------------------------------
    ground_triples: bool = Field(
        True,
        description="Drop LLM-extracted and reader triples whose subject or object is not "
        "found in their source text (text/grounding.py); counted as dropped.",
    )
    ground_openie: bool = Field(
        False,
        description="Also drop ungrounded triples of an imported OpenIE file (always counted).",
    )

    # ---- agent -------------------------------------------------------------
    max_iterations: int = Field(4, ge=1, le=16, description="4 for MuSiQue, 2 for 2Wiki/HotpotQA.")
    expansion: Literal["beam", "ppr", "both"] = Field(
        "ppr", description="Expansion node: PPR (measured best, README), beam (the paper), both."
    )
    passage_link_k: int = Field(5, ge=1, description="Hits per index in passageLink.")
    answer: bool = Field(True, description="Answer the question from the top passages.")
    answer_top_k: int = Field(5, ge=1, description="Passages shown to the QA prompt.")
    max_question_chars: int = Field(2000, ge=1, description="Longer questions are refused.")
    deadline_s: float = Field(
        300.0,
        ge=0,
        description="Seconds one question may take in all (every LLM call, retry and "
        "Retry-After wait); then the run stops with stop_reason='deadline'. 0: no deadline.",
    )

    # ---- PPR (HippoRAG 2) --------------------------------------------------
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

    # ---- Elasticsearch -----------------------------------------------------
    es_url: str | None = Field(None, description="Cluster URL, e.g. http://localhost:9200.")
    es_api_key: str | None = None
    es_username: str | None = None
    es_password: str | None = None
    es_verify_certs: bool = True
    es_index_prefix: str = Field("gear", pattern=r"^[a-z0-9][a-z0-9_\-]*$")
    es_cache_dir: Path = Field(
        Path(".gear/es-cache"),
        description="Local folder for what is derived from an Elasticsearch index (the PPR "
        "graph cache), one subfolder per cluster and index prefix; never inside the cluster.",
    )

    # ---- server (gear serve) -----------------------------------------------
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

    # ---- tracing -----------------------------------------------------------
    trace_dir: Path | None = Field(None, description="Folder for JSON Lines run trees.")
    trace_max_bytes: int = Field(20_000_000, ge=10_000, description="Rotate a trace file past this.")

    @model_validator(mode="after")
    def _check(self) -> GearSettings:
        if self.chunk_overlap_words >= self.chunk_words:
            raise ValueError(
                f"chunk_overlap_words ({self.chunk_overlap_words}) must be smaller than "
                f"chunk_words ({self.chunk_words})"
            )
        return self

    @property
    def gamma(self) -> float:
        """The beam rank-penalty constant: ``beam_gamma`` or 2 x ``beam_width`` (paper)."""
        return self.beam_gamma if self.beam_gamma is not None else 2.0 * self.beam_width


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
