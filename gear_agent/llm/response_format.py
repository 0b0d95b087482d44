"""Constrained JSON replies: the schemas of GEAR's JSON prompts, and how each server wants them.

GEAR's parsers read whatever a model writes (code fences, prose around the JSON, variant
keys), so no server feature is needed. But a small local model rarely writes the JSON at
all; a server that constrains decoding to a JSON schema (a grammar) makes even a 270M
model's replies parse. ``GEAR_LLM_RESPONSE_FORMAT`` picks how the schema is sent:

* ``text`` (default): nothing is sent; the prompt alone asks for JSON. Works everywhere.
* ``json_object``: OpenAI's JSON mode, ``{"type": "json_object"}`` (no schema).
* ``json_schema``: OpenAI's structured outputs, ``{"type": "json_schema", "json_schema":
  {"name", "schema", "strict": false}}`` (OpenAI, vLLM, llama.cpp's ``llama-server``,
  Ollama).
* ``json_object_schema``: ``{"type": "json_object", "schema": ...}``, the form
  llama-cpp-python's server turns into a grammar (llama.cpp's ``llama-server`` and vLLM
  accept it too).

Only the prompts that ask for JSON carry a schema (extraction, reader, reasoner, PPR
filter, HippoRAG's query NER); the rewriter and the QA prompt answer in plain text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, get_args

from gear_agent.types import ResponseFormatMode

MODES: tuple[ResponseFormatMode, ...] = get_args(ResponseFormatMode)

MAX_TRIPLES = 24
"""Most triples a constrained reply may hold: a grammar that allows any number lets a
small model repeat one fact until ``max_tokens`` cuts the JSON short."""

_TRIPLE: dict[str, Any] = {
    "type": "array",
    "items": {"type": "string", "minLength": 1},
    "minItems": 3,
    "maxItems": 3,
}
_TRIPLES: dict[str, Any] = {"type": "array", "items": _TRIPLE, "maxItems": MAX_TRIPLES}


@dataclass(frozen=True)
class ReplySchema:
    """The JSON a prompt asks for: a name (for ``json_schema``) and a JSON Schema."""

    name: str
    schema: dict[str, Any]


TRIPLES_REPLY = ReplySchema(
    "triples",
    {
        "type": "object",
        "properties": {"triples": _TRIPLES},
        "required": ["triples"],
        "additionalProperties": False,
    },
)
"""The reader's and the PPR filter's reply: ``{"triples": [[s, p, o], ...]}``."""

EXTRACTION_REPLY = ReplySchema(
    "extraction",
    {
        "type": "object",
        "properties": {
            "entities": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_TRIPLES},
            "triples": _TRIPLES,
        },
        "required": ["entities", "triples"],
        "additionalProperties": False,
    },
)
"""The extraction prompt's reply: ``{"entities": [...], "triples": [[s, p, o], ...]}``."""

ENTITIES_REPLY = ReplySchema(
    "named_entities",
    {
        "type": "object",
        "properties": {
            "named_entities": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "maxItems": MAX_TRIPLES,
            },
        },
        "required": ["named_entities"],
        "additionalProperties": False,
    },
)
"""The query NER reply (``hipporag+ner``): ``{"named_entities": [...]}``, at most
:data:`MAX_TRIPLES` names for the same reason as the triples."""

VERDICT_REPLY = ReplySchema(
    "verdict",
    {
        "type": "object",
        "properties": {
            "answerable": {"type": "boolean"},
            "answer": {"type": ["string", "null"]},
            "reason": {"type": ["string", "null"]},
        },
        "required": ["answerable", "answer", "reason"],
        "additionalProperties": False,
    },
)
"""The reasoner's reply: ``{"answerable": bool, "answer": str | null, "reason": str | null}``."""


def check_mode(mode: str) -> ResponseFormatMode:
    """``mode`` if it is one of :data:`MODES`, else a ``ValueError`` listing them."""
    if mode not in MODES:
        raise ValueError(f"unknown response format {mode!r}; choose one of {', '.join(MODES)}")
    return mode  # type: ignore[return-value]


def response_format(mode: ResponseFormatMode, reply: ReplySchema | None) -> dict[str, Any] | None:
    """The ``response_format`` request field for ``reply`` under ``mode``; None to send none.

    Example:
        >>> response_format("json_object_schema", VERDICT_REPLY)["type"]
        'json_object'
        >>> response_format("text", VERDICT_REPLY) is None
        True
    """
    check_mode(mode)
    if reply is None or mode == "text":
        return None
    if mode == "json_object":
        return {"type": "json_object"}
    if mode == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": reply.name, "schema": reply.schema, "strict": False},
        }
    return {"type": "json_object", "schema": reply.schema}
