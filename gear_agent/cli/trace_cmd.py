"""`gear trace show FILE [RUN_ID]`: a traced run as a tree of steps with time, tokens and outputs."""

from __future__ import annotations

import ast
import datetime as dt
import re
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.tree import Tree

from gear_agent.cli.common import SafeConsole, reports_errors
from gear_agent.cli.usage import CONTEXT, GearCommand, GearGroup

app = typer.Typer(help="Inspect JSON Lines run traces (GEAR_TRACE_DIR).", no_args_is_help=True,
                  cls=GearGroup, context_settings=CONTEXT)

HIDDEN = {"after_reason"}
"""Routing runs that say nothing a reader needs; shown with --all."""
SHOWN_ITEMS = 5
"""Items listed per output field (queries, triples, passages)."""


@app.command("show", cls=GearCommand)
@reports_errors
def show(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="A gear-trace.jsonl file (or a rotated .N copy).")],
    run_id: Annotated[str | None, typer.Argument(metavar="[RUN_ID]", help="Run id or unique prefix; default: the last run.")] = None,
    all_runs: Annotated[bool, typer.Option("--all", help="Also show wrapper and routing runs.")] = False,
    chains_only: Annotated[bool, typer.Option("--chains", help="Only the question's triple chains, as a tree.")] = False,
) -> None:
    """Print one run as a tree: each step's time, tokens and key outputs; then the question's
    triple chains as a tree (question → triple → next triple → the passage it reached)."""
    from gear_agent.tracing.reader import build_tree, read_runs

    tree = build_tree(read_runs(file), run_id)
    console = SafeConsole()
    if not chains_only:
        console.print(render(tree, all_runs=all_runs))
    chains = chain_tree(tree.record)
    if chains is not None:
        console.print(chains)
    elif chains_only:
        console.print("this run has no final passages with triple chains")


@app.command("list", cls=GearCommand)
@reports_errors
def list_(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="A gear-trace.jsonl file.")],
) -> None:
    """The root runs in the file: id, start time, duration, question, error."""
    from gear_agent.tracing.reader import read_runs, roots

    console = SafeConsole()
    for run in roots(read_runs(file)):
        question = (run.get("inputs") or {}).get("question", "")
        status = "[red]error[/]" if run.get("error") else "ok"
        console.print(
            f"{run['id']}  {run.get('start_time', '')}  {_duration(run)}  {status}  "
            f"{escape(str(question))[:80]}"
        )


