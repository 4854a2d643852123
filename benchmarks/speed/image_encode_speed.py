"""Images per second of a CLIP-ViT-B/32- or SigLIP-base-shaped model: sbert against sentence-transformers, same run.

python benchmarks/speed/image_encode_speed.py [--shape clip-b32|siglip-base] [--images 96] [--repeats 5]
    [--size 640x480] [--files] [--backends torch,onnx,openvino] [--precisions fp32,bf16] [--reference-bf16]
    [--json FILE]

The model has the published shapes with random weights (no pretrained weights are obtainable here):
ViT-B/32 (vision 768 wide, 12 layers, 224-pixel images in 32-pixel patches: 50 tokens; text 512 wide,
12 layers; a 512-wide shared space) or SigLIP-base-patch16-224 (both towers 768 wide, 12 layers;
16-pixel patches: 196 tokens an image, four times ViT-B/32's). `--reference-bf16` adds
sentence-transformers with its weights in bf16 (`model_kwargs={"dtype": torch.bfloat16}`), its own
fastest CPU setting, as a contender. The images are deterministic smooth-noise photos of `--size` (as PIL images in
memory, or JPEG files with --files, which adds the decode). Both libraries embed the same list, alternating
rounds; the rate is the median, and the largest difference between their vectors is printed beside it.
Each of sbert's `--backends` runs as its own contender (onnx / openvino: the image tower exported once
beside the model, before the timed rounds). Each of `--precisions` is sbert's compute dtype on the torch
backend (bf16: the CPU's bf16 instructions where it has them); its vectors differ from fp32's by bf16's
rounding, printed beside the rate as the largest difference and the lowest cosine to the reference's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import alternate, cpu_facts, median

VISION = {"hidden_size": 768, "intermediate_size": 3072, "num_attention_heads": 12, "num_hidden_layers": 12,
          "image_size": 224, "patch_size": 32}  # fmt: skip
TEXT = {"hidden_size": 512, "intermediate_size": 2048, "num_attention_heads": 8, "num_hidden_layers": 12,
        "max_position_embeddings": 77}  # fmt: skip


def byte_tokenizer(folder: Path):  # noqa: ANN201 - a transformers CLIPTokenizer
    """A byte-level BPE tokenizer without merges (every byte a token): CLIP's kind, built offline."""
    from transformers import CLIPTokenizer

    kept = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    extra = iter(range(256, 512))
    symbols = [chr(b) if b in kept else chr(next(extra)) for b in range(256)]
    vocab = [*symbols, *(s + "</w>" for s in symbols), "<|startoftext|>", "<|endoftext|>"]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.json").write_text(json.dumps({t: i for i, t in enumerate(vocab)}), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
    return CLIPTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"))


def siglip_base(base: Path) -> Path:
    """A random SigLIP-base-patch16-224-shaped model saved by sentence-transformers (its root-Transformer layout)."""
    from sentence_transformers import SentenceTransformer
    from transformers import SiglipConfig, SiglipImageProcessor, SiglipModel, SiglipProcessor

    tokenizer = byte_tokenizer(base / "tok")
    n = len(tokenizer)
    towers = {"hidden_size": 768, "intermediate_size": 3072, "num_attention_heads": 12, "num_hidden_layers": 12}
    text = {**towers, "vocab_size": n, "max_position_embeddings": 64, "bos_token_id": n - 2, "eos_token_id": n - 1,
            "pad_token_id": n - 1}  # fmt: skip
    config = SiglipConfig(text_config=text, vision_config={**towers, "image_size": 224, "patch_size": 16},
                          bos_token_id=None, eos_token_id=None, pad_token_id=None)  # fmt: skip
    torch.manual_seed(0)
    SiglipModel(config).save_pretrained(base / "hf")
    images = SiglipImageProcessor(size={"height": 224, "width": 224})
    SiglipProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(base / "hf")
    SentenceTransformer(str(base / "hf"), device="cpu").save(str(base / "st"))
    return base / "st"


SHAPES = {"clip-b32": "CLIP-ViT-B/32", "siglip-base": "SigLIP-base-patch16-224"}


def clip_b32(base: Path) -> Path:
    """A random ViT-B/32-shaped CLIP saved by sentence-transformers 6.2 (its root-Transformer layout)."""
    from sentence_transformers import SentenceTransformer
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor

    tokenizer = byte_tokenizer(base / "tok")
    n = len(tokenizer)
    text = {**TEXT, "vocab_size": n, "bos_token_id": n - 2, "eos_token_id": n - 1}
    torch.manual_seed(0)
    CLIPModel(CLIPConfig(text_config=text, vision_config=VISION, projection_dim=512)).save_pretrained(base / "hf")
    images = CLIPImageProcessor(size={"shortest_edge": 224}, crop_size={"height": 224, "width": 224})
    CLIPProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(base / "hf")
    SentenceTransformer(str(base / "hf"), device="cpu").save(str(base / "st"))
    return base / "st"


