"""int8 graphs of all-MiniLM-L6-v2 side by side, against fp32, in one run.

    python benchmarks/speed/int8_variants.py [--repeats 5] [--blocks 128] [--calibration 512]

The 2,758 STSb test sentences through the same `encode` path (the onnx backend's batching and
threads, its session swapped for each graph), median of --repeats round-robin passes. Beside each
speed: STSb test Spearman, and the mean 1 - cosine between the graph's vectors and fp32's (x1e-4).
The second is the steadier measure: dynamic int8 quantizes activations per batch, so its Spearman
moves by about 0.1 with batch composition alone.

Rows: dynamic int8 without smoothing (the graph shipped before), the shipped onnx-int8 graph
(LayerNorm-fed activations smoothed, calibrated on the packaged sentences), the same calibrated on
--calibration SNLI/SST-2 sentences (no STS sentence), ONNX Runtime's static QDQ int8 (per-channel
weights, MinMax activation ranges from those sentences, smoothed first), `MatMulNBits` 8-bit
block-wise weights with int8 compute (needs `onnx_ir`, the `bench` extra), ONNX Runtime's BERT
optimizer (fused Attention, SkipLayerNorm, BiasGelu) in fp32 and dynamic int8, and the openvino-int8
backend (NNCF static int8) on the packaged sentences, the same with NNCF's activation ranges left
as they come (the quantizers that OpenVINO reads as signed send their layers to a legacy kernel),
on the SNLI/SST-2 sentences and on 320 SNLI captions alone (needs nncf, the `openvino` extra).
A last column gives the worst row's cosine to fp32.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import random
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import onnx
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import STS_DIR, alternate, median, non_sts_corpus, pair_spearman, sts_sentences
from sbert import SentenceEncoder
from sbert.backends.calibration import feeds, packaged
from sbert.backends.export import input_names, quantize_int8
from sbert.backends.onnx_runtime import make_session
from sbert.backends.smoothing import Feed, smooth

Run = Callable[[], np.ndarray]


def nbits_graph(fp32: Path, block: int, folder: Path) -> Path:
    """The fp32 graph with every MatMul weight in 8-bit blocks of `block`, computed in int8."""
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    quantizer = MatMulNBitsQuantizer(str(fp32), bits=8, block_size=block, is_symmetric=True, accuracy_level=4)
    quantizer.process()
    path = folder / f"nbits8_block{block}.onnx"
    quantizer.model.save_model_to_file(str(path), use_external_data_format=False)
    return path


def static_graph(fp32: Path, calibration: Sequence[Feed], folder: Path) -> Path:
    """Static QDQ int8 of the smoothed graph: per-channel weights, activation ranges from `calibration`."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            self.rest = iter(calibration)

        def get_next(self) -> Feed | None:
            return next(self.rest, None)

    model = onnx.load(str(fp32))
    smooth(model, calibration)
    source, path = folder / "smoothed_fp32.onnx", folder / "static_qdq.onnx"
    onnx.save(model, str(source))
    logging.disable(logging.WARNING)
    quantize_static(str(source), str(path), Reader(), quant_format=QuantFormat.QDQ, op_types_to_quantize=["MatMul"],
                    per_channel=True, weight_type=QuantType.QInt8, activation_type=QuantType.QUInt8)  # fmt: skip
    logging.disable(logging.NOTSET)
    return path


