"""Importing precomputed OpenIE output in HippoRAG's format.

The file is ``{"docs": [{"title", "text", "extracted_entities", "extracted_triples"}, ...]}``.
Each doc is aligned to a stored passage by its (title, text), i.e. by the same
content hash the passage got at ingest. Malformed triples (wrong arity, empty
or non-string parts) are skipped and counted, never fatal.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from gear_agent.ids import passage_id, triple_id
from gear_agent.ingest.corpus import CorpusFormatError, load_json_file
from gear_agent.text.grounding import Grounding
from gear_agent.types import Triple


@dataclass
class OpenIEImport:
    """Triples read from an OpenIE file, with counts of what was skipped.

    Attributes:
        triples: Well-formed triples, each linked to its passage id.
        passage_ids: Passages the file covers (extraction is done for them, even if empty).
        malformed: Triples skipped for wrong arity or empty/non-string parts.
        duplicates: Triples repeated within one passage, kept once.
        docs: Docs in the file.
        malformed_examples: Up to five skipped items, for the report.
        ungrounded: Triples whose subject or object is not found in their doc's title and
            text (see :mod:`gear_agent.text.grounding`); left out when
            ``drop_ungrounded``, else kept and only counted.
        ungrounded_examples: Up to five of them, for the report.
        ungrounded_left_out: Whether the ungrounded triples were left out.
    """

    triples: list[Triple] = field(default_factory=list)
    passage_ids: list[str] = field(default_factory=list)
    malformed: int = 0
    duplicates: int = 0
    docs: int = 0
    malformed_examples: list[str] = field(default_factory=list)
    ungrounded: int = 0
    ungrounded_examples: list[str] = field(default_factory=list)
    ungrounded_left_out: bool = False


def clean_triple(item: object) -> tuple[str, str, str] | None:
    """The triple's three stripped string parts, or None if it is malformed.

    Example:
        >>> clean_triple([" Paris ", "capital of", "France"])
        ('Paris', 'capital of', 'France')
        >>> clean_triple(["Paris", "capital of"]) is None
        True
    """
    if not isinstance(item, (list, tuple)) or len(item) != 3:
        return None
    if not all(isinstance(part, str) for part in item):
        return None
    parts = tuple(part.strip() for part in item)
    if not all(parts):
        return None
    return parts  # type: ignore[return-value]


def _doc_text(doc: dict) -> tuple[str, str] | None:
    title, text = doc.get("title"), doc.get("text")
    if isinstance(text, str):
        return (title if isinstance(title, str) else "", text)
    passage = doc.get("passage")
    if isinstance(passage, str):  # HippoRAG's "title\ntext" form
        head, _, body = passage.partition("\n")
        return (head, body) if body else ("", head)
    return None


def parse_openie_docs(docs: Iterable[object], drop_ungrounded: bool = False) -> OpenIEImport:
    """Triples from HippoRAG OpenIE docs, aligned by (title, text) hash; triples not
    grounded in their doc are counted, and left out when ``drop_ungrounded``."""
    result = OpenIEImport(ungrounded_left_out=drop_ungrounded)
    for doc in docs:
        result.docs += 1
        if not isinstance(doc, dict):
            result.malformed += 1
            continue
        title_text = _doc_text(doc)
        if title_text is None:
            continue
        pid = passage_id(*title_text)
        result.passage_ids.append(pid)
        raw = doc.get("extracted_triples") or []
        if not isinstance(raw, list):
            raw = [raw]
        seen: set[str] = set()
        source = Grounding.of(*title_text)
        for item in raw:
            parts = clean_triple(item)
            if parts is None:
                result.malformed += 1
                if len(result.malformed_examples) < 5:
                    result.malformed_examples.append(repr(item)[:120])
                continue
            if not source.grounds(parts[0], parts[2]):
                result.ungrounded += 1
                if len(result.ungrounded_examples) < 5:
                    result.ungrounded_examples.append(repr(parts)[:160])
                if drop_ungrounded:
                    continue
            tid = triple_id(pid, *parts)
            if tid in seen:
                result.duplicates += 1
                continue
            seen.add(tid)
            result.triples.append(Triple(tid, parts[0], parts[1], parts[2], pid))
    return result


def read_openie(path: Path, drop_ungrounded: bool = False) -> OpenIEImport:
    """Read and parse an OpenIE file (``drop_ungrounded``: ``GEAR_GROUND_OPENIE``).

    Raises:
        CorpusFormatError: the file is missing, not JSON, or has no ``docs`` list.
    """
    data = load_json_file(path, "OpenIE file")
    if not isinstance(data, dict) or not isinstance(data.get("docs"), list):
        raise CorpusFormatError(
            f"{path}: expected HippoRAG OpenIE output {{'docs': [...]}}, "
            f"got {type(data).__name__} with keys {sorted(data)[:5] if isinstance(data, dict) else '-'}"
        )
    return parse_openie_docs(data["docs"], drop_ungrounded)
