"""The padding-free GPU engine, run on the CPU: packing, varlen attention, pooling, pipeline, OOM halving."""

import logging
import threading
import weakref
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from sbert import SentenceEncoder
from sbert.backends import varlen
from sbert.backends.packing import pack, packed_cls, packed_max, packed_mean, unpack
from sbert.backends.torch_cuda import PREFETCH, CudaBackend, prefetch
from sbert.encoding.engine import embed_rows, plan_batches
from sbert.modules.pooling import cls_pool, max_pool, mean_pool
from sbert.serve.server import CPU_GROUP_TOKENS, group_budget
from sbert.vectors.batching import packed_batches
from sbert.vectors.positions import Positions
from tests.noise_floor import half_noise_floor, neighbour_gap
from tests.tiny_models import CORPUS

SENTENCES = [*CORPUS, "", "a", "the cat sat on the mat " * 6, "dogs " * 40]
CPU = torch.device("cpu")


def packed_engine(model: SentenceEncoder) -> CudaBackend:
    return CudaBackend(model.as_chain(), CPU, torch.float32)


def test_pack_lays_rows_end_to_end():
    batch = pack([[5, 6, 7], [8], [9, 10]], Positions(1))  # RoBERTa: from padding_idx + 1
    assert batch.input_ids.tolist() == [5, 6, 7, 8, 9, 10]
    assert batch.position_ids.tolist() == [2, 3, 4, 2, 2, 3]
    assert batch.cu_seqlens.tolist() == [0, 3, 4, 6] and batch.cu_seqlens.dtype == torch.int32
    assert batch.max_len == 3 and batch.rows == 3


def test_packed_pooling_equals_padded_pooling():
    gen = torch.Generator().manual_seed(0)
    lengths = [4, 1, 7]
    tokens = torch.randn(sum(lengths), 6, generator=gen)
    cu = torch.tensor([0, 4, 5, 12], dtype=torch.int32)
    grid, mask = unpack(tokens, cu, max(lengths))
    assert mask.sum(1).tolist() == lengths
    for packed, padded in ((packed_mean, mean_pool), (packed_max, max_pool), (packed_cls, cls_pool)):
        assert torch.allclose(packed(tokens, cu), padded(grid, mask), atol=1e-6)


def test_the_cpu_picks_the_grid_and_nested_equals_per_sentence_attention():
    picked = varlen.pick_kernel(CPU, torch.float32, heads=2, head_dim=8)
    assert picked is not None and picked[0] == "grid"  # the faster one on a CPU (varlen.candidate_kernels)
    gen = torch.Generator().manual_seed(0)
    lengths = [5, 1, 17, 9]
    cu = torch.tensor([0, 5, 6, 23, 32], dtype=torch.int32)
    q, k, v = (torch.randn(sum(lengths), 2, 8, generator=gen) for _ in range(3))
    want = varlen.reference_attention(q, k, v, cu, 17, 1, None, False)
    for kernel in (varlen.nested_sdpa, varlen.grid_sdpa):
        assert (kernel(q, k, v, cu, 17, 1, None, False) - want).abs().max() <= 1e-5


def test_packed_batches_count_real_tokens():
    lengths = [10, 9, 3, 3, 2]
    batches = packed_batches([0, 1, 2, 3, 4], lengths, max_tokens=20, max_size=8)
    assert batches == [[0, 1], [2, 3, 4]]
    assert all(sum(lengths[i] for i in b) <= 20 for b in batches)
    assert packed_batches([0], [50], 20, 8) == [[0]]  # a row over the budget still runs


