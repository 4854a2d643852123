"""Streaming encode of a corpus larger than memory: throughput against in-memory encode, peak RSS.

python benchmarks/speed/stream_encode.py [--sentences 1000000] [--backend onnx-int8] [--shard-size 100000]

The corpus is the distinct sentences of ../shared/data (about 100k) repeated in order up to
`--sentences` lines, written to a temp file and streamed from it. In-memory `encode` of the
first `--sample` lines spread over it (same backend) gives the reference rate in the same run. Memory is the
peak resident size of this process minus its size once the model is loaded and warm.
"""

from __future__ import annotations

import argparse
import itertools
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import distinct_real_sentences
from sbert import SentenceEncoder
from sbert.scale.streaming import encode_to_disk


def rss_mb() -> float:
    """Current resident set size of this process in MB."""
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far in MB (Linux reports KB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=1_000_000)
    parser.add_argument("--sample", type=int, default=50_000, help="lines encoded in memory for the reference rate")
    parser.add_argument("--backend", default="onnx-int8")
    parser.add_argument("--shard-size", type=int, default=100_000)
    parser.add_argument("--keep", default=None, help="keep the shards in this folder (default: a temp folder)")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="sbert-stream-"))
    corpus = work / "corpus.txt"
    with corpus.open("w", encoding="utf-8") as f:
        lines = itertools.islice(itertools.cycle(distinct_real_sentences()), args.sentences)
        f.writelines(line + "\n" for line in lines)
    model = SentenceEncoder.load("all-MiniLM-L6-v2", device="cpu")
    with corpus.open(encoding="utf-8") as f:
        # Every k-th line: the same mix of STS, SNLI and SST-2 lengths as the whole corpus.
        step = max(1, args.sentences // args.sample)
        sample = [line.rstrip("\n") for line in itertools.islice(f, 0, None, step)][: args.sample]
    model.encode(sample[:2000], backend=args.backend)  # export / warm-up
    baseline = rss_mb()
    out = Path(args.keep) if args.keep else work / "shards"
    start = time.perf_counter()
    with corpus.open(encoding="utf-8") as f:
        rows = encode_to_disk(
            model, (line.rstrip("\n") for line in f), out, args.shard_size, backend=args.backend, total=args.sentences
        )
    seconds = time.perf_counter() - start
    stream_rate = rows / seconds
    peak = peak_rss_mb()  # before the in-memory reference run, which holds its whole sample
    start = time.perf_counter()
    model.encode(sample, backend=args.backend, show_progress=False)
    memory_rate = len(sample) / (time.perf_counter() - start)
    print(f"{rows} sentences streamed in {seconds:.0f} s: {stream_rate:.1f} sentences/s ({args.backend})")
    ratio = stream_rate / memory_rate
    print(f"in-memory encode of {len(sample)}: {memory_rate:.1f} sentences/s; streaming/in-memory {ratio:.3f}")
    print(f"RSS with model loaded {baseline:.0f} MB, peak while streaming {peak:.0f} MB: +{peak - baseline:.0f} MB")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
