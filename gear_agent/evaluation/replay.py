"""Recorded LLM replies, replayed: the two dev sets of ``../shared/data`` and the settings
under which their recorded replies answer every call of the agent and SyncGE, with no LLM.

A replay runs with the model name ``recorded`` against an endpoint that nothing answers
(:data:`REPLAY_ENDPOINT`), so every reply must come from the on-disk cache of the dataset's
``llm-replay/cache``; a prompt the cache does not hold fails its question at once. The cache
key is the model name, temperature, completion cap, response format and the whole prompt,
so :data:`REPLAY_SETTINGS` must stay as the replies were recorded
(``../shared/data/*/llm-replay/README.md``).

Example:
    >>> [b.name for b in BENCHMARKS]
    ['MuSiQue', 'HotpotQA']
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gear_agent.config import GearSettings
from gear_agent.evaluation.prepare import eval_index_dir, prepare_index
from gear_agent.open_index import OpenIndex

REPLAY_ENDPOINT = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "replay"}
"""The replay's endpoint: unreachable on purpose, so every reply comes from the cache."""

REPLAY_SETTINGS: dict[str, Any] = {
    "llm_model": "recorded", "llm_max_retries": 0, "max_iterations": 3, "answer": True,
    "llm_temperature": 0.0, "llm_max_tokens": 512, "llm_response_format": "text",
    "prompts_dir": None,
}
"""The settings the replies were recorded under (part of every cache key, or of the loop)."""

RECORDED_ENV = ("GEAR_LLM_RESPONSE_FORMAT", "GEAR_LLM_MAX_TOKENS", "GEAR_LLM_TEMPERATURE",
                "GEAR_PROMPTS_DIR", "GEAR_GROUND_TRIPLES", "GEAR_BASE_K", "GEAR_READER_PASSAGES",
                "GEAR_READER_FULL_PASSAGES", "GEAR_PROMPT_PASSAGE_TOKENS")
"""Environment variables that would change a recorded prompt: a guard clears them."""


@dataclass(frozen=True)
class Benchmark:
    """One dev set of ``../shared/data``: its folder, OpenIE file and recorded replies."""

    name: str
    folder: str
    openie: str
    replay: str = "llm-replay/cache"

    def path(self, data: Path, part: str) -> Path:
        """``part`` of this dataset under the ``data`` folder (``../shared/data``)."""
        return data / self.folder / part


BENCHMARKS = (
    Benchmark("MuSiQue", "musique_dev", "openie_gpt-3.5-turbo-1106.json"),
    Benchmark("HotpotQA", "hotpotqa_dev", "openie_capable-model.json"),
)
"""The two dev sets, in the order every table lists them."""


def open_benchmark(benchmark: Benchmark, data: Path, settings: GearSettings) -> OpenIndex:
    """The index ``gear eval`` builds for the dataset (built once, reused after): the
    ``word`` BM25 tokenizer and the OpenIE file's triples, under ``settings``' model."""
    corpus, openie = benchmark.path(data, "corpus.json"), benchmark.path(data, benchmark.openie)
    settings = settings.model_copy(update={"bm25_tokenizer": "word"})
    folder = eval_index_dir(corpus, openie, settings.embedding_model,
                            ground_openie=settings.ground_openie)
    index, _ = prepare_index(settings.model_copy(update={"index_dir": folder}), corpus,
                               openie, lambda *a, **k: None)
    return index


def replay_index(index: OpenIndex, benchmark: Benchmark, data: Path, **changes: Any) -> OpenIndex:
    """The same index with the replay's settings (and ``changes``, e.g. ``base_retriever``):
    its LLM retrievers read the dataset's recorded replies. The caller sets
    :data:`REPLAY_ENDPOINT` in the environment."""
    settings = index.settings.model_copy(update={
        **REPLAY_SETTINGS, "llm_cache_dir": benchmark.path(data, benchmark.replay), **changes,
    })
    return OpenIndex(settings, index.embedder, index.store, index.encode)
