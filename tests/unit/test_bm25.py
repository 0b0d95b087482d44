import math

import numpy as np
from support.bm25_reference import BM25Index

from gear_agent.store.bm25 import top_k


def lucene_score(query, doc, docs, k1=1.2, b=0.75):
    n = len(docs)
    avg = sum(len(d) for d in docs) / n
    score = 0.0
    for term in query:
        df = sum(1 for d in docs if term in d)
        if df == 0:
            continue
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        tf = doc.count(term)
        score += idf * tf / (tf + k1 * (1 - b + b * len(doc) / avg))
    return score


DOCS = [
    ["paris", "is", "the", "capital", "of", "france"],
    ["berlin", "is", "the", "capital", "of", "germany"],
    ["paris", "texas", "is", "a", "city", "named", "after", "paris"],
    ["the", "seine", "flows", "through", "paris"],
]


def test_scores_match_lucene_formula_computed_by_hand():
    index = BM25Index(DOCS)
    for query in (["paris"], ["capital", "germany"], ["paris", "paris", "city"], ["nothing"]):
        expected = [lucene_score(query, d, DOCS) for d in DOCS]
        np.testing.assert_allclose(index.scores(query), expected, rtol=1e-5)


def test_single_term_hand_value():
    # df(germany)=1, N=4: idf = ln(1 + 3.5/1.5); doc 1 has length 6, avgdl = 25/4
    idf = math.log(1 + 3.5 / 1.5)
    tf_part = 1 / (1 + 1.2 * (1 - 0.75 + 0.75 * 6 / 6.25))
    assert abs(BM25Index(DOCS).scores(["germany"])[1] - idf * tf_part) < 1e-6


def test_search_returns_only_matching_docs_best_first():
    indices, scores = BM25Index(DOCS).search(["paris"], k=10)
    assert set(indices.tolist()) == {0, 2, 3}
    assert list(scores) == sorted(scores, reverse=True)
    assert indices[0] == 2  # tf 2 wins


def test_top_k_breaks_ties_by_lower_index_and_keeps_k():
    idx, _ = top_k(np.array([1.0, 3.0, 3.0, 3.0, 0.5]), 2)
    assert idx.tolist() == [1, 2]
