"""The static-embedding tier: distillation, the encode contract, sentence-transformers' layout, the CLI."""

import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from sbert import SentenceEncoder, StaticEncoder
from sbert.errors import BackendError, ModelFormatError
from sbert.static import fit
from sbert.static.distill import distill_static
from sbert.static.model import average_matrix
from tests.tiny_models import CORPUS

LONG = " ".join(["the cat sat on the mat and a man is playing a guitar"] * 60)  # ~700 tokens: past any limit


def snli_sentences(data_dir, n):
    lines = (data_dir / "snli" / "s1.dev").read_text(encoding="utf-8").splitlines()
    return list(dict.fromkeys(lines))[:n]


@pytest.fixture(scope="module")
def tiny_static(tiny_dirs, tmp_path_factory, data_dir):
    teacher = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    model = distill_static(teacher, snli_sentences(data_dir, 300) + CORPUS * 20, dim=16, epochs=1)
    path = tmp_path_factory.mktemp("static") / "tiny"
    model.save(path)
    return path


@pytest.fixture(scope="module")
def real_static(real_model_dir, tmp_path_factory, data_dir):
    teacher = SentenceEncoder.load(real_model_dir, device="cpu")
    path = tmp_path_factory.mktemp("static") / "minilm"
    distill_static(teacher, snli_sentences(data_dir, 3000), dim=128, epochs=2).save(path)
    return path


def test_sentence_transformers_loads_the_layout_and_gives_the_same_vectors(tiny_static):
    from sentence_transformers import SentenceTransformer

    ours = StaticEncoder.load(tiny_static)
    theirs = SentenceTransformer(str(tiny_static), device="cpu")
    texts = [*CORPUS, LONG, ""]
    expected = theirs.encode(texts, convert_to_numpy=True)
    assert np.abs(ours.encode(texts) - expected).max() <= 1e-5


def test_encode_contract_order_single_string_batches_and_no_truncation(tiny_static):
    model = StaticEncoder.load(tiny_static)
    texts = [*CORPUS, LONG]
    whole = model.encode(texts)
    assert whole.dtype == np.float32 and whole.shape == (len(texts), model.embedding_dimension)
    assert np.array_equal(model.encode(texts[::-1]), whole[::-1])  # input order
    assert np.abs(model.encode(texts, batch_size=1) - whole).max() <= 1e-6  # batch-invariant
    assert np.array_equal(model.encode(CORPUS[2]), whole[2])  # one string -> one vector
    tail = LONG + " dogs run in the park"  # a word past any position limit still counts
    assert np.abs(model.encode(tail) - model.encode(LONG)).max() > 1e-6
    assert not model.encode([""]).any()  # an empty text is the zero vector, as in sentence-transformers
    normed = model.encode(texts, normalize=True)
    assert np.allclose(np.linalg.norm(normed, axis=1), 1, atol=1e-5)


def test_prompts_truncate_dim_and_the_similarity_are_kept_and_honoured_both_ways(tiny_static, tmp_path):
    from sentence_transformers import SentenceTransformer

    model = StaticEncoder.load(tiny_static)
    model.settings.prompts = {"query": "query: ", "document": "passage: "}
    model.settings.truncate_dim, model.settings.similarity_fn_name = 8, "dot"
    model.save(tmp_path / "p")
    back = StaticEncoder.load(tmp_path / "p")
    assert back.settings == model.settings and back.embedding_dimension == 8
    full = StaticEncoder.load(tiny_static)
    np.testing.assert_allclose(
        back.encode_query(CORPUS), full.encode([f"query: {t}" for t in CORPUS])[:, :8], atol=1e-6
    )
    np.testing.assert_allclose(back.encode(CORPUS, prompt_name="document", truncate_dim=4),
                               full.encode([f"passage: {t}" for t in CORPUS])[:, :4], atol=1e-6)  # fmt: skip
    theirs = SentenceTransformer(str(tmp_path / "p"), device="cpu")
    assert theirs.similarity_fn_name == "dot" and theirs.truncate_dim == 8
    np.testing.assert_allclose(back.encode_query(CORPUS), theirs.encode_query(CORPUS), atol=1e-5)
    with pytest.raises(ValueError, match="unknown prompt_name 'qurey'"):
        back.encode(CORPUS, prompt_name="qurey")
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        back.encode(CORPUS, promptname="query")


