"""The HTTP request and response bodies of the GEAR service (pydantic models).

``GearRequest`` holds the defaults; :func:`request_model` makes the variant whose
``question`` length limit is the server's ``settings.max_question_chars``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    WithJsonSchema,
    create_model,
    field_validator,
    model_validator,
)

from gear_agent.filters import parse_where

MAX_ITERATIONS_LIMIT = 8
"""The largest per-request ``max_iterations`` a caller may ask for."""
TOP_K_LIMIT = 50
"""The largest per-request ``top_k`` a caller may ask for."""
MAX_MESSAGES = 40
"""The most chat messages one request may carry."""



def _optional_int(low: int, high: int, what: str) -> Any:
    """An optional strict int whose JSON schema is a plain bounded integer: the LangServe
    playground cannot draw ``anyOf [integer, null]`` (it fails with "Unknown type")."""
    schema = {"type": "integer", "minimum": low, "maximum": high, "description": what}
    return Annotated[StrictInt | None, WithJsonSchema(schema)]


def _no_default(schema: dict[str, Any]) -> None:
    """Leave ``"default": null`` out of the schema (the playground reads it as a bad integer)."""
    schema.pop("default", None)


def _question(max_chars: int) -> Any:
    """An optional question whose schema is a plain bounded string (the playground draws
    no ``anyOf``)."""
    schema = {"type": "string", "minLength": 1, "maxLength": max_chars,
              "description": f"The question (non-empty, at most {max_chars} characters); or "
                             "leave it out and end messages with it."}
    return Annotated[str | None, WithJsonSchema(schema)]


class ChatMessage(BaseModel):
    """One chat message as LangChain and OpenAI clients write it: ``{"role": "user",
    "content": ...}`` or ``{"type": "human", "content": ...}``."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant", "system"] | None = None
    type: Literal["human", "ai", "system"] | None = None
    content: str = Field(..., max_length=100_000)

    @model_validator(mode="after")
    def _has_a_role(self) -> ChatMessage:
        if (self.role is None) == (self.type is None):
            raise ValueError("give a message either a role (user, assistant, system) or a type (human, ai, system)")
        return self


class GearRequest(BaseModel):
    """One question for the agent, with optional per-request overrides.

    Attributes:
        question: The question; surrounding whitespace is stripped, and it must not be empty.
            May be left out when ``messages`` ends with the question.
        messages: A chat (``[{"role": "user", "content": ...}, ...]``), earlier turns
            first; a trailing user message is the question, the others its context.
        max_iterations: Iterations of the loop at most (1..8); the server's setting when unset.
        top_k: Passages returned (1..50); the server's setting when unset.
        where: Only passages passing this filter (``{"year": {"$gte": 2020}}`` or
            ``["source=reports/2024"]``); read here, so a bad filter is a 4xx.
        deadline_s: This request's time budget in seconds over all its LLM calls, retries
            and waits; ``GEAR_DEADLINE_S`` when unset.

    Example:
        >>> GearRequest(question="  Who founded Folsom? ").question
        'Who founded Folsom?'
    """

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True, title="GearRequest")

    question: _question(2000) = Field(  # type: ignore[valid-type]
        None, min_length=1, max_length=2000, description="The question (non-empty).",
        json_schema_extra=_no_default,
    )
    messages: Annotated[list[ChatMessage] | None, WithJsonSchema({
        "type": "array", "description": 'A chat, e.g. [{"role": "user", "content": "Who founded '
        'Kestrel?"}]; a trailing user message is the question.',
        "items": {"type": "object", "properties": {"role": {"type": "string"},
                                                   "content": {"type": "string"}}}})] = Field(
        None, max_length=MAX_MESSAGES, json_schema_extra=_no_default)
    max_iterations: _optional_int(1, MAX_ITERATIONS_LIMIT, "Per-request iteration cap.") = Field(  # type: ignore[valid-type]
        None, ge=1, le=MAX_ITERATIONS_LIMIT,
        description=f"Per-request iteration cap, 1..{MAX_ITERATIONS_LIMIT}.",
        json_schema_extra=_no_default,
    )
    top_k: _optional_int(1, TOP_K_LIMIT, "Passages returned.") = Field(  # type: ignore[valid-type]
        None, ge=1, le=TOP_K_LIMIT, description=f"Passages returned, 1..{TOP_K_LIMIT}.",
        json_schema_extra=_no_default,
    )

    where: Annotated[dict[str, Any] | list[str] | None, WithJsonSchema({
        "type": "object", "description": 'Filter on passages, e.g. {"year": {"$gte": 2020}}.'})] = Field(
        None, json_schema_extra=_no_default)
    deadline_s: Annotated[float | None, WithJsonSchema({
        "type": "number", "exclusiveMinimum": 0, "description": "Time budget in seconds."})] = Field(
        None, gt=0, json_schema_extra=_no_default)

    @field_validator("where")
    @classmethod
    def _read_where(cls, value: Any) -> dict[str, Any] | None:
        parsed = parse_where(value)  # FilterError (a ValueError): the message names the bad part
        return None if parsed is None else parsed.to_dict()

    @model_validator(mode="after")
    def _asks_something(self) -> GearRequest:
        if self.question is None and not self.messages:
            raise ValueError('give a "question", or "messages" ending with the question')
        return self

    def to_state(self) -> dict[str, Any]:
        """The agent's input state: the question or chat, and only the overrides given."""
        return self.model_dump(exclude_none=True)


def request_model(max_question_chars: int) -> type[GearRequest]:
    """``GearRequest`` with ``question`` limited to ``max_question_chars`` characters.

    Example:
        >>> Short = request_model(10)
        >>> Short(question="x" * 11)  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        pydantic_core._pydantic_core.ValidationError: ...
    """
    if max_question_chars < 1:
        raise ValueError(f"max_question_chars must be at least 1, got {max_question_chars}")
    return create_model(
        "GearRequest",
        __base__=GearRequest,
        question=(
            _question(max_question_chars),
            Field(
                None, min_length=1, max_length=max_question_chars,
                description=f"The question (non-empty, at most {max_question_chars} characters).",
                json_schema_extra=_no_default,
            ),
        ),
    )


class GearResponse(BaseModel):
    """What ``/gear/invoke`` returns (the agent's output state)."""

    answer: str | None = Field(None, description="The answer, when the QA node ran.")
    citations: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Passages the answer cites, numbered by their place here (1-based): "
        "passage_id, title, quote (words of the passage, or null), location (where the "
        "passage is: source and page or section). Only passages the QA "
        "prompt was shown; others are in dropped.",
    )
    messages: list[dict[str, Any]] = Field(
        default_factory=list,
        description="The chat: the question as a human message, the answer (with its "
        "numbered sources) as an AI message.",
    )
    passages: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Ranked passages: id, title, text, score, chain, source, metadata (page for a "
        "PDF, section for a heading path) and location (a citation's words for where the passage "
        "is: 'annual-report.pdf, p. 14'). A citation's passage_id names its passage here.",
    )
    gist_memory: list[list[str]] = Field(
        default_factory=list, description="Triples gathered, in order."
    )
    iterations: int = Field(0, description="Iterations run.")
    queries: list[str] = Field(default_factory=list, description="Every query used, in order.")
    stop_reason: str | None = Field(
        None, description="'answerable', 'max_iterations' or 'deadline' (the time budget ran out)."
    )
    tokens: dict[str, Any] = Field(default_factory=dict, description="LLM usage, total and per node.")
    dropped: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Reader items, citations of passages not shown, and LLM calls that were left out.",
    )
