"""SparseEncoder (SPLADE) against sentence-transformers' own SparseEncoder, both ways, and bad input."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse
import torch
from transformers import AutoConfig, AutoModelForMaskedLM, AutoTokenizer, DistilBertConfig

from sbert import SentenceEncoder
from sbert.errors import ModelFormatError, SbertError
from sbert.sparse import SparseEncoder
from sbert.sparse.engine import splade_batch
from sbert.sparse.splade import pool_padded
from tests.tiny_models import CORPUS, EDGE_SENTENCES

TEXTS = [*EDGE_SENTENCES[:10], "Dogs RUN in the park, twice!"]


def build_mlm(encoder_dir: Path, path: Path, family: str = "") -> Path:
    """A random-weight MaskedLM model on a tiny encoder's tokenizer (and config, or DistilBERT's)."""
    tokenizer = AutoTokenizer.from_pretrained(encoder_dir)
    config = AutoConfig.from_pretrained(encoder_dir)
    if family == "distilbert":
        config = DistilBertConfig(vocab_size=config.vocab_size, dim=32, n_layers=2, n_heads=2, hidden_dim=64,
                                  max_position_embeddings=64)  # fmt: skip
    torch.manual_seed(7)
    AutoModelForMaskedLM.from_config(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def st_splade(mlm_dir: Path, path: Path, strategy: str = "max", activation: str = "relu", legacy: bool = False) -> Path:
    """A SPLADE model built and saved by sentence-transformers (legacy: the MLMTransformer spelling)."""
    from sentence_transformers import SparseEncoder as STSparse
    from sentence_transformers.base.modules import Transformer as STTransformer
    from sentence_transformers.sparse_encoder.modules import SpladePooling as STSplade

    transformer = STTransformer(str(mlm_dir), transformer_task="fill-mask")
    STSparse(modules=[transformer, STSplade(strategy, activation)], device="cpu").save(str(path))
    if legacy:
        modules = json.loads((path / "modules.json").read_text())
        modules[0]["type"] = "sentence_transformers.sparse_encoder.models.MLMTransformer"
        (path / "modules.json").write_text(json.dumps(modules))
        config = json.loads((path / "sentence_bert_config.json").read_text())
        (path / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": config.get("max_seq_length",
                                                                                                  64)}))  # fmt: skip
    return path


def st_vectors(path: Path, texts: list[str] = TEXTS) -> np.ndarray:
    from sentence_transformers import SparseEncoder as STSparse

    return STSparse(str(path), device="cpu").encode(texts, convert_to_sparse_tensor=False).numpy()


@pytest.fixture(scope="module")
def mlm_dirs(tiny_dirs, tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("mlm")
    built = {name: build_mlm(tiny_dirs[name], root / name) for name in ("bert", "roberta")}
    return {**built, "distilbert": build_mlm(tiny_dirs["bert"], root / "distilbert", "distilbert")}


@pytest.mark.parametrize(
    ("family", "strategy", "activation", "legacy"),
    [("bert", "max", "relu", False), ("bert", "sum", "log1p_relu", True), ("roberta", "max", "log1p_relu", False),
     ("distilbert", "max", "relu", False)],  # distilbert: a head the engine does not split (the padded path)
)  # fmt: skip
def test_st_splade_loads_with_the_same_vectors_both_ways(family, strategy, activation, legacy, mlm_dirs, tmp_path):
    folder = st_splade(mlm_dirs[family], tmp_path / "st", strategy, activation, legacy)
    want = st_vectors(folder)
    model = SparseEncoder.load(folder, device="cpu")
    got = model.encode(TEXTS)
    assert isinstance(got, scipy.sparse.csr_matrix) and got.shape == want.shape == (len(TEXTS), model.dimension)
    np.testing.assert_array_equal(got.toarray() > 0, want > 0)  # the same active dimensions
    np.testing.assert_allclose(got.toarray(), want, rtol=1e-5, atol=1e-6)
    model.save(tmp_path / "ours")
    np.testing.assert_allclose(st_vectors(tmp_path / "ours"), want, rtol=1e-5, atol=1e-6)


def test_engine_equals_the_padded_path_and_batch_order(mlm_dirs, tmp_path):
    model = SparseEncoder.load(st_splade(mlm_dirs["bert"], tmp_path / "st"), device="cpu")
    features = model.mlm.tokenize(TEXTS)
    with torch.inference_mode():
        padded = pool_padded(model.mlm(dict(features))["token_embeddings"], features["attention_mask"], "max", "relu")
        for chunk in (1, 7, 10_000):  # chunks cut across texts: each token still folds into its own row
            torch.testing.assert_close(splade_batch(model.mlm, model.pooling, dict(features), chunk), padded)
    whole = model.encode(TEXTS, batch_size=64).toarray()
    np.testing.assert_allclose(model.encode(TEXTS, batch_size=3).toarray(), whole, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.encode(TEXTS[4]).toarray()[0], whole[4], rtol=1e-5, atol=1e-6)


def test_max_active_dims_decode_similarity_sparsity(mlm_dirs, tmp_path):
    model = SparseEncoder.load(st_splade(mlm_dirs["bert"], tmp_path / "st"), device="cpu")
    full = model.encode(CORPUS)
    kept = model.encode(CORPUS, max_active_dims=5)
    assert (np.diff(kept.indptr) <= 5).all()
    for i in range(len(CORPUS)):  # the five kept are the five heaviest
        heaviest = np.sort(full.getrow(i).data)[::-1][:5]
        np.testing.assert_allclose(np.sort(kept.getrow(i).data)[::-1], heaviest, rtol=1e-6)
    decoded = model.decode(kept, top=3)
    assert len(decoded) == len(CORPUS) and all(len(row) == 3 for row in decoded)
    assert decoded[0][0][1] == kept.getrow(0).data.max()
    first = kept.getrow(0)
    assert decoded[0][0][0] == model.mlm.tokenizer.convert_ids_to_tokens(int(first.indices[first.data.argmax()]))
    scores = model.similarity(full, full)
    np.testing.assert_allclose(scores, full.toarray() @ full.toarray().T, rtol=1e-5)
    stats = model.sparsity(kept)
    assert stats["active_dims"] <= 5 and 0 < stats["sparsity_ratio"] < 1
    dense = model.encode(CORPUS[:2], convert_to="torch")
    assert dense.is_sparse and torch.allclose(dense.to_dense(), torch.from_numpy(full[:2].toarray()))


def test_bad_input_is_one_line(mlm_dirs, tiny_dirs, tmp_path):
    folder = st_splade(mlm_dirs["bert"], tmp_path / "st")
    model = SparseEncoder.load(folder, device="cpu")
    for k in (0, -3, 2.5):
        with pytest.raises(SbertError, match=r"max_active_dims=.*must be a positive integer"):
            model.encode(["a"], max_active_dims=k)
    dense = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    dense.save(tmp_path / "dense")
    with pytest.raises(ModelFormatError, match=r"a dense model .*: load it with sbert\.SentenceEncoder"):
        SparseEncoder.load(tmp_path / "dense")
    with pytest.raises(ModelFormatError, match=r"a sparse model .*: load it with sbert\.SparseEncoder"):
        SentenceEncoder.load(folder)
    headless = tmp_path / "headless"  # a SPLADE folder whose weights are a plain BertModel
    shutil.copytree(folder, headless)
    for name in ("config.json", "model.safetensors"):
        shutil.copy(tiny_dirs["bert"] / name, headless / name)
    with pytest.raises(ModelFormatError, match=rf"{headless}: a SPLADE model needs a masked-language-model head"):
        SparseEncoder.load(headless)


def st_inference_free(mlm_dir: Path, path: Path) -> Path:
    """Inference-free SPLADE as sentence-transformers builds it: IDF-like query weights, SPLADE documents."""
    from sentence_transformers import SparseEncoder as STSparse
    from sentence_transformers.base.modules import Router, Transformer
    from sentence_transformers.sparse_encoder.modules import SparseStaticEmbedding, SpladePooling

    tokenizer = AutoTokenizer.from_pretrained(mlm_dir)
    torch.manual_seed(3)
    weights = torch.rand(len(tokenizer.get_vocab()))
    weights[:40] = 0  # tokens without a weight stay inactive
    query = SparseStaticEmbedding(tokenizer=tokenizer, weight=weights)
    document = [Transformer(str(mlm_dir), transformer_task="fill-mask"), SpladePooling("max")]
    router = Router.for_query_document(query_modules=[query], document_modules=document)
    STSparse(modules=[router], device="cpu").save(str(path))
    return path


def test_inference_free_splade_both_ways_and_queries_skip_the_transformer(mlm_dirs, tmp_path, monkeypatch):
    from sentence_transformers import SparseEncoder as STSparse

    folder = st_inference_free(mlm_dirs["bert"], tmp_path / "st")
    st = STSparse(str(folder), device="cpu")
    want_q = st.encode_query(TEXTS, convert_to_sparse_tensor=False).numpy()
    want_d = st.encode_document(TEXTS, convert_to_sparse_tensor=False).numpy()
    model = SparseEncoder.load(folder, device="cpu")
    np.testing.assert_allclose(model.encode_document(TEXTS).toarray(), want_d, rtol=1e-5, atol=1e-6)
    monkeypatch.setattr(model.mlm, "forward", None)  # a query that ran the transformer would fail here
    monkeypatch.setattr(type(model.mlm), "split", lambda self: pytest.fail("queries ran the transformer"))
    queries = model.encode_query(TEXTS)
    np.testing.assert_array_equal(queries.toarray() > 0, want_q > 0)
    np.testing.assert_allclose(queries.toarray(), want_q, rtol=1e-6)
    assert (np.diff(model.encode_query(TEXTS, max_active_dims=2).indptr) <= 2).all()
    monkeypatch.undo()
    model.save(tmp_path / "ours")
    back = STSparse(str(tmp_path / "ours"), device="cpu")
    np.testing.assert_allclose(back.encode_query(TEXTS, convert_to_sparse_tensor=False).numpy(), want_q, rtol=1e-6)
    np.testing.assert_allclose(back.encode_document(TEXTS, convert_to_sparse_tensor=False).numpy(), want_d,
                               rtol=1e-5, atol=1e-6)  # fmt: skip


def st_csr(encoder_dir: Path, path: Path, normalize: bool) -> Path:
    """CSR as sentence-transformers builds it: Transformer, mean Pooling, a top-k SparseAutoEncoder."""
    from sentence_transformers import SparseEncoder as STSparse
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling
    from sentence_transformers.sparse_encoder.modules import SparseAutoEncoder

    torch.manual_seed(4)
    sae = SparseAutoEncoder(input_dim=32, hidden_dim=128, k=8, k_aux=16, normalize=normalize)
    with torch.no_grad():  # non-zero biases, so a mix-up of them would show
        sae.pre_bias.uniform_(-0.1, 0.1)
        sae.latent_bias.uniform_(-0.1, 0.1)
    STSparse(modules=[Transformer(str(encoder_dir)), Pooling(32, "mean"), sae], device="cpu").save(str(path))
    return path


@pytest.mark.parametrize("normalize", [False, True])
def test_csr_loads_with_the_same_codes_both_ways(normalize, tiny_dirs, tmp_path):
    folder = st_csr(tiny_dirs["bert"], tmp_path / "st", normalize)
    want = st_vectors(folder)
    model = SparseEncoder.load(folder, device="cpu")
    got = model.encode(TEXTS)
    assert model.dimension == 128 and (np.diff(got.indptr) <= 8).all()
    np.testing.assert_array_equal(got.toarray() > 0, want > 0)
    np.testing.assert_allclose(got.toarray(), want, rtol=1e-5, atol=1e-6)
    assert (np.diff(model.encode(TEXTS, max_active_dims=3).indptr) <= 3).all()
    model.save(tmp_path / "ours")
    np.testing.assert_allclose(st_vectors(tmp_path / "ours"), want, rtol=1e-5, atol=1e-6)


def test_a_prompted_csr_puts_its_prompt_in_front_once(tiny_dirs, tmp_path):
    """A CSR folder with a default prompt and a query prompt, saved by sentence-transformers: one prompt per call."""
    from sentence_transformers import SparseEncoder as STSparse

    folder = st_csr(tiny_dirs["bert"], tmp_path / "st", False)
    config_path = folder / "config_sentence_transformers.json"
    config = json.loads(config_path.read_text())
    config.update(prompts={"query": "query: ", "document": "", "clf": "classify: "}, default_prompt_name="clf")
    config_path.write_text(json.dumps(config))
    ref = STSparse(str(folder), device="cpu")
    model = SparseEncoder.load(folder, device="cpu")
    for call in ("encode", "encode_query", "encode_document"):
        want = getattr(ref, call)(TEXTS, convert_to_sparse_tensor=False).numpy()
        np.testing.assert_allclose(getattr(model, call)(TEXTS).toarray(), want, rtol=1e-5, atol=1e-6, err_msg=call)


def test_train_csr_learns_codes_sentence_transformers_loads(tiny_dirs, tmp_path):
    from sbert.sparse.csr_train import CsrSettings, csr_loss, train_csr

    dense = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    pairs = list(zip(CORPUS, CORPUS[1:] + CORPUS[:1], strict=True))
    settings = CsrSettings(hidden_dim=64, k=4, k_aux=8, epochs=30, batch_size=8, lr=1e-2)
    vectors = torch.from_numpy(dense.encode(CORPUS))
    model = train_csr(dense, CORPUS, pairs, settings)
    torch.manual_seed(0)
    from sbert.sparse.csr import SparseAutoEncoder

    fresh = SparseAutoEncoder(32, 64, 4, 8)
    with torch.no_grad():
        before = float(csr_loss(fresh, vectors, vectors, vectors, settings))
        after = float(csr_loss(model.sae, vectors, vectors, vectors, settings))
    assert after < before / 2  # training fits the autoencoder, it does not just run
    codes = model.encode(CORPUS)
    assert codes.shape == (len(CORPUS), 64) and (np.diff(codes.indptr) <= 4).all()
    model.save(tmp_path / "csr")
    np.testing.assert_allclose(st_vectors(tmp_path / "csr", CORPUS), codes.toarray(), rtol=1e-5, atol=1e-6)


def test_train_csr_cli_reads_the_training_formats(tiny_dirs, tmp_path):
    from tests.cli_runner import run_cli

    dense = tmp_path / "dense"
    SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu").save(dense)
    table = tmp_path / "pairs.csv"
    rows = [f"{a},{b},{i % 2}\n" for i, (a, b) in enumerate(itertools.pairwise(CORPUS))]
    table.write_text("anchor,positive,score\n" + "".join(rows))
    out = tmp_path / "csr"
    result = run_cli("train-csr", "--model", str(dense), "--train", f"csv:{table}", "--output", str(out), "--k", "4",
                     "--hidden", "64", "--epochs", "2")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "CSR k=4 of 64 trained on 8 texts and 3 pairs" in result.stderr  # score 1 rows only: the positives
    assert SparseEncoder.load(out).encode(CORPUS).shape == (len(CORPUS), 64)


@pytest.mark.parametrize("family", ["bert", "roberta"])
def test_onnx_and_openvino_backends_equal_torch_and_the_graph_is_cached(family, mlm_dirs, tiny_dirs, tmp_path):
    folder = st_splade(mlm_dirs[family], tmp_path / "st", "max", "log1p_relu")
    model = SparseEncoder.load(folder, device="cpu")
    want = model.encode(TEXTS).toarray()
    np.testing.assert_allclose(model.encode(TEXTS, backend="onnx", batch_size=4).toarray(), want, rtol=1e-4, atol=1e-5)
    graph = folder / "onnx" / "splade.onnx"
    stamp = graph.stat().st_mtime_ns
    again = SparseEncoder.load(folder, device="cpu")
    np.testing.assert_allclose(again.encode(TEXTS, backend="onnx").toarray(), want, rtol=1e-4, atol=1e-5)
    assert graph.stat().st_mtime_ns == stamp  # the cached graph served the second model
    csr = SparseEncoder.load(st_csr(tiny_dirs["bert"], tmp_path / "csr", True), device="cpu")
    np.testing.assert_allclose(csr.encode(TEXTS, backend="onnx").toarray(), csr.encode(TEXTS).toarray(), rtol=1e-4,
                               atol=1e-5)  # fmt: skip
    np.testing.assert_allclose(model.encode(TEXTS, backend="openvino").toarray(), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(csr.encode(TEXTS, backend="openvino").toarray(), csr.encode(TEXTS).toarray(),
                               rtol=1e-4, atol=1e-5)  # fmt: skip
    with pytest.raises(SbertError, match="backend='torch-int8': a SparseEncoder runs on torch, onnx, onnx-int8"):
        model.encode(TEXTS, backend="torch-int8")


@pytest.mark.parametrize("backend", ["onnx-int8", "openvino-int8"])
def test_int8_graphs_run_on_the_shared_engine_and_stay_near_torch(backend, mlm_dirs, tmp_path):
    from sbert.backends.feature_graph import FeatureGraphEngine

    folder = st_splade(mlm_dirs["bert"], tmp_path / "st", "max", "relu")
    model = SparseEncoder.load(folder, device="cpu")
    want = model.encode(TEXTS).toarray()
    got = model.encode(TEXTS, backend=backend).toarray()
    assert isinstance(model.graph(backend), FeatureGraphEngine)  # the engine dense and multi-vector graphs use
    assert list((folder / "onnx").glob("splade-int8*.onnx"))  # "-7bit" where the CPU has no VNNI (device.py)
    cos = (got * want).sum(1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(want, axis=1))
    assert cos.min() >= 0.98, cos  # the start check's bound, here on every text
    assert not np.array_equal(got, want)  # int8 really ran: its rows are not torch's to the bit


def test_splade_trains_through_sbert_train_and_flops_sparsifies(mlm_dirs, tiny_dirs, tmp_path):
    from sbert.losses.splade import flops
    from tests.cli_runner import run_cli

    x = torch.tensor([[1.0, 0.0, 2.0], [3.0, 0.0, 0.0]])
    assert float(flops(x)) == pytest.approx(2.0**2 + 0 + 1.0**2)  # per-dimension batch means 2, 0, 1
    folder = st_splade(mlm_dirs["bert"], tmp_path / "st")
    table = tmp_path / "pairs.csv"
    table.write_text("anchor,positive\n" + "".join(f"{a},{b}\n" for a, b in itertools.pairwise(CORPUS)))
    before = SparseEncoder.load(folder).encode(CORPUS)
    out = tmp_path / "trained"
    result = run_cli("train", "--model", str(folder), "--objective", "splade", "--train", f"csv:{table}", "--option",
                     "query_weight=1", "--option", "document_weight=1", "--lr", "5e-3", "--max-steps", "6",
                     "--batch-size", "4", "--output", str(out), "--no-progress")  # fmt: skip
    assert result.returncode == 0, result.stderr
    trained = SparseEncoder.load(out, device="cpu")
    after = trained.encode(CORPUS)
    assert after.nnz < before.nnz / 2  # strong FLOPS weights prune most active dimensions
    np.testing.assert_allclose(st_vectors(out, CORPUS), after.toarray(), rtol=1e-5, atol=1e-6)  # still ST's layout
    plain = run_cli(
        "train",
        "--model",
        str(mlm_dirs["bert"]),
        "--objective",
        "splade",
        "--train",
        f"csv:{table}",
        "--max-steps",
        "1",
        "--batch-size",
        "4",
        "--output",
        str(tmp_path / "from-mlm"),
        "--no-progress",
    )
    assert plain.returncode == 0, plain.stderr  # a bare MLM checkpoint trains as SPLADE max pooling
    assert SparseEncoder.load(tmp_path / "from-mlm").dimension == trained.dimension
    dense = tmp_path / "dense"
    SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu").save(dense)
    refused = run_cli("train", "--model", str(dense), "--objective", "splade", "--train", f"csv:{table}",
                      "--max-steps", "1", "--output", str(tmp_path / "x"), "--no-progress")  # fmt: skip
    assert refused.returncode != 0 and "trains a SPLADE model (ending in SpladePooling)" in refused.stderr
    csr = st_csr(tiny_dirs["bert"], tmp_path / "csr", False)
    refused = run_cli("train", "--model", str(csr), "--objective", "mnrl", "--train", f"csv:{table}", "--max-steps",
                      "1", "--output", str(tmp_path / "y"), "--no-progress")  # fmt: skip
    assert refused.returncode != 0 and "trains with `sbert train-csr`" in refused.stderr


def test_flops_weights_ramp_up_quadratically_and_checkpoints_carry_the_count():
    from sbert.losses.splade import SpladeLoss, flops

    torch.manual_seed(0)
    a, c = torch.rand(4, 9), torch.rand(4, 9)
    ranking = float(SpladeLoss(query_weight=0.0, document_weight=0.0)([a, c], None))
    regular = 0.5 * float(flops(a)) + 0.25 * float(flops(c))
    loss = SpladeLoss(query_weight=0.5, document_weight=0.25, flops_warmup=4)
    got = [float(loss([a, c], None)) - ranking for _ in range(6)]
    assert got == pytest.approx([(t / 4) ** 2 * regular for t in (0, 1, 2, 3)] + [regular, regular], rel=1e-5)
    assert int(loss.state_dict()["batches_seen"]) == 6
    loss.eval()  # evaluation does not advance the ramp
    loss([a, c], None)
    resumed = SpladeLoss(query_weight=0.5, document_weight=0.25, flops_warmup=4)
    resumed.load_state_dict(loss.state_dict())
    assert resumed.ramp() == 1.0 and int(resumed.batches_seen) == 6
    with pytest.raises(SbertError, match="flops_warmup must be >= 0"):
        SpladeLoss(flops_warmup=-1)
