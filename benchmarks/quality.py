"""One command, one table: every LLM-free retriever on both benchmarks, plus the replayed
LLM rows where recorded replies exist.

For each dataset of ``../shared/data`` (MuSiQue dev: 51 questions over 1,890 passages with
GPT-3.5 OpenIE triples; HotpotQA dev: 50 questions over 994 passages with a capable model's
triples) it builds (once) or reuses the index ``gear eval`` builds (all-MiniLM-L6-v2, the
``word`` BM25 tokenizer, triples imported from the OpenIE file, SiReRAG's LLM-free
ablation pool for ``sirerag``), runs every retriever of the table that needs no LLM and
prints Recall@2/5/10/15 and ms per question: one row per retriever, one column group per
dataset. Where a dataset has recorded LLM replies (``musique_dev/llm-replay``) its LLM rows
run from them with no LLM (the endpoint is unreachable on purpose; a prompt not in the
cache fails its question), and a second table gives their EM/F1, iterations, and calls and
tokens per question, every call counted with the model's tokenizer, cached or not, in total
and per node::

    python benchmarks/quality.py                         # both tables, ~15 min on 2 cores
    python benchmarks/quality.py --no-llm                # the LLM-free table only
    python benchmarks/quality.py --markdown docs/quality.md   # and write them into the doc

``--markdown`` replaces what stands between ``<!-- quality:begin -->`` and
``<!-- quality:end -->`` in the file. ms per question excludes the query's embedding
(shared by every row) and is taken on a shared machine: compare rows of one run only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
LLM_ROWS = ("syncge", "syncge-ppr", "syncge-fused", "gear", "gear-ppr", "gear-fused",
            "hipporag+ner")
REPLAY_ENV = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "replay"}
"""The replay's endpoint: unreachable on purpose, so every reply comes from the cache."""
BEGIN, END = "<!-- quality:begin -->", "<!-- quality:end -->"
KS = (2, 5, 10, 15)


@dataclass(frozen=True)
class Dataset:
    name: str
    folder: str
    openie: str
    replay: str | None = None  # a GEAR_LLM_CACHE_DIR of recorded replies

    def path(self, part: str) -> Path:
        return DATA / self.folder / part


DATASETS = (
    Dataset("MuSiQue", "musique_dev", "openie_gpt-3.5-turbo-1106.json", "llm-replay/cache"),
    Dataset("HotpotQA", "hotpotqa_dev", "openie_capable-model.json"),
)


def _runtime(dataset: Dataset) -> Any:
    from gear_agent.cli.common import load_settings
    from gear_agent.evaluation.prepare import eval_index_dir, prepare_index

    corpus, openie = dataset.path("corpus.json"), dataset.path(dataset.openie)
    settings = load_settings(None, bm25_tokenizer="word")
    folder = eval_index_dir(corpus, openie, settings.embedding_model,
                            ground_openie=settings.ground_openie)
    settings = settings.model_copy(update={"index_dir": folder})
    runtime, _ = prepare_index(settings, corpus, openie, lambda *a, **k: None)
    return runtime


def _sirerag_pool(runtime: Any) -> None:
    """SiReRAG's LLM-free ablation pool (what ``gear eval --sirerag ablation`` builds)."""
    from gear_agent.sirerag import SiReRAGSettings, build_ablation

    build_ablation(runtime.store, SiReRAGSettings(min_propositions=2, min_passages=1, seed=0))


def _rows(label: str, runtime: Any, names: list[str], questions: list,
          concurrency: int = 1) -> list:
    from gear_agent.evaluation.runner import evaluate
    from gear_agent.retrieval.registry import make_retriever

    for question in questions:  # shared by every row, kept out of its ms per question
        runtime.encode(question.question)
    rows = []
    for name in names:
        retriever = make_retriever(name, runtime)
        if not hasattr(retriever, "arun"):
            retriever.retrieve(questions[0].question, 15)  # lazy parts built outside timing
        started = time.perf_counter()
        rows.append(evaluate(retriever, questions, ks=KS, concurrency=concurrency))
        print(f"  {label}: {name} in {time.perf_counter() - started:.1f} s",
              file=sys.stderr, flush=True)
    return rows


def _replay_runtime(runtime: Any, dataset: Dataset) -> Any:
    from gear_agent.open_index import OpenIndex

    os.environ.update(REPLAY_ENV)
    settings = runtime.settings.model_copy(update={
        "llm_model": "recorded", "llm_max_retries": 0, "max_iterations": 3, "answer": True,
        "llm_cache_dir": dataset.path(dataset.replay),
    })
    return OpenIndex(settings, runtime.embedder, runtime.store, runtime.encode)


