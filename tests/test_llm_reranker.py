"""LLM rerankers (issue 56, part 1): a causal LM scored by the logits of "yes" and "no" after a chat-rendered
(query, document) pair, as sentence-transformers 6.2's CrossEncoder runs the Qwen3-Reranker family (LogitScore).
Every score is checked against sentence-transformers itself, in this process, on the same folders."""

from __future__ import annotations

import httpx
import numpy as np
import pytest
import torch
from sentence_transformers import CrossEncoder as Reference

import sbert
from sbert.errors import ModelFormatError
from sbert.modules.logit_score import LogitPairScorer
from sbert.reranker.model import CrossEncoder
from sbert.reranker.shared_prefix import shared_prefix
from tests.llm_reranker_fixtures import build_causal_lm, save_st_reranker
from tests.serve_helpers import serve_in_thread

PROMPT = "Judge whether the Document answers the Query."
LONG = "A woman is playing the violin in a large hall in front of many people. " * 4
# Mixed lengths in one batch: short pairs, one cut at max_seq_length (its template ending written back), one empty.
PAIRS = [("A man is eating food.", "A man eats something."), ("Who plays guitar?", LONG), ("a", "b"),
         ("Who plays music?", "A man plays a guitar on stage."), ("", "The cat sleeps."),
         ("Is it raining?", "It rains in Paris.")]  # fmt: skip


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """The bare causal LM, and sentence-transformers' CrossEncoder on it saved with a limit and a prompt."""
    base = tmp_path_factory.mktemp("llm")
    lm = build_causal_lm(base / "lm")
    return lm, save_st_reranker(lm, base / "st", max_length=60, prompt=PROMPT)


@pytest.fixture(scope="module")
def reference(folders):
    return Reference(str(folders[1]), device="cpu")


def raw(model: Reference, pairs, **kw) -> np.ndarray:
    return model.predict(pairs, activation_fn=torch.nn.Identity(), **kw)


def test_scores_equal_sentence_transformers_on_pairs_of_mixed_lengths(folders, reference):
    mine = CrossEncoder.load(folders[1])
    assert isinstance(mine.classifier, LogitPairScorer) and mine.max_seq_length == 60
    scores = mine.predict(PAIRS, activation=False)
    assert scores.std() > 1.0  # the widened head: scores far apart, so 1e-4 says something
    np.testing.assert_allclose(scores, raw(reference, PAIRS), atol=1e-4)
    np.testing.assert_allclose(mine.predict(PAIRS), reference.predict(PAIRS), atol=1e-5)  # the saved Sigmoid
    cut = mine.classifier.over_limit(PAIRS)
    assert 1 in cut and 2 not in cut  # the long pair is cut, the shortest is not


def test_token_ids_are_the_reference_rendering_cut_with_the_ending_put_back(folders, reference):
    mine = CrossEncoder.load(folders[1]).classifier
    features = reference[0].preprocess(PAIRS)
    for i, row in enumerate(mine.pair_ids(PAIRS)):
        assert row == features["input_ids"][i][features["attention_mask"][i].bool()].tolist(), i
    ending = mine.template_ending()
    assert ending and mine.pair_ids(PAIRS)[1][-len(ending) :] == ending and len(mine.pair_ids(PAIRS)[1]) == 60


def test_the_tokenizers_truncation_side_holds_for_llm_rerankers(folders, tmp_path):
    """A tokenizer saved with truncation_side="left" keeps each over-long rendering's last tokens, as 6.2 does."""
    import json
    import shutil

    left = shutil.copytree(folders[1], tmp_path / "left")
    config = json.loads((left / "tokenizer_config.json").read_text(encoding="utf-8"))
    (left / "tokenizer_config.json").write_text(json.dumps({**config, "truncation_side": "left"}), encoding="utf-8")
    reference = Reference(str(left), device="cpu")
    mine = CrossEncoder.load(left)
    features = reference[0].preprocess(PAIRS)
    for i, row in enumerate(mine.classifier.pair_ids(PAIRS)):
        assert row == features["input_ids"][i][features["attention_mask"][i].bool()].tolist(), i
    scores = mine.predict(PAIRS, activation=False)
    np.testing.assert_allclose(scores, raw(reference, PAIRS), atol=1e-4)
    right = CrossEncoder.load(folders[1]).classifier.pair_ids(PAIRS[1:2])[0]
    assert mine.classifier.pair_ids(PAIRS[1:2])[0] != right  # the cut pair keeps its other end


def test_a_saved_prompt_is_the_system_turn(folders, reference):
    mine = CrossEncoder.load(folders[1])
    prompted = mine.predict(PAIRS, prompt_name="web", activation=False)
    np.testing.assert_allclose(prompted, raw(reference, PAIRS, prompt_name="web"), atol=1e-4)
    assert np.abs(prompted - mine.predict(PAIRS, activation=False)).max() > 1e-3
    assert PROMPT in mine.classifier.render(PAIRS[:1], PROMPT)[0]


