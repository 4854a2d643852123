"""SPLADE encode speed and memory: sbert's SparseEncoder against sentence-transformers' in the same run.

    python benchmarks/speed/sparse_encode.py --workdir /tmp/splade [--batch-size 32] [--rounds 2] [--device cuda]
        [--engines sentence-transformers,sbert,sbert-onnx-int8] [--baseline-src OLD_CHECKOUT/src]

The model is a random-weight BERT-base-size MLM (12 layers, width 768, a 30,522-token head) with
SPLADE max pooling, built and saved by sentence-transformers. It encodes the STSb test sentences
(2,758), with sbert on torch, ONNX Runtime and OpenVINO (`backend="onnx"`, `"openvino"`). Each engine runs in its own
process, so each process's peak RSS is its own. The rounds alternate between the engines, and each
figure is the median of its rounds. Each sbert engine's vectors are compared with
sentence-transformers': the active dimensions that differ, and the largest difference.
The int8 graphs (`sbert-onnx-int8`, `sbert-openvino-int8`) are compared by the cosine of each row.
`--baseline-src` runs every sbert engine a second time from another checkout's `src` (named
`base:ENGINE`), alternating with this one, for before/after ratios of a change in one run.
With `--device cuda` (gpu_check.sh's `sparse` step) only the torch engines run, sbert on its packed
path, both in fp32; peak memory is then torch's peak GPU allocation.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import random_bert_base, sts_sentences

BACKENDS = {"sbert": "torch", "sbert-onnx": "onnx", "sbert-openvino": "openvino", "sbert-onnx-int8": "onnx-int8",
            "sbert-openvino-int8": "openvino-int8"}  # fmt: skip
DEFAULT_ENGINES = "sentence-transformers,sbert,sbert-onnx,sbert-openvino"


def build(workdir: Path) -> Path:
    """The SPLADE folder, written once by sentence-transformers."""
    splade = workdir / "splade-bert-base-random"
    if (splade / "modules.json").is_file():
        return splade
    from sentence_transformers import SparseEncoder as STSparse
    from sentence_transformers.base.modules import Transformer as STTransformer
    from sentence_transformers.sparse_encoder.modules import SpladePooling as STSplade

    mlm = random_bert_base(workdir / "mlm", "BertForMaskedLM")
    STSparse(modules=[STTransformer(str(mlm), transformer_task="fill-mask"), STSplade("max")], device="cpu").save(
        str(splade)
    )
    return splade


def child(engine: str, folder: str, batch_size: int, out: str, device: str = "cpu") -> None:
    """Encode the sentences once to warm up, then time one pass; save the vectors; print seconds and peak memory."""
    import numpy as np
    import scipy.sparse
    import torch

    sentences = sts_sentences("test")
    if engine.removeprefix("base:").startswith("sbert"):
        from sbert import SparseEncoder

        backend = BACKENDS[engine.removeprefix("base:")]
        model = SparseEncoder.load(folder, device=device)
        model.encode(sentences[:64], batch_size=batch_size, backend=backend)  # exports the graph once for onnx
        start = time.perf_counter()
        vectors = model.encode(sentences, batch_size=batch_size, backend=backend)
    else:
        from sentence_transformers import SparseEncoder as STSparse

        st = STSparse(folder, device=device)
        st.encode(sentences[:64], batch_size=batch_size)
        start = time.perf_counter()
        tensor = st.encode(sentences, batch_size=batch_size, convert_to_sparse_tensor=True).coalesce().cpu()
        index, values = tensor.indices().numpy(), tensor.values().numpy()
        vectors = scipy.sparse.csr_matrix((values, (index[0], index[1])), shape=tuple(tensor.shape), dtype=np.float32)
    seconds = time.perf_counter() - start  # both answers are host CSR data: every GPU kernel has finished
    scipy.sparse.save_npz(out, scipy.sparse.csr_matrix(vectors))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    if device.startswith("cuda"):
        peak = torch.cuda.max_memory_allocated() / 2**30
    print(json.dumps({"seconds": seconds, "peak_gib": peak}))


def compare(workdir: Path, engine: str = "sbert") -> None:
    """An sbert engine's vectors against sentence-transformers': differing active dimensions, the largest gap.

    A weight of log(1 + relu(x)) is exactly 0 for x <= 0, so a logit within rounding of 0 may be
    active in one engine and not in the other; such dimensions carry weights of that rounding's size.
    """
    import numpy as np
    import scipy.sparse

    ours = scipy.sparse.load_npz(workdir / f"{engine}.npz").toarray()
    theirs = scipy.sparse.load_npz(workdir / "sentence-transformers.npz").toarray()
    differ = (ours > 0) != (theirs > 0)
    heaviest = float(np.maximum(ours, theirs)[differ].max()) if differ.any() else 0.0
    cos = (ours * theirs).sum(1) / np.maximum(np.linalg.norm(ours, axis=1) * np.linalg.norm(theirs, axis=1), 1e-12)
    print(
        f"{engine} vectors: {int(differ.sum())} of {int((theirs > 0).sum())} active dimensions differ (the heaviest of "
        f"them weighs {heaviest:.2e}); max abs diff {np.abs(ours - theirs).max():.2e}; row cosine mean "
        f"{cos.mean():.5f}, min {cos.min():.5f}; {(theirs > 0).sum(1).mean():.0f} active of {ours.shape[1]} per "
        "sentence (random weights: not sparse)\n"
    )


def main() -> None:
    """Build the model, alternate the engines, compare the vectors, print one table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--device", default="cpu", help="cpu, or cuda: the torch engines only")
    parser.add_argument("--engines", default=DEFAULT_ENGINES, help=f"comma-separated, from sentence-transformers, "
                        f"{', '.join(BACKENDS)} (default {DEFAULT_ENGINES})")  # fmt: skip
    parser.add_argument("--baseline-src", type=Path, help="another checkout's src: its sbert engines run beside these")
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    parser.add_argument("--compare", action="store_true", help="only compare the vectors the last run saved")
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], int(args.child[2]), args.child[3], args.child[4])
        return
    if args.workdir is None:
        parser.error("--workdir is required")
    if args.compare:
        compare(args.workdir)
        return
    folder = build(args.workdir)
    engines = tuple(e.strip() for e in args.engines.split(",") if e.strip())
    unknown = [e for e in engines if e != "sentence-transformers" and e not in BACKENDS]
    if unknown or "sentence-transformers" not in engines:
        parser.error(f"--engines {args.engines!r}: needs sentence-transformers; unknown {unknown}")
    if args.device != "cpu":
        engines = ("sentence-transformers", "sbert")
    engines = ("sentence-transformers", *(e for e in engines if e != "sentence-transformers"))  # the reference first
    folders = dict.fromkeys(engines, folder)
    if args.baseline_src is not None:  # its own copy of the model, so neither checkout reuses the other's graphs
        base = args.workdir / f"{folder.name}-baseline"
        if not base.is_dir():
            shutil.copytree(folder, base, ignore=shutil.ignore_patterns("onnx"))
        folders |= {f"base:{e}": base for e in engines[1:]}
        engines += tuple(f"base:{e}" for e in engines[1:])
    runs: dict[str, list[dict[str, float]]] = {engine: [] for engine in engines}
    for _ in range(args.rounds):
        for engine in runs:
            out = args.workdir / f"{engine}.npz"
            command = [sys.executable, __file__, "--child", engine, str(folders[engine]), str(args.batch_size),
                       str(out), args.device]  # fmt: skip
            env = dict(os.environ)
            if engine.startswith("base:"):  # the other checkout's package wins over the installed one
                env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(args.baseline_src), env.get("PYTHONPATH")]))
            done = subprocess.run(command, capture_output=True, text=True, env=env)
            if done.returncode != 0:  # the child's own traceback, not only its exit status
                sys.exit(f"{engine} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
            runs[engine].append(json.loads(done.stdout.strip().splitlines()[-1]))
    for engine in engines[1:]:
        compare(args.workdir, engine)
    memory = "peak RSS" if args.device == "cpu" else "peak GPU memory"
    print(f"| engine ({args.device}) | sentences/s (median) | {memory} (GiB, median) | rounds |")
    print("|---|---|---|---|")
    n = len(sts_sentences("test"))
    speed = {k: n / statistics.median(r["seconds"] for r in v) for k, v in runs.items()}
    for engine, rows in runs.items():
        print(
            f"| {engine} | {speed[engine]:.1f} | {statistics.median(r['peak_gib'] for r in rows):.2f} | {len(rows)} |"
        )
    for engine in engines[1:]:
        print(f"\n{engine} / sentence-transformers: {speed[engine] / speed['sentence-transformers']:.2f}x")


if __name__ == "__main__":
    main()
