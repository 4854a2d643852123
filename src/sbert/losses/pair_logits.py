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
from sbert.losses.base import Loss

Activation = Callable[[Tensor], Tensor]


class PairLogitLoss(Loss):
    """The loss of one batch of pair logits (n, labels) and their targets.

    On sbert's engine the batch is one column of pairs (reranker/training.py's PairChain) whose
    "sentence vector" is the classifier's logits; `pair_loss` is the math on the logits alone.
    """

    kinds = ("text",)
    # Whether targets are class indices (a long tensor) rather than float scores.
    class_targets = False

    # A module instance as the default, as 6.2's signature has it (the identity holds no state).
    def __init__(self, model: nn.Module | None = None, activation_fn: Activation = nn.Identity()) -> None:  # noqa: B008
        super().__init__()
        self.name_model(model)
        self.activation_fn = activation_fn

    def forward(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        """The loss of the column of pair logits against the labels."""
        assert labels is not None
        return self.pair_loss(embeddings[0], labels)

    def pair_loss(self, logits: Tensor, targets: Tensor) -> Tensor:
        """The batch's mean loss from the logits (n, labels) and the targets."""
        raise NotImplementedError

    def check_labels(self, num_labels: int) -> None:
        """Raise SbertError when a model with `num_labels` outputs cannot train on this objective."""
        if num_labels != 1:
            raise SbertError(f"{type(self).__name__} trains a one-output cross-encoder; this one has {num_labels}")


class BinaryCrossEntropyLoss(PairLogitLoss):
    """Binary cross-entropy on each pair's logit; `pos_weight` scales the positive term (class imbalance)."""

    def __init__(self, model: nn.Module | None = None, activation_fn: Activation = nn.Identity(),  # noqa: B008
                 pos_weight: Tensor | float | None = None) -> None:  # fmt: skip
        super().__init__(model, activation_fn)
        self.pos_weight = None if pos_weight is None else torch.as_tensor(pos_weight, dtype=torch.float32)

    def pair_loss(self, logits: Tensor, targets: Tensor) -> Tensor:
        """BCE with logits over the batch (labels as floats)."""
        weight = None if self.pos_weight is None else self.pos_weight.to(logits.device)
        return functional.binary_cross_entropy_with_logits(self.activation_fn(logits.view(-1)),
                                                           targets.view(-1).float(), pos_weight=weight)  # fmt: skip


class CrossEntropyLoss(PairLogitLoss):
    """Softmax cross-entropy over a multi-output head's logits (an NLI classifier): targets are class indices."""

    class_targets = True

    def check_labels(self, num_labels: int) -> None:
        """Any head: one output per class."""

    def pair_loss(self, logits: Tensor, targets: Tensor) -> Tensor:
        """Cross-entropy of each pair's logits against its class."""
        return functional.cross_entropy(self.activation_fn(logits), targets.view(-1).long())


class LogitMSELoss(PairLogitLoss):
    """Mean squared error of each pair's (activated) logit against its label: scores, or a teacher's logits."""

    def pair_loss(self, logits: Tensor, targets: Tensor) -> Tensor:
        """MSE over the batch."""
        return functional.mse_loss(self.activation_fn(logits.view(-1)), targets.view(-1).float())


class TorchPairLoss(PairLogitLoss):
    """A torch loss (nn.MSELoss(), nn.BCEWithLogitsLoss(), nn.CrossEntropyLoss()) on the activated logits.

    The legacy `CrossEncoder.fit(loss_fct=...)`: a one-output model's logits are flattened and its labels
    taken as floats; a many-output model's labels as class indices.
    """

    def __init__(self, model: nn.Module | None, loss_fct: Callable[[Tensor, Tensor], Tensor],
                 activation_fn: Activation = nn.Identity()) -> None:  # noqa: B008  # fmt: skip
        super().__init__(model, activation_fn)
        self.loss_fct = loss_fct
        self.class_targets = getattr(model, "num_labels", 1) > 1

    def check_labels(self, num_labels: int) -> None:
        """Any head: the torch loss decides what it takes."""

    def pair_loss(self, logits: Tensor, targets: Tensor) -> Tensor:
        """`loss_fct(act(logits), labels)`."""
        if self.class_targets:
            return self.loss_fct(self.activation_fn(logits), targets.view(-1).long())
        return self.loss_fct(self.activation_fn(logits.view(-1)), targets.view(-1).float())
