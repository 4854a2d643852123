"""A Qwen3-Embedding-0.6B-sized decoder on the CPU: every sbert engine against sentence-transformers and llama.cpp.

    python benchmarks/speed/decoder_speed.py [--sentences 2758] [--repeats 2] [--json FILE]
        [--llama-python PEER_VENV/bin/python] [--st-openvino-python PEER_VENV/bin/python] [--engines NAME,NAME]
    make bench-decoder BENCH_ARGS='--sentences 400 --repeats 1 --json out/decoder.json'

No decoder embedder can be downloaded here, so the model is random weights in Qwen3-Embedding-0.6B's
published shape (28 layers, hidden 1024, 16 query / 8 key-value heads of 128, FFN 3072, vocabulary
151,669, last-token pooling, left padding, EOS appended, Normalize). Its tokenizer is a byte-level
BPE trained here on the STSb train sentences (16k merges), so token counts are those of a real BPE
on English, not Qwen's own. Speed depends on the shapes, not on the weights' values.

Timed, on the same sentences, tokenization included, `--repeats` interleaved passes, medians:
sentence-transformers 6.2 `encode` (its default batch of 32); sbert torch fp32, torch bf16 (on a
CPU with native bf16), torch-int8, and openvino in fp32 and in bf16; and, with `--llama-python` (the peer venv
`make bench-decoder` builds), llama.cpp through llama-cpp-python on the same model written as GGUF
(f16, and q8_0 / q4_K_M by llama.cpp's own quantizer), last-token pooling, its batch of 256 tokens
(the fastest of 256 / 512 / 2048 measured here). llama.cpp's token ids are checked equal to the
Hugging Face tokenizer's before anything is timed. With `--st-openvino-python` (a second peer venv),
sentence-transformers' own OpenVINO backend (optimum-intel's export on load, OpenVINO's defaults;
the row records the inference precision OpenVINO chose). Peers: benchmarks/speed/decoder_peers.py.

Quality: each engine's cosine to sbert torch fp32's vectors on the timed sentences (mean, minimum);
sentence-transformers' and fp32's maximum absolute difference says the models are the same.
Peak memory: each engine encodes once in a fresh process and reports its resident high-water mark
(VmHWM: model load, export, quantization, tokenization, encode). `weights_gib` is the size of the
weights in the format the engine computes in. The int8 ceiling is torch's int8 product
(`torch._int_mm`, 2048^3) on all cores; torch-int8's share counts the Linear products of real tokens
only (padding not credited).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from decoder_peers import ST_OPENVINO, Peer, start_peers

from common import QWEN3_06B, alternate, cpu_facts, gemm_peak, median, sts_byte_bpe, sts_sentences


def build(folder: Path) -> Path:
    """Save the random-weight Qwen3 model in sentence-transformers' layout (built by sentence-transformers)."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3Model

    tok = sts_byte_bpe()
    eos = tok.token_to_id("<|endoftext|>")
    tok.post_processor = processors.TemplateProcessing(single="$A <|endoftext|>",
                                                       special_tokens=[("<|endoftext|>", eos)])  # fmt: skip
    wrapped = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<|endoftext|>",
                                      model_max_length=32_768, padding_side="left")  # fmt: skip
    torch.manual_seed(0)
    config = Qwen3Config(**QWEN3_06B, eos_token_id=eos, pad_token_id=eos)
    raw = folder / "raw"
    Qwen3Model(config).save_pretrained(raw)
    wrapped.save_pretrained(raw)
    first_module = Transformer(str(raw), max_seq_length=512)
    modules = [first_module, Pooling(1024, "lasttoken"), Normalize()]
    SentenceTransformer(modules=modules, device="cpu").save(str(folder / "model"))
    return folder / "model"


SBERT_ENGINES = {  # name: encode options, on the model loaded in fp32
    "sbert torch fp32": {"precision": "fp32"},
    "sbert torch bf16": {"precision": "bf16"},
    "sbert torch-int8": {"backend": "torch-int8"},
    "sbert openvino fp32": {"backend": "openvino"},
    "sbert openvino bf16": {"backend": "openvino", "precision": "bf16"},  # what OpenVINO picks itself on this CPU
}
HELD_ENGINES = {  # name: (load dtype, encode options): the weights held in the format they run in
    "sbert bf16 (dtype=bf16)": ("bf16", {"precision": "bf16"}),
    "sbert int8 (dtype=int8)": ("int8", {}),
}
REFERENCE = "sbert torch fp32"
FORMATS = ("8.2f", "6.2f", "9.5f", "9.5f", "9.2f", "8.2f")  # the table's cells after the engine name


