"""Where one encode's time goes: tokenization, batching, padding, the ONNX graph by operator, the rest.

    python benchmarks/encode_profile.py [--backend onnx-int8] [--repeats 3]

all-MiniLM-L6-v2 on the 2,758 STS benchmark test sentences, this machine's cores, with the STSb test
Spearman of the backend beside torch fp32's (the quality the speed keeps). Three views:
1. The whole `encode(...)` call as users make it (threads: one single-threaded graph run a core),
   median of --repeats.
2. The same work in stages, one thread, timed apart: token ids (`Transformer.token_ids`), batch
   planning, padding each batch (`Chain.pad`), the graph runs (`session.run`), and what is left of
   the single-threaded encode for Python (the output buffer, bookkeeping).
3. Inside the graph: ONNX Runtime's own profile of one single-threaded pass over every batch,
   summed by operator type (MatMulInteger, DynamicQuantizeLinear, Softmax, LayerNormalization, ...).
Prints JSON lines; docs/speed.md quotes them.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch

from common import sts_pairs, sts_sentences
from sbert import SentenceEncoder
from sbert.encoding.engine import plan_batches


def median_seconds(run: object, repeats: int) -> float:
    """Median wall time of `run()` over `repeats` calls."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def sts_spearman(model: SentenceEncoder, sentences: list[str], backend: str) -> float:
    """STSb test Spearman x100 of the cosine of each pair (the sentences are the two columns, in order)."""
    from scipy.stats import spearmanr

    vectors = model.encode(sentences, backend=backend, normalize=True, show_progress=False)
    half = len(sentences) // 2
    return 100 * float(spearmanr((vectors[:half] * vectors[half:]).sum(axis=1), sts_pairs("test")[2]).statistic)


def operator_profile(path: Path, feeds: list[dict]) -> dict[str, float]:
    """Seconds per operator type over one single-threaded pass, from ONNX Runtime's profiler."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads, options.inter_op_num_threads = 1, 1
    options.enable_profiling = True
    options.profile_file_prefix = str(Path(tempfile.mkdtemp()) / "ort")
    session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    for feed in feeds:
        session.run(None, feed)
    events = json.loads(Path(session.end_profiling()).read_text())
    by_op: dict[str, float] = collections.defaultdict(float)
    for event in events:
        if event.get("cat") == "Node" and event.get("name", "").endswith("_kernel_time"):
            by_op[event["args"]["op_name"]] += event["dur"] / 1e6
    return dict(sorted(by_op.items(), key=lambda kv: -kv[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="onnx-int8", choices=("onnx", "onnx-int8"))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sentences = sts_sentences("test")
    model = SentenceEncoder.load(device="cpu")
    backend = model.backend(args.backend)  # exported (or cached) and checked before timing
    cores = torch.get_num_threads()
    whole = median_seconds(lambda: model.encode(sentences, backend=args.backend, show_progress=False), args.repeats)
    print(json.dumps({"view": "encode()", "backend": args.backend, "threads": cores, "seconds": round(whole, 3),
                      "sentences_per_s": round(len(sentences) / whole, 1),
                      "stsb_test_spearman": {name: round(sts_spearman(model, sentences, name), 2)
                                             for name in ("torch", args.backend)}}), flush=True)  # fmt: skip
    chain = model.as_chain()
    ids = model.transformer.token_ids(sentences)[0]
    stages = {"token ids": lambda: model.transformer.token_ids(sentences)}
    batches = plan_batches(backend, [len(r) for r in ids], None, None)
    stages["batch planning"] = lambda: plan_batches(backend, [len(r) for r in ids], None, None)
    stages["padding"] = lambda: [chain.pad([ids[i] for i in b]) for b in batches]
    padded = [chain.pad([ids[i] for i in b]) for b in batches]
    feeds = [{name: f[name].numpy() for name in backend.input_names} for f in padded]  # type: ignore[attr-defined]
    session = backend.session  # type: ignore[attr-defined]  # single-threaded: the engine runs one a core
    stages["graph runs (session.run)"] = lambda: [session.run(None, feed) for feed in feeds]
    timed = {name: median_seconds(run, args.repeats) for name, run in stages.items()}
    backend.workers = 1  # type: ignore[attr-defined]  # the same engine, its batches one after another
    one_thread = median_seconds(lambda: model.encode(sentences, backend=args.backend, show_progress=False),
                                args.repeats)  # fmt: skip
    backend.workers = cores  # type: ignore[attr-defined]
    timed["rest (Python: buffers, bookkeeping)"] = max(0.0, one_thread - sum(timed.values()))
    for name, seconds in timed.items():
        print(json.dumps({"view": "stages, 1 thread", "stage": name, "seconds": round(seconds, 3),
                          "share_pct": round(100 * seconds / one_thread, 1)}), flush=True)  # fmt: skip
    print(json.dumps({"view": "stages, 1 thread", "stage": "encode() on 1 thread", "seconds": round(one_thread, 3),
                      "batches": len(batches), "tokens": sum(map(len, ids)),
                      "padded_tokens": sum(len(b) * max(len(ids[i]) for i in b) for b in batches)}),
          flush=True)  # fmt: skip
    ops = operator_profile(backend.path, feeds)  # type: ignore[attr-defined]
    total = sum(ops.values())
    for op, seconds in list(ops.items())[:12]:
        print(json.dumps({"view": "graph operators, 1 thread", "op": op, "seconds": round(seconds, 3),
                          "share_of_graph_pct": round(100 * seconds / total, 1)}), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
