"""One command, one table: every LLM-free retriever on both benchmarks, plus the replayed
LLM rows where recorded replies exist.

For each dataset of ``../shared/data`` (MuSiQue dev: 51 questions over 1,890 passages with
GPT-3.5 OpenIE triples; HotpotQA dev: 50 questions over 994 passages with a capable model's
triples) it builds (once) or reuses the index ``gear eval`` builds (all-MiniLM-L6-v2, the
``word`` BM25 tokenizer, triples imported from the OpenIE file, SiReRAG's LLM-free
ablation pool for ``sirerag``), runs every retriever of the table that needs no LLM and
prints Recall@2/5/10/15 and ms per question: one row per retriever, one column group per
dataset. Both datasets have a capable model's recorded replies (``*/llm-replay``): the LLM
rows of both run from them with no LLM (the endpoint is unreachable on purpose; a prompt
not in the cache fails its question), in the same table beside the LLM-free rows, and a
table per dataset gives their EM/F1, iterations, and calls and tokens per question, every
call counted with the model's tokenizer, cached or not, in total and per node. The agent's
and SyncGE's base is the default (``ppr``) unless ``--base`` names another (``hybrid``:
the first recording's rows)::

    python benchmarks/quality.py                         # every table, ~20 min on 2 cores
    python benchmarks/quality.py --base hybrid           # the LLM rows with the old base
    python benchmarks/quality.py --no-llm                # the LLM-free table only
    python benchmarks/quality.py --markdown docs/quality.md   # and write them into the doc
    python benchmarks/quality.py --no-llm --embedding-model all-mpnet-base-v2   # another encoder
    python benchmarks/quality.py --no-llm --embedding-model all-MiniLM-L6-v2,all-mpnet-base-v2

``--embedding-model`` builds (or reuses) the indexes under that model and adds a table of
their cost: seconds to build (embedding passages, triples and phrases; "reused" when the
index was there already), size on disk, and ms to embed a question. Several models
(comma-separated) give each LLM-free row once per model, named ``row · model``, and one
cost row per dataset and model.

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
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
LLM_ROWS = ("syncge", "syncge-ppr", "syncge-fused", "gear", "gear-ppr", "gear-fused")
EXTRA_LLM_ROWS = {"MuSiQue": ("hipporag+ner",)}
"""Rows only one dataset's replies answer (HippoRAG's NER prompt was recorded on MuSiQue)."""
BEGIN, END = "<!-- quality:begin -->", "<!-- quality:end -->"
KS = (2, 5, 10, 15)


def _runtime(benchmark: Any, model: str | None = None) -> Any:
    from gear_agent.cli.common import load_settings
    from gear_agent.evaluation.replay import open_benchmark

    return open_benchmark(benchmark, DATA, load_settings(None, embedding_model=model))


def _index_cost(benchmark: Any, model: str, questions: list) -> tuple[Any, list[str]]:
    """The dataset's index under ``model`` and the cells of its cost row: build seconds
    (or "reused"), MiB on disk when opened (the PPR graph's file, written by the first
    ``ppr`` query, not yet in a fresh build's), ms to embed one question (none cached
    before; the model warmed up by one text first)."""
    from gear_agent.cli.common import load_settings
    from gear_agent.evaluation.prepare import eval_index_dir

    settings = load_settings(None, embedding_model=model)
    folder = eval_index_dir(benchmark.path(DATA, "corpus.json"),
                            benchmark.path(DATA, benchmark.openie), settings.embedding_model,
                            ground_openie=settings.ground_openie)
    existed = folder.exists()
    started = time.perf_counter()
    runtime = _runtime(benchmark, model)
    built = time.perf_counter() - started
    size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    runtime.embedder.embed(["warm-up"])  # the model's first pass is not a question's cost
    started = time.perf_counter()
    for question in questions:
        runtime.encode(question.question)
    embed_ms = (time.perf_counter() - started) * 1000 / max(1, len(questions))
    build = "reused" if existed else f"{built:,.0f}"
    return runtime, [benchmark.name, runtime.embedder.name, build, f"{size / 2**20:,.1f}",
                     f"{embed_ms:.1f}"]


def _short(model: str) -> str:
    """The model's name without its organisation (``all-mpnet-base-v2``)."""
    return model.rsplit("/", 1)[-1]


def _sirerag_pool(runtime: Any) -> None:
    """SiReRAG's LLM-free ablation pool (what ``gear eval --sirerag ablation`` builds)."""
    from gear_agent.sirerag import SiReRAGSettings, build_ablation

    build_ablation(runtime.store, SiReRAGSettings(sirerag_min_propositions=2, sirerag_min_passages=1, sirerag_seed=0))


