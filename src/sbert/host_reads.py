"""Counting a step's reads of device memory by the host (each a wait for the GPU's queue), on any device.

A dispatch mode sees every aten op, in the forward, the backward and the optimizer, and counts the ones that
must bring a value back to the host before Python can go on: a scalar read (`.item()`, `bool(t)`,
`float(t)`), an op whose output size depends on the data (nonzero, boolean-mask indexing, masked_select,
unique), and a copy to the CPU. On the CPU they cost nothing, but they are the same calls that stall a
GPU's queue, so the count measured here is the count there. One gap: `tolist()` and `numpy()` of a tensor
already on the CPU run no aten op and are not seen (on a GPU tensor they copy to the CPU first, and are).
"""

from __future__ import annotations

import collections
import traceback
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

aten = torch.ops.aten
_DATA_SIZED = {aten._local_scalar_dense.default, aten.nonzero.default, aten.masked_select.default,
               aten._unique2.default, aten.unique_consecutive.default}  # fmt: skip


class HostReads(TorchDispatchMode):
    """`with HostReads() as reads: ...` then `reads.total` and `reads.where` (op and the Python line that asked).

    `ops` and `casts` count every aten op and the dtype conversions among them, for the same block.
    """

    def __init__(self) -> None:
        super().__init__()
        self.where: collections.Counter[str] = collections.Counter()
        self.ops = 0  # every aten op the block ran (on a GPU, about one kernel launch each)
        self.casts = 0  # dtype conversions among them (mixed precision's casts of weights and activations)

    @property
    def total(self) -> int:
        """How many reads the block made."""
        return sum(self.where.values())

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.ops += 1
        if func is aten._to_copy.default and (kwargs or {}).get("dtype", args[0].dtype) != args[0].dtype:
            self.casts += 1
        if self._reads(func, args, kwargs or {}):
            frames = [f for f in traceback.extract_stack()[:-2] if "torch/utils/_python_dispatch" not in f.filename]
            caller = next((f for f in reversed(frames) if "/torch/" not in f.filename), frames[-1])
            self.where[f"{func.__name__} at {caller.filename.rsplit('/', 2)[-1]}:{caller.lineno}"] += 1
        return func(*args, **(kwargs or {}))

    @staticmethod
    def _reads(func: Any, args: Any, kwargs: dict[str, Any]) -> bool:
        if func in _DATA_SIZED:
            return True
        if func is aten.index.Tensor:  # indexing by a boolean mask: the result's size is the mask's count
            return any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in args[1] if i is not None)
        if func in (aten._to_copy.default, aten.copy_.default):
            source = args[1] if func is aten.copy_.default else args[0]
            target = args[0].device if func is aten.copy_.default else kwargs.get("device", source.device)
            return source.device.type != "cpu" and torch.device(target).type == "cpu"
        return False
