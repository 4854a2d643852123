"""How well the server's packaged int8 ranges keep vectors: cosine of each dequantized int8 row to its float row.

The ranges come from the 246 packaged calibration texts (serve/calibration.py), widened by a share of
their span on both sides. The share is chosen on SNLI dev sentences and reported on the STS benchmark
test sentences, with the default model:

    python benchmarks/serve/serve_int8_ranges.py [--margins 0 0.1 0.25 0.5 0.75 1]
"""

from __future__ import annotations

import argparse

import numpy as np

from sbert import SentenceEncoder
from sbert.data.home import data_home
from sbert.search.quantize import dequantize, quantize_embeddings
from sbert.serve.calibration import PACKAGED_MARGIN, packaged_calibration


def cosines(vectors: np.ndarray, ranges: np.ndarray) -> np.ndarray:
    """Cosine of each int8 row, dequantized, to its float unit row."""
    back = dequantize(quantize_embeddings(vectors, "int8", ranges=ranges), ranges)
    return (back * vectors).sum(axis=1) / np.linalg.norm(back, axis=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--margins", type=float, nargs="+", default=[0, 0.1, 0.25, 0.5, 0.75, 1])
    args = parser.parse_args()
    model = SentenceEncoder.load("all-MiniLM-L6-v2", device="cpu")
    packaged = packaged_calibration(model, "torch", "auto").ranges
    middle, half = (packaged[0] + packaged[1]) / 2, (packaged[1] - packaged[0]) / 2
    span = 2 * half / (1 + 2 * PACKAGED_MARGIN)  # the unwidened span
    home = data_home()
    snli = {line for name in ("s1.dev", "s2.dev") for line in (home / "snli" / name).read_text().splitlines()[:3000]}
    sts = {cell for line in (home / "stsbenchmark" / "sts-test.csv").read_text().splitlines()
           for cell in line.split("\t")[5:7]}  # fmt: skip
    sets = {"snli-dev (selection)": sorted(snli), "stsb-test (report)": sorted(sts)}
    vectors = {name: model.encode(texts, normalize=True) for name, texts in sets.items()}
    print("| margin | set | sentences | mean cos | worst cos |\n|---|---|---|---|---|")
    for margin in args.margins:
        width = span * (0.5 + margin)
        ranges = np.stack([middle - width, middle + width]).astype(np.float32)
        for name, rows in vectors.items():
            cos = cosines(rows, ranges)
            print(f"| {margin:g} | {name} | {len(rows)} | {cos.mean():.5f} | {cos.min():.5f} |")


if __name__ == "__main__":
    main()
