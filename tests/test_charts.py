"""The benchmark charts (docs/figures/*.svg) are what tools/charts.py draws from the benchmarks' JSON beside them,
each bar a rate that JSON holds, and the README shows the headline chart."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import charts  # noqa: E402  (tools/ is not a package)


def test_the_committed_charts_are_what_the_script_draws():
    drawn = charts.charts()
    assert "encode-cpu.svg" in drawn  # the headline chart's JSON is committed
    for name, text in drawn.items():
        assert (charts.FIGURES / name).read_text(encoding="utf-8") == text, f"{name}: run make charts"


def test_each_bar_is_a_rate_of_its_json():
    for name, (source, draw) in charts.CHARTS.items():
        path = charts.FIGURES / source
        if not path.is_file():
            continue
        chart = draw(json.loads(path.read_text(encoding="utf-8")))
        text = (charts.FIGURES / name).read_text(encoding="utf-8")
        for label, value in chart.bars:
            assert f">{label}</text>" in text and charts._number(value) in text
        assert len(re.findall(r"<rect x=", text)) == len(chart.bars)


def test_the_readme_shows_the_headline_chart():
    assert "](docs/figures/encode-cpu.svg)" in (ROOT / "README.md").read_text(encoding="utf-8")
