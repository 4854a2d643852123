"""GISTEmbed (Solatorio 2024): in-batch negatives, less the ones a guide model says are not negatives.

    loss = CE(sim(a_i, ·) / τ over [positives; anchors; positives; negatives], target the own positive)

where a candidate the guide scores above the pair's own guide score (less `margin`, absolute or
relative to it) is masked out (-inf) as a likely false negative; the own positive never is. sim is
the cosine, τ = 0.01. Inputs: (anchor, positive) or (anchor, positive, negative). The guide is
frozen and not part of the trained module (no gradient, not in checkpoints); it embeds the same
token ids when it shares the model's vocabulary and length limit, else the decoded texts again.
`CachedGISTEmbedLoss` computes the same loss with the encoder run in mini-batches (losses/cached_mnrl.py).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn
from torch.nn import functional

from sbert.errors import SbertError
from sbert.losses.base import Loss
from sbert.losses.cached_mnrl import gradient_cached
from sbert.losses.gather import gather_rows
from sbert.losses.options import refuse_unsupported
from sbert.modules.base import Features

GUIDE_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def _tokenizer(model: Any) -> Any:
    return getattr(model, "tokenizer", None) or model.transformer.tokenizer


def _cosine(a: Tensor, b: Tensor) -> Tensor:
    """(n, m) cosine of every row of a with every row of b (nn.CosineSimilarity's epsilon)."""
    return functional.cosine_similarity(a.unsqueeze(1), b.unsqueeze(0), dim=-1)


class GISTEmbedLoss(Loss):
    """`GISTEmbedLoss(model, guide, temperature=0.01, margin_strategy="absolute", margin=0.0, ...)` as in 6.2."""

    kinds = ("triplet", "pair")
    needs_features = True
    in_batch_negatives = True

    def __init__(self, model: nn.Module | None = None, guide: nn.Module | None = None, temperature: float = 0.01,
                 margin_strategy: str = "absolute", margin: float = 0.0, contrast_anchors: bool = True,
                 contrast_positives: bool = True, gather_across_devices: bool = False) -> None:  # fmt: skip
        super().__init__()
        if guide is None:
            raise SbertError("GISTEmbedLoss needs guide= (a model that scores the batch's pairs)")
        if margin_strategy not in ("absolute", "relative"):
            raise ValueError("margin_strategy must be 'absolute' or 'relative'.")
        self.name_model(model)
        self.__dict__["guide"] = guide  # not registered: the guide is neither trained nor checkpointed
        self.temperature, self.margin_strategy, self.margin = temperature, margin_strategy, margin
        self.contrast_anchors, self.contrast_positives = contrast_anchors, contrast_positives
        self.gather_across_devices = gather_across_devices
        self.must_retokenize = model is not None and (
            _tokenizer(model).get_vocab() != _tokenizer(guide).get_vocab()
            or guide.max_seq_length < model.max_seq_length  # type: ignore[operator]
        )

    def guide_vectors(self, columns: list[Features]) -> list[Tensor]:
        """The guide's sentence vectors of each column, on the columns' device, without autograd."""
        guide = self.__dict__["guide"]
        device = next(guide.parameters()).device
        out = []
        with torch.no_grad():
            for features in columns:
                if self.must_retokenize:
                    texts = _tokenizer(self.model).batch_decode(features["input_ids"], skip_special_tokens=True)
                    inputs = {k: v.to(device) for k, v in _tokenizer(guide)(
                        texts, padding=True, truncation=True, max_length=guide.max_seq_length,
                        return_tensors="pt").items()}  # fmt: skip
                else:
                    inputs = {k: features[k].to(device) for k in GUIDE_INPUTS if k in features}
                out.append(guide(inputs)["sentence_embedding"].to(features["input_ids"].device))
        return out

    def forward_features(self, features: list[dict[str, Any]], labels: Tensor | None) -> Tensor:
        """The guided loss of the columns' sentence vectors."""
        return self.guided([f["sentence_embedding"] for f in features], self.guide_vectors(features))

    def _masked(self, guided: Tensor, scores: Tensor, own: Tensor, keep: Tensor | None = None) -> Tensor:
        """`scores` with -inf where the guide scores a candidate above the pair's own guide score (less the margin)."""
        bound = own - self.margin if self.margin_strategy == "absolute" else own - own.abs() * self.margin
        mask = guided > bound
        if keep is not None:
            mask = mask & ~keep
        return scores.masked_fill(mask, -torch.inf)

    def guided(self, embeddings: list[Tensor], guides: list[Tensor]) -> Tensor:
        """Cross-entropy over the masked similarity blocks, divided by the temperature."""
        if len(embeddings) not in (2, 3):
            raise SbertError(f"GISTEmbedLoss: expected 2 or 3 text columns, got {len(embeddings)}")
        anchor, anchor_guide = embeddings[0], guides[0]
        # Under torchrun every rank's positives and negatives are candidates (losses/gather.py).
        gathered = [gather_rows(x, self.gather_across_ranks, vectors=True) for x in [*embeddings[1:], *guides[1:]]]
        offset = gathered[0][1]
        positive, positive_guide = gathered[0][0], gathered[len(embeddings) - 1][0]
        rows = torch.arange(len(anchor), device=anchor.device)
        guided_ap = _cosine(anchor_guide, positive_guide)
        own = guided_ap[rows, rows + offset].view(-1, 1)
        keep = torch.zeros_like(guided_ap, dtype=torch.bool)
        keep[rows, rows + offset] = True
        blocks = [self._masked(guided_ap, _cosine(anchor, positive), own, keep)]
        if self.contrast_anchors:
            blocks.append(self._masked(_cosine(anchor_guide, anchor_guide), _cosine(anchor, anchor), own))
        if self.contrast_positives:
            local = slice(offset, offset + len(anchor))
            blocks.append(self._masked(_cosine(positive_guide[local], positive_guide),
                                       _cosine(positive[local], positive), own))  # fmt: skip
        if len(embeddings) == 3:
            negative, negative_guide = gathered[1][0], gathered[3][0]
            blocks.append(self._masked(_cosine(anchor_guide, negative_guide), _cosine(anchor, negative), own))
        scores = torch.cat(blocks, dim=1) / self.temperature
        return functional.cross_entropy(scores, rows + offset)


class CachedGISTEmbedLoss(GISTEmbedLoss):
    """GISTEmbed with the encoder run in mini-batches of `mini_batch_size` (the same loss and gradients)."""

    needs_model = True

    def __init__(self, model: nn.Module | None = None, guide: nn.Module | None = None, temperature: float = 0.01,
                 mini_batch_size: int = 32, mini_batch_num_tokens: int | None = None, show_progress_bar: bool = False,
                 margin_strategy: str = "absolute", margin: float = 0.0, contrast_anchors: bool = True,
                 contrast_positives: bool = True, gather_across_devices: bool = False) -> None:  # fmt: skip
        super().__init__(model, guide, temperature, margin_strategy, margin, contrast_anchors, contrast_positives,
                         gather_across_devices)  # fmt: skip
        refuse_unsupported(type(self).__name__, {"mini_batch_num_tokens": mini_batch_num_tokens},
                           {"mini_batch_num_tokens": None})  # fmt: skip
        if mini_batch_size < 1:
            raise SbertError(f"CachedGISTEmbedLoss: mini_batch_size={mini_batch_size} must be >= 1")
        self.mini_batch, self.show_progress_bar = mini_batch_size, show_progress_bar

    def forward_model(self, model: nn.Module, columns: list[Features], labels: Tensor | None) -> Tensor:
        """The guided loss; its backward replays the encoder one mini-batch at a time."""
        guides = self.guide_vectors(columns)
        return gradient_cached(model, columns, self.mini_batch, "sentence_embedding", lambda e: self.guided(e, guides))
