"""What the Elasticsearch backend stores: index names, settings, mappings, documents.

One index per collection, ``{prefix}-passages`` and ``{prefix}-triples``, each
with an explicit, ``strict`` mapping:

* ``content`` (passages) and ``text`` (triples): ``text`` with the analyzer of the
  index's BM25 tokenizer (:data:`ANALYZERS`: ``standard``, or ``gear_word``, which
  tokenises as the embedded store's ``word`` tokenizer), scored by the index's own BM25
  similarity ``gear_bm25`` (k1=1.2, b=0.75, the values the embedded store uses);
* ``vector``: ``dense_vector``, ``similarity: cosine``, ``index: true``, dims
  from the embedder, with plain float ``hnsw`` index options (ES 8.14+ would
  otherwise pick ``int8_hnsw`` and quantise the vectors);
* keyword fields for ids, ``source``, ``passage_id`` and the normalised
  ``head``/``tail`` entities; ``extracted`` boolean on passages.

Passages also keep their ``metadata`` as given (an object field with ``enabled: false``:
stored and returned, never mapped, so arbitrary user keys cannot clash or explode the
mapping) and, for filters, one ``nested`` entry per flattened (key, value) pair in
``meta`` with a typed value column (``str`` keyword, ``num`` double, ``bool``, ``null``),
so ``year >= 2020`` is a numeric range and never a string comparison; ``title_key`` is the
title as a keyword for exact title filters. Schema version 1 indices (no metadata) are
upgraded in place by adding these fields (:func:`upgrade_mapping`).

One primary shard per index: Lucene computes BM25 statistics per shard, so a
single shard gives the same IDF as one embedded index. The embedding model and
dimension live in the mapping's ``_meta``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from gear_agent.filters import flatten_metadata
from gear_agent.store.base import ModelMismatchError, StoreError
from gear_agent.text.tokenizer import normalise_entity
from gear_agent.types import Collection, Passage, Triple

SCHEMA_VERSION = 2
SIMILARITY = "gear_bm25"
BM25_K1 = 1.2
BM25_B = 0.75
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 100
VECTOR_FIELD = "vector"
TEXT_FIELD: dict[Collection, str] = {"passage": "content", "triple": "text"}


class IndexNames(NamedTuple):
    """The two index names of one store."""

    passages: str
    triples: str

    def of(self, collection: Collection) -> str:
        if collection == "passage":
            return self.passages
        if collection == "triple":
            return self.triples
        raise ValueError(f"unknown collection {collection!r}; use 'passage' or 'triple'")


def index_names(prefix: str) -> IndexNames:
    """``gear`` -> ``IndexNames("gear-passages", "gear-triples")``."""
    return IndexNames(f"{prefix}-passages", f"{prefix}-triples")


# The embedded ``word`` tokenizer (gear_agent.text.tokenizer.tokenize_words) is Python's
# ``\w+`` (letters, numbers, ``_``) then ``str.lower()``. Lucene's lower-casing is
# ``Character.toLowerCase`` per code point, which differs from ``str.lower()`` in two
# places, mended before it: ``İ`` lowers to ``i`` + U+0307 in Python, and a capital sigma
# ending a word (a cased letter before it, none after, case-ignorable ``Lm`` skipped)
# lowers to the final ``ς``. A token over 8,191 characters (Lucene refuses a term over
# 32,766 UTF-8 bytes, failing the document) is dropped; Python would keep it.
_CASED = r"[\p{IsLowercase}\p{IsUppercase}\p{Lt}&&[^\p{Lm}]]"
WORD_ANALYZER: dict[str, Any] = {
    "tokenizer": {"gear_word": {"type": "pattern", "pattern": r"[\p{L}\p{N}_]+", "group": 0}},
    "filter": {
        "gear_dotted_i": {"type": "pattern_replace", "pattern": "\u0130", "replacement": "i\u0307"},
        "gear_final_sigma": {"type": "pattern_replace",
                             "pattern": rf"(?<={_CASED}\p{{Lm}}{{0,16}})\u03a3(?!\p{{Lm}}*{_CASED})",
                             "replacement": "\u03c2"},
        "gear_term_bytes": {"type": "length", "max": 8191},
    },
    "analyzer": {"gear_word": {"type": "custom", "tokenizer": "gear_word",
                               "filter": ["gear_dotted_i", "gear_final_sigma", "lowercase", "gear_term_bytes"]}},
}
ANALYZERS = {"standard": "standard", "word": "gear_word"}
"""The Elasticsearch analyzer of each BM25 tokenizer name (``GEAR_BM25_TOKENIZER``)."""


def analyzer_of(tokenizer: str) -> str:
    """The analyzer name of BM25 tokenizer ``tokenizer``; a ValueError lists the valid names."""
    try:
        return ANALYZERS[tokenizer]
    except KeyError:
        raise ValueError(f"unknown tokenizer {tokenizer!r}; choose one of {', '.join(ANALYZERS)}") from None


def index_settings(tokenizer: str = "standard") -> dict[str, Any]:
    """Index settings: one shard, the BM25 similarity the text fields use and, for the
    ``word`` tokenizer, its analyzer."""
    index: dict[str, Any] = {
        "number_of_shards": 1,
        "similarity": {SIMILARITY: {"type": "BM25", "k1": BM25_K1, "b": BM25_B}},
    }
    if analyzer_of(tokenizer) != "standard":
        index["analysis"] = WORD_ANALYZER
    return {"index": index}


def _bm25_text(tokenizer: str) -> dict[str, Any]:
    return {"type": "text", "analyzer": analyzer_of(tokenizer), "similarity": SIMILARITY}


def _stored_text() -> dict[str, Any]:
    return {"type": "text", "index": False}


def _vector(dimension: int) -> dict[str, Any]:
    return {
        "type": "dense_vector",
        "dims": dimension,
        "index": True,
        "similarity": "cosine",
        "index_options": {"type": "hnsw", "m": HNSW_M, "ef_construction": HNSW_EF_CONSTRUCTION},
    }


METADATA_FIELDS: dict[str, Any] = {
    "title_key": {"type": "keyword", "ignore_above": 1024},
    "metadata": {"type": "object", "enabled": False},
    "meta": {
        "type": "nested",
        "properties": {
            "key": {"type": "keyword"},
            "str": {"type": "keyword", "ignore_above": 1024},
            "num": {"type": "double"},
            "bool": {"type": "boolean"},
            "null": {"type": "boolean"},
        },
    },
}
"""Fields schema version 2 added to passages (metadata and filters)."""


FEED_FIELDS: dict[str, Any] = {"generation": {"type": "long"}, "retired": {"type": "long"},
                               "retired_at": {"type": "double"}}
"""The change feed's fields on passages and triples (:mod:`gear_agent.store.elasticsearch.changes`): the
generation that wrote the document, and the one that retired it and when (a sync's old
version, :mod:`gear_agent.store.elasticsearch.sync`). Indices made before them are given them when opened
(:func:`feed_mapping`); their older documents have none."""


def feed_mapping() -> dict[str, Any]:
    """The ``PUT _mapping`` body that adds :data:`FEED_FIELDS` to an index made before them."""
    return {"properties": FEED_FIELDS}


def upgrade_mapping(collection: Collection, model: str, dimension: int) -> dict[str, Any]:
    """The ``PUT _mapping`` body that takes a schema-1 index to this schema (fields are only
    added; documents indexed before have no metadata, which is what they had; a schema-1
    index was always ``standard``)."""
    body: dict[str, Any] = {"_meta": index_mappings(collection, model, dimension, "standard")["_meta"]}
    if collection == "passage":
        body["properties"] = METADATA_FIELDS
    return body


def index_mappings(collection: Collection, model: str, dimension: int,
                   tokenizer: str = "standard") -> dict[str, Any]:
    """The explicit mapping of one collection's index, ``_meta`` included (the BM25
    ``tokenizer`` it was made for recorded there)."""
    keyword = {"type": "keyword"}
    if collection == "passage":
        properties: dict[str, Any] = {
            "id": keyword,
            "title": _stored_text(),
            "text": _stored_text(),
            "content": _bm25_text(tokenizer),
            "source": keyword,
            "extracted": {"type": "boolean"},
            VECTOR_FIELD: _vector(dimension),
            **METADATA_FIELDS,
            **FEED_FIELDS,
        }
    elif collection == "triple":
        properties = {
            "id": keyword,
            "subject": _stored_text(),
            "predicate": _stored_text(),
            "object": _stored_text(),
            "text": _bm25_text(tokenizer),
            "head": keyword,
            "tail": keyword,
            "passage_id": keyword,
            "added_ns": {"type": "long"},
            "position": {"type": "integer"},
            VECTOR_FIELD: _vector(dimension),
            **FEED_FIELDS,
        }
    else:
        raise ValueError(f"unknown collection {collection!r}; use 'passage' or 'triple'")
    return {
        "dynamic": "strict",
        "_meta": {
            "gear_agent": {
                "schema_version": SCHEMA_VERSION,
                "collection": collection,
                "embedding_model": model,
                "dimension": dimension,
                "tokenizer": tokenizer,
            }
        },
        "properties": properties,
    }


def _meta(collection: str, model: str, dimension: int) -> dict[str, Any]:
    return {"gear_agent": {"schema_version": SCHEMA_VERSION, "collection": collection,
                           "embedding_model": model, "dimension": dimension}}


def node_mappings(model: str, dimension: int) -> dict[str, Any]:
    """The mapping of ``{prefix}-nodes`` (SiReRAG nodes, :mod:`gear_agent.store.elasticsearch.nodes`)."""
    keyword = {"type": "keyword"}
    return {
        "dynamic": "strict",
        "_meta": _meta("node", model, dimension),
        "properties": {
            "id": keyword, "kind": keyword, "tree": keyword, "level": {"type": "integer"},
            "entity": keyword, "text": _stored_text(), "children": keyword,
            "passage_ids": keyword, "added_ns": {"type": "long"}, "position": {"type": "integer"},
            VECTOR_FIELD: _vector(dimension),
        },
    }


def node_meta_mappings(model: str) -> dict[str, Any]:
    """The mapping of ``{prefix}-nodes-meta``: what the SiReRAG builder records, one
    document per key."""
    return {
        "dynamic": "strict",
        "_meta": _meta("node-meta", model, 0),
        "properties": {"key": {"type": "keyword"}, "value": _stored_text()},
    }


def check_owned(index: str, actual: dict[str, Any], collection: str, model: str) -> None:
    """Refuse an index gear-agent did not create for ``collection`` or built with another
    model (the node indices; passages and triples get the full :func:`check_mapping`)."""
    meta = (actual.get("_meta") or {}).get("gear_agent")
    if not isinstance(meta, dict) or meta.get("collection") != collection:
        raise StoreError(
            f"index {index!r} exists but was not created by gear-agent for {collection}s (no "
            "matching _meta.gear_agent in its mapping). Delete it, or choose another "
            "GEAR_ES_INDEX_PREFIX."
        )
    if meta.get("embedding_model") != model:
        raise ModelMismatchError(
            f"index {index!r} was built with embedding model {meta.get('embedding_model')!r}, "
            f"but the configured model is {model!r}. Rebuild the SiReRAG nodes "
            "(`gear sirerag build`) after deleting it, or set GEAR_EMBEDDING_MODEL."
        )


_CHECKED_KEYS = ("type", "dims", "similarity", "index", "analyzer")
_ALWAYS_SHOWN = ("type", "dims")


def stored_tokenizer(actual: dict[str, Any]) -> str:
    """The BM25 tokenizer an index's mapping records (``standard`` before it was recorded)."""
    return str(((actual.get("_meta") or {}).get("gear_agent") or {}).get("tokenizer", "standard"))


