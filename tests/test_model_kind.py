"""`sbert.load` picks the kind a folder holds (model_kind.kind_of), for folders sentence-transformers saved."""

from __future__ import annotations

import pytest
from sentence_transformers import SentenceTransformer

import sbert
from sbert import SentenceEncoder, StaticEncoder
from sbert.reranker.model import CrossEncoder
from sbert.sparse import SparseEncoder
from tests.test_cross_encoder import _st_saved
from tests.test_router import st_static
from tests.test_sparse import build_mlm, st_splade


def test_each_kind_loads_with_its_class(tiny_dirs, tmp_path):
    SentenceTransformer(str(tiny_dirs["bert"]), device="cpu").save(str(tmp_path / "dense"))
    SentenceTransformer(modules=[st_static(tiny_dirs, 12)], device="cpu").save(str(tmp_path / "static"))
    folders = {
        "dense": (tmp_path / "dense", SentenceEncoder),
        "plain encoder": (tiny_dirs["bert"], SentenceEncoder),
        "static": (tmp_path / "static", StaticEncoder),
        "sparse": (st_splade(build_mlm(tiny_dirs["bert"], tmp_path / "mlm"), tmp_path / "splade"), SparseEncoder),
        "cross-encoder": (_st_saved(tiny_dirs["bert"], tmp_path / "cross"), CrossEncoder),
    }
    for name, (folder, kind) in folders.items():
        assert type(sbert.load(folder)) is kind, name
    with pytest.raises(ValueError, match="a static model runs on the CPU"):
        sbert.load(tmp_path / "static", device="cuda")
