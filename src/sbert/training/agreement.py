"""Before the first step under torchrun: every rank must train the same model on the same data, or say which not.

Ranks that read different files (a node with another copy of the table, another checkpoint) would
either hang at the first collective (their step counts differ) or train silently on a mix (DDP
copies rank 0's weights at start and averages whatever the ranks send). Each rank sends a short
fingerprint of its settings, model and data; the first difference becomes a one-line error on every
rank, naming the rank and what differs, before any step is taken.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import torch
import torch.distributed as dist
from torch import nn

from sbert.errors import SbertError
from sbert.training.config import Stage, TrainConfig
from sbert.training.ddp import World
from sbert.training.setup import Prepared

_SAMPLED_ROWS = 1024  # rows whose token ids are hashed whole; every row's token counts are hashed too


def _digest(*parts: object) -> str:
    return hashlib.sha256(repr(parts).encode("utf-8")).hexdigest()[:16]


def settings_print(config: TrainConfig, stage: Stage) -> str:
    """Every setting that decides the updates or when the ranks meet (log, eval and checkpoint steps).

    Paths are left out (the model, the tables, the dev sets, the output): nodes may mount the same files at
    other paths, and what the files hold is compared by the model and data prints instead.
    """
    objectives = [(o.name, sorted(o.options.items())) for o in stage.objectives]
    update = (stage.epochs, stage.batch_size, stage.batch_tokens, stage.grad_accum, stage.max_steps, stage.lr,
              stage.warmup, stage.warmup_steps, stage.weight_decay, stage.max_grad_norm, stage.allow_duplicates,
              stage.sampling, stage.length_groups, stage.matryoshka)  # fmt: skip
    model = (config.pooling, tuple(config.dense), config.max_seq_length, _lora(config.lora),
             config.gradient_checkpointing, config.precision, config.gather_across_ranks)  # fmt: skip
    meetings = (stage.eval_steps, _dev_count(stage.dev), config.log_steps, config.checkpoint_steps)
    return _digest(objectives, update, model, meetings, config.seed)


def _lora(spec: object) -> object:
    """A LoRA spec as comparable data (a TOML table's keys in order)."""
    return sorted(spec.items()) if isinstance(spec, dict) else spec


def _dev_count(dev: str | tuple[str, ...] | None) -> int:
    """How many dev sets a stage evaluates (their paths may differ per node)."""
    return 0 if dev is None else 1 if isinstance(dev, str) else len(dev)


def model_print(model: nn.Module) -> str:
    """Every parameter's name, shape and dtype, and its first values (another checkpoint differs there)."""
    with torch.no_grad():
        parts = [(name, tuple(p.shape), str(p.dtype), p.detach().flatten()[:8].double().cpu().tolist())
                 for name, p in model.named_parameters()]  # fmt: skip
    return _digest(parts)


def data_print(prepared: Prepared) -> str:
    """One objective's data: its row count, every row's token counts, the first rows' token ids."""
    if prepared.feed is not None:  # a streamed table is read as the plan reaches it: its size is what is known now
        return _digest(len(prepared.dataset))
    counts = [[len(ids) for ids in column] for column in prepared.columns]
    sample = [column[:_SAMPLED_ROWS] for column in prepared.columns]
    return _digest(len(prepared.dataset), counts, sample)


def check_agreement(world: World, config: TrainConfig, stage: Stage, model: nn.Module,
                    prepared: Sequence[Prepared]) -> None:  # fmt: skip
    """Raise the same one-line SbertError on every rank when any rank's settings, model or data differ from rank 0's."""
    if world.size == 1:
        return
    mine = {"settings": settings_print(config, stage), "model": model_print(model)}
    mine.update({f"training data of objective {i + 1} ({p.name})": data_print(p) for i, p in enumerate(prepared)})
    every: list[dict[str, str] | None] = [None] * world.size
    dist.all_gather_object(every, mine)
    first = every[0]
    assert first is not None
    for rank, theirs in enumerate(every[1:], start=1):
        assert theirs is not None
        differ = [what for what in first if theirs.get(what) != first[what]] or sorted(set(theirs) - set(first))
        if differ:
            raise SbertError(
                f"rank {rank} of {world.size} disagrees with rank 0 on the {differ[0]}: every process must train the "
                "same model on the same data with the same settings (check the files on each node)"
            )
