"""The GEAR agent's nodes (Shen et al., section 3.4 and Algorithm 2).

Each factory takes what its node reads by closure: the index parts where it searches
(:class:`~gear_agent.parts.IndexParts`), the loop's settings section
(:class:`~gear_agent.config.AgentSettings`; a ``GearSettings`` is one), and the
:class:`~gear_agent.llm.LLMClient` for LLM nodes. It returns a node:
a function of the state and the run's LangGraph ``Runtime[GearContext]`` that returns
only the keys it changes.

Every node receives the ``Runtime``, whose ``context`` holds the run's choices
(:class:`~gear_agent.agent.state.GearContext`: its model and time budget). The plain
nodes take it as a ``runtime`` parameter, which LangGraph fills in. LLM nodes are
``RunnableLambda`` objects with a sync and an async body, so ``invoke`` calls the model's
``invoke`` and ``ainvoke`` awaits its ``ainvoke``. LangGraph fills in ``runtime`` only for a
function it wraps itself, and it wraps a plain function with one body: a sync function
runs in a worker thread under ``ainvoke``, calling the model's blocking ``invoke``. So each
body of an LLM node takes its ``Runtime`` from LangGraph's public
:func:`langgraph.runtime.get_runtime`, which works under ``invoke``, ``ainvoke``,
``stream`` and ``astream`` alike.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.runnables.config import run_in_executor
from langgraph.runtime import Runtime, get_runtime
from langgraph.types import Overwrite

from gear_agent.agent import _steps as steps
from gear_agent.agent.chat import question_of, render_conversation
from gear_agent.agent.citations import CITED_ANSWER_REPLY, read_cited_answer, render_citations
from gear_agent.agent.models import ChatModels, chosen_model, run_option
from gear_agent.agent.state import GearContext, GearState
from gear_agent.config import AgentSettings
from gear_agent.filters import parse_where
from gear_agent.llm.client import LLMClient, LLMReply
from gear_agent.llm.errors import LLMCallError, LLMDeadlineError
from gear_agent.llm.response_format import TRIPLES_REPLY, VERDICT_REPLY, ReplySchema
from gear_agent.llm.usage import empty_usage, usage_of_call
from gear_agent.parsing import ParseError, parse_reasoner_reply, parse_short_reply
from gear_agent.parts import IndexParts
from gear_agent.prompts import load_prompt, render_passages, render_triples
from gear_agent.questions import QuestionError, check_run_option
from gear_agent.retrieval.base import RankedPassage, Retriever, fuse_passages
from gear_agent.retrieval.filtering import checked_where
from gear_agent.retrieval.records import passage_records
from gear_agent.store import Store
from gear_agent.types import Passage

Update = dict[str, Any]
GearRuntime = Runtime[GearContext]
"""What LangGraph gives every node besides the state: the run's ``context`` and more."""
Node = Callable[[GearState, GearRuntime | None], Update]
"""A plain node: the state and the run's runtime (None when called by hand) to an update."""
Models = LLMClient | ChatModels
"""What an LLM node calls: one client, or the models a run may choose from (per-run model)."""


def context_of(runtime: GearRuntime | None) -> GearContext | None:
    """The run's context (``invoke(..., context=...)``); None without a graph or a context."""
    return None if runtime is None else runtime.context


def _client(models: Models, runtime: GearRuntime | None, config: RunnableConfig | None) -> LLMClient:
    """The client of the model this run chose (its context's ``model``, else
    ``configurable``'s; ``start`` has checked it), else the default one."""
    if not isinstance(models, ChatModels):
        return models
    return models.get(chosen_model(context_of(runtime), config))


DEADLINE = "deadline"
"""The ``stop_reason`` of a run whose time budget (``GEAR_DEADLINE_S``) ran out."""

CONTEXT_DEADLINE = "deadline_s"
"""The key of a run's own time budget in ``context`` (or ``configurable``)."""


def stop_reason_of(state: GearState, max_iterations: int) -> str | None:
    """Why the loop stops after this iteration's reasoning, or None when it goes on."""
    if state.get("stop_reason") == DEADLINE:
        return DEADLINE
    if state.get("answerable"):
        return "answerable"
    if state.get("iteration", 1) >= state.get("max_iterations", max_iterations):
        return "max_iterations"
    return None