def _recall_cells(row: Any | None) -> list[str]:
    if row is None:
        return ["–"] * (len(KS) + 1)
    return [f"{100 * row.recall[k]:.1f}" for k in KS] + [f"{row.ms_per_query:,.1f}"]


def recall_table(results: dict[str, dict[str, Any]], names: list[str]) -> str:
    """One markdown row per retriever, one column group per dataset."""
    sets = list(results)
    head = "| retriever | " + " | ".join(
        " | ".join([f"{d} R@2", *(f"R@{k}" for k in KS[1:]), "ms/q"]) for d in sets) + " |"
    rule = "|---|" + "---|" * ((len(KS) + 1) * len(sets))
    lines = [head, rule]
    for name in names:
        cells = [c for d in sets for c in _recall_cells(results[d].get(name))]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _number(value: float | None, scale: float, spec: str) -> str:
    return "–" if value is None else format(scale * value, spec)


def cost_table(dataset: str, rows: list) -> str:
    """The replayed rows' answers and cost: EM/F1, iterations, calls and tokens per question
    (every call, cached or not), and the same per node."""
    lines = [f"| {dataset} replay | EM | F1 | iter/q | calls/q | tokens/q | failed | by node: "
             "calls/q, prompt + completion tokens/q |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        nodes = "; ".join(f"{node} {c.calls:.2f}, {c.prompt_tokens:,.0f} + "
                          f"{c.completion_tokens:,.0f}" for node, c in r.by_node.items())
        cells = [_number(r.em, 100, ".1f"), _number(r.f1, 100, ".1f"),
                 _number(r.iterations_per_question, 1, ".2f"),
                 _number(r.calls_per_question, 1, ".2f"),
                 _number(r.counted_tokens_per_question, 1, ",.0f"), str(r.errors), nodes or "–"]
        lines.append(f"| {r.retriever} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _write_markdown(path: Path, text: str) -> None:
    doc = path.read_text(encoding="utf-8")
    if BEGIN not in doc or END not in doc:
        raise SystemExit(f"{path}: no {BEGIN} ... {END} block to replace")
    block = f"{BEGIN}\n{text}\n{END}"
    path.write_text(re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: block, doc,
                           flags=re.S), encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-llm", action="store_true", help="Leave out the replayed LLM rows.")
    parser.add_argument("--retrievers", help="LLM-free rows (default: every one of the table).")
    parser.add_argument("--limit", type=int, help="Only the first N questions of each set.")
    parser.add_argument("--concurrency", type=int, default=8, help="Replayed questions in flight.")
    parser.add_argument("--markdown", type=Path, help="Write the tables into this file's block.")
    parser.add_argument("--json", type=Path, help="Write every row to this JSON file.")
    args = parser.parse_args(argv)

    from gear_agent.cli.progress import quiet_third_party

    quiet_third_party()
    from gear_agent.evaluation.dataset import load_questions
    from gear_agent.llm.tokens import tokenizer_label
    from gear_agent.retrieval.llm_free import LLM_FREE

    names = args.retrievers.split(",") if args.retrievers else list(LLM_FREE)
    results: dict[str, dict[str, Any]] = {}
    costs: list[str] = []
    payload: dict[str, Any] = {}
    for dataset in DATASETS:
        if not dataset.path("questions.json").is_file():
            raise SystemExit(f"benchmark data not found at {dataset.path('questions.json')}")
        questions = load_questions(dataset.path("questions.json"))[: args.limit]
        runtime = _runtime(dataset)
        if "sirerag" in names:
            _sirerag_pool(runtime)
        rows = _rows(dataset.name, runtime, names, questions)
        if dataset.replay and not args.no_llm:
            llm_rows = _rows(dataset.name, _replay_runtime(runtime, dataset), list(LLM_ROWS),
                             questions, args.concurrency)
            rows += llm_rows
            costs.append(cost_table(dataset.name, llm_rows))
        results[dataset.name] = {r.retriever: r for r in rows}
        payload[dataset.name] = [r.as_json() for r in rows]
    all_names = names + ([] if args.no_llm else list(LLM_ROWS))
    text = "\n\n".join([recall_table(results, all_names), *costs])
    command = "python benchmarks/quality.py" + (" --no-llm" if args.no_llm else "")
    note = (f"`{command}`; tokens counted with {tokenizer_label('recorded')}")
    print(text + "\n\n" + note)
    if args.markdown:
        _write_markdown(args.markdown, text + "\n\n" + note)
    if args.json:
        args.json.write_text(json.dumps(payload, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
