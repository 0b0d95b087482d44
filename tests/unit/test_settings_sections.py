"""Settings from one source: every ``GEAR_*`` name and default, and the sections built from them.

``EXPECTED`` is ``GearSettings``' table before the sections existed (main at e038916: 77
fields), written out by hand: a renamed variable or a changed default fails here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from gear_agent import config
from gear_agent.config import (
    AgentSettings,
    BeamSettings,
    GearSettings,
    LLMSettings,
    PPRSettings,
    Section,
    ServeSettings,
    TraceSettings,
)

EXPECTED = {
    "GEAR_INDEX_DIR": Path(".gear/index"),
    "GEAR_BACKEND": "embedded",
    "GEAR_CHUNK_WORDS": 200,
    "GEAR_CHUNK_OVERLAP_WORDS": 30,
    "GEAR_RECORD_MAX_WORDS": 1000,
    "GEAR_PROMPT_PASSAGE_TOKENS": 12000,
    "GEAR_EMBEDDING_MODEL": "sentence-transformers/all-MiniLM-L6-v2",
    "GEAR_EMBEDDING_BASE_URL": None,
    "GEAR_EMBEDDING_API_KEY": None,
    "GEAR_EMBEDDING_BATCH_SIZE": 64,
    "GEAR_EMBEDDING_DEVICE": "cpu",
    "GEAR_LLM_MODEL": "gpt-4o-mini",
    "GEAR_LLM_MODELS": "",
    "GEAR_LLM_TEMPERATURE": 0.0,
    "GEAR_LLM_MAX_TOKENS": 512,
    "GEAR_LLM_TIMEOUT_S": 60.0,
    "GEAR_LLM_MAX_RETRIES": 4,
    "GEAR_LLM_RESPONSE_FORMAT": "text",
    "GEAR_LLM_CACHE_DIR": None,
    "GEAR_LLM_CONCURRENCY": 4,
    "GEAR_EXTRACT_MAX_TOKENS": None,
    "GEAR_PROMPTS_DIR": None,
    "GEAR_READER_PASSAGES": None,  # added with the reader budget (issue 37)
    "GEAR_READER_FULL_PASSAGES": None,
    "GEAR_RRF_K": 60,
    "GEAR_BASE_K": 15,
    "GEAR_TOP_K": 15,
    "GEAR_BASE_RETRIEVER": "ppr",  # was hybrid; ppr by default since issue 37
    "GEAR_LINK_MODE": None,
    "GEAR_BM25_TOKENIZER": "standard",
    "GEAR_BEAM_WIDTH": 10,
    "GEAR_BEAM_LENGTH": 2,
    "GEAR_BEAM_NEIGHBOURS": 100,
    "GEAR_BEAM_GAMMA": None,
    "GEAR_BEAM_SCORER": "auto",
    "GEAR_BEAM_RERANK": 3,
    "GEAR_BEAM_SHORTLIST": None,
    "GEAR_BEAM_ENCODER": "model",
    "GEAR_BEAM_DIVERSE": True,
    "GEAR_GROUND_TRIPLES": True,
    "GEAR_GROUND_OPENIE": False,
    "GEAR_MAX_ITERATIONS": 4,
    "GEAR_EXPANSION": "ppr",
    "GEAR_PASSAGE_LINK_K": 5,
    "GEAR_ANSWER": True,
    "GEAR_ANSWER_TOP_K": 5,
    "GEAR_MAX_QUESTION_CHARS": 2000,
    "GEAR_DEADLINE_S": 300.0,
    "GEAR_PPR_DAMPING": 0.5,
    "GEAR_PPR_SYNONYM_THRESHOLD": 0.8,
    "GEAR_PPR_PASSAGE_WEIGHT": 0.05,
    "GEAR_PPR_SEED_TRIPLES": 5,
    "GEAR_PPR_FILTER": False,
    "GEAR_PPR_METHOD": "local",
    "GEAR_PPR_TOLERANCE": 1e-07,
    "GEAR_PPR_DENSE_PASSAGES": 1000,
    "GEAR_HIPPORAG_SEED_PHRASES": 3,
    "GEAR_HIPPORAG_DAMPING": 0.5,
    "GEAR_PPR_TITLE_WEIGHT": 2.0,
    "GEAR_PPR_PASSAGE_SHARPNESS": 1.0,
    "GEAR_PPR_QUERY_ENTITIES": 0.25,
    "GEAR_PPR_EXPAND_TITLE_WEIGHT": 0.0,
    "GEAR_PPR_EXPAND_PASSAGE_SHARPNESS": 1.0,
    "GEAR_ES_URL": None,
    "GEAR_ES_API_KEY": None,
    "GEAR_ES_USERNAME": None,
    "GEAR_ES_PASSWORD": None,
    "GEAR_ES_VERIFY_CERTS": True,
    "GEAR_ES_INDEX_PREFIX": "gear",
    "GEAR_ES_CACHE_DIR": Path(".gear/es-cache"),
    "GEAR_ES_EXACT_BM25": False,  # added with the exact BM25 rescoring (issue 26)
    "GEAR_SERVE_MAX_BODY_BYTES": 1000000,
    "GEAR_SERVE_MAX_BATCH": 16,
    "GEAR_SERVE_MAX_CONCURRENT": 8,
    "GEAR_SERVE_REQUEST_TIMEOUT_S": 360.0,
    "GEAR_SERVE_BODY_TIMEOUT_S": 10.0,
    "GEAR_SERVE_HEADER_TIMEOUT_S": 10.0,
    "GEAR_SERVE_CORS_ORIGINS": "",
    "GEAR_API_KEY": None,
    "GEAR_SERVE_ALLOWED_HOSTS": "",
    "GEAR_SERVE_CORS_ANY_ORIGIN_WRITES": False,
    "GEAR_SERVE_READ_ONLY": False,
    "GEAR_SERVE_WRITE_KEY": None,
    "GEAR_SERVE_MAX_READS": 4,
    "GEAR_TRACE_DIR": None,
    "GEAR_TRACE_MAX_BYTES": 20000000,
    "GEAR_SNAPSHOT_EVERY": 0.0,  # added with snapshots (issue 36)
    "GEAR_SNAPSHOT_KEEP": 3,
    "GEAR_ES_SNAPSHOT_REPOSITORY": None,
    # SiReRAG's build knobs, a dataclass of their own until issue 39 made them a section
    "GEAR_SIRERAG_MIN_PROPOSITIONS": 2,
    "GEAR_SIRERAG_MIN_PASSAGES": 1,
    "GEAR_SIRERAG_REDUCTION_DIM": 10,
    "GEAR_SIRERAG_MAX_CLUSTERS": 50,
    "GEAR_SIRERAG_THRESHOLD": 0.1,
    "GEAR_SIRERAG_MAX_CLUSTER_SIZE": 12,
    "GEAR_SIRERAG_MAX_LEVELS": 3,
    "GEAR_SIRERAG_STOP_BELOW": 4,
    "GEAR_SIRERAG_SEED": 0,
    "GEAR_SIRERAG_SUMMARY_MAX_WORDS": 100,
    "GEAR_SIRERAG_CONCURRENCY": 4,
}

SECTIONS = [c for c in vars(config).values()
            if isinstance(c, type) and issubclass(c, Section) and c not in (Section, GearSettings)]


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    import os

    for name in [n for n in os.environ if n.startswith("GEAR_")]:
        monkeypatch.delenv(name)
    return monkeypatch


def test_every_gear_variable_and_default_is_unchanged(clean_env: pytest.MonkeyPatch) -> None:
    fields = GearSettings.model_fields
    assert {f"GEAR_{name.upper()}" for name in fields} == set(EXPECTED)
    actual = GearSettings()
    for variable, default in EXPECTED.items():
        name = variable.removeprefix("GEAR_").lower()
        assert fields[name].default == default, variable
        value = getattr(actual, name)
        assert value == default, variable


def test_every_variable_is_read_from_the_environment(clean_env: pytest.MonkeyPatch) -> None:
    samples = {"GEAR_BEAM_WIDTH": ("3", 3), "GEAR_LLM_MODEL": ("ollama:x", "ollama:x"),
               "GEAR_PPR_TITLE_WEIGHT": ("0.5", 0.5), "GEAR_SERVE_MAX_BATCH": ("2", 2),
               "GEAR_TRACE_DIR": ("t", Path("t")), "GEAR_LINK_MODE": ("bm25", "bm25"),
               "GEAR_BASE_RETRIEVER": ("hybrid", "hybrid"), "GEAR_CHUNK_WORDS": ("50", 50),
               "GEAR_ES_INDEX_PREFIX": ("x1", "x1"), "GEAR_EXPANSION": ("both", "both")}
    for variable, (text, _) in samples.items():
        clean_env.setenv(variable, text)
    settings = GearSettings()
    for variable, (_, value) in samples.items():
        assert getattr(settings, variable.removeprefix("GEAR_").lower()) == value, variable


def test_each_field_is_declared_in_one_section_only() -> None:
    """No mirror: a field lives in exactly one section's own annotations; GearSettings
    declares none of its own (the Elasticsearch fields are a section too)."""
    owners: dict[str, list[str]] = {}
    for cls in [*SECTIONS, GearSettings]:
        for name in cls.__dict__.get("__annotations__", {}):
            if name in GearSettings.model_fields:
                owners.setdefault(name, []).append(cls.__name__)
    assert set(owners) == set(GearSettings.model_fields)
    assert {name: where for name, where in owners.items() if len(where) != 1} == {}
    assert all(issubclass(GearSettings, cls) for cls in SECTIONS)
    assert "GearSettings" not in {owner for where in owners.values() for owner in where}


@pytest.mark.parametrize("section", SECTIONS, ids=lambda c: c.__name__)
def test_a_section_alone_has_the_same_defaults_and_reads_no_environment(
    section: type[BaseModel], clean_env: pytest.MonkeyPatch
) -> None:
    clean_env.setenv("GEAR_BEAM_WIDTH", "3")
    clean_env.setenv("GEAR_LLM_MODEL", "ollama:x")
    alone = section()
    for name in section.model_fields:
        assert getattr(alone, name) == EXPECTED[f"GEAR_{name.upper()}"], (section.__name__, name)


def test_validation_is_declared_once_and_applies_to_sections_and_settings() -> None:
    for build in (BeamSettings, AgentSettings, GearSettings):
        with pytest.raises(ValidationError, match="beam_width"):
            build(beam_width=0)
        with pytest.raises(ValidationError, match="beam_scorer"):
            build(beam_scorer="max")
    with pytest.raises(ValidationError, match="chunk_overlap_words"):
        GearSettings(chunk_words=40, chunk_overlap_words=40)
    with pytest.raises(ValidationError, match="serve_max_batch"):
        ServeSettings(serve_max_batch=0)
    with pytest.raises(ValidationError, match="extra"):
        PPRSettings(damping=0.3)  # the old mirror's names are refused, not ignored


def test_derived_values_are_one_property_each() -> None:
    settings = GearSettings(beam_width=7, llm_models=" a ,, b ", serve_cors_origins="https://x, ")
    assert (settings.gamma, settings.shortlist_size) == (14.0, 14)
    assert settings.scorer_for(True) == "shortlist" and settings.scorer_for(False) == "sum"
    assert settings.run_models == ("a", "b") and settings.allowed_origins == ("https://x",)
    assert settings.link_search_mode == "hybrid"
    assert GearSettings(base_retriever="dense").link_search_mode == "dense"
    assert PPRSettings().knobs(seeds_given=False) == (2.0, 1.0, 0.25)
    assert isinstance(settings, LLMSettings) and isinstance(settings, TraceSettings)

