"""The paper's headline on this machine: the most similar pair among n = 10,000 sentences.

Cross-encoder: every pair needs its own forward pass, n(n-1)/2 = 49,995,000 of them; the rate is
measured on a random sample of pairs (--sample) and extrapolated. Bi-encoder: measured end to
end (encode every sentence once, then exact top-1 pair mining). Both use all-MiniLM-L6-v2's
transformer (6 layers, 384 wide; the paper's BERT-base is 12 x 768). The cross-encoder's head is
untrained here: the cost of a forward pass does not depend on the weights. Sentences: distinct
sentences of the shared data (STS benchmark, SNLI, SST-2), the first n.

    python benchmarks/speed/pair_search_cost.py [--n 10000] [--sample 2000]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import distinct_real_sentences
from sbert import SentenceEncoder
from sbert.reranker.model import CrossEncoder
from sbert.search import paraphrase_mining

MODEL = "all-MiniLM-L6-v2"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--sample", type=int, default=2_000, help="pairs timed through the cross-encoder")
    parser.add_argument("--backend", default="torch", help="bi-encoder backend (torch, onnx, onnx-int8)")
    args = parser.parse_args()
    sentences = distinct_real_sentences()[: args.n]
    pairs_total = args.n * (args.n - 1) // 2

    cross = CrossEncoder.new(MODEL, max_seq_length=128)
    rng = np.random.default_rng(0)
    picks = rng.integers(0, args.n, size=(args.sample, 2))
    sample = [(sentences[i], sentences[j]) for i, j in picks if i != j]
    cross.predict(sample[:64])  # warm-up
    started = time.perf_counter()
    cross.predict(sample)
    rate = len(sample) / (time.perf_counter() - started)
    cross_hours = pairs_total / rate / 3600

    started = time.perf_counter()
    model = SentenceEncoder.load(MODEL)
    vectors = model.encode(sentences, backend=args.backend, show_progress=False)
    best = paraphrase_mining(vectors, top_k=1, max_pairs=1)[0]
    bi_seconds = time.perf_counter() - started

    print(f"n = {args.n} sentences, {pairs_total:,} pairs")
    print(
        f"cross-encoder: {rate:.1f} pairs/s over {len(sample)} sampled pairs -> {cross_hours:.1f} hours for all pairs"
    )
    print(f"bi-encoder ({args.backend}): {bi_seconds:.1f} s end to end (load, encode, mine); "
          f"best pair cosine {best[0]:.3f}: {sentences[best[1]]!r} / {sentences[best[2]]!r}")  # fmt: skip
    print(f"ratio: {cross_hours * 3600 / bi_seconds:,.0f}x (the paper: 65 hours vs about 5 seconds on a V100)")


if __name__ == "__main__":
    main()