def seconds_left(state: GearState) -> float | None:
    """Seconds left of the run's time budget (negative once spent); None without one."""
    at = state.get("deadline_at")
    return None if at is None else at - time.time()


def out_of_time(state: GearState) -> bool:
    """Whether the run's time budget is spent: the nodes that are not needed for the
    answer (link, expand) then do no work, so the run ends at its deadline."""
    left = seconds_left(state)
    return state.get("stop_reason") == DEADLINE or (left is not None and left <= 0)


def run_deadline_s(state: GearState, context: Any, config: RunnableConfig | None,
                   default: float) -> float | None:
    """The run's time budget in seconds: the input's ``deadline_s``, else the run's
    ``context``'s (or ``configurable``'s), else ``default`` (``GEAR_DEADLINE_S``); 0 or
    infinity: none.

    Raises:
        RunOptionError: The value is not a number >= 0.
    """
    value: Any = state.get("deadline_s")
    if value is None:
        value = run_option(context, config, CONTEXT_DEADLINE)
    if value is None:
        value = default
    seconds = float(check_run_option("deadline_s", value, 0, integer=False))
    return seconds if 0 < seconds < math.inf else None


def _failure(state: GearState, node: str, error: Exception) -> dict[str, Any]:
    """A ``dropped`` record of a reply that could not be read or a call that failed for good."""
    return {"iteration": state.get("iteration", 1), "node": node, "error": str(error)}


def _llm_node(
    name: str,
    llm: Models,
    prompt_of: Callable[[GearState], str],
    update_of: Callable[[GearState, LLMReply], Update],
    on_call_error: Callable[[GearState, LLMCallError], Update] | None = None,
    schema: ReplySchema | None = None,
    on_deadline: Callable[[GearState, LLMCallError], Update] | None = None,
) -> RunnableLambda:
    """A node that builds a prompt, calls the model (sync or async) and turns the reply into an update.

    ``on_call_error`` makes a call that failed for good (retries spent) non-fatal;
    ``schema`` is the JSON the prompt asks for (see :mod:`gear_agent.llm.response_format`).
    The call gets what is left of the run's time budget; when it is spent (before or
    during the call) the node returns ``on_deadline`` (else ``on_call_error``) with
    ``stop_reason="deadline"``, and the loop goes to its end with what it has.
    """

    def finish(state: GearState, reply: LLMReply) -> Update:
        update = update_of(state, reply)
        update["tokens"] = usage_of_call(name, reply)
        return update

    def out_of_time(state: GearState, exc: LLMCallError) -> Update:
        handler = on_deadline or on_call_error
        update = handler(state, exc) if handler is not None else {}
        return {**update, "stop_reason": DEADLINE}

    def spent(state: GearState, client: LLMClient, left: float | None) -> LLMCallError | None:
        """An error when the budget is spent, or an earlier call of the run ran out of it."""
        ran_out = state.get("stop_reason") == DEADLINE
        if not ran_out and (left is None or left > 0):
            return None
        return LLMDeadlineError(model=client.model_name, node=name, attempts=0, budget_s=0.0)

    def run(state: GearState, config: RunnableConfig) -> Update:
        client = _client(llm, get_runtime(GearContext), config)
        late = spent(state, client, seconds_left(state))
        if late is not None:
            return out_of_time(state, late)
        prompt = prompt_of(state)
        try:
            reply = client.invoke(
                prompt, node=name, config=config, schema=schema, deadline_s=seconds_left(state)
            )
        except LLMDeadlineError as exc:
            return out_of_time(state, exc)
        except LLMCallError as exc:
            if on_call_error is None:
                raise
            return on_call_error(state, exc)
        return finish(state, reply)

    async def arun(state: GearState, config: RunnableConfig) -> Update:
        client = _client(llm, get_runtime(GearContext), config)
        late = spent(state, client, seconds_left(state))
        if late is not None:
            return out_of_time(state, late)
        # Prompts and updates may read the index (blocking I/O): off the event loop.
        prompt = await run_in_executor(config, prompt_of, state)
        try:
            reply = await client.ainvoke(
                prompt, node=name, config=config, schema=schema, deadline_s=seconds_left(state)
            )
        except LLMDeadlineError as exc:
            return out_of_time(state, exc)
        except LLMCallError as exc:
            if on_call_error is None:
                raise
            return on_call_error(state, exc)
        return await run_in_executor(config, finish, state, reply)

    afunc: Callable[..., Awaitable[Update]] = arun
    return RunnableLambda(run, afunc=afunc, name=name)


