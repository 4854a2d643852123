"""CPU token budgets on wide models: sentences/s of one engine at several `batch_tokens`, alternating.

    python benchmarks/speed/batch_budget.py --shape qwen3-0.6b --dtype int8 --sentences 1200 \
        --budgets 192,256,512 [--repeats 3]
    python benchmarks/speed/batch_budget.py --shape bert-base --options '{"backend": "torch-int8"}'

`--shape qwen3-0.6b` builds decoder_speed.py's random-weight Qwen3-Embedding-0.6B-shaped model,
`--shape bert-base` a random-weight BERT-base (12 x 768, mean pooling) with a 16k WordPiece
vocabulary trained here on the STSb train sentences; `--model DIR` times a saved model instead. The
STSb test sentences, tokenization included; one process, the budgets interleaved, medians. The
engine's own default (`torch_cpu.cpu_batch_tokens`) is printed beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from decoder_speed import build

from common import alternate, cpu_facts, median, sts_sentences


def bert_base(folder: Path) -> Path:
    """A random-weight BERT-base in sentence-transformers' layout (mean pooling), its vocabulary from STSb train."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    from common import sts_pairs

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    first, second, _ = sts_pairs("train")
    tok.train_from_iterator(first + second, trainers.WordPieceTrainer(vocab_size=16_000, special_tokens=specials))
    wrapped = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                                      cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")  # fmt: skip
    wrapped.backend_tokenizer.post_processor = processors.BertProcessing(
        ("[SEP]", tok.token_to_id("[SEP]")), ("[CLS]", tok.token_to_id("[CLS]"))
    )
    torch.manual_seed(0)
    raw = folder / "raw"
    BertModel(BertConfig(vocab_size=tok.get_vocab_size())).save_pretrained(raw)
    wrapped.save_pretrained(raw)
    first_module = Transformer(str(raw), max_seq_length=512)
    SentenceTransformer(modules=[first_module, Pooling(768, "mean")], device="cpu").save(str(folder / "model"))
    return folder / "model"


def main() -> None:
    """Build or load the model, time each budget, print sentences/s per budget (and JSON with --json)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", choices=["qwen3-0.6b", "bert-base"], default="qwen3-0.6b")
    parser.add_argument("--model", type=Path, help="a saved model folder instead of a built shape")
    parser.add_argument("--dtype", choices=["bf16", "int8"], help="load the weights in this dtype")
    parser.add_argument("--options", default="{}", help='encode options as JSON, e.g. \'{"backend": "torch-int8"}\'')
    parser.add_argument("--sentences", type=int, default=1200)
    parser.add_argument("--budgets", default="128,192,256,512")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    from sbert import SentenceEncoder
    from sbert.backends.torch_cpu import cpu_batch_tokens

    with tempfile.TemporaryDirectory() as tmp:
        path = args.model or (build if args.shape == "qwen3-0.6b" else bert_base)(Path(tmp))
        model = SentenceEncoder.load(path, device="cpu", dtype=args.dtype)
        options = json.loads(args.options)
        texts = sts_sentences("test")[: args.sentences]
        model.encode(texts[:32], show_progress=False, **options)  # warm: the engine is built
        budgets = [int(b) for b in args.budgets.split(",")]
        runs = {
            str(b): (lambda b=b: model.encode(texts, show_progress=False, batch_tokens=b, **options)) for b in budgets
        }
        seconds = alternate(runs, args.repeats)
        default = cpu_batch_tokens(tuple(model.chain()))
    rows = [{"batch_tokens": b, "sentences_per_s": round(len(texts) / median(seconds[str(b)]), 1)} for b in budgets]
    facts = cpu_facts()
    print(f"{facts['cpu']}, {facts['cores']} cores; {len(texts)} sentences; engine default {default} tokens")
    for row in rows:
        print(f"{row['batch_tokens']:>6} tokens: {row['sentences_per_s']:8.1f} sentences/s")
    if args.json:
        args.json.write_text(json.dumps({"default": default, "rows": rows, **facts}, indent=2) + "\n")


if __name__ == "__main__":
    main()