def check_mapping(
    index: str, actual: dict[str, Any], collection: Collection, model: str, dimension: int,
    tokenizer: str = "standard",
) -> None:
    """Refuse an existing index built with another model or an incompatible mapping.

    Args:
        index: Index name, for the messages.
        actual: The ``mappings`` object ``GET /{index}/_mapping`` returned.
        collection: What the index should hold.
        model: The configured embedding model name.
        dimension: Its vector length.
        tokenizer: The configured BM25 tokenizer (``GEAR_BM25_TOKENIZER``).

    Raises:
        ModelMismatchError: ``_meta`` names another model or dimension.
        StoreError: no gear-agent ``_meta``, another BM25 tokenizer, or a field is missing
            or differs.
    """
    meta = (actual.get("_meta") or {}).get("gear_agent")
    if not isinstance(meta, dict):
        raise StoreError(
            f"index {index!r} exists but was not created by gear-agent (no _meta.gear_agent in "
            "its mapping). Delete it, or choose another GEAR_ES_INDEX_PREFIX."
        )
    stored_model, stored_dim = meta.get("embedding_model"), meta.get("dimension")
    if stored_model != model or stored_dim != dimension:
        raise ModelMismatchError(
            f"index {index!r} was built with embedding model {stored_model!r} "
            f"(dimension {stored_dim}), but the configured model is {model!r} (dimension "
            f"{dimension}). Set GEAR_EMBEDDING_MODEL={stored_model}, or re-index into another "
            "GEAR_ES_INDEX_PREFIX."
        )
    if stored_tokenizer(actual) != tokenizer:
        raise StoreError(
            f"index {index!r} was built with the BM25 tokenizer {stored_tokenizer(actual)!r}, but "
            f"GEAR_BM25_TOKENIZER is {tokenizer!r}. Set GEAR_BM25_TOKENIZER={stored_tokenizer(actual)}, "
            "or index into another GEAR_ES_INDEX_PREFIX."
        )
    expected = index_mappings(collection, model, dimension, tokenizer)["properties"]
    found = actual.get("properties") or {}
    problems = []
    upgradable = meta.get("schema_version") == 1
    for field, spec in expected.items():
        if upgradable and field in METADATA_FIELDS and field not in found:
            continue
        if field in FEED_FIELDS and field not in found:
            continue  # added when the store opens (feed_mapping)
        have = found.get(field)
        if have is None:
            problems.append(f"field {field!r} is missing")
            continue
        for key in _CHECKED_KEYS:
            # ES may leave a parameter at its default out of GET _mapping; judge only what
            # it shows, except type and dims, which it always shows.
            if key not in spec or (key not in have and key not in _ALWAYS_SHOWN):
                continue
            if have.get(key) != spec[key]:
                problems.append(f"{field}.{key} is {have.get(key)!r}, expected {spec[key]!r}")
    if meta.get("schema_version") not in (1, SCHEMA_VERSION):
        problems.append(
            f"schema version is {meta.get('schema_version')!r}, expected {SCHEMA_VERSION}"
        )
    if problems:
        raise StoreError(
            f"index {index!r} has an incompatible mapping: {'; '.join(problems)}. Delete and "
            "re-ingest it, or choose another GEAR_ES_INDEX_PREFIX."
        )


