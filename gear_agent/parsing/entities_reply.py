"""Read a named-entity reply: ``{"named_entities": [...]}``, or a bare JSON list of names.

Takes the same key variants as the extraction reply (``entities``, ``named_entities``,
... matched case-insensitively; :data:`~gear_agent.parsing.extraction_reply.ENTITY_KEYS`),
items as strings or ``{"name": ...}`` objects, code fences and prose around the JSON, and a
reply cut off at the token cap (the complete names are kept). An explicit empty list is an
answer (the query names no entity), not an error.
"""

from __future__ import annotations

from gear_agent.parsing.errors import ParseError
from gear_agent.parsing.extraction_reply import ENTITY_KEYS, entity_names
from gear_agent.parsing.json_reply import extract_json


def parse_entities_reply(text: str) -> list[str]:
    """The distinct entity names of a reply, in reply order (empty when it lists none).

    Args:
        text: The model's reply.

    Raises:
        ParseError: The reply holds no JSON object or list, an object without an entity
            key, or a non-empty list with no name in it.

    Example:
        >>> parse_entities_reply('```json\\n{"named_entities": ["Lake Bled", "Slovenia"]}\\n```')
        ['Lake Bled', 'Slovenia']
        >>> parse_entities_reply('["Lake Bled"]'), parse_entities_reply('{"entities": []}')
        (['Lake Bled'], [])
    """
    value = extract_json(text, want=(dict, list), repair_truncated=True)
    if isinstance(value, dict):
        lowered = {str(k).strip().lower(): v for k, v in value.items()}
        key = next((k for k in ENTITY_KEYS if k in lowered), None)
        if key is None:
            keys = ", ".join(sorted(map(str, value))) or "none"
            raise ParseError(f"the entity reply has no 'named_entities' key (keys: {keys})", text)
        value = lowered[key]
    names = entity_names(value)
    if not names and value not in ([], None, ""):
        raise ParseError("the entity reply lists no entity names", text)
    return names
