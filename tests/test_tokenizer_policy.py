"""One tokenizer policy for every caller: the model's limit, its truncation side, no saved padding."""

from __future__ import annotations

import json

import numpy as np

from sbert import CrossEncoder, SentenceEncoder
from sbert.modules.transformer import cut_at_space
from sbert.similarity import unit_rows
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


def test_every_path_keeps_the_end_of_a_left_truncated_input(tiny_dirs, tmp_path):
    """Library, CLI, server, index and training ask the one tokenizer policy: the same ids, the same vector."""
    import httpx

    from sbert.data.common import Dataset
    from sbert.training import Objective, Stage
    from sbert.training.setup import prepare_objectives
    from tests.cli_runner import run_cli
    from tests.serve_helpers import serve_in_thread

    SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu").save(tmp_path / "m")
    left_truncated(tmp_path / "m")
    model = SentenceEncoder.load(tmp_path / "m", device="cpu")
    library = model.encode([LONG, "short"], on_truncation="ignore")
    (tmp_path / "texts.txt").write_text(f"{LONG}\nshort\n", encoding="utf-8")
    assert run_cli("encode", "--model", str(tmp_path / "m"), "--input", str(tmp_path / "texts.txt"),
                   "--output", str(tmp_path / "cli.npy"), "--device", "cpu").returncode == 0  # fmt: skip
    np.testing.assert_allclose(np.load(tmp_path / "cli.npy"), library, atol=1e-5)
    assert run_cli("index", "build", str(tmp_path / "texts.txt"), "--out", str(tmp_path / "idx"), "--kind", "int8",
                   "--model", str(tmp_path / "m"), "--device", "cpu").returncode == 0  # fmt: skip
    # the index holds unit rows (a cosine model), in the corpus order
    np.testing.assert_allclose(np.load(tmp_path / "idx" / "vectors.npy"), unit_rows(library), atol=1e-5)
    server = serve_in_thread("--model", tmp_path / "m")
    try:
        body = {"model": "m", "input": [LONG, "short"]}
        served = httpx.post(f"{server.url}/v1/embeddings", json=body, timeout=60).json()["data"]
    finally:
        assert server.stop()
    np.testing.assert_allclose(np.array([row["embedding"] for row in served]), library, atol=1e-5)
    stage = Stage((Objective("mnrl", "given"),))
    (prepared,) = prepare_objectives(model, stage, [Dataset("given", "pair", [(LONG, "short")])])
    ids = model.input_module.token_ids([LONG])[0][0]
    assert prepared.columns[0][0] == ids
    assert ids[-2] == model.input_module.tokenizer.convert_tokens_to_ids(LONG.split()[-1])  # the end is kept
