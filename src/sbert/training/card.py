"""The model card (README.md) a training run writes beside the model."""

from __future__ import annotations

import shutil
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from sbert.adapters import parse_lora
from sbert.formats.layout import atomic_file
from sbert.version import __version__

if TYPE_CHECKING:
    from sbert.training.config import TrainConfig
    from sbert.training.loop_state import StageState

LOG_NAME = "train_log.jsonl"


def render(config: TrainConfig, state: StageState, steps: int, seconds: float) -> str:
    """Markdown: base model, data, objectives, hyperparameters, dev score, wall time."""
    lines = [
        f"# {Path(config.output).name}",
        "",
        f"Trained with sbert {__version__} from `{config.model}` (seed {config.seed}, {steps} steps, "
        f"{seconds:.0f} s wall time). Loadable by `sbert` and by sentence-transformers.",
        "",
        "| stage | objective | training data | epochs | batch | lr | warm-up | dev |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for i, stage in enumerate(config.stages, start=1):
        for o in stage.objectives:
            options = f" {o.options}" if o.options else ""
            lines.append(
                f"| {i} | {o.name}{options} | `{o.train}` | {stage.epochs} | {stage.batch_size} | {stage.lr:g} "
                f"| {stage.warmup:g} | {_devs(stage.dev)} |"
            )
    best = state.progress.best_score
    if best is not None:
        lines += ["", f"Best dev score (last stage): **{best:.2f}** at step {state.progress.best_step}."]
    sizes = ", ".join(f"{p.dataset.name}: {len(p.dataset)} examples" for p in state.prepared)
    shares = ", ".join(f"{name}: {n}" for name, n in state.batches.items())
    lines += ["", f"Last stage data: {sizes}.", "", f"Batches per set ({state.stage.sampling}): {shares}."]
    sources = [f"- `{p.dataset.name}`: {p.dataset.source}" for p in state.prepared if p.dataset.source]
    lines += ["", "Table columns:", "", *sources] if sources else []
    if config.lora is not None:
        lines += ["", f"LoRA adapter ({parse_lora(config.lora).describe()}): this folder holds the adapter alone; "
                  "adapter_config.json names its base model. `sbert merge-adapter` writes a plain model."]  # fmt: skip
    lines += ["", "Full settings:", "", "```", repr(_settings(config)), "```", ""]
    return "\n".join(lines)


def _devs(dev: str | tuple[str, ...] | None) -> str:
    specs = [dev] if isinstance(dev, str) else list(dev or ())
    return ", ".join(f"`{d}`" for d in specs) or "-"


def _settings(config: TrainConfig) -> dict[str, object]:
    settings = asdict(config)
    settings["stages"] = len(config.stages)
    return settings


def write_into(folder: Path, text: str, log_path: Path, state: StageState) -> None:
    """Card, log and trained heads into a model folder being written (inside an atomic save)."""
    (folder / "README.md").write_text(text, encoding="utf-8")
    if log_path.is_file():
        shutil.copyfile(log_path, folder / LOG_NAME)
    state.save_heads(folder)


def write_beside(folder: Path, text: str, log_path: Path) -> None:
    """Card and log into an existing model folder, each file replaced atomically."""
    with atomic_file(folder / "README.md") as f:
        f.write(text.encode("utf-8"))
    if log_path.is_file():
        with atomic_file(folder / LOG_NAME) as f:
            f.write(log_path.read_bytes())
