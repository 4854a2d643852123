"""ColBERT encode speed and memory: sbert's MultiVectorEncoder against sentence-transformers 6's, in one run.

    python benchmarks/speed/multivector_encode.py --workdir /tmp/colbert [--rounds 3] [--sentences 2758]
        [--pylate-python PEER_VENV/bin/python] [--device cuda]

The model is a random-weight ColBERT in the published shape (BERT-base: 12 layers, width 768;
a 768 -> 128 projection without bias; [Q] / [D] prompts; queries expanded to 32 tokens with
[MASK]; documents cut at 180 tokens with a punctuation skiplist), built and saved by
sentence-transformers 6. Both engines encode the STSb test sentences as documents and as
queries; sbert also in bf16 (`precision="bf16"`, where the CPU has bf16 instructions) and on the
graph runtimes (ONNX Runtime, OpenVINO; fp32 and int8 weights). Each
engine runs in its own process (its own peak RSS); rounds alternate the engines,
each figure is the median of its rounds. sbert's token matrices are compared with the reference's:
same token counts, and the largest difference of any token vector.

With `--pylate-python` (the peer venv `make bench-multivector` builds), PyLate itself builds and saves
the model (its defaults over the same random BERT-base: [Q] / [D] inserted after [CLS], expansion to
32, documents cut at 180, the punctuation skiplist), and PyLate encodes it as a third engine
(benchmarks/speed/pylate_peer.py). Every engine then reads PyLate's folder; sentence-transformers 6
stays the reference the vectors are compared with, PyLate's own included. A fourth row,
"pylate-on-sbert-save", is PyLate encoding the folder sbert writes when it loads and saves PyLate's:
the save direction, checked by PyLate itself.

`--device cuda` (benchmarks/gpu/gpu_check.sh's `multivector` step) runs every engine on the GPU, where
sbert's torch engine runs packed batches (multivector/packed.py); `sbert-fp16` is its half-precision row.
Graph engines are CPU-only.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import string
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import random_bert_base, sts_sentences

GRAPH_ENGINES = ("sbert-onnx", "sbert-onnx-int8", "sbert-openvino", "sbert-openvino-int8")
ENGINES = ("sentence-transformers", "sbert", "sbert-bf16", "sbert-fp16", *GRAPH_ENGINES)
PEER_SCRIPT = Path(__file__).resolve().with_name("pylate_peer.py")
PYLATE_ENGINES = ("pylate", "pylate-on-sbert-save")  # run by the peer: on PyLate's folder, on sbert's save of it
RESAVED = "colbert-pylate-resaved-by-sbert"


def build(workdir: Path) -> Path:
    """The ColBERT folder, written once by sentence-transformers 6."""
    folder = workdir / "colbert-bert-base-random"
    if (folder / "modules.json").is_file():
        return folder
    import torch
    from sentence_transformers import MultiVectorEncoder
    from sentence_transformers.base.modules import Dense, Transformer
    from sentence_transformers.multi_vector_encoder.modules import MultiVectorMask
    from sentence_transformers.sentence_transformer.modules import Normalize

    bert = random_bert_base(workdir / "bert")
    expansion = {"strategy": "fixed", "attend": False, "length": 32}
    transformer = Transformer(str(bert), query_length=32, document_length=180, query_expansion=expansion)
    dense = Dense(768, 128, bias=False, activation_function=torch.nn.Identity(), module_input_name="token_embeddings")
    modules = [transformer, dense, MultiVectorMask(skiplist_words=list(string.punctuation)),
               Normalize(module_input_name="token_embeddings")]  # fmt: skip
    prompts = {"query": "[Q] ", "document": "[D] "}
    MultiVectorEncoder(modules=modules, device="cpu", prompts=prompts).save(str(folder))
    return folder


def build_pylate(workdir: Path, python: str) -> Path:
    """The ColBERT folder, written once by PyLate (in the peer venv) over the same random BERT-base."""
    folder = workdir / "colbert-pylate-bert-base-random"
    if not (folder / "modules.json").is_file():
        bert = random_bert_base(workdir / "bert")
        subprocess.run([python, str(PEER_SCRIPT), "build", str(bert), str(folder)], check=True, capture_output=True)
    resaved = workdir / RESAVED
    if not (resaved / "modules.json").is_file():
        from sbert.multivector import MultiVectorEncoder

        MultiVectorEncoder.load(folder, device="cpu").save(resaved)
    return folder


def run_command(engine: str, folder: Path, n: int, out: Path, pylate_python: str | None, device: str) -> list[str]:
    """The child process that times one engine: this script, or PyLate's peer for the PyLate rows."""
    if engine not in PYLATE_ENGINES:
        return [sys.executable, __file__, "--child", engine, str(folder), str(n), str(out), "--device", device]
    texts = out.with_name(f"sentences-{n}.json")
    if not texts.is_file():
        texts.write_text(json.dumps(sts_sentences("test")[:n]))
    source = folder.with_name(RESAVED) if engine == "pylate-on-sbert-save" else folder
    return [str(pylate_python), str(PEER_SCRIPT), "encode", str(source), str(texts), str(out)]


