"""BGE-M3 as a model kind: one XLM-R forward gives a dense vector, lexical weights and ColBERT vectors.

As FlagEmbedding's BGEM3FlagModel computes them (Chen et al. 2024, "BGE M3-Embedding"):
    dense       the first token's ([CLS]) last hidden state, unit length
    lexical     relu(sparse_linear(h_t)) per token; per token id the largest weight, only weights above 0,
                the CLS, EOS, PAD and UNK ids left out: {"token id": weight}
    colbert     colbert_linear(h_t) for every token after [CLS] (the closing </s> included), each unit length
The folder is FlagEmbedding's: the encoder and tokenizer, `colbert_linear.pt` and `sparse_linear.pt` beside
them (torch state dicts of the two Linear heads). The published BGE-M3 also carries sentence-transformers'
files; the heads are found either way. Texts are cut at the folder's maximum length (`max_length=` overrides
it, as in FlagEmbedding). The encoder runs on the multi-vector engine (multivector/engine.py: length-ordered
token-budget batches, a batch per CPU core, the graph runtimes, packed batches on CUDA) as a chain that scores
every real token; each batch is one forward, and the three small heads read its token states.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, cast

import numpy as np
import torch
from torch import nn

from sbert.device import resolve_device
from sbert.errors import ModelFormatError
from sbert.formats.model_dirs import resolve_model_dir
from sbert.m3.heads import M3Heads
from sbert.m3.layout import COLBERT_HEAD, SPARSE_HEAD, is_m3_dir
from sbert.modules.transformer import Transformer
from sbert.vectors.batching import check_sentences
from sbert.vectors.maxsim import maxsim_matrix

if TYPE_CHECKING:
    from sbert.multivector import MultiVectorEncoder

OUTPUTS = ("dense_vecs", "lexical_weights", "colbert_vecs")


def _head(root: Path, name: str, width: int) -> nn.Linear:
    """One saved Linear head (weights only: the file is never unpickled into objects)."""
    try:
        state = torch.load(root / name, map_location="cpu", weights_only=True)
        weight = state["weight"]
        head = nn.Linear(weight.shape[1], weight.shape[0])
        head.load_state_dict(state)
    except (OSError, RuntimeError, KeyError, IndexError) as e:
        raise ModelFormatError(f"{root / name}: not a Linear head's state dict ({e})") from None
    if head.in_features != width:
        raise ModelFormatError(f"{root / name}: takes width {head.in_features}, the encoder gives {width}")
    return head


class M3Encoder(nn.Module):
    """The encoder and BGE-M3's sparse and ColBERT heads; `encode` returns FlagEmbedding's dict."""

    def __init__(self, transformer: Transformer, colbert: nn.Linear, sparse: nn.Linear, device: Any = None) -> None:
        super().__init__()
        self.transformer, self.colbert_linear, self.sparse_linear = transformer, colbert, sparse
        tokenizer = transformer.tokenizer
        tokenizer.padding_side = "right"  # [CLS] at position 0 of every row, as the dense and ColBERT outputs read it
        names = ("cls_token", "eos_token", "pad_token", "unk_token")  # FlagEmbedding's list of ids never weighted
        self.unused_ids = {tokenizer.convert_tokens_to_ids(tokenizer.special_tokens_map[n])
                           for n in names if n in tokenizer.special_tokens_map}  # fmt: skip
        self.source_dir: Path | None = None
        self.to(resolve_device(device))
        self.eval()

    @classmethod
    def load(cls, name_or_path: str | os.PathLike[str], device: Any = None, max_length: int | None = None) -> Self:
        """Load FlagEmbedding's BGE-M3 folder (with or without sentence-transformers' files beside it)."""
        root = resolve_model_dir(name_or_path)
        if not is_m3_dir(root):
            raise ModelFormatError(f"{root}: not a BGE-M3 folder (no {COLBERT_HEAD} and {SPARSE_HEAD})")
        transformer = Transformer.from_pretrained(root, max_length)
        width = transformer.embedding_dimension
        model = cls(transformer, _head(root, COLBERT_HEAD, width), _head(root, SPARSE_HEAD, width), device)
        model.source_dir = root
        return model

    @property
    def device(self) -> torch.device:
        """Where the weights live."""
        return next(self.parameters()).device

    @property
    def max_seq_length(self) -> int:
        """Texts are cut at this many tokens (special tokens included)."""
        return self.transformer.max_seq_length

    @max_seq_length.setter
    def max_seq_length(self, value: int) -> None:
        self.transformer.max_seq_length = value

    def encode(
        self, sentences: str | Iterable[str], batch_size: int | None = None, max_length: int | None = None,
        return_dense: bool = True, return_sparse: bool = False, return_colbert_vecs: bool = False,
        batch_tokens: int | None = None, precision: str = "auto", backend: str = "torch",
        show_progress: bool | None = None,
    ) -> dict[str, Any]:  # fmt: skip
        """FlagEmbedding's dict of the outputs asked for, from one forward per batch (None for the others).

        `dense_vecs` (n, d) float32, `lexical_weights` ({token id: weight} per text), `colbert_vecs`
        ((tokens after CLS, d) float32 per text). One string gives one row / dict / matrix instead of lists.
        `batch_size` caps a batch's rows and `batch_tokens` its padded tokens (the engine's defaults when None);
        `precision` "auto" (fp32 on a CPU: FlagEmbedding's use_fp16=False), "fp32", "bf16" or "fp16";
        `backend` "torch" or a graph runtime ("onnx", "onnx-int8", "openvino", "openvino-int8") for the encoder.
        """
        texts, single = check_sentences(sentences)
        ids, _ = self.transformer.token_ids(texts, max_length or self.max_seq_length)
        engine = self.token_states.engine(precision, backend)
        states = engine.run(ids, None, batch_size, batch_tokens, show_progress)  # float32 (len(row), width) each
        want = {"dense_vecs": return_dense, "lexical_weights": return_sparse, "colbert_vecs": return_colbert_vecs}
        out = self._heads(states, ids, {k for k, wanted in want.items() if wanted})
        result: dict[str, Any] = dict.fromkeys(OUTPUTS)
        for key, rows in out.items():
            result[key] = rows[0] if single else rows
        return result

    @property
    def token_states(self) -> MultiVectorEncoder:
        """The encoder and the three heads as a multi-vector chain: per real token one row of M3Heads' outputs."""
        view = self.__dict__.get("_token_states")  # not a registered submodule: it holds the same modules
        if view is None:
            from sbert.multivector import MultiVectorEncoder

            heads = M3Heads(self.colbert_linear, self.sparse_linear)
            view = self.__dict__["_token_states"] = MultiVectorEncoder([self.transformer, heads], device=self.device)
        return cast("MultiVectorEncoder", view)

    def _heads(self, states: list[np.ndarray], ids: list[list[int]], wanted: set[str]) -> dict[str, Any]:
        """The outputs in `wanted`, read from each text's M3Heads rows (row i: the tokens of ids[i], CLS first)."""
        heads = self.token_states[1]  # the chain's M3Heads: where each output sits in a row
        assert isinstance(heads, M3Heads)
        hidden, colbert, lexical = heads.columns()
        out: dict[str, Any] = {}
        if "dense_vecs" in wanted:
            width = hidden.stop - hidden.start
            out["dense_vecs"] = np.stack([s[0, hidden] for s in states]) if states else np.zeros((0, width), np.float32)
        if "lexical_weights" in wanted:
            out["lexical_weights"] = [self._lexical(s[:, lexical], row) for s, row in zip(states, ids, strict=True)]
        if "colbert_vecs" in wanted:
            out["colbert_vecs"] = [np.ascontiguousarray(s[1:, colbert]) for s in states]  # every token after CLS
        return out

    def _lexical(self, weights: np.ndarray, row: Sequence[int]) -> dict[str, float]:
        """Per token id the largest weight above 0, the special ids left out (right padding: row[i] is position i)."""
        result: dict[str, float] = {}
        for token, weight in zip(row, weights[: len(row)], strict=True):
            if token in self.unused_ids or weight <= 0:
                continue
            key = str(token)
            if weight > result.get(key, 0.0):
                result[key] = float(weight)
        return result


def lexical_matching_score(a: dict[str, float], b: dict[str, float]) -> float:
    """FlagEmbedding's sparse score: the sum over shared token ids of the product of their weights."""
    return float(sum(weight * b[token] for token, weight in a.items() if token in b))


def colbert_score(query: np.ndarray, document: np.ndarray) -> float:
    """FlagEmbedding's ColBERT score: each query vector's best dot product in the document, averaged."""
    if len(query) == 0 or len(document) == 0:
        return 0.0
    return float(maxsim_matrix([query], [document], mean=True)[0, 0])  # the one MaxSim (vectors/maxsim.py)


def pair_scores(query: dict[str, Any], document: dict[str, Any], weights: Sequence[float] = (1.0, 1.0, 1.0)
                ) -> dict[str, float]:  # fmt: skip
    """FlagEmbedding's `compute_score` for one pair: dense, sparse, colbert, and the two weighted means.

    `query` and `document` are single-text `encode` results with all three outputs; `weights` are the dense,
    sparse and ColBERT weights (compute_score's default: equal; its README uses 0.4, 0.2, 0.4), each mean
    divided by the sum of its weights.
    """
    dense = float(np.dot(query["dense_vecs"], document["dense_vecs"]))
    sparse = lexical_matching_score(query["lexical_weights"], document["lexical_weights"])
    late = colbert_score(query["colbert_vecs"], document["colbert_vecs"])
    w_dense, w_sparse, w_colbert = weights
    return {
        "dense": dense, "sparse": sparse, "colbert": late,
        "sparse+dense": weighted_mean((dense, sparse), (w_dense, w_sparse)),
        "colbert+sparse+dense": weighted_mean((dense, sparse, late), (w_dense, w_sparse, w_colbert)),
    }  # fmt: skip


def weighted_mean(values: Sequence[float], weights: Sequence[float]) -> float:
    """sum(w * v) / sum(w), as FlagEmbedding divides: NaN (not an error) when the weights sum to 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(np.float64(sum(w * v for w, v in zip(weights, values, strict=True))) / np.float64(sum(weights)))
