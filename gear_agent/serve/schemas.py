"""The HTTP request and response bodies of the GEAR service (pydantic models).

``GearRequest`` holds the defaults; :func:`request_model` makes the variant whose
``question`` length limit is the server's ``settings.max_question_chars``.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    WithJsonSchema,
    create_model,
    field_validator,
)

from gear_agent.filters import parse_where

MAX_ITERATIONS_LIMIT = 8
"""The largest per-request ``max_iterations`` a caller may ask for."""
TOP_K_LIMIT = 50
"""The largest per-request ``top_k`` a caller may ask for."""



def _optional_int(low: int, high: int, what: str) -> Any:
    """An optional strict int whose JSON schema is a plain bounded integer: the LangServe
    playground cannot draw ``anyOf [integer, null]`` (it fails with "Unknown type")."""
    schema = {"type": "integer", "minimum": low, "maximum": high, "description": what}
    return Annotated[StrictInt | None, WithJsonSchema(schema)]


def _no_default(schema: dict[str, Any]) -> None:
    """Leave ``"default": null`` out of the schema (the playground reads it as a bad integer)."""
    schema.pop("default", None)


class GearRequest(BaseModel):
    """One question for the agent, with optional per-request overrides.

    Attributes:
        question: The question; surrounding whitespace is stripped, and it must not be empty.
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

    question: str = Field(
        ..., min_length=1, max_length=2000, description="The question (non-empty)."
    )
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

    def to_state(self) -> dict[str, Any]:
        """The agent's input state: the question and only the overrides that were given."""
        return {k: v for k, v in self.model_dump().items() if v is not None}


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
            str,
            Field(
                ..., min_length=1, max_length=max_question_chars,
                description=f"The question (non-empty, at most {max_question_chars} characters).",
            ),
        ),
    )


class GearResponse(BaseModel):
    """What ``/gear/invoke`` returns (the agent's output state)."""

    answer: str | None = Field(None, description="The answer, when the QA node ran.")
    citations: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Passages the answer cites, numbered by their place here (1-based): "
        "passage_id, title, quote (words of the passage, or null). Only passages the QA "
        "prompt was shown; others are in dropped.",
    )
    messages: list[dict[str, Any]] = Field(
        default_factory=list,
        description="The chat: the question as a human message, the answer (with its "
        "numbered sources) as an AI message.",
    )
    passages: list[dict[str, Any]] = Field(
        default_factory=list, description="Ranked passages: id, title, text, score, chain."
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
