"""One table from what benchmarks/gpu/gpu_check.sh left in its output folder.

Each step's outcome, the cuda tests' count, the encode checks and speed rows, the training rows,
and the tables the profile, sparse and multivector steps print (with their vector checks and ratios).
Reads the logs line by line, so a step killed by its timeout still shows every row it finished.
Writes OUT/summary.md and prints it.

    python3 benchmarks/gpu/gpu_summary.py OUT
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path


def json_lines(path: Path) -> list[dict]:
    """Every line of a log that is a JSON object (the benchmarks print one per finished row)."""
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("{"):
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:  # other libraries' dict prints
                continue
    return rows


def step_lines(out: Path) -> list[str]:
    """One row per step: its outcome, wall seconds and, for the tests, pytest's closing counts."""
    lines = ["| step | outcome | seconds | detail |", "|---|---|---:|---|"]
    steps = out / "steps.tsv"
    for row in steps.read_text(encoding="utf-8").splitlines() if steps.is_file() else []:
        name, rc, seconds, limit = row.split("\t")
        ends = {"0": "ok", "124": f"timed out ({limit} s)", "137": f"killed ({limit} s)"}
        outcome = ends.get(rc, f"failed (rc {rc})")
        lines.append(f"| {name} | {outcome} | {seconds} | {detail(out / f'{name}.log', name)} |")
    return lines


def detail(log: Path, name: str) -> str:
    """The pytest closing line for the tests; how many result rows the other steps finished."""
    if not log.is_file():
        return "no log"
    if name == "tests":
        closing = re.compile(r"^=*\s*(\d+ (?:passed|failed|skipped|deselected|errors?)\b.*?)\s*=*$")
        found = [m.group(1) for line in log.read_text(errors="replace").splitlines() if (m := closing.match(line))]
        return found[-1] if found else "no pytest summary"
    if name in TABLE_STEPS:
        return f"{sum(line.startswith('|') for line in printed_table(log))} table lines"
    return f"{len(json_lines(log))} result rows"


# Steps whose scripts print a markdown table and check lines rather than JSON rows.
TABLE_STEPS = ("profile", "sparse", "multivector", "pages")
_CHECK = re.compile(r"max abs diff|DIFFER| / sentence-transformers:")


def printed_table(log: Path) -> list[str]:
    """The markdown table lines a step printed, and its lines comparing vectors or giving ratios."""
    if not log.is_file():
        return []
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    return [line for line in lines if line.startswith("|") or _CHECK.search(line)]


def fmt(value: object, digits: int = 0) -> str:
    """A number for a table cell ('-' when missing or not a number)."""
    return f"{value:,.{digits}f}" if isinstance(value, int | float) and value == value else "-"


def encode_lines(rows: list[dict]) -> list[str]:
    """The encode checks, then sentences/s per model, corpus and run with the ratio to ST's default."""
    lines = []
    for r in rows:
        if "device" in r:
            lines.append(f"- device: {r['device']}, bf16 GEMM {fmt(r.get('bf16_gemm_tflops'))} TFLOP/s")
        elif r.get("check") == "stsb":
            lines.append(f"- STSb test Spearman: fp32 {fmt(r.get('fp32'), 2)}, bf16 {fmt(r.get('bf16'), 2)}")
        elif r.get("check") == "parity":
            lines.append(f"- {r['model']}: fp32 vs sentence-transformers max abs {r['fp32_vs_st_max_abs']:.2e}, "
                         f"bf16 min cosine to fp32 {r['bf16_min_cosine']:.5f}")  # fmt: skip
        elif r.get("check") == "mining":
            lines.append(f"- most similar pair of 10k: {fmt(r['in_process_s'], 2)} s in process, "
                         f"{fmt(r['beyond_import_torch_s'], 2)} s beyond `import torch` in a fresh one")  # fmt: skip
    speed = [r for r in rows if "run" in r]
    if speed:
        lines += ["", "| model | corpus | run | sent/s | x ST default | % bf16 ceiling |"]
        lines += ["|---|---|---|---:|---:|---:|"]
        lines += [f"| {r['model']} | {r['corpus']} | {r['run']} | {fmt(r['sent_s'])} | {fmt(r['x_st'], 2)} "
                  f"| {fmt(r['ceiling_pct'], 1)} |" for r in speed]  # fmt: skip
    return lines


def train_lines(rows: list[dict]) -> list[str]:
    """Training rows: steady pairs/s, wall time, STSb test, projected 1M-pair epoch, peak memory."""
    if not rows:
        return []
    lines = ["| row | setting | pairs/s | wall s | STSb test | 1M-pair epoch min | peak GiB |"]
    lines += ["|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        cells = [r["row"], r["setting"], fmt(r.get("pairs_per_s")), fmt(r.get("seconds"), 1),
                 fmt(r.get("stsb_test"), 2), fmt(r.get("epoch_1M_min"), 1), fmt(r.get("peak_gib"), 2)]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return lines


