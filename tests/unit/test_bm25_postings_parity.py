"""The persisted BM25 postings rank exactly as the in-memory Lucene BM25 did, on MuSiQue.

The ``../shared`` BM25 row (46.2 / 58.0 / 63.4) came from :class:`BM25Index` over these
passages with the ``word`` tokenizer. The embedded store now scores from segments built
batch by batch (and merged); for every question the top 15 must be the same passages in
the same order with the same scores. Skips when ``../shared`` is absent.
"""

import json
from pathlib import Path

import numpy as np
import pytest
from support.bm25_reference import BM25Index

from gear_agent.embedding.hashing import HashingEmbedder
from gear_agent.ids import passage_id
from gear_agent.store.embedded.store import EmbeddedStore
from gear_agent.text.tokenizer import tokenize_words
from gear_agent.types import Passage

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "musique_dev"


@pytest.mark.skipif(not (DATA / "corpus.json").exists(), reason="../shared/data/musique_dev is not present")
def test_bm25_from_persisted_segments_equals_the_in_memory_index(tmp_path):
    corpus = json.loads((DATA / "corpus.json").read_text(encoding="utf-8"))
    questions = [q["question"] for q in json.loads((DATA / "questions.json").read_text(encoding="utf-8"))]
    passages = list({p.id: p for p in (
        Passage(passage_id(d["title"], d["text"]), d["title"].strip(), d["text"].strip(), "musique")
        for d in corpus)}.values())
    store = EmbeddedStore.open(tmp_path / "ix", HashingEmbedder(32), tokenizer="word")
    for start in range(0, len(passages), 64):  # 30 commits: segments are merged on the way
        store.passages.add(passages[start : start + 64])
    reference = BM25Index([tokenize_words(p.content) for p in passages])
    for question in questions:
        indices, scores = reference.search(tokenize_words(question), 15)
        hits = store.passages.bm25_search(question, 15)
        assert [h.id for h in hits] == [passages[i].id for i in indices], question
        np.testing.assert_allclose([h.score for h in hits], scores, rtol=1e-5)
