"""The reader's budget, counted offline: prompt tokens per question when the reader reads
5, 8, 10 or 15 base passages (``GEAR_READER_PASSAGES``), and with titles only past the
first 5 (``GEAR_READER_FULL_PASSAGES=5``), on both dev sets, with no LLM.

The agent runs from the recorded replies (as ``gear eval`` replays them: the default
settings, 3 iterations, QA on), which were recorded with the reader reading 15 passages.
Before each of its reader calls the prompt the reader *would* be given under each budget is
rendered from the same state (question, base list, gist memory) and counted with the
project's token counter (``count_message_tokens``, the model's tokenizer, as ``gear eval``
counts every call), so no reply is ever needed for a smaller budget: the trajectory is the
15-passage one (iterations and rewrites as recorded), and only the reader's prompt changes.
A capable model's run measures what each budget does to quality.

    python benchmarks/reader_budget.py                  # both dev sets, ~5 min on 2 cores
    python benchmarks/reader_budget.py --limit 10       # the first 10 questions of each
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
BUDGETS: tuple[tuple[int, int | None], ...] = ((5, None), (8, None), (10, None), (15, None), (15, 5))
"""(passages read, passages with their text; None: all) per column."""


def _label(budget: tuple[int, int | None]) -> str:
    read, full = budget
    return f"{read}" if full is None else f"{read}, text of {full}"


def reader_tokens(store: Any, settings: Any, state: dict[str, Any], model: str) -> list[int]:
    """Prompt tokens of the reader call the state is about to make, under each budget."""
    from gear_agent.agent import _steps as steps
    from gear_agent.llm.messages import to_messages
    from gear_agent.llm.tokens import count_message_tokens

    ids = [p["id"] for p in state.get("base", [])]
    counts = []
    for read, full in BUDGETS:
        budgeted = settings.model_copy(update={"reader_passages": read,
                                               "reader_full_passages": full})
        prompt = steps.reader_prompt(store, budgeted, state["question"], ids,
                                     state.get("gist_memory", []))
        counts.append(count_message_tokens(to_messages(prompt), model))
    return counts


def run(benchmark: Any, limit: int | None) -> dict[str, Any]:
    """Reader prompt tokens per question under each budget, and the question's total."""
    from gear_agent.cli.common import load_settings
    from gear_agent.evaluation.dataset import load_questions
    from gear_agent.evaluation.replay import REPLAY_ENDPOINT, open_benchmark, replay_index
    from gear_agent.registry import make_retriever

    os.environ.update(REPLAY_ENDPOINT)
    replay = replay_index(open_benchmark(benchmark, DATA, load_settings(None)), benchmark, DATA)
    settings = replay.settings
    agent = make_retriever("gear-ppr", replay).agent  # type: ignore[attr-defined]
    questions = load_questions(benchmark.path(DATA, "questions.json"))[:limit]
    reads = [0] * len(BUDGETS)
    recorded_read = total = calls = failed = 0
    for number, question in enumerate(questions, start=1):
        last_node, state = None, None
        for mode, chunk in agent.stream({"question": question.question, "top_k": 15},
                                        stream_mode=["updates", "values"]):
            if mode == "updates":
                last_node = next(iter(chunk), None)
            elif last_node == "retrieve":
                for i, n in enumerate(reader_tokens(replay.store, settings, chunk,
                                                    settings.llm_model)):
                    reads[i] += n
            state = chunk if mode == "values" else state
        usage = (state or {}).get("tokens") or {}
        read = usage.get("by_node", {}).get("read", {})
        recorded_read += read.get("counted_input", 0)
        total += usage.get("counted_input", 0) + usage.get("counted_output", 0)
        calls += read.get("calls", 0)
        failed += any("error" in d for d in (state or {}).get("dropped", []))  # a cache miss
        print(f"  {benchmark.name}: {number}/{len(questions)}", file=sys.stderr, flush=True)
    n = max(len(questions), 1)
    return {"reads": [r / n for r in reads], "recorded_read": recorded_read / n,
            "total": total / n, "read_calls": calls / n, "questions": len(questions),
            "failed": failed, "base": settings.base_retriever}


def table(results: dict[str, dict[str, Any]]) -> str:
    """Reader prompt tokens per question (and the question's tokens) per budget."""
    head = ("| dataset (base) | reader calls/q | "
            + " | ".join(f"reads {_label(b)}: reader / question" for b in BUDGETS) + " |")
    lines = [head, "|---|---|" + "---|" * len(BUDGETS)]
    for name, r in results.items():
        others = r["total"] - r["recorded_read"]  # every other token of the question
        cells = [f"{read:,.0f} / {read + others:,.0f}" for read in r["reads"]]
        lines.append(f"| {name} ({r['base']}) | {r['read_calls']:.2f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, help="Only the first N questions of each set.")
    args = parser.parse_args(argv)
    from gear_agent.cli.progress import quiet_third_party

    quiet_third_party()
    from gear_agent.evaluation.replay import BENCHMARKS
    from gear_agent.llm.tokens import tokenizer_label

    results = {}
    for benchmark in BENCHMARKS:
        result = run(benchmark, args.limit)
        full = result["reads"][BUDGETS.index((15, None))]
        if round(full) != round(result["recorded_read"]):  # the counter must agree with the run's
            raise SystemExit(f"{benchmark.name}: 15 passages count {full:.1f} tokens a question, "
                             f"the replayed run {result['recorded_read']:.1f}")
        if result["failed"]:
            print(f"{benchmark.name}: {result['failed']} questions failed", file=sys.stderr)
        results[benchmark.name] = result
    print(table(results))
    print(f"\n`python benchmarks/reader_budget.py`; tokens counted with "
          f"{tokenizer_label('recorded')}; question = every other call as replayed + the reader")


if __name__ == "__main__":
    main()
