"""The family x engine table of docs/models.md, measured: each family of tests/zoo.py on each engine.

    python benchmarks/speed/zoo_table.py [--output FILE]

Every family is built and saved by sentence-transformers 6.2 (tiny random weights), loaded by sbert,
and encoded on each engine; a cell gives the largest difference from sentence-transformers' vectors
(fp32 engines), or the lowest cosine to them (int8 engines), or the engine's one-line refusal.
"packed" runs the CUDA engine's packed (padding-free) code on the CPU, the check the GPU-less
machines can make (its kernels differ on a GPU; see docs/speed.md for what is measured there);
"packed: no" means it fell back to padded batches, with the logged reason. "serve" starts `sbert serve`
on the saved folder (a real server on 127.0.0.1, in a thread of this process) and compares what
`POST /v1/embeddings` answers with sentence-transformers' vectors. "train" runs one
forward and backward pass and checks that every trainable parameter got a gradient (the backbone's own
[CLS] pooler is frozen, as training freezes it). A Router row's engine cells are its default route.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.zoo import FAMILIES, build_family

from sbert import SentenceEncoder
from sbert.errors import BackendError

TEXTS = ["A man is playing a guitar.", "ok", "The quarterly report, delayed twice, shows revenue growing " * 3]
ENGINES = ("torch", "onnx", "onnx-int8", "openvino", "openvino-int8")


def engine_cell(model: SentenceEncoder, backend: str, want: np.ndarray) -> str:
    """One cell: the difference from sentence-transformers, or the refusal."""
    try:
        got = model.encode(TEXTS, backend=backend, on_truncation="ignore")
    except BackendError as e:
        return f"refused: {str(e).split(';')[0].split(':')[0]}"
    if backend.endswith("int8"):
        cosine = (got * want).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(want, axis=1)
        return f"yes (cos >= {cosine.min():.4f})"
    return f"yes ({np.abs(got - want).max():.0e})"


def packed_cell(model: SentenceEncoder, want: np.ndarray) -> str:
    """The CUDA engine's packed code on the CPU: packed or not (why), and its difference."""
    from sbert.backends.torch_cuda import CudaBackend
    from sbert.encoding.engine import embed_rows

    routed = model.routed()
    if type(routed[0]).__name__ != "Transformer":
        return "padded torch (no Transformer to pack)"
    records: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(record.getMessage())  # type: ignore[method-assign]
    logging.getLogger("sbert.backends.torch_cuda").addHandler(handler)
    logging.getLogger("sbert.backends.torch_cuda").setLevel(logging.INFO)
    try:
        engine = CudaBackend(routed.as_chain(), torch.device("cpu"), torch.float32)
    finally:
        logging.getLogger("sbert.backends.torch_cuda").removeHandler(handler)
    ids = routed.input_module.token_ids(TEXTS)[0]
    got = embed_rows(engine, ids, routed.chain_dimension)[:, : want.shape[1]]
    reason = next((r.split("packed batches off (", 1)[1].split("): running")[0] for r in records if "off (" in r), "")
    state = "yes" if engine.packed else f"no: {reason}"
    return f"{state} ({np.abs(got - want).max():.0e})"


def serve_cell(saved: Path, want: np.ndarray) -> str:
    """`sbert serve` on the saved folder: the largest difference of /v1/embeddings' rows, or why it failed."""
    from tests.serve_helpers import serve_in_thread, served_vectors

    try:
        server = serve_in_thread("--model", str(saved))
    except Exception as e:
        return f"refused: {str(e).splitlines()[0]}"
    try:
        got = served_vectors(server, TEXTS, saved.name)
    finally:
        server.stop()
    return f"yes ({np.abs(got - want).max():.0e})"


def train_cell(model: SentenceEncoder) -> str:
    """One forward/backward pass: every parameter gets a gradient, or the one-line refusal."""
    if model.router is not None:
        return "refused: Router (train each route, then join)"
    from sbert.training.setup import _freeze_unused_pooler

    _freeze_unused_pooler(model)  # as training does: the backbone's own [CLS] pooler feeds nothing
    model.train()
    model(model.tokenize(TEXTS))["sentence_embedding"].pow(2).sum().backward()
    model.eval()
    missing = [n for n, p in model.named_parameters() if p.requires_grad and p.grad is None]
    return "yes" if not missing else f"no gradient: {missing[0]}"


def main() -> None:
    """Build every family, fill its row, print the table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--output", type=Path, help="also write the table alone to FILE (the quantizer's progress bars share stdout)"
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    from sentence_transformers import SentenceTransformer

    header = ["family", *ENGINES, "packed (CPU check)", "serve", "train"]
    rows = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    print("\n".join(rows))
    for family in FAMILIES:
        with tempfile.TemporaryDirectory() as tmp:
            saved = build_family(family, Path(tmp))
            want = SentenceTransformer(str(saved), device="cpu").encode(TEXTS)
            model = SentenceEncoder.load(saved, device="cpu")
            cells = [engine_cell(model, e, want) for e in ENGINES]
            cells += [packed_cell(model, want), serve_cell(saved, want), train_cell(model)]
        rows.append(f"| {family} | " + " | ".join(cells) + " |")
        print(rows[-1], flush=True)
    if args.output is not None:
        args.output.write_text("\n".join(rows) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
