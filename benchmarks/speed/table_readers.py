"""Reading speed and peak memory of sbert's table readers against `datasets` on the same files.

A synthetic table of N rows (query, document, score; sentences drawn from the real STSb file) is
written as CSV, JSON lines, Parquet and a `save_to_disk` folder. Each reader then runs in a fresh
process, from the file to the examples' texts and scores in Python lists (what training needs):
sbert's `load_dataset(FORMAT:PATH)` against `datasets`' own reader for that format followed by
reading the same three columns out. Imports are done before the clock starts; peak memory is
the child's VmHWM (imports included: pyarrow for both on Parquet and hf, pandas for `datasets`).

    python benchmarks/speed/table_readers.py --rows 1000000 --workdir /tmp/tables
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

STSB = Path(__file__).resolve().parents[3] / "shared" / "data" / "stsbenchmark" / "sts-train.csv"
FORMATS = ("csv", "jsonl", "parquet", "hf")


def write_tables(rows: int, folder: Path) -> dict[str, Path]:
    """The same rows in each format (sentences from STSb train, scores uniform in [0, 1])."""
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    sentences = [c for line in STSB.read_text(encoding="utf-8").splitlines() for c in line.split("\t")[5:7]]
    rng = np.random.default_rng(0)
    pick = rng.integers(0, len(sentences), size=(rows, 2))
    table = pa.table({
        "query": [sentences[i] for i in pick[:, 0]],
        "document": [sentences[i] for i in pick[:, 1]],
        "score": rng.random(rows).round(4),
    })  # fmt: skip
    paths = {fmt: folder / f"t.{fmt}" for fmt in ("csv", "jsonl", "parquet")}
    import pyarrow.csv as pacsv

    pacsv.write_csv(table, paths["csv"])
    with paths["jsonl"].open("w", encoding="utf-8") as f:
        for row in table.to_pylist():
            f.write(json.dumps(row) + "\n")
    pq.write_table(table, paths["parquet"])
    paths["hf"] = folder / "t_hf"
    datasets.Dataset(table).save_to_disk(str(paths["hf"]))
    return paths


CHILD = r"""
import json, sys, time
fmt, path, who = sys.argv[1:4]
if who == "sbert":
    from sbert.data import load_dataset
    import pyarrow.parquet
else:
    import datasets
    datasets.disable_progress_bars()
start = time.perf_counter()  # imports left out: rows/s is the reading itself
if who == "sbert":
    d = load_dataset(f"{fmt}:{path}")
    n = len(d.texts); assert d.labels is not None
else:
    reader = {"csv": datasets.Dataset.from_csv, "jsonl": datasets.Dataset.from_json,
              "parquet": datasets.Dataset.from_parquet, "hf": datasets.load_from_disk}[fmt]
    kwargs = {} if fmt == "hf" else {"cache_dir": sys.argv[4]}
    ds = reader(path, **kwargs)
    cols = [ds["query"][:], ds["document"][:], ds["score"][:]]
    texts = list(zip(cols[0], cols[1])); n = len(texts)
elapsed = time.perf_counter() - start
peak = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
print(json.dumps({"rows": n, "seconds": elapsed, "peak_mib": peak / 1024}))
"""


def run_child(fmt: str, path: Path, who: str, cache: Path) -> dict[str, float]:
    """One read in a fresh interpreter (import time included: a user's process pays it too)."""
    out = subprocess.run([sys.executable, "-c", CHILD, fmt, str(path), who, str(cache)], check=True,
                         capture_output=True, text=True)  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    """Write the tables, time each reader `--repeats` times, print a markdown table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    folder = args.workdir or Path(tempfile.mkdtemp(prefix="tables-"))
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    paths = write_tables(args.rows, folder)
    print(f"# {args.rows} rows written in {time.perf_counter() - started:.0f} s; {platform.processor() or ''}")
    print("| format | sbert rows/s | datasets rows/s | ratio | sbert peak MiB | datasets peak MiB |")
    print("|---|---|---|---|---|---|")
    for fmt in FORMATS:
        runs: dict[str, list[dict[str, float]]] = {"sbert": [], "datasets": []}
        for r in range(args.repeats):
            for who in runs:  # alternated, so drift in the machine's speed hits both alike
                runs[who].append(run_child(fmt, paths[fmt], who, folder / f"cache-{fmt}-{r}"))
        rate = {w: args.rows / statistics.median(x["seconds"] for x in v) for w, v in runs.items()}
        peak = {w: max(x["peak_mib"] for x in v) for w, v in runs.items()}
        print(f"| {fmt} | {rate['sbert']:,.0f} | {rate['datasets']:,.0f} | {rate['sbert'] / rate['datasets']:.2f}x "
              f"| {peak['sbert']:.0f} | {peak['datasets']:.0f} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