# Issue 55's targets: (label, target, how the figure is read from the encode / train rows). Higher is better.
TARGETS: tuple[tuple[str, float, str], ...] = (
    ("BERT-base passages bf16, % of the bf16 linear ceiling", 35.0, "bert_ceiling"),
    ("BERT-base passages bf16, x sentence-transformers fp16 bs256", 3.0, "bert_x_half"),
    ("MiniLM passages bf16, sentences/s", 25_000.0, "minilm_passages"),
    ("MiniLM STS sentences bf16, x sentence-transformers' default", 20.0, "minilm_sts_x"),
    ("training BERT-base b16 (best sbert), x fit fp32", 4.0, "train_x_fit"),
    ("training BERT-base b16, bf16 / fp32 pairs/s", 1.3, "bf16_x_fp32"),
    ("cached MNRL (best mini-batch) / plain MNRL pairs/s at 1,024", 0.4, "cached_x_plain"),
)


def target_figures(encode: list[dict], train: list[dict]) -> dict[str, float | None]:
    """Each target's figure from the rows a run left (None where its rows are missing)."""

    def speed(model: str, corpus: str, run: str) -> dict:
        return next((r for r in encode if r.get("model", "").startswith(model) and r.get("corpus") == corpus
                     and r.get("run") == run), {})  # fmt: skip

    def pairs(row: str, setting: str) -> float | None:
        return next((r.get("pairs_per_s") for r in train if r.get("row") == row and r.get("setting") == setting), None)

    def ratio(a: float | None, b: float | None) -> float | None:
        return a / b if a and b else None

    bert = speed("BERT-base", "passages", "sbert bf16")
    bert_half = speed("BERT-base", "passages", "sentence-transformers fp16 bs256")
    bf16, fp32 = pairs("b16", "sbert bf16"), pairs("b16", "sbert fp32")
    best = max((v for v in (bf16, fp32) if v), default=None)
    cached = max((r["pairs_per_s"] for r in train if r.get("row") == "c" and "cached" in r.get("setting", "")
                  and r.get("pairs_per_s")), default=None)  # the best mini-batch size  # fmt: skip
    plain = next((r.get("pairs_per_s") for r in train if r.get("row") == "c" and "cached" not in r.get("setting", "")),
                 None)  # fmt: skip
    return {
        "bert_ceiling": bert.get("ceiling_pct"), "bert_x_half": ratio(bert.get("sent_s"), bert_half.get("sent_s")),
        "minilm_passages": speed("MiniLM", "passages", "sbert bf16").get("sent_s"),
        "minilm_sts_x": speed("MiniLM", "sts", "sbert bf16").get("x_st"),
        "train_x_fit": ratio(best, pairs("b16", "fit fp32")), "bf16_x_fp32": ratio(bf16, fp32),
        "cached_x_plain": ratio(cached, plain),
    }  # fmt: skip


def target_lines(encode: list[dict], train: list[dict]) -> list[str]:
    """Every target row: the figure, the target and the figure's share of it ('not measured' where missing)."""
    figures = target_figures(encode, train)
    lines = ["| target | measured | target | measured / target |", "|---|---:|---:|---:|"]
    for label, target, key in TARGETS:
        value = figures[key]
        shown = "not measured" if value is None else fmt(value, 0 if target >= 100 else 2)
        share = "-" if value is None else f"{value / target:.2f}"
        lines.append(f"| {label} | {shown} | {fmt(target, 0 if target >= 100 else 2)} | {share} |")
    return lines


def run_facts() -> str:
    """The commit, the GPU and the peer library versions this table came from."""
    import importlib.metadata as md
    import subprocess

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    try:
        import torch

        gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    except ImportError:
        gpu = "torch missing"
    versions = []
    for name in ("torch", "transformers", "sentence-transformers"):
        try:
            versions.append(f"{name} {md.version(name)}")
        except md.PackageNotFoundError:
            versions.append(f"{name} missing")
    return f"commit {commit or 'unknown'}, {gpu}, " + ", ".join(versions)


def summary(out: Path) -> str:
    """The whole summary as markdown."""
    parts = ["## GPU check", "", f"- {run_facts()}", "", *step_lines(out)]
    encode_rows = json_lines(out / "encode.log")
    train_rows = [r for r in json_lines(out / "train.log") if "row" in r and "setting" in r]
    if encode_rows or train_rows:
        parts += ["", "### Targets", "", *target_lines(encode_rows, train_rows)]
    encode = encode_lines(encode_rows)
    if encode:
        parts += ["", "### Encode", "", *encode]
    train = train_lines(train_rows)
    if train:
        parts += ["", "### Training", "", *train]
    for step in TABLE_STEPS:
        table = printed_table(out / f"{step}.log")
        if table:
            parts += ["", f"### {step.capitalize()}", "", *table]
    return "\n".join(parts) + "\n"


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) == 2 else sys.exit("usage: gpu_summary.py OUT_DIR")
    text = summary(out)
    (out / "summary.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
