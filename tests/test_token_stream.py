"""The streamed host side (vectors/token_stream.py): windows in input order with the whole-list ids, the first
one out while later chunks are still to be tokenized, and encode's streamed path equal to the whole-list path."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from sbert import SentenceEncoder
from sbert.vectors.token_stream import STREAM_MIN_TEXTS, Window, token_windows
from tests.tiny_models import EDGE_SENTENCES


@pytest.fixture(scope="module")
def tiny(tiny_dirs) -> SentenceEncoder:
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    model.input_module.max_seq_length = 12  # some rows are cut: their indices must come back too
    return model


def corpus(n: int) -> list[str]:
    return [f"{EDGE_SENTENCES[i % len(EDGE_SENTENCES)]} {i}" for i in range(n)]


@pytest.mark.parametrize(("threads", "chunk", "window"), [(1, 7, 20), (2, 7, 20), (3, 50, 1), (2, 4096, 8192)])
def test_windows_are_the_whole_list_in_order(tiny, threads, chunk, window):
    texts = corpus(STREAM_MIN_TEXTS + 333)
    whole_ids, whole_cut = tiny.input_module.token_ids(texts)
    windows = list(token_windows(tiny.input_module.token_ids, texts, threads=threads, chunk=chunk, window=window))
    assert [w.start for w in windows] == list(np.cumsum([0] + [len(w.ids) for w in windows[:-1]]))
    assert [row for w in windows for row in w.ids] == whole_ids
    assert [i for w in windows for i in w.cut] == whole_cut and whole_cut  # cut rows exist and are reported


def test_the_first_window_comes_before_the_corpus_is_tokenized(tiny):
    texts, calls, lock = corpus(2000), [], threading.Lock()

    def tokenize(chunk: list[str]) -> tuple[list[list[int]], list[int]]:
        with lock:
            calls.append(len(chunk))
        return tiny.input_module.token_ids(chunk)

    stream = token_windows(tokenize, texts, threads=2, chunk=10, window=10)
    first = next(stream)
    with lock:  # at most 2 x threads chunks in flight, plus the one just handed on
        started = len(calls)
    assert first == Window(0, tiny.input_module.token_ids(texts[:10])[0], tiny.input_module.token_ids(texts[:10])[1])
    assert started <= 5 < len(texts) // 10
    assert sum(len(w.ids) for w in stream) == len(texts) - 10


def test_a_small_call_is_one_window_on_this_thread_and_errors_surface(tiny):
    texts = corpus(10)
    assert list(token_windows(tiny.input_module.token_ids, texts)) == [Window(0, *tiny.input_module.token_ids(texts))]
    assert list(token_windows(tiny.input_module.token_ids, [])) == [Window(0, [], [])]

    def broken(chunk: list[str]) -> tuple[list[list[int]], list[int]]:
        raise RuntimeError("tokenizer failed on chunk")

    with pytest.raises(RuntimeError, match="tokenizer failed"):
        list(token_windows(broken, corpus(STREAM_MIN_TEXTS), threads=2))
    with pytest.raises(ValueError, match="threads"):
        list(token_windows(tiny.input_module.token_ids, corpus(STREAM_MIN_TEXTS), threads=0))


def test_encode_streams_large_calls_with_the_whole_list_vectors_and_warning(tiny):
    texts = corpus(STREAM_MIN_TEXTS + 100)
    cut = tiny.input_module.token_ids(texts)[1]
    with pytest.warns(UserWarning, match=rf"exceeded max_seq_length=12 .* \(first at index {cut[0]}\)") as warned:
        streamed = tiny.encode(texts, batch_size=64)  # long enough to stream
    whole = np.concatenate([tiny.encode(texts[i : i + 500], batch_size=64, on_truncation="ignore")
                            for i in range(0, len(texts), 500)])  # fmt: skip
    np.testing.assert_allclose(streamed, whole, atol=1e-6)
    assert str(warned[0].message).startswith(f"{len(cut)} of {len(texts)} inputs exceeded")
    np.testing.assert_allclose(tiny.encode(texts, batch_tokens=512), whole, atol=1e-6)  # token-budget batches too


class SlowDevice:
    """A stand-in device: each batch takes `seconds` (a sleep, as a GPU kernel leaves the host free)."""

    packed, default_batch_tokens, max_rows, workers = False, 10**9, 50, 1

    def __init__(self, seconds: float) -> None:
        self.seconds, self.starts = seconds, []

    def run(self, ids, batches, skip=0):
        for batch in batches:
            self.starts.append(time.perf_counter())
            time.sleep(self.seconds)
            yield batch, np.asarray([[float(len(ids[i])), float(sum(ids[i]))] for i in batch], dtype=np.float32)


def test_a_long_encode_overlaps_the_host_and_the_device(tiny):
    """Host (tokenizing, slowed to 20 ms a chunk) and device (20 ms a batch) overlap: the first batch starts after
    one window, not after the whole corpus, and the wall time is near the larger of the two, not their sum."""
    from sbert.encoding.engine import embed_streamed

    texts, pause = corpus(2000), 0.02

    def tokenize(chunk: list[str]) -> tuple[list[list[int]], list[int]]:
        time.sleep(pause)  # a slow tokenizer: sleeps like the Rust tokenizer's GIL-free work
        return tiny.input_module.token_ids(chunk)

    device, start = SlowDevice(pause), time.perf_counter()
    got, cut = embed_streamed(device, tokenize, texts, 2, batch_size=50, threads=1, chunk=50,
                              window=200)  # type: ignore[arg-type]  # fmt: skip
    wall = time.perf_counter() - start
    host = pause * len(texts) / 50  # 40 chunks of 50 texts, on one thread
    busy = pause * len(device.starts)  # 40 batches of 50 rows
    whole, whole_cut = tiny.input_module.token_ids(texts)
    want = np.asarray([[float(len(r)), float(sum(r))] for r in whole], dtype=np.float32)
    np.testing.assert_array_equal(got, want)  # every row in input order, whatever ran when
    assert sorted(cut) == sorted(whole_cut)
    assert device.starts[0] - start < 0.25 * host  # the device starts after the first window (4 chunks), not 40
    assert wall < 0.8 * (host + busy), (wall, host, busy)  # serial would be host + device
