"""Periodic checkpoints: everything needed to resume bit-for-bit, written atomically."""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from sbert.formats.layout import atomic_directory, write_json

log = logging.getLogger(__name__)
STATE_FILE = "state.pt"
PROGRESS_FILE = "progress.json"
SCRATCH_PREFIX = "sbert-run-"


@dataclass(frozen=True)
class Progress:
    """Where a run stands: the next step to take and the best dev score so far."""

    stage: int
    epoch: int
    step_in_epoch: int
    global_step: int
    stage_step: int
    best_score: float | None = None
    best_step: int | None = None
    elapsed: float = 0.0


def checkpoint_dirs(run_dir: Path) -> list[Path]:
    """Complete checkpoints, oldest first (a folder without its progress file is ignored)."""
    root = run_dir / "checkpoints"
    found = [p for p in root.glob("step-*") if (p / PROGRESS_FILE).is_file() and (p / STATE_FILE).is_file()]
    return sorted(found, key=lambda p: int(p.name.removeprefix("step-")))


def save_checkpoint(run_dir: Path, progress: Progress, states: dict[str, Any], keep: int) -> Path:
    """Write one checkpoint (atomically) and drop all but the newest `keep`."""
    target = run_dir / "checkpoints" / f"step-{progress.global_step}"
    with atomic_directory(target) as tmp:
        torch.save({**states, "torch_rng": torch.get_rng_state(), "cuda_rng": _cuda_rng()}, tmp / STATE_FILE)
        write_json(tmp / PROGRESS_FILE, asdict(progress))
    for old in checkpoint_dirs(run_dir)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return target


def load_checkpoint(path: Path) -> tuple[Progress, dict[str, Any]]:
    """Read a checkpoint and restore the random number generators it recorded."""
    progress = Progress(**json.loads((path / PROGRESS_FILE).read_text(encoding="utf-8")))
    states = torch.load(path / STATE_FILE, map_location="cpu", weights_only=True)
    torch.set_rng_state(states.pop("torch_rng"))
    restore_cuda_rng(states.pop("cuda_rng"), path)
    return progress, states


def restore_cuda_rng(saved: list[torch.Tensor] | None, path: Path) -> None:
    """Give each visible GPU the generator state its index had at save time, as far as both go.

    A checkpoint from a machine with more GPUs than are visible now (or from a CPU run, or onto
    one) restores what fits and says so in one line, instead of failing the resume.
    """
    visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
    saved = saved or []
    for index, state in enumerate(saved[:visible]):
        torch.cuda.set_rng_state(state, index)
    if saved and len(saved) != visible:
        log.warning(
            "%s: CUDA random state saved for %d GPU(s), %d visible now: restored %d; "
            "dropout masks will differ from the original run",
            path, len(saved), visible, min(len(saved), visible),
        )  # fmt: skip


def _cuda_rng() -> list[torch.Tensor] | None:
    return torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None


def run_dir(output: str, checkpoint_steps: int) -> Path:
    """OUTPUT.run/ where checkpoints are on (or an earlier run left one to resume), else a scratch folder.

    The run's log and dev curves end up in the model folder either way; a run without checkpoints
    leaves nothing else behind.
    """
    kept = Path(f"{output}.run")
    if checkpoint_steps > 0 or kept.exists():
        return kept
    return Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX))


def stage_of(checkpoint: Path | None) -> int:
    """The stage a checkpoint was taken in (0 without one)."""
    if checkpoint is None:
        return 0
    return int(json.loads((checkpoint / PROGRESS_FILE).read_text(encoding="utf-8"))["stage"])
