"""Device and precision choice, one place for encode and training alike.

Encode casts its weights once (`encode_dtype`); training keeps fp32 master weights and runs the
forward pass under autocast (`autocast_dtype`). Both read the same precision names and fail the
same way on a device or dtype this machine does not have.
"""

from __future__ import annotations

import contextlib
import functools
import os
import platform
import subprocess
import time
from collections.abc import Iterator

import torch

from sbert.errors import DeviceError
from sbert.names import PRECISIONS

_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
# /proc/cpuinfo words for the arithmetic a precision needs: x86 flags, Arm features, and the macOS
# sysctl that says the same on Apple silicon. bf16 / fp16: AVX512-BF16 / AVX512-FP16 vector
# instructions or AMX tiles; Arm "bf16", "asimdhp"/"fphp". int8: a byte dot product (VNNI, AMX,
# Arm dotprod/i8mm) or at least AVX2's multiply-add of bytes, the oldest x86 int8 GEMM kernels of
# ONNX Runtime and OpenVINO; below that they fall back to generic code (unmeasured here).
X86_BF16_FLAGS = ("avx512_bf16", "amx_bf16")
X86_FP16_FLAGS = ("avx512_fp16", "amx_fp16")
X86_INT8_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8", "avx2")
# int8 products that accumulate in 32 bits. Without them (AVX2 alone) the x86 kernels of fbgemm and ONNX
# Runtime add byte pairs in saturating 16-bit lanes (vpmaddubsw): full 8-bit activations times weights
# overflow there (torch-int8's Linear was 18% off on such a CPU), so 7-bit ranges are used instead.
X86_VNNI_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8")
_FEATURES = {
    "bf16": (X86_BF16_FLAGS, ("bf16",), "hw.optional.arm.FEAT_BF16"),
    "fp16": (X86_FP16_FLAGS, ("asimdhp", "fphp"), "hw.optional.arm.FEAT_FP16"),
    "int8": (X86_INT8_FLAGS, ("asimddp", "i8mm"), "hw.optional.arm.FEAT_DotProd"),
    "vnni": (X86_VNNI_FLAGS, ("asimddp", "i8mm"), "hw.optional.arm.FEAT_DotProd"),
}
# "emulate" lets bf16 / fp16 run on a CPU without those instructions (slowly: tests of the numerics);
# "none" hides the instructions of a CPU that has them, so the path a CPU without them takes can be
# run anywhere (CI reruns the bf16 tests so). SBERT_CPU_INT8=force lets the int8 backends run anyway.
CPU_BF16_ENV = "SBERT_CPU_BF16"
CPU_FP16_ENV = "SBERT_CPU_FP16"
CPU_INT8_ENV = "SBERT_CPU_INT8"
_EMULATE_ENV = {"bf16": CPU_BF16_ENV, "fp16": CPU_FP16_ENV}
# precision="auto" on a CPU with native bf16 picks bf16 for a model whose width's matrix products
# the probe measures at least this much faster in bf16 than in fp32 (else fp32: a cast that does not
# pay only costs accuracy). Measured on 2 AMD EPYC cores (Zen 5, avx512_bf16): 0.99x at width 32,
# 2.3x at 64, 5.4x at 384, 4.5x at 1024; an Intel Xeon with avx512_bf16 and no AMX ran a 0.6B decoder
# at 0.57x.
BF16_MIN_GAIN = 1.3
# auto moves only large models (hidden width 1024 and up: bge-large, e5-large, Qwen3-Embedding) to
# bf16: there the time is in the products and fp32 is slow (19 sentences/s for a 0.6B decoder on 2
# cores). Narrower models keep sentence-transformers' exact fp32 vectors by default (MiniLM runs 600
# sentences/s in fp32 anyway), and bf16's vectors move with what a text is batched with, by ~1e-3.
AUTO_BF16_MIN_WIDTH = 1024


def default_device(local_rank: bool = False) -> torch.device:
    """CUDA when present (cuda:LOCAL_RANK under torchrun when `local_rank`), else CPU."""
    if not torch.cuda.is_available():
        return torch.device("cpu")
    return torch.device("cuda", _cuda_index(local_rank))


def _cuda_index(local_rank: bool) -> int:
    # Under torchrun every rank must own its GPU: a bare "cuda" would put them all on the
    # current device, cuda:0, until something calls set_device.
    if local_rank and "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    return torch.cuda.current_device()


def resolve_device(spec: str | torch.device | None, local_rank: bool = False) -> torch.device:
    """Parse and check a device name ("cpu", "cuda", "cuda:1"); None picks the default.

    With `local_rank` (training), a bare "cuda" means cuda:LOCAL_RANK when torchrun set it.
    """
    if spec is None or spec == "":
        return default_device(local_rank)
    try:
        device = torch.device(spec)
    except (RuntimeError, TypeError):
        raise DeviceError(f"unknown device {spec!r}; use cpu, cuda or cuda:N") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise DeviceError(f"device {spec!r}: no CUDA GPU is visible to torch {torch.__version__}")
        if device.index is None:
            device = torch.device("cuda", _cuda_index(local_rank))
        count = torch.cuda.device_count()
        if device.index is not None and device.index >= count:
            raise DeviceError(f"device {spec!r} does not exist: {count} CUDA device(s), cuda:0..cuda:{count - 1}")
    return device


