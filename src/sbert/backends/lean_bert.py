"""BERT's packed forward (and the RoBERTa family's) as bare torch calls on the model's own weights, on the CPU.

transformers' modules spend Python on every call (module calls, the attention interface lookup, kwargs
carried through every layer, the mask and output bookkeeping), a share of a forward's CPU next to small
matrices: a server's merged group of short requests runs as forwards of a few sentences a core. The same
arithmetic called directly costs less: the query, key and value projections as one matrix a layer, the
packed attention kernel the modules were switched to (varlen.pick_kernel's), the layer norms of the loaded
modules, each projection as projections.py multiplies it (oneDNN's prepacked weight, the activation and
the residual added in the same call). Where it runs, every CPU batch packs through it, offline encode's
too (torch_cpu.py). Checked against the modules on a probe batch before it is used (`lean_encoder`): any
model it does not match runs through its modules as before. Inference only, float weights only (the CPU
backend already keeps PEFT adapters and int8 Linears off the packed path).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor
from torch.nn import functional

from sbert.backends import varlen
from sbert.backends.packing import PLAIN, PackedBatch, pack
from sbert.backends.projections import Projection, projection
from sbert.errors import first_line
from sbert.vectors.positions import Positions

# The transformers classes whose forward this file repeats, op for op (transformers 5's modeling_bert and
# the RoBERTa family's, BERT's layers under other names), each with its config's model_type. RoBERTa's
# position ids by the backbone's rule (RoBERTa's from padding_idx + 1): the packed batch carries them.
LEAN_CLASSES = {"BertModel": "bert", "RobertaModel": "roberta", "XLMRobertaModel": "xlm-roberta",
                "CamembertModel": "camembert"}  # fmt: skip


@dataclass(frozen=True)
class Norm:
    """A LayerNorm's weights: (H,), (H,) and its epsilon."""

    weight: Tensor
    bias: Tensor
    eps: float

    def __call__(self, x: Tensor) -> Tensor:
        """LayerNorm of (N, H) rows."""
        return functional.layer_norm(x, self.weight.shape, self.weight, self.bias, self.eps)


@dataclass(frozen=True)
class LeanLayer:
    """One encoder layer's projections, the query, key and value ones fused into one (3H, H) weight."""

    qkv: Projection  # H -> 3H
    out: Projection  # H -> H, the residual added
    attention_norm: Norm
    up: Projection  # H -> I, the activation applied
    down: Projection  # I -> H, the residual added
    output_norm: Norm


def lean_layer(layer: Any, act_name: str | None) -> LeanLayer:
    """The weights of one transformers BertLayer (self-attention only) as a LeanLayer; `act_name`: hidden_act."""
    attention, out = layer.attention.self, layer.attention.output
    qkv = (attention.query, attention.key, attention.value)
    up = layer.intermediate
    return LeanLayer(
        projection(torch.cat([p.weight.detach() for p in qkv]), torch.cat([p.bias.detach() for p in qkv])),
        projection(out.dense.weight, out.dense.bias), norm(out.LayerNorm),
        projection(up.dense.weight, up.dense.bias, up.intermediate_act_fn, act_name),
        projection(layer.output.dense.weight, layer.output.dense.bias), norm(layer.output.LayerNorm),
    )  # fmt: skip


def norm(module: torch.nn.LayerNorm) -> Norm:
    """A torch LayerNorm's weights."""
    return Norm(module.weight.detach(), module.bias.detach(), float(module.eps))


