"""A Qwen3-Embedding-0.6B-sized decoder on the CPU: sbert against sentence-transformers, in one run.

    python benchmarks/decoder_speed.py [--sentences 2758] [--repeats 2] [--json FILE]

No decoder embedder can be downloaded here, so the model is random weights in Qwen3-Embedding-0.6B's
published shape (28 layers, hidden 1024, 16 query / 8 key-value heads of 128, FFN 3072, vocabulary
151,669, last-token pooling, left padding, EOS appended, Normalize). Its tokenizer is a byte-level
BPE trained here on the STSb train sentences (16k merges), so token counts are those of a real BPE
on English, not Qwen's own. Speed depends on the shapes, not on the weights' values.

Timed: sentence-transformers 6.2 `encode` (its default batch of 32), sbert torch fp32, sbert torch
bf16 (only on a CPU with native bf16) and sbert openvino fp32, each on the same sentences,
tokenization included, `--repeats` interleaved passes, medians. Vectors are compared with
sentence-transformers' (max abs difference, unit vectors). Peak memory: each engine encodes once in
a fresh process and reports its resident high-water mark (VmHWM: model load, tokenization, encode).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch

from common import alternate, median, sts_pairs, sts_sentences

QWEN3_06B = {
    "hidden_size": 1024, "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8,
    "head_dim": 128, "intermediate_size": 3072, "vocab_size": 151_669, "max_position_embeddings": 32_768,
    "rope_theta": 1_000_000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": True,
}  # fmt: skip


def build(folder: Path) -> Path:
    """Save the random-weight Qwen3 model in sentence-transformers' layout (built by sentence-transformers)."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3Model

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=16_000, special_tokens=["<|endoftext|>"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())  # fmt: skip
    first, second, _ = sts_pairs("train")
    tok.train_from_iterator(first + second, trainer)
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


def engines(path: Path, only: str | None = None) -> dict[str, object]:
    """Each engine's encode(texts) callable by name, models loaded once; `only`: that engine's model alone."""
    from sentence_transformers import SentenceTransformer

    from sbert import SentenceEncoder
    from sbert.device import cpu_bf16_native

    runs: dict[str, object] = {}
    if only in (None, "sentence-transformers fp32"):
        st = SentenceTransformer(str(path), device="cpu")
        runs["sentence-transformers fp32"] = lambda t: st.encode(t, show_progress_bar=False)
        if only:
            return runs
    ours = SentenceEncoder.load(path, device="cpu")
    runs["sbert torch fp32"] = lambda t: ours.encode(t, show_progress=False)
    if cpu_bf16_native():
        runs["sbert torch bf16"] = lambda t: ours.encode(t, precision="bf16", show_progress=False)
    runs["sbert openvino fp32"] = lambda t: ours.encode(t, backend="openvino", show_progress=False)
    return {k: v for k, v in runs.items() if only in (None, k)}


def peak_rss(path: Path, name: str, count: int) -> float:
    """GiB: the resident high-water mark of a fresh process that loads `name` and encodes once."""
    args = [sys.executable, __file__, "--peak", str(path), name, str(count)]
    out = subprocess.run(args, capture_output=True, text=True, check=True, cwd=Path(__file__).parent)
    return float(out.stdout.strip().splitlines()[-1])


def _peak_child(path: Path, name: str, count: int) -> None:
    texts = sts_sentences("test")[:count]
    for run in engines(path, name).values():
        run(texts)  # type: ignore[operator]
    # VmHWM belongs to this process image; ru_maxrss would carry the parent's peak across exec.
    status = Path("/proc/self/status").read_text().splitlines()
    print(next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 2**20)


def main() -> None:
    """Build, warm, time, compare and print the table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=2758)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--peak", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.peak:
        _peak_child(Path(args.peak[0]), args.peak[1], int(args.peak[2]))
        return
    texts = sts_sentences("test")[: args.sentences]
    with tempfile.TemporaryDirectory() as tmp:
        path = build(Path(tmp))
        runs = engines(path)
        outputs = {name: np.asarray(run(texts[:64])) for name, run in runs.items()}  # type: ignore[operator]
        seconds = alternate({name: (lambda r=run: r(texts)) for name, run in runs.items()}, args.repeats)  # type: ignore[misc]
        reference = outputs["sentence-transformers fp32"]
        rows = []
        for name in runs:
            rate = len(texts) / median(seconds[name])
            rows.append({
                "engine": name, "sentences_per_s": round(rate, 2), "median_s": round(median(seconds[name]), 2),
                "max_abs_diff_vs_st": float(np.abs(outputs[name] - reference).max()),
                "peak_rss_gib": round(peak_rss(path, name, len(texts)), 2),
            })  # fmt: skip
        base = rows[0]["sentences_per_s"]
        tokens = [len(r) for r in _token_rows(path, texts)]
    threads = torch.get_num_threads()
    print(f"{len(texts)} STSb test sentences, mean {np.mean(tokens):.1f} tokens; torch threads {threads}")
    print(f"{'engine':28} {'sent/s':>8} {'x ST':>6} {'max|d|':>9} {'peak GiB':>9}")
    for row in rows:
        print(f"{row['engine']:28} {row['sentences_per_s']:8.2f} {row['sentences_per_s'] / base:6.2f} "
              f"{row['max_abs_diff_vs_st']:9.2e} {row['peak_rss_gib']:9.2f}")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps({"sentences": len(texts), "rows": rows}, indent=2) + "\n")


def _token_rows(path: Path, texts: list[str]) -> list[list[int]]:
    from sbert.modules import Transformer

    return Transformer.load(path).token_ids(texts)[0]


if __name__ == "__main__":
    main()
