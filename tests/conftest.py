"""Fixtures shared by all tests."""

from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "musique_dev"


@pytest.fixture
def shared_data() -> Path:
    """The MuSiQue slice in ../shared (skipped with the reason when it is absent)."""
    if not (SHARED / "corpus.json").is_file():
        pytest.skip(f"benchmark data not found at {SHARED} (../shared is absent)")
    return SHARED
