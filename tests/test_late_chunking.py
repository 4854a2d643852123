"""Late chunking (encoding/late_chunking.py) against its definition, computed here from the Hugging Face model itself:
each chunk's vector is the mean of one pass's token vectors whose offsets start in the chunk, specials and prompt
tokens in no chunk, then the chain's Normalize; past the limit, each token from the window where it has most context."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from transformers import AutoModel, AutoTokenizer

from sbert import SentenceEncoder
from sbert.encoding.late_chunking import best_window, sentence_spans, token_budget_spans, window_starts
from sbert.errors import SbertError

TEXT = "The cat sat on the mat. A dog runs in the park! Is the man playing a guitar? The cat sat."


@pytest.fixture(scope="module")
def tiny(tiny_dirs):
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], normalize=True, device="cpu")
    return model, AutoModel.from_pretrained(tiny_dirs["bert"]).eval(), AutoTokenizer.from_pretrained(tiny_dirs["bert"])


def reference(hf, tokenizer, text: str, spans, prompt: str = "") -> np.ndarray:
    """The definition, from the Hugging Face model: one pass over prompt + text, means over each span, unit rows."""
    enc = tokenizer(prompt + text, return_offsets_mapping=True, return_special_tokens_mask=True, return_tensors="pt")
    with torch.no_grad():
        tokens = hf(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).last_hidden_state[0]
    starts = enc["offset_mapping"][0, :, 0] - len(prompt)
    text_token = (enc["special_tokens_mask"][0] == 0) & (enc["offset_mapping"][0, :, 0] >= len(prompt))
    rows = [tokens[text_token & (starts >= a) & (starts < b)].mean(0) for a, b in spans]
    out = torch.stack(rows)
    return (out / out.norm(dim=1, keepdim=True)).numpy()


def test_each_chunk_is_the_mean_of_one_pass_over_the_whole_text(tiny):
    model, hf, tokenizer = tiny
    spans = sentence_spans(TEXT)
    assert len(spans) == 4 and TEXT[spans[1][0] : spans[1][1]] == "A dog runs in the park!"
    got = model.encode_document([TEXT, TEXT[:47]], chunks=[spans, sentence_spans(TEXT[:47])])
    assert [g.shape for g in got] == [(4, 32), (2, 32)] and got[0].dtype == np.float32
    np.testing.assert_allclose(got[0], reference(hf, tokenizer, TEXT, spans), atol=1e-5)
    # the same sentence in two places of one text: same words, other context, other vectors
    assert np.abs(got[0][0] - got[0][3]).max() > 1e-3
    alone = model.encode([TEXT[a:b] for a, b in spans], normalize=True)  # plain chunking sees one sentence
    assert np.abs(alone - got[0]).max() > 1e-3


def test_a_document_prompt_is_in_the_pass_but_in_no_chunk(tiny):
    model, hf, tokenizer = tiny
    model.settings.prompts = {"document": "passage: "}
    try:
        spans = [(0, 23), (4, 60)]  # overlapping chunks are allowed: a token counts in each
        got = model.encode_document([TEXT], chunks=[spans])[0]
    finally:
        model.settings.prompts = {}
    np.testing.assert_allclose(got, reference(hf, tokenizer, TEXT, spans, prompt="passage: "), atol=1e-5)


def test_past_the_limit_each_token_comes_from_the_window_with_the_most_context(tiny):
    model, hf, tokenizer = tiny
    long_text = " ".join([TEXT] * 3)
    ids = tokenizer(long_text, add_special_tokens=False, return_offsets_mapping=True)
    n, capacity = len(ids["input_ids"]), 14
    starts = window_starts(n, capacity)
    assert len(starts) > 2 and starts[-1] == n - capacity and starts[1] == capacity // 2
    owner = best_window(n, starts, capacity)
    vectors = torch.zeros((n, 32))
    with torch.no_grad():  # each window alone through the Hugging Face model, [CLS] window [SEP]
        for w, s in enumerate(starts):
            row = [tokenizer.cls_token_id, *ids["input_ids"][s : s + capacity], tokenizer.sep_token_id]
            hidden = hf(input_ids=torch.tensor([row])).last_hidden_state[0, 1:-1]
            for j in np.flatnonzero(owner == w):
                vectors[j] = hidden[j - s]
    token_starts = np.asarray([a for a, _ in ids["offset_mapping"]])
    spans = sentence_spans(long_text)
    want = torch.stack([vectors[torch.from_numpy((token_starts >= a) & (token_starts < b))].mean(0) for a, b in spans])
    old = model.input_module.max_seq_length
    model.input_module.max_seq_length = capacity + 2
    try:
        got = model.encode_document([long_text], chunks=[spans])[0]
    finally:
        model.input_module.max_seq_length = old
    np.testing.assert_allclose(got, (want / want.norm(dim=1, keepdim=True)).numpy(), atol=1e-5)


def test_window_choice_keeps_the_most_context():
    starts = window_starts(10, 4)  # windows [0,4) [2,6) [4,8) [6,10)
    assert starts == [0, 2, 4, 6]
    assert best_window(10, starts, 4).tolist() == [0, 0, 0, 1, 1, 2, 2, 3, 3, 3]
    assert window_starts(4, 4) == [0]


@pytest.mark.parametrize(
    ("chunks", "words"),
    [
        ([[(23, 24)]], r"chunks\[0\]\[0\] = \(23, 24\) holds no token of text 0"),  # a space alone
        ([[(0, 500)]], r"chunks\[0\]\[0\] = \(0, 500\) is not within text 0"),
        ([[(5, 3)]], r"is not within text 0"),
        ([[(0, 4)], [(0, 4)]], r"2 span lists for 1 texts"),
        ([[]], r"chunks\[0\] is empty"),
        ([[(0, "4")]], r"two integers"),
    ],
)
def test_bad_spans_are_one_line_errors(tiny, chunks, words):
    model, _, _ = tiny
    with pytest.raises(SbertError, match=words):
        model.encode_document([TEXT], chunks=chunks)


def test_span_helpers_cover_the_text(tiny):
    _, _, tokenizer = tiny
    pieces = token_budget_spans(tokenizer, TEXT, 5)
    assert pieces[0][0] == 0 and pieces[-1][1] == len(TEXT)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(pieces))  # contiguous, nothing lost
    assert all(len(tokenizer(TEXT[a:b], add_special_tokens=False)["input_ids"]) <= 6 for a, b in pieces)
    assert sentence_spans("  One.  Two?Three ") == [(2, 6), (8, 17)]  # no ? split without a space; ends trimmed
