"""CrossEncoder: scores a (query, document) pair by reading both texts at once.

    score(a, b) = activation(classifier(encoder([CLS] a [SEP] b [SEP])))

The paper's other half: too slow to search a corpus with (every pair needs its own forward
pass), the most accurate way to order a short list, so retrieval systems rerank the bi-encoder's
top hits with it. Folders follow sentence-transformers' CrossEncoder layout (a Hugging Face
sequence-classification model, its tokenizer, config_sentence_transformers.json naming the
activation), so models move both ways. Scoring runs on the encode engine: token-budget
batches, the torch (CPU, CUDA) and ONNX fp32/int8 backends.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Self

import numpy as np
import torch
from torch import nn

from sbert.backends import Backend, Chain, open_backend
from sbert.dense.model import SentenceEncoder
from sbert.device import backend_dtype, resolve_device
from sbert.encoding.engine import check_batch_sizes, embed_rows
from sbert.errors import ModelFormatError, SbertError
from sbert.formats import layout
from sbert.formats.model_config import EncoderSettings, read_settings
from sbert.formats.model_dirs import resolve_model_dir
from sbert.modules.classifier import PairClassifier
from sbert.modules.logit_score import LogitPairScorer, is_causal_lm
from sbert.mteb_protocol import MtebCrossEncoder, mteb_entry
from sbert.reranker.shared_prefix import groups_worth_sharing, prefix_scores
from sbert.reranker.vision_scorer import VisionPairScorer, is_vision_reranker, load_vision_scorer
from sbert.similarity import rank_order
from sbert.weights_state import TracksWeights

# The activations sentence-transformers records by dotted path, as NumPy functions on logits.
ACTIVATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "torch.nn.modules.activation.Sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "torch.nn.modules.linear.Identity": lambda x: x,
    "torch.nn.modules.activation.Tanh": np.tanh,
}
SIGMOID, IDENTITY = "torch.nn.modules.activation.Sigmoid", "torch.nn.modules.linear.Identity"
LEGACY_HEAD_FILE = "cross_encoder_head.safetensors"  # sbert's pre-0.2 baseline format


class CrossEncoder(MtebCrossEncoder, TracksWeights, nn.Module):
    """A sequence-classification transformer over text pairs, with predict and rank."""

    def __init__(
        self, classifier: PairClassifier | LogitPairScorer | VisionPairScorer, activation: str | None = None,
        device: Any = None,
    ) -> None:  # fmt: skip
        super().__init__()
        self.classifier = classifier
        self.activation = activation or (SIGMOID if classifier.num_labels == 1 else IDENTITY)
        check_activation(self.activation)
        self.settings = EncoderSettings(model_type="CrossEncoder")  # prompts, as config_sentence_transformers.json
        self.source_dir: Path | None = None
        self.to(resolve_device(device))
        self.eval()

    @classmethod
    def new(
        cls, name_or_path: str | os.PathLike[str], num_labels: int = 1, max_seq_length: int | None = None,
        device: Any = None,
    ) -> Self:  # fmt: skip
        """A cross-encoder with a fresh classification head on a Hugging Face encoder (for training)."""
        root = resolve_model_dir(name_or_path)
        classifier = PairClassifier.from_pretrained(root, max_seq_length, num_labels=num_labels)
        return cls(classifier, device=device)

    @classmethod
    def load(
        cls, name_or_path: str | os.PathLike[str], device: Any = None, dtype: str | torch.dtype | None = None,
        max_seq_length: int | None = None,
    ) -> Self:  # fmt: skip
        """Load a cross-encoder folder: sentence-transformers' layout, a sequence classifier or an LLM reranker.

        `dtype` keeps the weights in another dtype ("bf16", "fp16", "auto" for the stored one); "int8" holds the
        Linears in int8 and no float copy of them (a CPU model for inference only, backends/torch_int8.hold_int8).
        """
        root = resolve_model_dir(name_or_path)
        if (root / LEGACY_HEAD_FILE).is_file():
            raise ModelFormatError(f"{root}: an sbert 0.1 cross-encoder baseline; retrain it (train-cross-encoder)")
        config = layout.read_json(root / "config.json") if (root / "config.json").is_file() else {}
        classifier = _scorer(root, config.get("architectures") or [], "auto" if dtype == "int8" else dtype)
        if dtype == "int8":  # the Linears held in int8 alone, as SentenceEncoder.load(dtype="int8")
            from sbert.backends.torch_int8 import hold_int8

            hold_int8([classifier], resolve_device(device))
        if max_seq_length is not None:
            classifier.max_seq_length = max_seq_length
        model = cls(classifier, saved_activation(root, config), device=device)
        model.settings = read_settings(root, model_type="CrossEncoder")
        model.source_dir = root
        return model

    @property
    def device(self) -> torch.device:
        """Where the weights live."""
        return next(self.parameters()).device

    @property
    def num_labels(self) -> int:
        """Scores per pair (1: a relevance score)."""
        return self.classifier.num_labels

    @property
    def max_seq_length(self) -> int:
        """Tokens of a joined pair; longer pairs are cut, the longer text first."""
        return self.classifier.max_seq_length

    def forward(self, features: dict[str, torch.Tensor]) -> torch.Tensor:
        """Logits (B,) for one label, else (B, num_labels), with gradients (training)."""
        logits = self.classifier(dict(features))["sentence_embedding"]
        return logits.squeeze(-1) if self.num_labels == 1 else logits

    def tokenize_pairs(self, pairs: Sequence[tuple[str, str]]) -> dict[str, torch.Tensor]:
        """Padded joint inputs on the model's device."""
        return {k: v.to(self.device) for k, v in self.classifier.tokenize_pairs(pairs).items()}

    @mteb_entry
    def predict(
        self, pairs: Sequence[tuple[Any, Any]], batch_size: int | None = None, batch_tokens: int | None = None,
        backend: str = "torch", precision: str = "auto", activation: bool = True, show_progress: bool | None = None,
        prompt_name: str | None = None, prompt: str | None = None,
    ) -> np.ndarray:  # fmt: skip
        """Scores in input order: (n,) for one label, (n, num_labels) otherwise.

        The activation (sigmoid for one label) applies unless `activation=False` (raw logits).
        Pairs are batched by joint length within a token budget, as encode batches sentences.
        A prompt (`prompt`, else the saved one named `prompt_name`, else the default) goes where
        sentence-transformers puts it: before each pair's first text, or an LLM reranker's system turn.
        """
        check_batch_sizes(batch_size, batch_tokens)
        if isinstance(self.classifier, VisionPairScorer):  # texts and images through the model's chat template
            if backend != "torch":
                raise ValueError(f"backend={backend!r}: a vision-language reranker runs on the torch backend")
            logits = self.media_scores(pairs, batch_size, prompt_name, prompt)[0]
            return ACTIVATIONS[self.activation](logits) if activation else logits
        text = self.settings.resolve_prompt(prompt_name=prompt_name, prompt=prompt)
        rows = check_pairs(pairs)
        ids = self.classifier.prompted_pair_ids(rows, text)
        engine = self.backend(backend, precision)
        logits = np.zeros((len(ids), self.num_labels), dtype=np.float32)
        shared = self._shared_prefix_groups(rows, ids, backend, precision)
        for group in shared:  # one query's pairs: their common prompt prefix runs once (shared_prefix.py)
            logits[group, 0] = prefix_scores(self.classifier, [ids[i] for i in group])  # type: ignore[arg-type]
        rest = sorted(set(range(len(ids))) - {i for g in shared for i in g})
        if rest:
            logits[rest] = embed_rows(engine, [ids[i] for i in rest], self.num_labels, batch_size, batch_tokens,
                                      show_progress)  # fmt: skip
        scores = ACTIVATIONS[self.activation](logits) if activation else logits
        return scores[:, 0] if self.num_labels == 1 else scores

    @property
    def reads_images(self) -> bool:
        """Whether the pairs may hold images (a vision-language reranker), not only texts."""
        return isinstance(self.classifier, VisionPairScorer)

    def media_scores(
        self, pairs: Sequence[tuple[Any, Any]], batch_size: int | None = None, prompt_name: str | None = None,
        prompt: str | None = None,
    ) -> tuple[np.ndarray, int]:  # fmt: skip
        """A vision-language reranker's logits (n,) for pairs of texts and images, and the tokens they took.

        The prompt is resolved as `predict` resolves it; VisionPairScorer.score batches `batch_size` pairs.
        """
        if not isinstance(self.classifier, VisionPairScorer):
            raise ValueError("this cross-encoder reads text pairs only")
        text = self.settings.resolve_prompt(prompt_name=prompt_name, prompt=prompt)
        logits, tokens = self.classifier.score(self.classifier.check_pairs(pairs), text or None, batch_size or 8)
        return logits.numpy(), tokens

    def _shared_prefix_groups(
        self, pairs: list[tuple[str, str]], ids: list[list[int]], backend: str, precision: str
    ) -> list[list[int]]:  # fmt: skip
        """Groups of one query's pairs for the shared-prefix run: an LLM reranker in torch on the CPU, as held."""
        if backend != "torch" or self.device.type != "cpu" or self.classifier.packed_output != "last_token_score":
            return []
        held = next(self.classifier.auto_model.parameters()).dtype
        if self._compute_dtype(backend, precision) != held:
            return []  # another compute dtype: the engine's cast copy runs it
        return groups_worth_sharing([query for query, _ in pairs], ids)

    def rank(
        self, query: Any, documents: Sequence[Any], top_k: int | None = None, return_documents: bool = False,
        **predict_options: Any,
    ) -> list[dict[str, Any]]:  # fmt: skip
        """The documents ordered by score, best first: dicts with corpus_id, score (and text).

        top_k keeps the best k (default, or more than there are: all, as sentence-transformers);
        no documents rank to []; ties keep input order (search/rerank.py's rule).
        """
        if not isinstance(query, str) and not self.reads_images:
            raise TypeError(f"query must be a str, got {type(query).__name__}")
        docs = list(documents)
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0):
            raise ValueError(f"top_k must be a non-negative integer or None, got {top_k!r}")
        if self.num_labels != 1:
            raise ValueError(f"rank needs a one-score cross-encoder; this one has {self.num_labels} labels")
        if not docs:
            return []
        scores = self.predict([(query, d) for d in docs], **predict_options)
        order = rank_order(scores, top_k)
        return [
            {"corpus_id": int(i), "score": float(scores[i])} | ({"text": docs[i]} if return_documents else {})
            for i in order
        ]

    def gpu_batch_tokens(self, backend: str = "torch", precision: str = "auto") -> int | None:
        """The engine's own token budget where the model runs on a GPU, else None."""
        return self.backend(backend, precision).default_batch_tokens if self.device.type == "cuda" else None

    def backend(self, name: str = "torch", precision: str = "auto") -> Backend:
        """The engine backend `name` in `precision`, built once per weights state (ONNX: exported and checked)."""
        dtype = self._compute_dtype(name, precision)
        chain = self.as_chain()
        return self.cached_engine(
            (name, str(self.device), dtype), lambda: open_backend(chain, name, self.device, dtype)
        )

    def as_chain(self) -> Chain:
        """The pair scorer as the engines run it: one module whose `sentence_embedding` is the logits."""
        return Chain((self.classifier,), self.num_labels, self.device, self.weights_digest, self.source_dir)

    def _compute_dtype(self, backend: str, precision: str) -> torch.dtype:
        """The dtype `backend` runs in at `precision` (auto: probed for the model's width on a CPU)."""
        width = getattr(self.classifier.auto_model.config, "hidden_size", None)
        return backend_dtype(backend, precision, self.device, width)

    def weights_digest(self) -> str:
        """sha256 of the weights and the module config (keys the ONNX cache)."""
        from sbert.backends.cache import model_digest

        return model_digest(nn.Sequential(self.classifier))

    def training_chain(self) -> SentenceEncoder:
        """What sbert's training engine trains for this model: its classifier as a chain over pairs (training.py)."""
        from sbert.reranker.training import PairChain

        return PairChain(self)

    def save(self, path: str | os.PathLike[str], *, extras: Callable[[Path], None] | None = None) -> None:
        """Write sentence-transformers' CrossEncoder layout atomically (a kill mid-save keeps the old copy).

        `extras` may add files (a model card, the training log) inside the same atomic write.
        """
        from sbert.backends.torch_int8 import holds_int8

        if holds_int8(self):
            raise SbertError(f"{path}: this cross-encoder holds its weights in int8 (loaded with dtype='int8') and "
                             "cannot be saved; load it without dtype to save or train it")  # fmt: skip
        # sentence-transformers 4-5 read the activation from config.json, 6 from its own file.
        self.classifier.auto_model.config.sentence_transformers = {"activation_fn": self.activation}
        with layout.atomic_directory(path) as tmp:
            self.classifier.save(tmp)
            layout.write_json(tmp / layout.MODEL_CONFIG_FILE, {
                "__version__": {"sbert": _version(), "pytorch": torch.__version__},
                "activation_fn": self.activation, "model_type": "CrossEncoder",
                "prompts": dict(self.settings.prompts), "default_prompt_name": self.settings.default_prompt_name,
            })  # fmt: skip
            layout.write_modules(tmp, self.classifier.module_entries())
            if extras is not None:
                extras(tmp)


