"""`from sbert import SentenceTransformer` against sentence-transformers 6.2's: each call run through both in this
process on the same folders (the default model, and it saved with prompts), compared on Python type, dtype, shape
and values (1e-5; quantized codes exact). The calls come from 6.2's documented `encode` arguments and methods."""

from __future__ import annotations

import textwrap
from typing import Any

import numpy as np
import pytest
import torch

from sbert import SentenceEncoder
from sbert import SentenceTransformer as Ours

st = pytest.importorskip("sentence_transformers")
SENTENCES = ["A man is eating food.", "A man is riding a horse.", "Someone is eating a meal.",
             "A cat sits on the mat.", "The stock market fell sharply today."]  # fmt: skip
PROMPTS = {"query": "query: ", "document": "passage: ", "clf": "classify: "}


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> tuple[Ours, Any]:
    folder = str(SentenceEncoder.load().source_dir)
    return Ours(folder, device="cpu"), st.SentenceTransformer(folder, device="cpu")


@pytest.fixture(scope="module")
def prompted(tmp_path_factory) -> tuple[Ours, Any]:
    path = tmp_path_factory.mktemp("prompted") / "m"
    st.SentenceTransformer(str(SentenceEncoder.load().source_dir), device="cpu", prompts=PROMPTS).save(str(path))
    return Ours(str(path), device="cpu"), st.SentenceTransformer(str(path), device="cpu")


def same(a: Any, b: Any, code_step: int = 0) -> None:
    """Same Python type, dtype, shape and values (1e-5; integer values exactly, or within `code_step`)."""
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            same(x, y, code_step)
    elif isinstance(a, torch.Tensor | np.ndarray):
        assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape), (a.dtype, b.dtype, a.shape, b.shape)
        np.testing.assert_allclose(np.asarray(a.cpu() if isinstance(a, torch.Tensor) else a, dtype=np.float64),
                                   np.asarray(b.cpu() if isinstance(b, torch.Tensor) else b, dtype=np.float64),
                                   atol=1e-5 if a.dtype in (np.float32, torch.float32) else code_step)  # fmt: skip
    else:
        assert a == b


ENCODE_CALLS = [
    {}, {"batch_size": 2}, {"show_progress_bar": False}, {"convert_to_tensor": True}, {"convert_to_numpy": False},
    {"normalize_embeddings": True}, {"truncate_dim": 64}, {"truncate_dim": 32, "normalize_embeddings": True},
    {"precision": "int8"}, {"precision": "uint8"}, {"precision": "binary"}, {"precision": "ubinary"},
    {"precision": "binary", "convert_to_tensor": True}, {"prompt": "Represent this: "},
    {"output_value": "sentence_embedding"}, {"device": "cpu"},
]  # fmt: skip


@pytest.mark.parametrize("call", ENCODE_CALLS, ids=str)
def test_encode(pair, call):
    ours, theirs = pair
    # int8 / uint8 codes are quantized from floats that agree to 1e-5, not to the bit (sbert's CPU forward
    # packs and multiplies with oneDNN): a value at a step's edge, such as the one that sets its range's end
    # (127 exactly before `astype` truncates it), can land one step apart. Packed bits stay exact.
    step = 1 if call.get("precision") in ("int8", "uint8") else 0
    same(ours.encode(SENTENCES, **call), theirs.encode(SENTENCES, **call), step)


@pytest.mark.parametrize("call", [{}, {"convert_to_tensor": True}, {"normalize_embeddings": True}], ids=str)
def test_encode_one_string(pair, call):
    ours, theirs = pair
    same(ours.encode(SENTENCES[0], **call), theirs.encode(SENTENCES[0], **call))


@pytest.mark.parametrize("call", [{}, {"batch_size": 2}, {"prompt": "Represent this: "}], ids=str)
def test_token_embeddings(pair, call):
    ours, theirs = pair
    same(ours.encode(SENTENCES, output_value="token_embeddings", **call),
         theirs.encode(SENTENCES, output_value="token_embeddings", **call))  # fmt: skip
    same(ours.encode(SENTENCES[1], output_value="token_embeddings"),
         theirs.encode(SENTENCES[1], output_value="token_embeddings"))  # fmt: skip