def test_rank_orders_as_the_reference(folders, reference):
    """Every document's score as the reference's, and its order wherever two scores are apart.

    A random tiny model may score documents equal to 1e-9 (on one CPU all six tie): the order of exact
    ties is arbitrary in both libraries, so only scores more than 1e-5 apart must keep the reference's order.
    """
    docs = [d for _, d in PAIRS]
    mine = CrossEncoder.load(folders[1]).rank("Who plays music?", docs)
    theirs = reference.rank("Who plays music?", docs)
    score = {r["corpus_id"]: r["score"] for r in theirs}
    assert {r["corpus_id"] for r in mine} == set(score)
    np.testing.assert_allclose([r["score"] for r in mine], [score[r["corpus_id"]] for r in mine], atol=1e-5)
    position = {r["corpus_id"]: i for i, r in enumerate(mine)}
    for a in score:
        for b in score:
            if score[a] > score[b] + 1e-5:
                assert position[a] < position[b], (a, b, score[a], score[b])
    top = CrossEncoder.load(folders[1]).rank("Who plays music?", docs, top_k=4)
    np.testing.assert_allclose([r["score"] for r in top], [r["score"] for r in theirs[:4]], atol=1e-5)


@pytest.mark.parametrize("cache_bytes", [None, 1])  # 1: the cache copies' cap leaves one row a batch
def test_one_querys_shared_prefix_runs_once_and_scores_as_the_reference(cache_bytes, tmp_path, monkeypatch):
    from sbert.reranker import shared_prefix as module

    if cache_bytes is not None:
        monkeypatch.setattr(module, "CACHE_BYTES", cache_bytes)
    lm = build_causal_lm(tmp_path / "lm", max_len=256)  # room for every document: none is cut
    docs = ["A man plays a guitar.", "It rains.", "Music is played by a band on the stage tonight.", "", "cats",
            "It rains.", "A violin"]  # fmt: skip
    pairs = [("Who plays music?", d) for d in docs] + [("Is it raining?", "It rains in Paris.")]
    mine = CrossEncoder.load(lm)
    ids = mine.classifier.prompted_pair_ids(pairs, PROMPT)
    assert max(len(r) for r in ids) < mine.max_seq_length
    seen: list[int] = []
    hook = mine.classifier.auto_model.get_input_embeddings().register_forward_hook(
        lambda _m, args, _o: seen.append(args[0].numel()))  # fmt: skip
    try:
        got = mine.predict(pairs, activation=False, prompt=PROMPT)
    finally:
        hook.remove()
    want = raw(Reference(str(lm), device="cpu", prompts={"p": PROMPT}), pairs, prompt_name="p")
    assert len(set(want.round(3).tolist())) == len(set(docs)) + 1  # every distinct pair scores apart
    np.testing.assert_allclose(got, want, atol=1e-4)
    assert got[1] == got[5]  # the same document twice runs once: an exact tie, input order kept by rank
    # The seven pairs of the first query share every token before the document: the prefix runs once (not seven
    # times), then the six distinct documents' tails, padded to the longest; the other query's pair runs whole.
    p = shared_prefix(ids[:7])
    assert p > 40 and sum(seen) < sum(len(r) for r in ids) - 3 * p


def test_sbert_saves_it_and_sentence_transformers_loads_the_same_scores(folders, tmp_path):
    CrossEncoder.load(folders[1]).save(tmp_path / "again")
    back = Reference(str(tmp_path / "again"), device="cpu")
    np.testing.assert_allclose(raw(back, PAIRS), CrossEncoder.load(folders[1]).predict(PAIRS, activation=False),
                               atol=1e-4)  # fmt: skip
    assert type(back[1]).__name__ == "LogitScore" and back.max_seq_length == 60


def test_a_bare_causal_lm_and_sbert_load_take_the_same_path(folders):
    lm, st_folder = folders
    dropin = sbert.CrossEncoder(str(lm), device="cpu")  # sentence-transformers' own rule: yes / no on a causal LM
    np.testing.assert_allclose(dropin.predict(PAIRS[:3]), Reference(str(lm), device="cpu").predict(PAIRS[:3]),
                               atol=1e-5)  # fmt: skip
    assert isinstance(sbert.load(st_folder), CrossEncoder)


