"""The paper's headline on this machine: the most similar pair among 10,000 sentences, end to end.

python benchmarks/speed/pair_mining.py [--sentences 10000] [--backends torch onnx onnx-int8] [--repeats 3]

Each run is a fresh Python process (import, model load, encode, mine), timed from outside;
the process also reports its own load / encode / mine split. The sentences are the first
10,000 distinct sentences of the STS benchmark train, dev and test files. The ONNX graphs
are exported once before timing (a cached graph is what every later start uses).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import sts_pairs

CHILD = """
import json, sys, time
t0 = time.perf_counter()
from sbert import SentenceEncoder
from sbert.search import paraphrase_mining
model = SentenceEncoder.load("all-MiniLM-L6-v2", device="cpu")
t1 = time.perf_counter()
sentences = open(sys.argv[1], encoding="utf-8").read().split("\\n")
vectors = model.encode(sentences, backend=sys.argv[2], show_progress=False)
t2 = time.perf_counter()
score, i, j = paraphrase_mining(vectors, top_k=1, max_pairs=1)[0]
t3 = time.perf_counter()
print(json.dumps({"load": t1 - t0, "encode": t2 - t1, "mine": t3 - t2, "pair": [sentences[i], sentences[j]],
                  "score": score}))
"""


def distinct_sentences(count: int) -> list[str]:
    seen: dict[str, None] = {}
    for split in ("train", "dev", "test"):
        first, second, _ = sts_pairs(split)
        seen.update(dict.fromkeys(s.strip() for s in first + second if s.strip() and "\n" not in s))
    sentences = list(seen)[:count]
    if len(sentences) < count:
        raise SystemExit(f"only {len(sentences)} distinct sentences available")
    return sentences


def run_once(path: str, backend: str) -> tuple[float, dict[str, object]]:
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD, path, backend], capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    return wall, json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=10_000)
    parser.add_argument("--backends", nargs="+", default=["torch", "onnx", "onnx-int8"])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.NamedTemporaryFile("w", suffix=".txt", encoding="utf-8", delete=False) as f:
        f.write("\n".join(distinct_sentences(args.sentences)))
    try:
        for backend in args.backends:
            run_once(f.name, backend)  # warm-up: page cache, and the ONNX export on a cold cache
        for backend in args.backends:
            runs = [run_once(f.name, backend) for _ in range(args.repeats)]
            wall = statistics.median(w for w, _ in runs)
            detail = runs[len(runs) // 2][1]
            print(
                f"{backend:>10}: {wall:5.1f} s wall (median of {args.repeats}; load {detail['load']:.1f} s, "
                f"encode {detail['encode']:.1f} s, mine {detail['mine']:.2f} s)  "
                f"best pair {detail['score']:.3f}: {detail['pair']}"
            )
    finally:
        os.unlink(f.name)


if __name__ == "__main__":
    main()