def test_packed_batches_side_by_side_get_equal_tokens_within_the_limits():
    # A server's group of 64 random STS sentences filled 510 + 422 tokens: one core waited for the other.
    lengths = [40, 30, 25, 20] + [10] * 30 + [6] * 20  # longest first, 535 tokens
    order = list(range(len(lengths)))
    filled = packed_batches(order, lengths, max_tokens=512, max_size=512)
    assert [sum(lengths[i] for i in b) for b in filled] == [511, 24]
    even = packed_batches(order, lengths, max_tokens=512, max_size=512, parts=2)
    tokens = [sum(lengths[i] for i in b) for b in even]
    assert len(even) == 2 and [i for b in even for i in b] == order  # order kept, nothing lost
    assert max(tokens) - min(tokens) <= max(lengths)
    # Three filled batches on two cores become four of equal tokens, each within the budget.
    longer, rows = sorted(lengths * 3, reverse=True), list(range(3 * len(lengths)))
    three = packed_batches(rows, longer, max_tokens=600, max_size=512, parts=2)
    assert len(packed_batches(rows, longer, 600, 512)) == 3 and len(three) == 4
    assert all(sum(longer[i] for i in b) <= 600 for b in three)
    # The row cap holds too: where equal shares would pass it, the filled batches stay.
    assert packed_batches(order, lengths, 512, 30, parts=2) == packed_batches(order, lengths, 512, 30)
    assert packed_batches(order, lengths, 512, 512, parts=1) == filled


@pytest.mark.parametrize("pooling", ["mean", "max", "cls", "cnn", "ngram-cnn"])
def test_packed_equals_padded_for_each_encoder_and_head(tiny_dir, pooling):
    model = SentenceEncoder.from_transformer(tiny_dir, pooling=pooling, normalize=pooling == "mean", device="cpu")
    expected = model.encode(SENTENCES, on_truncation="ignore", batch_size=1)  # each sentence alone, padded
    engine = packed_engine(model)
    assert engine.packed, "tiny BERT, RoBERTa and ALBERT all take the packed path"
    ids = model.transformer.token_ids(SENTENCES)[0]
    got = embed_rows(engine, ids, model.embedding_dimension, batch_tokens=64)
    assert np.abs(got - expected).max() <= 1e-5
    # The user's model keeps its own attention implementation: the engine switched a copy.
    assert (
        model.transformer.auto_model.config._attn_implementation
        != engine.modules[0].auto_model.config._attn_implementation
    )


def test_bf16_stays_close_to_fp32(tiny_dirs):
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    ids = model.transformer.token_ids(SENTENCES)[0]
    fp32 = model.encode(SENTENCES, on_truncation="ignore")
    engine = CudaBackend(model.as_chain(), CPU, torch.bfloat16)
    got = embed_rows(engine, ids, model.embedding_dimension)
    assert got.dtype == np.float32
    cosine = (fp32 * got).sum(1) / np.linalg.norm(fp32, axis=1) / np.linalg.norm(got, axis=1)
    assert cosine.min() >= 0.999
    assert next(model.parameters()).dtype == torch.float32  # the user's weights were not cast


def test_unpackable_architecture_falls_back_with_one_line(tiny_dirs, caplog):
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    model.transformer.auto_model.config.model_type = "mpnet"  # a type the packed path does not know
    with caplog.at_level(logging.INFO, logger="sbert.backends"):
        engine = packed_engine(model)
    assert not engine.packed
    notes = [r.getMessage() for r in caplog.records if "packed batches off" in r.getMessage()]
    assert len(notes) == 1 and "mpnet" in notes[0]
    ids = model.transformer.token_ids(SENTENCES)[0]
    got = embed_rows(engine, ids, model.embedding_dimension)
    assert np.abs(got - model.encode(SENTENCES, on_truncation="ignore")).max() <= 1e-5


def test_out_of_memory_halves_the_budget_once_and_loses_nothing(tiny_dirs, caplog, monkeypatch):
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    engine = packed_engine(model)
    real = engine.forward

    def small_memory(host, skip=0):
        if int(host.input_ids.shape[0]) > 60:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return real(host, skip)

    monkeypatch.setattr(engine, "forward", small_memory)
    ids = model.transformer.token_ids(SENTENCES)[0]
    with caplog.at_level(logging.WARNING, logger="sbert.backends.torch_cuda"):
        got = embed_rows(engine, ids, model.embedding_dimension, batch_tokens=400)
    assert np.abs(got - model.encode(SENTENCES, on_truncation="ignore")).max() <= 1e-5
    assert engine.default_batch_tokens < 400
    assert sum("budget halved" in r.getMessage() for r in caplog.records) == 1


