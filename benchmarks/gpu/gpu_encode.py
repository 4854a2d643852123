"""GPU encode speed against sentence-transformers on the same GPU, in one run; prints a table last.

Rows: sentence-transformers default (fp32, batch 32) and its fp16 batch-256 setting; sbert fp32
and bf16. Models: MiniLM-L6 with real weights, and a BERT-base-shaped model with random weights
(speed does not depend on weight values). Corpora: the 17,256 STS benchmark sentences and about
8,000 passages of ~128 tokens built from the same data. Columns: sentences/s, tokens/s, the ratio
to sentence-transformers' default and the share of the bf16 linear-FLOP ceiling (an 8192^3 GEMM
timed in this run). Then the most similar pair among 10,000 sentences, in process and as a fresh
process against a bare `import torch`. Checks in the same run: sbert fp32 against
sentence-transformers fp32 (max abs diff), bf16 cosine to fp32, STSb test Spearman fp32 vs bf16.

On the lent GPU (data and weights from `bash benchmarks/gpu/pack_device.sh`, carried as .device):
    PYTHONPATH=src python3 benchmarks/gpu/gpu_encode.py --data .device/data \
        --model .device/all-MiniLM-L6-v2-fp16 --out $OUT/gpu_encode.json
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from sbert import SentenceEncoder  # noqa: E402
from sbert.search import paraphrase_mining  # noqa: E402


def sts_rows(data: Path, split: str) -> list[list[str]]:
    """Tab-separated rows of one STS benchmark split."""
    text = (data / "stsbenchmark" / f"sts-{split}.csv").read_text(encoding="utf-8")
    return [line.split("\t") for line in text.splitlines()]


def sts_sentences(data: Path) -> list[str]:
    """Both sentences of every pair of all three splits: 17,256 sentences."""
    return [s for split in ("train", "dev", "test") for r in sts_rows(data, split) for s in (r[5], r[6])]


def passages(sentences: list[str], count_tokens: Callable[[list[str]], list[int]], target: int = 128) -> list[str]:
    """Consecutive sentences joined until each passage holds about `target` tokens."""
    lengths = count_tokens(sentences)
    out, current, tokens = [], [], 0
    for sentence, n in zip(sentences, lengths, strict=True):
        current.append(sentence)
        tokens += n - 2  # the special tokens are counted once per passage
        if tokens >= target - 2:
            out.append(" ".join(current))
            current, tokens = [], 0
    return out


def gemm_tflops() -> float:
    """bf16 8192^3 matrix multiply throughput, TFLOP/s (median of 10): the linear-FLOP ceiling."""
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    times = []
    for _ in range(10):
        torch.cuda.synchronize()
        start = time.perf_counter()
        a @ b
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return 2 * 8192**3 / statistics.median(times) / 1e12


def linear_flops_per_token(config: object) -> float:
    """2 x multiply-adds of every linear layer per token: 4 h^2 (attention) + 2 h i (FFN) per layer."""
    h, i, layers = (int(getattr(config, k)) for k in ("hidden_size", "intermediate_size", "num_hidden_layers"))
    return 2.0 * layers * (4 * h * h + 2 * h * i)


def scratch() -> Path:
    """A fresh folder removed when the process exits (the trained and random models are hundreds of MB each)."""
    folder = tempfile.mkdtemp(prefix="sbert-gpu-bench-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return Path(folder)


def sync() -> None:
    """Wait for queued GPU work (a no-op on a CPU smoke run)."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def timed(run: Callable[[], object], repeats: int) -> float:
    """Median seconds of `repeats` runs after one warm-up, synchronised around each."""
    run()
    times = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        run()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def random_bert_base(tokenizer_dir: Path, out: Path, **config: int) -> Path:
    """A BERT-base-shaped encoder with random weights and the MiniLM (bert-base-uncased) vocabulary.

    `config` overrides BertConfig fields (smoke runs shrink the layer count).
    """
    from transformers import AutoTokenizer, BertConfig, BertModel

    torch.manual_seed(0)
    BertModel(BertConfig(**config)).save_pretrained(out)
    AutoTokenizer.from_pretrained(tokenizer_dir).save_pretrained(out)
    return out


