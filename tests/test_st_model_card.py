"""Model card data as 6.2's Training Overview passes it: README.md's header read back by the hub's own parser."""

from __future__ import annotations

import numpy as np
import pytest

import sbert
from sbert.errors import SbertError
from tests.st_training_fixtures import kind_folders

st = pytest.importorskip("sentence_transformers")
hub = pytest.importorskip("huggingface_hub")


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    return kind_folders(tmp_path_factory.mktemp("card"))


def card_of(folder):
    card = hub.ModelCard.load(folder / "README.md")
    return card.data.to_dict(), card.text


def test_training_overview_card_data_lands_in_readme_and_the_folder_still_loads(folders, tmp_path):
    data = sbert.SentenceTransformerModelCardData(language="en", license="apache-2.0",
                                                  model_name="MiniLM trained on AllNLI triplets")  # fmt: skip
    model = sbert.SentenceTransformer(str(folders["SentenceTransformer"]), device="cpu", model_card_data=data)
    assert model.model_card_data is data
    model.evaluation_metrics = {"sts-dev_spearman_cosine": 0.8123}  # what an evaluator leaves on the model
    model.save_pretrained(str(tmp_path / "out"), train_datasets=["sentence-transformers/all-nli"])
    meta, text = card_of(tmp_path / "out")
    assert meta["language"] == ["en"] and meta["license"] == "apache-2.0"
    assert meta["pipeline_tag"] == "sentence-similarity" and meta["library_name"] == "sentence-transformers"
    assert {"sentence-transformers", "dense", "sbert"} <= set(meta["tags"])
    assert meta["datasets"] == ["sentence-transformers/all-nli"]
    assert text.lstrip().startswith("# MiniLM trained on AllNLI triplets") and "0.8123" in text
    texts = ["a card on top", "weights unchanged"]
    np.testing.assert_allclose(st.SentenceTransformer(str(tmp_path / "out"), device="cpu").encode(texts),
                               model.encode(texts), atol=1e-5)  # fmt: skip


def test_each_kind_writes_its_own_pipeline_and_tags(folders, tmp_path):
    sparse = sbert.SparseEncoder(str(folders["SparseEncoder"]), device="cpu",
                                 model_card_data=sbert.SparseEncoderModelCardData(license="mit"))  # fmt: skip
    sparse.save(str(tmp_path / "sparse"))
    cross = sbert.CrossEncoder(str(folders["CrossEncoder"]), device="cpu")
    cross.save(str(tmp_path / "cross"), model_name="tiny reranker")
    sparse_meta, _ = card_of(tmp_path / "sparse")
    cross_meta, cross_text = card_of(tmp_path / "cross")
    assert sparse_meta["license"] == "mit" and "sparse-encoder" in sparse_meta["tags"]
    assert cross_meta["pipeline_tag"] == "text-ranking" and "reranker" in cross_meta["tags"]
    assert "language" not in cross_meta and cross_text.lstrip().startswith("# tiny reranker")
    st.SparseEncoder(str(tmp_path / "sparse"), device="cpu")  # both still load in 6.2
    st.CrossEncoder(str(tmp_path / "cross"), device="cpu")


def test_no_card_when_told_and_a_wrong_object_is_refused(folders, tmp_path):
    model = sbert.SentenceTransformer(str(folders["SentenceTransformer"]), device="cpu")
    model.save(str(tmp_path / "plain"), create_model_card=False)
    assert not (tmp_path / "plain" / "README.md").exists()
    model.save(str(tmp_path / "again"))  # the default card: no header fields it was not given
    meta, _ = card_of(tmp_path / "again")
    assert "license" not in meta and "language" not in meta
    with pytest.raises(SbertError, match="model_card_data: expected a SentenceTransformerModelCardData, got dict"):
        sbert.SentenceTransformer(str(folders["SentenceTransformer"]), device="cpu", model_card_data={"language": "en"})
