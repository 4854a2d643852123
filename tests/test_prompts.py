"""Prompts and truncate_dim as sentence-transformers stores them: same vectors in both libraries, both ways;
the Matryoshka loss against sentence-transformers' on the same batch."""

import json

import numpy as np
import pytest
import torch

from sbert import SentenceEncoder
from sbert.errors import SbertError
from sbert.losses.matryoshka import MatryoshkaLoss, parse_matryoshka
from sbert.losses.mnrl import MultipleNegativesRankingLoss

PROMPTS = {"query": "query: ", "document": "passage: "}
QUERIES = ["how do cats sleep", "a man plays the guitar on stage", "rain tomorrow?"]


@pytest.fixture(scope="module")
def st_with_prompts(tmp_path_factory):
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(SentenceEncoder.load().source_dir), device="cpu", prompts=PROMPTS)
    folder = tmp_path_factory.mktemp("st") / "m"
    st.save(str(folder))
    return st, folder


def test_prompts_saved_by_sentence_transformers_give_the_same_vectors(st_with_prompts):
    st, folder = st_with_prompts
    model = SentenceEncoder.load(folder, device="cpu")
    assert model.settings.prompts == PROMPTS
    assert np.abs(model.encode_query(QUERIES) - st.encode_query(QUERIES)).max() <= 1e-5
    assert np.abs(model.encode_document(QUERIES) - st.encode_document(QUERIES)).max() <= 1e-5
    assert np.abs(model.encode(QUERIES, prompt="x: ") - st.encode(QUERIES, prompt="x: ")).max() <= 1e-5
    assert np.abs(model.encode_query(QUERIES) - model.encode(QUERIES)).max() > 1e-3  # the prompt matters
    with pytest.raises(ValueError, match=r"unknown prompt_name 'qurey'; this model's prompts: .*'query'"):
        model.encode(QUERIES, prompt_name="qurey")


def test_prompts_left_out_of_pooling_both_ways(st_with_prompts, tmp_path):
    from sentence_transformers import SentenceTransformer

    st, folder = st_with_prompts
    st[1].include_prompt = False
    try:
        st.save(str(tmp_path / "excl"))
        model = SentenceEncoder.load(tmp_path / "excl", device="cpu")
        assert not model[1].include_prompt
        expected = st.encode_query(QUERIES)
    finally:
        st[1].include_prompt = True
    assert np.abs(model.encode_query(QUERIES) - expected).max() <= 1e-5
    assert np.abs(model.encode_query(QUERIES) - SentenceEncoder.load(folder).encode_query(QUERIES)).max() > 1e-3
    model.settings.default_prompt_name = "query"
    model.save(tmp_path / "back")
    config = json.loads((tmp_path / "back" / "config_sentence_transformers.json").read_text())
    assert config["prompts"] == PROMPTS and config["default_prompt_name"] == "query"
    back = SentenceTransformer(str(tmp_path / "back"), device="cpu")
    assert back.default_prompt_name == "query" and not back[1].include_prompt
    assert np.abs(back.encode(QUERIES) - model.encode(QUERIES)).max() <= 1e-5  # the default prompt, both sides


def test_truncate_dim_at_load_at_encode_and_saved(tmp_path):
    from sentence_transformers import SentenceTransformer

    model = SentenceEncoder.load(device="cpu", truncate_dim=64)
    st = SentenceTransformer(str(model.source_dir), device="cpu", truncate_dim=64)
    assert model.embedding_dimension == 64 and model.encode(QUERIES).shape == (3, 64)
    assert np.abs(model.encode(QUERIES) - st.encode(QUERIES)).max() <= 1e-5
    assert np.allclose(np.linalg.norm(model.encode(QUERIES, normalize=True), axis=1), 1, atol=1e-5)
    assert model.encode(QUERIES, truncate_dim=32).shape == (3, 32)
    model.save(tmp_path / "m")
    assert SentenceEncoder.load(tmp_path / "m").embedding_dimension == 64
    for bad in (0, 385, -1):
        with pytest.raises(ValueError, match="truncate_dim must be an integer in"):
            SentenceEncoder.load(device="cpu", truncate_dim=bad)