def child(engine: str, folder: str, n: int, out: str, device: str = "cpu") -> None:
    """Warm up, time documents then queries once; save the matrices; print seconds and peak memory."""
    import numpy as np

    sentences = sts_sentences("test")[:n]
    if engine.startswith("sbert"):
        from sbert.multivector import MultiVectorEncoder

        precision = {"sbert-bf16": "bf16", "sbert-fp16": "fp16"}.get(engine, "fp32")
        backend = engine.removeprefix("sbert-") if engine in GRAPH_ENGINES else "torch"
        model = MultiVectorEncoder.load(folder, device=device)
        model.encode_document(sentences[:64], precision=precision, backend=backend)  # exports a graph once
        start = time.perf_counter()
        docs = model.encode_document(sentences, precision=precision, backend=backend)
        middle = time.perf_counter()
        queries = model.encode_query(sentences, precision=precision, backend=backend)
    else:
        from sentence_transformers import MultiVectorEncoder as Reference

        ref = Reference(folder, device=device)
        ref.encode_document(sentences[:64])
        start = time.perf_counter()
        docs = [d.cpu().numpy() for d in ref.encode_document(sentences, batch_size=32)]
        middle = time.perf_counter()
        queries = [q.cpu().numpy() for q in ref.encode_query(sentences, batch_size=32)]
    end = time.perf_counter()
    lengths = np.array([len(m) for m in docs] + [len(m) for m in queries])
    np.savez(out, lengths=lengths, tokens=np.concatenate(docs + queries))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    record = {"documents_s": middle - start, "queries_s": end - middle, "peak_gib": peak}
    if device == "cuda":  # the GPU's own peak beside the process's RSS
        import torch

        record["gpu_peak_gib"] = torch.cuda.max_memory_allocated() / 2**30
    print(json.dumps(record))


def compare(workdir: Path, engine: str, reference: str = "sentence-transformers") -> str:
    """An engine's matrices against the reference's: token counts, largest difference, token cosines."""
    import numpy as np

    ours, ref = np.load(workdir / f"{engine}.npz"), np.load(workdir / f"{reference}.npz")
    if not np.array_equal(ours["lengths"], ref["lengths"]):
        differ = np.flatnonzero(ours["lengths"] != ref["lengths"])
        return (f"{engine}: token counts DIFFER from {reference}'s in {len(differ)} of {len(ref['lengths'])} texts "
                f"({int(ours['lengths'].sum())} against {int(ref['lengths'].sum())} vectors)")  # fmt: skip
    gap = float(np.abs(ours["tokens"] - ref["tokens"]).max())
    cos = (ours["tokens"] * ref["tokens"]).sum(1)  # both unit length
    return (f"{engine} against {reference}: same token counts ({int(ref['lengths'].sum())} vectors); "
            f"max abs diff {gap:.1e}; "
            f"token cosine mean {cos.mean():.6f}, min {cos.min():.6f}")  # fmt: skip


def main() -> None:
    """Build the model, alternate the engines, compare, print one table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, required=False)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sentences", type=int, default=2758)
    parser.add_argument("--engines", default=",".join(ENGINES), help=f"comma-separated, of {', '.join(ENGINES)}")
    parser.add_argument("--pylate-python", help="the peer venv's python with PyLate: PyLate builds the model and runs")
    parser.add_argument("--device", default="cpu", help="cpu or cuda: where every engine runs")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], int(args.child[2]), args.child[3], args.device)
        return
    if args.workdir is None:
        parser.error("--workdir is required")
    args.workdir.mkdir(parents=True, exist_ok=True)
    folder = build_pylate(args.workdir, args.pylate_python) if args.pylate_python else build(args.workdir)
    chosen = ["sentence-transformers", *(e for e in args.engines.split(",") if e and e != "sentence-transformers")]
    chosen += list(PYLATE_ENGINES) if args.pylate_python else []
    unknown = [e for e in chosen if e not in (*ENGINES, *PYLATE_ENGINES)]
    if unknown:
        parser.error(f"--engines: unknown {unknown}; known: {', '.join(ENGINES)}")
    runs: dict[str, list[dict[str, float]]] = {engine: [] for engine in chosen}
    for _ in range(args.rounds):
        for engine in runs:
            out = args.workdir / f"{engine}.npz"
            command = run_command(engine, folder, args.sentences, out, args.pylate_python, args.device)
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f"{engine} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
            runs[engine].append(json.loads(done.stdout.strip().splitlines()[-1]))
    # Each layout is judged by the library that wrote it: PyLate's folder by PyLate (where a skiplist
    # word is not one vocabulary token the two libraries differ by design; docs/multivector.md).
    reference = "pylate" if args.pylate_python else "sentence-transformers"
    for engine in chosen:
        if engine != reference:
            print(compare(args.workdir, engine, reference))
    n = min(args.sentences, len(sts_sentences("test")))
    print(f"| engine ({args.device}) | documents/s | queries/s | peak RSS (GiB) | rounds |\n|---|---|---|---|---|")
    speed = {}
    for engine, rows in runs.items():
        docs = n / statistics.median(r["documents_s"] for r in rows)
        queries = n / statistics.median(r["queries_s"] for r in rows)
        speed[engine] = (docs, queries)
        peak = statistics.median(r["peak_gib"] for r in rows)
        gpu = [r["gpu_peak_gib"] for r in rows if "gpu_peak_gib" in r]
        shown = f"{peak:.2f}" + (f" (GPU {statistics.median(gpu):.2f})" if gpu else "")
        print(f"| {engine} | {docs:.1f} | {queries:.1f} | {shown} | {len(rows)} |")
    for engine in chosen[1:]:
        ratio = [a / b for a, b in zip(speed[engine], speed["sentence-transformers"], strict=True)]
        print(f"\n{engine} / sentence-transformers: documents {ratio[0]:.2f}x, queries {ratio[1]:.2f}x", end="")
    print()


if __name__ == "__main__":
    main()
