"""The GEAR agent's graph: nodes wired into the iterative loop, and :func:`build_agent`.

::

    START -> start -> retrieve -> read -> link -> expand -> reason
    reason -(not answerable, iterations left)-> rewrite -> retrieve
    reason -(answerable or last iteration)-> finalize -> [answer] -> END
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, cast

from langgraph.graph import END, START, StateGraph

from gear_agent._deprecated import NEXT_REMOVAL, warn_deprecated
from gear_agent.agent import nodes
from gear_agent.agent._steps import Expansion
from gear_agent.agent.models import ChatModels
from gear_agent.agent.state import GearContext, GearState, InputState, OutputState
from gear_agent.config import AgentSettings, GearSettings
from gear_agent.errors import GearError
from gear_agent.llm.client import LLMClient
from gear_agent.open_index import OpenIndex
from gear_agent.parts import IndexParts, check_llm_free, index_parts, parts_and_settings
from gear_agent.retrieval.base import Retriever

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph


def route_after_reason(state: GearState, max_iterations: int) -> Literal["rewrite", "finalize"]:
    """Stop when the memory answers the question or the iterations are spent, else rewrite."""
    return "finalize" if nodes.stop_reason_of(state, max_iterations) else "rewrite"


def build_graph(
    parts: IndexParts | OpenIndex,
    llm: LLMClient | ChatModels,
    settings: AgentSettings | None = None,
    *,
    expansion: Expansion | None = None,
    base: Retriever | None = None,
) -> StateGraph:
    """The uncompiled GEAR graph over an index's parts, calling the model through ``llm``.

    Args:
        parts: The index's parts (:func:`~gear_agent.parts.index_parts` of an opened
            index). An ``OpenIndex`` still works, with a DeprecationWarning (its settings
            when ``settings`` is None).
        llm: The client every LLM node calls, or the :class:`ChatModels` a run chooses
            from (``context={"model": ...}``; the default one otherwise).
        settings: The loop's settings section (a ``GearSettings`` is one).
        expansion: How each iteration expands its linked triples: ``beam`` (the paper's
            Algorithm 1), ``ppr`` or ``both``; ``settings.expansion`` when None.
        base: The retriever of the ``retrieve`` node (e.g. SiReRAG's pool); the
            configured one (``GEAR_BASE_RETRIEVER``: any LLM-free retriever, ``hybrid`` by
            default, ``parts.base``) when None.

    Returns:
        The ``StateGraph``; compile it (optionally with a checkpointer) to run it.

    Example:
        >>> index = OpenIndex.open(GearSettings(index_dir="my-index"))  # doctest: +SKIP
        >>> graph = build_graph(index_parts(index), llm, index.settings)  # doctest: +SKIP
    """
    parts, settings = parts_and_settings("build_graph", parts, settings, reopen=True)
    if base is None:
        check_llm_free(settings.base_retriever)  # a bad GEAR_BASE_RETRIEVER fails here
    graph = StateGraph(
        GearState, context_schema=GearContext, input_schema=InputState, output_schema=OutputState
    )
    graph.add_node("start", nodes.make_start(parts.store, settings, llm))
    graph.add_node("retrieve", nodes.make_retrieve(parts, settings, base))
    graph.add_node("read", nodes.make_read(parts.store, settings, llm))
    graph.add_node("link", nodes.make_link(parts, settings))
    graph.add_node("expand", nodes.make_expand(parts, settings, expansion or settings.expansion))
    graph.add_node("reason", nodes.make_reason(settings, llm))
    graph.add_node("rewrite", nodes.make_rewrite(settings, llm))
    graph.add_node("finalize", nodes.make_finalize(parts, settings))
    graph.add_edge(START, "start")
    graph.add_edge("start", "retrieve")
    graph.add_edge("retrieve", "read")
    graph.add_edge("read", "link")
    graph.add_edge("link", "expand")
    graph.add_edge("expand", "reason")
    max_iterations = settings.max_iterations

    def after_reason(state: GearState) -> Literal["rewrite", "finalize"]:
        return route_after_reason(state, max_iterations)

    graph.add_conditional_edges("reason", after_reason, ["rewrite", "finalize"])
    graph.add_edge("rewrite", "retrieve")
    if settings.answer:
        graph.add_node("answer", nodes.make_answer(settings, llm))
        graph.add_edge("finalize", "answer")
        graph.add_edge("answer", END)
    else:
        graph.add_edge("finalize", END)
    return graph


def build_agent(
    settings: GearSettings | None = None,
    *,
    index: OpenIndex | None = None,
    chat_model: Any | None = None,
    checkpointer: Any | None = None,
    models: ChatModels | None = None,
    runtime: OpenIndex | None = None,
) -> CompiledStateGraph:
    """The compiled GEAR agent.

    Args:
        settings: Settings; ``GearSettings()`` (environment ``GEAR_*``) when None, or
            ``index.settings`` when an index is given.
        index: An opened index (:class:`~gear_agent.open_index.OpenIndex`); opened from
            the settings when None.
        chat_model: Any LangChain chat model; built from the settings
            (OPENAI_API_KEY / OPENAI_BASE_URL) when None.
        checkpointer: A LangGraph checkpointer (then pass a ``thread_id`` in the config).
        models: The chat models runs may choose from; built from the settings (the
            configured model, or ``chat_model``, plus ``GEAR_LLM_MODELS``) when None.
        runtime: Deprecated name of ``index``.

    Returns:
        A compiled graph: ``invoke({"question": ...})`` or ``invoke({"messages": [...]})``
        returns ``answer``, ``citations``, ``messages`` (the chat, ending with the answer),
        ``passages``, ``gist_memory``, ``iterations``, ``queries``, ``stop_reason``,
        ``tokens`` and ``dropped``; ``ainvoke``, ``stream`` and ``astream`` work too.
        ``invoke(inputs, context={"model": "ollama:llama3.1"})`` runs with another model.

    Raises:
        LLMConfigError: No chat model given and none configured in the environment.
        StoreError: No index where the settings point.

    Example:
        >>> agent = build_agent(GearSettings(index_dir="my-index"))  # doctest: +SKIP
        >>> agent.invoke({"question": "Who is the spouse of the Green performer?"})["answer"]  # doctest: +SKIP
    """
    if runtime is not None:
        warn_deprecated("build_agent(runtime=...) is now build_agent(index=...)", removed_in=NEXT_REMOVAL)
        if index is not None:
            raise TypeError("build_agent() takes index= or its old name runtime=, not both")
        index = runtime
    if settings is None:
        settings = index.settings if index is not None else GearSettings()
    if models is None:
        default = LLMClient.from_settings(settings, chat_model)  # fails fast
        models = ChatModels(settings, default)
    if index is None:
        index = OpenIndex.open(settings)
    parts = index_parts(index, settings=settings)
    return build_graph(parts, models, settings).compile(checkpointer=checkpointer, name="gear")


class _NotLoaded:
    """Stands in for the index and the chat model of a graph built only to be described:
    any use says so in one line."""

    def __getattr__(self, name: str) -> Any:
        raise GearError(
            "this GEAR graph describes the agent (schemas, drawing) and has no index or chat "
            "model behind it; run the one build_agent returns"
        )


def describe_agent(settings: AgentSettings | None = None) -> CompiledStateGraph:
    """The agent's graph, its nodes, edges and input, output and context schemas, with no
    index, embedding model or chat model loaded: what a schema or drawing request needs
    (``langgraph dev`` and Studio ask for them before any run), so answering one needs no
    LLM configured and takes milliseconds. Running it fails with a one-line error.

    Example:
        >>> sorted(describe_agent().get_input_jsonschema()["properties"])[:2]
        ['deadline_s', 'max_iterations']
    """
    settings = settings or GearSettings()
    absent = cast(Any, _NotLoaded())
    parts = IndexParts(absent, absent, absent, absent, absent, absent)
    return build_graph(parts, absent, settings).compile(name="gear")