def bench_model(name: str, path: Path, corpora: dict[str, list[str]], args: argparse.Namespace) -> list[dict]:
    """Every row for one model over every corpus."""
    from sentence_transformers import SentenceTransformer

    sbert = bench_encoder(path, args.device)
    # The packed copy stores fp16 weights and transformers 5 keeps a stored dtype: ask for fp32, or
    # the "fp32" rows would run in fp16 (sbert loads fp32 by default).
    fp32 = {"dtype": torch.float32}
    st = SentenceTransformer(str(path), device=args.device, model_kwargs=fp32)
    st_half = SentenceTransformer(str(path), device=args.device, model_kwargs=fp32).half()
    flops = linear_flops_per_token(sbert.transformer.auto_model.config)
    graphed = with_graphs(path, args.device)
    runs: dict[str, Callable[[list[str]], object]] = {
        "sentence-transformers fp32 bs32": lambda t: st.encode(t, batch_size=32),
        "sentence-transformers fp16 bs256": lambda t: st_half.encode(t, batch_size=256),
        "sbert fp32": lambda t: sbert.encode(t, precision="fp32"),
        "sbert bf16": lambda t: sbert.encode(t, precision="bf16"),
        "sbert bf16 graphs": lambda t: graphed.encode(t, precision="bf16"),
    }
    rows = []
    for corpus, texts in corpora.items():
        tokens = sum(len(r) for r in sbert.transformer.token_ids(texts)[0])
        base = None
        for label, run in runs.items():
            seconds = timed(lambda run=run, texts=texts: run(texts), args.repeats)
            base = base or seconds
            rate = tokens / seconds
            rows.append({"model": name, "corpus": corpus, "run": label, "sent_s": len(texts) / seconds,
                         "tokens_s": rate, "x_st": base / seconds,
                         "ceiling_pct": 100 * rate * flops / (args.tflops * 1e12)})  # fmt: skip
            print(json.dumps(rows[-1]), flush=True)
    rows.append(parity(name, sbert, st, corpora["sts"]))
    return rows


def bench_encoder(path: Path, device: str) -> SentenceEncoder:
    """The model at `path`: a sentence-transformers folder, or a plain transformers one (the random BERT-base)."""
    if (path / "modules.json").exists():
        return SentenceEncoder.load(path, device=device)
    return SentenceEncoder.from_transformer(path, device=device)


def with_graphs(path: Path, device: str) -> SentenceEncoder:
    """A second copy of the model whose bf16 engine replays CUDA graphs (SBERT_CUDA_GRAPHS=1 while it is built)."""
    model = bench_encoder(path, device)
    os.environ["SBERT_CUDA_GRAPHS"] = "1"
    try:
        model.backend("torch", "bf16")  # the engine reads the switch once, when it is built (then cached)
    finally:
        del os.environ["SBERT_CUDA_GRAPHS"]
    return model


def parity(name: str, sbert: SentenceEncoder, st: object, texts: list[str]) -> dict:
    """fp32 against sentence-transformers fp32, bf16 against fp32, on the same GPU."""
    fp32 = sbert.encode(texts, precision="fp32")
    ref = st.encode(texts, batch_size=64)  # type: ignore[attr-defined]
    bf16 = sbert.encode(texts, precision="bf16")
    cosine = (fp32 * bf16).sum(1) / np.linalg.norm(fp32, axis=1) / np.linalg.norm(bf16, axis=1)
    check = {"model": name, "check": "parity", "fp32_vs_st_max_abs": float(np.abs(fp32 - ref).max()),
             "bf16_min_cosine": float(cosine.min())}  # fmt: skip
    print(json.dumps(check), flush=True)
    return check


def stsb_spearman(model: SentenceEncoder, data: Path, limit: int | None = None) -> dict:
    """STS benchmark test Spearman x 100 in fp32 and bf16 (the first `limit` pairs in smoke runs)."""
    from scipy.stats import spearmanr

    rows = sts_rows(data, "test")[:limit]
    gold = [float(r[4]) for r in rows]
    out = {"check": "stsb"}
    for precision in ("fp32", "bf16"):
        a = model.encode([r[5] for r in rows], precision=precision, normalize=True)
        b = model.encode([r[6] for r in rows], precision=precision, normalize=True)
        out[precision] = 100 * float(spearmanr((a * b).sum(1), gold).statistic)
    print(json.dumps(out), flush=True)
    return out


