"""An LLM reranker's shared prompt prefix: run once per query and reused, against whole rows and sentence-transformers.

    python benchmarks/speed/llm_rerank_prefix.py [--queries 2] [--docs 16] [--repeats 2] [--json F]

No reranker weights can be downloaded here, so the model is a random-weight causal LM in
Qwen3-Reranker-0.6B's published shape (Qwen3-0.6B: 28 layers, hidden 1,024, 16 query / 8 key-value heads of
128, FFN 3,072, a 151,669-row vocabulary) with Qwen3-Reranker's prompt format from its model card (the
"Judge whether the Document meets the requirements..." system turn, an <Instruct>, <Query> and <Document>
user turn, the empty <think> ending) as its chat template, and a byte-level BPE trained on STSb train.
Speed depends on the shapes and the token counts, not on the weights' values.

Each query is an STS benchmark test sentence and its documents the second sentences of `docs` test pairs,
so every query reranks `docs` short passages (what `rank`, /v1/rerank and an index's rerank step send).
Rows, medians of `repeats` alternated passes, tokenization included, fp32, torch on the CPU:
    whole rows            every rendered pair run whole (the engine's batches): what sbert ran before
    shared prefix         CrossEncoder.predict: each query's common prefix once, its KV cache reused
    sentence-transformers CrossEncoder.predict (6.2, batch 32) on the same folder
Quality: the largest score difference of each row to whole rows (the same scores up to rounding).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import QWEN3_06B, alternate, cpu_facts, median, sts_byte_bpe, sts_pairs
from sbert.encoding.engine import embed_rows
from sbert.reranker.model import CrossEncoder

# Qwen3-Reranker's prompt (its model card): the system turn, the instruction and the fixed ending.
SYSTEM = ('Judge whether the Document meets the requirements based on the Query and the Instruct provided. '
          'Note that the answer can only be "yes" or "no".')  # fmt: skip
INSTRUCT = "Given a web search query, retrieve relevant passages that answer the query"
TEMPLATE = (
    "<|im_start|>system\n" + SYSTEM + "<|im_end|>\n<|im_start|>user\n<Instruct>: " + INSTRUCT +
    "\n<Query>: {{ messages | selectattr('role', 'eq', 'query') | map(attribute='content') | first }}"
    "\n<Document>: {{ messages | selectattr('role', 'eq', 'document') | map(attribute='content') | first }}"
    "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
)  # fmt: skip


def build(folder: Path) -> Path:
    """The random-weight Qwen3-0.6B-shaped causal LM, its BPE (with yes / no and the chat tokens) and template."""
    from tokenizers import AddedToken
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    tok = sts_byte_bpe()
    tok.add_special_tokens([AddedToken("<|im_start|>", special=True), AddedToken("<|im_end|>", special=True)])
    tok.add_tokens([AddedToken("yes", single_word=True), AddedToken("no", single_word=True)])
    wrapped = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                      model_max_length=8192)  # fmt: skip
    wrapped.chat_template = TEMPLATE
    torch.manual_seed(0)
    config = Qwen3Config(pad_token_id=tok.token_to_id("<|endoftext|>"), **QWEN3_06B)
    Qwen3ForCausalLM(config).save_pretrained(folder)
    wrapped.save_pretrained(folder)
    return folder


def workload(queries: int, docs: int) -> list[tuple[str, str]]:
    """`queries` STS test sentences, each with the second sentences of `docs` test pairs as its documents."""
    first, second, _ = sts_pairs("test")
    return [(first[q * docs], second[q * docs + d]) for q in range(queries) for d in range(docs)]


def main() -> None:
    """Time the three rows alternately and print speed with each row's score difference."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=2)
    parser.add_argument("--docs", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    from sentence_transformers import CrossEncoder as Reference

    pairs = workload(args.queries, args.docs)
    with tempfile.TemporaryDirectory() as tmp:
        folder = build(Path(tmp) / "qwen3-reranker-shaped")
        model, reference = CrossEncoder.load(folder, device="cpu"), Reference(str(folder), device="cpu")
        engine = model.backend("torch", "fp32")

        def whole() -> np.ndarray:
            return embed_rows(engine, model.classifier.prompted_pair_ids(pairs, ""), 1)[:, 0]

        runs = {
            "whole rows": whole,
            "shared prefix": lambda: model.predict(pairs, activation=False, precision="fp32"),
            "sentence-transformers": lambda: reference.predict(pairs, activation_fn=torch.nn.Identity()),
        }
        scores = {name: np.asarray(run(), dtype=np.float32) for name, run in runs.items()}  # also the warm-up
        seconds = {name: median(times) for name, times in alternate(runs, args.repeats).items()}
        tokens = sum(len(r) for r in model.classifier.prompted_pair_ids(pairs, ""))
    base = seconds["whole rows"]
    report: dict[str, object] = {"pairs": len(pairs), "queries": args.queries, "tokens": tokens,
                                 "threads": torch.get_num_threads(), "repeats": args.repeats}  # fmt: skip
    for name, value in seconds.items():
        diff = float(np.abs(scores[name] - scores["whole rows"]).max())
        report[name] = {"seconds": round(value, 3), "pairs_per_s": round(len(pairs) / value, 2),
                        "speedup_vs_whole_rows": round(base / value, 3), "max_abs_score_diff": diff}  # fmt: skip
        print(f"{name:>22}: {len(pairs) / value:7.2f} pairs/s  {base / value:.2f}x whole rows  "
              f"max |score - whole rows| {diff:.2e}")  # fmt: skip
    print(f"{len(pairs)} pairs, {tokens} tokens rendered ({tokens / len(pairs):.0f} a pair)")
    report.update({k: v for k, v in cpu_facts().items() if k != "cpu_flags"})
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
