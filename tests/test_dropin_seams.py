"""The drop-in objects are sbert's objects: whatever takes the model `sbert.load` returns takes them too.

`sbert.SentenceTransformer` / `sbert.SparseEncoder` objects given to the server (a real one on loopback),
the evaluation functions and `sbert.train` give what the native objects give there.
"""

from __future__ import annotations

import httpx
import numpy as np
import pytest

import sbert
from sbert.data.common import Dataset
from sbert.evaluation import evaluate_sts
from sbert.serve.server import build_server
from sbert.serve.settings import ServeSettings
from sbert.sparse import SparseEncoder as NativeSparse
from tests.serve_helpers import free_port, run_app_in_thread
from tests.test_sparse import build_mlm, st_splade
from tests.tiny_models import CORPUS


@pytest.fixture(scope="module")
def folders(tiny_dirs, tmp_path_factory):
    root = tmp_path_factory.mktemp("seams")
    sbert.SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu").save(root / "dense")
    return root / "dense", st_splade(build_mlm(tiny_dirs["bert"], root / "mlm"), root / "splade")


def serve(**models):
    settings = ServeSettings(model="drop-in", port=free_port())
    return run_app_in_thread(build_server(settings, model_id="drop-in", **models), settings)


def test_the_server_takes_drop_in_objects(folders):
    dense, splade = folders
    server = serve(model=sbert.SentenceTransformer(str(dense), device="cpu"),
                   sparse=sbert.SparseEncoder(str(splade), device="cpu"))  # fmt: skip
    try:
        answer = httpx.post(f"{server.url}/embed_sparse", json={"inputs": CORPUS[:3]}, timeout=60)
        assert answer.status_code == 200, answer.text
        want = NativeSparse.load(splade, device="cpu").encode(CORPUS[:3])
        for row, got in zip(want, answer.json(), strict=True):
            assert [g["index"] for g in got] == sorted(row.indices.tolist())
        vectors = httpx.post(f"{server.url}/embed", json={"inputs": CORPUS[:3]}, timeout=60)
        assert vectors.status_code == 200, vectors.text
        native = sbert.SentenceEncoder.load(dense, device="cpu").encode(CORPUS[:3], normalize=True)
        np.testing.assert_allclose(np.asarray(vectors.json()), native, atol=1e-5)
    finally:
        assert server.stop()


def test_evaluation_and_training_take_drop_in_objects(folders, tmp_path):
    dense, _ = folders
    pairs = Dataset("sts", "pair-score", list(zip(CORPUS, CORPUS[1:] + CORPUS[:1], strict=True)),
                    [i / 8 for i in range(8)])  # fmt: skip
    drop_in = sbert.SentenceTransformer(str(dense), device="cpu")
    assert evaluate_sts(drop_in, pairs) == evaluate_sts(sbert.SentenceEncoder.load(dense, device="cpu"), pairs)
    before = drop_in.encode(CORPUS)
    sbert.train(drop_in, str(tmp_path / "out"), datasets={"sts": pairs}, objectives={"sts": "cosent"},
                show_progress=False, lr=1e-3, warmup=0.0, epochs=2)  # fmt: skip
    assert np.abs(drop_in.encode(CORPUS) - before).max() > 1e-4  # trained in place, through its sbert view
