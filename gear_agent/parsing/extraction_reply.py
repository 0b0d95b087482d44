"""Read the extraction prompt's reply: ``{"entities": [...], "triples": [[s, p, o], ...]}``.

Accepts the key variants models use (``named_entities``, ``extracted_triples``,
``relations``, ...), triples as lists or as ``{subject, predicate, object}`` /
``{head, relation, tail}`` dicts, and replies cut off at the token cap (the complete
triples are kept). A reply that is not JSON still gives its triples when they are
written in a format :func:`~gear_agent.parsing.triples.parse_triples` reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gear_agent.parsing.errors import ParseError
from gear_agent.parsing.json_reply import extract_json
from gear_agent.parsing.triples import (
    TRIPLE_LIST_KEYS,
    Triple3,
    clean_part,
    parse_triples,
    triples_from_items,
)

ENTITY_KEYS = ("entities", "named_entities", "extracted_entities", "entity_list", "ner")
"""Keys under which the reply may list its entities (matched case-insensitively)."""

_ENTITY_NAME_KEYS = ("name", "text", "entity", "value")


@dataclass(frozen=True)
class ExtractionReply:
    """What one extraction reply gave.

    Attributes:
        entities: Distinct entity names, in reply order.
        triples: Distinct triples, in reply order.
        dropped: Malformed triple items that were left out.
    """

    entities: list[str] = field(default_factory=list)
    triples: list[Triple3] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)


def _find(mapping: dict[Any, Any], keys: tuple[str, ...]) -> tuple[bool, Any]:
    lowered = {str(k).strip().lower(): v for k, v in mapping.items()}
    for key in keys:
        if key in lowered:
            return True, lowered[key]
    return False, None


def entity_names(value: Any) -> list[str]:
    """Distinct entity names, in order, from a list, a ``{type: [...]}`` dict or one value;
    ``{"name": ...}`` items give their name, and items with no text are left out.

    Example:
        >>> entity_names(["Bled", {"name": "Slovenia"}, "Bled", None])
        ['Bled', 'Slovenia']
    """
    if isinstance(value, dict):  # {"PERSON": [...], "PLACE": [...]}
        items: list[Any] = []
        for group in value.values():
            items.extend(group if isinstance(group, list) else [group])
    elif isinstance(value, list):
        items = value
    else:
        items = [value]
    names: list[str] = []
    for item in items:
        if isinstance(item, dict):
            _, item = _find(item, _ENTITY_NAME_KEYS)
        name = clean_part(item)
        if name is not None and name not in names:
            names.append(name)
    return names


def parse_extraction_reply(text: str) -> ExtractionReply:
    """Entities and triples from a reply to the ``extraction`` prompt.

    Args:
        text: The model's reply.

    Returns:
        The entities, the triples and the dropped malformed items.

    Raises:
        ParseError: The reply holds neither the JSON asked for nor any readable triple.

    Example:
        >>> r = parse_extraction_reply('{"named_entities": ["Lake Bled"], '
        ...     '"extracted_triples": [{"head": "Lake Bled", "relation": "in", "tail": "Slovenia"}]}')
        >>> r.entities, r.triples
        (['Lake Bled'], [('Lake Bled', 'in', 'Slovenia')])
    """
    try:
        value = extract_json(text, want=(dict, list), repair_truncated=True)
    except ParseError:
        value = None
    if isinstance(value, list) and (
        not value or any(isinstance(v, (list, tuple, dict)) for v in value)
    ):
        parsed = triples_from_items(value)
        return ExtractionReply([], parsed.triples, parsed.dropped)
    if isinstance(value, dict):
        has_entities, entities = _find(value, ENTITY_KEYS)
        has_triples, triples = _find(value, TRIPLE_LIST_KEYS)
        if has_entities or has_triples:
            if has_triples and not isinstance(triples, list):
                triples = [triples] if triples else []
            parsed = triples_from_items(triples or [])
            names = entity_names(entities) if has_entities else []
            return ExtractionReply(names, parsed.triples, parsed.dropped)
    parsed = parse_triples(text)
    if parsed.triples:
        return ExtractionReply([], parsed.triples, parsed.dropped)
    if isinstance(value, dict):
        keys = ", ".join(sorted(map(str, value))) or "none"
        raise ParseError(
            f"the extraction reply has no 'entities' or 'triples' key (keys: {keys})", text
        )
    raise ParseError("the extraction reply is not the JSON the prompt asks for", text)