def engines(path: Path, names: set[str] | None = None) -> dict[str, object]:
    """sentence-transformers' and sbert's encode(texts) callables by name (`names`: those alone), models loaded once."""
    runs: dict[str, object] = {}
    if names is None or "sentence-transformers fp32" in names:
        from sentence_transformers import SentenceTransformer

        st = SentenceTransformer(str(path), device="cpu")
        runs["sentence-transformers fp32"] = lambda t: st.encode(t, show_progress_bar=False)
    wanted = [name for name in SBERT_ENGINES if names is None or name in names]
    if wanted:
        ours = _load_sbert(path)
        for name in wanted:
            if "bf16" not in name or _bf16_native():
                runs[name] = lambda t, o=SBERT_ENGINES[name]: ours.encode(t, show_progress=False, **o)
    for name, (dtype, options) in HELD_ENGINES.items():
        if (names is None or name in names) and (dtype != "bf16" or _bf16_native()):
            held = _load_sbert(path, dtype)
            runs[name] = lambda t, m=held, o=options: m.encode(t, show_progress=False, **o)
    return runs


def _load_sbert(path: Path, dtype: str | None = None) -> Any:
    from sbert import SentenceEncoder

    return SentenceEncoder.load(path, device="cpu", dtype=dtype)


def _bf16_native() -> bool:
    from sbert.device import cpu_bf16_native

    return cpu_bf16_native()


def peak_rss(path: Path, name: str, count: int) -> float:
    """GiB: the resident high-water mark of a fresh process that loads engine `name` and encodes once."""
    args = [sys.executable, str(Path(__file__).resolve()), "--peak", str(path), name, str(count)]
    out = subprocess.run(args, capture_output=True, text=True, check=True, cwd=Path(__file__).parent)
    return float(out.stdout.strip().splitlines()[-1])


def _peak_child(path: Path, name: str, count: int) -> None:
    texts = sts_sentences("test")[:count]
    for run in engines(path, {name}).values():
        run(texts)  # type: ignore[operator]
    # VmHWM belongs to this process image; ru_maxrss would carry the parent's peak across exec.
    status = Path("/proc/self/status").read_text().splitlines()
    print(next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 2**20)


def weights_gib(hf_dir: Path) -> dict[str, float]:
    """GiB of the weights each sbert / sentence-transformers format holds: fp32, bf16, and int8 Linears."""
    from safetensors import safe_open

    total = linear = 0
    with safe_open(str(hf_dir / "model.safetensors"), framework="pt") as f:
        for key in f.keys():  # noqa: SIM118 (safe_open is not a mapping)
            shape = f.get_slice(key).get_shape()
            count = int(np.prod(shape))
            total += count
            linear += count if key.startswith("layers.") and len(shape) == 2 else 0
    sizes = {"fp32": total * 4, "bf16": total * 2, "int8": linear + (total - linear) * 4, "linear_params": linear}
    return {k: v / 2**30 if k != "linear_params" else v for k, v in sizes.items()}


def _weights_for(name: str, sizes: dict[str, float], gguf: dict[str, Path]) -> float:
    if name in gguf:
        return gguf[name].stat().st_size / 2**30
    return sizes["bf16" if "bf16" in name else "int8" if "int8" in name else "fp32"]  # int8: Linears only


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=2758)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--llama-python", help="the peer venv's python with llama-cpp-python, gguf and safetensors")
    parser.add_argument("--st-openvino-python", help="the peer venv's python with sentence-transformers[openvino]")
    parser.add_argument("--engines", help="comma-separated engine names to run (default: all)")
    parser.add_argument("--peak", nargs=3, help=argparse.SUPPRESS)
    return parser.parse_args()