def test_prefetch_keeps_order_and_raises_producer_errors():
    assert [b for b, _ in prefetch([[1], [2], [3]], lambda b: b[0] * 2)] == [[1], [2], [3]]

    def broken(batch):
        if batch == [2]:
            raise ValueError("bad batch")
        return batch

    with pytest.raises(ValueError, match="bad batch"):
        list(prefetch([[1], [2], [3]], broken))
    # leaving early stops the producer instead of leaving it blocked on a full queue
    first = next(iter(prefetch([[i] for i in range(100)], lambda b: b)))
    assert first == ([0], [0])


def test_out_of_memory_recovery_starts_after_the_failed_forward_is_freed(tiny_dirs, monkeypatch):
    # Retrying inside the except block would keep the failed forward's frame (its activations) alive.
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    engine = packed_engine(model)
    real = engine.forward
    failed: list[weakref.ref] = []
    alive_at_retry: list[bool] = []

    def small_memory(host, skip=0):
        if int(host.input_ids.shape[0]) > 60:
            activations = torch.empty(4096)  # what a real forward holds when it runs out of memory
            failed.append(weakref.ref(activations))
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        alive_at_retry.append(any(ref() is not None for ref in failed))
        return real(host, skip)

    monkeypatch.setattr(engine, "forward", small_memory)
    ids = model.transformer.token_ids(SENTENCES)[0]
    got = embed_rows(engine, ids, model.embedding_dimension, batch_tokens=400)
    assert failed and not any(alive_at_retry)
    assert np.abs(got - model.encode(SENTENCES, on_truncation="ignore")).max() <= 1e-5


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_after_out_of_memory_later_batches_are_cut_ahead_and_planned_smaller(tiny_dirs, monkeypatch):
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    engine = packed_engine(model)
    texts = [f"{s} number {i}" for i, s in enumerate(CORPUS * 40)]
    ids = model.transformer.token_ids(texts)[0]
    plan = plan_batches(engine, [len(r) for r in ids], None, 100)
    planned = {row: n for n, batch in enumerate(plan) for row in batch}
    real_forward, real_prepare, real_run = engine.forward, engine.prepare, engine._run_batch
    running = [0]  # planned batch of the batch being run
    ooms: list[int] = []  # planned batch of each out-of-memory
    main_thread: list[int] = []  # planned batches re-packed on the caller's thread

    def run_batch(ids_, batch, host, skip=0):
        running[0] = planned[batch[0]]
        return real_run(ids_, batch, host, skip)

    def small_memory(host, skip=0):
        if int(host.input_ids.shape[0]) > 30:
            ooms.append(running[0])
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return real_forward(host, skip)

    def prepare(rows):
        if threading.current_thread() is threading.main_thread():
            main_thread.append(running[0])
        return real_prepare(rows)

    monkeypatch.setattr(engine, "_run_batch", run_batch)
    monkeypatch.setattr(engine, "forward", small_memory)
    monkeypatch.setattr(engine, "prepare", prepare)
    got = embed_rows(engine, ids, model.embedding_dimension, batch_tokens=100)
    assert np.abs(got - model.encode(texts)).max() <= 1e-5
    # Only batches already packed ahead when the budget fell are re-cut on the caller's thread.
    assert len(plan) > max(ooms) + PREFETCH + 5
    assert max(main_thread) <= max(ooms) + PREFETCH + 1
    assert engine.default_batch_tokens <= 30
    ooms.clear()
    embed_rows(engine, ids, model.embedding_dimension)  # planned with the lowered budget: no new error
    assert not ooms


