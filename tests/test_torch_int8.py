"""backend="torch-int8" (int8 Linears in torch) and precision="auto"'s bf16 probe on the CPU."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import sbert.backends.torch_int8 as torch_int8
import sbert.device as device_mod
from sbert import SentenceEncoder
from sbert.backends.torch_int8 import Int8Linear, int8_modules
from sbert.device import backend_dtype, encode_dtype
from sbert.errors import BackendError
from sbert.modules import Normalize, Pooling, Transformer

TEXTS = ["A man is playing a guitar.", "Two dogs run in the snow.", "ok", "The report was late again this year."] * 5


@pytest.fixture(scope="module")
def decoder(tmp_path_factory):
    """A tiny Qwen3 embedder as Qwen3-Embedding ships: EOS appended, left padding, last token, Normalize."""
    from tests.tiny_models import build_decoder

    path = build_decoder(tmp_path_factory.mktemp("qwen3") / "raw", "qwen3")
    transformer = Transformer.from_pretrained(path)
    model = SentenceEncoder([transformer, Pooling(transformer.embedding_dimension, "lasttoken"), Normalize()], "cpu")
    return model


@pytest.mark.parametrize("per_row", [False, True])
@pytest.mark.parametrize("rows", [3, 40])  # torch._int_mm takes more than 16 rows: 3 rows are padded
def test_an_int8_linear_is_the_linear_within_quantization_error(per_row, rows):
    torch.manual_seed(0)
    linear = nn.Linear(64, 48)
    x = torch.randn(2, rows, 64)
    want = linear(x).detach()
    got = Int8Linear(linear, per_row)(x)
    assert got.shape == want.shape and got.dtype == torch.float32
    relative = float((got - want).norm() / want.norm())
    assert relative < 0.02
    # the error is a quantization error, not a wrong product: another layer's weights are far off
    assert float((Int8Linear(nn.Linear(64, 48), per_row)(x) - want).norm() / want.norm()) > 0.5


def test_the_int8_copy_shares_every_tensor_but_the_linear_weights(decoder):
    copied = int8_modules(tuple(decoder.chain()), per_row=False)
    embedding = decoder.transformer.auto_model.get_input_embeddings().weight
    assert copied[0].auto_model.get_input_embeddings().weight.data_ptr() == embedding.data_ptr()
    linears = [m for m in copied[0].modules() if isinstance(m, nn.Linear)]
    assert not linears and any(isinstance(m, Int8Linear) for m in copied[0].modules())
    assert any(isinstance(m, nn.Linear) for m in decoder.transformer.modules())  # the model keeps its fp32 layers


def test_a_decoder_encodes_in_int8_close_to_fp32(decoder):
    want = decoder.encode(TEXTS, precision="fp32")
    got = decoder.encode(TEXTS, backend="torch-int8")
    cosine = (got * want).sum(1)  # both unit length
    assert cosine.min() > 0.99
    assert not np.allclose(got, want, atol=1e-6)  # it did run in int8
    # one row alone gives the same vector as in its batch (per-tensor scales are per batch: close, not equal)
    alone = decoder.encode(TEXTS[:1], backend="torch-int8", batch_size=1)
    assert float((alone[0] * got[0]).sum()) > 0.99


def test_the_start_check_falls_back_to_per_row_scales_then_refuses(decoder, monkeypatch):
    assert decoder.backend("torch-int8").per_row is False  # per tensor passes on this model
    monkeypatch.setattr(torch_int8, "PER_TENSOR_MIN_COSINE", 1.01)  # per tensor can never pass now
    decoder.mark_weights_changed()
    assert decoder.backend("torch-int8").per_row is True
    monkeypatch.setattr(torch_int8, "INT8_MIN_COSINE", 1.01)
    decoder.mark_weights_changed()
    with pytest.raises(BackendError, match=r"^backend 'torch-int8': int8 cosine to fp32 torch .* use backend='torch'$"):
        decoder.backend("torch-int8")


def test_torch_int8_refuses_a_half_precision(decoder, emulated_cpu_bf16):
    with pytest.raises(BackendError, match="computes its products in int8"):
        decoder.encode(TEXTS, backend="torch-int8", precision="bf16")


def test_auto_picks_bf16_on_a_cpu_only_where_the_probe_pays(monkeypatch):
    cpu = torch.device("cpu")
    calls = []

    def pays(width):
        calls.append(width)
        return width >= 2048

    monkeypatch.setattr(device_mod, "cpu_bf16_pays", pays)
    monkeypatch.setattr(device_mod, "cpu_bf16_native", lambda: True)
    assert encode_dtype("auto", cpu, 2048) == torch.bfloat16
    assert encode_dtype("auto", cpu, 1024) == torch.float32  # native, but the probe says it does not pay
    assert encode_dtype("auto", cpu, 384) == torch.float32 and calls == [2048, 1024]  # narrow: exact fp32, no probe
    assert encode_dtype("auto", cpu) == torch.float32  # no width: no probe
    assert encode_dtype("fp32", cpu, 2048) == torch.float32  # asked for explicitly: kept
    assert backend_dtype("onnx", "auto", cpu, 2048) == torch.float32  # the graph backends run their own graphs
    monkeypatch.setattr(device_mod, "cpu_bf16_native", lambda: False)
    assert encode_dtype("auto", cpu, 2048) == torch.float32  # emulated bf16 never pays


def test_the_probe_times_single_threaded_and_gives_the_threads_back():
    threads = torch.get_num_threads()
    device_mod.cpu_bf16_pays.cache_clear()
    answer = device_mod.cpu_bf16_pays(256)
    assert isinstance(answer, bool) and torch.get_num_threads() == threads
    assert device_mod._product_seconds(256, torch.float32) > 0


@pytest.fixture(scope="module")
def saved_decoder(decoder, tmp_path_factory):
    path = tmp_path_factory.mktemp("saved") / "qwen3"
    decoder.save(path)
    return path


def test_a_model_loaded_in_int8_holds_no_float_linears_and_encodes_close_to_fp32(decoder, saved_decoder):
    from sbert.backends.torch_int8 import holds_int8

    held = SentenceEncoder.load(saved_decoder, device="cpu", dtype="int8")
    assert holds_int8(held) and not any(type(m) is nn.Linear for m in held.transformer.modules())
    assert held.compute_width is None  # auto never casts int8-held Linears to bf16
    want = decoder.encode(TEXTS, precision="fp32")
    got = held.encode(TEXTS)
    assert ((got * want).sum(1)).min() > 0.99
    np.testing.assert_allclose(held.encode(TEXTS, backend="torch-int8"), got, atol=1e-5)  # nothing left to quantize


def test_an_int8_held_model_refuses_to_save_and_to_train(saved_decoder, tmp_path):
    from sbert.errors import SbertError
    from sbert.training.config import TrainConfig
    from sbert.training.trainer import Trainer

    held = SentenceEncoder.load(saved_decoder, device="cpu", dtype="int8")
    with pytest.raises(SbertError, match=r"holds its weights in int8 .* cannot be saved"):
        held.save(tmp_path / "out")
    assert not (tmp_path / "out").exists()
    config = TrainConfig(model=str(saved_decoder), output=str(tmp_path / "trained"), stages=[])
    with pytest.raises(SbertError, match=r"int8 .* for inference only"):
        Trainer(config, model=held)


def test_int8_at_load_needs_the_cpu(saved_decoder):
    with pytest.raises(BackendError, match="not for meta"):
        SentenceEncoder.load(saved_decoder, device="meta", dtype="int8")


def test_released_file_pages_read_back_the_same_and_anonymous_memory_is_left_alone(tmp_path):
    from safetensors.torch import load_file, save_file

    from sbert.backends.pages import release

    save_file({"w": torch.randn(256, 1024)}, str(tmp_path / "w.safetensors"))
    mapped = load_file(str(tmp_path / "w.safetensors"))["w"]
    before = mapped.clone()
    if release(mapped) == 0:
        pytest.skip("safetensors copied the tensor here (no file mapping to release)")
    assert torch.equal(mapped, before)  # faulted in again from the file
    anonymous = torch.randn(256, 1024)
    kept = anonymous.clone()
    assert release(anonymous) == 0 and torch.equal(anonymous, kept)


def test_bf16_at_load_casts_tensor_by_tensor_to_what_the_loader_would_give(saved_decoder, emulated_cpu_bf16):
    from sbert.dense.loading import load_modules

    ours = SentenceEncoder.load(saved_decoder, device="cpu", dtype="bf16")
    theirs = SentenceEncoder(load_modules(saved_decoder, dtype="bf16"), device="cpu")  # transformers' own cast
    mine, other = ours.transformer.auto_model, theirs.transformer.auto_model
    assert {p.dtype for p in mine.parameters()} == {torch.bfloat16}
    for (name, a), (_, b) in zip(mine.state_dict().items(), other.state_dict().items(), strict=True):
        assert a.dtype == b.dtype and torch.equal(a, b), name
    np.testing.assert_array_equal(ours.encode(TEXTS, precision="bf16"), theirs.encode(TEXTS, precision="bf16"))


def test_the_cli_encodes_with_weights_held_in_int8(saved_decoder, tmp_path):
    from tests.cli_runner import run_cli

    (tmp_path / "in.txt").write_text("\n".join(TEXTS[:4]) + "\n")
    out = tmp_path / "v.npy"
    result = run_cli("encode", "-i", str(tmp_path / "in.txt"), "-o", str(out), "-m", str(saved_decoder),
                     "--device", "cpu", "--dtype", "int8")  # fmt: skip
    assert result.returncode == 0, result.stderr
    held = SentenceEncoder.load(saved_decoder, device="cpu", dtype="int8").encode(TEXTS[:4])
    np.testing.assert_allclose(np.load(out), held, atol=1e-6)
    bad = run_cli("encode", "-i", str(tmp_path / "in.txt"), "-o", str(out), "--dtype", "int4")
    assert bad.returncode == 2 and "--dtype" in bad.stderr


def test_a_real_server_holds_the_weights_as_dtype_says(saved_decoder):
    from tests.serve_helpers import serve_in_thread, served_vectors

    fp32 = SentenceEncoder.load(saved_decoder, device="cpu").encode(TEXTS[:4])
    for dtype in ("int8", "bf16"):
        held = SentenceEncoder.load(saved_decoder, device="cpu", dtype=dtype).encode(TEXTS[:4])
        server = serve_in_thread("--model", str(saved_decoder), "--dtype", dtype)
        try:
            got = served_vectors(server, TEXTS[:4], saved_decoder.name)
        finally:
            assert server.stop()
        assert np.abs(got - held).max() <= 1e-5 < np.abs(held - fp32).max(), dtype


def test_an_int8_held_model_refuses_the_graph_backends(saved_decoder):
    held = SentenceEncoder.load(saved_decoder, device="cpu", dtype="int8")
    with pytest.raises(BackendError, match=r"^backend 'onnx' exports the float model; .* use backend='torch'$"):
        held.encode(TEXTS, backend="onnx")


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_torch_and_torch_int8_encode_without_any_graph_runtime(saved_decoder):
    """A run-only install has no onnx: encode (auto's width check imports torch_int8) once crashed `sbert demo`."""
    import subprocess
    import sys

    code = ("import sys; from sbert import SentenceEncoder; "
            f"m = SentenceEncoder.load({str(saved_decoder)!r}, device='cpu'); m.encode(['a b c']); "
            "m.encode(['a b c'], backend='torch-int8'); "
            f"SentenceEncoder.load({str(saved_decoder)!r}, device='cpu', dtype='int8').encode(['a b c']); "
            "print([m for m in ('onnx', 'onnxruntime', 'openvino') if m in sys.modules])")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_weight_bytes_counts_the_prepacked_int8_weights(decoder):
    from sbert.backends.base import weight_bytes

    fp32 = tuple(decoder.chain())
    linears = [m for m in fp32[0].modules() if type(m) is nn.Linear]
    # each weight's 4 bytes become 1, plus one fp32 scale per output: the prepacked weights are counted, not lost
    saved = sum(3 * m.weight.numel() - 4 * m.out_features for m in linears)
    for per_row in (False, True):
        assert weight_bytes(fp32) - weight_bytes(int8_modules(fp32, per_row)) == saved


@pytest.mark.parametrize("backend", ["torch", "torch-int8"])
def test_a_large_model_trims_the_heap_after_every_cpu_batch(decoder, monkeypatch, backend):
    import sbert.backends.base as base
    import sbert.backends.torch_cpu as torch_cpu

    trims: list[int] = []
    monkeypatch.setattr(torch_cpu, "trim_heap", lambda: trims.append(1))
    decoder.encode(TEXTS, backend=backend, batch_size=4)  # the tiny model is small: no trims
    assert not trims
    monkeypatch.setattr(base, "LARGE_WEIGHTS_BYTES", 0)  # every model is large now
    decoder.drop_engines(lambda _slot: True)
    got = decoder.encode(TEXTS, backend=backend, batch_size=4)
    assert len(trims) == -(-len(TEXTS) // 4)  # one per batch
    np.testing.assert_allclose(got, decoder.encode(TEXTS, backend=backend, batch_size=4), atol=1e-6)


def test_trimming_the_heap_keeps_every_live_allocation():
    from sbert.backends.pages import trim_heap

    kept = [torch.full((1000 + i,), float(i)) for i in range(200)]
    del kept[::2]  # holes between live blocks: what the trim hands back
    trim_heap()
    assert all(bool((t == float(2 * i + 1)).all()) for i, t in enumerate(kept))


@pytest.mark.parametrize(("width", "tokens"), [(32, 512), (384, 512), (768, 256), (1024, 192), (8192, 64)])
def test_wider_models_get_fewer_tokens_per_cpu_batch(decoder, monkeypatch, width, tokens):
    from sbert.backends.torch_cpu import cpu_batch_tokens

    monkeypatch.setattr(decoder.transformer.auto_model.config, "hidden_size", width)
    assert cpu_batch_tokens(tuple(decoder.chain())) == tokens


@pytest.mark.parametrize("backend", ["torch", "torch-int8"])
def test_the_cpu_engines_batch_by_the_width_scaled_budget(decoder, monkeypatch, backend):
    import sbert.backends.torch_cpu as torch_cpu

    monkeypatch.setattr(torch_cpu, "CPU_BATCH_TOKENS", 100)  # the tiny model is narrower than 384: 100 tokens
    decoder.drop_engines(lambda _slot: True)
    engine = decoder.backend(backend)
    assert engine.default_batch_tokens == 100
    seen: list[int] = []
    embed = engine.embed

    def cost(rows):  # what the budget counts: real tokens when the engine packs, else rows x longest row
        return sum(map(len, rows)) if engine.packed else len(rows) * max(map(len, rows))

    monkeypatch.setattr(engine, "embed", lambda rows, skip=0: seen.append(cost(rows)) or embed(rows, skip))
    decoder.encode(TEXTS, backend=backend)
    assert seen and max(seen) <= 100 and len(seen) > 1
    decoder.drop_engines(lambda _slot: True)
