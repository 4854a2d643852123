"""int8 graphs other than the shipped one, against it and fp32, in one run (issue 23, item 3).

    python benchmarks/int8_variants.py [--repeats 5] [--blocks 32,128]

all-MiniLM-L6-v2, the 2,758 STSb test sentences through the same `encode` path (the onnx
backend's batching and threads, its session swapped for each graph), median of --repeats
round-robin passes, STSb test Spearman beside each. Variants: ONNX Runtime's `MatMulNBits` with
8-bit block-wise symmetric weights and int8 compute (accuracy_level 4: activations quantized per
block, not per tensor). Needs `onnx_ir` (pip install onnx_ir) for ONNX Runtime's quantizer.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch

from common import alternate, median, pair_spearman, sts_sentences
from sbert import SentenceEncoder
from sbert.backends.onnx_runtime import make_session


def nbits_graph(fp32: Path, block: int, folder: Path) -> Path:
    """The fp32 graph with every MatMul weight in 8-bit blocks of `block`, computed in int8."""
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    quantizer = MatMulNBitsQuantizer(str(fp32), bits=8, block_size=block, is_symmetric=True, accuracy_level=4)
    quantizer.process()
    path = folder / f"nbits8_block{block}.onnx"
    quantizer.model.save_model_to_file(str(path), use_external_data_format=False)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--blocks", default="32,128", help="block sizes of the MatMulNBits variants")
    args = parser.parse_args()
    model = SentenceEncoder.load("all-MiniLM-L6-v2", device="cpu")
    texts = sts_sentences("test")
    fp32_backend = model.backend("onnx")
    model.backend("onnx-int8")
    folder = Path(tempfile.mkdtemp(prefix="int8-variants-"))
    sessions = {"onnx fp32": fp32_backend.session}
    for block in map(int, args.blocks.split(",")):
        path = nbits_graph(fp32_backend.path, block, folder)
        sessions[f"MatMulNBits 8-bit, block {block}, int8 compute"] = make_session(path, torch.device("cpu"), 1)

    def on(session: object) -> Callable[[], object]:
        def run() -> object:
            fp32_backend.session = session  # the same batching, threads and padding for every graph
            return model.encode(texts, backend="onnx", show_progress=False)

        return run

    runs = {name: on(session) for name, session in sessions.items()}
    runs["onnx-int8 (shipped: dynamic, per-channel)"] = lambda: model.encode(
        texts, backend="onnx-int8", show_progress=False
    )
    scores = {name: pair_spearman(run()) for name, run in runs.items()}
    seconds = alternate(runs, args.repeats)
    print("| graph | sentences/s | STSb test Spearman |\n|---|---|---|")
    for name in runs:
        print(f"| {name} | {len(texts) / median(seconds[name]):,.0f} | {scores[name]:.2f} |")


if __name__ == "__main__":
    main()
