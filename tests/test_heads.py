"""CNN-SBERT and IS-BERT heads: shapes, masking, save/load, the infomax loss, ALBERT end to end."""

import math

import numpy as np
import pytest
import torch
from torch.nn import functional

from sbert import SentenceEncoder
from sbert.errors import SbertError
from sbert.losses.infomax import jsd_mi_loss
from sbert.modules import CNNHead, NGramCNN
from sbert.training import Objective, Stage, TrainConfig, Trainer
from tests.cli_runner import run_cli
from tests.test_training import data  # noqa: F401  (the module-scoped data fixture)
from tests.tiny_models import CORPUS


def batch(lengths: list[int], hidden: int = 8, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Random token vectors with right padding; padding positions hold large garbage values."""
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randn(len(lengths), max(lengths), hidden, generator=g)
    mask = torch.zeros(len(lengths), max(lengths), dtype=torch.long)
    for i, n in enumerate(lengths):
        mask[i, :n] = 1
        tokens[i, n:] = 1e3  # anything that leaks from padding shows up in the output
    return tokens, mask


@pytest.mark.parametrize("module", [NGramCNN(8, windows=[1, 3, 5], filters=4), CNNHead(8)])
def test_heads_shapes_and_padding_never_leaks(module):
    torch.manual_seed(0)
    tokens, mask = batch([5, 2, 1])
    with torch.no_grad():
        out = module({"token_embeddings": tokens, "attention_mask": mask})
        for i, n in enumerate([5, 2, 1]):  # each sentence alone, without any padding
            alone = module({"token_embeddings": tokens[i : i + 1, :n], "attention_mask": mask[i : i + 1, :n]})
            key = "token_embeddings" if isinstance(module, NGramCNN) else "sentence_embedding"
            torch.testing.assert_close(out[key][i, :n] if key == "token_embeddings" else out[key][i], alone[key][0])
    if isinstance(module, NGramCNN):
        assert out["token_embeddings"].shape == (3, 5, 12)
        assert torch.all(out["token_embeddings"][1, 2:] == 0)  # padding positions are zero
    else:
        assert out["sentence_embedding"].shape == (3, 8)
        assert torch.isfinite(out["sentence_embedding"]).all()  # a one-token sentence survives the pooling stack


def test_cnn_head_kernels_span_tokens_not_hidden_units():
    head = CNNHead(8)
    assert all(conv.kernel_size[1] == 1 for conv in [*head.convs, head.last])
    assert [conv.out_channels for conv in head.convs] + [head.last.out_channels] == [32, 128, 128, 64, 1]
    tokens, mask = batch([4])
    with torch.no_grad():
        base = head({"token_embeddings": tokens.clone(), "attention_mask": mask})["sentence_embedding"]
        tokens[0, :, 3] += 5.0  # move one hidden unit: only that output unit may change
        moved = head({"token_embeddings": tokens, "attention_mask": mask})["sentence_embedding"]
    changed = (moved - base).abs()[0] > 1e-6
    assert changed.tolist() == [i == 3 for i in range(8)]


def test_ngram_cnn_rejects_even_windows():
    with pytest.raises(ValueError, match="odd window"):
        NGramCNN(8, windows=[2])


def direct_infomax(local, mask, sentence) -> float:
    """The IS-BERT formula written out pair by pair."""
    pos, neg = [], []
    for i in range(len(sentence)):
        for j in range(len(sentence)):
            for t in range(local.shape[1]):
                if not mask[j, t]:
                    continue
                score = float(local[j, t] @ sentence[i])
                softplus = math.log1p(math.exp(-score))
                if i == j:
                    pos.append(math.log(2) - softplus)
                else:
                    neg.append(softplus + score - math.log(2))
    return sum(neg) / len(neg) - sum(pos) / len(pos)


def test_infomax_loss_matches_the_formula_on_a_hand_made_batch():
    local, mask = batch([3, 2, 4], hidden=6, seed=1)
    local = local.clamp(max=2.0) * 0.5  # keep softplus in a range math.exp handles
    sentence = torch.randn(3, 6, generator=torch.Generator().manual_seed(2))
    got = float(jsd_mi_loss(local, mask, sentence))
    assert got == pytest.approx(direct_infomax(local, mask, sentence), rel=1e-5)
    # A batch of one has no negatives: only the positive term remains.
    one = float(jsd_mi_loss(local[:1], mask[:1], sentence[:1]))
    positive = math.log(2) - functional.softplus(-(local[0, :3] @ sentence[0])).mean().item()
    assert one == pytest.approx(-positive, rel=1e-5)


def test_infomax_training_lowers_the_loss_on_a_tiny_corpus(tiny_dirs):
    torch.manual_seed(0)
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], "ngram-cnn", device="cpu")
    model.train()
    features = model.tokenize(CORPUS)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for _ in range(30):
        out = model(dict(features))
        loss = jsd_mi_loss(out["token_embeddings"], out["attention_mask"], out["sentence_embedding"])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert np.mean(losses[-5:]) < np.mean(losses[:5]) - 0.1, losses


@pytest.mark.parametrize("head", ["cnn", "ngram-cnn"])
def test_heads_save_and_load_round_trip(tiny_dirs, tmp_path, head):
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], head, device="cpu")
    before = model.encode(CORPUS)
    model.save(tmp_path / "m")
    loaded = SentenceEncoder.load(tmp_path / "m", device="cpu")
    assert [type(m).__name__ for m in loaded] == [type(m).__name__ for m in model]
    np.testing.assert_allclose(loaded.encode(CORPUS), before, atol=1e-6)


def test_cli_trains_isbert_on_plain_text(tiny_dirs, tmp_path):
    text = tmp_path / "corpus.txt"
    text.write_text("\n".join(CORPUS * 3) + "\n", encoding="utf-8")
    out = tmp_path / "isbert"
    done = run_cli("train", "--model", str(tiny_dirs["bert"]), "--pooling", "ngram-cnn", "--objective", "infomax",
                   "--train", f"text:{text}", "--output", str(out), "--batch-size", "8", "--no-progress",
                   "--device", "cpu")  # fmt: skip
    assert done.returncode == 0, done.stderr
    model = SentenceEncoder.load(out, device="cpu")
    assert isinstance(model[1], NGramCNN) and model.encode(["a cat"]).shape == (1, 768)


def test_infomax_without_the_ngram_head_is_refused(tiny_dirs, tmp_path):
    text = tmp_path / "corpus.txt"
    text.write_text("\n".join(CORPUS) + "\n", encoding="utf-8")
    stage = Stage((Objective("infomax", f"text:{text}"),), batch_size=4)
    config = TrainConfig(str(tiny_dirs["bert"]), str(tmp_path / "o"), (stage,), pooling="cls", device="cpu")
    with pytest.raises(SbertError, match="Transformer -> Pooling: train with --pooling ngram-cnn"):
        Trainer(config, show_progress=False).run()


# The CNN head with the two slower objectives runs in `make test-e2e` (make test's time budget): cnn-regression
# and the mean head with every objective stay here.
SLOW_CNN = {("cnn", "classification"), ("cnn", "triplet")}


@pytest.mark.parametrize(
    ("head", "objective"),
    [pytest.param(h, o, marks=pytest.mark.e2e) if (h, o) in SLOW_CNN else (h, o)
     for h in ("mean", "cnn") for o in ("regression", "classification", "triplet")],
)  # fmt: skip
def test_albert_trains_with_every_objective_and_encodes(tiny_dirs, data, tmp_path, objective, head):  # noqa: F811
    train = {
        "regression": f"stsb:{data['train']}",
        "classification": f"nli:{data['nli']}:small",
        "triplet": f"nli-triplets:{data['nli']}:small",
    }[objective]
    stage = Stage((Objective(objective, train),), batch_size=8, max_steps=3)
    config = TrainConfig(str(tiny_dirs["albert"]), str(tmp_path / "a"), (stage,), pooling=head, device="cpu")
    before = SentenceEncoder.from_transformer(tiny_dirs["albert"], head, device="cpu").state_dict()
    Trainer(config, show_progress=False).run()
    model = SentenceEncoder.load(tmp_path / "a", device="cpu")
    moved = [k for k, v in model.state_dict().items() if not torch.equal(v, before[k])]
    assert any(k.startswith("0.") for k in moved)  # the ALBERT encoder itself was updated
    vectors = model.encode(CORPUS)
    assert vectors.shape == (len(CORPUS), 32) and np.isfinite(vectors).all()
