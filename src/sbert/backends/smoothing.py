"""Activation smoothing for the int8 graph (SmoothQuant, Xiao et al. 2023), calibrated on sentences.

Dynamic int8 quantizes each MatMul's input with one scale per tensor at run time. A LayerNorm
output has a few channels far larger than the rest (all-MiniLM-L6-v2: a channel at 28-30 against
a median of 2), so one scale spends most of the 8 bits on them. Smoothing divides channel j of
such an input by s_j = max|X_j|^alpha / max|W_j|^(1 - alpha) and multiplies row j of every weight
that reads it by s_j: the product is unchanged in fp32, the activation range is flattened, and
the weights (quantized per output channel) absorb the difference.

In post-LayerNorm encoders (BERT, MiniLM, MPNet) the LayerNorm output is also the next residual,
so 1/s cannot be folded into LayerNorm's gamma; it is one Mul per LayerNorm output, whose cost was
within run-to-run noise (docs/speed.md). Only LayerNorm-fed MatMuls are smoothed: smoothing the
GELU and attention-context inputs as well lost quality here (81.62 against 82.03 at alpha 0.5).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
import onnx
from onnx import helper, numpy_helper

# SmoothQuant's default migration strength; the STSb dev score was flat from 0.4 to 0.7.
ALPHA = 0.5
SMOOTHED_PRODUCERS = frozenset({"LayerNormalization"})
Feed = dict[str, np.ndarray]


def smoothable_groups(model: onnx.ModelProto) -> dict[str, list[onnx.NodeProto]]:
    """MatMuls with a constant 2-D weight of their own, grouped by the LayerNorm output they read.

    A weight read by any other node (ALBERT shares one layer's weights across all its layers) is
    left alone, and so is its group: scaling it for one reader would change the others.
    """
    weights = {i.name: i for i in model.graph.initializer}
    producer = {out: node.op_type for node in model.graph.node for out in node.output}
    uses = Counter(name for node in model.graph.node for name in node.input)
    groups: dict[str, list[onnx.NodeProto]] = {}
    shared: set[str] = set()
    for node in model.graph.node:
        if node.op_type != "MatMul" or producer.get(node.input[0]) not in SMOOTHED_PRODUCERS:
            continue
        weight = weights.get(node.input[1])
        if weight is None or len(weight.dims) != 2 or uses[weight.name] > 1:
            shared.add(node.input[0])
        groups.setdefault(node.input[0], []).append(node)
    return {source: nodes for source, nodes in groups.items() if source not in shared}


def activation_absmax(model: onnx.ModelProto, names: Sequence[str], feeds: Sequence[Feed]) -> dict[str, np.ndarray]:
    """Per-channel max |x| of each named tensor over the real (unpadded) tokens of every feed."""
    import onnxruntime

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    for name in names:
        probe.graph.output.append(helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    session = onnxruntime.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    stats: dict[str, np.ndarray] = {}
    for feed in feeds:
        real = feed["attention_mask"].astype(bool)
        outputs = session.run(list(names), feed)
        for name, value in zip(names, outputs, strict=True):
            channel_max = np.abs(value[real]).max(axis=0)
            stats[name] = np.maximum(stats[name], channel_max) if name in stats else channel_max
    return stats


def smooth(model: onnx.ModelProto, feeds: Sequence[Feed], alpha: float = ALPHA) -> int:
    """Smooth `model` in place with statistics from `feeds`; returns how many inputs were smoothed."""
    groups = smoothable_groups(model)
    if not groups:
        return 0
    stats = activation_absmax(model, list(groups), feeds)
    weights = {i.name: i for i in model.graph.initializer}
    muls: dict[str, onnx.NodeProto] = {}
    for k, (source, nodes) in enumerate(groups.items()):
        arrays = [numpy_helper.to_array(weights[n.input[1]]) for n in nodes]
        weight_max = np.max([np.abs(w).max(axis=1) for w in arrays], axis=0)
        # Floors keep dead channels (max 0) from turning into 0 or inf scales.
        scale = np.maximum(stats[source], 1e-5) ** alpha / np.maximum(weight_max, 1e-5) ** (1 - alpha)
        scale = scale.astype(np.float32)
        inverse, smoothed = f"sbert_smooth_{k}", f"{source}_smoothed"
        model.graph.initializer.append(numpy_helper.from_array(1 / scale, inverse))
        muls[source] = helper.make_node("Mul", [source, inverse], [smoothed], name=f"SbertSmooth_{k}")
        for node, array in zip(nodes, arrays, strict=True):
            weights[node.input[1]].CopyFrom(numpy_helper.from_array(array * scale[:, None], node.input[1]))
            node.input[0] = smoothed
    _insert_after_producers(model, muls)
    return len(muls)


def _insert_after_producers(model: onnx.ModelProto, muls: dict[str, onnx.NodeProto]) -> None:
    """Put each new Mul right after the node that makes its input, keeping the graph sorted."""
    ordered: list[onnx.NodeProto] = []
    for node in model.graph.node:
        ordered.append(node)
        ordered.extend(muls[out] for out in node.output if out in muls)
    del model.graph.node[:]
    model.graph.node.extend(ordered)
