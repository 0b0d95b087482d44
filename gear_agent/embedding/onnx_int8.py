"""An int8 copy of a local sentence-transformers model, run by ONNX Runtime (optional).

The beam search's ``concat``-style scorers encode many short sequence texts per question
(:mod:`gear_agent.expansion.scorers`); on a CPU the encoder is nearly all of their cost. This
module exports the model's transformer with its mean pooling and normalisation into one ONNX
graph (``torch.onnx``, from the local model folder, offline), quantises its weights to int8
per output channel (``onnxruntime.quantization.quantize_dynamic``) and runs it with ONNX
Runtime: about 2.5 times faster than the float model on one core, encodings at cosine 0.994
(mean) of the float model's on the MuSiQue sequence texts (``docs/ppr.md``). Per-tensor
weights lose more (cosine 0.96) and are not used.

ONNX Runtime is a well-kept inference engine with its own int8 kernels; the export is made
once and cached on disk (``GEAR_MODEL_CACHE``, default ``~/.cache/gear-agent/models``),
keyed by a checksum of the model's weights and checked against its own checksum when loaded
(a damaged file is exported again). Needs ``pip install 'gear-agent[int8]'``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from gear_agent.embedding.base import Embedder, normalise_rows
from gear_agent.embedding.sentence_transformer import EmbeddingModelError, quiet_loading

INSTALL_HINT = "pip install 'gear-agent[int8]'"
_WEIGHTS = ("model.safetensors", "pytorch_model.bin")
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def int8_available() -> bool:
    """Whether ONNX Runtime and onnx (for the quantiser) are installed."""
    return all(importlib.util.find_spec(m) is not None for m in ("onnxruntime", "onnx"))


def model_cache_dir() -> Path:
    """Where exported models are kept: ``GEAR_MODEL_CACHE`` or ``~/.cache/gear-agent/models``."""
    return Path(os.environ.get("GEAR_MODEL_CACHE", Path.home() / ".cache" / "gear-agent" / "models"))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _check_folder(folder: Path) -> tuple[Path, int]:
    """The weights file and the maximum sequence length of a mean-pooled model folder."""
    weights = next((folder / w for w in _WEIGHTS if (folder / w).is_file()), None)
    if weights is None or not (folder / "tokenizer.json").is_file():
        raise EmbeddingModelError(f"{folder} has no weights file or tokenizer.json to export")
    pooling = folder / "1_Pooling" / "config.json"
    if pooling.is_file() and not json.loads(pooling.read_text()).get("pooling_mode_mean_tokens"):
        raise EmbeddingModelError(f"{folder}: only mean-pooled models are exported to int8")
    config = folder / "sentence_bert_config.json"
    max_length = json.loads(config.read_text()).get("max_seq_length", 256) if config.is_file() else 256
    return weights, int(max_length)


def export_int8(folder: Path, target: Path) -> None:
    """Export ``folder``'s transformer, mean pooling and normalisation to ONNX with int8
    weights (per output channel) at ``target``; the float export is a temporary file."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModel

    class Pooled(torch.nn.Module):
        def __init__(self, model: torch.nn.Module) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):  # type: ignore[no-untyped-def]
            hidden = self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, dim=-1)

    with quiet_loading():
        model = Pooled(AutoModel.from_pretrained(str(folder)).eval())
    example = torch.ones(2, 8, dtype=torch.long)
    axes = {name: {0: "batch", 1: "tokens"} for name in _INPUTS}
    with tempfile.TemporaryDirectory() as tmp:
        float_file = Path(tmp) / "model.onnx"
        with torch.inference_mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tracer's notes on the model's Python code
            torch.onnx.export(
                model, (example, example, torch.zeros_like(example)), str(float_file),
                input_names=list(_INPUTS), output_names=["embedding"],
                dynamic_axes={**axes, "embedding": {0: "batch"}}, opset_version=17, dynamo=False,
            )
        logging.disable(logging.WARNING)  # the quantiser's advice on the root logger, once
        try:
            quantize_dynamic(float_file, target, weight_type=QuantType.QInt8, per_channel=True)
        finally:
            logging.disable(logging.NOTSET)


def cached_int8_model(folder: Path, cache: Path | None = None) -> Path:
    """The int8 ONNX file for ``folder``, exported on first use and cached on disk.

    The cache folder is named by the model weights' SHA-256, and ``model-int8.onnx.sha256``
    beside the file holds the file's own; a file that does not match is exported again.
    """
    weights, _ = _check_folder(folder)
    key = _sha256(weights)[:16]
    where = (cache or model_cache_dir()) / "onnx-int8" / f"{folder.name}-{key}"
    target, checksum = where / "model-int8.onnx", where / "model-int8.onnx.sha256"
    if target.is_file() and checksum.is_file() and checksum.read_text().strip() == _sha256(target):
        return target
    where.mkdir(parents=True, exist_ok=True)
    partial = where / f"model-int8.{os.getpid()}.partial.onnx"
    try:
        export_int8(folder, partial)
        digest = _sha256(partial)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    checksum.write_text(digest + "\n")  # written last: a file without it is not trusted
    return target


class Int8OnnxEmbedder(Embedder):
    """The int8 ONNX Runtime copy of a local mean-pooled sentence-transformers model.

    Its vectors are close to, not equal to, the float model's; the beam search uses it only
    for sequence texts, scored against the float model's query vector.

    Example:
        >>> encoder = Int8OnnxEmbedder(Path("model-folder"), "all-MiniLM-L6-v2")  # doctest: +SKIP
        >>> encoder.embed(["Paris capital of France"]).shape  # doctest: +SKIP
        (1, 384)
    """

    def __init__(
        self, folder: Path, name: str, *, threads: int | None = None, batch_size: int = 64,
        cache: Path | None = None,
    ) -> None:
        if not int8_available():
            raise EmbeddingModelError(f"the int8 encoder needs ONNX Runtime: {INSTALL_HINT}")
        import onnxruntime as ort
        from tokenizers import Tokenizer

        _, max_length = _check_folder(folder)
        self.name, self.batch_size = f"{name} (int8 onnx)", batch_size
        self.file = cached_int8_model(folder, cache)
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length)
        self._tokenizer.enable_padding()  # to the longest text of each batch
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or _torch_threads()
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(
            str(self.file), options, providers=["CPUExecutionProvider"]
        )
        self._dimension = int(self.embed(["x"]).shape[1])

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self._dimension), dtype=np.float32)
        out = []
        for at in range(0, len(texts), self.batch_size):
            encoded = self._tokenizer.encode_batch(list(texts[at : at + self.batch_size]))
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            out.append(self._session.run(None, feed)[0])
        return normalise_rows(np.concatenate(out))


def _torch_threads() -> int:
    """The thread count torch uses (``OMP_NUM_THREADS`` or the cores), so both engines
    follow one knob."""
    import torch

    return int(torch.get_num_threads())
