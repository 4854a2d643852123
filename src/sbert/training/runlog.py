"""The run's JSONL log and its progress bar."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


class RunLog:
    """Appends one JSON object per line; on resume, drops records from after the checkpoint."""

    def __init__(
        self, path: Path, enabled: bool = True, listener: Callable[[dict[str, Any]], None] | None = None
    ) -> None:
        self.path = path
        self.enabled = enabled
        self.listener = listener
        self.start = time.monotonic()

    def write(self, **record: Any) -> None:
        """Append a record (with a wall-clock timestamp)."""
        if not self.enabled:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = {"time": round(time.time(), 3), **record}
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")
        if self.listener is not None:
            self.listener(line)

    def truncate_after(self, global_step: int) -> None:
        """Forget steps a resumed run will redo, so the log reads as one uninterrupted run."""
        if not self.enabled or not self.path.is_file():
            return
        kept = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by a kill
            if record.get("step", 0) <= global_step:
                kept.append(line)
        self.path.write_text("".join(f"{line}\n" for line in kept), encoding="utf-8")


HEADLINES = ("spearman", "accuracy", "ndcg@10")  # each evaluator's headline metric (sbert.evaluation.evaluate)


def dev_curves(log_path: Path) -> dict[str, list[tuple[int, float]]]:
    """Every dev metric's (step, value) curve from a run log: the selecting score and each set's headline."""
    curves: dict[str, list[tuple[int, float]]] = {}
    for line in log_path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short by a kill
        if record.get("event") != "eval":
            continue
        step = int(record["step"])
        curves.setdefault(f"selected ({record['metric']})", []).append((step, float(record["score"])))
        for name, value in record.get("scores", {}).items():
            if name.rpartition(":")[2] in HEADLINES and name != record["metric"]:
                curves.setdefault(name, []).append((step, float(value)))
    return curves


def write_curves_csv(curves: dict[str, list[tuple[int, float]]], path: Path) -> None:
    """One row per eval step, one column per curve (empty where a curve has no value at that step)."""
    from sbert.formats.layout import atomic_file

    steps = sorted({s for points in curves.values() for s, _ in points})
    lookup = {name: dict(points) for name, points in curves.items()}
    rows = ["step," + ",".join(f'"{name}"' for name in curves)]
    rows += [f"{s}," + ",".join(str(lookup[n].get(s, "")) for n in curves) for s in steps]
    with atomic_file(path) as f:
        f.write(("\n".join(rows) + "\n").encode("utf-8"))
