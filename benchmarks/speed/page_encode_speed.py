"""Pages per second of a ColPali-shaped page model: sbert against sentence-transformers, each in its own process.

python benchmarks/speed/page_encode_speed.py [--pages 2] [--layers N] [--device cpu|cuda] [--json FILE]

The model is ColPali v1.2's published shape with random weights (no pretrained weights are obtainable here):
PaliGemma-3B, a SigLIP-So400m vision tower (1152 wide, 27 layers, 448-pixel pages in 14-pixel patches: 1,024
image tokens) under a Gemma-2B language model (2048 wide, 18 layers, a 257,216-token vocabulary), projected
to 128-dimension token vectors. A page is about 6 TFLOP. `--layers N` keeps N layers of each tower (the
widths stay published) for a quicker run; the full depth is the default.

Each contender (sentence-transformers fp32 and bf16 weights, sbert fp32 and bf16 compute) runs in a process of
its own, one after another, because two fp32 copies of a 3B model do not fit beside each other in 24 GB: each
loads the saved folder, encodes one warm-up page, then times `--pages` pages (one page a call, the median) and
writes its matrices; the largest difference and the lowest token cosine to sentence-transformers' fp32
matrices are printed beside each rate.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import cpu_facts, median

CONTENDERS = {
    "sentence-transformers": ("st", "fp32"), "sentence-transformers bf16": ("st", "bf16"),
    "sbert torch": ("sbert", "fp32"), "sbert torch bf16": ("sbert", "bf16"),
}  # fmt: skip


def colpali_shape(base: Path, layers: int | None) -> Path:
    """A random ColPali with PaliGemma-3B's published shapes (towers cut to `layers` when given), saved."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import (
        ColPaliConfig,
        ColPaliForRetrieval,
        ColPaliProcessor,
        GemmaTokenizerFast,
        PaliGemmaConfig,
        SiglipImageProcessor,
    )

    words = ["<pad>", "<eos>", "<bos>", "<unk>", "<image>", *(chr(c) for c in range(33, 127))]
    bpe = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    tokenizer = GemmaTokenizerFast(tokenizer_object=bpe, pad_token="<pad>", eos_token="<eos>", bos_token="<bos>",
                                   unk_token="<unk>")  # fmt: skip
    pixels = SiglipImageProcessor(size={"height": 448, "width": 448}, image_seq_length=1024)
    processor = ColPaliProcessor(image_processor=pixels, tokenizer=tokenizer)
    text = {"model_type": "gemma", "vocab_size": 257_216, "hidden_size": 2048, "intermediate_size": 16_384,
            "num_hidden_layers": layers or 18, "num_attention_heads": 8, "num_key_value_heads": 1, "head_dim": 256,
            "max_position_embeddings": 8192, "pad_token_id": 0}  # fmt: skip
    vision = {"hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": layers or 27,
              "num_attention_heads": 16, "image_size": 448, "patch_size": 14, "projection_dim": 2048}  # fmt: skip
    vlm = PaliGemmaConfig(text_config=text, vision_config=vision, projection_dim=2048, vocab_size=257_216,
                          image_token_index=tokenizer.convert_tokens_to_ids("<image>"))  # fmt: skip
    torch.manual_seed(0)
    ColPaliForRetrieval(ColPaliConfig(vlm_config=vlm, embedding_dim=128)).save_pretrained(base / "colpali")
    processor.save_pretrained(base / "colpali")
    return base / "colpali"


def pages(count: int) -> list:
    """Letter-sized smooth-noise pages (random colour fields upsampled: they compress like scans)."""
    from PIL import Image

    rng = np.random.default_rng(0)
    return [Image.fromarray((rng.random((22, 17, 3)) * 255).astype("uint8")).resize((850, 1100)) for _ in range(count)]


def contender(folder: str, library: str, precision: str, count: int, out: str, device: str = "cpu") -> None:
    """One contender's run (in its own process): load, warm up, time `count` pages one a call, save the matrices."""
    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    docs = pages(count + 1)
    if library == "st":
        import sentence_transformers

        kwargs = {"model_kwargs": {"dtype": torch.bfloat16}} if precision == "bf16" else {}
        model = sentence_transformers.MultiVectorEncoder(folder, device=device, **kwargs)
        encode = lambda page: [m.float().numpy() for m in model.encode_document([page])]  # noqa: E731
    else:
        import sbert

        model = sbert.load(folder, device=device)
        encode = lambda page: [np.asarray(m, np.float32) for m in model.encode_document(  # noqa: E731
            [page], precision=precision)]  # fmt: skip
    encode(docs[0])
    seconds, rows = [], []
    for page in docs[1:]:
        start = time.perf_counter()
        rows.extend(encode(page))
        sync()
        seconds.append(time.perf_counter() - start)
    np.savez(out, np.asarray(seconds), *rows)  # arr_0: the seconds, then one matrix per page


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=2)
    parser.add_argument("--layers", type=int, default=None, help="layers of each tower (default: published depth)")
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--device", default="cpu", help="cuda: the GPU row of gpu_check.sh (fp32 and bf16 alike)")
    parser.add_argument("--run", nargs=5, help=argparse.SUPPRESS)  # a contender's own process
    args = parser.parse_args()
    if args.run:
        folder, library, precision, count, out = args.run
        contender(folder, library, precision, int(count), out, args.device)
        return
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = colpali_shape(Path(tmp), args.layers)
        for name, (library, precision) in CONTENDERS.items():
            out = str(Path(tmp) / f"{library}-{precision}.npz")
            subprocess.run([sys.executable, __file__, "--run", str(folder), library, precision, str(args.pages), out,
                            "--device", args.device], check=True)  # fmt: skip
            saved = np.load(out)
            results[name] = {"seconds": saved["arr_0"].tolist(),
                             "rows": [saved[f"arr_{i}"] for i in range(1, len(saved.files))]}  # fmt: skip
    want = results["sentence-transformers"]["rows"]
    reference = median(results["sentence-transformers"]["seconds"])
    depth = f"{args.layers} layers a tower" if args.layers else "published depth"
    facts = cpu_facts()
    print(
        f"ColPali (PaliGemma-3B) shape on {args.device}, {depth}, {args.pages} pages of 850x1100, one a call; "
        f"{facts['cpu']}, {facts['cores']} cores, bf16 instructions: {'avx512_bf16' in facts['cpu_flags']}"
    )
    table = {}
    print("| contender | seconds a page | pages/s | vs sentence-transformers fp32 | max abs diff | min token cosine |")
    print("|---|---:|---:|---:|---:|---:|")
    ref = np.concatenate(want)
    for name, result in results.items():
        rate, got = 1 / median(result["seconds"]), np.concatenate(result["rows"])
        cosine = float((got * ref).sum(1).min())  # rows are unit vectors in both libraries
        gap = float(np.abs(got - ref).max())
        table[name] = {"pages_per_s": rate, "vs_reference": reference * rate, "max_diff": gap, "min_cosine": cosine}
        print(f"| {name} | {1 / rate:.2f} | {rate:.4f} | {reference * rate:.2f}x | {gap:.2e} | {cosine:.6f} |")
    if args.json:
        run = {"shape": "colpali-paligemma-3b", "layers": args.layers, "pages": args.pages, "cpu": facts}
        Path(args.json).write_text(json.dumps({**run, "rates": table}, indent=2))


if __name__ == "__main__":
    main()
