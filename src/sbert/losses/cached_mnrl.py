"""Cached multiple-negatives ranking loss: in-batch negatives at batch sizes whose activations do not fit.

The gradient-cache method (Gao et al. 2021, "Scaling Deep Contrastive Learning Batch Size under
Memory Limited Setup"), in three passes over a batch cut into mini-batches:

1. Embed every mini-batch without autograd, recording the random state first (dropout must draw
   the same masks again in pass 3).
2. The MNRL loss on those embeddings, and its gradient with respect to each embedding.
3. When backward reaches the returned loss, each mini-batch is embedded again with autograd and its
   cached embedding gradient is pushed through the encoder.

The loss value and the gradients equal plain MNRL's on the same batch; peak memory is one
mini-batch's activations plus the batch's embeddings. Option: mini_batch (32).

`gradient_cached` is the method itself, for any output of the model and any loss over the
columns' outputs: the multi-vector kind caches its token matrices with it (losses/multivector.py).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from sbert.device import no_cudnn_attention
from sbert.errors import SbertError
from sbert.losses.mnrl import MultipleNegativesRankingLoss
from sbert.losses.options import Similarity, refuse_unsupported
from sbert.modules.base import Features
from sbert.vectors.scores import cos_sim


@dataclass(frozen=True)
class _RandomState:
    """The generators dropout draws from, as they were before one mini-batch's first pass."""

    device: torch.device
    cpu: Tensor
    cuda: Tensor | None

    @classmethod
    def capture(cls, device: torch.device) -> _RandomState:
        cuda = torch.cuda.get_rng_state(device) if device.type == "cuda" else None
        return cls(device, torch.get_rng_state(), cuda)

    @contextlib.contextmanager
    def replay(self) -> Iterator[None]:
        """Run the block with these states; the generators continue afterwards as if it had not run."""
        with torch.random.fork_rng(devices=[self.device] if self.cuda is not None else []):
            torch.set_rng_state(self.cpu)
            if self.cuda is not None:
                torch.cuda.set_rng_state(self.cuda, self.device)
            yield


@dataclass(frozen=True)
class _Autocast:
    """The autocast setting of the forward, re-entered by the replay (backward runs outside it)."""

    device_type: str
    enabled: bool
    dtype: torch.dtype

    @classmethod
    def current(cls, device: torch.device) -> _Autocast:
        kind = device.type
        return cls(kind, torch.is_autocast_enabled(kind), torch.get_autocast_dtype(kind))

    @contextlib.contextmanager
    def context(self) -> Iterator[None]:
        """The forward's autocast again, with the training forward's attention kernels (sbert.device)."""
        attention = no_cudnn_attention(self.device_type) if self.enabled else contextlib.nullcontext()
        with torch.autocast(self.device_type, dtype=self.dtype, enabled=self.enabled), attention:
            yield

    def paused(self) -> torch.autocast:
        """Autocast off inside `context()`: the outer region stays open, so its weight casts stay cached."""
        return torch.autocast(self.device_type, enabled=False)


class CachedMultipleNegativesRankingLoss(MultipleNegativesRankingLoss):
    """MNRL with the encoder run in mini-batches and the embedding gradients cached between passes."""

    needs_model = True

    def __init__(
        self,
        model: nn.Module | None = None,
        scale: float = 20.0,
        similarity_fct: Similarity = cos_sim,
        mini_batch_size: int = 32,
        mini_batch_num_tokens: int | None = None,
        gather_across_devices: bool = False,
        directions: tuple[str, ...] = ("query_to_doc",),
        partition_mode: str = "joint",
        show_progress_bar: bool = False,
        hardness_mode: str | None = None,
        hardness_strength: float = 0.0,
        *,
        mini_batch: int | None = None,  # sbert's option name (`--option mini_batch=16`)
    ) -> None:
        super().__init__(model, scale, similarity_fct, gather_across_devices, directions, partition_mode, hardness_mode,
                         hardness_strength)  # fmt: skip
        refuse_unsupported(type(self).__name__, {"mini_batch_num_tokens": mini_batch_num_tokens},
                           {"mini_batch_num_tokens": None})  # fmt: skip
        size = mini_batch if mini_batch is not None else mini_batch_size
        if size < 1:
            raise SbertError(f"cached-mnrl: mini_batch={size} must be >= 1")
        self.mini_batch = size
        self.show_progress_bar = show_progress_bar  # the mini-batches are not shown: the step's bar moves per step

    def forward_model(self, model: nn.Module, columns: list[Features], labels: Tensor | None) -> Tensor:
        """The MNRL loss of the batch; its backward replays the encoder one mini-batch at a time."""
        return gradient_cached(model, columns, self.mini_batch, "sentence_embedding", lambda e: self.forward(e, labels))


def gradient_cached(
    model: nn.Module, columns: list[Features], mini_batch: int, output: str, loss_of: Callable[[list[Tensor]], Tensor]
) -> Tensor:
    """`loss_of` the columns' `output` features, the model run in mini-batches without holding their activations.

    Rows of one column share its padding, so a column's mini-batch outputs stack back into one tensor.
    """
    device = columns[0]["input_ids"].device
    chunks = [_chunks(features, mini_batch) for features in columns]
    states: list[list[_RandomState]] = []
    embedded: list[Tensor] = []
    with torch.no_grad():
        for column in chunks:
            states.append([])
            parts = []
            for chunk in column:
                states[-1].append(_RandomState.capture(device))
                parts.append(model(dict(chunk))[output])
            embedded.append(torch.cat(parts).detach().requires_grad_())
    with torch.enable_grad():
        loss = loss_of(embedded)
        cached = torch.autograd.grad(loss, embedded)
    out = loss.detach().requires_grad_()
    out.register_hook(functools.partial(_replay, model, chunks, states, cached, _Autocast.current(device), output))
    return out


def _replay(
    model: nn.Module,
    chunks: list[list[Features]],
    states: list[list[_RandomState]],
    cached: tuple[Tensor, ...],
    amp: _Autocast,
    output: str,
    upstream: Tensor,
) -> None:
    # `upstream` carries whatever scaled the loss after it was returned (accumulation weight, fp16 scale).
    # One autocast region spans every mini-batch: autocast keeps its low-precision copy of each weight
    # until its outermost region closes, so the weights are cast once per step, not once per mini-batch
    # (tests/test_train_syncs.py counts them). Each backward runs with autocast paused inside it.
    with amp.context():
        for column, column_states, grads in zip(chunks, states, cached, strict=True):
            start = 0
            for chunk, state in zip(column, column_states, strict=True):
                rows = len(chunk["input_ids"])
                with state.replay(), torch.enable_grad():
                    vectors = model(dict(chunk))[output]
                grad = grads[start : start + rows] * upstream
                with amp.paused():
                    vectors.backward(grad.to(vectors.dtype))
                start += rows


def _chunks(features: Features, size: int) -> list[Features]:
    rows = len(features["input_ids"])
    return [{k: v[i : i + size] for k, v in features.items()} for i in range(0, rows, size)]
