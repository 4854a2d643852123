"""The encode contract on every CPU graph backend: order, batching, truncation, streaming, server.

Each backend is held to its own precision's tolerance: the fp32 graphs and OpenVINO's static int8
(fixed activation ranges) give the same row whatever the batch; onnx-int8 quantizes its
activations per batch at run time, so its rows are held to direction (cosine) instead.
"""

import importlib.util
import random
import warnings

import numpy as np
import pytest

from sbert import SentenceEncoder
from sbert.errors import SbertError
from sbert.scale.streaming import encode_to_disk, load_shards
from tests.serve_helpers import serve_in_thread, served_vectors
from tests.tiny_models import CORPUS, EDGE_SENTENCES

TEXTS = [f"{s} ({i})" for i, s in enumerate(CORPUS * 4)] + EDGE_SENTENCES
OPENVINO = importlib.util.find_spec("openvino") is not None
NNCF = importlib.util.find_spec("nncf") is not None
BACKENDS = [
    pytest.param("onnx", 1e-5, id="onnx"),
    pytest.param("onnx-int8", None, id="onnx-int8"),  # None: dynamic int8, compared by direction
    pytest.param("openvino", 1e-5, id="openvino", marks=pytest.mark.skipif(not OPENVINO, reason="openvino extra")),
    pytest.param(  # e2e: long (make test's 6-minute budget); CI runs it in the e2e step
        "openvino-int8",
        1e-4,
        id="openvino-int8",
        marks=[pytest.mark.skipif(not NNCF, reason="openvino extra (nncf)"), pytest.mark.e2e],
    ),
]


@pytest.fixture(scope="module")
def model(tiny_dirs, tmp_path_factory) -> SentenceEncoder:
    path = tmp_path_factory.mktemp("contract") / "model"
    SentenceEncoder.from_transformer(tiny_dirs["bert"], normalize=True, device="cpu").save(path)
    return SentenceEncoder.load(path, device="cpu")


def assert_same_rows(got: np.ndarray, expected: np.ndarray, atol: float | None) -> None:
    """Equal within `atol`, or (atol None) every row pointing the same way to a cosine of 0.99."""
    assert got.shape == expected.shape and got.dtype == np.float32
    if atol is not None:
        assert np.abs(got - expected).max() <= atol
        return
    cosine = (got * expected).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(expected, axis=1)
    assert cosine.min() >= 0.99


@pytest.mark.parametrize(("backend", "atol"), BACKENDS)
def test_rows_follow_the_input_whatever_its_order_or_batching(model, backend, atol):
    reference = model.encode(TEXTS, backend=backend, on_truncation="ignore")
    fp32 = backend in ("onnx", "openvino")  # the int8 graphs are held to torch's direction, not its values
    assert_same_rows(reference, model.encode(TEXTS, on_truncation="ignore"), atol if fp32 else None)
    order = list(range(len(TEXTS)))
    random.Random(7).shuffle(order)
    shuffled = model.encode([TEXTS[i] for i in order], backend=backend, on_truncation="ignore")
    assert_same_rows(shuffled, reference[order], atol)
    one_by_one = model.encode(TEXTS, backend=backend, on_truncation="ignore", batch_size=1)
    assert_same_rows(one_by_one, reference, atol)
    single = model.encode(TEXTS[3], backend=backend)  # one string in, one vector out
    assert single.shape == (model.embedding_dimension,)
    assert_same_rows(single[None], reference[3:4], atol)


@pytest.mark.parametrize(("backend", "atol"), BACKENDS)
def test_truncation_is_warned_once_or_refused(model, backend, atol):
    long_text = "the cat sat on the mat " * 400
    with pytest.warns(UserWarning, match="1 of 2 inputs exceeded max_seq_length") as record:
        model.encode([long_text, "a short one"], backend=backend)
    assert len(record) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.encode([long_text], backend=backend, on_truncation="ignore")
    with pytest.raises(Exception, match="truncation refused"):
        model.encode([long_text], backend=backend, on_truncation="error")


@pytest.mark.parametrize(("backend", "atol"), BACKENDS)
def test_streaming_to_disk_gives_the_rows_of_encode(model, backend, atol, tmp_path):
    rows = encode_to_disk(model, iter(TEXTS), tmp_path / "out", shard_size=16, backend=backend, show_progress=False)
    assert rows == len(TEXTS)
    # normalize=False is encode_to_disk's default; the model normalizes in its own chain either way.
    assert_same_rows(load_shards(tmp_path / "out"), model.encode(TEXTS, backend=backend, on_truncation="ignore"), atol)


@pytest.mark.skipif(not OPENVINO, reason="openvino extra")
def test_shards_record_the_precision_that_ran(model, tmp_path, emulated_cpu_bf16):
    # openvino runs bf16 when asked; its shards must not be resumed by an fp32 run, nor the reverse.
    out = tmp_path / "out"
    encode_to_disk(model, TEXTS, out, shard_size=16, backend="openvino", precision="bf16", show_progress=False)
    with pytest.raises(SbertError, match="precision='bf16', this run has 'fp32'"):
        encode_to_disk(model, TEXTS, out, shard_size=16, backend="openvino", show_progress=False)


@pytest.mark.parametrize(("backend", "atol"), BACKENDS[:2])  # the openvino ones: tests/test_openvino*.py
def test_a_real_server_on_the_backend_gives_the_rows_of_encode(model, backend, atol, tmp_path):
    server = serve_in_thread("--model", str(model.source_dir), "--backend", backend)
    try:
        got = served_vectors(server, TEXTS[:5], "model")
        assert_same_rows(got, model.encode(TEXTS[:5], backend=backend), atol)
    finally:
        assert server.stop()
