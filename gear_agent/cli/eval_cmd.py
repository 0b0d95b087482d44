"""`gear eval` (benchmark retrievers) and `gear search` (one question, ranked passages)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from gear_agent.cli.common import console, load_settings, progress_bar, reports_errors

DEFAULT_RETRIEVERS = "bm25,dense,hybrid,bm25+naive_ge,dense+naive_ge,hybrid+naive_ge"


def _overrides(scorer: str | None, no_diversity: bool, base_k: int | None, tokenizer: str | None) -> dict:
    values: dict = {"beam_scorer": scorer, "base_k": base_k, "bm25_tokenizer": tokenizer}
    if no_diversity:
        values["beam_diverse"] = False
    return values


@reports_errors
def eval_(
    questions: Annotated[Path, typer.Option(help="HippoRAG-format questions JSON.")],
    corpus: Annotated[Path, typer.Option(help="Corpus (.json/.jsonl/folder) the questions run over.")],
    openie: Annotated[Path | None, typer.Option(help="HippoRAG OpenIE triples for the corpus.")] = None,
    retrievers: Annotated[str, typer.Option(help="Comma-separated retriever names.")] = DEFAULT_RETRIEVERS,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the rows to this JSON file.")] = None,
    scorer: Annotated[str | None, typer.Option(help="Beam sequence scorer: sum or concat.")] = None,
    no_diversity: Annotated[bool, typer.Option("--no-diversity", help="Plain beam search.")] = False,
    base_k: Annotated[int | None, typer.Option(help="Passages the base retriever hands to expansion (15).")] = None,
    limit: Annotated[int | None, typer.Option(help="Only the first N questions.")] = None,
    concurrency: Annotated[int, typer.Option(help="Questions in flight at once (LLM rows).")] = 1,
    index_dir: Annotated[Path | None, typer.Option("--index", help="Index to use; default: a cache folder per corpus and model.")] = None,
    tokenizer: Annotated[str | None, typer.Option(help="BM25 tokenizer: standard or word.")] = None,
) -> None:
    """Recall@5/10/15 and ms/query (EM/F1, tokens, iterations for LLM rows) per retriever."""
    from gear_agent.evaluation.dataset import load_questions
    from gear_agent.evaluation.prepare import eval_index_dir, prepare_index
    from gear_agent.evaluation.runner import evaluate
    from gear_agent.retrieval.registry import NEEDS_LLM, check_name, make_retriever

    settings = load_settings(None, **_overrides(scorer, no_diversity, base_k, tokenizer))
    names = [check_name(n.strip()) for n in retrievers.split(",") if n.strip()]
    if any(name in NEEDS_LLM for name in names):
        from gear_agent.llm import make_chat_model

        make_chat_model(settings)  # no key or endpoint: one clear line now, not after indexing
    qs = load_questions(questions)[:limit] if limit else load_questions(questions)
    folder = index_dir or eval_index_dir(corpus, openie, settings.embedding_model)
    settings = settings.model_copy(update={"index_dir": folder})
    console.print(f"index: {folder}")
    runtime, _ = prepare_index(settings, corpus, openie, progress_bar())
    builders = {name: make_retriever(name, runtime) for name in names}  # fail fast on bad names
    for question in qs:  # query embeddings shared by every row, kept out of its ms/query
        runtime.encode(question.question)
    rows = []
    for name, retriever in builders.items():
        if not hasattr(retriever, "arun"):  # warm-up: lazy indexes are built outside timing
            retriever.retrieve(qs[0].question, 15)
        bar = progress_bar()
        row = evaluate(retriever, qs, concurrency=concurrency,
                       progress=lambda done, total, name=name, bar=bar: bar(name, done, total))
        rows.append(row)
        for message in row.error_examples:
            console.print(f"[yellow]{name}: {row.errors} questions failed, e.g. {message}[/]")
    _print_rows(rows, settings)
    if json_out:
        payload = {
            "rows": [r.as_json() for r in rows],
            "questions": len(qs),
            "settings": {
                "embedding_model": settings.embedding_model, "bm25_tokenizer": settings.bm25_tokenizer,
                "base_k": settings.base_k, "beam_width": settings.beam_width,
                "beam_length": settings.beam_length, "beam_neighbours": settings.beam_neighbours,
                "beam_scorer": settings.beam_scorer, "beam_diverse": settings.beam_diverse,
                "rrf_k": settings.rrf_k,
            },
        }
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(payload, indent=2), encoding="utf-8")
        console.print(f"rows written to {json_out}")


def _print_rows(rows, settings) -> None:
    table = Table(title=f"scorer={settings.beam_scorer} diverse={settings.beam_diverse} "
                        f"base_k={settings.base_k} tokenizer={settings.bm25_tokenizer}")
    extra = any(r.em is not None or r.tokens_per_question is not None for r in rows)
    for column in ("retriever", "R@5", "R@10", "R@15", "ms/query"):
        table.add_column(column, justify="left" if column == "retriever" else "right")
    if extra:
        for column in ("EM", "F1", "tokens/q", "iter/q"):
            table.add_column(column, justify="right")
    for r in rows:
        cells = [r.retriever, *(f"{100 * r.recall[k]:.1f}" for k in sorted(r.recall)),
                 f"{r.ms_per_query:.1f}"]
        if extra:
            cells += [
                "-" if r.em is None else f"{100 * r.em:.1f}",
                "-" if r.f1 is None else f"{100 * r.f1:.1f}",
                "-" if r.tokens_per_question is None else f"{r.tokens_per_question:.0f}",
                "-" if r.iterations_per_question is None else f"{r.iterations_per_question:.2f}",
            ]
        table.add_row(*cells)
    from rich.console import Console

    Console().print(table)


@reports_errors
def search(
    question: Annotated[str, typer.Argument(help="The question or query.")],
    retriever: Annotated[str, typer.Option(help="Retriever name (see gear eval).")] = "hybrid+naive_ge",
    k: Annotated[int, typer.Option(help="Passages to show.")] = 5,
    index_dir: Annotated[Path | None, typer.Option("--index", "-i", help="Index directory.")] = None,
) -> None:
    """Print the ranked passages for a question, each with the triple chain that reached it."""
    from rich.console import Console

    from gear_agent.questions import check_question
    from gear_agent.retrieval.registry import check_name, make_retriever
    from gear_agent.runtime import Runtime

    settings = load_settings(index_dir)
    question = check_question(question, settings.max_question_chars)
    check_name(retriever)
    runtime = Runtime.open(settings)
    ranked = make_retriever(retriever, runtime).retrieve(question, k)
    out = Console()
    for rank, (item, passage) in enumerate(
        zip(ranked, runtime.store.get_passages([p.id for p in ranked])), start=1
    ):
        out.print(f"[bold]{rank}. {passage.title}[/]  [dim]{passage.id}  score {item.score:.4f}[/]")
        out.print(f"   {passage.text[:300]}{'…' if len(passage.text) > 300 else ''}", highlight=False)
        for triple in runtime.store.get_triples(list(item.chain)):
            out.print(f"   [cyan]↳ ({triple.subject}; {triple.predicate}; {triple.object})[/]",
                      highlight=False)
    if not ranked:
        out.print("no passages found")
