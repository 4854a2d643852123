"""BGE-M3's three outputs against the encoder alone: the cost of the heads, same run, alternating.

python benchmarks/speed/m3_cost.py [--sentences 200] [--repeats 3] [--json F]

The model is a random-weight XLM-R in BGE-M3's published shapes (24 layers, width 1,024, 16 heads, FFN
4,096, a 250,002-row vocabulary; both heads) with a WordPiece tokenizer trained on STSb train (no BGE-M3
weights or tokenizer are obtainable here; only the token counts depend on the tokenizer). Rows, each the
median of `repeats` timings of the first `sentences` STS benchmark test sentences:
    dense view    m3.views.dense_view(m3).encode: the encoder and CLS pooling alone, on the dense kind's engine:
                  the dense-only pass, the base of the ratios
    dense only    M3Encoder.encode(return_dense=True): the M3 chain, whose graph holds the three heads (m3/heads.py)
    all three     M3Encoder.encode(return_dense, return_sparse, return_colbert_vecs): one forward per batch
Issue 56's bound: all three <= 1.15x the dense-only pass.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import alternate, cpu_facts, median, sts_sentences, sts_wordpiece
from sbert.m3 import M3Encoder
from sbert.m3.views import dense_view

BGE_M3 = {"vocab_size": 250002, "hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
          "intermediate_size": 4096, "max_position_embeddings": 8194, "type_vocab_size": 1,
          "layer_norm_eps": 1e-5}  # fmt: skip


def random_bge_m3(path: Path) -> Path:
    """A random-weight XLM-R in BGE-M3's shapes with both heads, in FlagEmbedding's layout."""
    from transformers import XLMRobertaConfig, XLMRobertaModel

    torch.manual_seed(0)
    tokenizer = sts_wordpiece()
    XLMRobertaModel(XLMRobertaConfig(pad_token_id=0, **BGE_M3)).save_pretrained(path)
    tokenizer.save_pretrained(path)
    width = BGE_M3["hidden_size"]
    torch.save(torch.nn.Linear(width, width).state_dict(), path / "colbert_linear.pt")
    torch.save(torch.nn.Linear(width, 1).state_dict(), path / "sparse_linear.pt")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    texts = sts_sentences("test")[: args.sentences]
    with tempfile.TemporaryDirectory() as tmp:
        m3 = M3Encoder.load(random_bge_m3(Path(tmp) / "bge-m3-shaped"), device="cpu")
        dense = dense_view(m3)
        every = {"return_dense": True, "return_sparse": True, "return_colbert_vecs": True}
        runs = {
            "dense view": lambda: dense.encode(texts, show_progress=False),
            "dense only": lambda: m3.encode(texts, show_progress=False),
            "all three": lambda: m3.encode(texts, show_progress=False, **every),
        }
        for warm in ("dense view", "dense only"):
            runs[warm]()  # warm-up: first-call work is not the steady state
        seconds = {name: median(times) for name, times in alternate(runs, args.repeats).items()}
    base = seconds["dense view"]
    report: dict[str, object] = {"sentences": len(texts), "repeats": args.repeats, "threads": torch.get_num_threads()}
    for name, value in seconds.items():
        report[name] = {"seconds": round(value, 3), "sentences_per_s": round(len(texts) / value, 2),
                        "x_dense_view": round(value / base, 3)}  # fmt: skip
        print(f"{name:>11}: {len(texts) / value:7.2f} sentences/s  {value / base:.3f}x the encoder alone")
    print(f"all three / the encoder alone (dense view): {seconds['all three'] / base:.3f} (bound 1.15)")
    report.update({k: v for k, v in cpu_facts().items() if k != "cpu_flags"})
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
