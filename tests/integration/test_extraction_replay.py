"""The extraction path replayed with a capable model's recorded replies (HotpotQA, 994
passages): `gear index --extract` must store exactly the triples of the OpenIE file those
replies were saved as, after the project's grounding (15,203 kept, 62 not found in their
passage; 15,198 / 67 before grounding matched whole words only, issue 24: it now compares
runs of whole words, which keeps six paraphrases such as "fast-food restaurant chain" and
drops one triple, "James Bond Stockdale" / "July 5, 2005"). It guards the extraction prompt (a changed prompt misses the cache and fails: the
endpoint is unreachable on purpose), the reply parser and the grounding with real output,
the way the LLM replay guards the agent path. The stand-in embedder keeps it to seconds:
the assertion is on triples, not vectors."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gear_agent.config import GearSettings
from gear_agent.embedding import make_embedder
from gear_agent.ingest.openie import read_openie
from gear_agent.store import open_store

pytestmark = [pytest.mark.shared, pytest.mark.slow]


def test_extraction_replay_stores_the_openie_files_grounded_triples(
    hotpotqa_data: Path, tmp_path: Path
) -> None:
    index = tmp_path / "index"
    env = {
        **os.environ,
        "GEAR_LLM_MODEL": "recorded",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",  # unreachable: every reply from the cache
        "OPENAI_API_KEY": "replay",
        "GEAR_LLM_MAX_RETRIES": "0",
        "GEAR_LLM_CACHE_DIR": str(hotpotqa_data / "extraction-replay" / "cache"),
        "GEAR_EMBEDDING_MODEL": "hashing-64",
        "COLUMNS": "200",
    }
    for key in ("GEAR_LLM_RESPONSE_FORMAT", "GEAR_LLM_MAX_TOKENS", "GEAR_LLM_TEMPERATURE",
                "GEAR_PROMPTS_DIR", "GEAR_GROUND_TRIPLES"):
        env.pop(key, None)  # the cache keys were recorded with the defaults
    done = subprocess.run(
        [sys.executable, "-m", "gear_agent.cli", "index", str(hotpotqa_data / "corpus.json"),
         "--extract", "--index", str(index)],
        env=env, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    summary = " ".join((done.stdout + done.stderr).split())
    assert re.search(r"994 passages sent, 994 ok, 0 failed, 15203 triples kept", summary), summary
    assert "62 not found in their passage dropped" in summary

    settings = GearSettings(index_dir=index, embedding_model="hashing-64")
    store = open_store(settings, make_embedder(settings))
    stored = {(t.id, t.subject, t.predicate, t.object, t.passage_id) for t in store.triples.iterate()}
    recorded = read_openie(hotpotqa_data / "openie_capable-model.json", drop_ungrounded=True)
    expected = {(t.id, t.subject, t.predicate, t.object, t.passage_id) for t in recorded.triples}
    assert (len(recorded.triples), recorded.ungrounded, recorded.malformed) == (15_203, 62, 0)
    assert stored == expected
    assert not store.passages.unextracted()
