"""Device and precision choice (one module for encode and training), multi-device encode, CUDA-only checks."""

import numpy as np
import pytest
import torch

from sbert import SentenceEncoder, device
from sbert.device import autocast, autocast_dtype, cpu_flags, encode_dtype, resolve_device
from sbert.errors import DeviceError
from tests.noise_floor import half_noise_floor, neighbour_gap
from tests.tiny_models import CORPUS


def varlen_has_flash_attn() -> bool:
    try:
        import flash_attn  # noqa: F401
    except ImportError:
        return False
    return True


CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU (none visible to torch here)")


def test_device_names_are_checked():
    assert resolve_device("cpu") == torch.device("cpu")
    with pytest.raises(DeviceError, match="unknown device 'gpu0'"):
        resolve_device("gpu0")
    if not CUDA:
        with pytest.raises(DeviceError, match="no CUDA GPU"):
            resolve_device("cuda")
    else:
        with pytest.raises(DeviceError, match="does not exist"):
            resolve_device(f"cuda:{torch.cuda.device_count()}")


def test_precision_names_and_defaults(emulated_cpu_bf16, monkeypatch):
    monkeypatch.setenv("SBERT_CPU_FP16", "emulate")
    cpu = torch.device("cpu")
    assert encode_dtype("auto", cpu) == torch.float32  # CPU output stays fp32 by default
    assert encode_dtype("bf16", cpu) == torch.bfloat16
    assert autocast_dtype("auto", cpu) is None and autocast_dtype("fp16", cpu) == torch.float16
    with pytest.raises(DeviceError, match="unknown precision 'fp8'"):
        encode_dtype("fp8", cpu)


def test_encode_refuses_bad_device_and_precision(tiny_dirs):
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    with pytest.raises(DeviceError, match="unknown precision"):
        model.encode(CORPUS, precision="half")
    with pytest.raises(DeviceError, match="unknown device"):
        model.encode(CORPUS, device="tpu:9")
    with pytest.raises(DeviceError, match="unknown device"):
        model.encode(CORPUS, devices=["cpu", "nonsense"])


@pytest.mark.parametrize("half", ["bf16", "fp16"])
def test_half_precision_on_cpu_is_close_to_fp32(tiny_dirs, monkeypatch, half):
    monkeypatch.setenv(f"SBERT_CPU_{half.upper()}", "emulate")  # the numerics, whatever this CPU has
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    fp32 = model.encode(CORPUS)
    got = model.encode(CORPUS, precision=half)
    cosine = (fp32 * got).sum(1) / np.linalg.norm(fp32, axis=1) / np.linalg.norm(got, axis=1)
    assert got.dtype == np.float32 and cosine.min() >= 0.999
    assert np.array_equal(model.encode(CORPUS), fp32)  # the fp32 weights were left alone


def test_cpu_bf16_flags_are_read_from_cpuinfo():
    assert cpu_flags("flags\t: fpu avx512f avx512_vnni avx512_bf16 amx_bf16\n", "x86_64", "bf16") == [
        "avx512_bf16",
        "amx_bf16",
    ]
    assert cpu_flags("flags\t: fpu avx512f avx512_vnni\n", "x86_64", "bf16") == []
    assert cpu_flags("Features\t: fp asimd bf16 i8mm\n", "aarch64", "bf16") == ["bf16"]
    assert cpu_flags("Features\t: fp asimd\n", "aarch64", "bf16") == []


def test_cpu_fp16_flags_are_read_from_cpuinfo():
    sapphire_rapids = "flags\t: fpu avx512f avx512_bf16 avx512_fp16 amx_bf16 amx_tile\n"
    assert cpu_flags(sapphire_rapids, "x86_64", "fp16") == ["avx512_fp16"]
    assert cpu_flags(sapphire_rapids, "x86_64", "bf16") == ["avx512_bf16", "amx_bf16"]
    assert cpu_flags("flags\t: fpu avx512f avx512_vnni\n", "x86_64", "fp16") == []
    assert cpu_flags("Features\t: fp asimd fphp asimdhp\n", "aarch64", "fp16") == ["asimdhp", "fphp"]
    assert cpu_flags("Features\t: fp asimd bf16\n", "aarch64", "fp16") == []


def test_cpu_int8_flags_are_read_from_cpuinfo():
    assert cpu_flags("flags\t: fpu avx2 avx512f avx512_vnni\n", "x86_64", "int8") == ["avx512_vnni", "avx2"]
    assert cpu_flags("flags\t: fpu sse4_2 avx\n", "x86_64", "int8") == []  # no AVX2: no fast int8 path
    assert cpu_flags("Features\t: fp asimd asimddp i8mm\n", "aarch64", "int8") == ["asimddp", "i8mm"]
    assert cpu_flags("Features\t: fp asimd crc32\n", "aarch64", "int8") == []
    assert cpu_flags("flags: FPU SSE4.2 AVX2 AVX512F AVX512VNNI", "x86_64", "int8") == ["avx512_vnni", "avx2"]  # macOS


