"""`gear ask`: run the GEAR agent on one question; print the answer, its numbered citations
and the triple chains that reached the cited passages (``--json`` for scripts)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from gear_agent.cli.common import IndexOpt, SafeConsole, console, load_settings, reports_errors

_PREVIEW_CHARS = 300


@reports_errors
def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    index_dir: IndexOpt = None,
    model: Annotated[str | None, typer.Option(metavar="NAME", help="Chat model for this question, provider:model (GEAR_LLM_MODEL).")] = None,
    max_iterations: Annotated[int | None, typer.Option(min=1, help="Iterations at most (GEAR_MAX_ITERATIONS).")] = None,
    top_k: Annotated[int | None, typer.Option(min=1, help="Passages in the final ranking (GEAR_TOP_K).")] = None,
    passages: Annotated[bool, typer.Option("--passages", help="Also print every ranked passage.")] = False,
    where: Annotated[list[str] | None, typer.Option(
        "--where", "-w", metavar="KEY OP VALUE",
        help="Only passages passing this filter (as in `gear search`); repeat to AND.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead.")] = False,
    stream: Annotated[bool, typer.Option(
        help="Print the answer word by word as the model writes it (a model that streams).")] = True,
) -> None:
    """Answer a question with the GEAR agent, citing the passages the answer rests on.

    The answer goes to standard output as the model writes it, then its numbered
    citations; the steps being run are shown on standard error.
    """
    from gear_agent.filters import parse_where
    from gear_agent.questions import check_question

    settings = load_settings(index_dir, llm_model=model)
    text = check_question(question, settings.max_question_chars)
    inputs: dict[str, Any] = {"question": text}
    if max_iterations is not None:
        inputs["max_iterations"] = max_iterations
    if top_k is not None:
        inputs["top_k"] = top_k
    parsed = parse_where(where)  # a malformed filter fails before anything loads
    if parsed is not None:
        inputs["where"] = parsed.to_dict()
    _cheap_checks(settings, parsed)  # no index, no LLM, nothing passes: said in well under 1 s
    from gear_agent.agent.graph import build_agent
    from gear_agent.open_index import OpenIndex

    with console.status("loading the embedding model and the index"):
        index = OpenIndex.open(settings)
    try:
        agent = build_agent(settings, index=index)
        result = _run(agent, inputs, stream=stream and not as_json)
    finally:
        index.store.close()
    report = ask_report(text, result.state)
    if as_json:
        typer.echo(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        print_report(report, show_passages=passages, streamed=result.streamed)


def _cheap_checks(settings: Any, where: Any) -> None:
    """What can be told without the embedding model: the index is there (and was built
    with the configured model), an LLM is configured, and some passage passes ``where``."""
    from gear_agent.cli.checks import require_index, require_llm, require_passing_filter

    require_index(settings)
    require_passing_filter(settings, where)  # NothingMatchesError names the filter
    require_llm(settings)  # last: building the client imports the provider's package (seconds)


class _Run:
    """What :func:`_run` gives back: the final state and whether the answer was printed."""

    def __init__(self, state: dict[str, Any], streamed: str) -> None:
        self.state, self.streamed = state, streamed


_STEP_WORDS = {"start": "starting", "retrieve": "retrieving", "read": "reading passages",
               "link": "linking triples", "expand": "expanding on the graph",
               "reason": "reasoning", "rewrite": "rewriting the query",
               "finalize": "ranking passages", "answer": "answering"}
_NEXT = {"start": "retrieve", "retrieve": "read", "read": "link", "link": "expand",
         "expand": "reason", "rewrite": "retrieve", "finalize": "answer"}


def _run(agent: Any, inputs: dict[str, Any], *, stream: bool) -> _Run:
    """Run the agent; with ``stream``, print the answer's words to standard output as they
    come and the step being run on standard error."""
    if not stream:
        with console.status("running the agent"):
            return _Run(agent.invoke(inputs), "")
    from gear_agent.agent.streaming import run_events

    out = SafeConsole(soft_wrap=True)
    state: dict[str, Any] = {}
    printed = ""
    with console.status("starting") as status:
        for event in run_events(agent, inputs):
            if event.kind == "update" and event.node in _NEXT:
                status.update(_STEP_WORDS[_NEXT[event.node]])
            elif event.kind == "token":
                if not printed:
                    status.stop()
                printed += event.data["text"]
                out.print(event.data["text"], end="", style="bold", highlight=False, markup=False)
            elif event.kind == "final":
                state = event.data
    return _Run(state, printed)


def ask_report(question: str, result: dict[str, Any]) -> dict[str, Any]:
    """The agent's output as ``gear ask --json`` prints it: each citation with its number,
    where the passage is (``location``: source and page or section), its text and the
    chain of triples that reached it.

    Example:
        >>> result = {"answer": "Paris", "citations": [{"passage_id": "p1", "title": "Paris",
        ...           "quote": None}], "passages": [{"id": "p1", "title": "Paris",
        ...           "text": "Paris is the capital.", "score": 0.5, "chain": []}]}
        >>> ask_report("Capital of France?", result)["citations"][0]["number"]
        1
    """
    from gear_agent.retrieval.records import PassageRecord, cite

    records = [PassageRecord.from_dict(p) for p in result.get("passages", [])]
    citations = [c.to_dict() for c in cite(result.get("citations") or [], records)]
    return {
        "question": question,
        "answer": result.get("answer"),
        "citations": citations,
        "passages": result.get("passages", []),
        "gist_memory": result.get("gist_memory", []),
        "queries": result.get("queries", []),
        "iterations": result.get("iterations"),
        "stop_reason": result.get("stop_reason"),
        "tokens": result.get("tokens", {}),
        "dropped": result.get("dropped", []),
    }


def print_report(report: dict[str, Any], *, show_passages: bool = False, streamed: str = "") -> None:
    """The answer, then each citation: title, id, quote (or the passage's start) and chain.

    ``streamed`` is the answer text already printed on the line as it was written: only
    the citation marks are added, unless the answer of record differs from it (then the
    answer is printed on its own line).
    """

    out = SafeConsole(soft_wrap=True)  # long lines stay whole, for terminals and pipes alike
    citations = report["citations"]
    marks = "".join(f"[{c['number']}]" for c in citations)
    answer = report["answer"] if report["answer"] is not None else "(no answer)"
    if streamed and streamed.strip() == answer:
        out.print(f" {marks}".rstrip(), style="bold", highlight=False, markup=False)
    else:
        if streamed:
            out.print()
        out.print(f"{answer} {marks}".rstrip(), style="bold", highlight=False, markup=False)
    for citation in citations:
        out.print()
        out.print(f"[{citation['number']}] {_cited(citation['location'], citation['title'])}"
                  f"  ({citation['passage_id']})", highlight=False, markup=False)
        if citation["quote"]:
            out.print(f'    "{citation["quote"]}"', highlight=False, markup=False)
        else:
            out.print(f"    {_preview(citation['text'])}", style="dim", highlight=False, markup=False)
        for triple in citation["chain"]:
            out.print(f"    ↳ ({'; '.join(triple)})", style="cyan", highlight=False, markup=False)
    if not citations and report["answer"] is not None:
        out.print("(the answer cites no passage)", style="yellow")
    if show_passages:
        out.print()
        out.print("ranked passages:", style="bold")
        for rank, passage in enumerate(report["passages"], start=1):
            out.print(f"{rank}. {_cited(passage.get('location', ''), passage['title'])}  ({passage['id']})",
                      highlight=False, markup=False)
            for triple in passage.get("chain", []):
                out.print(f"    ↳ ({'; '.join(triple)})", style="cyan", highlight=False, markup=False)
    tokens = report["tokens"] or {}
    total = int(tokens.get("input", 0)) + int(tokens.get("output", 0))
    dropped = len(report["dropped"])
    out.print()
    out.print(
        f"{report['iterations']} iteration(s), stopped: {report['stop_reason']}; "
        f"{total:,} tokens; {len(report['passages'])} passages ranked"
        + (f"; {dropped} item(s) dropped (--json shows them)" if dropped else ""),
        style="dim", highlight=False, markup=False,
    )


def _cited(location: str, title: str) -> str:
    """A citation's head: where the passage is, then its title (``annual-report.pdf, p. 14
    — Annual report 2024``); the title alone for a passage with no source.

    Example:
        >>> _cited("report.pdf, p. 14", "Annual report"), _cited("", "Paris")
        ('report.pdf, p. 14 — Annual report', 'Paris')
    """
    return " — ".join(part for part in (location, title) if part)


def _preview(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _PREVIEW_CHARS else text[:_PREVIEW_CHARS].rsplit(" ", 1)[0] + " …"
