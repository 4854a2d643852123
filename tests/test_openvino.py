"""The OpenVINO backend: parity with torch, the shared graph cache and its rebuild, refusals, CLI and server."""

import numpy as np
import pytest
import torch

from sbert import SentenceEncoder, device
from sbert.backends import BackendError
from sbert.errors import DeviceError
from tests.serve_helpers import serve_in_thread, served_vectors
from tests.tiny_models import CORPUS, EDGE_SENTENCES

pytest.importorskip("openvino")


def test_openvino_matches_torch_and_is_batch_invariant(saved_tiny):
    expected = saved_tiny.encode(EDGE_SENTENCES, on_truncation="ignore")
    got = saved_tiny.encode(EDGE_SENTENCES, backend="openvino", on_truncation="ignore", batch_size=3)
    assert np.abs(got - expected).max() <= 1e-5
    one_by_one = saved_tiny.encode(EDGE_SENTENCES, backend="openvino", on_truncation="ignore", batch_size=1)
    assert np.abs(one_by_one - got).max() <= 1e-5
    assert np.array_equal(saved_tiny.encode(EDGE_SENTENCES[2], backend="openvino"), got[2])  # one string, same row
    assert (saved_tiny.source_dir / "onnx" / "model.onnx").is_file()  # the onnx backend's cached graph


def layer_types(compiled: object) -> set[str]:
    """The node kinds OpenVINO compiled a model into ("Subgraph" marks its snippets)."""
    return {op.get_rt_info()["layerType"].astype(str) for op in compiled.get_runtime_model().get_ops()}  # type: ignore[attr-defined]


def test_short_batches_run_on_the_compile_without_snippets(tiny_dirs, tmp_path, monkeypatch):
    from sbert.backends import openvino_runtime

    checked = []
    check = openvino_runtime.check_against_torch
    monkeypatch.setattr(openvino_runtime, "check_against_torch",
                        lambda engine, ref, embed: checked.append(embed) or check(engine, ref, embed))  # fmt: skip
    SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu").save(tmp_path / "m")
    model = SentenceEncoder.load(tmp_path / "m", device="cpu")
    engine = model.backend("openvino")
    assert len(checked) == 2  # both compiles meet the torch check
    assert "Subgraph" in layer_types(engine.compiled) and "Subgraph" not in layer_types(engine.short)
    # OpenVINO's cache key leaves SNIPPETS_MODE out: one shared folder would give both the first blob.
    assert all(any((tmp_path / "m" / "onnx" / folder).iterdir()) for folder in ("openvino", "openvino_no_snippets"))
    assert engine.model_for(engine.short_width) is engine.short
    assert engine.model_for(engine.short_width + 1) is engine.compiled
    engine.short_width = 8  # so that the tiny model's batches fall on both sides
    ran = []
    infer = engine._infer_on
    monkeypatch.setattr(engine, "_infer_on", lambda compiled, feed: ran.append(compiled) or infer(compiled, feed))
    got = model.encode(EDGE_SENTENCES, backend="openvino", on_truncation="ignore", batch_size=2)
    assert {id(engine.short), id(engine.compiled)} == set(map(id, ran))
    assert np.abs(got - model.encode(EDGE_SENTENCES, on_truncation="ignore")).max() <= 1e-5


def test_the_short_width_can_be_set_or_turned_off(tiny_dirs, monkeypatch):
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    monkeypatch.setenv("SBERT_OPENVINO_SHORT_WIDTH", "0")  # one compile: the second copy of the weights saved
    engine = model.backend("openvino")
    assert engine.short is engine.compiled and engine.model_for(1) is engine.compiled
    np.testing.assert_allclose(model.encode(CORPUS, backend="openvino"), model.encode(CORPUS), atol=1e-5)
    monkeypatch.setenv("SBERT_OPENVINO_SHORT_WIDTH", "lots")
    with pytest.raises(BackendError, match="SBERT_OPENVINO_SHORT_WIDTH='lots': expected a whole number"):
        SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu").encode(CORPUS, backend="openvino")