def make_start(store: Store, settings: AgentSettings, models: Models | None = None) -> Node:
    """Take the question (from ``question`` or the last human message), check it
    (:class:`~gear_agent.questions.QuestionError` when missing, empty or too long) and the
    run's model (:class:`~gear_agent.llm.LLMConfigError` when it may not be chosen), and set
    up iteration 1.

    Every field a run writes is reset (accumulating ones with ``Overwrite``), so a
    checkpointed thread can take one question after another; ``messages`` is the thread's
    conversation and is kept.
    """

    def start(state: GearState, runtime: GearRuntime | None = None,
              config: RunnableConfig = None) -> Update:  # type: ignore[assignment]
        """``runtime``: LangGraph's, whose ``context`` holds the run's choices (None when the
        node is called by hand); ``config``: for clients that pass them in ``configurable``."""
        context = context_of(runtime)
        raw, history, added = question_of(state.get("question"), state.get("messages") or [])
        if raw is None:
            raise QuestionError(
                "no question: give 'question', or 'messages' ending with a human message"
            )
        question = steps.check_question(raw, settings.max_question_chars)
        where = checked_where(store, state.get("where"))  # a bad or empty filter fails here
        model = chosen_model(context, config)  # the LLM nodes choose it again, from their runtime
        if isinstance(models, ChatModels):
            models.get(model)  # an unknown or unbuildable model fails here, before any work
        budget = run_deadline_s(state, context, config, settings.deadline_s)
        update: Update = {
            "deadline_at": None if budget is None else time.time() + budget,
            "question": question,
            "history": history,
            "query": question,
            "queries": Overwrite([question]),
            "iteration": 1,
            "base": [],
            "retrieved": Overwrite([]),
            "proximal": [],
            "dropped": Overwrite([]),
            "linked": [],
            "gist_memory": Overwrite([]),
            "answerable": False,
            "reason": None,
            "answer": None,
            "citations": [],
            "stop_reason": None,
            "iterations": 0,
            "ranked": [],
            "passages": [],
            "tokens": Overwrite(empty_usage()),
        }
        if where is not None:  # its source paths canonical, for every search of the run
            update["where"] = where.to_dict()
        for option, high in (("max_iterations", 16), ("top_k", None)):
            if state.get(option) is not None:
                update[option] = check_run_option(option, state.get(option), 1, high)
        if added:
            update["messages"] = added
        return update

    return start


def make_retrieve(parts: IndexParts, settings: AgentSettings, base: Retriever | None = None) -> Node:
    """Base retrieval of the current query: ``base_k`` passages (by ``base`` when given,
    else by the index's configured base retriever, ``parts.base()``)."""

    def retrieve(state: GearState, runtime: GearRuntime | None = None) -> Update:
        k, where = settings.base_k, parse_where(state.get("where"))
        retriever = base if base is not None else parts.base()
        with parts.store.snapshot():  # the node's reads see one commit
            ranked = retriever.retrieve(state["query"], k, where)
        return {"base": [p.to_dict() for p in ranked]}

    return retrieve


UNGROUNDED = "subject or object not found in the passages shown"
"""The ``reason`` of a ``dropped`` reader triple that its passages do not support."""


