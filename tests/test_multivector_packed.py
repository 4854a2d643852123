"""The packed multi-vector engine (the CUDA path) run on the CPU: the padded engine's matrices, padding-free."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sbert.multivector import MultiVectorEncoder
from sbert.multivector.packed import PackedMultiVector
from tests.colbert_fixtures import DOCUMENTS, QUERIES, build_native, build_punctuated_bert, build_pylate

# long and short texts together, so packed batches hold rows of many lengths
TEXTS = [*QUERIES, *DOCUMENTS, "", "x", "the cat sat on the mat, twice. " * 5]
FOLDERS = {
    "pylate": lambda b, p: build_pylate(b, p),  # expansion not attended: queries stay padded
    "pylate-attend": lambda b, p: build_pylate(b, p, attend_to_expansion_tokens=True),
    "native-min-attend": lambda b, p: build_native(
        b, p, query_length=20, document_length=24, query_expansion={"strategy": "min", "attend": True, "length": 10}
    ),
    "native-plain": lambda b, p: build_native(b, p, prompts={"query": "", "document": ""}, skiplist=[]),
}


@pytest.fixture(scope="module")
def bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_punctuated_bert(tmp_path_factory.mktemp("colbert-packed") / "bert")


@pytest.fixture(scope="module", params=sorted(FOLDERS))
def model(request: pytest.FixtureRequest, bert: Path, tmp_path_factory: pytest.TempPathFactory) -> MultiVectorEncoder:
    return MultiVectorEncoder.load(FOLDERS[request.param](bert, tmp_path_factory.mktemp("mvp") / request.param))


@pytest.mark.parametrize("task", ["query", "document"])
def test_packed_matrices_equal_the_padded_engine(model: MultiVectorEncoder, task: str) -> None:
    ids, _ = model._rules.token_ids(model.transformer, TEXTS, task)
    padded = model.engine("fp32", "torch", packed=False).run(ids, task, show_progress=False)
    engine = model.engine("fp32", "torch", packed=True)
    assert isinstance(engine.packed, PackedMultiVector)
    # a 40-token budget: many small packed batches, rows in any order
    packed = engine.run(ids, task, batch_tokens=40, show_progress=False)
    assert [m.shape for m in packed] == [m.shape for m in padded]
    assert max(float(np.abs(a - b).max(initial=0)) for a, b in zip(packed, padded, strict=True)) <= 1e-5


def test_unattended_expansion_stays_padded(bert: Path, tmp_path: Path) -> None:
    model = MultiVectorEncoder.load(build_pylate(bert, tmp_path / "m"))
    engine = model.engine("fp32", "torch", packed=True)
    assert engine.packed is not None
    assert not engine.packed.packable("query") and engine.packed.packable("document")


def test_packed_is_the_cuda_default_only(bert: Path, tmp_path: Path) -> None:
    model = MultiVectorEncoder.load(build_pylate(bert, tmp_path / "m"))
    assert model.engine("fp32", "torch").packed is None  # the CPU keeps its padded, per-core batches
    assert model.engine("fp32", "torch", packed=True).packed is not None


@pytest.mark.cuda
@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA GPU (none visible to torch here)")
def test_cuda_encode_runs_packed_and_equals_the_cpu(bert: Path, tmp_path: Path) -> None:
    folder = build_pylate(bert, tmp_path / "m", attend_to_expansion_tokens=True)
    cpu = MultiVectorEncoder.load(folder, device="cpu")
    gpu = MultiVectorEncoder.load(folder, device="cuda")
    assert isinstance(gpu.engine("fp32").packed, PackedMultiVector)  # on CUDA the packed engine is the default
    for task in ("query", "document"):
        got = gpu.encode(TEXTS, task=task, precision="fp32")
        want = cpu.encode(TEXTS, task=task, precision="fp32")
        assert [m.shape for m in got] == [m.shape for m in want]
        assert max(float(np.abs(a - b).max(initial=0)) for a, b in zip(got, want, strict=True)) <= 1e-4
