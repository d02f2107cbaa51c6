"""calculators.web.render: tables, charts and CSV from real results."""

from __future__ import annotations

import csv
import io
import re
import xml.etree.ElementTree as ET

import pytest

from calculators.units import format_gib
from calculators.web import CALCULATORS, compute, render_result, to_csv
from calculators.web.render import flatten, html_table, stacked_bar_svg


@pytest.mark.parametrize("name", sorted(CALCULATORS))
def test_every_result_renders_with_a_table(name: str) -> None:
    html = render_result(name, compute(name))
    assert "<table" in html


def test_envelope_chart_marks_the_card() -> None:
    r = compute("envelope", {"model": "llama-3.1-8b", "gpu": "l40s", "context": 8192})
    html = render_result("envelope", r)
    svg = html[html.index("<svg") : html.index("</svg>") + 6]
    root = ET.fromstring(svg)  # well-formed XML
    assert root.tag.endswith("svg")
    assert format_gib(r["visible_bytes"]) in svg
    assert format_gib(r["total_bytes"]) in svg
    assert "<line" in svg  # the usable-memory marker


def test_stacked_bar_widths_are_proportional() -> None:
    svg = stacked_bar_svg([("a", 3 * 2**30), ("b", 2**30)], capacity=8 * 2**30)
    widths = [float(w) for w in re.findall(r'<rect x="[^"]+" y="30" width="([^"]+)"', svg)]
    assert widths[0] == pytest.approx(3 * widths[1])
    assert sum(widths) == pytest.approx(620 * 4 / 8)


def test_budget_chart_has_a_bar_per_day_and_phase() -> None:
    r = compute("budget")
    html = render_result("budget", r)
    bars = html.count("<title>day ")
    assert bars == sum(len(day) for day in r["schedule"])


def test_table_escapes_cells() -> None:
    assert "&lt;b&gt;" in html_table(["x"], [["<b>"]])


def test_csv_round_trips_every_scalar() -> None:
    r = compute("kv-cache", {"model": "gemma-2-9b", "context": 8192})
    rows = list(csv.reader(io.StringIO(to_csv(r))))
    assert rows[0] == ["field", "value"]
    table = dict(rows[1:])
    assert table["total_bytes"] == str(r["total_bytes"])
    assert table["lines.1.attention"] == r["lines"][1]["attention"]
    assert len(rows) - 1 == len(flatten(r))