class LeanBert:
    """A BERT or RoBERTa encoder's last hidden state for packed batches: (N,) token ids -> (N, H), no modules."""

    def __init__(self, model: Any, kernel: varlen.Kernel) -> None:
        config = model.config
        self.heads = int(config.num_attention_heads)
        self.head_dim = int(config.hidden_size) // self.heads
        self.scale = self.head_dim**-0.5
        self.kernel = kernel
        embeddings = model.embeddings
        self.words = embeddings.word_embeddings.weight.detach()
        self.positions = embeddings.position_embeddings.weight.detach()
        self.type_zero = embeddings.token_type_embeddings.weight.detach()[0]  # packed batches carry type 0 only
        self.embedding_norm = norm(embeddings.LayerNorm)
        act_name = config.hidden_act if isinstance(config.hidden_act, str) else None
        self.layers = [lean_layer(layer, act_name) for layer in model.encoder.layer]

    def __call__(self, batch: PackedBatch) -> Tensor:
        """The encoder's last hidden state for every packed token: (N, H)."""
        x = self.embedding_norm(self.words[batch.input_ids] + self.type_zero + self.positions[batch.position_ids])
        for layer in self.layers:
            x = self.layer(layer, x, batch)
        return x

    def layer(self, layer: LeanLayer, x: Tensor, batch: PackedBatch) -> Tensor:
        """One encoder layer on packed (N, H) rows."""
        qkv = layer.qkv(x).view(x.shape[0], 3, self.heads, self.head_dim)
        context = self.kernel(qkv[:, 0], qkv[:, 1], qkv[:, 2], batch.cu_seqlens, batch.max_len, batch.min_len,
                              self.scale, False)  # fmt: skip
        x = layer.attention_norm(layer.out(context.reshape(x.shape), x))
        return layer.output_norm(layer.down(layer.up(x), x))


def lean_blocker(model: Any) -> str | None:
    """Why `model` cannot take the lean forward (None when it can): only a plain BERT or RoBERTa encoder does."""
    name = type(model).__name__
    config = getattr(model, "config", None)
    model_type = LEAN_CLASSES.get(name)
    if model_type is None or getattr(config, "model_type", None) != model_type:
        return f"{name} is not a plain BERT or RoBERTa encoder"
    if getattr(config, "is_decoder", False) or getattr(config, "add_cross_attention", False):
        return "a decoder or cross-attention BERT"
    positions = getattr(config, "position_embedding_type", "absolute")
    if positions != "absolute":
        return f"position_embedding_type={positions!r}"
    if model.training:  # dropout: the backend's copies are in eval mode, a model being trained is not
        return "a model in training mode"
    if not all(p.dtype.is_floating_point for p in model.parameters()):
        return "weights that are not floating point"
    return None


# Lengths of the probe batch the lean forward must reproduce: a lone token, odd lengths, one longer than the rest.
PROBE_LENGTHS = (5, 1, 17, 9)


def lean_encoder(model: Any, kernel: varlen.Kernel, reference: Callable[[PackedBatch], Tensor],
                 positions: Positions = PLAIN) -> Callable[[PackedBatch], Tensor] | None:  # fmt: skip
    """The lean forward of `model` when it matches `reference` (the modules' packed forward) on a probe batch.

    None, with one log line saying why, for a model it does not cover or does not match: the caller keeps
    the modules. The probe is random token ids in the model's vocabulary, packed as the backend packs
    (positions by `positions`, packed_chain.position_numbering's).
    """
    blocker = lean_blocker(model)
    lean = None
    if blocker is None:
        try:
            lean = LeanBert(model, kernel)
            blocker = probe_mismatch(lean, reference, int(model.config.vocab_size), positions)
        except (AttributeError, RuntimeError, TypeError, ValueError) as e:  # a layout this file does not know
            blocker = f"its modules do not have BERT's layout ({first_line(e)})"
    if blocker is not None:
        varlen.log_once(f"lean packed forward off ({blocker}): running the transformers modules")
        return None
    return lean


def probe_mismatch(lean: LeanBert, reference: Callable[[PackedBatch], Tensor], vocab: int,
                   positions: Positions = PLAIN) -> str | None:  # fmt: skip
    """Why the lean forward's hidden states differ from `reference`'s on a probe batch (None when they agree)."""
    gen = torch.Generator().manual_seed(0)
    rows = [torch.randint(0, vocab, (n,), generator=gen).tolist() for n in PROBE_LENGTHS]
    batch = pack(rows, positions)
    with torch.inference_mode():
        want, got = reference(batch).float(), lean(batch).float()
    if got.shape != want.shape:
        return f"hidden states of shape {tuple(got.shape)} against {tuple(want.shape)}"
    # fp32 rows agree to rounding (fused projections sum in another order); half precision to its own rounding
    tolerance = (1e-4 if lean.words.dtype == torch.float32 else 3e-2) * max(1.0, float(want.abs().max()))
    error = float((got - want).abs().max())
    return None if error <= tolerance else f"max error {error:.3g} against the modules (tolerance {tolerance:.3g})"
