"""One tokenizer policy for every caller: the model's limit, its truncation side, no saved padding."""

from __future__ import annotations

import json

import numpy as np

from sbert import CrossEncoder, SentenceEncoder
from sbert.modules.transformer import cut_at_space
from tests.tiny_models import CORPUS, save_tiny_reranker

# Far over the tiny models' 64 tokens, with a start and an end in different words of their vocabulary.
LONG = " ".join([CORPUS[0]] * 30 + [CORPUS[2]] * 30)


def left_truncated(folder) -> None:
    path = folder / "tokenizer_config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**config, "truncation_side": "left"}), encoding="utf-8")


def test_left_truncation_keeps_the_end_as_sentence_transformers_does(tiny_dirs, tmp_path):
    from sentence_transformers import SentenceTransformer

    SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu").save(tmp_path / "m")
    right = SentenceEncoder.load(tmp_path / "m", device="cpu").encode([LONG, "short"], on_truncation="ignore")
    left_truncated(tmp_path / "m")
    ours = SentenceEncoder.load(tmp_path / "m", device="cpu").encode([LONG, "short"], on_truncation="ignore")
    reference = SentenceTransformer(str(tmp_path / "m"), device="cpu").encode([LONG, "short"])
    np.testing.assert_allclose(ours, reference, atol=1e-5)
    assert np.abs(ours[0] - right[0]).max() > 1e-3  # the end was kept, not the start
    np.testing.assert_allclose(ours[1], right[1], atol=1e-6)  # a short text is not cut at all


def test_the_cross_encoder_shares_the_truncation_side(tiny_dirs, tmp_path):
    folder = save_tiny_reranker(tiny_dirs["bert"], tmp_path / "rr")
    before = CrossEncoder.load(folder, device="cpu").classifier.pair_ids([("query", LONG)])[0]
    left_truncated(folder)
    after = CrossEncoder.load(folder, device="cpu").classifier.pair_ids([("query", LONG)])[0]
    assert len(before) == len(after) and before[-2] != after[-2]  # the document's last token kept, before [SEP]


def test_cutting_a_huge_text_keeps_the_side_that_will_be_tokenized():
    text = "alpha " * 1000 + "omega"
    assert cut_at_space(text, 100).startswith("alpha") and len(cut_at_space(text, 100)) <= 100
    kept = cut_at_space(text, 100, keep_end=True)
    assert kept.endswith("omega") and len(kept) <= 100 and not kept.startswith(" ")
