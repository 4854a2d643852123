"""Token-budget batching and the `chunk` policy for inputs beyond max_seq_length."""

import numpy as np
import pytest
import torch

from sbert import SentenceEncoder
from sbert.encoding.long_text import windows
from sbert.vectors.batching import length_order, token_batches
from tests.tiny_models import CORPUS


def test_token_batches_respect_budget_and_order():
    lengths = [5, 30, 7, 7, 12, 3, 30, 1]
    order = length_order(lengths)
    batches = token_batches(order, lengths, max_tokens=40, max_size=3)
    assert [i for b in batches for i in b] == order  # every index once, in order
    for batch in batches:
        assert len(batch) <= 3
        assert len(batch) == 1 or max(lengths[i] for i in batch) * len(batch) <= 40
    assert token_batches([0], [100], max_tokens=10, max_size=4) == [[0]]  # too long still runs alone
    with pytest.raises(ValueError):
        token_batches(order, lengths, 0, 3)


@pytest.fixture(scope="module")
def model(tiny_dirs) -> SentenceEncoder:
    encoder = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu", normalize=True)
    encoder.max_seq_length = 16
    return encoder


def test_token_budget_gives_the_same_vectors(model):
    texts = [*CORPUS, "dogs run " * 5]
    fixed = model.encode(texts, batch_size=2, on_truncation="ignore")
    budget = model.encode(texts, batch_tokens=40, on_truncation="ignore")
    assert np.abs(fixed - budget).max() <= 1e-5
    with pytest.raises(ValueError, match="batch_tokens"):
        model.encode(texts, batch_tokens=0)


def test_windows_cover_every_token_within_the_limit(model):
    text = " ".join(f"w{i % 7}" for i in range(60))
    rows = windows(model.transformer, text)
    body = model.transformer.tokenizer(text, add_special_tokens=False)["input_ids"]
    assert len(rows) > 1 and all(len(r) <= model.max_seq_length for r in rows)
    inner = [r[1:-1] for r in rows]  # BERT: [CLS] ... [SEP]
    width = model.max_seq_length - 2
    step = width - width // 4  # windows share a quarter of their tokens
    covered: set[int] = set()
    for k, part in enumerate(inner):
        assert part == body[k * step : k * step + width]
        covered.update(range(k * step, k * step + len(part)))
    assert covered == set(range(len(body)))
    assert windows(model.transformer, "short one")[0] == model.transformer.token_ids(["short one"])[0][0]


def test_chunk_is_the_mean_of_window_vectors(model):
    long_text = " ".join(["the cat sat on the mat"] * 8)
    got = model.encode(long_text, long_text="chunk")
    rows = windows(model.transformer, long_text)
    with torch.inference_mode():
        parts = model(model.transformer.pad(rows))["sentence_embedding"]
    expected = torch.nn.functional.normalize(parts.mean(0), dim=0).numpy()  # the chain ends normalized
    assert np.abs(got - expected).max() <= 1e-5
    short = model.encode(CORPUS, long_text="chunk")
    assert np.abs(short - model.encode(CORPUS)).max() <= 1e-6  # short inputs are untouched
    assert np.abs(got - model.encode(long_text, on_truncation="ignore")).max() > 1e-3


def test_chunk_raises_nothing_and_truncate_warns(model):
    long_text = "word " * 100
    with pytest.warns(UserWarning, match="truncated"):
        model.encode([long_text])
    model.encode([long_text], long_text="chunk", on_truncation="error")  # nothing is cut
    with pytest.raises(ValueError, match="long_text"):
        model.encode([long_text], long_text="split")  # type: ignore[arg-type]
