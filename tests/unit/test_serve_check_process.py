"""The health panel's ``gear check`` runs in a child process: its report comes back whole,
and a check that fails is one line, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.tiny_corpus import CORPUS, make_settings

from gear_agent.config import GearSettings
from gear_agent.embedding.hashing import HashingEmbedder
from gear_agent.errors import GearError
from gear_agent.ids import passage_id
from gear_agent.serve.check_process import check_in_child, check_report
from gear_agent.store import open_store
from gear_agent.types import Passage


def test_the_childs_report_is_the_check_run_here(tmp_path: Path) -> None:
    settings = make_settings(index_dir=tmp_path / "index")
    store = open_store(settings, HashingEmbedder(64), create=True)
    store.passages.add([Passage(passage_id(t, text), t, text, "test") for t, (text, _) in CORPUS.items()])
    store.close()
    child = check_in_child(settings)
    assert child["ok"] is True and child["size_bytes"] > 0
    assert [i["name"] for i in child["items"]] == [i["name"] for i in check_report(settings)["items"]]


def test_a_failing_check_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(GearError, match=r"^gear check failed: .*No such file or directory") as caught:
        check_in_child(GearSettings(index_dir=tmp_path / "absent"))
    assert "\n" not in str(caught.value)
