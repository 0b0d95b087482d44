"""Benchmark questions in HippoRAG's format, with gold passages as index ids."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gear_agent.ids import passage_id
from gear_agent.ingest.corpus import CorpusFormatError, load_json_file


@dataclass(frozen=True)
class Question:
    """One benchmark question.

    Attributes:
        id: The dataset's id.
        question: The question text.
        answers: The answer and its aliases (for EM/F1).
        gold: Ids of the supporting passages (content hashes of title and text).
    """

    id: str
    question: str
    answers: tuple[str, ...]
    gold: frozenset[str]


def load_questions(path: Path) -> list[Question]:
    """Questions from a HippoRAG-format file (MuSiQue, 2Wiki or HotpotQA style).

    MuSiQue style: ``paragraphs`` with ``is_supporting``; 2Wiki/HotpotQA style:
    ``supporting_facts`` titles matched against ``context`` [title, sentences].

    Raises:
        CorpusFormatError: the file is missing or not in a known format.
    """
    data = load_json_file(path, "questions file")
    if not isinstance(data, list) or not data:
        raise CorpusFormatError(f"{path}: expected a non-empty JSON list of questions")
    return [_question(record, f"{path}[{n}]") for n, record in enumerate(data)]


def _question(record: object, where: str) -> Question:
    if not isinstance(record, dict) or not isinstance(record.get("question"), str):
        raise CorpusFormatError(f"{where}: expected an object with a 'question' string")
    answers = [record.get("answer", "")] + list(record.get("answer_aliases", []) or [])
    if "paragraphs" in record:
        gold = {
            passage_id(p.get("title", ""), p.get("paragraph_text", p.get("text", "")))
            for p in record["paragraphs"]
            if p.get("is_supporting")
        }
    elif "supporting_facts" in record and "context" in record:
        titles = {fact[0] for fact in record["supporting_facts"]}
        gold = {
            passage_id(title, "".join(sentences))
            for title, sentences in record["context"]
            if title in titles
        }
    else:
        raise CorpusFormatError(
            f"{where}: no gold passages ('paragraphs' with 'is_supporting', or "
            "'supporting_facts' with 'context')"
        )
    return Question(
        str(record.get("id", record.get("_id", where))),
        record["question"],
        tuple(str(a) for a in answers if a),
        frozenset(gold),
    )
