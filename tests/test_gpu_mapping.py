"""Which GPU each process gets, and what a checkpoint's GPU random state does on fewer GPUs: the CUDA
calls are mocked (a machine with 4 GPUs, or 1), so the mapping logic is tested where there is none."""

import logging

import pytest
import torch

from sbert.device import check_precision, resolve_device
from sbert.errors import DeviceError
from sbert.training import ddp
from sbert.training.checkpoint import restore_cuda_rng


@pytest.fixture
def four_gpus(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Pretend torch sees four GPUs; returns the list set_device calls are recorded in."""
    current = [0]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: current[-1])
    monkeypatch.setattr(torch.cuda, "set_device", lambda d: current.append(torch.device(d).index))
    return current


def test_a_bare_cuda_under_torchrun_means_the_local_rank(four_gpus, monkeypatch):
    monkeypatch.setenv("LOCAL_RANK", "2")
    assert resolve_device("cuda", local_rank=True) == torch.device("cuda", 2)
    assert resolve_device(None, local_rank=True) == torch.device("cuda", 2)
    assert resolve_device("cuda:1", local_rank=True) == torch.device("cuda", 1)  # an explicit index wins
    assert resolve_device("cuda") == torch.device("cuda", 0)  # encode: the current device
    monkeypatch.delenv("LOCAL_RANK")
    assert resolve_device("cuda", local_rank=True) == torch.device("cuda", 0)  # not under torchrun


def test_init_world_makes_the_rank_device_current_before_joining(four_gpus, monkeypatch):
    joined: list[str] = []
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("LOCAL_RANK", "3")
    monkeypatch.setattr(ddp.dist, "is_initialized", lambda: False)
    monkeypatch.setattr(ddp.dist, "init_process_group", lambda backend: joined.append(f"{backend}@{four_gpus[-1]}"))
    monkeypatch.setattr(ddp.dist, "get_rank", lambda: 3)
    monkeypatch.setattr(ddp.dist, "get_world_size", lambda: 4)
    world = ddp.init_world(resolve_device("cuda", local_rank=True))
    assert joined == ["nccl@3"]  # cuda:3 was current when NCCL started
    assert world == ddp.World(3, 4, 3)


def test_gpu_random_state_restores_what_fits_and_says_so(monkeypatch, caplog, tmp_path):
    restored: list[int] = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "set_rng_state", lambda state, device: restored.append(device))
    saved = [torch.zeros(16, dtype=torch.uint8), torch.ones(16, dtype=torch.uint8)]
    with caplog.at_level(logging.WARNING, logger="sbert.training.checkpoint"):
        restore_cuda_rng(saved, tmp_path)
    assert restored == [0]
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "saved for 2 GPU(s), 1 visible now: restored 1" in lines[0]
    caplog.clear()
    restore_cuda_rng(saved[:1], tmp_path)  # the same count: silent
    assert restored == [0, 0] and not caplog.records


def test_bad_precision_is_a_value_error_with_one_line():
    with pytest.raises(ValueError, match="unknown precision 'fp8'") as raised:
        check_precision("fp8")
    assert isinstance(raised.value, DeviceError) and len(str(raised.value).splitlines()) == 1
