"""BGE-M3 (issue 56, part 2): FlagEmbedding's layout loads as its own kind; one forward per batch gives the dense
vector, the lexical weights and the ColBERT vectors. FlagEmbedding 1.4.2 cannot be imported beside transformers
5.24 (it imports transformers.modeling_attn_mask_utils), so here each output is checked against FlagEmbedding's
definition computed text by text, unbatched, from transformers and torch directly; tests/test_m3_flag.py (e2e)
checks them against FlagEmbedding itself in its own venv."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.nn import functional
from transformers import AutoModel, AutoTokenizer

import sbert
from sbert.errors import ModelFormatError
from sbert.m3 import M3Encoder, colbert_score, lexical_matching_score, pair_scores
from tests.m3_fixtures import build_m3, with_st_files
from tests.tiny_models import CORPUS

TEXTS = [*CORPUS, "", "a", " ".join(CORPUS) * 3]  # mixed lengths; the last one is cut at the limit


@pytest.fixture(scope="module")
def m3_dir(tmp_path_factory):
    return build_m3(tmp_path_factory.mktemp("m3") / "bge-m3-tiny")


def definition(folder, text: str, max_length: int) -> dict:
    """FlagEmbedding's three outputs for one text, from its definition (BGE M3 paper; FlagEmbedding's M3 model)."""
    tokenizer, encoder = AutoTokenizer.from_pretrained(folder), AutoModel.from_pretrained(folder).eval()
    colbert = torch.nn.Linear(encoder.config.hidden_size, encoder.config.hidden_size)
    sparse = torch.nn.Linear(encoder.config.hidden_size, 1)
    colbert.load_state_dict(torch.load(folder / "colbert_linear.pt", weights_only=True))
    sparse.load_state_dict(torch.load(folder / "sparse_linear.pt", weights_only=True))
    ids = tokenizer(text, truncation=True, max_length=max_length, return_tensors="pt")
    with torch.no_grad():
        hidden = encoder(**ids).last_hidden_state[0]
        weights = torch.relu(sparse(hidden)).squeeze(-1)
        tokens = functional.normalize(colbert(hidden[1:]), dim=-1)
    unused = {tokenizer.cls_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id, tokenizer.unk_token_id}
    lexical: dict[str, float] = {}
    for token, weight in zip(ids["input_ids"][0].tolist(), weights.tolist(), strict=True):
        if token not in unused and weight > 0:
            lexical[str(token)] = max(weight, lexical.get(str(token), 0.0))
    return {"dense": functional.normalize(hidden[0], dim=-1).numpy(), "lexical": lexical, "colbert": tokens.numpy()}


def test_one_pass_gives_flagembeddings_three_outputs(m3_dir):
    model = sbert.load(m3_dir)
    assert isinstance(model, M3Encoder)
    forwards: list[int] = []
    model.transformer.auto_model.register_forward_hook(lambda *_: forwards.append(1))
    model.encode(TEXTS, batch_size=3)
    dense_only, forwards[:] = len(forwards), []
    out = model.encode(TEXTS, batch_size=3, return_dense=True, return_sparse=True, return_colbert_vecs=True)
    assert len(forwards) == dense_only >= -(-len(TEXTS) // 3)  # all three outputs from the dense-only forwards
    assert out["dense_vecs"].shape == (len(TEXTS), 32) and out["dense_vecs"].dtype == np.float32
    for i, text in enumerate(TEXTS):
        want = definition(m3_dir, text, model.max_seq_length)
        np.testing.assert_allclose(out["dense_vecs"][i], want["dense"], atol=1e-5)
        got = out["lexical_weights"][i]
        assert got.keys() == want["lexical"].keys(), text
        np.testing.assert_allclose([got[k] for k in got], [want["lexical"][k] for k in got], atol=1e-5)
        assert out["colbert_vecs"][i].shape == want["colbert"].shape  # every token after CLS, </s> included
        np.testing.assert_allclose(out["colbert_vecs"][i], want["colbert"], atol=1e-5)
    assert any(out["lexical_weights"][i] for i in range(len(TEXTS)))  # the test can fail: some weights are kept


def test_batches_and_limits_do_not_change_a_row(m3_dir):
    model = M3Encoder.load(m3_dir)
    every = dict(return_dense=True, return_sparse=True, return_colbert_vecs=True)
    alone = [model.encode(t, **every) for t in TEXTS]
    together = model.encode(TEXTS, batch_tokens=64, **every)
    for i, single in enumerate(alone):
        np.testing.assert_allclose(together["dense_vecs"][i], single["dense_vecs"], atol=1e-5)
        np.testing.assert_allclose(together["colbert_vecs"][i], single["colbert_vecs"], atol=1e-5)
        assert together["lexical_weights"][i].keys() == single["lexical_weights"].keys()
    short = model.encode(TEXTS[-1], max_length=8, return_colbert_vecs=True)
    assert short["colbert_vecs"].shape[0] == 7 and short["lexical_weights"] is None  # 8 tokens less the CLS
    np.testing.assert_allclose(short["dense_vecs"], definition(m3_dir, TEXTS[-1], 8)["dense"], atol=1e-5)


def test_the_published_layout_with_sentence_transformers_files_loads_the_same(m3_dir, tmp_path):
    both = with_st_files(m3_dir, tmp_path / "bge-m3-st")
    assert isinstance(sbert.load(both), M3Encoder)
    mine = sbert.load(both).encode(TEXTS[:3], return_sparse=True)
    again = M3Encoder.load(m3_dir).encode(TEXTS[:3], return_sparse=True)
    np.testing.assert_allclose(mine["dense_vecs"], again["dense_vecs"], atol=1e-6)
    assert mine["lexical_weights"] == again["lexical_weights"]


def test_scores_are_flagembeddings_formulas(m3_dir):
    model = M3Encoder.load(m3_dir)
    every = dict(return_dense=True, return_sparse=True, return_colbert_vecs=True)
    q, d = model.encode(CORPUS[0], **every), model.encode(CORPUS[1], **every)
    sparse = sum(w * d["lexical_weights"][t] for t, w in q["lexical_weights"].items() if t in d["lexical_weights"])
    assert lexical_matching_score(q["lexical_weights"], d["lexical_weights"]) == pytest.approx(sparse)
    late = float(np.mean([max(float(v @ u) for u in d["colbert_vecs"]) for v in q["colbert_vecs"]]))
    assert colbert_score(q["colbert_vecs"], d["colbert_vecs"]) == pytest.approx(late, abs=1e-6)
    scores = pair_scores(q, d, weights=(1.0, 0.3, 1.0))
    dense = float(q["dense_vecs"] @ d["dense_vecs"])
    assert scores["colbert+sparse+dense"] == pytest.approx((dense + 0.3 * sparse + late) / 2.3, abs=1e-6)
    assert scores["sparse+dense"] == pytest.approx((dense + 0.3 * sparse) / 1.3, abs=1e-6)
    # ColBERT alone: FlagEmbedding's compute_score divides 0 by 0 for "sparse+dense" (NaN, no error) and gives the
    # ColBERT score as the whole (test_m3_flag.py checks both against FlagEmbedding itself).
    alone = pair_scores(q, d, weights=(0.0, 0.0, 1.0))
    assert np.isnan(alone["sparse+dense"]) and alone["colbert+sparse+dense"] == pytest.approx(late, abs=1e-6)


def test_a_bad_head_file_is_a_one_line_error(m3_dir, tmp_path):
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(m3_dir, broken)
    torch.save({"bias": torch.zeros(3)}, broken / "sparse_linear.pt")
    with pytest.raises(ModelFormatError, match=r"sparse_linear\.pt: not a Linear head's state dict"):
        M3Encoder.load(broken)


def test_the_views_are_the_m3_models_own_weights(m3_dir):
    from sbert.m3.views import LexicalView, colbert_view, dense_view

    model = M3Encoder.load(m3_dir)
    every = dict(return_dense=True, return_sparse=True, return_colbert_vecs=True)
    want = model.encode(TEXTS, **every)
    np.testing.assert_allclose(dense_view(model).encode(TEXTS), want["dense_vecs"], atol=1e-6)
    for got, vectors in zip(colbert_view(model).encode(TEXTS), want["colbert_vecs"], strict=True):
        np.testing.assert_allclose(got, vectors, atol=1e-6)  # every token after [CLS], </s> included
    rows = LexicalView(model).encode(TEXTS)
    assert rows.shape == (len(TEXTS), len(model.transformer.tokenizer))
    for i, weights in enumerate(want["lexical_weights"]):
        assert {str(k): pytest.approx(float(v)) for k, v in zip(rows[i].indices, rows[i].data, strict=True)} == weights
    view = colbert_view(model)
    assert view[1].linear is model.colbert_linear and view.transformer is model.transformer  # no copy


def test_the_onnx_engine_gives_the_same_three_outputs(m3_dir):
    model = M3Encoder.load(m3_dir)
    every = dict(return_dense=True, return_sparse=True, return_colbert_vecs=True)
    want, got = model.encode(TEXTS, **every), model.encode(TEXTS, backend="onnx", **every)
    np.testing.assert_allclose(got["dense_vecs"], want["dense_vecs"], atol=1e-5)
    for mine, theirs in zip(got["colbert_vecs"], want["colbert_vecs"], strict=True):
        np.testing.assert_allclose(mine, theirs, atol=1e-5)
    for mine, theirs in zip(got["lexical_weights"], want["lexical_weights"], strict=True):
        assert mine.keys() == theirs.keys()
        np.testing.assert_allclose([mine[k] for k in theirs], [theirs[k] for k in theirs], atol=1e-5)


def test_the_graph_runtimes_hold_the_three_heads_in_one_graph(m3_dir):
    model = M3Encoder.load(m3_dir)
    width, colbert = model.transformer.embedding_dimension, model.colbert_linear.out_features
    ids, _ = model.transformer.token_ids(TEXTS, model.max_seq_length)
    engine = model.token_states.engine("auto", "onnx-int8")
    assert engine.graph is not None  # the graph runs alone: no torch module after it
    rows = engine.run(ids, None)
    assert {r.shape[1] for r in rows} == {width + colbert + 1}  # [unit h | unit ColBERT | lexical weight]
    every = dict(return_dense=True, return_sparse=True, return_colbert_vecs=True)
    want, got = model.encode(TEXTS, **every), model.encode(TEXTS, backend="onnx-int8", **every)
    assert (got["dense_vecs"] * want["dense_vecs"]).sum(1).min() > 0.98  # unit vectors: the cosine
    for mine, theirs in zip(got["colbert_vecs"], want["colbert_vecs"], strict=True):
        assert (mine * theirs).sum(1).min() > 0.95
    for mine, theirs in zip(got["lexical_weights"], want["lexical_weights"], strict=True):
        shared = mine.keys() & theirs.keys()  # int8 may move a weight near 0 across it
        assert len(shared) >= 0.8 * len(theirs)
        np.testing.assert_allclose([mine[k] for k in shared], [theirs[k] for k in shared], atol=0.1, rtol=0.1)
