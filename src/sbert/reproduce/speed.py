"""Paper Table 7: encoding speed in sentences per second, on this machine's CPU.

Rows: average GloVe; the starting model with batches in input order (each padded to its longest
sentence, as without smart batching); with smart batching (sorted by length, batch 32, as the
paper); with sbert's default token-budget batching; and the ONNX int8 backend. Every row encodes
the same STS benchmark sentences (both test columns, 2,758) and reports the median of `repeats`
timed runs after a warm-up. The paper measured on a 6-core i7-5820K with BERT-base.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sbert.reproduce.paper import TABLE7
from sbert.reproduce.runs import Results

PAPER_BATCH = 32


@dataclass(frozen=True)
class SpeedSettings:
    """Starting model, data folder and how many timed runs per row."""

    model: str
    data: Path
    repeats: int = 3

    def as_dict(self) -> dict[str, object]:
        """The settings a results file must match to be resumed."""
        return {"model": self.model, "data": str(self.data.resolve()), "repeats": self.repeats}


def encoders(s: SpeedSettings) -> dict[str, Callable[[list[str]], object]]:
    """Row name -> a function that embeds a list of sentences."""
    from sbert.baselines.glove import GloveEncoder
    from sbert.dense.model import SentenceEncoder

    glove = GloveEncoder.from_package()
    model = SentenceEncoder.load(s.model, device="cpu")

    def input_order(texts: list[str]) -> None:
        for start in range(0, len(texts), PAPER_BATCH):  # one call per batch: no sorting across batches
            model.encode(texts[start : start + PAPER_BATCH], batch_size=PAPER_BATCH, show_progress=False)

    return {
        "Avg. GloVe embeddings": lambda texts: glove.encode(texts),
        f"{s.model}, batches in input order": input_order,
        f"{s.model}, smart batching (batch {PAPER_BATCH})": lambda texts: model.encode(
            texts, batch_size=PAPER_BATCH, show_progress=False
        ),
        f"{s.model}, token-budget batching (default)": lambda texts: model.encode(texts, show_progress=False),
        f"{s.model}, onnx-int8 backend": lambda texts: model.encode(texts, backend="onnx-int8", show_progress=False),
    }


def run_table7(s: SpeedSettings, results: Results) -> None:
    """Time every row not yet in `results` (score = sentences per second)."""
    from sbert.data import load_dataset

    test = load_dataset(f"stsb:{s.data / 'stsbenchmark' / 'sts-test.csv'}")
    texts = test.column(0) + test.column(1)
    for row, encode in encoders(s).items():
        if results.has(row):
            continue
        encode(texts[:64])  # warm-up: lazy loading, ONNX export/cache, allocator
        times = []
        for _ in range(s.repeats):
            started = time.perf_counter()
            encode(texts)
            times.append(time.perf_counter() - started)
        results.put(row, 0, len(texts) / statistics.median(times), statistics.median(times))


def render(results: Results, s: SpeedSettings) -> str:
    """Ours (this CPU) above the paper's CPU and GPU columns."""
    import os

    lines = [
        "# Encoding speed (paper Table 7)",
        "",
        f"Sentences per second on this machine ({os.cpu_count()} CPU cores, no GPU): the 2,758 STS benchmark "
        f"test sentences, median of {s.repeats} runs after a warm-up. The paper: BERT-base on a 6-core "
        "i7-5820K CPU and a V100 GPU.",
        "",
        "| Model | CPU (ours) | CPU (paper) | GPU (paper) |",
        "|---|---|---|---|",
    ]
    for record in results.data["runs"].values():
        lines.append(f"| {record['key']} | {record['score']:.0f} | | |")
    for row, (cpu, gpu) in TABLE7.items():
        lines.append(f"| *paper:* {row} | | {cpu if cpu else '–'} | {gpu if gpu else '–'} |")
    return "\n".join(lines) + "\n"
