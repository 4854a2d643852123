"""Where one encode's time goes: tokenization, batching, padding, the graph by operator, the rest.

    python benchmarks/speed/encode_profile.py [--backend onnx-int8|openvino-int8|onnx|openvino] [--repeats 3]

all-MiniLM-L6-v2 on the 2,758 STS benchmark test sentences, this machine's cores, with the STSb test
Spearman of the backend beside torch fp32's (the quality the speed keeps). Four views:
1. The whole `encode(...)` call as users make it (threads: one single-threaded graph run a core),
   median of --repeats.
2. The same work in stages, one thread, timed apart: token ids (`Transformer.token_ids`), batch
   planning, padding each batch (`Chain.pad`), the graph runs (ONNX Runtime's `session.run` or
   OpenVINO's `infer`), and what is left of the single-threaded encode for Python (the output
   buffer, bookkeeping).
3. Inside the graph: the runtime's own profile of one single-threaded pass over every batch, summed
   by operator type (ONNX Runtime's profiler, or OpenVINO's per-node performance counters).
4. Against the hardware: the GEMM peak measured in the same run (2048^3, int8 for the int8 backends),
   the linear-layer work per sentence, and what share of that ceiling `encode()` reaches, the graph
   runs on every core with no Python between them reach, and the GEMM operators alone reach against
   one core's peak.
Prints JSON lines; docs/speed.md quotes them.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import gemm_peak, linear_flops_per_token, sts_pairs, sts_sentences
from sbert import SentenceEncoder
from sbert.encoding.engine import plan_batches

Feed = dict[str, Any]
# The operator types that run the linear layers' GEMMs, per backend. ONNX Runtime's fp32 MatMul and
# FusedMatMul also count attention's two products; its int8 graph and OpenVINO keep those apart.
LINEAR_OPS = {
    "onnx-int8": {"DynamicQuantizeMatMul", "MatMulIntegerToFloat", "MatMulInteger"},
    "onnx": {"MatMul", "FusedMatMul", "Gemm"},
    "openvino": {"FullyConnected"},
    "openvino-int8": {"FullyConnected", "FullyConnectedQuantizedLegacy"},
}


def emit(**fields: object) -> None:
    """One JSON line on stdout."""
    print(json.dumps(fields), flush=True)


def median_seconds(run: Callable[[], object], repeats: int) -> float:
    """Median wall time of `run()` over `repeats` calls."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def sts_spearman(model: SentenceEncoder, sentences: list[str], backend: str) -> float:
    """STSb test Spearman x100 of the cosine of each pair (the sentences are the two columns, in order)."""
    from scipy.stats import spearmanr

    vectors = model.encode(sentences, backend=backend, normalize=True, show_progress=False)
    half = len(sentences) // 2
    return 100 * float(spearmanr((vectors[:half] * vectors[half:]).sum(axis=1), sts_pairs("test")[2]).statistic)


def onnx_operator_profile(path: Path, feeds: list[Feed]) -> dict[str, float]:
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
    return by_op


def openvino_operator_profile(backend: Any, feeds: list[Feed]) -> dict[str, float]:
    """Seconds per node type over one single-threaded pass, from OpenVINO's performance counters.

    Each feed runs on the compile the backend gives its width (snippets off for short batches).
    """
    from sbert.backends.openvino_runtime import compile_graph

    compiles = {on: compile_graph(backend.path, "f32", 1, snippets=on, PERF_COUNT="YES") for on in (True, False)}
    requests = {on: model.create_infer_request() for on, model in compiles.items()}

    def request(feed: Feed) -> Any:
        return requests[not backend.runs_without_snippets(feed["input_ids"].shape[1])]

    for feed in feeds[:3]:  # the first runs of a shape build its kernels
        request(feed).infer(feed)
    by_op: dict[str, float] = collections.defaultdict(float)
    for feed in feeds:
        run = request(feed)
        run.infer(feed)
        for node in run.profiling_info:
            by_op[node.node_type] += node.real_time.total_seconds()
    return by_op


def graph_runner(backend: Any) -> Callable[[Feed], object]:
    """One single-threaded graph run of a padded feed, as the backend's workers make it."""
    if hasattr(backend, "session"):  # ONNX Runtime: one session, single-threaded, shared by the workers
        return lambda feed: backend.session.run(None, feed)
    return backend.infer  # OpenVINO: each thread's own request, on the compile for the feed's width


