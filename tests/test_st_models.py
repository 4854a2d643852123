"""6.2's `models` / `datasets` / `readers` module paths: a chain built from 6.2's module constructors.

The same script runs with `sentence_transformers` and with `sbert`: the same vectors (1e-5), sbert's saved
folder loads in 6.2 with them, and the legacy `fit` on a `NoDuplicatesDataLoader` trains as 6.2's.
"""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest
import torch

import sbert
from sbert.errors import SbertError
from tests.st_training_fixtures import ANCHORS, POSITIVES, ROWS
from tests.tiny_models import CORPUS, build_bert

st = pytest.importorskip("sentence_transformers")

pytestmark = pytest.mark.reference


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return build_bert(tmp_path_factory.mktemp("models") / "bert")


def built(lib, bert):
    """The model-building lines of 6.2's training scripts, with `lib`'s `models` module."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        models = importlib.import_module(f"{lib.__name__}.models")
        no_dropout = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}  # steps are deterministic
        transformer = models.Transformer(str(bert), max_seq_length=24, config_kwargs=no_dropout)
        width = transformer.get_word_embedding_dimension()
        pooling = models.Pooling(width, pooling_mode=["mean", "max"])
        weight = torch.linspace(-0.05, 0.05, 16 * 2 * width).reshape(16, 2 * width).T.reshape(16, 2 * width)
        dense = models.Dense(2 * width, 16, init_weight=weight, init_bias=torch.full((16,), 0.1))
        return lib.SentenceTransformer(modules=[transformer, pooling, dense, models.Normalize()], device="cpu")


def test_a_chain_of_6_2s_module_constructors_encodes_and_saves_as_6_2s(bert, tmp_path):
    ours, theirs = built(sbert, bert), built(st, bert)
    texts = [*CORPUS[:6], "a much longer sentence " * 10]
    assert ours.max_seq_length == theirs.max_seq_length == 24
    np.testing.assert_allclose(ours.encode(texts), theirs.encode(texts), atol=1e-5)
    ours.save(str(tmp_path / "saved"))
    again = st.SentenceTransformer(str(tmp_path / "saved"), device="cpu")
    np.testing.assert_allclose(again.encode(texts), ours.encode(texts), atol=1e-5)


def test_a_query_document_router_with_6_2s_argument_names_encodes_as_6_2s(bert):
    built = {}
    for lib in (sbert, st):
        models = importlib.import_module(f"{lib.__name__}.sentence_transformer.modules")
        transformer = models.Transformer(str(bert))
        width = transformer.get_embedding_dimension()
        query = [transformer, models.Pooling(width, "cls")]
        router = models.Router.for_query_document(query_modules=query, document_modules=[transformer,
                                                  models.Pooling(width, "mean")], allow_empty_key=True)  # fmt: skip
        built[lib] = lib.SentenceTransformer(modules=[router], device="cpu")
    for side in ("encode_query", "encode_document"):
        ours, theirs = getattr(built[sbert], side)(CORPUS[:4]), getattr(built[st], side)(CORPUS[:4])
        np.testing.assert_allclose(ours, theirs, atol=1e-5, err_msg=side)
    assert not np.allclose(built[sbert].encode_query(CORPUS[:4]), built[sbert].encode_document(CORPUS[:4]))


def test_legacy_fit_on_a_no_duplicates_loader_trains_as_6_2(bert):
    vectors = []
    for lib in (st, sbert):
        model = built(lib, bert)
        datasets = importlib.import_module(f"{lib.__name__}.datasets")
        readers = importlib.import_module(f"{lib.__name__}.readers")
        examples = [readers.InputExample(texts=[a, p]) for a, p in zip(ANCHORS, POSITIVES, strict=True)]
        loader = datasets.NoDuplicatesDataLoader(examples, batch_size=ROWS)  # one batch: the same in both
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loss = importlib.import_module(f"{lib.__name__}.losses").MultipleNegativesRankingLoss(model)
            model.fit(train_objectives=[(loader, loss)], epochs=1, warmup_steps=0, optimizer_params={"lr": 1e-3},
                      show_progress_bar=False)  # fmt: skip
        vectors.append(model.encode(ANCHORS))
    moved = np.abs(vectors[0] - built(st, bert).encode(ANCHORS)).max()
    assert moved > 1e-3  # the reference did train
    # Adam turns rounding differences in near-zero gradients into lr-sized steps: held against the move.
    assert np.abs(vectors[1] - vectors[0]).max() <= 0.02 * moved, (np.abs(vectors[1] - vectors[0]).max(), moved)


def test_what_sbert_cannot_build_is_one_line(bert):
    with pytest.raises(SbertError, match="modality_config not supported"):
        sbert.models.Transformer(str(bert), modality_config={"image": {}})
    with pytest.raises(SbertError, match=r"not a torch\.nn module"):
        sbert.models.Dense(4, 2, activation_function=torch.tanh)
    same = [sbert.InputExample(texts=["a", "b"]), sbert.InputExample(texts=["a", "c"])]
    with pytest.raises(ValueError, match="without a text in common"):
        next(iter(sbert.datasets.NoDuplicatesDataLoader(same, batch_size=2)))


def test_the_tsdae_script_trains_as_6_2(tmp_path):
    from torch.utils.data import DataLoader

    from tests.st_training_fixtures import tiny_st_folder

    folder = tiny_st_folder(tmp_path)
    sentences = [*ANCHORS, *POSITIVES][:ROWS]
    vectors = []
    for lib in (st, sbert):
        model = lib.SentenceTransformer(str(folder), device="cpu")
        # 6.2's default noise needs nltk's downloaded tokenizer data: both take the same fixed damage here.
        data = importlib.import_module(f"{lib.__name__}.datasets").DenoisingAutoEncoderDataset(
            sentences, noise_fn=lambda s: " ".join(s.split()[::2])
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.manual_seed(0)  # the decoder's new cross-attention starts alike in both
            loss = importlib.import_module(f"{lib.__name__}.losses").DenoisingAutoEncoderLoss(model)
            loader = DataLoader(data, batch_size=ROWS, shuffle=True)
            model.fit(train_objectives=[(loader, loss)], epochs=1, weight_decay=0, scheduler="constantlr",
                      optimizer_params={"lr": 1e-3}, show_progress_bar=False)  # fmt: skip
        vectors.append(model.encode(sentences))
    moved = np.abs(vectors[0] - st.SentenceTransformer(str(folder), device="cpu").encode(sentences)).max()
    assert moved > 1e-3
    assert np.abs(vectors[1] - vectors[0]).max() <= 0.02 * moved, (np.abs(vectors[1] - vectors[0]).max(), moved)


def test_tsdae_noise_and_refusals(bert):
    np.random.seed(0)
    damaged = sbert.datasets.DenoisingAutoEncoderDataset.delete("one two three four five six", del_ratio=0.6)
    words = damaged.split()
    assert 1 <= len(words) < 6 and words == [w for w in ["one", "two", "three", "four", "five", "six"] if w in words]
    assert sbert.datasets.DenoisingAutoEncoderDataset.delete("only", del_ratio=1.0) == "only"  # one word kept
    example = sbert.datasets.DenoisingAutoEncoderDataset(["a b"], noise_fn=str.upper)[0]
    assert example.texts == ["A B", "a b"]
    model = sbert.SentenceTransformer(modules=[sbert.models.Transformer(str(bert)), sbert.models.Pooling(32)])
    with pytest.raises(ValueError, match="decoder_name_or_path"):
        sbert.losses.DenoisingAutoEncoderLoss(model, tie_encoder_decoder=False)