def test_counted_token_rows_embed_as_encode_embeds_the_texts(tiny_static):
    model = StaticEncoder.load(tiny_static)
    model.settings.prompts, model.settings.truncate_dim = {"query": "query: "}, 8
    model.unit = True
    texts = [*CORPUS, LONG, ""]
    rows, cut = model.token_rows(texts, "query")
    assert cut == [] and model.token_lengths(texts, "query")[0] == [len(row) for row in rows]
    got = model.encode_token_rows(rows, "query")
    assert got.shape == (len(texts), 8) and np.array_equal(got, model.encode(texts, task="query"))
    assert not np.array_equal(got, model.encode(texts))  # the prompt's tokens are in the rows


def test_options_a_static_model_cannot_honour_are_one_line_errors(tiny_static):
    model = StaticEncoder.load(tiny_static)
    with pytest.raises(BackendError, match=r"backend 'onnx'.*static model"):
        model.encode(CORPUS, backend="onnx")
    with pytest.raises(BackendError, match="precision 'bf16'"):
        model.encode(CORPUS, precision="bf16")
    with pytest.raises(TypeError, match=r"sentences\[1\] is int"):
        model.encode(["ok", 3])  # type: ignore[list-item]
    torch_path = SentenceEncoder.load(tiny_static, device="cpu")  # one loader: the same files, the same vectors
    np.testing.assert_allclose(torch_path.encode(CORPUS), model.encode(CORPUS), rtol=1e-5, atol=1e-6)


def test_damaged_folders_are_named(tiny_static, tmp_path):
    with pytest.raises(ModelFormatError, match="not a static-embedding model"):
        StaticEncoder.load(tmp_path)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "modules.json").write_text((tiny_static / "modules.json").read_text())
    with pytest.raises(ModelFormatError, match=r"model\.safetensors: missing"):
        StaticEncoder.load(broken)


