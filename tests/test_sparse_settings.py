"""A sparse folder's saved settings survive a load and a save: max_active_dims, and a null (dot) similarity."""

from __future__ import annotations

import json

import numpy as np

from sbert.sparse import SparseEncoder
from tests.test_sparse import build_mlm
from tests.tiny_models import CORPUS


def st_saved(tiny_dirs, tmp_path, **options):
    from sentence_transformers import SparseEncoder as STSparse
    from sentence_transformers.base.modules import Transformer as STTransformer
    from sentence_transformers.sparse_encoder.modules import SpladePooling as STSplade

    mlm = build_mlm(tiny_dirs["bert"], tmp_path / "mlm")
    model = STSparse(modules=[STTransformer(str(mlm), transformer_task="fill-mask"), STSplade("max")], device="cpu",
                     **options)  # fmt: skip
    model.save(str(tmp_path / "st"))
    return tmp_path / "st"


def test_a_saved_max_active_dims_is_applied_and_kept(tiny_dirs, tmp_path):
    from sentence_transformers import SparseEncoder as STSparse

    folder = st_saved(tiny_dirs, tmp_path, max_active_dims=16)
    assert json.loads((folder / "config_sentence_transformers.json").read_text())["max_active_dims"] == 16
    ours = SparseEncoder.load(folder, device="cpu")
    rows = ours.encode(CORPUS[:4])
    assert max(np.diff(rows.indptr)) <= 16
    reference = STSparse(str(folder), device="cpu").encode(CORPUS[:4], convert_to_sparse_tensor=False)
    np.testing.assert_allclose(rows.toarray(), reference.cpu().numpy(), atol=1e-5)
    ours.save(tmp_path / "again")
    assert json.loads((tmp_path / "again" / "config_sentence_transformers.json").read_text())["max_active_dims"] == 16
    assert SparseEncoder.load(tmp_path / "again", device="cpu").max_active_dims == 16


def test_a_null_similarity_stays_dot_through_a_save(tiny_dirs, tmp_path):
    from sentence_transformers import SparseEncoder as STSparse

    folder = st_saved(tiny_dirs, tmp_path)
    config = folder / "config_sentence_transformers.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "similarity_fn_name": None}))
    ours = SparseEncoder.load(folder, device="cpu")
    assert ours.settings.similarity_fn_name == "dot"
    ours.save(tmp_path / "again")
    reference, resaved = STSparse(str(folder), device="cpu"), STSparse(str(tmp_path / "again"), device="cpu")
    a, b = reference.encode(CORPUS[:2]), reference.encode(CORPUS[2:4])
    np.testing.assert_allclose(resaved.similarity(a, b).numpy(), reference.similarity(a, b).numpy(), rtol=1e-6)
    assert resaved.similarity_fn_name == "dot"