def test_every_output(pair):
    ours, theirs = pair
    mine, reference = ours.encode(SENTENCES, output_value=None), theirs.encode(SENTENCES, output_value=None)
    assert type(mine) is type(reference) is list and all(type(row) is dict for row in mine)
    same([row["sentence_embedding"] for row in mine], [row["sentence_embedding"] for row in reference])


@pytest.mark.parametrize("method", ["encode", "encode_query", "encode_document"])
@pytest.mark.parametrize("call", [{}, {"prompt_name": "clf"}, {"prompt": "x: "}, {"convert_to_tensor": True}], ids=str)
def test_prompts(prompted, method, call):
    ours, theirs = prompted
    same(getattr(ours, method)(SENTENCES, **call), getattr(theirs, method)(SENTENCES, **call))


@pytest.mark.parametrize("task", ["query", "document"])
@pytest.mark.parametrize("call", [{}, {"prompt_name": "clf"}, {"prompt": "x: "}], ids=str)
def test_a_task_routes_and_adds_no_prompt(prompted, task, call):
    """6.2's `encode(..., task=...)` only routes (a Router's branch): the task's prompt comes from encode_query only."""
    ours, theirs = prompted
    same(ours.encode(SENTENCES, task=task, **call), theirs.encode(SENTENCES, task=task, **call))


def test_similarity_and_getters(pair):
    ours, theirs = pair
    a, b = ours.encode(SENTENCES[:3]), ours.encode(SENTENCES[2:])
    same(ours.similarity(a, b), theirs.similarity(a, b))
    same(ours.similarity(torch.from_numpy(a), torch.from_numpy(b)), theirs.similarity(torch.from_numpy(a),
                                                                                      torch.from_numpy(b)))  # fmt: skip
    same(ours.similarity_pairwise(a, b), theirs.similarity_pairwise(a, b))
    assert ours.similarity_fn_name == theirs.similarity_fn_name == "cosine"
    assert ours.get_sentence_embedding_dimension() == theirs.get_sentence_embedding_dimension() == 384
    assert ours.max_seq_length == theirs.max_seq_length
    assert ours.tokenizer("a cat")["input_ids"] == theirs.tokenizer("a cat")["input_ids"]
    with ours.truncate_sentence_embeddings(16), theirs.truncate_sentence_embeddings(16):
        same(ours.encode(SENTENCES), theirs.encode(SENTENCES))
        assert ours.get_sentence_embedding_dimension() == theirs.get_sentence_embedding_dimension() == 16
    same(ours.encode(SENTENCES), theirs.encode(SENTENCES))  # restored


def test_current_names_and_settable_settings(pair):
    """6.2's current names (not the deprecated ones) and the settings a script assigns, each against 6.2."""
    ours, theirs = pair
    assert ours.get_embedding_dimension() == theirs.get_embedding_dimension() == 384
    assert ours.prompts == theirs.prompts and ours.default_prompt_name == theirs.default_prompt_name
    assert (ours.modalities, ours.supports("text"), ours.supports("image")) == (
        theirs.modalities, theirs.supports("text"), theirs.supports("image"))  # fmt: skip
    assert ours.model_type == theirs.model_type and ours.dtype == theirs.dtype
    assert ours.is_singular_input("a") == theirs.is_singular_input("a") and not ours.is_singular_input(["a"])
    with ours.truncate_embeddings(24), theirs.truncate_embeddings(24):
        same(ours.encode(SENTENCES), theirs.encode(SENTENCES))
        assert ours.get_embedding_dimension() == theirs.get_embedding_dimension() == 24
    ours.truncate_dim = theirs.truncate_dim = 48
    try:
        same(ours.encode(SENTENCES), theirs.encode(SENTENCES))
    finally:
        ours.truncate_dim = theirs.truncate_dim = None
    same(ours.encode(SENTENCES), theirs.encode(SENTENCES))
    for call in ({}, {"convert_to_tensor": True}, {"convert_to_numpy": False}):
        same(ours.encode([], **call), theirs.encode([], **call))
    mine, reference = ours.encode(SENTENCES[:2], output_value=None), theirs.encode(SENTENCES[:2], output_value=None)
    assert [sorted(row) for row in mine] == [sorted(row) for row in reference]
    assert [row["modality"] for row in mine] == [row["modality"] for row in reference]