def test_int8_on_a_cpu_without_the_instructions_is_refused_before_any_export(tiny_dirs, tmp_path, monkeypatch):
    monkeypatch.delenv("SBERT_CPU_INT8", raising=False)
    monkeypatch.setattr(device, "cpu_int8_native", lambda: False)
    SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu").save(tmp_path / "m")
    model = SentenceEncoder.load(tmp_path / "m", device="cpu")
    refusal = r"backend 'onnx-int8': this CPU has none of the int8 instructions .*\(avx512_vnni.*use backend='onnx'"
    with pytest.raises(DeviceError, match=refusal):
        model.encode(CORPUS, backend="onnx-int8")
    with pytest.raises(DeviceError, match="use backend='openvino'"):
        model.encode(CORPUS, backend="openvino-int8")
    assert not (tmp_path / "m" / "onnx").exists()  # refused before anything was exported
    model.encode(CORPUS, backend="onnx")  # fp32 graphs need nothing special
    monkeypatch.setenv("SBERT_CPU_INT8", "force")
    assert model.encode(CORPUS, backend="onnx-int8").shape == (len(CORPUS), model.embedding_dimension)


# Emulated, bf16 ran 4.1x and fp16 9.5x slower than fp32 here (cpu_peers.py --emulated-bf16/-fp16): refused.
@pytest.mark.parametrize(
    ("half", "dtype", "flags"),
    [("bf16", torch.bfloat16, "avx512_bf16, amx_bf16"), ("fp16", torch.float16, "avx512_fp16, amx_fp16")],
)
def test_half_precision_on_a_cpu_without_the_instructions_is_one_line_naming_them(
    tiny_dirs, monkeypatch, half, dtype, flags
):
    monkeypatch.delenv(f"SBERT_CPU_{half.upper()}", raising=False)
    native = f"cpu_{half}_native"
    monkeypatch.setattr(device, native, lambda: False)  # a CPU without them
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    refusal = rf"no {half} instructions \({flags} or Arm {half}\).*fp32.*onnx-int8"
    with pytest.raises(DeviceError, match=refusal):
        model.encode(CORPUS, precision=half)
    with pytest.raises(DeviceError, match=f"no {half} instructions"):
        autocast_dtype(half, torch.device("cpu"))  # training refuses it the same way
    assert encode_dtype("auto", torch.device("cpu")) == torch.float32  # the default never needs it
    monkeypatch.setattr(device, native, lambda: True)  # a CPU that has them
    assert encode_dtype(half, torch.device("cpu")) == dtype


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_workers_run_the_model_as_it_is_in_memory(tiny_dirs, tmp_path):
    """Two CPU workers give one output in input order, from the model as it is in memory: settings changed after
    loading hold there too (the workers used to reload the folder)."""
    from sbert.modules.pooling import Pooling

    SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu").save(tmp_path / "m")
    model = SentenceEncoder.load(tmp_path / "m", device="cpu")  # weights as loaded: the folder was reused
    pooling = next(m for m in model.chain() if isinstance(m, Pooling))
    texts = [f"{s} number {i}" for i, s in enumerate(CORPUS * 3)]
    with_prompt = model.encode(texts, prompt="search query: ")
    pooling.include_prompt = False
    model.max_seq_length = 12
    expected = model.encode(texts, prompt="search query: ", on_truncation="ignore")
    assert np.abs(expected - with_prompt).max() > 1e-2  # the change moves the vectors
    got = model.encode(texts, prompt="search query: ", on_truncation="ignore", devices=["cpu", "cpu"])
    assert np.abs(got - expected).max() <= 1e-5


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_cli_encode_with_precision_and_devices(tiny_dirs, tmp_path):
    SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu").save(tmp_path / "m")
    (tmp_path / "in.txt").write_text("\n".join(CORPUS) + "\n", encoding="utf-8")
    from tests.cli_runner import run_cli

    base = ["encode", "--model", str(tmp_path / "m"), "--input", str(tmp_path / "in.txt")]
    run = run_cli(*base, "--output", str(tmp_path / "a.npy"), "--devices", "cpu,cpu")
    assert run.returncode == 0, run.stderr
    model = SentenceEncoder.load(tmp_path / "m", device="cpu")
    assert np.abs(np.load(tmp_path / "a.npy") - model.encode(CORPUS)).max() <= 1e-5
    run = run_cli(*base, "--output", str(tmp_path / "h.npy"), "--devices", "cpu,cpu", "--dtype", "bf16")
    assert run.returncode == 0, run.stderr  # each worker holds the weights in bf16, as --dtype says
    held = SentenceEncoder.load(tmp_path / "m", device="cpu", dtype="bf16").encode(CORPUS)
    assert np.abs(np.load(tmp_path / "h.npy") - held).max() <= 1e-5 < np.abs(held - model.encode(CORPUS)).max()
    bad = run_cli(*base, "--output", str(tmp_path / "b.npy"), "--device", "cuda:7")
    assert bad.returncode == 2 and not (tmp_path / "b.npy").exists()
    assert len(bad.stderr.strip().splitlines()) == 1


