"""Running retrievers over benchmark questions: Recall@k, ms/query, and answer metrics."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from gear_agent.evaluation.dataset import Question
from gear_agent.evaluation.metrics import exact_match, f1_score, recall_at_k
from gear_agent.retrieval.base import Outcome, Retriever

KS = (2, 5, 10, 15)


@dataclass(frozen=True)
class NodeCost:
    """One node's LLM calls per question, with every call's tokens by the model's tokenizer
    (cached or not; :attr:`~gear_agent.llm.client.LLMReply.counted_input`)."""

    calls: float
    prompt_tokens: float
    completion_tokens: float

    def as_json(self) -> dict:
        return {"calls_per_question": round(self.calls, 2),
                "prompt_tokens_per_question": round(self.prompt_tokens, 1),
                "completion_tokens_per_question": round(self.completion_tokens, 1)}


@dataclass
class EvalRow:
    """One row of the table: a retriever's averages over the questions.

    ``tokens_per_question`` are billed tokens (0 for a reply served from the cache);
    ``counted_tokens_per_question``, ``calls_per_question`` and ``by_node`` count every
    call with the model's tokenizer, so a replayed row shows what the question costs.
    """

    retriever: str
    recall: dict[int, float]
    ms_per_query: float
    questions: int
    em: float | None = None
    f1: float | None = None
    tokens_per_question: float | None = None
    iterations_per_question: float | None = None
    errors: int = 0
    error_examples: list[str] = field(default_factory=list)
    calls_per_question: float | None = None
    counted_tokens_per_question: float | None = None
    by_node: dict[str, NodeCost] = field(default_factory=dict)

    def as_json(self) -> dict:
        row = {"retriever": self.retriever}
        row.update({f"recall@{k}": round(100 * v, 1) for k, v in self.recall.items()})
        row["ms_per_query"] = round(self.ms_per_query, 2)
        row["questions"] = self.questions
        for key in ("em", "f1"):
            value = getattr(self, key)
            if value is not None:
                row[key] = round(100 * value, 1)
        if self.tokens_per_question is not None:
            row["tokens_per_question"] = round(self.tokens_per_question, 1)
        if self.iterations_per_question is not None:
            row["iterations_per_question"] = round(self.iterations_per_question, 2)
        if self.calls_per_question is not None:
            row["calls_per_question"] = round(self.calls_per_question, 2)
            row["counted_tokens_per_question"] = round(self.counted_tokens_per_question or 0, 1)
            row["by_node"] = {node: cost.as_json() for node, cost in self.by_node.items()}
        if self.errors:
            row["errors"] = self.errors
        return row


async def _outcome(retriever: Retriever, question: Question, k: int) -> Outcome:
    """Run one question; retrievers with an ``arun`` (LLM-backed) give answers and tokens."""
    started = time.perf_counter()
    arun = getattr(retriever, "arun", None)
    if arun is not None:
        outcome = await arun(question.question, k)
    else:
        outcome = Outcome(retriever.retrieve(question.question, k))
    outcome.seconds = time.perf_counter() - started
    return outcome


def evaluate(
    retriever: Retriever,
    questions: Sequence[Question],
    ks: Sequence[int] = KS,
    concurrency: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> EvalRow:
    """Average Recall@k (and EM/F1, tokens, iterations where given) over the questions.

    ms/query is wall time per question divided by the concurrency's overlap: with
    ``concurrency == 1`` it is the plain mean latency.
    """
    outcomes: list[Outcome | BaseException] = [None] * len(questions)  # type: ignore[list-item]
    done = 0

    async def run_all() -> float:
        nonlocal done
        semaphore = asyncio.Semaphore(concurrency)

        async def one(index: int, question: Question) -> None:
            nonlocal done
            async with semaphore:
                try:
                    outcomes[index] = await _outcome(retriever, question, max(ks))
                except Exception as exc:  # recorded per question; the row reports it
                    outcomes[index] = exc
                done += 1
                if progress:
                    progress(done, len(questions))

        started = time.perf_counter()
        await asyncio.gather(*(one(i, q) for i, q in enumerate(questions)))
        return time.perf_counter() - started

    wall = asyncio.run(run_all())
    good = [(q, o) for q, o in zip(questions, outcomes) if isinstance(o, Outcome)]
    failed = [o for o in outcomes if not isinstance(o, Outcome)]
    n = max(len(questions), 1)
    recall = {k: sum(recall_at_k(o.passage_ids, q.gold, k) for q, o in good) / n for k in ks}
    row = EvalRow(
        retriever.name, recall,
        ms_per_query=1000 * (sum(o.seconds for _, o in good) / max(len(good), 1)
                             if concurrency == 1 else wall / n),
        questions=len(questions), errors=len(failed),
        error_examples=[f"{type(e).__name__}: {e}"[:200] for e in failed[:3]],
    )
    answered = [(q, o) for q, o in good if o.answer is not None]
    if answered:
        row.em = sum(exact_match(o.answer or "", q.answers) for q, o in answered) / n
        row.f1 = sum(f1_score(o.answer or "", q.answers) for q, o in answered) / n
    if any(o.input_tokens or o.output_tokens for _, o in good):
        row.tokens_per_question = sum(o.input_tokens + o.output_tokens for _, o in good) / n
    iterations = [o.iterations for _, o in good if o.iterations is not None]
    if iterations:
        row.iterations_per_question = sum(iterations) / len(iterations)
    usages = [o.usage for _, o in good if o.usage is not None]
    if usages:
        _add_costs(row, usages)
    return row


def _add_costs(row: EvalRow, usages: Sequence[dict]) -> None:
    """Calls and counted tokens per question, in total and per node, over the questions
    that reported their usage (a failed question made calls too, but reports none)."""
    n = len(usages)
    nodes: dict[str, list[float]] = {}
    for usage in usages:
        for node, counts in (usage.get("by_node") or {}).items():
            into = nodes.setdefault(node, [0.0, 0.0, 0.0])
            into[0] += counts.get("calls", 0)
            into[1] += counts.get("counted_input", 0)
            into[2] += counts.get("counted_output", 0)
    row.by_node = {node: NodeCost(c / n, i / n, o / n) for node, (c, i, o) in nodes.items()}
    row.calls_per_question = sum(cost.calls for cost in row.by_node.values())
    row.counted_tokens_per_question = sum(
        cost.prompt_tokens + cost.completion_tokens for cost in row.by_node.values())