def photos(count: int, size: tuple[int, int]) -> list:
    """Smooth-noise RGB photos: random low-resolution colour fields upsampled, so they compress like photos."""
    from PIL import Image

    rng = np.random.default_rng(0)
    out = []
    for _ in range(count):
        small = (rng.random((12, 16, 3)) * 255).astype("uint8")
        out.append(Image.fromarray(small).resize(size, Image.Resampling.BICUBIC))
    return out


def min_cosine(a: np.ndarray, b: np.ndarray) -> float:
    """The lowest cosine between row i of `a` and row i of `b`."""
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return float((a * b).sum(axis=1).min())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", choices=sorted(SHAPES), default="clip-b32")
    parser.add_argument("--reference-bf16", action="store_true", help="sentence-transformers in bf16 too")
    parser.add_argument("--images", type=int, default=96)
    parser.add_argument("--json", help="write the figures here (tools/charts.py draws them)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--size", default="640x480", help="WIDTHxHEIGHT of each photo")
    parser.add_argument("--files", action="store_true", help="give both libraries JPEG file paths (decode included)")
    parser.add_argument("--reference-batch-size", type=int, default=32, help="sentence-transformers' batch size")
    parser.add_argument("--backends", default="torch", help="sbert's backends, comma-separated (torch, onnx, openvino)")
    parser.add_argument(
        "--precisions", default="fp32", help="sbert's torch compute dtypes, comma-separated (fp32, bf16)"
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    import sentence_transformers

    import sbert

    width, height = (int(x) for x in args.size.split("x"))
    with tempfile.TemporaryDirectory() as tmp:
        folder = (siglip_base if args.shape == "siglip-base" else clip_b32)(Path(tmp))
        images: list = photos(args.images, (width, height))
        if args.files:
            for i, image in enumerate(images):
                image.save(Path(tmp) / f"{i}.jpg", quality=90)
            images = [str(Path(tmp) / f"{i}.jpg") for i in range(len(images))]
        ours = sbert.SentenceTransformer(str(folder), device="cpu")
        theirs = sentence_transformers.SentenceTransformer(str(folder), device="cpu")
        batch = args.reference_batch_size
        want = theirs.encode(images, batch_size=batch)
        contenders = {f"sbert {b}": {"backend": b} for b in args.backends.split(",")}
        for p in args.precisions.split(","):
            if p != "fp32":
                contenders[f"sbert torch {p}"] = {"backend": "torch", "compute_precision": p}
        got = {name: ours.encode(images, **options) for name, options in contenders.items()}
        gaps = {name: float(np.abs(rows - want).max()) for name, rows in got.items()}
        cosines = {name: float(min_cosine(rows, want)) for name, rows in got.items()}
        runs = {name: (lambda o=options: ours.encode(images, **o)) for name, options in contenders.items()}
        runs["sentence-transformers"] = lambda: theirs.encode(images, batch_size=batch)
        if args.reference_bf16:
            theirs_bf16 = sentence_transformers.SentenceTransformer(str(folder), device="cpu",
                                                                    model_kwargs={"dtype": torch.bfloat16})  # fmt: skip
            rows = theirs_bf16.encode(images, batch_size=batch)
            gaps["sentence-transformers bf16"] = float(np.abs(rows - want).max())
            cosines["sentence-transformers bf16"] = min_cosine(rows, want)
            runs["sentence-transformers bf16"] = lambda: theirs_bf16.encode(images, batch_size=batch)
        seconds = alternate(runs, args.repeats)
    rates = {name: args.images / median(times) for name, times in seconds.items()}
    print(f"{SHAPES[args.shape]} shape, {args.images} images of {args.size}{' (JPEG files)' if args.files else ''}, "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads")  # fmt: skip
    reference = rates["sentence-transformers"]
    if args.json:
        table = {name: {"images_per_s": rate, "vs_reference": rate / reference, "max_diff": gaps.get(name),
                        "min_cosine": cosines.get(name)} for name, rate in rates.items()}  # fmt: skip
        run = {"shape": args.shape, "images": args.images, "size": args.size, "cpu": cpu_facts()}
        Path(args.json).write_text(json.dumps({**run, "rates": table}, indent=2))
    for name, rate in rates.items():
        versus = (f"   {rate / reference:.2f}x   max |difference| {gaps[name]:.2e}   min cosine {cosines[name]:.6f}"
                  if name in gaps else "")  # fmt: skip
        print(f"{name:>22}: {rate:7.2f} images/s{versus}")


if __name__ == "__main__":
    main()