def make_read(store: Store, settings: AgentSettings, llm: Models) -> RunnableLambda:
    """Reader: proximal triples from the base passages (with the gist memory after iteration 1).

    Items the parser cannot read, triples whose subject or object is not in the passages
    shown or the memory (``GEAR_GROUND_TRIPLES``), and a read that fails after the client's
    retries are recorded in ``dropped``; none of them stops the loop.
    """

    def prompt_of(state: GearState) -> str:
        ids = [p["id"] for p in state.get("base", [])]
        memory = state.get("gist_memory", [])
        return steps.reader_prompt(store, settings, state["question"], ids, memory)

    def update_of(state: GearState, reply: LLMReply) -> Update:
        triples, dropped = steps.read_reply(reply.text)
        iteration = state.get("iteration", 1)
        records = [{"iteration": iteration, "node": "read", "item": d} for d in dropped]
        if settings.ground_triples and triples:
            ids = steps.reader_ids(settings, [p["id"] for p in state.get("base", [])])
            triples, ungrounded = steps.ground_triples(
                store, ids, state.get("gist_memory", []), triples, settings.reader_full_passages
            )
            records += [{"iteration": iteration, "node": "read", "item": t,
                         "reason": UNGROUNDED} for t in ungrounded]
        return {"proximal": triples, "dropped": records}

    def on_call_error(state: GearState, exc: LLMCallError) -> Update:
        return {"proximal": [], "dropped": [_failure(state, "read", exc)]}

    return _llm_node("read", llm, prompt_of, update_of, on_call_error, TRIPLES_REPLY)


def make_link(parts: IndexParts, settings: AgentSettings) -> Node:
    """tripleLink: proximal triples to their nearest indexed triples; they join the gist memory."""

    def link(state: GearState, runtime: GearRuntime | None = None) -> Update:
        proximal = state.get("proximal", [])
        if out_of_time(state):
            return {"linked": [], "gist_memory": proximal}
        with parts.store.snapshot():
            linked = steps.link_triples(parts, settings, proximal, parse_where(state.get("where")))
        return {"linked": linked, "gist_memory": proximal}

    return link


def make_expand(parts: IndexParts, settings: AgentSettings, expansion: steps.Expansion) -> Node:
    """Expansion (``beam``, ``ppr`` or ``both``) from the linked triples, fused (RRF) with
    the base list into this iteration's list."""

    def expand(state: GearState, runtime: GearRuntime | None = None) -> Update:
        base = [RankedPassage.from_dict(p) for p in state.get("base", [])]
        if out_of_time(state):  # this iteration's list is its base list
            return {"retrieved": [[p.to_dict() for p in base]]}
        where = parse_where(state.get("where"))
        linked = state.get("linked", [])
        with parts.store.snapshot():
            expanded = steps.expand(parts, settings, state["query"], linked, expansion, where)
        size = max(len({p.id for p in base} | {p.id for p in expanded}), 1)
        fused = fuse_passages([base, expanded], k=size, rrf_k=settings.rrf_k)
        return {"retrieved": [[p.to_dict() for p in fused]]}

    return expand


def make_reason(settings: AgentSettings, llm: Models) -> RunnableLambda:
    """Reasoner: can the question be answered from the gist memory? An unreadable reply counts as no."""
    prompt = load_prompt("reasoner", settings.prompts_dir)

    def prompt_of(state: GearState) -> str:
        memory = render_triples([tuple(t) for t in state.get("gist_memory", [])])
        return prompt.format(question=state["question"], memory=memory)

    def update_of(state: GearState, reply: LLMReply) -> Update:
        try:
            verdict = parse_reasoner_reply(reply.text)
        except ParseError as exc:
            failure = _failure(state, "reason", exc)
            return {"answerable": False, "answer": None, "reason": None, "dropped": [failure]}
        return {
            "answerable": verdict.answerable,
            "answer": verdict.answer,
            "reason": verdict.reason,
        }

    def on_deadline(state: GearState, exc: LLMCallError) -> Update:
        return {"answerable": False, "dropped": [_failure(state, "reason", exc)]}

    return _llm_node(
        "reason", llm, prompt_of, update_of, schema=VERDICT_REPLY, on_deadline=on_deadline
    )


def _fallback_query(state: GearState) -> str:
    """The next query when the rewriter's reply is unreadable or its call failed."""
    return " ".join(filter(None, [state["question"], state.get("reason")]))