MINE_SCRIPT = """
import sys, time
t0 = time.perf_counter()
sys.path.insert(0, {src!r})
from sbert import SentenceEncoder
from sbert.search import paraphrase_mining
texts = open({corpus!r}, encoding="utf-8").read().splitlines()
model = SentenceEncoder.load({model!r}, device={device!r})
pairs = paraphrase_mining(model.encode(texts), max_pairs=1, device={device!r})
print(pairs[0], time.perf_counter() - t0)
"""


def mining(model_path: Path, texts: list[str], repeats: int, device: str) -> dict:
    """Most similar pair among 10,000 sentences: in process (model loaded) and as a fresh process."""
    model = SentenceEncoder.load(model_path, device=device)
    in_process = timed(lambda: paraphrase_mining(model.encode(texts), max_pairs=1, device=device), repeats)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.txt"
        corpus.write_text("\n".join(texts), encoding="utf-8")
        script = MINE_SCRIPT.format(src=str(ROOT / "src"), corpus=str(corpus), model=str(model_path), device=device)
        bare = fresh([sys.executable, "-c", "import torch"])
        whole = fresh([sys.executable, "-c", script])
    out = {"check": "mining", "in_process_s": in_process, "fresh_process_s": whole, "import_torch_s": bare,
           "beyond_import_torch_s": whole - bare}  # fmt: skip
    print(json.dumps(out), flush=True)
    return out


def fresh(command: list[str]) -> float:
    """Wall seconds of a fresh process (median of 3)."""
    times = []
    for _ in range(3):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def table(rows: list[dict]) -> str:
    """The speed rows as a markdown table."""
    lines = ["| model | corpus | run | sent/s | tokens/s | x ST default | % bf16 linear ceiling |",
             "|---|---|---|---:|---:|---:|---:|"]  # fmt: skip
    for r in rows:
        if "run" in r:
            lines.append(f"| {r['model']} | {r['corpus']} | {r['run']} | {r['sent_s']:,.0f} | {r['tokens_s']:,.0f} "
                         f"| {r['x_st']:.2f} | {r['ceiling_pct']:.1f} |")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--model", type=Path, required=True, help="all-MiniLM-L6-v2 folder (real weights)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-bert-base", action="store_true")
    parser.add_argument("--out", type=Path, help="write every row and check as JSON here")
    parser.add_argument("--device", default="cuda", help="cpu only for a smoke run of the script itself")
    parser.add_argument("--limit", type=int, default=None, help="first N sentences only (smoke runs)")
    args = parser.parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        sys.exit("gpu_encode.py needs a CUDA GPU (or --device cpu --limit 200 for a smoke run)")
    gpu = args.device.startswith("cuda")
    args.tflops = gemm_tflops() if gpu else float("nan")
    name = torch.cuda.get_device_name() if gpu else "cpu"
    print(json.dumps({"device": name, "bf16_gemm_tflops": args.tflops}), flush=True)
    sentences = sts_sentences(args.data)[: args.limit]
    model = SentenceEncoder.load(args.model, device=args.device)
    counts = lambda t: [len(r) for r in model.transformer.token_ids(t)[0]]  # noqa: E731
    corpora = {"sts": sentences, "passages": passages(sentences, counts)}
    rows: list[dict] = [
        stsb_spearman(model, args.data, args.limit),
        mining(args.model, sentences[:10_000], args.repeats, args.device),
    ]
    rows += bench_model("MiniLM-L6", args.model, corpora, args)
    if not args.skip_bert_base:
        with tempfile.TemporaryDirectory() as tmp:
            rows += bench_model("BERT-base (random)", random_bert_base(args.model, Path(tmp)), corpora, args)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))
    print(f"\n{name}, bf16 GEMM {args.tflops:.0f} TFLOP/s, {args.repeats} repeats (medians)")
    print(table(rows))


if __name__ == "__main__":
    main()
