"""Export a SentenceEncoder to ONNX: the whole chain (encoder, pooling, normalization) in one graph.

sentence-transformers' ONNX export stops at the token embeddings and leaves pooling to Python;
here the graph's output is the sentence embedding itself, so any ONNX runtime serves it alone.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from sbert.backends.base import Chain, run_chain
from sbert.backends.smoothing import Feed, smooth
from sbert.errors import BackendError, first_line
from sbert.modules.transformer import BACKBONE_MASK

OPSET = 17
OUTPUT_NAME = "sentence_embedding"


class EncoderGraph(nn.Module):
    """Positional tensor inputs -> sentence embedding: the shape `torch.onnx.export` traces."""

    def __init__(self, chain: Chain, input_names: tuple[str, ...]) -> None:
        super().__init__()
        self.chain = nn.ModuleList(chain.modules)
        self.input_names = input_names

    def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
        """Run the chain on named inputs and return its sentence embedding."""
        features: dict[str, Any] = dict(zip(self.input_names, tensors, strict=True))
        config = getattr(self.chain[0], "auto_model", None)
        config = getattr(config, "config", None)
        if getattr(config, "model_type", "") in LAYER_TYPE_MASKS:
            features[BACKBONE_MASK] = layer_type_masks(config, features["attention_mask"])
        return run_chain(list(self.chain), features)[OUTPUT_NAME]  # type: ignore[arg-type]


# Backbones whose own mask builder traces through torch.vmap (Gemma3's bidirectional sliding window),
# which the TorchScript exporter cannot follow ("unordered_map::at"). They take a ready mask per layer
# type instead, built here from plain tensor ops.
LAYER_TYPE_MASKS = {"gemma3_text"}


def layer_type_masks(config: Any, mask: torch.Tensor) -> dict[str, torch.Tensor]:
    """Additive (B, 1, T, T) masks keyed by layer type: key padding, causal unless bidirectional, the window.

    A bidirectional sliding layer sees |i - j| < window, a causal one j in (i - window, i], as transformers'
    own mask functions for Gemma3 say.
    """
    keys = mask.bool()[:, None, None, :]  # (B, 1, 1, T)
    positions = torch.arange(mask.shape[1], device=mask.device)
    i, j = positions[:, None], positions[None, :]  # (T, 1), (1, T)
    bidirectional = bool(getattr(config, "use_bidirectional_attention", False))
    full = keys if bidirectional else keys & (j <= i)
    window = int(getattr(config, "sliding_window", 0) or 0)
    near = (i - j).abs() < window if bidirectional else (j > i - window)
    allowed = {"full_attention": full, "sliding_attention": full & near if window else full}
    low = torch.finfo(torch.float32).min  # not -inf: a row with nothing allowed stays finite
    zero = torch.zeros((), dtype=torch.float32, device=mask.device)
    return {kind: torch.where(ok, zero, torch.full_like(zero, low)) for kind, ok in allowed.items()}


def input_names(chain: Chain) -> tuple[str, ...]:
    """The tensors the encoder takes (token_type_ids only for models that accept them)."""
    sample = chain.pad([[0, 1]])
    return tuple(name for name in ("input_ids", "attention_mask", "token_type_ids") if name in sample)


@contextlib.contextmanager
def eager_attention(chain: Chain) -> Iterator[None]:
    """Trace with plain matmul attention, restored afterwards.

    The SDPA path exports extra mask-shaping nodes; the eager graph is smaller and ran a
    little faster under ONNX Runtime's own session-time fusions (LayerNorm, BiasGelu,
    FusedMatMul). Its offline attention fusion was slower on CPU here (458 against 488
    sentences/s), so it is not applied.
    """
    auto_model = chain.transformer.auto_model
    before = getattr(auto_model.config, "_attn_implementation", None)
    setter = getattr(auto_model, "set_attn_implementation", None)
    if setter is None or before in (None, "eager"):
        yield
        return
    setter("eager")
    try:
        yield
    finally:
        setter(before)


def export_onnx(chain: Chain, path: Path) -> None:
    """Trace the encoder on CPU to an fp32 ONNX file, written atomically at `path`."""
    names = input_names(chain)
    # Two rows of different lengths, so the trace sees padding in the mask.
    sample = chain.pad(chain.transformer.token_ids(["a short one", "a somewhat longer sentence here"])[0])
    args = tuple(sample[name].cpu() for name in names)
    dynamic = {name: {0: "batch", 1: "tokens"} for name in names} | {OUTPUT_NAME: {0: "batch"}}
    graph = EncoderGraph(chain, names)
    was_training = chain.transformer.training  # the new wrapper's own flag says nothing
    graph.to("cpu").eval()
    try:
        with eager_attention(chain), temp_beside(path) as tmp, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracer warnings about shape-dependent Python branches
            torch.onnx.export(
                graph,
                args,
                str(tmp),
                dynamo=False,
                input_names=list(names),
                output_names=[OUTPUT_NAME],
                dynamic_axes=dynamic,
                opset_version=OPSET,
                do_constant_folding=True,
            )
    except (RuntimeError, ValueError, TypeError) as e:
        raise BackendError(f"ONNX export failed: {first_line(e)}") from None
    finally:
        graph.to(chain.device).train(was_training)


def quantize_int8(source: Path, path: Path, feeds: Sequence[Feed] = (), reduce_range: bool = False) -> int:
    """Dynamic int8 quantization of every MatMul's weights (activations quantized at run time).

    LayerNorm-fed activations are smoothed first, calibrated on `feeds` (none: not smoothed);
    returns how many were. Per-channel weight scales: as fast as one scale per tensor here, and
    about a third of its error. `reduce_range` (device.int8_reduce_range: an x86 CPU without VNNI)
    quantizes the weights to 7 bits, so ONNX Runtime's 16-bit intermediate sums there cannot overflow.
    """
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = onnx.load(str(source))
    smoothed = smooth(model, feeds) if feeds else 0
    # The quantizer logs a generic pre-processing hint on the root logger at every call.
    logging.disable(logging.WARNING)
    try:
        with tempfile.TemporaryDirectory(dir=path.parent, prefix=".smoothed.") as work, temp_beside(path) as tmp:
            staged = Path(work) / "model.onnx"  # the quantizer takes a path on every supported version
            onnx.save(model, str(staged))
            quantize_dynamic(str(staged), str(tmp), weight_type=QuantType.QInt8, per_channel=True,
                             reduce_range=reduce_range)  # fmt: skip
    finally:
        logging.disable(logging.NOTSET)
    return smoothed


@contextlib.contextmanager
def temp_beside(path: Path) -> Iterator[Path]:
    """A temp file name in `path`'s folder, renamed onto `path` only when the block succeeds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        tmp.chmod(0o644)  # mkstemp makes 0600; a cache beside a shared model must stay readable
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
