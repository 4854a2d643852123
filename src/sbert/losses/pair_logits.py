"""A cross-encoder's objectives: each pair's logits (after an activation) against its label.

    BinaryCrossEntropyLoss   BCE-with-logits(act(logit), label)        one logit; labels in [0, 1]
    CrossEntropyLoss         cross-entropy(act(logits), class)         one logit per class
    LogitMSELoss             (act(logit) - label)²                    one logit; a score or a teacher's logit

sentence-transformers 6.2's constructors, model first (`BinaryCrossEntropyLoss(model, pos_weight=...)`;
6.2 names the third `MSELoss`, which `sbert.cross_encoder.losses` exports under that name). The
activation defaults to none (the identity), as in 6.2. sbert's cross-encoder training
(training/cross_encoder.py) runs every one of them, `sbert train-cross-encoder` included.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn
from torch.nn import functional

from sbert.errors import SbertError

Activation = Callable[[Tensor], Tensor]


class PairLogitLoss(nn.Module):
    """The loss of one batch of pair logits (n, labels) and their targets."""

    # Whether targets are class indices (a long tensor) rather than float scores.
    class_targets = False

    # A module instance as the default, as 6.2's signature has it (the identity holds no state).
    def __init__(self, model: nn.Module | None = None, activation_fn: Activation = nn.Identity()) -> None:  # noqa: B008
        super().__init__()
        self.__dict__["_named_model"] = model  # the cross-encoder named at construction (not a submodule)
        self.activation_fn = activation_fn

    @property
    def model(self) -> nn.Module | None:
        """The cross-encoder named at construction, or None."""
        return self.__dict__.get("_named_model")

    def check_labels(self, num_labels: int) -> None:
        """Raise SbertError when a model with `num_labels` outputs cannot train on this objective."""
        if num_labels != 1:
            raise SbertError(f"{type(self).__name__} trains a one-output cross-encoder; this one has {num_labels}")

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        """The batch's mean loss."""
        raise NotImplementedError


class BinaryCrossEntropyLoss(PairLogitLoss):
    """Binary cross-entropy on each pair's logit; `pos_weight` scales the positive term (class imbalance)."""

    def __init__(self, model: nn.Module | None = None, activation_fn: Activation = nn.Identity(),  # noqa: B008
                 pos_weight: Tensor | float | None = None) -> None:  # fmt: skip
        super().__init__(model, activation_fn)
        self.pos_weight = None if pos_weight is None else torch.as_tensor(pos_weight, dtype=torch.float32)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        """BCE with logits over the batch (labels as floats)."""
        weight = None if self.pos_weight is None else self.pos_weight.to(logits.device)
        return functional.binary_cross_entropy_with_logits(self.activation_fn(logits.view(-1)),
                                                           targets.view(-1).float(), pos_weight=weight)  # fmt: skip


class CrossEntropyLoss(PairLogitLoss):
    """Softmax cross-entropy over a multi-output head's logits (an NLI classifier): targets are class indices."""

    class_targets = True

    def check_labels(self, num_labels: int) -> None:
        """Any head: one output per class."""

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        """Cross-entropy of each pair's logits against its class."""
        return functional.cross_entropy(self.activation_fn(logits), targets.view(-1).long())


class LogitMSELoss(PairLogitLoss):
    """Mean squared error of each pair's (activated) logit against its label: scores, or a teacher's logits."""

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        """MSE over the batch."""
        return functional.mse_loss(self.activation_fn(logits.view(-1)), targets.view(-1).float())
