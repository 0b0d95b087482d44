"""A synthetic corpus of realistic shape, with HippoRAG-format OpenIE triples, at any size.

Shape (after the MuSiQue slice in ``../shared``: about 9 triples per passage, one new
phrase for most triples, a few hub entities in very many triples):

* a fifth of the entity mentions are fresh names seen once; the rest are drawn from a
  Zipfian distribution (exponent ``zipf``, 0.65) over a pool of ``triples`` names. Fitted
  to the GPT-3.5 OpenIE triples of the MuSiQue slice (top phrase 0.66% of mentions, top
  10 1.9%, top 100 7.4%, 68% of phrases seen once, 0.47 phrases per mention); this gives
  0.9 / 3.7 / 11.1%, 72% and 0.55 at that size, and hubs of a few thousand triples at a
  million. About 1 in 20 mentions uses a variant spelling (plural, suffix, article), so
  the PPR graph has synonym pairs to find;
* each passage holds 6 to 12 triples (mean 9) over ~200 predicates, rendered as
  sentences with filler words, titled by its first subject;
* names are pronounceable syllable strings made from the entity's number, so BM25 and
  embedders see distinct words.

Everything is a pure function of ``(passages, seed)``: the same call gives the same files.

    python benchmarks/synthetic_corpus.py --passages 20000 --out /tmp/syn20k
    # writes /tmp/syn20k/corpus.json and /tmp/syn20k/openie.json

In Python: ``corpus, openie = generate(20_000)``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

SYLLABLES = [
    c + v for c in "bdfgklmnprstvz" for v in ("a", "e", "i", "o", "u", "ai", "en", "or")
]
PREDICATES = [
    f"{verb} {prep}".strip()
    for verb in ("founded", "located", "born", "married", "worked", "directed", "wrote",
                 "played", "owned", "studied", "won", "led", "built", "joined", "named",
                 "published", "produced", "moved", "served", "created")
    for prep in ("", "in", "at", "by", "with", "for", "from", "to", "of", "under")
]
FILLER = (
    "the", "a", "which", "was", "also", "later", "in", "during", "its", "known", "as",
    "after", "before", "where", "many", "early", "years", "first", "then", "still",
)
VARIANTS = ("{}s", "{} inc", "the {}", "{} group")


def entity_name(number: int) -> str:
    """A name of two words spelled from the entity's number (one name per number).

    Example:
        >>> entity_name(0), entity_name(12345)
        ('Baba Ba', 'Gezen Ba')
    """
    digits = []
    n = number
    while True:
        digits.append(n % len(SYLLABLES))
        n //= len(SYLLABLES)
        if n == 0 and len(digits) >= 3:
            break
    syllables = [SYLLABLES[d] for d in digits]
    first, rest = syllables[:2], syllables[2:]
    return " ".join(["".join(first).capitalize(), "".join(rest).capitalize()])


def generate(
    passages: int, seed: int = 20261123, zipf: float = 0.65
) -> tuple[list[dict[str, str]], dict[str, list[dict[str, object]]]]:
    """The corpus (``[{"title", "text"}]``) and its OpenIE output (``{"docs": [...]}``).

    Args:
        passages: How many passages.
        seed: Random seed; the output is a pure function of ``(passages, seed, zipf)``.
        zipf: Exponent of the entity popularity distribution.
    """
    rng = np.random.default_rng(seed)
    per_passage = rng.integers(6, 13, size=passages)
    n_triples = int(per_passage.sum())
    pool = max(16, n_triples)
    ranks = np.arange(1, pool + 1, dtype=np.float64)
    weights = ranks**-zipf
    weights /= weights.sum()
    drawn = rng.choice(pool, size=2 * n_triples, p=weights)
    fresh = rng.random(2 * n_triples) < 0.2  # a fifth are new names, seen once
    drawn[fresh] = pool + np.arange(int(fresh.sum()))
    variant = rng.random(2 * n_triples) < 0.05
    variant_kind = rng.integers(0, len(VARIANTS), size=2 * n_triples)
    predicate = rng.integers(0, len(PREDICATES), size=n_triples)
    filler = rng.integers(0, len(FILLER), size=(n_triples, 3))
    corpus: list[dict[str, str]] = []
    docs: list[dict[str, object]] = []
    t = 0
    for p in range(passages):
        triples = []
        sentences = []
        for _ in range(int(per_passage[p])):
            names = []
            for side in (2 * t, 2 * t + 1):
                name = entity_name(int(drawn[side]))
                if variant[side]:
                    name = VARIANTS[int(variant_kind[side])].format(name)
                names.append(name)
            subject, obj = names
            relation = PREDICATES[int(predicate[t])]
            words = [FILLER[int(i)] for i in filler[t]]
            sentences.append(f"{subject} {words[0]} {relation} {obj}, {words[1]} {words[2]}.")
            triples.append([subject, relation, obj])
            t += 1
        title = triples[0][0]
        text = " ".join(sentences)
        corpus.append({"title": title, "text": text})
        entities = sorted({part for s, _, o in triples for part in (s, o)})
        docs.append({
            "idx": p, "title": title, "text": text, "passage": f"{title}\n{text}",
            "extracted_entities": entities, "extracted_triples": triples,
        })
    return corpus, {"docs": docs}


def write(passages: int, out: Path, seed: int = 20261123) -> tuple[Path, Path]:
    """Write ``corpus.json`` and ``openie.json`` under ``out``; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    corpus, openie = generate(passages, seed)
    corpus_path, openie_path = out / "corpus.json", out / "openie.json"
    corpus_path.write_text(json.dumps(corpus, ensure_ascii=False), encoding="utf-8")
    openie_path.write_text(json.dumps(openie, ensure_ascii=False), encoding="utf-8")
    return corpus_path, openie_path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--passages", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=20261123)
    args = parser.parse_args()
    corpus, openie = write(args.passages, args.out, args.seed)
    docs = json.loads(openie.read_text(encoding="utf-8"))["docs"]
    triples = sum(len(d["extracted_triples"]) for d in docs)
    print(f"{args.passages:,} passages, {triples:,} triples -> {corpus}, {openie}")


if __name__ == "__main__":
    main()
