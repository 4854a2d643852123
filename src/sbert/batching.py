"""Smart batching: order inputs by token length so each batch pads only to its longest member."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def length_order(lengths: Sequence[int]) -> list[int]:
    """Indices sorted by length, longest first (stable, so equal lengths keep input order).

    Longest first puts the biggest batch at the start: an out-of-memory error shows at once,
    and the progress bar's rate only improves.
    """
    return sorted(range(len(lengths)), key=lambda i: -lengths[i])


def fixed_batches(order: Sequence[int], batch_size: int) -> list[list[int]]:
    """Cut an ordering into batches of `batch_size` indices (the last may be shorter)."""
    if batch_size <= 0:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size}")
    return [list(order[i : i + batch_size]) for i in range(0, len(order), batch_size)]


def check_sentences(sentences: str | Iterable[str]) -> tuple[list[str], bool]:
    """Validate encode's input: a string or an iterable of strings. Returns (list, was_single)."""
    if isinstance(sentences, str):
        return [sentences], True
    if isinstance(sentences, bytes | bytearray | dict) or not isinstance(sentences, Iterable):
        raise TypeError(f"sentences must be a str or a list of str, got {type(sentences).__name__}")
    texts = list(sentences)
    for i, item in enumerate(texts):
        if not isinstance(item, str):
            raise TypeError(f"sentences[{i}] is {type(item).__name__}, expected str")
    return texts, False