def check_precision(precision: str) -> str:
    """The precision name itself, or a one-line error (a ValueError) listing the known ones."""
    if precision not in PRECISIONS:
        raise DeviceError(f"unknown precision {precision!r}; use {', '.join(PRECISIONS)}")
    return precision


def cpu_flags(cpuinfo: str, machine: str, kind: str) -> list[str]:
    """The `kind` ("bf16", "fp16" or "int8") instruction sets named in a /proc/cpuinfo text (x86 flags or Arm)."""
    words: set[str] = set()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            # Compared without case or underscores: macOS on Intel spells avx512_vnni "AVX512VNNI".
            words.update(word.lower().replace("_", "") for word in value.split())
    x86, arm, _ = _FEATURES[kind]
    wanted = arm if machine.lower() in ("aarch64", "arm64") else x86
    return [flag for flag in wanted if flag.replace("_", "") in words]


@functools.cache
def _cpu_has(kind: str) -> bool:
    if platform.system() == "Darwin":  # macOS reports CPU features through sysctl, not /proc
        if platform.machine() == "arm64":
            probe = subprocess.run(["sysctl", "-n", _FEATURES[kind][2]], capture_output=True, text=True)
            return probe.stdout.strip() == "1"
        keys = ["machdep.cpu.features", "machdep.cpu.leaf7_features"]
        probe = subprocess.run(["sysctl", "-n", *keys], capture_output=True, text=True)
        return bool(cpu_flags("flags: " + probe.stdout.replace("\n", " "), "x86_64", kind))
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            return bool(cpu_flags(f.read(), platform.machine(), kind))
    except OSError:
        return False


def cpu_bf16_native() -> bool:
    """Whether this CPU has bf16 arithmetic (AVX512-BF16, AMX or Arm BF16); without it torch emulates bf16."""
    return not _hidden("bf16") and _cpu_has("bf16")


def cpu_fp16_native() -> bool:
    """Whether this CPU has fp16 arithmetic (AVX512-FP16, AMX-FP16 or Arm FP16); without it torch emulates fp16."""
    return not _hidden("fp16") and _cpu_has("fp16")


def _hidden(half: str) -> bool:
    """Whether SBERT_CPU_<HALF>=none hides the CPU's `half` instructions (a CPU without them, for tests)."""
    return os.environ.get(_EMULATE_ENV[half], "").lower() == "none"


def cpu_int8_native() -> bool:
    """Whether this CPU has int8 GEMM instructions (VNNI, AMX-INT8, AVX2, Arm dotprod / i8mm)."""
    return _cpu_has("int8")


def int8_reduce_range() -> bool:
    """Whether int8 kernels here need 7-bit ranges: an x86 CPU without VNNI / AMX (see X86_VNNI_FLAGS)."""
    return platform.machine().lower() in ("x86_64", "amd64", "i686") and not _cpu_has("vnni")


def check_cpu_int8(backend: str) -> None:
    """A one-line error for an int8 backend on a CPU without int8 instructions (SBERT_CPU_INT8=force skips it)."""
    if os.environ.get(CPU_INT8_ENV, "").lower() == "force" or cpu_int8_native():
        return
    raise DeviceError(
        f"backend {backend!r}: this CPU has none of the int8 instructions its kernels are built for "
        f"({', '.join(X86_INT8_FLAGS)} or Arm dotprod/i8mm); use backend={backend.removesuffix('-int8')!r} "
        f"(fp32), or {CPU_INT8_ENV}=force to run it anyway"
    )


def _cpu_half_allowed(half: str) -> bool:
    """Whether `half` ("bf16"/"fp16") may run on this CPU: its instructions, or SBERT_CPU_<HALF>=emulate."""
    native = cpu_bf16_native() if half == "bf16" else cpu_fp16_native()  # looked up here: tests patch them
    return os.environ.get(_EMULATE_ENV[half], "").lower() == "emulate" or native


def bf16_supported(device: torch.device) -> bool:
    """Whether bf16 runs natively on `device` (a CPU needs bf16 instructions, or SBERT_CPU_BF16=emulate)."""
    if device.type == "cuda":
        return bool(torch.cuda.is_bf16_supported(including_emulation=False))
    return _cpu_half_allowed("bf16")


def fp16_supported(device: torch.device) -> bool:
    """Whether fp16 runs natively on `device`: every GPU; a CPU needs fp16 instructions (or SBERT_CPU_FP16=emulate)."""
    return device.type != "cpu" or _cpu_half_allowed("fp16")


def half_dtype(device: torch.device) -> torch.dtype:
    """bf16 where the GPU has it (fp32's range, no loss scaling), fp16 otherwise."""
    return torch.bfloat16 if bf16_supported(device) else torch.float16