@pytest.mark.cuda
@needs_cuda
def test_cuda_fp32_matches_cpu_and_bf16_stays_close(real_model_dir):
    cpu = SentenceEncoder.load(real_model_dir, device="cpu")
    gpu = SentenceEncoder.load(real_model_dir, device="cuda")
    texts = [*CORPUS, "a", "the cat sat on the mat " * 30]
    expected = cpu.encode(texts, on_truncation="ignore")
    fp32 = gpu.encode(texts, precision="fp32", on_truncation="ignore")
    assert np.abs(fp32 - expected).max() <= 1e-5
    bf16 = gpu.encode(texts, on_truncation="ignore")  # auto: bf16 on a GPU that has it
    cosine = (bf16 * fp32).sum(1) / np.linalg.norm(bf16, axis=1) / np.linalg.norm(fp32, axis=1)
    assert cosine.min() >= 0.999
    engine = gpu.backend("torch", "auto")
    # the nested-tensor fallback is packed too: name the flash kernel this GPU must run
    assert engine.packed and engine.kernel == ("flash_attn" if varlen_has_flash_attn() else "torch")


@pytest.mark.cuda
@needs_cuda
def test_cuda_packed_row_does_not_depend_on_neighbours(real_model_dir):
    model = SentenceEncoder.load(real_model_dir, device="cuda")
    ids = model.transformer.token_ids([f"sentence {i} " * (1 + i % 20) for i in range(300)])[0]
    dim = model.embedding_dimension
    assert neighbour_gap(model.backend("torch", "fp32"), ids, dim, 20) <= 1e-5
    # bf16: within twice the rounding noise measured in this run (bf16 vs fp32 alone already
    # differs by 2.6e-3 for this model, more than the old constant 2e-3)
    floor = half_noise_floor(model, ids, model.device, torch.bfloat16, 20)
    assert neighbour_gap(model.backend("torch", "bf16"), ids, dim, 20) <= 2 * floor, floor


@pytest.mark.cuda
@needs_cuda
def test_two_workers_on_one_gpu(real_model_dir):
    model = SentenceEncoder.load(real_model_dir, device="cuda")
    texts = [f"text {i} about {w}" for i, w in enumerate(["cats", "rain", "music"] * 200)]
    got = model.encode(texts, devices=["cuda:0", "cuda:0"], precision="fp32")
    assert np.abs(got - model.encode(texts, precision="fp32")).max() <= 1e-5


@pytest.mark.cuda
@needs_cuda
def test_cuda_packed_decoder_is_causal_and_matches_cpu(tmp_path):
    """A tiny Qwen2 (causal, left padding, EOS last) on the GPU's packed engine: fp32 equal to the CPU, bf16 close."""
    from tests.tiny_models import build_qwen2

    folder = build_qwen2(tmp_path / "q")
    texts = [*CORPUS, "a", "the cat sat on the mat " * 6]
    expected = SentenceEncoder.from_transformer(folder, pooling="lasttoken", device="cpu").encode(texts)
    gpu = SentenceEncoder.from_transformer(folder, pooling="lasttoken", device="cuda")
    assert np.abs(gpu.encode(texts, precision="fp32") - expected).max() <= 1e-4
    bf16 = gpu.encode(texts, precision="bf16")
    cosine = (bf16 * expected).sum(1) / np.linalg.norm(bf16, axis=1) / np.linalg.norm(expected, axis=1)
    assert cosine.min() >= 0.99
    assert gpu.backend("torch", "bf16").packed


def test_the_training_autocast_keeps_cudnn_attention_off_on_cuda_only_inside_it():
    # cuDNN's SDPA builds a graph per padded shape: bf16 training on an H200 spent 4x fp32's host CPU
    # a step in it. The flags are process-wide, so they must come back as they were.
    before = torch.backends.cuda.cudnn_sdp_enabled()
    with autocast(torch.bfloat16, torch.device("cuda")):
        assert not torch.backends.cuda.cudnn_sdp_enabled()
        assert torch.backends.cuda.flash_sdp_enabled() and torch.backends.cuda.mem_efficient_sdp_enabled()
    assert torch.backends.cuda.cudnn_sdp_enabled() == before
    with autocast(torch.bfloat16, torch.device("cpu")):
        assert torch.backends.cuda.cudnn_sdp_enabled() == before
    with autocast(None, torch.device("cuda")):
        assert torch.backends.cuda.cudnn_sdp_enabled() == before