def test_encoding_imports_no_torch(tiny_static):
    code = (
        "import sys; from sbert.static import StaticEncoder; "
        f"m = StaticEncoder.load({str(tiny_static)!r}); v = m.encode(['a man is playing a guitar'] * 3); "
        "print(v.shape, 'torch' in sys.modules)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.split()[-1] == "False", run.stdout


def test_average_matrix_and_the_fit_math():
    matrix = average_matrix([[1, 2, 2], [], [0]], 4)
    assert matrix.shape == (3, 4) and np.allclose(matrix.toarray()[0], [0, 1 / 3, 2 / 3, 0])
    assert not matrix.toarray()[1].any()
    weights = fit.sif_weights(np.array([1000.0, 10.0, 0.0]))
    assert weights[0] < weights[1] < weights[2] <= 1  # frequent tokens count less
    # The Zipf prior ranks only producible tokens: placeholders before the real ones do not push them down.
    kept = np.array([False, False, True, True, False, True])
    p = fit.zipf_probabilities(kept)
    np.testing.assert_allclose(p[kept], np.array([1 / 2, 1 / 3, 1 / 4]) / (1 / 2 + 1 / 3 + 1 / 4))
    assert not p[~kept].any()
    rng = np.random.default_rng(0)
    projected, basis = fit.pca(rng.normal(size=(200, 12)).astype(np.float32), 5)
    assert projected.shape == (200, 5) and np.allclose(basis.T @ basis, np.eye(5), atol=1e-5)
    # A target that is a rotation of the rows, with lengths that carry no meaning: the cosine fit
    # must recover directions at least as well as least squares does.
    rows = rng.normal(size=(2000, 8)).astype(np.float32)
    rotation = np.linalg.qr(rng.normal(size=(8, 8)))[0].astype(np.float32)
    target = (rows @ rotation) * rng.uniform(0.1, 10, size=(2000, 1)).astype(np.float32)

    def mean_cos(w):
        pred = rows @ w
        return float(((pred * target).sum(1) / np.linalg.norm(pred, axis=1) / np.linalg.norm(target, axis=1)).mean())

    assert mean_cos(fit.fit_map(rows, target, 5, 1e-2)) >= max(mean_cos(fit.fit_linear(rows, target)), 0.99)
    table = fit.fit_table(rng.normal(size=(8, 8)).astype(np.float32), sp.csr_matrix(rows), target, 3, 1e-2)
    assert table.shape == (8, 8)


def test_producible_tokens_leave_out_placeholders_and_specials(real_model_dir):
    from sbert.static.distill import producible, teacher_tokenizer

    tokenizer = teacher_tokenizer(SentenceEncoder.load(real_model_dir, device="cpu"))
    kept = producible(tokenizer)
    vocab = tokenizer.get_vocab()
    assert not kept[[vocab["[unused0]"], vocab["[unused993]"], vocab["[CLS]"], vocab["[PAD]"]]].any()
    assert kept[[vocab["the"], vocab["!"]]].all() and (~kept).sum() == 999  # 994 placeholders, 5 specials


def test_a_corpus_too_small_is_refused_before_the_teacher_loads(tiny_dirs):
    teacher = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    with pytest.raises(Exception, match="at least 100"):
        distill_static(teacher, CORPUS, dim=8)
    with pytest.raises(Exception, match="--dim must be between 1 and"):
        distill_static(teacher, None, dim=10_000)


@pytest.mark.reference
@pytest.mark.e2e
def test_a_real_distillation_keeps_most_of_the_teachers_quality(real_static, data_dir):
    from scipy.stats import spearmanr

    rows = [line.split("\t") for line in (data_dir / "stsbenchmark" / "sts-dev.csv").read_text().splitlines()]
    model = StaticEncoder.load(real_static)
    u, v = model.encode([r[5] for r in rows], normalize=True), model.encode([r[6] for r in rows], normalize=True)
    score = 100 * spearmanr((u * v).sum(1), [float(r[4]) for r in rows]).statistic
    # 3,000 SNLI premises, no STS sentence; plain PCA + Zipf weights (model2vec's recipe, no corpus)
    # scores 65.6 on STSb dev for this teacher, and the full 95k-sentence fit 85.0.
    assert score >= 75, score


def sbert(*args):
    from tests.cli_runner import run_cli

    return run_cli(*map(str, args))


def test_cli_distill_then_encode_and_stream(tiny_dirs, tmp_path, data_dir):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(snli_sentences(data_dir, 200)) + "\n", encoding="utf-8")
    out = tmp_path / "static"
    run = sbert("distill", "--static", "--model", tiny_dirs["bert"], "--corpus", corpus, "--dim", 8,
                "--epochs", 1, "--output", out)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stderr.count("100%") >= 2  # a bar for the vocabulary's teacher pass and one for the corpus's
    texts = tmp_path / "in.txt"
    texts.write_text("\n".join(CORPUS) + "\n", encoding="utf-8")
    assert sbert("encode", "--model", out, "--input", texts, "--output", tmp_path / "v.npy").returncode == 0
    expected = StaticEncoder.load(out).encode(CORPUS)
    assert np.abs(np.load(tmp_path / "v.npy") - expected).max() <= 1e-6
    stream = sbert("encode", "--model", out, "--input", texts, "--output", f"{tmp_path / 'shards'}/", "--shard-size", 3)
    assert stream.returncode == 0, stream.stderr
    from sbert.scale.streaming import load_shards

    assert np.abs(load_shards(tmp_path / "shards") - expected).max() <= 1e-6
    bad = sbert("encode", "--model", out, "--input", texts, "--output", tmp_path / "w.npy", "--backend", "onnx")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "static model" in bad.stderr
    assert not (tmp_path / "w.npy").exists()


def test_cli_distill_bad_corpus_is_one_line_and_writes_nothing(tiny_dirs, tmp_path):
    out = tmp_path / "static"
    cases = {"empty.txt": b"", "short.txt": b"one\ntwo\n", "latin1.txt": "caf\u00e9\n".encode("latin-1") * 200}
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
        run = sbert("distill", "--static", "--model", tiny_dirs["bert"], "--corpus", tmp_path / name, "--output", out)
        assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1, run.stderr
        assert name in run.stderr and not out.exists()
    assert "not valid UTF-8" in run.stderr and ":1:" in run.stderr
    missing = sbert("distill", "--static", "--model", tiny_dirs["bert"], "--output", tmp_path / "no" / "such")
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_a_real_server_serves_a_static_model(tiny_static, tmp_path):
    import httpx

    from tests.serve_helpers import serve_in_thread

    expected = StaticEncoder.load(tiny_static).encode([*CORPUS[:3], LONG])
    server = serve_in_thread("--model", tiny_static)
    try:
        body = {"input": [*CORPUS[:3], LONG], "model": "tiny"}
        response = httpx.post(f"{server.url}/v1/embeddings", json=body, timeout=60)
        assert response.status_code == 200, response.text
        got = np.array([row["embedding"] for row in response.json()["data"]], dtype=np.float32)
        assert np.abs(got - expected).max() <= 1e-5  # the long text is not cut either
    finally:
        assert server.stop()
    refused = sbert("serve", "--model", tiny_static, "--backend", "onnx", "--port", 1)
    assert refused.returncode == 2 and "static model" in refused.stderr.strip().splitlines()[-1]