def _rows(label: str, runtime: Any, names: list[str], questions: list,
          concurrency: int = 1) -> list:
    from gear_agent.evaluation.runner import evaluate
    from gear_agent.parts import index_parts
    from gear_agent.registry import make_retriever

    for question in questions:  # shared by every row, kept out of its ms per question
        runtime.encode(question.question)
    parts = index_parts(runtime)  # one PPR graph for every row
    rows = []
    for name in names:
        retriever = make_retriever(name, parts)
        if not hasattr(retriever, "arun"):
            retriever.retrieve(questions[0].question, 15)  # lazy parts built outside timing
        started = time.perf_counter()
        rows.append(evaluate(retriever, questions, ks=KS, concurrency=concurrency))
        print(f"  {label}: {name} in {time.perf_counter() - started:.1f} s",
              file=sys.stderr, flush=True)
    return rows


def _replay_runtime(runtime: Any, benchmark: Any, base: str | None) -> Any:
    from gear_agent.evaluation.replay import REPLAY_ENDPOINT, replay_index

    os.environ.update(REPLAY_ENDPOINT)
    changes = {"base_retriever": base} if base else {}
    return replay_index(runtime, benchmark, DATA, **changes)


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
    parser.add_argument("--base", help="The replayed agent's and SyncGE's base retriever "
                        "(default: GEAR_BASE_RETRIEVER, else ppr; hybrid gives the first "
                        "recording's rows).")
    parser.add_argument("--limit", type=int, help="Only the first N questions of each set.")
    parser.add_argument("--concurrency", type=int, default=8, help="Replayed questions in flight.")
    parser.add_argument("--markdown", type=Path, help="Write the tables into this file's block.")
    parser.add_argument("--json", type=Path, help="Write every row to this JSON file.")
    parser.add_argument("--dataset", choices=["MuSiQue", "HotpotQA"],
                        help="Only this dataset (default: both).")
    parser.add_argument("--embedding-model", help="The indexes' embedding model (default: "
                        "GEAR_EMBEDDING_MODEL, else all-MiniLM-L6-v2), and a table of each "
                        "index's build time, size on disk and query embedding time.")
    args = parser.parse_args(argv)

    from gear_agent.cli.progress import quiet_third_party

    quiet_third_party()
    from gear_agent.evaluation.dataset import load_questions
    from gear_agent.evaluation.replay import BENCHMARKS
    from gear_agent.llm.tokens import tokenizer_label
    from gear_agent.parts import LLM_FREE

    names = args.retrievers.split(",") if args.retrievers else list(LLM_FREE)
    models = args.embedding_model.split(",") if args.embedding_model else [None]
    if len(models) > 1 and not args.no_llm:
        raise SystemExit("several --embedding-model values compare LLM-free rows: add --no-llm")
    row_names = (names if len(models) == 1
                 else [f"{n} · {_short(m)}" for n in names for m in models])
    results: dict[str, dict[str, Any]] = {}
    costs: list[str] = []
    payload: dict[str, Any] = {}
    llm_names: list[str] = []
    base = None
    index_rows: list[list[str]] = []
    for benchmark in BENCHMARKS:
        if args.dataset and benchmark.name != args.dataset:
            continue
        questions_file = benchmark.path(DATA, "questions.json")
        if not questions_file.is_file():
            raise SystemExit(f"benchmark data not found at {questions_file}")
        questions = load_questions(questions_file)[: args.limit]
        rows = []
        for model in models:
            if model:
                runtime, cost = _index_cost(benchmark, model, questions)
                index_rows.append(cost)
            else:
                runtime = _runtime(benchmark)
            if "sirerag" in names:
                _sirerag_pool(runtime)
            model_rows = _rows(benchmark.name, runtime, names, questions)
            if len(models) > 1:
                model_rows = [replace(row, retriever=f"{row.retriever} · {_short(model)}")
                              for row in model_rows]
            rows += model_rows
        if not args.no_llm:
            replay = _replay_runtime(runtime, benchmark, args.base)
            base = replay.settings.base_retriever
            wanted = [*LLM_ROWS, *EXTRA_LLM_ROWS.get(benchmark.name, ())]
            llm_rows = _rows(benchmark.name, replay, wanted, questions, args.concurrency)
            llm_names += [n for n in wanted if n not in llm_names]
            rows += llm_rows
            costs.append(cost_table(benchmark.name, llm_rows))
        results[benchmark.name] = {r.retriever: r for r in rows}
        payload[benchmark.name] = [r.as_json() for r in rows]
    if index_rows:
        header = ["dataset", "model", "build s", "index MiB", "query embedding ms/q"]
        costs.insert(0, "\n".join("| " + " | ".join(r) + " |" for r in
                                   [header, ["---"] * len(header), *index_rows]))
    text = "\n\n".join([recall_table(results, row_names + llm_names), *costs])
    command = "python benchmarks/quality.py" + (" --no-llm" if args.no_llm else "")
    if args.dataset:
        command += f" --dataset {args.dataset}"
    if args.embedding_model:
        command += f" --embedding-model {args.embedding_model}"
    if args.base:
        command += f" --base {args.base}"
    note = f"`{command}`"
    if base:
        note += (f"; LLM rows replayed with {base} as the agent's and SyncGE's base; tokens "
                 f"counted with {tokenizer_label('recorded')}")
    print(text + "\n\n" + note)
    if args.markdown:
        _write_markdown(args.markdown, text + "\n\n" + note)
    if args.json:
        args.json.write_text(json.dumps(payload, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
