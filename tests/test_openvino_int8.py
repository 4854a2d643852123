"""The openvino-int8 backend: NNCF's static int8, calibrated like onnx-int8, cached, rebuilt, served."""

import json

import numpy as np
import pytest

from sbert import SentenceEncoder
from sbert.backends import BackendError
from sbert.backends.calibration import digest
from sbert.backends.onnx_runtime import INT8_RECIPES
from tests.serve_helpers import serve_in_thread, served_vectors
from tests.tiny_models import CORPUS, EDGE_SENTENCES, row_cosines

pytest.importorskip("openvino")
pytest.importorskip("nncf")
CALIBRATION = [f"{s} ({i})" for i, s in enumerate(CORPUS * 8)][:40]


def manifest(folder) -> dict:
    return json.loads((folder / "export.json").read_text())


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_openvino_int8_stays_close_and_does_not_depend_on_the_batch(saved_tiny):
    expected = saved_tiny.encode(EDGE_SENTENCES, on_truncation="ignore")
    got = saved_tiny.encode(EDGE_SENTENCES, backend="openvino-int8", on_truncation="ignore", batch_size=3)
    assert row_cosines(got, expected).min() > 0.9
    # Fixed activation ranges: unlike dynamic int8, a row does not depend on its batch-mates.
    one_by_one = saved_tiny.encode(EDGE_SENTENCES, backend="openvino-int8", on_truncation="ignore", batch_size=1)
    assert np.abs(one_by_one - got).max() <= 1e-4
    assert np.array_equal(saved_tiny.encode(EDGE_SENTENCES[2], backend="openvino-int8"), got[2])
    folder = saved_tiny.source_dir / "onnx"
    assert (folder / "openvino_int8" / "model.xml").is_file()
    assert manifest(folder)["calibration"]["openvino-int8"]["recipe"] == INT8_RECIPES["openvino-int8"]


def quantized_linear(low: float, high: float) -> object:
    """x -> 8-bit quantizer [low, high] -> MatMul on int8 weights (NNCF's pattern), and a quantizer into an Add."""
    import openvino
    from openvino import opset13 as ops

    x = ops.parameter([-1, 64], np.float32, name="x")

    def quantizer() -> object:
        return ops.fake_quantize(x, *[ops.constant(np.float32(v)) for v in (low, high, low, high)], 256)

    weights = ops.constant(np.random.default_rng(0).integers(-127, 128, (32, 64)).astype(np.int8))
    dequantized = ops.multiply(ops.convert(weights, "f32"), ops.constant(np.full((32, 1), 0.01, np.float32)))
    linear = ops.matmul(quantizer(), dequantized, False, True)
    other = ops.add(quantizer(), x)
    return openvino.Model([linear, other], [x])


def kernels(model: object) -> list[str]:
    """The linear layer's kernel, from OpenVINO's counters on one run."""
    import openvino

    compiled = openvino.Core().compile_model(model, "CPU", {"PERF_COUNT": "YES", "INFERENCE_PRECISION_HINT": "f32"})
    request = compiled.create_infer_request()
    request.infer({"x": np.linspace(-1, 1, 16 * 64, dtype=np.float32).reshape(16, 64)})
    return [node.node_type for node in request.profiling_info if node.node_type.startswith("FullyConnected")]


