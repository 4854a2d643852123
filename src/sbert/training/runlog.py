"""The run's JSONL log and its progress bar."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any


class RunLog:
    """Appends one JSON object per line; on resume, drops records from after the checkpoint."""

    def __init__(self, path: Path, enabled: bool = True) -> None:
        self.path = path
        self.enabled = enabled
        self.start = time.monotonic()

    def write(self, **record: Any) -> None:
        """Append a record (with a wall-clock timestamp)."""
        if not self.enabled:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"time": round(time.time(), 3), **record}) + "\n")

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
