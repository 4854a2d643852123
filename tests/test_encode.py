"""encode(): shapes, order, batch independence, bad input and truncation on tiny encoders."""

import warnings

import numpy as np
import pytest
import torch

from sbert import SentenceEncoder
from sbert.errors import TruncationError
from tests.tiny_models import CORPUS

SENTENCES = [*CORPUS, "", "a", "the the the the the cat cat cat on on the mat mat " * 2]


@pytest.fixture(scope="module")
def model(tiny_dir) -> SentenceEncoder:
    return SentenceEncoder.from_transformer(tiny_dir, device="cpu")


def test_shapes_and_dtype(model):
    out = model.encode(SENTENCES)
    assert out.shape == (len(SENTENCES), model.embedding_dimension) and out.dtype == np.float32
    assert model.encode("the cat").shape == (model.embedding_dimension,)
    assert model.encode([]).shape == (0, model.embedding_dimension)
    assert np.isfinite(model.encode([""])).all()


def test_rows_follow_input_order(model):
    out = model.encode(SENTENCES, batch_size=3)
    reversed_out = model.encode(SENTENCES[::-1], batch_size=3)
    np.testing.assert_allclose(out, reversed_out[::-1], atol=1e-5)


def test_embedding_does_not_depend_on_batch_neighbours(model):
    alone = np.stack([model.encode(s) for s in SENTENCES])
    for batch_size in (2, 5, 64):
        together = model.encode(SENTENCES, batch_size=batch_size)
        assert np.abs(together - alone).max() <= 1e-5


def test_normalize_gives_unit_vectors(model):
    norms = np.linalg.norm(model.encode(CORPUS, normalize=True), axis=1)
    np.testing.assert_allclose(norms, 1.0, atol=1e-5)


def test_torch_output(model):
    out = model.encode(CORPUS[:2], convert_to="torch")
    assert isinstance(out, torch.Tensor) and out.shape == (2, model.embedding_dimension)


@pytest.mark.parametrize("bad,name", [(None, "NoneType"), (b"bytes", "bytes"), (7, "int")])
def test_non_string_item_names_index_and_type(model, bad, name):
    with pytest.raises(TypeError, match=rf"sentences\[2\] is {name}"):
        model.encode(["a", "b", bad])


@pytest.mark.parametrize("size", [0, -3])
def test_bad_batch_size(model, size):
    with pytest.raises(ValueError, match="batch_size"):
        model.encode(["a"], batch_size=size)


def test_long_input_is_truncated_warned_once_and_equals_its_prefix(model):
    words = ["the", "cat", "sat", "on", "the", "mat"]
    long_text = " ".join(words * 200_000)  # ~1 MB
    limit = model.max_seq_length
    with pytest.warns(UserWarning, match=r"2 of 3 inputs exceeded max_seq_length") as record:
        out = model.encode([long_text, "a", long_text])
    assert len(record) == 1
    # The tokens kept are the first limit-2 (plus two special tokens): a short prefix gives the same vector.
    ids = model.transformer.token_ids([long_text])[0][0]
    assert len(ids) == limit
    prefix = model.transformer.tokenizer.decode(ids[1:-1])
    np.testing.assert_allclose(out[0], model.encode(prefix), atol=1e-5)


def test_exactly_full_input_is_not_reported(model):
    tok = model.transformer
    text = " ".join(["cat"] * 200)
    ids = tok.token_ids([text])[0][0]
    exact = tok.tokenizer.decode(ids[1:-1])
    assert len(tok.token_ids([exact])[0][0]) == model.max_seq_length
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.encode([exact])


def test_truncation_can_be_refused(model):
    with pytest.raises(TruncationError, match="truncation refused"):
        model.encode(["cat " * 500], on_truncation="error")


def test_max_seq_length_is_validated(model):
    with pytest.raises(ValueError, match="max_seq_length must be in"):
        model.max_seq_length = 10_000


TRICKY = {
    "long words": " ".join(["cat"] * 5000),
    "no whitespace": "catsat" * 3000,
    "whitespace runs": ("cat" + " " * 900) * 40,
    "huge unknown words": " ".join(["x" * 150] * 100),
    "newlines": "the cat\n" * 2000,
    "short": "the cat sat",
}


@pytest.mark.parametrize("name", sorted(TRICKY))
def test_token_ids_match_the_plain_tokenizer(model, name):
    text = TRICKY[name]
    transformer = model.transformer
    limit = transformer.max_seq_length
    ids, cut = transformer.token_ids([text])
    full = transformer.tokenizer(text)["input_ids"]
    expected = transformer.tokenizer(text, truncation=True, max_length=limit)["input_ids"]
    assert ids[0] == expected
    assert cut == ([0] if len(full) > limit else [])


def test_fast_token_ids_equal_the_tokenizer_on_real_sentences(sts_test_path):
    # token_ids goes through the Rust tokenizer's encode_batch_fast; it must give what tokenizer(...) gives
    transformer = SentenceEncoder.load("all-MiniLM-L6-v2", device="cpu").transformer
    rows = [line.split("\t") for line in sts_test_path.read_text(encoding="utf-8").splitlines()]
    texts = [r[5] for r in rows] + [r[6] for r in rows] + ["word " * 400, "ünïcödé ß 漢字 🙂 " * 40]
    limit = transformer.max_seq_length
    assert transformer.fast_tokenizer(limit) is not None  # the fast path is the one under test
    expected = transformer.tokenizer(texts, truncation=True, max_length=limit)["input_ids"]
    assert transformer.token_ids(texts)[0] == [list(row) for row in expected]