def all_cores(run: Callable[[Feed], object], feeds: list[Feed], workers: int) -> Callable[[], None]:
    """Every feed through `run`, dealt round-robin to `workers` threads: the graph with no Python between."""

    def go() -> None:
        threads = [threading.Thread(target=lambda k=k: [run(f) for f in feeds[k::workers]]) for k in range(workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    return go


def stage_view(model: SentenceEncoder, name: str, sentences: list[str], repeats: int) -> list[Feed]:
    """View 2: the encode's stages on one thread; returns the padded feeds of every batch."""
    backend = model.backend(name)
    chain, ids = model.as_chain(), model.transformer.token_ids(sentences)[0]
    stages: dict[str, Callable[[], object]] = {"token ids": lambda: model.transformer.token_ids(sentences)}
    batches = plan_batches(backend, [len(r) for r in ids], None, None)
    stages["batch planning"] = lambda: plan_batches(backend, [len(r) for r in ids], None, None)
    stages["padding"] = lambda: [chain.pad([ids[i] for i in b]) for b in batches]
    padded = [chain.pad([ids[i] for i in b]) for b in batches]
    feeds = [{n: f[n].numpy() for n in backend.input_names} for f in padded]  # type: ignore[attr-defined]
    run = graph_runner(backend)
    stages["graph runs"] = lambda: [run(feed) for feed in feeds]
    timed = {stage: median_seconds(go, repeats) for stage, go in stages.items()}
    cores, backend.workers = backend.workers, 1  # type: ignore[attr-defined]  # the same engine, batches in turn
    one_thread = median_seconds(lambda: model.encode(sentences, backend=name, show_progress=False), repeats)
    backend.workers = cores  # type: ignore[attr-defined]
    timed["rest (Python: buffers, bookkeeping)"] = max(0.0, one_thread - sum(timed.values()))
    for stage, seconds in timed.items():
        emit(view="stages, 1 thread", stage=stage, seconds=round(seconds, 3),
             share_pct=round(100 * seconds / one_thread, 1))  # fmt: skip
    emit(
        view="stages, 1 thread",
        stage="encode() on 1 thread",
        seconds=round(one_thread, 3),
        batches=len(batches),
        tokens=sum(map(len, ids)),
        padded_tokens=sum(len(b) * max(len(ids[i]) for i in b) for b in batches),
    )
    return feeds


def operator_view(backend: Any, feeds: list[Feed]) -> dict[str, float]:
    """View 3: the graph's single-threaded pass by operator type; returns seconds per type."""
    if backend.name.startswith("openvino"):
        ops = openvino_operator_profile(backend, feeds)
    else:
        ops = onnx_operator_profile(backend.path, feeds)
    ops = dict(sorted(ops.items(), key=lambda kv: -kv[1]))
    total = sum(ops.values())
    for op, seconds in list(ops.items())[:12]:
        emit(view="graph operators, 1 thread", op=op, seconds=round(seconds, 3),
             share_of_graph_pct=round(100 * seconds / total, 1))  # fmt: skip
    return ops


def ceiling_view(model: SentenceEncoder, backend: Any, feeds: list[Feed], encode_rate: float,
                 ops: dict[str, float], repeats: int) -> None:  # fmt: skip
    """View 4: encode(), the bare graph on every core and the GEMM operators against the measured peaks."""
    rows = sum(int(f["input_ids"].shape[0]) for f in feeds)  # the sentences, counted from their feeds
    dtype = "int8" if backend.name.endswith("int8") else "fp32"
    cores = torch.get_num_threads()
    # The best of three: noise from other work on a shared machine only ever slows a GEMM down.
    peak = max(gemm_peak(dtype) for _ in range(3))
    torch.set_num_threads(1)
    core_peak = max(gemm_peak(dtype) for _ in range(3))
    torch.set_num_threads(cores)
    per_token = linear_flops_per_token(model)
    per_sentence = per_token * sum(int(f["attention_mask"].sum()) for f in feeds) / rows  # real tokens only
    ceiling = peak * 1e9 / per_sentence  # GOPS to sentences/s
    bare = median_seconds(all_cores(graph_runner(backend), feeds, backend.workers), repeats)
    padded = sum(int(f["input_ids"].size) for f in feeds)
    linear = sum(seconds for op, seconds in ops.items() if op in LINEAR_OPS[backend.name])
    emit(
        view="ceiling",
        dtype=dtype,
        gemm_peak_all_cores=round(peak, 1),
        gemm_peak_one_core=round(core_peak, 1),
        linear_ops_per_sentence_millions=round(per_sentence / 1e6, 1),
        ceiling_sentences_per_s=round(ceiling),
        encode_sentences_per_s=round(encode_rate),
        encode_pct_of_ceiling=round(100 * encode_rate / ceiling, 1),
        bare_graph_all_cores_sentences_per_s=round(rows / bare),
        bare_graph_pct_of_ceiling=round(100 * rows / bare / ceiling, 1),
        linear_operators_gops_one_core=round(per_token * padded / linear / 1e9, 1),
        linear_operators_pct_of_core_peak=round(100 * per_token * padded / linear / 1e9 / core_peak, 1),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="onnx-int8", choices=("onnx", "onnx-int8", "openvino", "openvino-int8"))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sentences = sts_sentences("test")
    model = SentenceEncoder.load(device="cpu")
    backend = model.backend(args.backend)  # exported (or cached) and checked before timing
    whole = median_seconds(lambda: model.encode(sentences, backend=args.backend, show_progress=False), args.repeats)
    emit(
        view="encode()",
        backend=args.backend,
        threads=torch.get_num_threads(),
        seconds=round(whole, 3),
        sentences_per_s=round(len(sentences) / whole, 1),
        stsb_test_spearman={name: round(sts_spearman(model, sentences, name), 2) for name in ("torch", args.backend)},
    )
    feeds = stage_view(model, args.backend, sentences, args.repeats)
    ops = operator_view(backend, feeds)
    ceiling_view(model, backend, feeds, len(sentences) / whole, ops, args.repeats)


if __name__ == "__main__":
    main()
