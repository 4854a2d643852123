"""The dynamic batcher's group order: a request cut short by a full group goes next, a huge one yields to small ones."""

from __future__ import annotations

import asyncio

import numpy as np

from sbert.serve.metrics import Metrics
from sbert.serve.scheduler import DynamicBatcher


def _batcher(budget: int) -> DynamicBatcher:
    return DynamicBatcher(lambda texts: np.zeros((len(texts), 1)), Metrics(), budget, max_wait_ms=0, max_queue=10_000)


def _enqueue(batcher: DynamicBatcher, name: str, texts: int, tokens: int) -> None:
    # submit() without awaiting its answer: the job is queued at once, groups are then taken by hand.
    asyncio.get_running_loop().create_task(batcher.submit([f"{name}{i}" for i in range(texts)], [tokens] * texts))


def test_a_request_cut_by_a_full_group_is_next_not_behind_later_arrivals():
    async def scenario() -> list[list[str]]:
        batcher = _batcher(budget=100)
        _enqueue(batcher, "a", 3, 40)  # 120 tokens: the first group holds two of its texts
        await asyncio.sleep(0)
        first = batcher._take_group()
        for k in range(3):  # later arrivals, each filling a group alone
            _enqueue(batcher, f"n{k}-", 2, 50)
        await asyncio.sleep(0)
        second = batcher._take_group()
        return [[t for job, a, b in g for t in job.texts[a:b]] for g in (first, second)]

    first, second = asyncio.run(scenario())
    assert first == ["a0", "a1"]
    assert second[0] == "a2"  # sorted by tokens served alone, a2 waited until no newer request was left


def test_a_small_request_passes_a_huge_one_after_its_first_group():
    async def scenario() -> list[str]:
        batcher = _batcher(budget=100)
        _enqueue(batcher, "huge", 50, 50)
        await asyncio.sleep(0)
        batcher._take_group()
        _enqueue(batcher, "small", 1, 10)
        await asyncio.sleep(0)
        return [t for job, a, b in batcher._take_group() for t in job.texts[a:b]]

    assert asyncio.run(scenario())[0] == "small0"
