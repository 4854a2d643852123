"""Every drop-in class takes sbert's extra keywords (those of its native entry that the reference's signature
lacks: backend, batch_tokens, precision, ...) as the dense one does: at their defaults they change nothing, and
docs/multivector.md's `encode_document(docs, backend="onnx")` runs on the drop-in MultiVectorEncoder."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest
import torch

from sbert import CrossEncoder, MultiVectorEncoder, SentenceTransformer, SparseEncoder
from tests.colbert_fixtures import tiny_colbert
from tests.st_training_fixtures import tiny_cross_encoder_folder, tiny_splade_folder
from tests.tiny_models import CORPUS

RETURN_TYPE = {"convert_to", "output"}  # sbert's own return shapes: the native entry's keywords, not extras
TEXTS = CORPUS[:3]


def extras(cls: type, method: str) -> dict[str, Any]:
    """The native method's keywords (with their defaults) that the drop-in's signature does not name."""
    native = inspect.signature(getattr(cls.native_class, method)).parameters
    ours = inspect.signature(getattr(cls, method)).parameters
    return {k: p.default for k, p in native.items() if k not in ours and k not in RETURN_TYPE
            and p.default is not inspect.Parameter.empty}  # fmt: skip


def as_array(value: Any) -> np.ndarray:
    if isinstance(value, list):
        return np.concatenate([as_array(v) for v in value])
    if hasattr(value, "toarray"):
        return value.toarray()
    if isinstance(value, torch.Tensor):
        return (value.to_dense() if value.is_sparse else value).detach().cpu().numpy()
    return np.asarray(value)


@pytest.fixture(scope="module")
def models(tmp_path_factory, tiny_dirs):
    base = tmp_path_factory.mktemp("dropins")
    return {
        SentenceTransformer: (SentenceTransformer(str(tiny_dirs["bert"]), device="cpu"), "encode", TEXTS),
        SparseEncoder: (SparseEncoder(str(tiny_splade_folder(base)), device="cpu"), "encode", TEXTS),
        MultiVectorEncoder: (MultiVectorEncoder(str(tiny_colbert(base)), device="cpu"), "encode", TEXTS),
        CrossEncoder: (CrossEncoder(str(tiny_cross_encoder_folder(base, 1)), device="cpu"), "predict",
                       [(TEXTS[0], t) for t in TEXTS]),
    }  # fmt: skip


@pytest.mark.parametrize("cls", [SentenceTransformer, SparseEncoder, MultiVectorEncoder, CrossEncoder],
                         ids=lambda c: c.__name__)  # fmt: skip
def test_each_native_keyword_at_its_default_changes_nothing(models, cls):
    model, method, inputs = models[cls]
    names = extras(cls, method)
    assert "backend" in names
    plain = as_array(getattr(model, method)(inputs))
    for name, default in names.items():
        np.testing.assert_allclose(as_array(getattr(model, method)(inputs, **{name: default})), plain, atol=1e-6,
                                   err_msg=f"{cls.__name__}.{method}({name}={default!r})")  # fmt: skip


def test_the_multivector_drop_in_runs_the_onnx_engine_as_the_docs_show(models):
    pytest.importorskip("onnxruntime")
    model = models[MultiVectorEncoder][0]
    on_onnx = model.encode_document(TEXTS, backend="onnx")
    on_torch = model.encode_document(TEXTS)
    assert len(on_onnx) == len(on_torch)
    for a, b in zip(on_onnx, on_torch, strict=True):
        np.testing.assert_allclose(as_array(a), as_array(b), atol=1e-4)
