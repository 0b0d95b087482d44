"""The ``word`` analyzer and exact BM25 on a real cluster: the analyzer tokenises as the
embedded ``word`` tokenizer, token for token, and with ``GEAR_ES_EXACT_BM25`` a BM25
search ranks and scores as the embedded store does."""

from __future__ import annotations

import difflib
import re
import uuid
from pathlib import Path

import pytest

pytest.importorskip("elasticsearch")

from support.tiny_corpus import CORPUS  # noqa: E402

from gear_agent.config import GearSettings  # noqa: E402
from gear_agent.embedding.hashing import HashingEmbedder  # noqa: E402
from gear_agent.ids import passage_id, triple_id  # noqa: E402
from gear_agent.store.elasticsearch.store import ElasticsearchStore  # noqa: E402
from gear_agent.store.embedded.store import EmbeddedStore  # noqa: E402
from gear_agent.text.tokenizer import tokenize_words  # noqa: E402
from gear_agent.types import Passage, Triple  # noqa: E402

pytestmark = pytest.mark.es

TRICKY = [
    "The U.S. can't pay $1,000.50 for Beyoncé's 2nd album!",
    "Beyonce\u0301 naïve café, O’Neill rock’n’roll l'été",  # a combining accent splits a word
    "well-known e-mail x_y __init__ 3.14 1st–2nd 1,000",
    "ΟΔΟΣ ΣΑΣ Σ ΑΣ1 ΑΣ_ ΑΣΑ σ ς ΑʰΣ 5ʰΣ ΑΣʰ ΑΣʰΑ ΆΣ ΌΣΟΣ Ἀθῆναι ΤΕΛΟΣ.",  # final sigma
    "İstanbul İ DİYARBAKIR",  # dotted capital I
    "ǅemal ǲ ß ẞ ﬁne Ⅻ ² ½ ٣ ①",
    "हिन्दी 中文字 ひらがな カタカナ 한국어",
    "tab\tnew\nline\u200bzero\u00a0nbsp 😀emoji👍🏽 ok",
]


@pytest.fixture
def word_store(es_url: str):
    settings = GearSettings(backend="elasticsearch", es_url=es_url, bm25_tokenizer="word",
                            es_exact_bm25=True, es_index_prefix=f"word-{uuid.uuid4().hex[:8]}")
    store = ElasticsearchStore(settings, HashingEmbedder(64))
    try:
        yield store
    finally:
        for name in store.indices:
            store._client.indices.delete(index=name, ignore_unavailable=True)
        store.close()


def _analyze(store: ElasticsearchStore, text: str) -> list[str]:
    body = store._client.indices.analyze(index=store.indices.passages, field="content", text=text).body
    return [token["token"] for token in body["tokens"]]


@pytest.mark.parametrize("text", TRICKY)
def test_the_word_analyzer_tokenises_as_the_embedded_word_tokenizer(word_store, text: str) -> None:
    assert _analyze(word_store, text) == tokenize_words(text)


def test_every_word_character_alone_and_after_a_letter_gives_the_same_tokens(word_store) -> None:
    """Every code point Python's ``\\w`` matches, alone, after ``A`` and after ``Σ``: the
    only differences are characters Unicode assigned after the JVM's Unicode version
    (Java 17 knows Unicode 13, Python 3.11 Unicode 14), which the cluster does not see
    as letters; none is a case or boundary difference."""
    word = re.compile(r"\w")
    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000 and word.match(chr(c))]
    unknown: set[str] = set()
    for prefix in ("", "A", "Σ"):
        for start in range(0, len(chars), 9_000):  # _analyze answers at most 10,000 tokens
            text = " ".join(prefix + c for c in chars[start : start + 9_000])
            want, got = tokenize_words(text), _analyze(word_store, text)
            matcher = difflib.SequenceMatcher(a=want, b=got, autojunk=False)
            for tag, a0, a1, b0, b1 in matcher.get_opcodes():
                if tag == "equal":
                    continue
                # the cluster dropped the unknown character: the token is the prefix or nothing
                assert got[b0:b1] == [prefix.lower()] * (b1 - b0) if prefix else b1 == b0, (want[a0:a1], got[b0:b1])
                unknown.update(token[-1] for token in want[a0:a1])
    assert len(unknown) <= 838, sorted(unknown)[:20]  # Unicode 14 added 838 characters


def test_exact_bm25_ranks_and_scores_as_the_embedded_store(word_store, tmp_path: Path) -> None:
    passages = [Passage(passage_id(t, text), t, text, "test") for t, (text, _) in CORPUS.items()]
    triples = [Triple(triple_id(p.id, *spo), *spo, p.id) for p in passages for spo in CORPUS[p.title][1]]
    embedder = HashingEmbedder(64)
    embedded = EmbeddedStore.open(tmp_path / "index", embedder, create=True, tokenizer="word")
    try:
        for store in (embedded, word_store):
            store.passages.add(passages)
            store.triples.add(triples)
        queries = [p.title for p in passages] + [t.text for t in triples[:20]] + ["the of and in", "zzz"]
        for collection in ("passage", "triple"):
            for query in queries:
                want = embedded.collection(collection).bm25_search(query, 10)
                got = word_store.collection(collection).bm25_search(query, 10)
                assert [h.id for h in got] == [h.id for h in want], (collection, query)
                assert [h.score for h in got] == pytest.approx([h.score for h in want], rel=1e-9)
    finally:
        embedded.close()