def test_the_cpu_engines_run_it(folders, emulated_cpu_bf16):
    model = CrossEncoder.load(folders[1])
    full = model.predict(PAIRS, activation=False)
    bf16 = model.predict(PAIRS, activation=False, precision="bf16")
    int8 = model.predict(PAIRS, activation=False, backend="torch-int8")
    np.testing.assert_allclose(model.predict(PAIRS, activation=False, backend="onnx"), full, atol=1e-4)
    # The tiny model's widened yes / no rows make each score a difference of two large logits, so rounding shows:
    # the engines are held to the fp32 scores' spread, and to their order.
    for other in (bf16, int8):
        assert np.abs(other - full).max() < 0.25 * np.ptp(full)
        assert np.corrcoef(other, full)[0, 1] > 0.95


def test_loaded_in_int8_it_scores_as_the_torch_int8_engine_and_refuses_to_save(folders, tmp_path):
    from sbert.backends.torch_int8 import holds_int8
    from sbert.errors import SbertError

    full = CrossEncoder.load(folders[1])
    held = CrossEncoder.load(folders[1], dtype="int8")
    assert holds_int8(held) and not holds_int8(full)
    fp32, engine = full.predict(PAIRS, activation=False), full.predict(PAIRS, activation=False, backend="torch-int8")
    got = held.predict(PAIRS, activation=False)
    # The same quantization as the torch-int8 engine (per channel weights, the granularity its check picks).
    np.testing.assert_allclose(got, engine, atol=1e-3 * np.ptp(fp32))
    assert np.corrcoef(got, fp32)[0, 1] > 0.95
    with pytest.raises(SbertError, match="holds its weights in int8"):
        held.save(tmp_path / "int8")
    assert not (tmp_path / "int8").exists()


def test_the_packed_gpu_engine_scores_as_whole_rows_run_on_the_cpu(folders):
    from sbert.backends.torch_cuda import CudaBackend
    from sbert.encoding.engine import embed_rows

    model = CrossEncoder.load(folders[1])
    engine = CudaBackend(model.as_chain(), torch.device("cpu"), torch.float32)  # the CUDA engine, on the CPU
    assert engine.packed  # pairs laid end to end: each score read at its own segment's last token
    ids = model.classifier.prompted_pair_ids(PAIRS, "")
    np.testing.assert_allclose(embed_rows(engine, ids, 1)[:, 0], model.predict(PAIRS, activation=False), atol=1e-4)


def test_a_causal_lm_without_a_chat_template_is_a_one_line_error(folders, tmp_path):
    import shutil

    bare = tmp_path / "no-template"
    shutil.copytree(folders[0], bare)
    (bare / "chat_template.jinja").unlink(missing_ok=True)
    assert "chat_template" not in (bare / "tokenizer_config.json").read_text()
    with pytest.raises(ModelFormatError, match="needs a chat template rendering the 'query' and 'document' roles"):
        CrossEncoder.load(bare)


@pytest.mark.parametrize("route", ["/v1/rerank", "/rerank", "/v2/rerank"])
def test_the_server_reranks_with_it(folders, route):
    server = serve_in_thread("--model", str(folders[1]))  # a cross-encoder alone: the rerank routes
    try:
        docs = [d for _, d in PAIRS]
        body = {"query": "Who plays music?", "documents": docs, "texts": docs, "model": "st"}
        answer = httpx.post(server.url + route, json=body, timeout=60)
        assert answer.status_code == 200, answer.text
        offline = CrossEncoder.load(folders[1]).predict([("Who plays music?", d) for d in docs])
        results = answer.json()
        results = results if isinstance(results, list) else results["results"]
        for r in results:
            score = r.get("relevance_score", r.get("score"))
            assert abs(score - offline[r["index"]]) < 1e-5
    finally:
        assert server.stop()


def test_it_trains_pointwise_like_any_cross_encoder_and_stays_loadable(folders, sts_test_path, tmp_path):
    from sbert.data import load_dataset
    from sbert.training.cross_encoder import CrossFitSettings, fit_cross_encoder, loss_function, training_targets

    model = CrossEncoder.load(folders[1])
    data = load_dataset(f"stsb:{sts_test_path}")
    data = type(data)(data.name, data.kind, data.texts[:64], data.labels[:64])
    settings = CrossFitSettings(epochs=3, batch_size=16, lr=1e-3)
    pairs, targets = training_targets(model, data, settings)

    def loss() -> float:
        with torch.no_grad():
            return float(loss_function(model, "bce").pair_loss(model(model.tokenize_pairs(pairs)), targets))

    before = loss()
    fit_cross_encoder(model, data, settings)  # binary cross-entropy on the yes-minus-no logit, scores in [0, 1]
    after = loss()
    assert after < 0.9 * before
    model.save(tmp_path / "trained")
    np.testing.assert_allclose(raw(Reference(str(tmp_path / "trained"), device="cpu"), PAIRS),
                               model.predict(PAIRS, activation=False), atol=1e-4)  # fmt: skip