def encode_dtype(precision: str, device: torch.device, width: int | None = None) -> torch.dtype:
    """The dtype encode casts the weights to.

    auto: bf16/fp16 on CUDA; on a CPU, bf16 where it is native and `cpu_bf16_pays(width)` for the
    model's hidden width (None, or under AUTO_BF16_MIN_WIDTH: no probe, fp32), else fp32.
    """
    check_precision(precision)
    if precision == "auto":
        if device.type == "cuda":
            return half_dtype(device)
        wide = width is not None and width >= AUTO_BF16_MIN_WIDTH
        return torch.bfloat16 if wide and cpu_bf16_native() and cpu_bf16_pays(width) else torch.float32
    if precision == "bf16" and not bf16_supported(device):
        raise DeviceError(_no_bf16(device))
    if precision == "fp16" and not fp16_supported(device):
        raise DeviceError(_no_cpu_half("fp16"))
    return _DTYPES[precision]


def backend_dtype(backend: str, precision: str, device: torch.device, width: int | None = None) -> torch.dtype:
    """The dtype `backend` computes in, as encode and the shard settings record it.

    "auto" is fp32 for the graph backends (their own fp32 or int8 graphs) and `encode_dtype` for
    torch; a precision named explicitly is checked and kept by all.
    """
    if backend != "torch" and precision == "auto":
        return torch.float32
    return encode_dtype(precision, device, width)


@functools.cache
def cpu_bf16_pays(width: int) -> bool:
    """Whether one core multiplies (256 x width) by (width x 4 width) BF16_MIN_GAIN x faster in bf16 than fp32.

    Probed once per width and process (under 0.2 s): the same flags measured 5.4x faster on an AMD
    Zen 5 and 0.57x on an Intel Xeon, so the flags alone cannot decide.
    """
    previous = torch.get_num_threads()
    torch.set_num_threads(1)  # the CPU backends run one single-threaded batch per core
    try:
        fp32, bf16 = (_product_seconds(width, dtype) for dtype in (torch.float32, torch.bfloat16))
    finally:
        torch.set_num_threads(previous)
    return fp32 >= BF16_MIN_GAIN * bf16


def _product_seconds(width: int, dtype: torch.dtype) -> float:
    """Median seconds of one (256 x width) @ (width x 4 width) product, each sample about 2 ms long."""
    rows, weight = torch.randn(256, width, dtype=dtype), torch.randn(4 * width, width, dtype=dtype)
    repeats = max(1, 2_000_000 // (256 * width * 4 * width // 50))  # ~50 MFLOP/ms: one sample, ~2 ms in fp32
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(repeats):
            torch.nn.functional.linear(rows, weight)
        samples.append((time.perf_counter() - start) / repeats)
    return sorted(samples)[2]


def _no_bf16(device: torch.device) -> str:
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        return f"precision 'bf16': {device} ({name}) has no bf16 support; use fp16 or fp32"
    return _no_cpu_half("bf16")


def _no_cpu_half(half: str) -> str:
    # Emulated, bf16 ran 4.1x and fp16 9.5x slower than fp32 on a CPU without their instructions
    # (cpu_peers.py --emulated-bf16 / --emulated-fp16): refusing beats a silent slowdown.
    flags = ", ".join(_FEATURES[half][0])
    return (
        f"precision '{half}': this CPU has no {half} instructions ({flags} or Arm {half}); use precision='fp32', "
        f"or backend='onnx-int8' for speed ({_EMULATE_ENV[half]}=emulate forces emulated {half})"
    )


def autocast_dtype(precision: str, device: torch.device) -> torch.dtype | None:
    """The training forward's autocast dtype (None: plain fp32); auto is bf16/fp16 on CUDA only."""
    check_precision(precision)
    if precision == "fp32" or (precision == "auto" and device.type != "cuda"):
        return None
    return encode_dtype(precision, device)


@contextlib.contextmanager
def autocast(dtype: torch.dtype | None, device: torch.device) -> Iterator[None]:
    """Mixed-precision context for the training forward pass (a no-op in fp32), cuDNN attention off."""
    if dtype is None:
        yield
        return
    with torch.autocast(device_type=device.type, dtype=dtype), no_cudnn_attention(device.type):
        yield


def no_cudnn_attention(device_type: str) -> contextlib.AbstractContextManager[object]:
    """SDPA may pick flash, memory-efficient or math kernels on CUDA, but not cuDNN's.

    torch picks cuDNN's attention for half-precision padded batches on Hopper, and it builds a cuDNN
    graph for every new (batch, length) shape, which padded batches of varying length keep making:
    on an H200 a bf16 training step of MiniLM at batch 16 spent 174 ms of host CPU against fp32's 44
    (`benchmarks/gpu/gpu_profile.py`), so bf16 trained at 0.7x fp32's pairs/s.
    """
    if device_type != "cuda":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH])


def precision_name(dtype: torch.dtype) -> str:
    """fp32 / bf16 / fp16 for a dtype (for logs and benchmark tables)."""
    return next((name for name, d in _DTYPES.items() if d == dtype), str(dtype))
