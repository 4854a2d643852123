"""Getting a model ready to train: a LoRA adapter on its transformer, frozen heads, gradient checkpointing."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from sbert.adapters.peft_io import parameter_counts, wrap_lora
from sbert.adapters.spec import LoraSpec, choose_targets
from sbert.errors import SbertError

if TYPE_CHECKING:
    from sbert.dense.model import SentenceEncoder

log = logging.getLogger(__name__)


def add_lora(model: SentenceEncoder, spec: LoraSpec, fresh_head: bool = False) -> str:
    """Wrap the model's transformer with a new LoRA adapter and freeze what should not train; returns the log line.

    Only the adapter's matrices get gradients (and so optimizer state), plus the heads after the
    transformer when `spec.heads` is "train", or "auto" and the head was built fresh for this run.
    """
    from sbert.modules import Transformer

    first = model.chain()[0]
    if not isinstance(first, Transformer):
        raise SbertError(f"--lora needs a transformer model; this one starts with {type(first).__name__} (no weights "
                         "to adapt: train it fully)")  # fmt: skip
    if first.has_adapter:
        raise SbertError("the model already has an adapter: train it without --lora, or merge it first")
    targets = choose_targets(first.auto_model, spec)
    first.auto_model = wrap_lora(first.auto_model, spec, targets)
    train_heads = spec.heads == "train" or (spec.heads == "auto" and fresh_head)
    for module in model.chain()[1:]:
        module.requires_grad_(train_heads)
    model.mark_weights_changed()
    trainable, total = parameter_counts(model)
    line = (
        f"LoRA r={spec.r} alpha={spec.alpha:g} dropout={spec.dropout:g} on {', '.join(targets)} of "
        f"{type(first.auto_model.get_base_model()).__name__} (heads {'train' if train_heads else 'frozen'}): "
        f"{trainable:,} of {total:,} parameters train ({100 * trainable / max(total, 1):.2f}%)"
    )
    log.info(line)
    return line


def enable_checkpointing(model: SentenceEncoder) -> None:
    """Recompute the transformer's activations in the backward pass instead of keeping them (less memory, ~30% slower).

    The non-reentrant variant: it needs no gradient on the inputs, so it works with a frozen embedding table (LoRA).
    """
    from sbert.modules import Transformer

    first = model.chain()[0]
    if not isinstance(first, Transformer):
        raise SbertError(f"gradient checkpointing needs a transformer; this model starts with {type(first).__name__}")
    backbone = first.auto_model.get_base_model() if first.has_adapter else first.auto_model
    if not getattr(backbone, "supports_gradient_checkpointing", False):
        raise SbertError(f"gradient checkpointing: {type(backbone).__name__} does not support it")
    kwargs = {"use_reentrant": False}
    if hasattr(backbone, "activation_checkpointing_enable"):  # transformers 5's name (the old one warns)
        backbone.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
    else:
        backbone.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