def test_constructor_arguments_and_save_both_ways(tmp_path):
    folder = str(SentenceEncoder.load().source_dir)
    args = {"prompts": {"query": "q: "}, "truncate_dim": 128, "similarity_fn_name": "dot"}
    ours, theirs = Ours(folder, device="cpu", **args), st.SentenceTransformer(folder, device="cpu", **args)
    same(ours.encode_query(SENTENCES), theirs.encode_query(SENTENCES))
    same(ours.similarity(ours.encode(SENTENCES), ours.encode(SENTENCES)),
         theirs.similarity(theirs.encode(SENTENCES), theirs.encode(SENTENCES)))  # fmt: skip
    ours.save_pretrained(str(tmp_path / "saved"))
    same(st.SentenceTransformer(str(tmp_path / "saved"), device="cpu").encode_query(SENTENCES),
         theirs.encode_query(SENTENCES))  # fmt: skip


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_multi_process_pool(pair):
    ours, theirs = pair
    pool = ours.start_multi_process_pool(["cpu", "cpu"])
    try:
        same(ours.encode(SENTENCES * 4, pool=pool), theirs.encode(SENTENCES * 4))  # device=[...] takes the same path
    finally:
        ours.stop_multi_process_pool(pool)


def test_sbert_names_keep_working_and_meanings_do_not_change(pair):
    ours, _ = pair
    assert isinstance(ours, SentenceEncoder)  # one engine: the sentence-transformers name is a subclass
    np.testing.assert_array_equal(ours.encode(SENTENCES, compute_precision="fp32", backend="torch"),
                                  SentenceEncoder.load(device="cpu").encode(SENTENCES))  # fmt: skip
    with pytest.raises(Exception, match="compute_precision"):
        ours.encode(SENTENCES, precision="bf16")  # sbert's compute dtype has its own keyword here


# sentence-transformers' own usage examples (its documentation: semantic search, paraphrase mining,
# clustering, quantized embeddings), with the import line changed and nothing else.
EXAMPLE = """
from {lib} import SentenceTransformer, util

model = SentenceTransformer("{model}", device="cpu")
corpus = ["A man is eating food.", "A man is eating a piece of bread.", "The girl is carrying a baby.",
          "A man is riding a horse.", "A woman is playing violin.", "Two men pushed carts through the woods.",
          "A man is riding a white horse on an enclosed ground.", "A monkey is playing drums.",
          "A cheetah is running behind its prey."]
queries = ["A man is eating pasta.", "Someone in a gorilla costume is playing a set of drums."]
corpus_embeddings = model.encode(corpus, convert_to_tensor=True)
query_embeddings = model.encode(queries, convert_to_tensor=True)
hits = util.semantic_search(query_embeddings, corpus_embeddings, top_k=3)
scores = model.similarity(query_embeddings, corpus_embeddings)
pairs = util.paraphrase_mining(model, corpus)
clusters = util.community_detection(corpus_embeddings, min_community_size=2, threshold=0.5)
binary = util.quantize_embeddings(model.encode(corpus), precision="ubinary")
out = (hits, scores.tolist(), pairs, clusters, binary.tolist())
"""


def test_sentence_transformers_examples_run_with_only_the_import_changed():
    model = str(SentenceEncoder.load().source_dir)
    results = {}
    for lib in ("sentence_transformers", "sbert"):
        scope: dict[str, Any] = {}
        exec(textwrap.dedent(EXAMPLE.format(lib=lib, model=model)), scope)
        results[lib] = scope["out"]
    (hits, scores, pairs, clusters, binary), reference = results["sbert"], results["sentence_transformers"]
    assert [[h["corpus_id"] for h in q] for q in hits] == [[h["corpus_id"] for h in q] for q in reference[0]]
    np.testing.assert_allclose(scores, reference[1], atol=1e-5)
    assert [p[1:] for p in pairs] == [p[1:] for p in reference[2]]
    assert clusters == reference[3] and binary == reference[4]
