"""Time of SentEval-style 10-fold transfer with its C search, old and new code paths, on real sentences.

python benchmarks/speed/transfer_speed.py [--n 10662] [--old-src ../oldwt/src]

The features are all-MiniLM-L6-v2 vectors of the first `n` SST-2 training sentences (MR's size by
default), treated as one pool for stratified 10-fold cross-validation, as MR, CR, SUBJ and MPQA
are. Prints seconds and accuracy for each protocol; with --old-src, also the previous
implementation's (imported from that source tree) on the same features.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

import numpy as np

from sbert import SentenceEncoder
from sbert.data.senteval import TransferTask

SST2 = Path(__file__).resolve().parents[3] / "shared" / "data" / "sst2" / "sentiment-train"


class Cached:
    """An Embedder returning precomputed vectors, so only the classifier part is timed."""

    def __init__(self, texts: list[str], vectors: np.ndarray) -> None:
        self.rows = {t: v for t, v in zip(texts, vectors, strict=True)}

    def encode(self, sentences: list[str], **_: object) -> np.ndarray:
        """The stored vectors of `sentences`."""
        return np.stack([self.rows[s] for s in sentences])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10_662)
    parser.add_argument("--old-src", type=Path, default=None)
    args = parser.parse_args()
    rows = [line.rsplit("\t", 1) for line in SST2.read_text(encoding="utf-8").splitlines()][: args.n]
    texts, labels = [r[0].strip() for r in rows], [int(r[1]) for r in rows]
    unique = list(dict.fromkeys(texts))
    model = Cached(unique, SentenceEncoder.load("all-MiniLM-L6-v2", device="cpu").encode(unique))
    task = TransferTask("SST2-as-pool", ("negative", "positive"), pool=([(t,) for t in texts], labels))
    from sbert.evaluation.transfer import evaluate_transfer

    for protocol in ("senteval", "standardized"):
        start = time.perf_counter()
        scores = evaluate_transfer(model, task, protocol=protocol)  # type: ignore[arg-type]
        print(f"new {protocol:>12}: {time.perf_counter() - start:6.1f} s  accuracy {scores['accuracy']:.2f}")
    if args.old_src is not None:
        sys.path.insert(0, str(args.old_src.resolve()))
        for name in [m for m in sys.modules if m == "sbert" or m.startswith("sbert.")]:
            del sys.modules[name]
        old = importlib.import_module("sbert.evaluation.transfer")
        start = time.perf_counter()
        scores = old.evaluate_transfer(model, task)
        print(f"old standardized: {time.perf_counter() - start:6.1f} s  accuracy {scores['accuracy']:.2f}")


if __name__ == "__main__":
    main()
