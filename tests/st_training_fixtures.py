"""A tiny sentence-transformers folder with dropout off, and the tables each loss trains on, for both libraries."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.tiny_models import CORPUS, build_bert

ROWS = 8  # one batch: both libraries see the same rows in the first step, whatever order they shuffle them in
# Texts with distinct words so vectors differ: pairs from the tiny corpus.
ANCHORS = CORPUS
POSITIVES = [" ".join(reversed(t.split())) for t in CORPUS]
NEGATIVES = CORPUS[1:] + CORPUS[:1]


def tiny_st_folder(base: Path) -> Path:
    """A tiny BERT + mean pooling saved by sentence-transformers itself, dropout off (steps are deterministic)."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer import modules as models

    bert = build_bert(base / "bert")
    transformer = models.Transformer(str(bert), config_kwargs={"hidden_dropout_prob": 0.0,
                                                             "attention_probs_dropout_prob": 0.0})  # fmt: skip
    pooling = models.Pooling(transformer.get_embedding_dimension(), "mean")
    out = base / "st"
    SentenceTransformer(modules=[transformer, pooling], device="cpu").save(str(out))
    return out


def tables() -> dict[str, dict[str, list]]:
    """Each kind of table, as a dict of columns (both libraries read the same `datasets.Dataset` from it)."""
    rng = np.random.default_rng(0)
    scores = [float(x) for x in rng.uniform(0, 1, ROWS)]
    return {
        "pair": {"anchor": ANCHORS, "positive": POSITIVES},
        "triplet": {"anchor": ANCHORS, "positive": POSITIVES, "negative": NEGATIVES},
        "score": {"sentence1": ANCHORS, "sentence2": NEGATIVES, "score": scores},
        "class": {"premise": ANCHORS, "hypothesis": NEGATIVES, "label": [i % 3 for i in range(ROWS)]},
        "teacher": {"english": ANCHORS, "label": [list(rng.normal(size=32).astype(float)) for _ in range(ROWS)]},
        "binary": {"sentence1": ANCHORS, "sentence2": NEGATIVES, "label": [i % 2 for i in range(ROWS)]},
        # a cross-encoder teacher's margin (positive minus negative), or its score of each candidate
        "margins": {"query": ANCHORS, "positive": POSITIVES, "negative": NEGATIVES,
                    "label": [float(x) for x in rng.normal(size=ROWS)]},
        "labelled": {"text": ANCHORS, "label": [i % 3 for i in range(ROWS)]},  # each label on 2-3 rows
        "texts": {"text": ANCHORS},
        "teacher-scores": {"query": ANCHORS, "positive": POSITIVES, "negative": NEGATIVES,
                           "label": [list(rng.normal(size=2).astype(float)) for _ in range(ROWS)]},
    }  # fmt: skip


def tiny_splade_folder(base: Path) -> Path:
    """A tiny random MaskedLM + SpladePooling saved by sentence-transformers' SparseEncoder, dropout off."""
    import torch
    from sentence_transformers import SparseEncoder
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sparse_encoder.modules import SpladePooling
    from transformers import AutoConfig, AutoModelForMaskedLM, AutoTokenizer

    bert = build_bert(base / "bert")
    config = AutoConfig.from_pretrained(bert, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    torch.manual_seed(7)
    AutoModelForMaskedLM.from_config(config).save_pretrained(base / "mlm")
    AutoTokenizer.from_pretrained(bert).save_pretrained(base / "mlm")
    transformer = Transformer(str(base / "mlm"), transformer_task="fill-mask")
    out = base / "splade"
    SparseEncoder(modules=[transformer, SpladePooling("max")], device="cpu").save(str(out))
    return out


def tiny_cross_encoder_folder(base: Path, labels: int) -> Path:
    """A tiny random BERT sequence classifier with `labels` outputs, dropout off, scores spread apart."""
    import torch
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

    bert = build_bert(base / "bert")
    # A wide initialisation: a tiny random model's scores would otherwise lie within float noise of each other.
    config = AutoConfig.from_pretrained(bert, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                                        num_labels=labels, initializer_range=0.5)  # fmt: skip
    torch.manual_seed(3)
    out = base / f"cross-encoder-{labels}"
    AutoModelForSequenceClassification.from_config(config).save_pretrained(out)
    AutoTokenizer.from_pretrained(bert).save_pretrained(out)
    return out


def kind_folders(base: Path) -> dict[str, Path]:
    """One tiny folder per drop-in class, saved by sentence-transformers, keyed by the class name."""
    return {"SentenceTransformer": tiny_st_folder(base / "st"), "SparseEncoder": tiny_splade_folder(base / "splade"),
            "CrossEncoder": tiny_cross_encoder_folder(base / "ce", labels=1)}  # fmt: skip
