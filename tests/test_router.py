"""Router and StaticEmbedding in sentence-transformers' layouts: saved by either library, loaded by the other
with the same vectors; routes picked by encode_query / encode_document / task, the default route otherwise."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer import modules as st_modules
from tokenizers import Tokenizer

from sbert import SentenceEncoder
from sbert.errors import BackendError, ModelFormatError
from sbert.modules import RouteError, Router, StaticEmbedding, Transformer

TEXTS = ["A man is playing a guitar.", "ok", "", "The quarterly report, delayed twice, shows revenue growing."]
TOL = {"rtol": 1e-5, "atol": 1e-6}


def st_static(tiny_dirs, dim: int) -> st_modules.StaticEmbedding:
    """sentence-transformers' StaticEmbedding on the tiny BERT's tokenizer, random table."""
    tokenizer = Tokenizer.from_file(str(tiny_dirs["bert"] / "tokenizer.json"))
    torch.manual_seed(1)
    return st_modules.StaticEmbedding(tokenizer, embedding_weights=torch.randn(tokenizer.get_vocab_size(), dim))


def st_asymmetric(tiny_dirs) -> SentenceTransformer:
    """The static-query / transformer-document layout (static-retrieval models, inference-free queries), + Normalize."""
    transformer = st_modules.Transformer(str(tiny_dirs["bert"]))
    width = transformer.get_embedding_dimension()
    router = st_modules.Router.for_query_document(
        query_modules=[st_static(tiny_dirs, width)], document_modules=[transformer, st_modules.Pooling(width, "mean")]
    )
    return SentenceTransformer(modules=[router, st_modules.Normalize()], device="cpu")


def test_router_loads_both_ways_with_each_routes_vectors(tiny_dirs, tmp_path):
    st = st_asymmetric(tiny_dirs)
    st.save(str(tmp_path / "st"))
    queries, documents, plain = st.encode_query(TEXTS), st.encode_document(TEXTS), st.encode(TEXTS)
    assert not np.allclose(queries, documents, atol=1e-3)  # two different routes, or the test proves nothing
    ours = SentenceEncoder.load(tmp_path / "st", device="cpu")
    assert isinstance(ours.router, Router) and ours.router.default_route == "document"
    np.testing.assert_allclose(ours.encode_query(TEXTS), queries, **TOL)
    np.testing.assert_allclose(ours.encode_document(TEXTS), documents, **TOL)
    np.testing.assert_allclose(ours.encode(TEXTS), plain, **TOL)  # no task: the default route
    np.testing.assert_allclose(ours.encode(TEXTS, task="query"), queries, **TOL)
    ours.save(tmp_path / "back")
    back = SentenceTransformer(str(tmp_path / "back"), device="cpu")
    np.testing.assert_allclose(back.encode_query(TEXTS), queries, **TOL)
    np.testing.assert_allclose(back.encode_document(TEXTS), documents, **TOL)
    again = SentenceEncoder.load(tmp_path / "back", device="cpu")
    np.testing.assert_allclose(again.encode_query(TEXTS), queries, **TOL)


def test_a_router_embeds_counted_token_rows_with_each_tasks_route(tiny_dirs, tmp_path):
    st_asymmetric(tiny_dirs).save(str(tmp_path / "st"))
    ours = SentenceEncoder.load(tmp_path / "st", device="cpu")
    for task in (None, "query", "document"):
        rows, _ = ours.token_rows(TEXTS, task)
        assert ours.token_lengths(TEXTS, task)[0] == [len(row) for row in rows]
        assert np.array_equal(ours.encode_token_rows(rows, task), ours.encode(TEXTS, task=task))
    # the static query route counts no special tokens, the transformer's document route does
    assert ours.token_rows(["ok"], "query")[0] != ours.token_rows(["ok"], "document")[0]


def test_route_mappings_and_a_shared_module(tiny_dirs, tmp_path):
    transformer = st_modules.Transformer(str(tiny_dirs["bert"]))
    width = transformer.get_embedding_dimension()
    pooling = st_modules.Pooling(width, "mean")
    torch.manual_seed(2)
    router = st_modules.Router(
        {"short": [transformer, pooling, st_modules.Dense(width, 8)], "long": [transformer, pooling,
                                                                             st_modules.Dense(width, 8)]},
        default_route="long", route_mappings={("query", None): "short", (None, "text"): "long"},
    )  # fmt: skip
    st = SentenceTransformer(modules=[router], device="cpu")
    st.save(str(tmp_path / "st"))
    config = json.loads((tmp_path / "st" / "router_config.json").read_text())
    assert len(config["types"]) == 4  # the transformer and pooling both routes share are saved once
    ours = SentenceEncoder.load(tmp_path / "st", device="cpu")
    np.testing.assert_allclose(ours.encode_query(TEXTS), st.encode_query(TEXTS), **TOL)
    np.testing.assert_allclose(ours.encode_document(TEXTS), st.encode_document(TEXTS), **TOL)
    np.testing.assert_allclose(ours.encode(TEXTS), st.encode(TEXTS), **TOL)
    assert ours.routed("query")[0] is ours.routed("document")[0]  # one set of weights, as saved
    ours.save(tmp_path / "back")
    assert len(json.loads((tmp_path / "back" / "router_config.json").read_text())["types"]) == 4
    np.testing.assert_allclose(SentenceTransformer(str(tmp_path / "back"), device="cpu").encode_query(TEXTS),
                               st.encode_query(TEXTS), **TOL)  # fmt: skip


def test_a_missing_route_is_one_line(tiny_dirs, tmp_path):
    transformer = st_modules.Transformer(str(tiny_dirs["bert"]))
    pooling = st_modules.Pooling(transformer.get_embedding_dimension(), "mean")
    router = st_modules.Router({"document": [transformer, pooling]}, default_route="document")
    SentenceTransformer(modules=[router], device="cpu").save(str(tmp_path / "st"))
    ours = SentenceEncoder.load(tmp_path / "st", device="cpu")
    assert ours.encode(TEXTS).shape[0] == len(TEXTS)
    with pytest.raises(RouteError, match=r"no route for task='query'; its routes: document") as caught:
        ours.encode_query(TEXTS)
    assert "\n" not in str(caught.value)
    with pytest.raises(ValueError, match="No route found for task type 'query'"):  # as sentence-transformers does
        SentenceTransformer(str(tmp_path / "st"), device="cpu").encode_query(TEXTS)


def test_router_config_errors_name_the_file(tiny_dirs, tmp_path):
    st_asymmetric(tiny_dirs).save(str(tmp_path / "m"))
    config_path = tmp_path / "m" / "router_config.json"
    config = json.loads(config_path.read_text())
    config["parameters"]["default_route"] = "nowhere"
    config_path.write_text(json.dumps(config))
    with pytest.raises(ModelFormatError, match=r"route 'nowhere' is not one of \['document', 'query'\]"):
        SentenceEncoder.load(tmp_path / "m", device="cpu")
    config["parameters"]["default_route"] = "document"
    config["structure"]["query"] = ["no_such_module"]
    config_path.write_text(json.dumps(config))
    with pytest.raises(ModelFormatError, match=r"router_config.json: 'structure' names module 'no_such_module'"):
        SentenceEncoder.load(tmp_path / "m", device="cpu")


def test_static_embedding_starts_a_chain_through_the_one_loader(tiny_dirs, tmp_path):
    st = SentenceTransformer(modules=[st_static(tiny_dirs, 12), st_modules.Normalize()], device="cpu")
    st.save(str(tmp_path / "st"))
    want = st.encode(TEXTS)
    ours = SentenceEncoder.load(tmp_path / "st", device="cpu")
    assert isinstance(ours[0], StaticEmbedding) and ours.embedding_dimension == 12
    np.testing.assert_allclose(ours.encode(TEXTS), want, **TOL)
    long_text = " ".join(["guitar"] * 5000)  # no position limit: nothing is cut, nothing warned
    np.testing.assert_allclose(ours.encode([long_text]), st.encode([long_text]), **TOL)
    ours.save(tmp_path / "back")
    assert not (tmp_path / "back" / "config.json").exists()  # no Hugging Face config at the root, as ST writes
    np.testing.assert_allclose(SentenceTransformer(str(tmp_path / "back"), device="cpu").encode(TEXTS), want, **TOL)
    with pytest.raises(BackendError, match=r"backend 'onnx' exports a Transformer chain; this model starts with"):
        ours.encode(TEXTS, backend="onnx")


def test_static_embedding_trains(tiny_dirs, tmp_path):
    st = SentenceTransformer(modules=[st_static(tiny_dirs, 12)], device="cpu")
    st.save(str(tmp_path / "st"))
    ours = SentenceEncoder.load(tmp_path / "st", device="cpu")
    before = ours.encode(TEXTS[:2])
    ours.train()
    features = ours.tokenize(TEXTS[:2])
    loss = ours(features)["sentence_embedding"].pow(2).sum()
    loss.backward()
    with torch.no_grad():
        for p in ours.parameters():
            p -= 0.5 * p.grad
    assert not np.allclose(ours.encode(TEXTS[:2]), before)  # the cached backend saw the step


def test_static_encoder_files_load_as_a_sentence_encoder(tiny_dirs, tmp_path):
    from sbert import StaticEncoder

    st = SentenceTransformer(modules=[st_static(tiny_dirs, 12)], device="cpu")
    st.save(str(tmp_path / "st"))
    shutil.copytree(tmp_path / "st", tmp_path / "copy")
    numpy_path = StaticEncoder.load(tmp_path / "copy").encode(TEXTS)
    np.testing.assert_allclose(SentenceEncoder.load(tmp_path / "st", device="cpu").encode(TEXTS), numpy_path,
                               rtol=1e-5, atol=1e-6)  # fmt: skip


def test_serve_routes_each_input_type(tiny_dirs, tmp_path):
    import httpx

    from tests.serve_helpers import serve_in_thread

    st_asymmetric(tiny_dirs).save(str(tmp_path / "m"))
    model = SentenceEncoder.load(tmp_path / "m", device="cpu")
    server = serve_in_thread("--model", str(tmp_path / "m"))
    try:
        texts = TEXTS[:2] + TEXTS[3:]  # the server refuses empty inputs
        for kind, want in (("query", model.encode_query(texts)), ("document", model.encode_document(texts)),
                           (None, model.encode(texts))):  # fmt: skip
            body = {"input": texts, "model": "m", **({"input_type": kind} if kind else {})}
            answer = httpx.post(server.url + "/v1/embeddings", json=body, timeout=60)
            assert answer.status_code == 200, answer.text
            got = np.array([d["embedding"] for d in answer.json()["data"]])
            np.testing.assert_allclose(got, want, atol=1e-5, err_msg=str(kind))
    finally:
        assert server.stop()


def test_training_a_router_model_is_refused_in_one_line(tiny_dirs, tmp_path):
    from sbert.data.common import Dataset
    from sbert.training import Objective, Stage
    from sbert.training.setup import prepare_objectives

    st_asymmetric(tiny_dirs).save(str(tmp_path / "m"))
    model = SentenceEncoder.load(tmp_path / "m", device="cpu")
    stage = Stage(objectives=(Objective("mnrl", "unused"),))
    data = Dataset("pairs", "pairs", [("a query", "a document")] * 4)
    with pytest.raises(ValueError, match="starts with a Router is not supported"):
        prepare_objectives(model, stage, [data])


def test_a_router_reports_its_largest_route_limit_as_sentence_transformers_does(tiny_dirs, tmp_path):
    query, document = st_modules.Transformer(str(tiny_dirs["bert"])), st_modules.Transformer(str(tiny_dirs["bert"]))
    query.max_seq_length, document.max_seq_length = 24, 16
    width = query.get_embedding_dimension()
    router = st_modules.Router.for_query_document(
        query_modules=[query, st_modules.Pooling(width, "mean")],
        document_modules=[document, st_modules.Pooling(width, "mean")],
    )
    st = SentenceTransformer(modules=[router], device="cpu")
    st.save(str(tmp_path / "st"))
    reference = SentenceTransformer(str(tmp_path / "st"), device="cpu").max_seq_length
    ours = SentenceEncoder.load(tmp_path / "st", device="cpu")
    assert ours.router.default_route == "document" and ours.max_seq_length == reference == 24


def test_a_router_loaded_in_bf16_holds_every_routes_transformer_in_bf16(tiny_dirs, tmp_path):
    st_asymmetric(tiny_dirs).save(str(tmp_path / "st"))
    ours = SentenceEncoder.load(tmp_path / "st", device="cpu", dtype="bf16")
    transformers = [m for m in ours.modules() if isinstance(m, Transformer)]
    assert transformers and {p.dtype for t in transformers for p in t.parameters()} == {torch.bfloat16}