def main() -> None:
    """Build, convert, warm, time, compare and print the table (and the JSON records)."""
    args = _parse()
    for peer in ("llama_python", "st_openvino_python"):  # absolute, not resolved: a venv's python must stay the venv's
        if getattr(args, peer):
            setattr(args, peer, os.path.abspath(getattr(args, peer)))
    if args.peak:
        _peak_child(Path(args.peak[0]), args.peak[1], int(args.peak[2]))
        return
    texts = sts_sentences("test")[: args.sentences]
    with tempfile.TemporaryDirectory() as tmp:
        path = build(Path(tmp))
        texts_file = Path(tmp) / "texts.json"
        texts_file.write_text(json.dumps(texts))
        keep = {name.strip() for name in args.engines.split(",")} | {REFERENCE} if args.engines else None
        runs = engines(path, keep)  # only the models of the engines asked for are loaded
        peers, gguf = start_peers(args, path, Path(tmp) / "raw", Path(tmp), texts_file, keep)
        runs.update(peers)
        tokens = _token_rows(path, texts)
        for name in gguf:
            ids = peers[name].read("tokens")
            same = sum(a == list(b) for a, b in zip(ids, tokens, strict=True))  # type: ignore[call-overload]
            print(f"{name}: token ids equal to the Hugging Face tokenizer's for {same} of {len(texts)} sentences")
        facts = {name: peer.read("facts") for name, peer in peers.items() if name == ST_OPENVINO}
        for run in runs.values():  # warm-up: first calls, graph exports, compiles
            run.warm() if isinstance(run, Peer) else run(texts[:32])  # type: ignore[operator]
        outputs: dict[str, np.ndarray] = {}

        def timed(name: str, run: object) -> Callable[[], object]:
            return lambda: outputs.__setitem__(name, np.asarray(run(texts)))  # type: ignore[operator]

        seconds = alternate({name: timed(name, run) for name, run in runs.items()}, args.repeats)
        for name, peer in peers.items():
            seconds[name] = peer.seconds[-args.repeats :]  # its own embed time, without the pipe
            peer.close()
        sizes = weights_gib(Path(tmp) / "raw")
        rows = [_record(name, texts, seconds[name], outputs, sizes, gguf) for name in runs]
        runs.clear()  # the models go before the fresh processes measure their peaks (the main one held 17 GB)
        gc.collect()
        for row in rows:
            name = str(row["engine"])
            row.update(facts.get(name, {}))  # type: ignore[call-overload]
            if row.get("INFERENCE_PRECISION_HINT") == "bf16":  # OpenVINO's own pick: it computes on bf16 weights
                row["weights_gib"] = round(sizes["bf16"], 3)
            peak = peers[name].peak_gib() if name in peers else peak_rss(path, name, len(texts))
            row["peak_gib"] = round(peak, 2)
    _summary(rows, texts, tokens, sizes, args.json)


def _record(name: str, texts: list[str], seconds: list[float], outputs: dict[str, np.ndarray],
            sizes: dict[str, float], gguf: dict[str, Path]) -> dict[str, object]:  # fmt: skip
    cosine = (outputs[name] * outputs[REFERENCE]).sum(1)  # every engine's vectors are unit length
    return {
        "engine": name, "sentences_per_s": round(len(texts) / median(seconds), 2),
        "median_s": round(median(seconds), 3), "mean_cos_to_fp32": round(float(cosine.mean()), 6),
        "min_cos_to_fp32": round(float(cosine.min()), 6),
        "max_abs_diff_to_fp32": float(np.abs(outputs[name] - outputs[REFERENCE]).max()),
        "peak_gib": None,  # measured once every model of this process is gone
        "weights_gib": round(_weights_for(name, sizes, gguf), 3),
    }  # fmt: skip


