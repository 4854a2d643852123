"""The streamed host side on the CPU with a no-op model: does it keep up with the tokenizer, per thread.

python benchmarks/speed/host_pipeline.py [--passages 16000] [--threads 1,2] [--repeats 3] [--json F]

Corpus: passages of about 128 tokens (consecutive STS benchmark sentences joined, as the GPU
script builds them), tokenized by the default model's Rust tokenizer. Two measurements, in this run:

- `raw_tokens_per_s_1thread`: the Rust tokenizer alone (`encode_batch_fast`, Rust parallelism off),
  512 passages per call on this thread: the rate one core can feed.
- `pipeline_tokens_per_s`: {threads: rate} of sbert's streamed host side as the encoder runs it
  (`vectors/token_stream.token_windows` over the model's `token_ids`: chunks on `threads` tokenizer
  threads, windows ordered by length and cut into token-budget batches, each batch packed into
  the tensors the CUDA engine copies, pinned where a GPU is visible), the model a no-op.

The target (issue 55): pipeline_tokens_per_s[t] / t >= 0.8 x raw_tokens_per_s_1thread at 1 and 2
threads (`per_thread_ratio`). Medians of --repeats runs, alternated; `lscpu` facts are recorded.
"""

from __future__ import annotations

import os

os.environ["TOKENIZERS_PARALLELISM"] = "false"  # one Rust thread per call: threads are what is measured
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import cpu_facts, median, sts_sentences

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu"))  # gpu_encode: the passages
from gpu_encode import passages

from sbert import SentenceEncoder
from sbert.backends.packing import pack
from sbert.vectors.batching import packed_batches
from sbert.vectors.token_stream import STREAM_CHUNK, token_windows

BATCH_TOKENS = 65_536  # the CUDA engine's order of magnitude for a packed batch
TARGET = 0.8


def build_passages(fast: object, count: int) -> list[str]:
    """gpu_encode's ~128-token passages of consecutive real sentences, repeated to `count`."""
    sentences = sts_sentences("train") + sts_sentences("dev") + sts_sentences("test")
    out = passages(sentences, lambda texts: [len(e.ids) for e in fast.encode_batch_fast(texts)])  # type: ignore[attr-defined]
    return [out[i % len(out)] for i in range(count)]


def raw_rate(fast: object, texts: list[str]) -> float:
    """Tokens per second of the Rust tokenizer alone on this thread."""
    start, tokens = time.perf_counter(), 0
    for i in range(0, len(texts), STREAM_CHUNK):
        tokens += sum(len(e.ids) for e in fast.encode_batch_fast(texts[i : i + STREAM_CHUNK]))  # type: ignore[attr-defined]
    return tokens / (time.perf_counter() - start)


def pipeline_rate(model: SentenceEncoder, texts: list[str], threads: int, pin: bool) -> float:
    """Tokens per second of the streamed host side with `threads` tokenizer threads and a no-op model."""
    start, tokens = time.perf_counter(), 0
    for window in token_windows(model.input_module.token_ids, texts, threads=threads):
        lengths = [len(row) for row in window.ids]
        order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
        for batch in packed_batches(order, lengths, BATCH_TOKENS, 4096):
            packed = pack([window.ids[i] for i in batch], pin=pin)  # what the CUDA engine copies to the device
            tokens += int(packed.cu_seqlens[-1])
    return tokens / (time.perf_counter() - start)


def commit() -> str:
    """The checked-out commit (or "unknown")."""
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return out.stdout.strip() or "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passages", type=int, default=16_000)
    parser.add_argument("--threads", default=None, help="comma-separated thread counts (default: 1 .. cores)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)  # the no-op model runs nothing; packing is single-threaded host work
    model = SentenceEncoder.load(device="cpu")
    fast = model.input_module.fast_tokenizer(model.max_seq_length + 1)
    texts = build_passages(fast, args.passages)
    cores = len(os.sched_getaffinity(0))
    counts = [int(t) for t in args.threads.split(",")] if args.threads else list(range(1, cores + 1))
    pin = torch.cuda.is_available()
    raw_runs: list[float] = []
    runs: dict[int, list[float]] = {t: [] for t in counts}
    for _ in range(args.repeats):  # alternated, so drift on a shared machine hits every row alike
        raw_runs.append(raw_rate(fast, texts))
        for t in counts:
            runs[t].append(pipeline_rate(model, texts, t, pin))
    raw = median(raw_runs)
    rates = {t: median(r) for t, r in runs.items()}
    ratios = {t: rate / t / raw for t, rate in rates.items()}
    report = {
        "passages": len(texts), "tokens_per_passage": round(sum(len(r) for r in model.input_module.token_ids(
            texts[:2000])[0]) / 2000, 1), "raw_tokens_per_s_1thread": round(raw),
        "pipeline_tokens_per_s": {str(t): round(r) for t, r in rates.items()},
        "per_thread_ratio": {str(t): round(r, 3) for t, r in ratios.items()}, "target_per_thread_ratio": TARGET,
        "met": all(ratios[t] >= TARGET for t in ratios if t <= 2), "pinned": pin, "repeats": args.repeats,
        "commit": commit(), **{k: v for k, v in cpu_facts().items() if k != "cpu_flags"},
    }  # fmt: skip
    print(f"{'threads':>8} {'tokens/s':>12} {'per thread / raw 1-thread':>26}")
    print(f"{'raw 1':>8} {raw:>12,.0f} {'1.000':>26}")
    for t in counts:
        print(f"{t:>8} {rates[t]:>12,.0f} {ratios[t]:>26.3f}")
    print(f"target >= {TARGET} per thread at 1 and 2 threads: {'met' if report['met'] else 'NOT met'}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