def test_nested_attention_gets_both_extreme_lengths(tiny_dirs, monkeypatch):
    # Without min_seqlen, SDPA's fused-kernel checks on a GPU read it back: three host syncs per layer.
    seen: list[tuple[object, object, int]] = []
    real = torch.nested.nested_tensor_from_jagged

    def spy(values, offsets, *args, **kwargs):
        seen.append((kwargs.get("min_seqlen"), kwargs.get("max_seqlen"), int(offsets.diff().min())))
        return real(values, offsets, *args, **kwargs)

    monkeypatch.setattr(torch.nested, "nested_tensor_from_jagged", spy)
    monkeypatch.setattr(
        varlen, "candidate_kernels", lambda device, dtype, causal=False: [("nested", varlen.nested_sdpa)]
    )
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    engine = packed_engine(model)
    ids = model.transformer.token_ids(SENTENCES)[0]
    embed_rows(engine, ids, model.embedding_dimension, batch_tokens=120)
    assert seen and all(low == shortest and high is not None for low, high, shortest in seen)


def test_a_rejected_kernel_is_logged_with_its_reason(monkeypatch, caplog):
    def broken(*args):
        raise RuntimeError("no kernel image for this device")

    def wrong(q, k, v, cu, max_len, min_len, scale, causal=False):
        return q * 0

    candidates = [("flash_attn", broken), ("torch", wrong), ("nested", varlen.nested_sdpa)]
    monkeypatch.setattr(varlen, "candidate_kernels", lambda device, dtype, causal=False: candidates)
    monkeypatch.setattr(varlen, "_LOGGED", set())
    with caplog.at_level(logging.INFO, logger="sbert.backends.varlen"):
        picked = varlen.pick_kernel(CPU, torch.float32, heads=2, head_dim=8)
    assert picked is not None and picked[0] == "nested"
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert any("flash_attn varlen rejected" in m and "no kernel image" in m for m in lines)
    assert any("torch varlen_attn rejected" in m and "max error" in m for m in lines)


def test_server_groups_follow_the_device_not_packing():
    from sbert import SentenceEncoder

    engine = SimpleNamespace(packed=False, default_batch_tokens=40960)  # MPNet's padded engine on a GPU
    on_gpu = SimpleNamespace(device=torch.device("cuda", 0), backend=lambda name, precision: engine)
    on_cpu = SimpleNamespace(device=CPU, backend=lambda name, precision: engine)
    assert group_budget(SentenceEncoder.gpu_batch_tokens(on_gpu)) == 40960  # type: ignore[arg-type]
    assert group_budget(SentenceEncoder.gpu_batch_tokens(on_cpu)) == CPU_GROUP_TOKENS  # type: ignore[arg-type]


NEIGHBOUR_TEXTS = [f"sentence {i} " * (1 + i % 20) for i in range(300)]


def pairs_attend_together(q, k, v, cu, max_len, min_len, scale, causal=False):
    """A broken kernel for the check below: sentences 2j and 2j+1 attend to each other's tokens."""
    merged = torch.cat([cu[::2], cu[-1:]]).unique()
    lengths = merged[1:] - merged[:-1]
    return varlen.nested_sdpa(q, k, v, merged.to(cu.dtype), int(lengths.max()), int(lengths.min()), scale)


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_a_packed_bf16_row_ignores_its_neighbours_within_the_measured_noise_floor():
    # The cuda test's yardstick, on the CPU: the bound is 2x rounding noise measured in this run,
    # and a kernel that lets neighbours leak into each other lands far outside it.
    model = SentenceEncoder.load("all-MiniLM-L6-v2", device="cpu")
    ids = model.transformer.token_ids(NEIGHBOUR_TEXTS)[0]
    floor = half_noise_floor(model, ids, CPU, torch.bfloat16, 20)
    engine = CudaBackend(model.as_chain(), CPU, torch.bfloat16)
    assert 0 < floor < 0.02
    assert neighbour_gap(engine, ids, model.embedding_dimension, 20) <= 2 * floor
    leaky = engine.modules[0]
    leaky.auto_model.set_attn_implementation(varlen.register("test_leak", pairs_attend_together))
    assert neighbour_gap(engine, ids, model.embedding_dimension, 20) > 10 * floor