def int8_gemm_share(hidden: int = 1024, q_width: int = 2048, kv_width: int = 1024, ffn: int = 3072) -> dict[str, float]:
    """One core: torch-int8's Linear (quantize, int8 product, dequantize) on a layer's shapes at 512 tokens.

    Against the machine's int8 ceiling on one core: the faster of torch._int_mm and fbgemm's packed
    product on 2048^3. GOPS count 2 x tokens x weights.
    """
    import time

    from torch import nn

    from sbert.backends.torch_int8 import Int8Linear

    def rate(run: Callable[[], object], ops: float) -> float:
        run()
        samples = []
        for _ in range(5):
            start = time.perf_counter()
            run()
            samples.append(time.perf_counter() - start)
        return ops / median(samples) / 1e9

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the CPU backends run one single-threaded batch per core
    try:
        shapes = [(hidden, q_width), (hidden, kv_width), (hidden, kv_width), (q_width, hidden), (hidden, ffn),
                  (hidden, ffn), (ffn, hidden)]  # fmt: skip
        layers = [Int8Linear(nn.Linear(k, n, bias=False)) for k, n in shapes]
        inputs = [torch.randn(512, k) for k, _ in shapes]
        ops = sum(2 * 512 * k * n for k, n in shapes)
        ours = rate(lambda: [layer(x) for layer, x in zip(layers, inputs, strict=True)], ops)
        square = Int8Linear(nn.Linear(2048, 2048, bias=False))
        x, a, b = torch.randn(2048, 2048), *(torch.randint(-128, 127, (2048, 2048), dtype=torch.int8) for _ in "ab")
        ceiling = max(rate(lambda: square(x), 2 * 2048**3), rate(lambda: torch._int_mm(a, b), 2 * 2048**3))
    finally:
        torch.set_num_threads(threads)
    return {"int8_linear_gops_per_core": round(ours, 1), "int8_ceiling_gops_per_core": round(ceiling, 1),
            "int8_linear_share": round(ours / ceiling, 3)}  # fmt: skip


def _summary(rows: list[dict[str, object]], texts: list[str], tokens: list[list[int]], sizes: dict[str, float],
             json_path: Path | None) -> None:  # fmt: skip
    facts = cpu_facts()
    base = {str(r["engine"]): float(r["sentences_per_s"]) for r in rows}  # type: ignore[arg-type]
    st = base.get("sentence-transformers fp32")
    ceiling = gemm_peak("int8")  # torch's int8 product on all of torch's threads
    kernel = int8_gemm_share()
    for row in rows:
        row.update(facts)
        row["x_sentence_transformers"] = round(base[str(row["engine"])] / st, 2) if st else None
        if row["engine"] == "sbert torch-int8":  # Linear products of the real tokens only
            gops = 2 * sizes["linear_params"] * sum(map(len, tokens)) / float(row["median_s"]) / 1e9  # type: ignore[arg-type]
            row.update(int8_gops=round(gops, 1), int8_ceiling_gops=round(ceiling, 1),
                       int8_share=round(gops / ceiling, 3), **kernel)  # fmt: skip
    print(f"{facts['cpu']}, {facts['cores']} cores; torch threads {torch.get_num_threads()}; "
          f"{len(texts)} STSb test sentences, mean {np.mean([len(t) for t in tokens]):.1f} tokens")  # fmt: skip
    print(f"{'engine':31} {'sent/s':>8} {'x ST':>6} {'mean cos':>9} {'min cos':>9} {'peak GiB':>9} {'weights':>8}")
    for r in rows:
        cells = (r["sentences_per_s"], r["x_sentence_transformers"] or 0, r["mean_cos_to_fp32"], r["min_cos_to_fp32"],
                 r["peak_gib"], r["weights_gib"])  # fmt: skip
        print(f"{r['engine']:31} " + " ".join(f"{c:{w}}" for c, w in zip(cells, FORMATS, strict=True)))
    for r in rows:
        if "int8_gops" in r:
            print(f"torch-int8 Linear products in the encode: {r['int8_gops']} GOPS of a {r['int8_ceiling_gops']} GOPS "
                  f"int8 ceiling ({100 * float(r['int8_share']):.0f}%)")  # type: ignore[arg-type]  # fmt: skip
    print(
        f"one core, a layer's Linears at 512 tokens: {kernel['int8_linear_gops_per_core']} GOPS of "
        f"{kernel['int8_ceiling_gops_per_core']} ({100 * kernel['int8_linear_share']:.0f}%)"
    )
    if json_path:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(rows, indent=2) + "\n")


def _token_rows(path: Path, texts: list[str]) -> list[list[int]]:
    from sbert.modules import Transformer

    return Transformer.load(path).token_ids(texts)[0]


if __name__ == "__main__":
    main()
