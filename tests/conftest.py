"""Fixtures shared by all tests."""

import os
from pathlib import Path

import pytest
from hypothesis import settings

# Property and fuzz tests draw the same examples on every run (a seed derived from each
# test), so a run that passes keeps passing and CI never fails on a new random draw.
# `GEAR_HYPOTHESIS_PROFILE=explore` draws fresh random examples on each run, to look for
# new failures (fix the bug, then pin the failing example with @example).
settings.register_profile("repeatable", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("GEAR_HYPOTHESIS_PROFILE", "repeatable"))

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "musique_dev"


HOTPOTQA = SHARED.parent / "hotpotqa_dev"


@pytest.fixture
def shared_data() -> Path:
    """The MuSiQue slice in ../shared (skipped with the reason when it is absent)."""
    if not (SHARED / "corpus.json").is_file():
        pytest.skip(f"benchmark data not found at {SHARED} (../shared is absent)")
    return SHARED


@pytest.fixture
def hotpotqa_data() -> Path:
    """The HotpotQA slice in ../shared with its recorded extraction replies (skipped with
    the reason when it is absent)."""
    for part in ("corpus.json", "openie_capable-model.json", "extraction-replay/cache"):
        if not (HOTPOTQA / part).exists():
            pytest.skip(f"benchmark data not found at {HOTPOTQA / part} (../shared is absent)")
    return HOTPOTQA
