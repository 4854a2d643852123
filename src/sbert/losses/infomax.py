"""IS-BERT's objective (Zhang et al. 2020): Jensen-Shannon mutual information, sentence vs n-grams.

It maximises an estimate of the mutual information between a sentence vector E(x) and its own
local n-gram vectors F(x).

    T(f, e) = f . e                                  (dot-product discriminator)
    positive term  = log 2 - softplus(-T(f_i,t, e_i))          f from sentence i, e of sentence i
    negative term  = softplus(-T(f_j,t, e_i)) + T(f_j,t, e_i) - log 2     f from any other sentence j
    loss = mean over negative pairs - mean over positive pairs   (padding tokens excluded)

The other sentences of the batch supply the negatives, so a batch needs at least two sentences;
a batch of one has no negative pairs and contributes only its positive term.
Inputs: unlabelled text (`text:FILE`); the chain must end Transformer -> NGramCNN -> mean Pooling,
whose `token_embeddings` are F(x) and `sentence_embedding` is E(x).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn
from torch.nn import functional

from sbert.errors import SbertError
from sbert.losses.base import Loss
from sbert.losses.gather import gather_rows
from sbert.modules import Features, Pooling

_LOG2 = math.log(2.0)


def jsd_mi_loss(local: Tensor, mask: Tensor, sentence: Tensor) -> Tensor:
    """Negative Jensen-Shannon MI estimate between sentence vectors and local vectors, in-batch negatives."""
    # local: (B, T, D) F(x); mask: (B, T) 1 for real tokens; sentence: (B, D) E(x)
    scores = torch.einsum("jtd,id->ijt", local, sentence)  # (B_sentence i, B_local j, T)
    real = mask.bool().unsqueeze(0).expand_as(scores)  # (B, B, T): is f_j,t a real token
    same = torch.eye(len(sentence), dtype=torch.bool, device=sentence.device)[:, :, None]
    positive = _LOG2 - functional.softplus(-scores)
    negative = functional.softplus(-scores) + scores - _LOG2
    pos_mask, neg_mask = real & same, real & ~same
    pos_term = positive[pos_mask].mean()
    neg_term = negative[neg_mask].mean() if bool(neg_mask.any()) else scores.new_zeros(())
    return neg_term - pos_term


class InfomaxLoss(Loss):
    """IS-BERT: each sentence vector against its own n-gram vectors and the batch's other ones."""

    kinds = ("text",)
    needs_features = True

    def forward(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        """Sentence vectors alone are not enough: the trainer calls `forward_features`."""
        raise TypeError("InfomaxLoss needs the local n-gram vectors: call forward_features")

    def check_model(self, modules: list[nn.Module]) -> None:
        """The chain must end NGramCNN -> mean Pooling (optionally normalized afterwards)."""
        names = [type(m).__name__ for m in modules]
        tail = modules[names.index("NGramCNN") + 1 :] if "NGramCNN" in names else []
        if not tail or not isinstance(tail[0], Pooling) or tail[0].modes != ["mean"]:
            raise SbertError(
                f"objective 'infomax' needs a Transformer -> NGramCNN -> mean Pooling chain, this model has "
                f"{' -> '.join(names)}: train with --pooling ngram-cnn"
            )

    def forward_features(self, features: list[Features], labels: Tensor | None) -> Tensor:
        """The loss from the one text column's features (local vectors, mask, sentence vector)."""
        (column,) = features
        # Under torchrun the other ranks' sentences are negatives too (losses/gather.py): the loss over the global
        # batch, equal on every rank; a mask gathered the same way keeps the token axis's padding out.
        local, _ = gather_rows(column["token_embeddings"], self.gather_across_ranks)
        mask, _ = gather_rows(column["attention_mask"].to(local.dtype), self.gather_across_ranks)
        sentence, _ = gather_rows(column["sentence_embedding"], self.gather_across_ranks)
        return jsd_mi_loss(local, mask, sentence)