def final_passages(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The ranked passages a traced run ended with (its ``passages`` output), each a dict
    with ``id``, ``title``, ``score``, ``chain`` (``[subject, predicate, object]`` lists)
    and ``chain_ids``.

    Example:
        >>> final_passages({"outputs": {"passages": [{"id": "p-1", "chain": []}]}})
        [{'id': 'p-1', 'chain': []}]
    """
    outputs = record.get("outputs")
    value = _value(outputs.get("passages")) if isinstance(outputs, dict) else None
    if not isinstance(value, list):
        return []
    return [p for p in value if isinstance(p, dict) and p.get("id")]


def chain_tree(record: dict[str, Any]) -> Tree | None:
    """The question's triple chains as a tree, or None when no final passage has a chain.

    Chains sharing their first triples share those branches; under a chain's last triple
    hang the passages it reached, with their rank and score. Passages found without a
    chain (by passage search) are listed last.
    """
    passages = final_passages(record)
    if not any(p.get("chain") for p in passages):
        return None
    question = (record.get("inputs") or {}).get("question") if isinstance(record.get("inputs"), dict) else None
    root = Tree(f"[bold]chains[/]  [dim]{escape(_short(question, 120)) if question else ''}[/]")
    branches: dict[tuple[str, ...], Tree] = {}
    unchained = []
    for rank, passage in enumerate(passages, start=1):
        chain = [_triple_text(t) for t in passage.get("chain") or []]
        if chain and passage.get("chain_kind") == "seeds":  # not a path: one branch of seeds
            chain = ["seeds whose PPR mass reached it: " + " · ".join(chain)]
        if not chain:
            unchained.append((rank, passage))
            continue
        parent, path = root, ()
        for triple in chain:
            path = (*path, triple)
            if path not in branches:
                branches[path] = parent.add(f"[cyan]{escape(triple)}[/]")
            parent = branches[path]
        parent.add(_reached(rank, passage))
    if unchained:
        plain = root.add("[dim]found without a chain (passage search)[/]")
        for rank, passage in unchained:
            plain.add(_reached(rank, passage))
    return root


def _triple_text(triple: Any) -> str:
    if isinstance(triple, (list, tuple)):
        return "(" + "; ".join(str(part) for part in triple) + ")"
    return str(triple)


def _reached(rank: int, passage: dict[str, Any]) -> str:
    score = passage.get("score")
    shown = f"  [dim]{score:.4f}[/]" if isinstance(score, (int, float)) else ""
    title = passage.get("title") or passage.get("id")
    return f"[green]#{rank} {escape(_short(title, 100))}[/]{shown}"


def render(node: Any, *, all_runs: bool = False) -> Tree:
    """A rich ``Tree`` of a ``TraceNode``."""
    tree = Tree(_label(node.record))
    _details(tree, node.record)
    _grow(tree, node, all_runs)
    return tree


def _grow(tree: Tree, node: Any, all_runs: bool) -> None:
    for child in node.children:
        record = child.record
        if not all_runs and _is_wrapper(record, node.record):
            _grow(tree, child, all_runs)  # show its children in its place
            continue
        if not all_runs and record.get("name") in HIDDEN:
            continue
        branch = tree.add(_label(record))
        if record.get("outputs") != node.record.get("outputs") or record.get("error"):
            _details(branch, record)  # (outputs are not repeated under a wrapper)
        _grow(branch, child, all_runs)


def _is_wrapper(record: dict[str, Any], parent: dict[str, Any]) -> bool:
    """A node's inner runnable that repeats the node's name (LangGraph wraps each node)."""
    return record.get("name") == parent.get("name") and record.get("run_type") == "chain"


def _label(record: dict[str, Any]) -> str:
    parts = [f"[bold]{escape(str(record.get('name')))}[/]", f"[dim]{record.get('run_type')}[/]",
             _duration(record)]
    tokens = record.get("tokens")
    if tokens:
        parts.append(f"[cyan]{tokens.get('input', 0)}+{tokens.get('output', 0)} tok[/]")
    if record.get("error"):
        parts.append("[bold red]failed[/]")
    return "  ".join(parts)


def error_text(error: Any) -> str:
    """A traced error as a person reads it: ``Type: message``, without the traceback the
    tracer appends and without the repr's quotes and escapes.

    Example:
        >>> error_text("LLMCallError(\"LLM call failed (model='m')\")Traceback (most recent call last):\n  ...")
        "LLMCallError: LLM call failed (model='m')"
    """
    text = str(error).split("Traceback (most recent call last):", 1)[0].strip()
    match = re.fullmatch(r"(\w+)\((.*)\)", text, re.S)
    if match:
        try:
            message = ast.literal_eval(match.group(2))  # the repr's quoted message, never code
        except (ValueError, SyntaxError):
            message = match.group(2)
        text = f"{match.group(1)}: {message}"
    return text or "error"


def _duration(record: dict[str, Any]) -> str:
    try:
        start = dt.datetime.fromisoformat(record["start_time"])
        end = dt.datetime.fromisoformat(record["end_time"])
    except (KeyError, TypeError, ValueError):
        return "?"
    ms = (end - start).total_seconds() * 1000
    return f"{ms / 1000:.2f} s" if ms >= 1000 else f"{ms:.0f} ms"


def _details(tree: Tree, record: dict[str, Any]) -> None:
    """Key outputs of a GEAR step: queries, triples, passages, verdict, answer."""
    outputs = record.get("outputs") or {}
    if record.get("error"):
        tree.add(f"[bold red]error:[/] [red]{escape(error_text(record['error']))}[/]")
    if record.get("run_type") in ("llm", "chat"):
        text = _llm_text(outputs)
        if text:
            tree.add(f"[dim]reply:[/] {escape(_short(text, 160))}")
        return
    if not isinstance(outputs, dict):
        return
    root = record.get("parent_run_id") is None
    if root:
        question = (record.get("inputs") or {}).get("question")
        if question:
            tree.add(f"[dim]question:[/] {escape(_short(question, 160))}")
        _answer(tree, outputs)  # the answer first, where a person looks
    for key, label in (("query", "query"), ("queries", "queries")):
        value = _value(outputs.get(key))
        if isinstance(value, str) and value:
            tree.add(f"[dim]{label}:[/] {escape(_short(value, 160))}")
        elif isinstance(value, list) and value and record.get("parent_run_id") is None:
            _items(tree, label, value, _short)
    for key in ("proximal", "gist_memory"):
        value = _value(outputs.get(key))
        if isinstance(value, list) and value:
            _items(tree, key, value, lambda t: " | ".join(str(p) for p in t) if isinstance(t, list) else str(t))
    for key in ("base", "passages"):
        value = _value(outputs.get(key))
        if isinstance(value, list) and value:
            _items(tree, key, value, _passage)
    retrieved = _value(outputs.get("retrieved"))
    if isinstance(retrieved, list) and retrieved and isinstance(retrieved[-1], list):
        _items(tree, "retrieved", retrieved[-1], _passage)
    if "answerable" in outputs and record.get("name") == "reason":
        tree.add(f"[dim]answerable:[/] {outputs.get('answerable')}  [dim]reason:[/] "
                 f"{escape(str(outputs.get('reason')))}")
    if not root:
        _answer(tree, outputs)
    if outputs.get("stop_reason"):
        tree.add(f"[dim]stop_reason:[/] {escape(str(outputs['stop_reason']))}")


def _answer(tree: Tree, outputs: dict[str, Any]) -> None:
    """The answer with its citation marks, then each citation: title and quote."""
    if not outputs.get("answer"):
        return
    citations = [c for c in _value(outputs.get("citations")) or [] if isinstance(c, dict)]
    marks = "".join(f"[{n}]" for n in range(1, len(citations) + 1))
    branch = tree.add(f"[dim]answer:[/] [bold green]{escape(str(outputs['answer']))}[/] {escape(marks)}")
    for number, citation in enumerate(citations, start=1):
        quote = citation.get("quote")
        branch.add(escape(f"[{number}] {citation.get('title') or citation.get('passage_id')}"
                          + (f" — “{_short(quote, 160)}”" if quote else "")))


def _items(tree: Tree, label: str, values: list[Any], show: Any) -> None:
    branch = tree.add(f"[dim]{label} ({len(values)}):[/]")
    for value in values[:SHOWN_ITEMS]:
        branch.add(escape(_short(show(value), 140)))
    if len(values) > SHOWN_ITEMS:
        branch.add(f"[dim]... {len(values) - SHOWN_ITEMS} more[/]")


def _passage(item: Any) -> str:
    if not isinstance(item, dict):
        return str(item)
    name = item.get("title") or item.get("id")
    score = item.get("score")
    return f"{name}  ({score:.4f})" if isinstance(score, (int, float)) else str(name)


def _value(value: Any) -> Any:
    """A LangGraph ``Overwrite`` (as traced) unwrapped."""
    if isinstance(value, dict) and set(value) == {"value", "type"}:
        return value["value"]
    return value


def _llm_text(outputs: dict[str, Any]) -> str:
    for batch in outputs.get("generations") or []:
        for generation in batch:
            if isinstance(generation, dict) and generation.get("text"):
                return str(generation["text"])
    return ""


def _short(text: Any, limit: int = 140) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
