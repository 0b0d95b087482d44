"""`gear search`: one question, the ranked passages with the triple chains that reached them,
and scores a reader can interpret."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape

from gear_agent.cli.common import IndexOpt, SafeConsole, console, load_settings, reports_errors
from gear_agent.registry import DEFAULT_RETRIEVER, RETRIEVERS, ScoreKind


def retriever_help(prefix: str) -> str:
    """Option help listing every retriever name of the table, LLM ones marked.

    Example:
        >>> "hybrid+naive_ge" in retriever_help("Retriever:")
        True
    """
    free = [name for name, spec in RETRIEVERS.items() if not spec.needs_llm]
    llm = [name for name, spec in RETRIEVERS.items() if spec.needs_llm]
    return (f"{prefix} {', '.join(free)}; with an LLM: {', '.join(llm)}. "
            "`gear retrievers` says what each does.")


def describe_score(kind: ScoreKind, score: float, rrf_k: int | None = None) -> str:
    """A score as a reader can take it: its kind, its value and, where it helps, a scale
    (``rrf_k``: the setting's default when None).

    Example:
        >>> describe_score("rrf", 2 / 61)
        'RRF 0.0328 = 2.00× a first place'
        >>> describe_score("ppr", 0.0123)
        'PPR 1.23%'
    """
    if kind == "rrf":
        from gear_agent.retrieval.fusion import rrf_constant

        return f"RRF {score:.4f} = {score * (rrf_constant(rrf_k) + 1):.2f}× a first place"
    if kind == "cosine":
        return f"cosine {score:.3f}"
    if kind == "ppr":
        return f"PPR {100 * score:.2f}%"
    return f"BM25 {score:.2f}"


@reports_errors
def search(
    question: Annotated[str, typer.Argument(metavar="QUESTION", help="The question or query.")],
    retriever: Annotated[str, typer.Option(
        metavar="NAME", help=retriever_help("Retriever:"))] = DEFAULT_RETRIEVER,
    k: Annotated[int, typer.Option(min=1, metavar="N", help="Passages to show (at least 1).")] = 5,
    index_dir: IndexOpt = None,
    where: Annotated[list[str] | None, typer.Option(
        "--where", "-w", metavar="KEY OP VALUE",
        help="Only passages passing this filter, applied before ranking; repeat to AND. "
             "OP is = != > >= < <=; keys: source (a file or any folder above it), title, id, "
             "or a metadata key. E.g. --where source=reports/2024 --where 'year>=2020'.")] = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print one JSON object (passages with metadata and chains) instead.")] = False,
) -> None:
    """Print the ranked passages for a question, each with the triple chain that reached it.

    Each passage shows its rank and its score, named by kind: RRF (reciprocal rank
    fusion: the sum of 1/(60 + rank) over the fused lists, 60 being GEAR_RRF_K; also shown
    as a multiple of one first place, so 2.00× = first in two lists), cosine similarity
    (-1 to 1), BM25 (unbounded: compare within one list) or PPR (the passage's share of
    the random walk, in percent).
    """

    from gear_agent.cli.checks import (
        require_index,
        require_llm,
        require_passing_filter,
        warn_without_triples,
    )
    from gear_agent.cli.progress import ProgressBoard, report_graph_build
    from gear_agent.filters import parse_where
    from gear_agent.questions import check_question
    from gear_agent.registry import check_name

    settings = load_settings(index_dir)
    question = check_question(question, settings.max_question_chars)
    spec = check_name(retriever)
    parsed = parse_where(where)  # a malformed filter fails before anything loads
    require_index(settings)
    require_passing_filter(settings, parsed)  # and so does one that no passage passes
    if spec.needs_llm:
        require_llm(settings)  # last: building the client imports the provider package
    # Every check passed: only now load the embedding model and the index.
    from gear_agent.open_index import OpenIndex
    from gear_agent.parts import index_parts
    from gear_agent.registry import make_retriever
    from gear_agent.retrieval.filtering import checked_where
    from gear_agent.retrieval.records import passage_records

    with console.status("loading the embedding model and the index"):
        parts = index_parts(OpenIndex.open(settings))
    warn_without_triples(spec, parts.store)
    checked = checked_where(parts.store, where)  # says so when no passage passes
    with ProgressBoard() as board, board.embedding():  # a PPR graph's first build is long
        report_graph_build(parts.ppr(), board)
        with parts.store.snapshot():  # the ranking and the records of one commit
            ranked = make_retriever(retriever, parts).retrieve(question, k, checked)
            records = passage_records(parts.store, ranked)
    if as_json:
        report = {
            "question": question,
            "retriever": spec.name,
            "where": None if checked is None else checked.to_dict(),
            "score_kind": spec.score,
            "passages": [r.to_dict() for r in records],
        }
        typer.echo(json.dumps(report, ensure_ascii=False, indent=2))
        return
    out = SafeConsole()
    for rank, record in enumerate(records, start=1):
        score = describe_score(spec.score, record.score, settings.rrf_k)
        where = f"{escape(record.location)} · " if record.location else ""
        out.print(f"[bold]{rank}. {escape(record.title)}[/]  [dim]{where}{score} · {record.id}[/]",
                  highlight=False)
        out.print(f"   {record.text[:300]}{'…' if len(record.text) > 300 else ''}", highlight=False, markup=False)
        arrow = "⇢ seed" if record.chain_kind == "seeds" else "↳"  # PPR seeds whose mass reached it
        for triple in record.chain:
            out.print(f"   {arrow} ({triple.subject}; {triple.predicate}; {triple.object})",
                      style="cyan", highlight=False, markup=False)
    if not ranked:
        out.print("no passages found")

