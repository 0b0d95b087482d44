"""`gear eval` (benchmark retrievers on a question set) and `gear retrievers` (the table)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from gear_agent.cli.common import SafeConsole, console, load_settings, reports_errors
from gear_agent.cli.search_cmd import retriever_help
from gear_agent.cli.tables import Grid, print_grid

DEFAULT_RETRIEVERS = "bm25,dense,hybrid,bm25+naive_ge,dense+naive_ge,hybrid+naive_ge"


def _overrides(scorer: str | None, no_diversity: bool, base_k: int | None, tokenizer: str | None) -> dict:
    values: dict = {"beam_scorer": scorer, "base_k": base_k, "bm25_tokenizer": tokenizer}
    if no_diversity:
        values["beam_diverse"] = False
    return values


@reports_errors
def eval_(
    questions: Annotated[Path, typer.Option(metavar="FILE", help="HippoRAG-format questions JSON.")],
    corpus: Annotated[Path, typer.Option(metavar="CORPUS", help="Corpus (.json/.jsonl/folder) the questions run over.")],
    openie: Annotated[Path | None, typer.Option(metavar="FILE", help="HippoRAG OpenIE triples for the corpus.")] = None,
    retrievers: Annotated[str, typer.Option(
        metavar="A,B,...", show_default=False,
        help=retriever_help("Comma-separated retriever names:")
        + " Default: the six LLM-free base and NaiveGE rows.")] = DEFAULT_RETRIEVERS,
    json_out: Annotated[Path | None, typer.Option("--json", metavar="FILE", help="Write the rows to this JSON file.")] = None,
    scorer: Annotated[str | None, typer.Option(metavar="auto|sum|concat|rerank|shortlist", help="Beam sequence scorer (GEAR_BEAM_SCORER; auto: shortlist with an LLM, sum without); GEAR_BEAM_ENCODER=int8 encodes its sequences with the int8 ONNX model.")] = None,
    no_diversity: Annotated[bool, typer.Option("--no-diversity", help="Plain beam search.")] = False,
    base_k: Annotated[int | None, typer.Option(min=1, metavar="N", help="Passages the base retriever hands to expansion (15).")] = None,
    limit: Annotated[int | None, typer.Option(min=1, metavar="N", help="Only the first N questions.")] = None,
    concurrency: Annotated[int, typer.Option(min=1, metavar="N", help="Questions in flight at once (LLM rows).")] = 1,
    index_dir: Annotated[Path | None, typer.Option(
        "--index", metavar="DIR", help="Index to use; default: a cache folder per corpus and model.")] = None,
    tokenizer: Annotated[str | None, typer.Option(metavar="standard|word", help="BM25 tokenizer (GEAR_BM25_TOKENIZER).")] = None,
    sirerag: Annotated[str | None, typer.Option(metavar="ablation|full", help=(
        "Build (or bring up to date) the SiReRAG pool in this mode before the rows run "
        "(as `gear sirerag build --mode`); default: use the pool the index holds."))] = None,
) -> None:
    """Recall@2/5/10/15 and ms/query per retriever; for LLM rows EM/F1, calls and tokens per
    question (every call counted with the model's tokenizer, cached or not; billed tokens
    apart) and per node, and iterations."""
    from gear_agent.cli.checks import require_index, require_llm, warn_without_triples
    from gear_agent.cli.progress import ProgressBoard, report_graph_build
    from gear_agent.errors import UnknownNameError
    from gear_agent.evaluation.dataset import load_questions
    from gear_agent.evaluation.prepare import eval_index_dir, prepare_index
    from gear_agent.evaluation.runner import evaluate
    from gear_agent.parts import index_parts
    from gear_agent.registry import RETRIEVERS, check_name, make_retriever

    settings = load_settings(None, **_overrides(scorer, no_diversity, base_k, tokenizer))
    if sirerag is not None:
        from gear_agent.cli.sirerag_cmd import check_mode

        check_mode(sirerag)
    names = [check_name(n.strip()).name for n in retrievers.split(",") if n.strip()]
    if not names:
        raise UnknownNameError(f"--retrievers names no retriever; known: {', '.join(RETRIEVERS)}")
    if any(check_name(name).needs_llm for name in names) or sirerag == "full":
        require_llm(settings)  # no key or endpoint: one clear line now, not after indexing
    qs = load_questions(questions)[:limit] if limit else load_questions(questions)
    folder = index_dir or eval_index_dir(corpus, openie, settings.embedding_model,
                                         ground_openie=settings.ground_openie)
    settings = settings.model_copy(update={"index_dir": folder})
    require_index(settings, missing_ok=True)  # a cached index of another model: say so now
    console.print(f"index: {folder}")
    with ProgressBoard() as board, board.embedding():
        index, _ = prepare_index(settings, corpus, openie, board.stage)
        parts = index_parts(index)
        report_graph_build(parts.ppr(), board)
        if sirerag is not None:
            from gear_agent.cli.sirerag_cmd import print_report, run_build, sirerag_settings

            options = sirerag_settings(index.settings, concurrency=concurrency)
            print_report(run_build(index.store, sirerag, options))
        from gear_agent.store.backends import node_store_of

        builders = {name: make_retriever(name, parts) for name in names}
        for name in names:
            warn_without_triples(check_name(name), index.store)
            if name.endswith("sirerag") and not node_store_of(index.store).count():
                console.print(f"[yellow]{name}: the index holds no SiReRAG nodes, so the pool is the "
                              "passages alone (build it with --sirerag ablation|full)[/]")
        embedded = board.counter("embed questions", unit="questions")
        for done, question in enumerate(qs, start=1):  # shared by every row, out of its ms/query
            index.encode(question.question)
            embedded(done, len(qs))
        rows = []
        for name, retriever in builders.items():
            if not hasattr(retriever, "arun"):  # warm-up: lazy indexes are built outside timing
                retriever.retrieve(qs[0].question, 15)
            row = evaluate(retriever, qs, concurrency=concurrency,
                           progress=board.counter(f"eval {name}", unit="questions"))
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
    out = SafeConsole()
    print_grid(recall_grid(rows, settings), out)
    costed = [r for r in rows if r.by_node]
    if costed:
        print_grid(cost_grid(costed, settings), out)


def recall_grid(rows, settings) -> Grid:
    """One row per retriever: Recall@k and ms/query; for LLM rows EM/F1, calls, tokens
    (counted and billed) and iterations per question."""
    extra = any(r.em is not None or r.tokens_per_question is not None
                or r.calls_per_question is not None for r in rows)
    ks = sorted(rows[0].recall) if rows else []
    columns = ["retriever", *(f"R@{k}" for k in ks), "ms/query"]
    if extra:
        columns += ["EM", "F1", "calls/q", "tokens/q", "billed/q", "iter/q"]
    cells = []
    for r in rows:
        row = [r.retriever, *(f"{100 * r.recall[k]:.1f}" for k in sorted(r.recall)),
               f"{r.ms_per_query:.1f}"]
        if extra:
            row += [
                _cell(r.em, 100, ".1f"), _cell(r.f1, 100, ".1f"),
                _cell(r.calls_per_question, 1, ".2f"),
                _cell(r.counted_tokens_per_question, 1, ",.0f"),
                _cell(r.tokens_per_question, 1, ",.0f"),
                _cell(r.iterations_per_question, 1, ".2f"),
            ]
        cells.append(row)
    title = (f"scorer={settings.beam_scorer} diverse={settings.beam_diverse} "
             f"base_k={settings.base_k} tokenizer={settings.bm25_tokenizer}")
    return Grid(title, tuple(columns), cells)


def _cell(value: float | None, scale: float, spec: str) -> str:
    return "-" if value is None else format(scale * value, spec)


def cost_grid(rows, settings) -> Grid:
    """Per node: LLM calls and tokens per question, every call counted (cached or not)."""
    from gear_agent.llm.tokens import tokenizer_label

    cells = [(r.retriever, node, f"{cost.calls:.2f}", f"{cost.prompt_tokens:,.0f}",
              f"{cost.completion_tokens:,.0f}")
             for r in rows for node, cost in r.by_node.items()]
    return Grid("LLM calls per question, by node (every call, cached or not; "
                f"tokens: {tokenizer_label(settings.llm_model)})",
                ("retriever", "node", "calls/q", "prompt tokens/q", "completion tokens/q"),
                cells, left=2)


@reports_errors
def retrievers_() -> None:
    """List every retriever name: what it does and whether it needs an LLM or triples."""

    from gear_agent.registry import DEFAULT_RETRIEVER, DEFAULT_WHY, RETRIEVERS

    rows = [(f"{spec.name} (default)" if spec.name == DEFAULT_RETRIEVER else spec.name,
             "yes" if spec.needs_llm else "-", "yes" if spec.needs_triples else "-",
             spec.score, spec.description) for spec in RETRIEVERS.values()]
    out = SafeConsole()
    print_grid(Grid("retrievers (gear search --retriever NAME, gear eval --retrievers A,B)",
                    ("name", "LLM", "triples", "score", "what it does"), rows, left=5), out)
    out.print(f"default: {DEFAULT_RETRIEVER}, {DEFAULT_WHY}", markup=False, highlight=False)
