"""Draw the benchmark charts (docs/figures/*.svg) from the benchmarks' own JSON output: `make charts`.

Each chart reads one JSON file a benchmark script wrote with its `--json` / `--output` flag, copied into
docs/figures/ beside the chart (the file is the record: its CPU, its settings, every rate). The SVG is
written by hand (horizontal bars, the value at the end of each bar, a dashed line for a ceiling where the
benchmark measured one), so the same JSON always gives the same bytes; tests/test_charts.py checks the
committed charts are what this draws. A chart whose JSON is absent (a GPU run not yet made) is skipped.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "docs" / "figures"
WIDTH, LABEL, BAR, GAP, TOP = 720, 230, 22, 10, 58


@dataclass(frozen=True)
class Chart:
    """What one chart shows: a title, a unit, (label, value) bars and an optional ceiling line."""

    title: str
    subtitle: str
    unit: str
    bars: list[tuple[str, float]]
    ceiling: tuple[str, float] | None = None


def svg(chart: Chart) -> str:
    """The chart as a standalone SVG document."""
    top = max([v for _, v in chart.bars] + ([chart.ceiling[1]] if chart.ceiling else []))
    scale = (WIDTH - LABEL - 90) / top
    height = TOP + len(chart.bars) * (BAR + GAP) + 30
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
             f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="13">',
             f'<rect width="{WIDTH}" height="{height}" fill="white"/>',
             f'<text x="10" y="22" font-size="16" font-weight="bold">{escape(chart.title)}</text>',
             f'<text x="10" y="42" fill="#555">{escape(chart.subtitle)}</text>']  # fmt: skip
    for i, (label, value) in enumerate(chart.bars):
        y = TOP + i * (BAR + GAP)
        colour = "#1f6feb" if label.startswith("sbert") else "#8b949e"
        parts += [f'<text x="{LABEL - 8}" y="{y + 16}" text-anchor="end">{escape(label)}</text>',
                  f'<rect x="{LABEL}" y="{y}" width="{value * scale:.1f}" height="{BAR}" fill="{colour}"/>',
                  f'<text x="{LABEL + value * scale + 6:.1f}" y="{y + 16}">'
                  f'{_number(value)} {escape(chart.unit)}</text>']  # fmt: skip
    if chart.ceiling is not None:
        name, value = chart.ceiling
        x = LABEL + value * scale
        parts += [f'<line x1="{x:.1f}" y1="{TOP - 6}" x2="{x:.1f}" y2="{height - 24}" stroke="#d1242f" '
                  'stroke-dasharray="5,4"/>',
                  f'<text x="{x:.1f}" y="{height - 8}" text-anchor="middle" fill="#d1242f">'
                  f'{escape(name)}: {_number(value)}</text>']  # fmt: skip
    return "\n".join([*parts, "</svg>"]) + "\n"


def _number(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.2f}" if value < 10 else f"{value:.1f}"


def _cpu(record: dict[str, Any]) -> str:
    facts = record.get("cpu") or {}
    flags = set(facts.get("cpu_flags", []))
    has = [name for name, flag in (("AVX-512 BF16", "avx512_bf16"), ("VNNI", "avx512_vnni"), ("AMX", "amx_tile"))
           if flag in flags]  # fmt: skip
    return f"{facts.get('cpu', '?')}, {facts.get('cores', '?')} cores" + (f" ({', '.join(has)})" if has else "")


def encode_chart(record: dict[str, Any]) -> Chart:
    """benchmarks/speed/encode_speed.py --output: each engine against sentence-transformers and the fp32 ceiling."""
    bars = [(name, row["sentences_per_second"]) for name, row in record["backends"].items()]
    return Chart("all-MiniLM-L6-v2 on the CPU: STS test sentences a second",
                 f"{record['sentences']:,} sentences, same run, median; {_cpu(record)}", "/s", bars,
                 ("fp32 GEMM ceiling", record["fp32_ceiling_sentences_per_second"]))  # fmt: skip


def rates_chart(title: str, unit: str, key: str) -> Callable[[dict[str, Any]], Chart]:
    """A chart of `--json` rates (image and page benchmarks): one bar a contender."""

    def draw(record: dict[str, Any]) -> Chart:
        bars = [(name, row[key]) for name, row in record["rates"].items()]
        return Chart(title, f"same run, median; {_cpu(record)}", unit, bars)

    return draw


def page_chart(record: dict[str, Any]) -> Chart:
    """benchmarks/speed/page_encode_speed.py --json: seconds a page (a page is tens of seconds on a CPU)."""
    bars = [(name, 1 / row["pages_per_s"]) for name, row in record["rates"].items()]
    return Chart("ColPali (PaliGemma-3B) shape on the CPU: seconds a page, lower is faster",
                 f"one page a call, median of {record['pages']}; {_cpu(record)}", "s", bars)  # fmt: skip


CHARTS: dict[str, tuple[str, Callable[[dict[str, Any]], Chart]]] = {
    "encode-cpu.svg": ("encode_speed.json", encode_chart),
    "images-siglip-cpu.svg": ("image_siglip.json", rates_chart("SigLIP-base shape on the CPU: images a second",
                                                              "/s", "images_per_s")),
    "pages-colpali-cpu.svg": ("page_colpali.json", lambda record: page_chart(record)),
}  # fmt: skip


def charts() -> dict[str, str]:
    """Chart file name -> SVG text, for every chart whose JSON is in docs/figures/."""
    out = {}
    for name, (source, draw) in CHARTS.items():
        path = FIGURES / source
        if path.is_file():
            out[name] = svg(draw(json.loads(path.read_text(encoding="utf-8"))))
    return out


def main() -> None:
    """Write every chart beside its JSON."""
    drawn = charts()
    for name, text in drawn.items():
        (FIGURES / name).write_text(text, encoding="utf-8")
    print(f"drew {len(drawn)} charts in {FIGURES.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
