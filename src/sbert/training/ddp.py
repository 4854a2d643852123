"""Data-parallel training under torchrun: each rank takes its share of every batch."""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class World:
    """This process's place among the training processes."""

    rank: int = 0
    size: int = 1
    local_rank: int = 0

    @property
    def main(self) -> bool:
        """Only the main process writes files and logs."""
        return self.rank == 0


def init_world(device: torch.device) -> World:
    """Join the process group torchrun describes (gloo on CPU, NCCL on CUDA); a single process otherwise.

    On CUDA the rank's device becomes its current one first: NCCL and every bare "cuda"
    allocation would otherwise land on cuda:0 for all ranks.
    """
    size = int(os.environ.get("WORLD_SIZE", "1"))
    if size <= 1:
        return World()
    if device.type == "cuda":
        torch.cuda.set_device(device)
    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")
    return World(dist.get_rank(), dist.get_world_size(), int(os.environ.get("LOCAL_RANK", "0")))


def shard(indices: list[int], world: World) -> list[int]:
    """This rank's slice of a batch; together the ranks cover it exactly once."""
    return indices[world.rank :: world.size]


def shard_sizes(rows: int, world: World) -> list[int]:
    """Each rank's row count of a batch of `rows` (what `shard` gives each), known on every rank without asking."""
    return [len(range(rank, rows, world.size)) for rank in range(world.size)]


def barrier(world: World) -> None:
    """Wait for every rank (no-op for one process)."""
    if world.size > 1:
        dist.barrier()


def mean_over_ranks(value: torch.Tensor, world: World) -> torch.Tensor:
    """The ranks' values averaged (every rank must call it): each rank's loss is a mean over its equal share.

    A loss computed on the gathered global batch is the same on every rank, and stays so.
    """
    if world.size == 1:
        return value
    total = value.detach().float().clone()
    dist.all_reduce(total)
    return total / world.size


def close(world: World) -> None:
    """Leave the process group."""
    if world.size > 1 and dist.is_initialized():
        dist.destroy_process_group()
