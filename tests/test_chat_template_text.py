"""A dense model whose tokenizer has a chat template, saved by sentence-transformers 6.3 (which writes a
`message` modality for it): its texts go through the template, its prompts in as system messages, its long
rows cut with the template's tail kept, as 6.3 encodes them; and the folder round-trips."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import sbert
from tests.tiny_models import CORPUS, build_qwen2

st = pytest.importorskip("sentence_transformers")

# Qwen's template, shortened: one line per message between <|im_start|> and <|im_end|> markers.
TEMPLATE = ("{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
            "{% endfor %}")  # fmt: skip
TEXTS = [*CORPUS[:3], "the cat sat on the mat " * 12]  # the last one is cut at the 64-token limit


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    from transformers import AutoTokenizer

    base = tmp_path_factory.mktemp("chat")
    qwen = build_qwen2(base / "qwen")
    tokenizer = AutoTokenizer.from_pretrained(qwen)
    tokenizer.chat_template = TEMPLATE
    tokenizer.save_pretrained(qwen)
    models = st.sentence_transformer.modules
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        transformer = models.Transformer(str(qwen))
        model = st.SentenceTransformer(modules=[transformer, models.Pooling(32, "lasttoken")], device="cpu",
                                       prompts={"query": "Find the sentence: "})  # fmt: skip
    model.save(str(base / "st"))
    return base / "st"


def reference(folder):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return st.SentenceTransformer(str(folder), device="cpu")


def test_the_fixture_is_what_the_issue_describes(folder):
    config = json.loads((folder / "sentence_bert_config.json").read_text())
    assert "message" in config["modality_config"]


def test_texts_prompts_and_cut_rows_are_encoded_as_sentence_transformers_encodes_them(folder):
    want, ours = reference(folder), sbert.load(str(folder))
    np.testing.assert_allclose(ours.encode(TEXTS), want.encode(TEXTS), atol=1e-5)
    np.testing.assert_allclose(ours.encode_query(TEXTS), want.encode_query(TEXTS), atol=1e-5)


def test_the_folder_round_trips_with_its_message_entry(folder, tmp_path):
    sbert.load(str(folder)).save(str(tmp_path / "again"))
    config = json.loads((tmp_path / "again" / "sentence_bert_config.json").read_text())
    assert "message" in config["modality_config"]
    np.testing.assert_allclose(reference(tmp_path / "again").encode(TEXTS), reference(folder).encode(TEXTS),
                               atol=1e-5)  # fmt: skip
