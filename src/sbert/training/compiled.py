"""A compiled training step: the forward and loss through `torch.compile`, eager where compiling is unavailable.

On a GPU a training step of a small encoder is bound by kernel launches (hundreds a step, each a few
microseconds of work); a compiled forward and loss fuse them, and its backward is compiled with it. The
step stays the same computation: the losses equal the eager ones within float rounding (the test runs 10
steps of both). Compiling can be unavailable (no C++ compiler for inductor, a Python torch.compile does
not support, an op dynamo cannot trace): the first failure logs one line and the run goes on eagerly,
the failed step re-run eagerly, so nothing is lost. Shapes change every batch, so the graph is compiled
with dynamic shapes (one compile, not one per batch width).
"""

from __future__ import annotations

import logging
from typing import Any

import torch
from torch import nn

from sbert.errors import first_line

log = logging.getLogger(__name__)
BACKENDS = ("inductor", "aot_eager", "eager")  # inductor: generated kernels; the others trace only (tests)


class CompiledStep(nn.Module):
    """Calls `module` through `torch.compile(backend=...)`; after a compile failure, calls it eagerly."""

    def __init__(self, module: nn.Module, backend: str = "inductor") -> None:
        super().__init__()
        if backend not in BACKENDS:
            raise ValueError(f"compile backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
        self.module, self.backend, self.eager, self._called = module, backend, False, False
        try:
            self._compiled: Any = torch.compile(module, backend=backend, dynamic=True)
        except Exception as e:  # torch.compile itself refuses (an unsupported Python, say)
            self._fall_back(e)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The module's output, compiled unless compiling failed before."""
        if not self.eager:
            first, self._called = not self._called, True
            try:
                return self._compiled(*args, **kwargs)
            except Exception as e:
                if not (first or _compile_error(e)):
                    raise  # the computation itself failed: eager would fail alike
                self._fall_back(e)
        return self.module(*args, **kwargs)

    def _fall_back(self, error: BaseException) -> None:
        self.eager = True
        log.warning("training step: torch.compile (backend %s) is unavailable here (%s); training runs eagerly",
                    self.backend, first_line(error))  # fmt: skip


def compiled_step(module: nn.Module, backend: str, processes: int = 1) -> nn.Module:
    """`module` as a training step calls it: compiled with `backend` ("" for eager) in a single process.

    Under torchrun the step stays eager (one log line): DDP's bucketed all-reduce over a compiled module is
    not what the tests cover.
    """
    if not backend:
        return module
    if processes > 1:
        log.warning("training step: --compile runs in a single process; under torchrun the step is eager")
        return module
    return CompiledStep(module, backend)


def _compile_error(error: BaseException) -> bool:
    """Whether `error` came from dynamo or a compiler backend rather than from the model's own computation."""
    from torch._dynamo.exc import TorchDynamoException

    return isinstance(error, TorchDynamoException) or type(error).__module__.startswith("torch._inductor")