def test_a_prompt_left_out_of_pooling_is_left_out_by_the_packed_engine_too(tiny_dirs):
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    model[1].include_prompt = False
    model.settings.prompts = {"query": "query: "}
    engine = packed_engine(model)
    assert engine.packed  # varlen attention on the CPU: the packed path, not the padded fallback
    plan = model.prompt_plan(task="query")
    ids = model.transformer.token_ids(plan.apply(SENTENCES))[0]
    got = embed_rows(engine, ids, model.embedding_dimension, batch_tokens=400, skip=plan.skip)
    assert plan.skip > 1 and np.abs(got - model.encode_query(SENTENCES, on_truncation="ignore")).max() <= 1e-5
    assert np.abs(got - embed_rows(engine, ids, model.embedding_dimension, batch_tokens=400)).max() > 1e-3


@pytest.mark.parametrize("causal", [True, False])
def test_grid_kernel_equals_per_sentence_attention(causal):
    gen = torch.Generator().manual_seed(1)
    lengths = [6, 1, 11, 3]
    cu = torch.tensor([0, *np.cumsum(lengths).tolist()], dtype=torch.int32)
    q, k, v = (torch.randn(sum(lengths), 2, 8, generator=gen) for _ in range(3))
    want = varlen.reference_attention(q, k, v, cu, max(lengths), min(lengths), None, causal)
    got = varlen.grid_sdpa(q, k, v, cu, max(lengths), min(lengths), None, causal)
    assert torch.allclose(got, want, atol=1e-6)
    if causal:  # the first token of each sequence sees only itself: its own value row
        assert torch.allclose(got[cu[:-1].long()], v[cu[:-1].long()], atol=1e-6)


@pytest.mark.parametrize(("family", "pooling"), [("qwen2", "lasttoken"), ("qwen2", "mean"), ("qwen3", "lasttoken"),
                                                 ("mistral", "lasttoken"), ("llama", "lasttoken"), ("gemma3", "mean"),
                                                 ("gemma3-causal", "lasttoken")])  # fmt: skip
def test_a_packed_decoder_equals_its_padded_batches(family, pooling, tmp_path):
    """Causal decoders (left padding, EOS last) and a bidirectional Gemma3 pack without padding, equal to padded."""
    from tests.tiny_models import build_decoder, build_gemma3

    gemma = family.startswith("gemma3")
    folder = build_gemma3(tmp_path / "m", family == "gemma3") if gemma else build_decoder(tmp_path / "m", family)
    model = SentenceEncoder.from_transformer(folder, pooling=pooling, device="cpu")
    expected = model.encode(SENTENCES, on_truncation="ignore", batch_size=1)
    engine = packed_engine(model)
    assert engine.packed
    got = embed_rows(engine, model.transformer.token_ids(SENTENCES)[0], model.embedding_dimension, batch_tokens=64)
    assert np.abs(got - expected).max() <= 1e-5
    batched = model.encode(SENTENCES, on_truncation="ignore")  # padded batches of mixed lengths agree too
    assert np.abs(batched - expected).max() <= 1e-5


def test_a_sliding_window_shorter_than_the_inputs_keeps_padded_batches(tmp_path, caplog):
    from tests.tiny_models import build_gemma3

    model = SentenceEncoder.from_transformer(build_gemma3(tmp_path / "m", window=16), device="cpu")
    with caplog.at_level(logging.INFO, logger="sbert.backends"):
        engine = packed_engine(model)
    assert not engine.packed
    assert any("sliding-window attention" in r.getMessage() for r in caplog.records)
    got = embed_rows(engine, model.transformer.token_ids(SENTENCES)[0], model.embedding_dimension)
    assert np.abs(got - model.encode(SENTENCES, on_truncation="ignore", batch_size=1)).max() <= 1e-5