# ---- documents ---------------------------------------------------------------


def vector_list(vector: np.ndarray) -> list[float]:
    """A float32 vector as the JSON list a ``dense_vector`` field takes."""
    return [float(x) for x in np.asarray(vector, dtype=np.float32)]


def meta_entries(metadata: Any) -> list[dict[str, Any]]:
    """The nested ``meta`` entries of a passage: one per flattened (key, scalar value)."""
    entries = []
    for key, value in flatten_metadata(metadata or {}):
        if value is None:
            entries.append({"key": key, "null": True})
        elif isinstance(value, bool):
            entries.append({"key": key, "bool": value})
        elif isinstance(value, int | float):
            entries.append({"key": key, "num": value})
        else:
            entries.append({"key": key, "str": value})
    return entries


def passage_document(passage: Passage, vector: np.ndarray, generation: int | None = None) -> dict[str, Any]:
    """The ``_source`` of a passage; ``extracted`` starts false; ``generation`` (the commit
    writing it) when the index has a change feed."""
    doc = {
        "id": passage.id,
        "title": passage.title,
        "title_key": passage.title,
        "text": passage.text,
        "content": passage.content,
        "source": passage.source,
        "extracted": False,
        "metadata": dict(passage.metadata),
        "meta": meta_entries(passage.metadata),
        VECTOR_FIELD: vector_list(vector),
    }
    if generation is not None:
        doc["generation"] = generation
    return doc


def triple_document(
    triple: Triple, vector: np.ndarray, added_ns: int, position: int, generation: int | None = None
) -> dict[str, Any]:
    """The ``_source`` of a triple; ``(added_ns, position)`` records extraction order
    (``generation`` as in :func:`passage_document`)."""
    doc = {
        "id": triple.id,
        "subject": triple.subject,
        "predicate": triple.predicate,
        "object": triple.object,
        "text": triple.text,
        "head": normalise_entity(triple.subject),
        "tail": normalise_entity(triple.object),
        "passage_id": triple.passage_id,
        "added_ns": added_ns,
        "position": position,
        VECTOR_FIELD: vector_list(vector),
    }
    if generation is not None:
        doc["generation"] = generation
    return doc


def passage_from_source(source: dict[str, Any]) -> Passage:
    return Passage(
        id=source["id"], title=source["title"], text=source["text"], source=source["source"],
        metadata=source.get("metadata") or {},
    )


def triple_from_source(source: dict[str, Any]) -> Triple:
    return Triple(
        id=source["id"],
        subject=source["subject"],
        predicate=source["predicate"],
        object=source["object"],
        passage_id=source["passage_id"],
    )
