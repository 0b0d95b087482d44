"""`gear graph export`: the index's entity graph as GraphML or JSON for Gephi, Cytoscape or
networkx (the logic is :mod:`gear_agent.graph_export`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from gear_agent.cli.common import IndexOpt, console, load_settings, reports_errors
from gear_agent.cli.search_cmd import retriever_help
from gear_agent.cli.usage import CONTEXT, GearCommand, GearGroup
from gear_agent.registry import DEFAULT_RETRIEVER

app = typer.Typer(
    help="Look at the entity graph: export it for Gephi, Cytoscape or networkx.",
    cls=GearGroup, context_settings=CONTEXT, no_args_is_help=True,
)


@app.command("export", cls=GearCommand)
@reports_errors
def export(
    out: Annotated[Path | None, typer.Argument(
        metavar="[FILE]", help="File to write (graph.graphml, graph.json, ...); default: stdout.")] = None,
    fmt: Annotated[str | None, typer.Option(
        "--format", "-f", metavar="graphml|json|cytoscape",
        help="Format: graphml (Gephi, Cytoscape, yEd, networkx.read_graphml), json (node-link: "
             "networkx.node_link_graph, d3) or cytoscape (Cytoscape.js elements); default: "
             "from FILE's extension (.json, .cyjs), else graphml.")] = None,
    entity: Annotated[str | None, typer.Option(
        metavar="NAME", help="Only the neighbourhood of this entity (see --hops).")] = None,
    hops: Annotated[int, typer.Option(min=1, metavar="N", help="With --entity: triples this many steps away.")] = 1,
    question: Annotated[str | None, typer.Option(
        metavar="TEXT", help="Only the triple chains that reach this question's passages "
                             "(runs --retriever; loads the embedding model).")] = None,
    retriever: Annotated[str, typer.Option(
        metavar="NAME", help=retriever_help("With --question, the retriever:"))] = DEFAULT_RETRIEVER,
    k: Annotated[int, typer.Option(min=1, metavar="N", help="With --question: passages to follow.")] = 5,
    trace: Annotated[Path | None, typer.Option(
        metavar="FILE", help="Only the chains of a traced run's final passages (gear-trace.jsonl).")] = None,
    run_id: Annotated[str | None, typer.Option(
        "--run", metavar="ID", help="With --trace: run id or unique prefix (default: the last run).")] = None,
    no_passages: Annotated[bool, typer.Option(
        "--no-passages", help="Entities and triples only: no passage nodes.")] = False,
    text_chars: Annotated[int, typer.Option(
        min=0, metavar="N", help="Passage text kept on each passage node, in characters (0: none).")] = 300,
    index_dir: IndexOpt = None,
) -> None:
    """Write the entity graph: entities and passages as nodes, triples (subject → object,
    labelled by the predicate) and mentions (passage → entity) as edges.

    The whole index by default, or one view: --entity NAME --hops N, --question TEXT, or
    --trace FILE. Loads no embedding model except for --question.
    """
    from gear_agent.graph_export import FORMATS, ExportOptions, GraphExportError, format_for

    fmt = fmt or format_for(out)
    if fmt not in FORMATS:
        raise GraphExportError(f"unknown --format {fmt!r}; known: {', '.join(FORMATS)}")
    views = [name for name, given in (("--entity", entity), ("--question", question),
                                      ("--trace", trace)) if given is not None]
    if len(views) > 1:
        raise GraphExportError(f"choose one of {', '.join(views)}")
    settings = load_settings(index_dir)
    options = ExportOptions(passages=not no_passages, text_chars=text_chars)
    if question is not None:
        graph = _question_graph(settings, question, retriever, k, options)
    else:
        from gear_agent.cli.checks import open_store_without_model

        if trace is not None:
            runs = _traced_passages(trace, run_id)  # read before opening the index
        store = open_store_without_model(settings)
        if entity is not None:
            from gear_agent.graph_export import entity_neighbourhood

            graph = entity_neighbourhood(store, entity, hops, options)
        elif trace is not None:
            from gear_agent.graph_export import chains_graph

            graph = chains_graph(store, runs, options)
        else:
            from gear_agent.graph_export import index_graph

            graph = index_graph(store, options)
    data = graph.to_bytes(fmt)  # type: ignore[arg-type]
    if out is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
    counts = graph.counts()
    console.print(
        f"wrote {out or 'stdout'} ({fmt}): {counts['entities']:,} entities, {counts['passages']:,} passages, "
        f"{counts['triples']:,} triples, {counts['mentions']:,} mentions"
        + (f", {counts['reached']:,} reached" if counts["reached"] else ""),
        highlight=False, soft_wrap=True,
    )


def _question_graph(settings, question: str, retriever: str, k: int, options):
    from gear_agent.cli.checks import require_index, require_llm, warn_without_triples
    from gear_agent.cli.progress import ProgressBoard, report_graph_build
    from gear_agent.graph_export import chains_graph
    from gear_agent.open_index import OpenIndex
    from gear_agent.parts import index_parts
    from gear_agent.questions import check_question
    from gear_agent.registry import check_name, make_retriever
    from gear_agent.retrieval.records import passage_records

    question = check_question(question, settings.max_question_chars)
    spec = check_name(retriever)
    require_index(settings)
    if spec.needs_llm:
        require_llm(settings)
    parts = index_parts(OpenIndex.open(settings))
    warn_without_triples(spec, parts.store)
    with ProgressBoard() as board, board.embedding():
        report_graph_build(parts.ppr(), board)
        ranked = make_retriever(retriever, parts).retrieve(question, k)
    return chains_graph(parts.store, passage_records(parts.store, ranked), options)


def _traced_passages(path: Path, run_id: str | None):
    """The final passages of a traced run, as the run recorded them (with their chains)."""
    from gear_agent.cli.trace_cmd import final_passages
    from gear_agent.retrieval.records import PassageRecord
    from gear_agent.tracing.reader import build_tree, read_runs

    tree = build_tree(read_runs(path), run_id)
    return [PassageRecord.from_dict(p) for p in final_passages(tree.record)]
