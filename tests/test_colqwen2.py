"""ColQwen2 (`ColQwen2ForRetrieval`, a Qwen2-VL page model) as a multi-vector encoder, against sentence-transformers
6.3 in the same process: query and page token matrices, MaxSim scores, and folders saved by either library.

Qwen2-VL's processor needs torchvision, which does not load beside the 2.13 CPU build of torch that the main
venv holds; `make test-vision` runs this file in a venv with torch 2.14.1 and torchvision 0.29.1. Elsewhere it
skips, saying so.
"""

from __future__ import annotations

import numpy as np
import pytest

import sbert
from tests.multimodal_fixtures import st_reference, tiny_colqwen2


def _torchvision_loads() -> bool:
    try:
        import torchvision.ops  # noqa: F401  (fails with "operator torchvision::nms does not exist" on a mismatch)
    except Exception:
        return False
    return True


pytestmark = pytest.mark.skipif(not _torchvision_loads(), reason="needs torchvision beside torch: make test-vision")
st = pytest.importorskip("sentence_transformers")
Image = pytest.importorskip("PIL.Image")
QUERIES = ["a red car", "two dogs play in the park"]


def pages() -> list:
    rng = np.random.default_rng(7)
    return [Image.fromarray((rng.random((56 + 28 * i, 84, 3)) * 255).astype("uint8")) for i in range(3)]


def arrays(rows) -> list[np.ndarray]:
    return [np.asarray(r.detach().cpu().numpy() if hasattr(r, "detach") else r, dtype=np.float32) for r in rows]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    base = tmp_path_factory.mktemp("colqwen2")
    plain = tiny_colqwen2(base)
    st_reference(plain, "MultiVectorEncoder").save(str(base / "st"))
    return {"plain": plain, "st": base / "st"}


@pytest.mark.parametrize("layout", ["plain", "st"])
def test_queries_pages_and_scores_are_the_references(folders, layout):
    want = st_reference(folders[layout], "MultiVectorEncoder")
    q_want, d_want = arrays(want.encode_query(QUERIES)), arrays(want.encode_document(pages()))
    assert len({len(d) for d in d_want}) > 1  # pages of different sizes give different token counts
    for ours in (sbert.load(str(folders[layout])), sbert.MultiVectorEncoder(str(folders[layout]), device="cpu")):
        q, d = arrays(ours.encode_query(QUERIES)), arrays(ours.encode_document(pages()))
        for got, expected in zip([*q, *d], [*q_want, *d_want], strict=True):
            np.testing.assert_allclose(got, expected, atol=1e-5)
        np.testing.assert_allclose(np.asarray(ours.similarity(q, d)), want.similarity(q_want, d_want).numpy(),
                                   atol=1e-4)  # fmt: skip


def test_a_folder_sbert_saves_loads_in_sentence_transformers(folders, tmp_path):
    ours = sbert.load(str(folders["plain"]))
    ours.save(tmp_path / "sbert")
    theirs = st_reference(tmp_path / "sbert", "MultiVectorEncoder")
    for got, expected in zip(arrays(theirs.encode_document(pages())), arrays(ours.encode_document(pages())),
                             strict=True):  # fmt: skip
        np.testing.assert_allclose(got, expected, atol=1e-5)
