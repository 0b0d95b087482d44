"""Retrieval and answer metrics: Recall@k, and SQuAD-style exact match and F1."""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Collection, Sequence


def recall_at_k(ranked: Sequence[str], gold: Collection[str], k: int) -> float:
    """Share of the gold passages found in the top ``k`` (1.0 when there is no gold).

    Example:
        >>> recall_at_k(["a", "x", "b"], {"a", "b"}, 2)
        0.5
    """
    if not gold:
        return 1.0
    return len(set(ranked[:k]) & set(gold)) / len(gold)


def normalise_answer(text: str) -> str:
    """SQuAD normalisation: lower case, no punctuation, no articles, single spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def exact_match(prediction: str, answers: Sequence[str]) -> float:
    """1.0 if the normalised prediction equals any normalised answer."""
    guess = normalise_answer(prediction)
    return float(any(guess == normalise_answer(a) for a in answers))


def f1_score(prediction: str, answers: Sequence[str]) -> float:
    """Best token-overlap F1 of the prediction against any answer (SQuAD)."""
    guess = normalise_answer(prediction).split()
    best = 0.0
    for answer in answers:
        truth = normalise_answer(answer).split()
        common = Counter(guess) & Counter(truth)
        overlap = sum(common.values())
        if overlap == 0:
            continue
        precision, recall = overlap / len(guess), overlap / len(truth)
        best = max(best, 2 * precision * recall / (precision + recall))
    return best
