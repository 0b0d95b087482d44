"""A replay guard on both benchmarks: a handful of questions of each dev set run through the
GEAR agent and SyncGE with the default settings, every LLM call answered by the capable
model's recorded replies (``../shared/data/*/llm-replay``; the endpoint is unreachable on
purpose), and their recall, answers and iterations must be exactly the recorded ones.

A change to a prompt, to the reply parsing, to the loop or to the base list changes a
prompt (which then misses the cache and fails the question) or a ranking, and shows here
at once; the full rows are ``python benchmarks/quality.py`` and the replay READMEs'
commands. The index is the one ``gear eval`` builds (``.gear/eval/``, built once with the
real embedding model, about two minutes a dataset on two cores; reused after).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from gear_agent.config import GearSettings
from gear_agent.evaluation.dataset import load_questions
from gear_agent.evaluation.metrics import exact_match, recall_at_k
from gear_agent.evaluation.replay import BENCHMARKS, REPLAY_ENDPOINT, open_benchmark, replay_index
from gear_agent.llm.tokens import tokenizer_label
from gear_agent.parts import index_parts
from gear_agent.registry import make_retriever

# Building both dev sets' indexes with the real encoder is the slow part (about four minutes
# on two idle cores; more on a busy machine): the module may take longer than the suite's
# per-test limit, which guards against hangs, not against this known cost.
pytestmark = [pytest.mark.shared, pytest.mark.slow, pytest.mark.timeout(2400)]

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
QUESTIONS = 4
"""The first questions of each dev set that the guard replays."""

Row = tuple[tuple[float, ...], float | None, int | None, dict[str, int], int]
"""One question: (R@2, R@5, R@10, R@15), exact match (None: no answer), iterations, LLM
calls by node, and the prompt tokens of every call (o200k_base)."""

EXPECTED: dict[tuple[str, str], list[Row]] = {
    ('HotpotQA', 'gear-ppr'): [
        ((100.0, 100.0, 100.0, 100.0), 1.0, 1, {'read': 1, 'reason': 1, 'answer': 1}, 3367),  # DeCavalcante crime family
        ((100.0, 100.0, 100.0, 100.0), 1.0, 1, {'read': 1, 'reason': 1, 'answer': 1}, 3521),  # Park Jin-pyo
        ((100.0, 100.0, 100.0, 100.0), 1.0, 1, {'read': 1, 'reason': 1, 'answer': 1}, 2858),  # Hebron Academy
        ((100.0, 100.0, 100.0, 100.0), 1.0, 1, {'read': 1, 'reason': 1, 'answer': 1}, 3092),  # 1984
    ],
    ('HotpotQA', 'syncge'): [
        ((100.0, 100.0, 100.0, 100.0), None, 1, {'read': 1}, 2113),
        ((50.0, 100.0, 100.0, 100.0), None, 1, {'read': 1}, 2451),
        ((100.0, 100.0, 100.0, 100.0), None, 1, {'read': 1}, 1862),
        ((50.0, 100.0, 100.0, 100.0), None, 1, {'read': 1}, 2085),
    ],
    ('MuSiQue', 'gear-ppr'): [
        ((100.0, 100.0, 100.0, 100.0), 1.0, 3, {'read': 3, 'reason': 3, 'rewrite': 2, 'answer': 1}, 9458),  # Gujarati
        ((50.0, 100.0, 100.0, 100.0), 1.0, 1, {'read': 1, 'reason': 1, 'answer': 1}, 2765),  # 1410
        ((100.0, 100.0, 100.0, 100.0), 1.0, 1, {'read': 1, 'reason': 1, 'answer': 1}, 3906),  # Cape Agulhas
        ((50.0, 100.0, 100.0, 100.0), 1.0, 3, {'read': 3, 'reason': 3, 'rewrite': 2, 'answer': 1}, 10783),  # Bertrand Traoré
    ],
    ('MuSiQue', 'syncge'): [
        ((50.0, 50.0, 50.0, 50.0), None, 1, {'read': 1}, 2423),
        ((100.0, 100.0, 100.0, 100.0), None, 1, {'read': 1}, 1897),
        ((100.0, 100.0, 100.0, 100.0), None, 1, {'read': 1}, 2760),
        ((100.0, 100.0, 100.0, 100.0), None, 1, {'read': 1}, 2304),
    ],
}


@pytest.fixture(scope="module")
def replays() -> dict[str, object]:
    """Each dev set's index with the replay's settings (the defaults otherwise)."""
    for benchmark in BENCHMARKS:
        for part in ("corpus.json", "questions.json", benchmark.openie, benchmark.replay):
            if not benchmark.path(DATA, part).exists():
                pytest.skip(f"benchmark data not found at {benchmark.path(DATA, part)} "
                            "(../shared is absent)")
    with pytest.MonkeyPatch.context() as env:
        for key in [k for k in os.environ if k.startswith("GEAR_")]:
            env.delenv(key)  # every setting at its default, as the guard's figures were taken
        settings = GearSettings()
        replays = {}
        for b in BENCHMARKS:
            # no deadline: the first question must not pay for the PPR graph's build (the
            # deadline changes no prompt), and the graph is built before any question runs
            replay = index_parts(replay_index(open_benchmark(b, DATA, settings), b, DATA, deadline_s=0))
            replay.ppr().retrieve("warm-up", 1)
            replays[b.name] = replay
        return replays


def _replayed(runtime, benchmark, name: str) -> list[Row]:
    retriever = make_retriever(name, runtime)
    rows = []
    for question in load_questions(benchmark.path(DATA, "questions.json"))[:QUESTIONS]:
        outcome = asyncio.run(retriever.arun(question.question, 15))
        recall = tuple(round(100 * recall_at_k(outcome.passage_ids, question.gold, k), 1)
                       for k in (2, 5, 10, 15))
        answered = None if outcome.answer is None else exact_match(outcome.answer, question.answers)
        usage = outcome.usage or {}
        calls = {node: cost["calls"] for node, cost in usage.get("by_node", {}).items()}
        rows.append((recall, answered, outcome.iterations, calls, usage.get("counted_input", 0)))
    return rows


@pytest.mark.parametrize(("dataset", "name"), sorted(EXPECTED))
def test_replayed_questions_keep_their_recorded_rows(replays, monkeypatch, dataset, name) -> None:
    for key, value in REPLAY_ENDPOINT.items():
        monkeypatch.setenv(key, value)
    benchmark = next(b for b in BENCHMARKS if b.name == dataset)
    rows = _replayed(replays[dataset], benchmark, name)
    expected = EXPECTED[(dataset, name)]
    if tokenizer_label("recorded").startswith("estimated"):  # no o200k_base rank file here
        rows = [row[:4] for row in rows]
        expected = [row[:4] for row in expected]
    assert rows == expected