def _scorer(
    root: Path, architectures: list[str], dtype: str | torch.dtype | None
) -> PairClassifier | LogitPairScorer | VisionPairScorer:
    """The folder's pair scorer: a sequence classifier, or a causal / vision-language LM read by LogitScore."""
    if is_vision_reranker(root, architectures):
        return load_vision_scorer(root, dtype)
    if is_causal_lm(architectures):
        scorer = LogitPairScorer.load(root, dtype=dtype)
        scorer.read_score_config(root)
        return scorer
    if not any(str(a).endswith("ForSequenceClassification") for a in architectures):
        raise ModelFormatError(
            f"{root}: not a cross-encoder (config.json names no *ForSequenceClassification or *ForCausalLM model); "
            "start one from an encoder with CrossEncoder.new or `sbert train-cross-encoder`"
        )
    return PairClassifier.load(root, dtype=dtype)


def check_activation(name: str) -> None:
    """Refuse an activation this library cannot apply (its name is a dotted torch path)."""
    if name not in ACTIVATIONS:
        raise ModelFormatError(f"unsupported cross-encoder activation {name!r}; known: {', '.join(ACTIVATIONS)}")


def saved_activation(root: Path, config: dict[str, Any]) -> str | None:
    """The activation a folder records: config_sentence_transformers.json (6.x), config.json (4-5, older)."""
    saved = read_settings(root).activation_fn
    if saved:
        return saved
    return (config.get("sentence_transformers") or {}).get("activation_fn") or config.get(
        "sbert_ce_default_activation_function"
    )


def check_pairs(pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The pairs as a list of (str, str); anything else is a one-line error naming the first bad one."""
    if isinstance(pairs, str | bytes) or not isinstance(pairs, Sequence):
        raise TypeError(f"pairs must be a list of (text, text), got {type(pairs).__name__}")
    out = []
    for i, pair in enumerate(pairs):
        if isinstance(pair, str) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise ValueError(f"pairs[{i}] must be two texts (text, text), got {pair!r:.80}")
        if not all(isinstance(t, str) for t in pair):
            raise ValueError(f"pairs[{i}] has a side that is not text: {pair!r:.80}")
        out.append((pair[0], pair[1]))
    return out


def _version() -> str:
    from sbert.version import __version__

    return __version__