def make_rewrite(settings: AgentSettings, llm: Models) -> RunnableLambda:
    """Rewriter: the next query from the question, the memory and what is missing.

    An unreadable reply, or a call that fails after the client's retries, falls back to
    the question plus the reasoner's note, and is recorded in ``dropped``.
    """
    prompt = load_prompt("rewriter", settings.prompts_dir)

    def prompt_of(state: GearState) -> str:
        memory = render_triples([tuple(t) for t in state.get("gist_memory", [])])
        reason = state.get("reason") or "not stated"
        conversation = render_conversation(state.get("history") or [])
        return prompt.format(
            question=state["question"], memory=memory, reason=reason, conversation=conversation
        )

    def next_query(state: GearState, query: str | None, failure: Exception | None) -> Update:
        query = query if failure is None else _fallback_query(state)
        iteration = state.get("iteration", 1) + 1
        update: Update = {"iteration": iteration, "query": query, "queries": [query]}
        if failure is not None:
            update["dropped"] = [_failure(state, "rewrite", failure)]
        return update

    def update_of(state: GearState, reply: LLMReply) -> Update:
        try:
            return next_query(state, parse_short_reply(reply.text, label="query"), None)
        except ParseError as exc:
            return next_query(state, None, exc)

    def on_call_error(state: GearState, exc: LLMCallError) -> Update:
        return next_query(state, None, exc)

    return _llm_node("rewrite", llm, prompt_of, update_of, on_call_error)


def make_finalize(parts: IndexParts, settings: AgentSettings) -> Node:
    """passageLink of every memory triple, RRF with every iteration's list; the top ``top_k``
    as ``ranked`` (triple ids) and, read once from the store, as records (``passages``)."""

    def finalize(state: GearState, runtime: GearRuntime | None = None) -> Update:
        k = state.get("top_k", settings.top_k)
        retrieved = [[RankedPassage.from_dict(p) for p in r] for r in state.get("retrieved", [])]
        where = parse_where(state.get("where"))
        with parts.store.snapshot():
            ranked = steps.final_ranking(
                parts, settings, state.get("gist_memory", []), retrieved, k, where)
            records = passage_records(parts.store, ranked)
        update: Update = {
            "ranked": [p.to_dict() for p in ranked],
            "passages": [r.to_dict() for r in records],
            "stop_reason": stop_reason_of(state, settings.max_iterations),
            "iterations": state.get("iteration", 1),
        }
        if not settings.answer:  # no QA node: the reasoner's answer ends the chat turn
            update["messages"] = [AIMessage(content=render_citations(state.get("answer"), []))]
        return update

    return finalize


def make_answer(settings: AgentSettings, llm: Models) -> RunnableLambda:
    """QA: a short answer from the top ``answer_top_k`` final passages, with numbered
    citations of the passages it rests on, and the answer as an AI message for the chat.

    Citations are checked against the passages the prompt showed (see
    :mod:`gear_agent.agent.citations`); one of a passage not shown is dropped and recorded
    in ``dropped``, as is a quote not found in its passage. A call that fails after the
    client's retries keeps the reasoner's answer (or None) and the ranked passages, with no
    citations, and is recorded in ``dropped``.
    """
    prompt = load_prompt("qa", settings.prompts_dir)

    def shown_of(state: GearState) -> list[dict[str, Any]]:
        return list(state.get("passages", [])[: settings.answer_top_k])

    def prompt_of(state: GearState) -> str:
        shown = [Passage(p["id"], p["title"], p["text"]) for p in shown_of(state)]
        return prompt.format(
            question=state["question"],
            passages=render_passages(shown, settings.prompt_passage_tokens),
            conversation=render_conversation(state.get("history") or []),
        )

    def turn(answer: str | None, citations: list[Any]) -> list[AIMessage]:
        return [AIMessage(content=render_citations(answer, citations))]

    def update_of(state: GearState, reply: LLMReply) -> Update:
        iteration = state.get("iteration", 1)
        try:
            cited = read_cited_answer(reply.text, shown_of(state))
        except ParseError as exc:
            return {"answer": None, "citations": [], "messages": turn(None, []),
                    "dropped": [_failure(state, "answer", exc)]}
        dropped = [{"iteration": iteration, "node": "answer", **d} for d in cited.dropped]
        return {
            "answer": cited.answer,
            "citations": cited.citations,
            "messages": turn(cited.answer, cited.citations),
            "dropped": dropped,
        }

    def on_call_error(state: GearState, exc: LLMCallError) -> Update:
        return {"messages": turn(state.get("answer"), []),
                "dropped": [_failure(state, "answer", exc)]}

    return _llm_node("answer", llm, prompt_of, update_of, on_call_error, CITED_ANSWER_REPLY)
