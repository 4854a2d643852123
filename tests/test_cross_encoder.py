"""CrossEncoder: sentence-transformers' layout both ways, predict/rank, backends, training, bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sbert.cli.main import main
from sbert.data import load_dataset
from sbert.errors import ModelFormatError, SbertError
from sbert.reranker.model import CrossEncoder
from sbert.training.cross_encoder import CrossFitSettings, fit_cross_encoder
from tests.conftest import SHARED_DATA

PAIRS = [
    ("A man is playing a guitar.", "Someone plays music on a stage."),
    ("ok", "A dog runs through the snow while children watch from the porch."),
    ("The quarterly report, delayed twice, shows revenue growing " * 8, "short"),
    ("Two birds", "Two birds"),
]


def _st_saved(encoder, path):
    import torch
    from sentence_transformers import CrossEncoder as STCrossEncoder

    # fp32 whatever the stored dtype: the GPU machine's packed copy (.device/) stores fp16, which transformers 5
    # keeps, and the reference would then score in fp16 against sbert's fp32.
    model = STCrossEncoder(str(encoder), num_labels=1, model_kwargs={"dtype": torch.float32})
    # A fresh head's logits barely differ between pairs: a wide one (std 6) lets comparisons fail. Drawn
    # from its own generator: the global one can be advanced by other tests' threads between a seed and
    # the head's init (a full run once got a head whose four scores spanned 5e-4).
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for param in model.model.classifier.parameters():
            param.copy_(torch.randn(param.shape, generator=generator) * 6.0)
    model.save(str(path))
    return path


@pytest.fixture(scope="module")
def st_cross_dir(tiny_dirs, tmp_path_factory):
    """A cross-encoder (random head on the tiny BERT) saved by sentence-transformers."""
    return _st_saved(tiny_dirs["bert"], tmp_path_factory.mktemp("st") / "cross")


@pytest.fixture(scope="module")
def real_cross_dir(real_model_dir, tmp_path_factory):
    """A random head on all-MiniLM-L6-v2 (whose tokenizer returns token types), saved by sentence-transformers."""
    return _st_saved(real_model_dir, tmp_path_factory.mktemp("st") / "real")


@pytest.mark.parametrize("which", ["st_cross_dir", "real_cross_dir"])
def test_scores_match_sentence_transformers_both_ways(which, request, tmp_path):
    from sentence_transformers import CrossEncoder as STCrossEncoder
    from torch import nn

    folder = request.getfixturevalue(which)
    reference = STCrossEncoder(str(folder)).predict(PAIRS, activation_fn=nn.Identity())
    assert np.ptp(reference) > 1e-3  # the pairs score differently: the comparison can fail
    ours = CrossEncoder.load(folder)
    np.testing.assert_allclose(ours.predict(PAIRS, activation=False), reference, atol=1e-5)
    np.testing.assert_allclose(ours.predict(PAIRS, batch_size=1, activation=False), reference, atol=1e-5)
    ours.save(tmp_path / "back")
    back = STCrossEncoder(str(tmp_path / "back")).predict(PAIRS, activation_fn=nn.Identity())
    np.testing.assert_allclose(back, reference, atol=1e-5)
    reranked = STCrossEncoder(str(tmp_path / "back")).rank("A man plays", [b for _, b in PAIRS])
    assert [r["corpus_id"] for r in ours.rank("A man plays", [b for _, b in PAIRS])] == [
        r["corpus_id"] for r in reranked
    ]


def test_token_types_follow_the_second_text(real_cross_dir):
    model = CrossEncoder.load(real_cross_dir)
    features = model.classifier.tokenize_pairs([("a b", "c"), ("a", "b c d")])
    reference = model.classifier.tokenizer(["a b", "a"], ["c", "b c d"], padding=True, return_tensors="pt")
    assert features["token_type_ids"].tolist() == reference["token_type_ids"].tolist()
    assert features["input_ids"].tolist() == reference["input_ids"].tolist()


def test_rank_orders_and_cuts(st_cross_dir):
    model = CrossEncoder.load(st_cross_dir)
    docs = [b for _, b in PAIRS]
    scores = model.predict([("query", d) for d in docs])
    ranked = model.rank("query", docs, top_k=2, return_documents=True)
    assert [r["corpus_id"] for r in ranked] == list(np.argsort(-scores, kind="stable")[:2])
    assert ranked[0]["text"] == docs[ranked[0]["corpus_id"]] and ranked[0]["score"] >= ranked[1]["score"]
    # As sentence-transformers: no documents rank to [], a top_k beyond them returns all of them.
    from sentence_transformers import CrossEncoder as STCrossEncoder

    reference = STCrossEncoder(str(st_cross_dir))
    for documents, top_k in (([], None), ([], 3), (docs, 5), (docs, 0)):
        got = model.rank("query", documents, top_k=top_k)
        assert [r["corpus_id"] for r in got] == [r["corpus_id"] for r in reference.rank("query", documents, top_k)]
    assert len(model.rank("query", docs, top_k=5)) == 4 and model.rank("query", []) == []
    for top_k in (-1, 1.5):
        with pytest.raises(ValueError, match="top_k must be a non-negative integer or None"):
            model.rank("query", docs, top_k=top_k)


def test_a_multi_label_reranker_is_refused_by_the_server_in_one_line(tiny_dirs, tmp_path, capsys):
    CrossEncoder.new(tiny_dirs["bert"], num_labels=3).save(tmp_path / "nli")
    capsys.readouterr()
    assert (
        main(["serve", "--model", str(tiny_dirs["bert"]), "--reranker", str(tmp_path / "nli"), "--device", "cpu"]) == 2
    )
    err = [line for line in capsys.readouterr().err.strip().splitlines() if "Loading weights" not in line]
    assert len(err) == 1 and "3 labels give no single relevance score" in err[0]


@pytest.mark.parametrize("bad", [[("only one side",)], [("a", None)], "a string", [("a", "b", "c")]])
def test_pairs_with_a_missing_side_are_refused(st_cross_dir, bad):
    with pytest.raises((ValueError, TypeError), match="pairs"):
        CrossEncoder.load(st_cross_dir).predict(bad)


def test_token_budget_and_onnx_backends_agree_with_torch(st_cross_dir, tmp_path):
    import shutil

    shutil.copytree(st_cross_dir, tmp_path / "m")
    model = CrossEncoder.load(tmp_path / "m")
    torch_scores = model.predict(PAIRS, activation=False)
    np.testing.assert_allclose(model.predict(PAIRS, batch_tokens=16, activation=False), torch_scores, atol=1e-5)
    np.testing.assert_allclose(model.predict(PAIRS, backend="onnx", activation=False), torch_scores, atol=1e-4)
    int8 = model.predict(PAIRS, backend="onnx-int8", activation=False)
    assert np.abs(int8 - torch_scores).max() < 0.5 and (tmp_path / "m" / "onnx" / "model_int8.onnx").is_file()


def test_loading_refuses_a_plain_encoder_and_the_old_baseline(tiny_dirs, tmp_path):
    with pytest.raises(ModelFormatError, match="not a cross-encoder"):
        CrossEncoder.load(tiny_dirs["bert"])
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "cross_encoder_head.safetensors").write_bytes(b"")
    with pytest.raises(ModelFormatError, match="retrain it"):
        CrossEncoder.load(tmp_path / "old")


def _nli(tmp_path, rows=48):
    folder = tmp_path / "nli"
    folder.mkdir()
    for name in ("s1", "s2", "labels"):
        lines = (SHARED_DATA / "snli" / f"{name}.dev").read_text(encoding="utf-8").splitlines()[:rows]
        (folder / f"{name}.dev").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_training_on_labelled_pairs_binary_and_three_way(tiny_dirs, tmp_path):
    data = load_dataset(f"nli:{_nli(tmp_path)}")
    reranker = CrossEncoder.new(tiny_dirs["bert"])
    before = reranker.predict(data.texts[:6])
    fit_cross_encoder(reranker, data, CrossFitSettings(positive_label="entailment", batch_size=8))
    assert reranker.predict(data.texts[:6]).shape == (6,) and not np.allclose(before, reranker.predict(data.texts[:6]))
    three = CrossEncoder.new(tiny_dirs["roberta"], num_labels=3)
    fit_cross_encoder(three, data, CrossFitSettings(batch_size=8))
    assert three.predict(data.texts[:6]).shape == (6, 3)
    with pytest.raises(SbertError, match="pass --positive"):
        fit_cross_encoder(CrossEncoder.new(tiny_dirs["bert"]), data)
    with pytest.raises(SbertError, match="has labels entailment"):
        fit_cross_encoder(reranker, data, CrossFitSettings(positive_label="yes"))
    with pytest.raises(ValueError, match="one-score"):
        three.rank("q", ["a", "b"])


def test_cli_trains_a_reranker_that_sentence_transformers_loads(tiny_dirs, tmp_path, capsys):
    from sentence_transformers import CrossEncoder as STCrossEncoder

    nli, out = _nli(tmp_path), tmp_path / "reranker"
    args = ["train-cross-encoder", "--train", f"nli:{nli}", "--positive", "entailment", "--model",
            str(tiny_dirs["albert"]), "-o", str(out), "--batch-size", "8", "--limit", "32"]  # fmt: skip
    assert main(args) == 0
    ours = CrossEncoder.load(out).predict(PAIRS)
    np.testing.assert_allclose(STCrossEncoder(str(out)).predict(PAIRS), ours, atol=1e-5)
    assert main(args) == 2 and "already exists" in capsys.readouterr().err
    bad = ["train-cross-encoder", "--train", f"nli:{nli}", "--positive", "maybe", "--model", str(tiny_dirs["bert"]),
           "-o", str(tmp_path / "x")]  # fmt: skip
    assert main(bad) == 2 and "has labels entailment" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_triplets_and_random_negatives_become_scored_pairs(tmp_path):
    from sbert.data.common import Dataset
    from sbert.training.cross_encoder import binary_pairs

    triplets = Dataset("t", "triplet", [("a", "p", "n1", "n2"), ("b", "q", "m")])
    pairs = binary_pairs(triplets, CrossFitSettings())
    assert pairs.texts == [("a", "p"), ("a", "n1"), ("a", "n2"), ("b", "q"), ("b", "m")]
    assert pairs.labels == [1.0, 0.0, 0.0, 1.0, 0.0]
    nli = load_dataset(f"nli:{_nli(tmp_path)}")
    mixed = binary_pairs(nli, CrossFitSettings(positive_label="entailment", random_negatives=2))
    positives = sum(1 for y in nli.labels if y == 0)
    assert len(mixed) == len(nli) + 2 * positives and sum(mixed.labels) == positives
    originals = {t[0]: {b for a, b in nli.texts if a == t[0]} for t in nli.texts}
    for first, second in mixed.texts[len(nli) :]:
        assert second not in originals[first]  # another premise's hypothesis
    with pytest.raises(SbertError, match="random negatives need"):
        binary_pairs(load_dataset(f"stsb:{SHARED_DATA / 'stsbenchmark' / 'sts-dev.csv'}"),
                     CrossFitSettings(random_negatives=1))  # fmt: skip


def test_a_classifier_loaded_in_int8_scores_as_the_torch_int8_engine(st_cross_dir):
    from sbert.backends.torch_int8 import holds_int8

    full, held = CrossEncoder.load(st_cross_dir), CrossEncoder.load(st_cross_dir, dtype="int8")
    assert holds_int8(held)
    engine = full.predict(PAIRS, backend="torch-int8", activation=False)
    np.testing.assert_allclose(held.predict(PAIRS, activation=False), engine, atol=1e-4)


def test_the_gpu_engine_runs_a_classifier_in_padded_batches(st_cross_dir):
    from sbert.backends.torch_cuda import CudaBackend
    from sbert.encoding.engine import embed_rows

    model = CrossEncoder.load(st_cross_dir)
    engine = CudaBackend(model.as_chain(), torch.device("cpu"), torch.float32)  # the CUDA engine, on the CPU
    assert not engine.packed  # the classifier's own head pools a padded row
    ids = model.classifier.prompted_pair_ids(PAIRS, "")
    np.testing.assert_allclose(embed_rows(engine, ids, 1)[:, 0], model.predict(PAIRS, activation=False), atol=1e-5)