def test_linear_inputs_quantized_with_zero_at_level_128_are_moved_off_the_legacy_kernel():
    from sbert.backends.openvino_runtime import keep_inputs_unsigned

    model = quantized_linear(-1.28, 1.27)  # zero at level 128: read as signed int8
    assert kernels(model) == ["FullyConnectedQuantizedLegacy"]
    assert keep_inputs_unsigned(model) == 1  # the linear layer's quantizer, not the one into the Add
    assert kernels(model) == ["FullyConnected"]
    highs = sorted(float(n.input_value(2).get_node().get_data()) for n in model.get_ops()  # type: ignore[attr-defined]
                   if n.get_type_name() == "FakeQuantize")  # fmt: skip
    assert highs == pytest.approx([1.27, 1.28 * 128 / 127])
    assert keep_inputs_unsigned(quantized_linear(-1.0, 1.2)) == 0  # zero elsewhere: left alone


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_new_calibration_and_a_damaged_model_are_quantized_again(tiny_dirs, tmp_path):
    SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu").save(tmp_path / "m")
    model = SentenceEncoder.load(tmp_path / "m", device="cpu")
    first = model.encode(CORPUS, backend="openvino-int8")
    model.calibrate_int8(CALIBRATION)
    calibrated = model.encode(CORPUS, backend="openvino-int8")
    folder = tmp_path / "m" / "onnx"
    assert manifest(folder)["calibration"]["openvino-int8"]["sha256"] == digest(CALIBRATION)
    assert not np.array_equal(first, calibrated)
    (folder / "openvino_int8" / "model.xml").write_text("<not a model", encoding="utf-8")
    again = SentenceEncoder.load(tmp_path / "m", device="cpu").encode(CORPUS, backend="openvino-int8")
    np.testing.assert_allclose(again, calibrated, atol=1e-5)


def test_it_runs_in_fp32_only(tiny_dirs, monkeypatch):
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    monkeypatch.setenv("SBERT_CPU_FP16", "emulate")  # past the CPU's own check, to the backend's
    with pytest.raises(BackendError, match="'openvino-int8' computes in fp32"):
        model.encode(CORPUS, backend="openvino-int8", precision="fp16")


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_cli_export_encode_and_a_real_server(tiny_dirs, tmp_path, capsys):
    from sbert.cli.main import main

    SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu").save(tmp_path / "m")
    (tmp_path / "calib.txt").write_text("\n".join(CALIBRATION) + "\n", encoding="utf-8")
    model_args = ["--model", str(tmp_path / "m")]
    assert main(["export", *model_args, "--backend", "openvino-int8", "--calibrate", str(tmp_path / "calib.txt")]) == 0
    assert "openvino-int8: " in capsys.readouterr().out
    (tmp_path / "in.txt").write_text("\n".join(CORPUS) + "\n", encoding="utf-8")
    args = ["encode", "-i", str(tmp_path / "in.txt"), *model_args, "--backend", "openvino-int8"]
    assert main([*args, "-o", str(tmp_path / "o.npy")]) == 0
    expected = SentenceEncoder.load(tmp_path / "m", device="cpu").encode(CORPUS, backend="openvino-int8")
    assert np.abs(np.load(tmp_path / "o.npy") - expected).max() <= 1e-5
    server = serve_in_thread(*model_args, "--backend", "openvino-int8")
    try:
        got = served_vectors(server, CORPUS[:3], "m")
        assert np.abs(got - expected[:3]).max() <= 1e-4
    finally:
        assert server.stop()


@pytest.mark.reference
@pytest.mark.e2e
def test_a_real_model_stays_near_fp32_and_a_narrow_calibration_is_refused(real_model_dir, data_dir, tmp_path):
    SentenceEncoder.load(real_model_dir, device="cpu").save(tmp_path / "m")  # a cache of its own
    model = SentenceEncoder.load(tmp_path / "m", device="cpu")
    hypotheses = (data_dir / "snli" / "s2.dev").read_text(encoding="utf-8").splitlines()[:256]
    cos = row_cosines(model.encode(hypotheses, backend="openvino-int8"), model.encode(hypotheses))
    # The packaged sentences: 31e-4 on the STSb test sentences, worst 0.965 (docs/speed.md).
    assert float((1 - cos).mean()) < 60e-4 and cos.min() > 0.9, (float((1 - cos).mean()), cos.min())
    # 320 SNLI captions alone leave short inputs ("ok") far off: the start-up check refuses it.
    model.calibrate_int8((data_dir / "snli" / "s1.dev").read_text(encoding="utf-8").splitlines()[:320])
    with pytest.raises(BackendError, match=r"cosine to torch .* calibrate on more varied sentences"):
        model.encode(hypotheses, backend="openvino-int8")
