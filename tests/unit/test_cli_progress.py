"""Progress that moves: rich bars per stage, moved by each encoder batch; other libraries'
bars silenced; the embedder's callback scoped and leaving its vectors unchanged."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from typer.testing import CliRunner

from gear_agent.cli import app
from gear_agent.cli.progress import EMBED_BAR_MIN, ProgressBoard, quiet_third_party
from gear_agent.embedding.base import (
    EmbeddingUnavailableError,
    NamedEmbedder,
    current_embedding_progress,
    embedding_progress,
    report_embedding,
)


def board() -> ProgressBoard:
    return ProgressBoard(Console(file=io.StringIO(), width=120))


def test_embedding_batches_move_the_stage_bar() -> None:
    with (b := board()), b.embedding():
        b.stage("passages", 0, 300)
        report_embedding(0, 256)
        report_embedding(64, 256)
        assert b.completed("passages") == 64
        report_embedding(256, 256)
        b.stage("passages", 256, 300)  # the first commit
        report_embedding(32, 44)
        assert b.completed("passages") == 288
        b.stage("passages", 300, 300)
        assert b.completed("passages") == 300


def test_embedding_inside_a_stage_of_other_items_does_not_move_it() -> None:
    with (b := board()), b.embedding():
        b.stage("extraction", 3, 10)
        report_embedding(500, 500)  # the triples of one extracted passage
        assert b.completed("extraction") == 3


def test_a_long_embedding_outside_a_stage_gets_its_own_bar_a_query_does_not() -> None:
    with (b := board()), b.embedding():
        report_embedding(0, 1)
        report_embedding(1, 1)
        assert b._tasks == {}
        report_embedding(0, EMBED_BAR_MIN)
        report_embedding(64, EMBED_BAR_MIN)
        assert b.completed("embedding#1") == 64


def test_eval_counter_counts_questions() -> None:
    with (b := board()):
        tick = b.counter("eval bm25", unit="questions")
        tick(5, 10)
        assert b.completed("eval bm25") == 5


def test_the_callback_is_scoped() -> None:
    seen: list[tuple[int, int]] = []
    assert current_embedding_progress() is None
    with embedding_progress(lambda done, total: seen.append((done, total))):
        report_embedding(1, 2)
        with embedding_progress(None):
            report_embedding(2, 2)  # silenced inside
    report_embedding(2, 2)  # outside: nobody listens
    assert seen == [(1, 2)]


def test_named_embedder_opens_but_does_not_embed() -> None:
    embedder = NamedEmbedder("some-model", 8)
    assert embedder.embed([]).shape == (0, 8)
    with pytest.raises(EmbeddingUnavailableError, match="without its embedding model"):
        embedder.embed(["text"])


def test_quiet_third_party_keeps_the_users_choice(monkeypatch) -> None:
    monkeypatch.delenv("HF_HUB_DISABLE_PROGRESS_BARS", raising=False)
    monkeypatch.setenv("TQDM_DISABLE", "0")
    quiet_third_party()
    assert os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1"
    assert os.environ["TQDM_DISABLE"] == "0"


def test_gear_index_draws_a_bar_per_stage(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("GEAR_EMBEDDING_MODEL", "hashing-64")
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps([{"title": f"T{i}", "text": f"passage number {i}"} for i in range(300)]))
    result = CliRunner().invoke(app, ["index", str(corpus), "--index", str(tmp_path / "ix")],
                                env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    bar = next(line for line in result.output.splitlines() if line.startswith("ingest passages"))
    assert "300/300" in bar and "passages/s" in bar and "ETA 0:00:00" in bar


@pytest.mark.slow
def test_sentence_transformer_reports_each_batch_and_its_vectors_do_not_change(capfd) -> None:
    from gear_agent.embedding.sentence_transformer import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder("all-MiniLM-L6-v2", batch_size=16)
    assert "Loading weights" not in capfd.readouterr().err
    texts = [("word " * (i % 37 + 1)) + str(i) for i in range(70)]
    plain = embedder.embed(texts)
    seen: list[tuple[int, int]] = []
    with embedding_progress(lambda done, total: seen.append((done, total))):
        reported = embedder.embed(texts)
    assert np.array_equal(plain, reported)
    assert seen == [(0, 70), (16, 70), (32, 70), (48, 70), (64, 70), (70, 70)]


def test_a_graph_builder_that_reports_gets_a_bar_per_stage() -> None:
    class Retriever:
        progress = None

    class Runtime:
        ppr = Retriever()

    from gear_agent.cli.progress import report_graph_build

    runtime = Runtime()
    with (b := board()), b.embedding():
        assert report_graph_build(runtime.ppr, b)
        runtime.ppr.progress("embed", 0, 1000)
        report_embedding(64, 1000)  # the encoder's first batch of phrases
        assert b.completed("PPR graph: embed") == 64
        runtime.ppr.progress("embed", 1000, 1000)
        runtime.ppr.progress("synonyms", 10, 40)
        assert b.completed("PPR graph: synonyms") == 10
    assert not report_graph_build(object(), board())