def test_large_models_compile_once(monkeypatch):
    from sbert.backends.openvino_runtime import TWO_COMPILES_MAX_BYTES, short_width

    monkeypatch.delenv("SBERT_OPENVINO_SHORT_WIDTH", raising=False)
    assert short_width("openvino", 90 * 2**20) == 64 and short_width("openvino-int8", 90 * 2**20) == 24
    assert short_width("openvino", TWO_COMPILES_MAX_BYTES + 1) == 0  # a second copy of 2 GB is not worth 5-13%
    monkeypatch.setenv("SBERT_OPENVINO_SHORT_WIDTH", "48")
    assert short_width("openvino", TWO_COMPILES_MAX_BYTES + 1) == 48  # the setting still wins


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_a_damaged_graph_is_exported_again(tiny_dirs, tmp_path):
    SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu").save(tmp_path / "m")
    SentenceEncoder.load(tmp_path / "m", device="cpu").encode(CORPUS, backend="openvino")
    graph = tmp_path / "m" / "onnx" / "model.onnx"
    graph.write_bytes(b"not an onnx file")
    model = SentenceEncoder.load(tmp_path / "m", device="cpu")
    np.testing.assert_allclose(model.encode(CORPUS, backend="openvino"), model.encode(CORPUS), atol=1e-5)
    assert graph.stat().st_size > 1000


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_a_stale_graph_that_loads_is_caught_by_the_check_and_rebuilt(tiny_dirs, tmp_path):
    # Another model's graph under this model's manifest: it compiles, so only the torch check can
    # catch it, and the check after the rebuild must run the new model, not the first one again.
    SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu").save(tmp_path / "m")
    other = SentenceEncoder.load(tmp_path / "m", device="cpu")
    with torch.no_grad():
        for weights in other.parameters():
            weights.mul_(0.5)
    other.save(tmp_path / "other")
    for name in ("m", "other"):
        SentenceEncoder.load(tmp_path / name, device="cpu").encode(CORPUS, backend="openvino")
    graph = tmp_path / "m" / "onnx" / "model.onnx"
    graph.write_bytes((tmp_path / "other" / "onnx" / "model.onnx").read_bytes())
    model = SentenceEncoder.load(tmp_path / "m", device="cpu")
    np.testing.assert_allclose(model.encode(CORPUS, backend="openvino"), model.encode(CORPUS), atol=1e-5)


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_a_graph_exported_again_in_place_is_not_served_an_old_compile(tiny_dirs, tmp_path):
    # OpenVINO keys a compile by the graph's path alone: new weights exported to the same path (the
    # model's onnx/ folder) must not load the blob compiled from the old ones.
    SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu").save(tmp_path / "m")
    model = SentenceEncoder.load(tmp_path / "m", device="cpu")
    model.encode(CORPUS, backend="openvino")
    with torch.no_grad():
        for weights in model.parameters():
            weights.mul_(0.5)
    model.mark_weights_changed()
    np.testing.assert_allclose(model.encode(CORPUS, backend="openvino"), model.encode(CORPUS), atol=1e-5)


def test_precisions_it_cannot_run_are_one_line_errors(tiny_dirs, monkeypatch):
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    monkeypatch.setenv("SBERT_CPU_FP16", "emulate")  # past the CPU's own check, to the backend's
    with pytest.raises(BackendError, match="fp32 or bf16"):
        model.encode(CORPUS, backend="openvino", precision="fp16")
    monkeypatch.delenv("SBERT_CPU_BF16", raising=False)
    monkeypatch.setattr(device, "cpu_bf16_native", lambda: False)
    with pytest.raises(DeviceError, match="no bf16 instructions"):
        model.encode(CORPUS, backend="openvino", precision="bf16")


def test_bf16_hint_where_the_cpu_has_it_stays_close(tiny_dirs, monkeypatch):
    # OpenVINO emulates bf16 where the CPU lacks it; the numbers, not the speed, are checked here.
    monkeypatch.setattr(device, "cpu_bf16_native", lambda: True)
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], normalize=True, device="cpu")
    engine = model.backend("openvino", "bf16")
    assert engine.precision == "bf16" and engine.short is engine.compiled  # one compile, and
    # without snippets: on an AMX Xeon their fused bf16 kernels gave NaN rows (OpenVINO 2026.4)
    assert "Subgraph" not in layer_types(engine.compiled)
    got = model.encode(CORPUS, backend="openvino", precision="bf16")
    assert got.dtype == np.float32 and ((got * model.encode(CORPUS)).sum(1)).min() >= 0.99
    assert model.backend("openvino", "auto").precision == "f32"  # never bf16 unless asked


def test_cli_encode_and_a_real_server_on_openvino(tiny_dirs, tmp_path):
    from sbert.cli.main import main

    SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu").save(tmp_path / "m")
    (tmp_path / "in.txt").write_text("\n".join(CORPUS) + "\n", encoding="utf-8")
    args = ["encode", "-i", str(tmp_path / "in.txt"), "--model", str(tmp_path / "m"), "--backend", "openvino"]
    assert main([*args, "-o", str(tmp_path / "o.npy")]) == 0
    expected = SentenceEncoder.load(tmp_path / "m", device="cpu").encode(CORPUS)
    assert np.abs(np.load(tmp_path / "o.npy") - expected).max() <= 1e-5
    server = serve_in_thread("--model", str(tmp_path / "m"), "--backend", "openvino")
    try:
        got = served_vectors(server, CORPUS[:3], "m")
        assert np.abs(got - expected[:3]).max() <= 1e-5
    finally:
        assert server.stop()


def test_a_gpu_model_is_told_to_use_torch(tiny_dirs):
    from sbert.backends.openvino_runtime import OpenVinoBackend

    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    with pytest.raises(BackendError, match="runs on the CPU"):
        OpenVinoBackend(model.as_chain(), torch.device("cuda"), torch.float32)