def test_cli_index_build_and_search_with_a_static_model(tiny_static, tmp_path):
    import json

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(CORPUS) + "\n", encoding="utf-8")
    built = sbert("index", "build", corpus, "--out", tmp_path / "idx", "--kind", "flat", "--model", tiny_static)
    assert built.returncode == 0, built.stderr
    found = sbert("search", tmp_path / "idx", CORPUS[3], "--top-k", 1, "--json")  # the index names its model
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout.splitlines()[0])["hits"]
    assert CORPUS[3] in json.dumps(hits)  # a text's own vector is its nearest neighbour


def test_a_static_chain_with_normalize_or_a_head_gives_sentence_transformers_vectors_everywhere(tiny_dirs, tmp_path):
    """StaticEmbedding + Normalize runs on the numpy path with the Normalize; + Dense goes to the torch chain.

    Before, any folder naming a StaticEmbedding went to the numpy path, which read the table alone:
    `sbert serve`, `encode` and `index build` answered unnormalized (or unprojected) vectors.
    """
    import argparse

    import sentence_transformers.models as st
    import torch
    from sentence_transformers import SentenceTransformer

    from sbert.cli.common import load_encoder
    from tests.serve_helpers import serve_in_thread, served_vectors
    from tests.zoo import static_module

    texts = [*CORPUS[:3], LONG, ""]
    unit_dir, dense_dir = tmp_path / "unit", tmp_path / "dense"
    SentenceTransformer(modules=[static_module(tiny_dirs["bert"], 16), st.Normalize()], device="cpu").save(
        str(unit_dir)
    )
    head = st.Dense(16, 8, activation_function=torch.nn.Tanh())
    SentenceTransformer(modules=[static_module(tiny_dirs["bert"], 16), head], device="cpu").save(str(dense_dir))

    want = SentenceTransformer(str(unit_dir), device="cpu").encode(texts)
    model = StaticEncoder.load(unit_dir)
    assert model.unit and np.abs(model.encode(texts) - want).max() <= 1e-5
    assert np.abs(model.encode(texts, truncate_dim=8) - want[:, :8]).max() <= 1e-5  # Normalize before the cut
    model.save(tmp_path / "back")  # the Normalize is saved too
    again = SentenceTransformer(str(tmp_path / "back"), device="cpu").encode(texts)
    assert np.abs(again - want).max() <= 1e-5
    server = serve_in_thread("--model", unit_dir)
    try:
        assert np.abs(served_vectors(server, texts[:4], "unit") - want[:4]).max() <= 1e-5
    finally:
        assert server.stop()

    with pytest.raises(ModelFormatError, match=r"StaticEmbedding -> Dense; .*SentenceEncoder\.load"):
        StaticEncoder.load(dense_dir)
    flags = argparse.Namespace(model=str(dense_dir), device="cpu", max_seq_length=None, trust_remote_code=False)
    chosen = load_encoder(flags)
    assert isinstance(chosen, SentenceEncoder)  # the whole chain, on torch
    want = SentenceTransformer(str(dense_dir), device="cpu").encode(texts)
    assert np.abs(chosen.encode(texts) - want).max() <= 1e-5


def test_a_truncation_saved_in_tokenizer_json_is_honoured_as_sentence_transformers_honours_it(tiny_static, tmp_path):
    import json
    import shutil

    from sentence_transformers import SentenceTransformer

    from sbert import load

    folder = tmp_path / "cut"
    shutil.copytree(tiny_static, folder)
    tokenizer_file = next(folder.rglob("tokenizer.json"))
    saved = json.loads(tokenizer_file.read_text())
    saved["truncation"] = {"direction": "Right", "max_length": 8, "strategy": "LongestFirst", "stride": 0}
    tokenizer_file.write_text(json.dumps(saved))
    texts = [CORPUS[0], LONG]
    want = SentenceTransformer(str(folder), device="cpu").encode(texts, convert_to_numpy=True)
    ours = StaticEncoder.load(folder)
    np.testing.assert_allclose(ours.encode(texts), want, atol=1e-5)
    assert ours.max_seq_length == 8 and ours.token_rows(texts)[1] == [1]  # the long text was cut, and says so
    np.testing.assert_allclose(load(str(folder)).encode(texts), want, atol=1e-5)  # the kind's own loader too