def test_matryoshka_equals_sentence_transformers_on_the_same_batch():
    from sentence_transformers.sentence_transformer import losses

    torch.manual_seed(0)
    anchors, positives = torch.randn(8, 384, requires_grad=True), torch.randn(8, 384, requires_grad=True)
    dims, weights = parse_matryoshka("384,256,128:0.5,64")
    ours = MatryoshkaLoss(None, MultipleNegativesRankingLoss(), dims, weights, width=384)
    got = ours.forward_features([{"sentence_embedding": anchors}, {"sentence_embedding": positives}], None)

    class Fixed(torch.nn.Module):  # hands the fixed batch's vectors to sentence-transformers' loss
        def forward(self, features):
            return {"sentence_embedding": features["v"]}

        def get_embedding_dimension(self):
            return 384

        def _get_untruncated_embedding_dimension(self):  # what 6.3's loss asks of a model
            return 384

    fixed = Fixed()  # one instance: the reference patches its forward to cut the vectors
    reference = losses.MatryoshkaLoss(fixed, losses.MultipleNegativesRankingLoss(fixed), list(dims), list(weights))
    want = reference([{"v": anchors}, {"v": positives}], torch.zeros(8))
    assert abs(float(got) - float(want)) <= 1e-5
    with pytest.raises(SbertError, match="larger than the model's 384"):
        MatryoshkaLoss(None, MultipleNegativesRankingLoss(), (512,), (1.0,), width=384)
    with pytest.raises(SbertError, match="DIM"):
        parse_matryoshka("384,big")


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_serve_input_type_puts_the_prompt_first(st_with_prompts, tmp_path):
    """The served vectors equal the library's for each input type, with a pooling that leaves the prompt out."""
    import httpx

    from tests.serve_helpers import serve_in_thread

    model = SentenceEncoder.load(st_with_prompts[1], device="cpu")
    model[1].include_prompt = False  # the server once prepended the prompt as text and pooled over it
    model.save(tmp_path / "excl")
    server = serve_in_thread("--model", str(tmp_path / "excl"))
    try:

        def embed(**extra: object) -> httpx.Response:
            body = {"input": QUERIES, "model": "excl", "encoding_format": "float", **extra}
            return httpx.post(server.url + "/v1/embeddings", json=body, timeout=60)

        for kind, want in (("query", model.encode_query(QUERIES)), ("document", model.encode_document(QUERIES))):
            got = np.array([d["embedding"] for d in embed(input_type=kind).json()["data"]])
            assert np.abs(got - want).max() <= 1e-5, kind
        plain = np.array([d["embedding"] for d in embed().json()["data"]])
        assert np.abs(plain - model.encode(QUERIES)).max() <= 1e-5  # no default prompt: none
        bad = embed(input_type="passage")
        assert bad.status_code == 422 and "input_type" in bad.text
    finally:
        assert server.stop()


def test_objectives_put_a_prompt_on_each_column(st_with_prompts):
    from sbert.data.common import Dataset
    from sbert.training import Objective, Stage
    from sbert.training.setup import prepare_objectives

    model = SentenceEncoder.load(st_with_prompts[1], device="cpu")
    data = Dataset("d", "pair", [("how do cats sleep", "cats sleep curled up")])
    stage = Stage((Objective("mnrl", "d", {"prompts": "query,document"}),))
    prepared = prepare_objectives(model, stage, [data])[0]
    tokenizer = model.transformer.tokenizer
    assert tokenizer.decode(prepared.columns[0][0], skip_special_tokens=True).startswith("query :")
    assert tokenizer.decode(prepared.columns[1][0], skip_special_tokens=True).startswith("passage :")
    with pytest.raises(ValueError, match="unknown prompt_name 'answer'"):
        prepare_objectives(model, Stage((Objective("mnrl", "d", {"prompts": "query,answer"}),)), [data])


@pytest.fixture(scope="module")
def default_prompt_only(tmp_path_factory):
    """A folder with a default prompt and no query or document prompt (as older savers wrote it)."""
    from sentence_transformers import SentenceTransformer

    folder = tmp_path_factory.mktemp("default-only") / "m"
    SentenceEncoder.load().save(folder)
    config_path = folder / "config_sentence_transformers.json"
    config = json.loads(config_path.read_text())
    config.update(prompts={"clf": "classify: ", "passage": "passage: "}, default_prompt_name="clf")
    config_path.write_text(json.dumps(config))
    return SentenceTransformer(str(folder), device="cpu"), folder


def test_tasks_never_fall_back_to_the_default_prompt(default_prompt_only):
    """sentence-transformers 6: encode_query / encode_document use their own prompt, "" when the folder has none."""
    import httpx

    from tests.serve_helpers import serve_in_thread

    st, folder = default_prompt_only
    model = SentenceEncoder.load(folder, device="cpu")
    for call in ("encode", "encode_query", "encode_document"):
        assert np.abs(getattr(model, call)(QUERIES) - getattr(st, call)(QUERIES)).max() <= 1e-5, call
    assert np.abs(model.encode_query(QUERIES) - model.encode(QUERIES)).max() > 1e-3  # the default matters
    server = serve_in_thread("--model", str(folder))
    try:
        for kind, want in (("query", st.encode_query(QUERIES)), ("document", st.encode_document(QUERIES))):
            body = {"input": QUERIES, "model": "m", "encoding_format": "float", "input_type": kind}
            got = httpx.post(server.url + "/v1/embeddings", json=body, timeout=60).json()["data"]
            assert np.abs(np.array([d["embedding"] for d in got]) - want).max() <= 1e-5, kind
    finally:
        assert server.stop()
