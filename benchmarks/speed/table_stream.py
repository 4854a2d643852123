"""Streaming a table against reading it whole, and against `datasets`' own streaming, on the same files.

A synthetic table of N rows (query, document, score; sentences from the real STSb train file) is
written as Parquet (row groups of 65,536 rows) and as a `save_to_disk` folder. Each reader runs in
a fresh process and hands every row's texts and score to Python once:

- sbert, whole: `load_dataset("parquet:PATH")`, the table in memory;
- sbert, streamed: `load_dataset("parquet[stream=10000]:PATH")` (its checking pass over every row)
  and then one epoch of `stream.rows(...)` through a 10,000-row shuffle buffer;
- datasets, streamed: `load_dataset("parquet", streaming=True).shuffle(buffer_size=10000)` (for
  the folder: `load_from_disk(...).to_iterable_dataset().shuffle(...)`), iterated once.

Rates are medians of --rounds alternated runs; peak is the highest VmHWM (imports included).

    python benchmarks/speed/table_stream.py --rows 1000000 --rounds 2 --workdir /tmp/stream [--readers sbert-stream]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np

STSB = Path(__file__).resolve().parents[3] / "shared" / "data" / "stsbenchmark" / "sts-train.csv"
BUFFER = 10_000


def write_tables(rows: int, folder: Path) -> dict[str, Path]:
    """Parquet and `save_to_disk` copies of the same synthetic rows, written piece by piece."""
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    sentences = [c for line in STSB.read_text(encoding="utf-8").splitlines() for c in line.split("\t")[5:7]]
    rng = np.random.default_rng(0)
    schema = pa.schema([("query", pa.string()), ("document", pa.string()), ("score", pa.float64())])
    path = folder / "t.parquet"
    with pq.ParquetWriter(path, schema) as writer:
        for start in range(0, rows, 65_536):
            n = min(65_536, rows - start)
            pick = rng.integers(0, len(sentences), size=(n, 2))
            writer.write_table(pa.table({"query": [sentences[i] for i in pick[:, 0]],
                                         "document": [sentences[i] for i in pick[:, 1]],
                                         "score": rng.random(n).round(4)}, schema=schema))  # fmt: skip
    hf = folder / "t_hf"
    datasets.Dataset.from_parquet(str(path), cache_dir=str(folder / "cache")).save_to_disk(str(hf))
    return {"parquet": path, "hf": hf}


CHILD = r"""
import json, sys, time
fmt, path, who = sys.argv[1:4]
if who.startswith("sbert"):
    from sbert.data import load_dataset
    import pyarrow.parquet
else:
    import datasets
    datasets.disable_progress_bars()
start = time.perf_counter()
checked = None
if who == "sbert-whole":
    d = load_dataset(f"{fmt}:{path}")
    n = sum(1 for _ in zip(d.texts, d.labels))
elif who == "sbert-stream":
    d = load_dataset(f"{fmt}[stream={BUFFER}]:{path}")
    checked = time.perf_counter() - start
    n = sum(1 for _ in d.stream.rows(seed=0, stage=0, epoch=0))
else:
    if fmt == "parquet":
        ds = datasets.load_dataset("parquet", data_files=path, split="train", streaming=True)
    else:
        ds = datasets.load_from_disk(path).to_iterable_dataset(num_shards=64)
    n = sum(1 for row in ds.shuffle(seed=0, buffer_size=BUFFER) if (row["query"], row["document"], row["score"]))
elapsed = time.perf_counter() - start
peak = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
print(json.dumps({"rows": n, "seconds": elapsed, "checking_s": checked, "peak_mib": peak / 1024}))
""".replace("BUFFER", str(BUFFER))


def run_child(fmt: str, path: Path, who: str) -> dict[str, float]:
    """One reader in a fresh process."""
    out = subprocess.run([sys.executable, "-c", CHILD, fmt, str(path), who], capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    """Write the tables, time every reader, print one JSON line per (format, reader) and a table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--readers", nargs="+", default=["sbert-whole", "sbert-stream", "datasets-stream"])
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    paths = write_tables(args.rows, args.workdir)
    print(json.dumps({"cpu": platform.processor() or platform.machine(), "rows": args.rows}), flush=True)
    readers = tuple(args.readers)
    lines = []
    for fmt, path in paths.items():
        runs: dict[str, list[dict[str, float]]] = {r: [] for r in readers}
        for _ in range(args.rounds):
            for who in readers:
                runs[who].append(run_child(fmt, path, who))
        for who in readers:
            got = runs[who]
            assert all(r["rows"] == args.rows for r in got), (fmt, who, got)
            rate = statistics.median(args.rows / r["seconds"] for r in got)
            checking = [r["checking_s"] for r in got if r["checking_s"] is not None]
            peak = round(max(r["peak_mib"] for r in got))
            row = {"format": fmt, "reader": who, "rows_per_s": round(rate), "peak_mib": peak,
                   "checking_s": round(statistics.median(checking), 2) if checking else None}  # fmt: skip
            print(json.dumps(row), flush=True)
            lines.append(f"| {fmt} | {who} | {row['rows_per_s']:,} | {row['peak_mib']:,} |")
    print("| format | reader | rows/s | peak MiB |\n|---|---|---|---|\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