def fused_graphs(model: SentenceEncoder, fp32: Path, folder: Path) -> tuple[Path, Path]:
    """ONNX Runtime's BERT optimizer on the fp32 graph (fused Attention, SkipLayerNorm, BiasGelu), and its int8.

    The int8 one is dynamic and per-channel like onnx-int8, with the fused Attention quantized as
    QAttention (unsmoothed: the LayerNorms are fused away).
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers.optimizer import optimize_model

    config = model.transformer.auto_model.config
    fused, fused_int8 = folder / "fused.onnx", folder / "fused_int8.onnx"
    optimize_model(str(fp32), model_type="bert", num_heads=config.num_attention_heads, hidden_size=config.hidden_size,
                   opt_level=0, use_gpu=False).save_model_to_file(str(fused))  # fmt: skip
    logging.disable(logging.WARNING)
    # Contrib ops defeat the quantizer's shape inference; every tensor it cannot type is float.
    quantize_dynamic(str(fused), str(fused_int8), weight_type=QuantType.QInt8, per_channel=True,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})  # fmt: skip
    logging.disable(logging.NOTSET)
    return fused, fused_int8


def user_feeds(model: SentenceEncoder, count: int) -> list[Feed]:
    """`count` random SNLI/SST-2 sentences (no STS sentence), as graph inputs."""
    sample = random.Random(0).sample(non_sts_corpus(), count)
    return feeds(model.as_chain(), sample, input_names(model.as_chain()))


def openvino_runs(
    model: SentenceEncoder, texts: list[str], user: list[Feed], count: int, folder: Path
) -> dict[str, Run]:
    """The openvino-int8 backend with its shipped model, one calibrated on `user`, and one on captions only.

    The captions-only model (320 SNLI premises) shows what narrow calibration does to static int8:
    the backend's start-up check refuses it, so it is compiled here directly.
    """
    from sbert.backends.openvino_runtime import compile_graph, quantize_openvino

    backend = model.backend("openvino-int8")  # the cache's model: the packaged sentences, unless calibrated
    captions = (STS_DIR.parent / "snli" / "s1.dev").read_text(encoding="utf-8").splitlines()[:320]
    compiled = {"shipped": (backend.compiled, backend.short)}  # wide batches' compile, short ones' (no snippets)
    chain = model.as_chain()
    for which, calibration, unsigned in (
        ("signed", feeds(chain, packaged(), input_names(chain)), False),
        ("user", user, True),
        ("captions", feeds(chain, captions, input_names(chain)), True),
    ):
        path = folder / f"ov_{which}" / "model.xml"
        quantize_openvino(backend.path.parents[1] / "model.onnx", path, calibration, unsigned_inputs=unsigned)
        compiled[which] = tuple(compile_graph(path, "f32", backend.workers, snippets=on) for on in (True, False))

    def on(which: str) -> Run:
        def run() -> np.ndarray:
            backend.compiled, backend.short = compiled[which]  # each thread's infer requests follow them
            return model.encode(texts, backend="openvino-int8", show_progress=False)

        return run

    return {f"**openvino-int8 (shipped): NNCF static, packaged sentences ({len(packaged())})**": on("shipped"),
            "openvino-int8, NNCF's input ranges as they come (6 layers on the legacy kernel)": on("signed"),
            f"openvino-int8: NNCF static, {count} SNLI/SST-2 sentences": on("user"),
            "openvino-int8: NNCF static, 320 SNLI premises only (refused at start-up)": on("captions")}  # fmt: skip


def graphs(
    model: SentenceEncoder, fp32: Path, args: argparse.Namespace, user: list[Feed], folder: Path
) -> dict[str, Path]:
    """Every ONNX Runtime variant's graph file, built fresh in `folder` (the model's int8 cache is not used)."""
    chain, names = model.as_chain(), input_names(model.as_chain())
    out = {"onnx fp32": fp32}
    quantize_int8(fp32, folder / "plain.onnx")
    out["dynamic int8, not smoothed (shipped before)"] = folder / "plain.onnx"
    quantize_int8(fp32, folder / "packaged.onnx", feeds(chain, packaged(), names))
    out[f"**onnx-int8 (shipped): dynamic, smoothed, packaged sentences ({len(packaged())})**"] = (
        folder / "packaged.onnx"
    )
    quantize_int8(fp32, folder / "user.onnx", user)
    out[f"dynamic, smoothed, {args.calibration} SNLI/SST-2 sentences"] = folder / "user.onnx"
    out[f"static QDQ, smoothed, {args.calibration} SNLI/SST-2 sentences"] = static_graph(fp32, user, folder)
    fused, fused_int8 = fused_graphs(model, fp32, folder)
    out["ORT BERT optimizer, fp32 (fused Attention, SkipLayerNorm, BiasGelu)"] = fused
    out["ORT BERT optimizer, dynamic int8 (QAttention), not smoothed"] = fused_int8
    for block in map(int, filter(None, args.blocks.split(","))):
        out[f"MatMulNBits 8-bit, block {block}, int8 compute"] = nbits_graph(fp32, block, folder)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--blocks", default="128", help="block sizes of the MatMulNBits rows ('' for none)")
    parser.add_argument("--calibration", type=int, default=512, help="SNLI/SST-2 sentences to calibrate on")
    args = parser.parse_args()
    model = SentenceEncoder.load("all-MiniLM-L6-v2", device="cpu")
    texts = sts_sentences("test")
    backend = model.backend("onnx")
    folder = Path(tempfile.mkdtemp(prefix="int8-variants-"))
    user = user_feeds(model, args.calibration)
    built = graphs(model, backend.path, args, user, folder)
    sessions = {name: make_session(path, torch.device("cpu"), 1) for name, path in built.items()}

    def on(session: object) -> Run:
        def run() -> np.ndarray:
            backend.session = session  # the same batching, threads and padding for every graph
            return model.encode(texts, backend="onnx", show_progress=False)

        return run

    runs = {name: on(session) for name, session in sessions.items()}
    if importlib.util.find_spec("nncf") is not None:
        runs |= openvino_runs(model, texts, user, args.calibration, folder)
    vectors = {name: run() for name, run in runs.items()}
    ref = vectors["onnx fp32"]
    seconds = alternate(runs, args.repeats)
    print(
        "| graph | sentences/s | STSb test Spearman | mean 1 - cos to fp32 (x1e-4) | worst cos |\n|---|---|---|---|---|"
    )
    for name, got in vectors.items():
        cos = (got * ref).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(ref, axis=1)
        rate, error = len(texts) / median(seconds[name]), abs(1e4 * float(np.mean(1 - cos)))
        print(f"| {name} | {rate:,.0f} | {pair_spearman(got):.2f} | {error:.1f} | {float(cos.min()):.3f} |")


if __name__ == "__main__":
    main()
