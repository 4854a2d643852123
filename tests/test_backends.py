"""ONNX backends: parity with torch for every tiny encoder and pooling, the cache and its guards."""

import numpy as np
import pytest
import torch

from sbert import SentenceEncoder
from sbert.backends import BackendError
from sbert.backends.cache import MANIFEST, model_digest
from tests.tiny_models import CORPUS, EDGE_SENTENCES


@pytest.fixture(params=["mean", "max", "cls"])
def encoder(request, tiny_dir, tmp_path) -> SentenceEncoder:
    model = SentenceEncoder.from_transformer(tiny_dir, pooling=request.param, normalize=True, device="cpu")
    model.save(tmp_path / "model")
    return SentenceEncoder.load(tmp_path / "model", device="cpu")


def test_onnx_fp32_matches_torch(encoder):
    expected = encoder.encode(EDGE_SENTENCES, on_truncation="ignore")
    got = encoder.encode(EDGE_SENTENCES, backend="onnx", on_truncation="ignore", batch_size=3)
    assert np.abs(got - expected).max() <= 1e-5
    assert (encoder.source_dir / "onnx" / "model.onnx").is_file()  # cached beside the model


def test_onnx_int8_stays_close(encoder):
    expected = encoder.encode(EDGE_SENTENCES, on_truncation="ignore")
    got = encoder.encode(EDGE_SENTENCES, backend="onnx-int8", on_truncation="ignore")
    cosine = (expected * got).sum(1) / np.linalg.norm(expected, axis=1) / np.linalg.norm(got, axis=1)
    assert cosine.min() > 0.9


def test_cache_is_reused_and_refreshed_when_weights_change(tiny_dirs, tmp_path):
    SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu").save(tmp_path / "m")
    model = SentenceEncoder.load(tmp_path / "m", device="cpu")
    model.encode(CORPUS, backend="onnx")
    graph = tmp_path / "m" / "onnx" / "model.onnx"
    first = graph.stat().st_mtime_ns
    SentenceEncoder.load(tmp_path / "m", device="cpu").encode(CORPUS, backend="onnx")
    assert graph.stat().st_mtime_ns == first  # same weights: no second export
    with torch.no_grad():  # an in-place update, as an optimizer step makes
        model.transformer.auto_model.embeddings.word_embeddings.weight.add_(0.5)
    got = model.encode(CORPUS, backend="onnx")
    assert np.abs(got - model.encode(CORPUS)).max() <= 1e-5
    assert graph.stat().st_mtime_ns != first


def test_damaged_cache_is_exported_again(tiny_dirs, tmp_path):
    SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu").save(tmp_path / "m")
    SentenceEncoder.load(tmp_path / "m", device="cpu").encode(CORPUS, backend="onnx")
    graph = tmp_path / "m" / "onnx" / "model.onnx"
    graph.write_bytes(b"not an onnx file")
    model = SentenceEncoder.load(tmp_path / "m", device="cpu")
    np.testing.assert_allclose(model.encode(CORPUS, backend="onnx"), model.encode(CORPUS), atol=1e-5)
    assert graph.stat().st_size > 1000


def test_in_memory_model_uses_user_cache(tiny_dirs, tmp_path, monkeypatch):
    monkeypatch.setenv("SBERT_CACHE", str(tmp_path / "cache"))
    model = SentenceEncoder.from_transformer(tiny_dirs["roberta"], device="cpu")
    model.encode(CORPUS, backend="onnx")
    folder = tmp_path / "cache" / "onnx" / model_digest(model)[:24]
    assert (folder / MANIFEST).is_file() and (folder / "model.onnx").is_file()


def test_unknown_backend_is_refused(tiny_dirs):
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    with pytest.raises(BackendError, match="unknown"):
        model.encode(CORPUS, backend="tensorrt")


def test_cli_export_check_and_encode_backend(tiny_dirs, tmp_path, capsys):
    from sbert.cli.main import main

    SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu").save(tmp_path / "m")
    pairs = [("a man is playing a guitar", "a man plays guitar", 4.8), ("the cat sat", "it is raining", 0.2)]
    pairs += [("dogs run in the park", "a dog runs outside", 3.9), ("a woman cooks", "the sun is hot", 0.5)]
    rows = [f"main-captions\tMSRvid\t2012test\t{i:04d}\t{s}\t{a}\t{b}" for i, (a, b, s) in enumerate(pairs)]
    (tmp_path / "sts.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert main(["export", "--model", str(tmp_path / "m"), "--check", f"stsb:{tmp_path / 'sts.csv'}"]) == 0
    out = capsys.readouterr().out
    assert "onnx-int8: Spearman" in out and "checked against torch" in out
    (tmp_path / "in.txt").write_text("\n".join(CORPUS) + "\n", encoding="utf-8")
    args = ["encode", "-i", str(tmp_path / "in.txt"), "--model", str(tmp_path / "m"), "--backend", "onnx"]
    assert main([*args, "-o", str(tmp_path / "o.npy")]) == 0
    expected = SentenceEncoder.load(tmp_path / "m", device="cpu").encode(CORPUS)
    assert np.abs(np.load(tmp_path / "o.npy") - expected).max() <= 1e-5
    assert main([*args, "-o", str(tmp_path / "o2.npy"), "--batch-tokens", "0"]) == 2
