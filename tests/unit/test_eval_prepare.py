"""The benchmark index's cache folder is named by what it is built from (the corpus's and
the OpenIE file's bytes, the model, the grounding choice), not by where the files lie or
when they were copied: a fresh copy of ``../shared`` reuses the index built before."""

from __future__ import annotations

import os
import shutil

from gear_agent.evaluation.prepare import eval_index_dir


def _files(folder, corpus: str = '[{"title": "A", "text": "a b"}]'):
    folder.mkdir()
    (folder / "corpus.json").write_text(corpus, encoding="utf-8")
    (folder / "openie.json").write_text('{"docs": []}', encoding="utf-8")
    return folder / "corpus.json", folder / "openie.json"


def test_the_same_bytes_copied_elsewhere_name_the_same_folder(tmp_path) -> None:
    corpus, openie = _files(tmp_path / "one")
    copy = tmp_path / "two"
    shutil.copytree(tmp_path / "one", copy)
    os.utime(copy / "corpus.json", (1, 1))  # a re-copy changes the modification time
    assert (eval_index_dir(corpus, openie, "all-MiniLM-L6-v2")
            == eval_index_dir(copy / "corpus.json", copy / "openie.json", "all-MiniLM-L6-v2"))


def test_other_bytes_another_model_or_grounding_name_another_folder(tmp_path) -> None:
    corpus, openie = _files(tmp_path / "one")
    other, _ = _files(tmp_path / "two", corpus='[{"title": "A", "text": "a c"}]')
    base = eval_index_dir(corpus, openie, "all-MiniLM-L6-v2", ground_openie=False)
    assert eval_index_dir(other, openie, "all-MiniLM-L6-v2", ground_openie=False) != base
    assert eval_index_dir(corpus, openie, "all-mpnet-base-v2", ground_openie=False) != base
    assert eval_index_dir(corpus, openie, "all-MiniLM-L6-v2", ground_openie=True) != base
    assert eval_index_dir(corpus, None, "all-MiniLM-L6-v2", ground_openie=False) != base
    # an alias of the model is the same model
    assert eval_index_dir(corpus, openie, "sentence-transformers/all-MiniLM-L6-v2",
                          ground_openie=False) == base
