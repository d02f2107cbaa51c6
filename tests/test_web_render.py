"""calculators.web.render: tables, charts and CSV from real results."""

from __future__ import annotations

import csv
import io
import re
import xml.etree.ElementTree as ET

import pytest

from calculators.units import GIB, format_gib
from calculators.web import CALCULATORS, compute, render_result, to_csv
from calculators.web.render import (
    FONT,
    NARROW,
    WIDE,
    flatten,
    html_table,
    interval_svg,
    phase_bars_svg,
    schedule_svg,
    stacked_bar_svg,
)
from calculators.web.render import _width as text_width

SVG = "{http://www.w3.org/2000/svg}"


def svgs(html: str) -> list[ET.Element]:
    """Every <svg> in `html`, parsed (each must be well-formed XML)."""
    return [ET.fromstring(m) for m in re.findall(r"<svg\b.*?</svg>", html)]


def layouts(html: str) -> dict[str, ET.Element]:
    """The chart's two drawings by layout; they come in one `kd-charts` box."""
    assert html.startswith('<div class="kd-charts">') and html.endswith("</div>")
    found = {s.get("class", "").split("kd-chart-")[-1]: s for s in svgs(html)}
    assert set(found) == {"wide", "narrow"}
    return found


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
    assert "kd-chart-wide" in root.get("class", "")
    assert format_gib(r["visible_bytes"]) in svg
    assert format_gib(r["total_bytes"]) in svg
    assert "<line" in svg  # the usable-memory marker


@pytest.mark.parametrize(("layout", "width"), [("wide", WIDE), ("narrow", NARROW)])
def test_stacked_bar_widths_are_proportional(layout: str, width: int) -> None:
    html = stacked_bar_svg([("a", 3 * 2**30), ("b", 2**30)], capacity=8 * 2**30)
    svg = ET.tostring(layouts(html)[layout], encoding="unicode")
    widths = [float(w) for w in re.findall(r'<[^>]*rect x="[^"]+" y="30" width="([^"]+)"', svg)]
    assert widths[0] == pytest.approx(3 * widths[1])
    assert sum(widths) == pytest.approx((width - 20) * 4 / 8)


def test_budget_chart_has_a_bar_per_day_and_phase() -> None:
    r = compute("budget")
    for svg in layouts(schedule_html(r)).values():
        bars = [t.text for t in svg.iter(f"{SVG}title") if (t.text or "").startswith("day ")]
        assert len(bars) == sum(len(day) for day in r["schedule"])


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


def schedule_html(r: dict) -> str:
    html = render_result("budget", r)
    return html[html.index('<div class="kd-charts">') : html.index("</svg></div>") + 12]


LONG = "a label far too long for any column of any layout, " * 4

# every chart, with labels and numbers longer than any page gives them
CHARTS = {
    "stacked bar": stacked_bar_svg(
        [(LONG, 5 * GIB), ("b", GIB), ("sliding_attention_layers_with_a_window_of_4096", GIB)],
        capacity=3 * GIB,
        capacity_label="visible on " + LONG,
        title=LONG,
    ),
    "stacked bar, one segment": stacked_bar_svg([("x", 1)]),
    "schedule, 200 periods": schedule_svg(
        [{LONG: 1e6 * i, "b": 3.0} for i in range(200)], [LONG, "b"], 30
    ),
    "schedule, 1 period": schedule_svg([{"x": 1e300}], ["x"], 730),
    "schedule, empty": schedule_svg([], []),
    "phase bars": phase_bars_svg(
        [(LONG, 2**60), ("after load + reserves", GIB)], 80 * GIB, "visible on " + LONG
    ),
    "interval": interval_svg(-123456.789, -0.000123456, -5e4, 0.95),
    "interval, ends close": interval_svg(1234.5678, 1234.5679, 1234.56785, 0.99),
    "interval, at zero": interval_svg(0.0, 0.0, 0.0, 0.9),
}


def _number(el: ET.Element, name: str) -> float:
    return float(el.get(name, "0"))


@pytest.mark.parametrize("name", sorted(CHARTS))
def test_nothing_is_drawn_outside_the_chart(name: str) -> None:
    for layout, svg in layouts(CHARTS[name]).items():
        _, _, width, height = (float(v) for v in svg.get("viewBox", "").split())
        assert width == {"wide": WIDE, "narrow": NARROW}[layout]
        assert svg.get("font-size") == str(FONT)
        for t in svg.iter(f"{SVG}text"):
            w = text_width(t.text or "")
            start = (
                _number(t, "x")
                - {"start": 0, "middle": w / 2, "end": w}[t.get("text-anchor", "start")]
            )
            assert start >= 0 and start + w <= width, (layout, t.text)
            assert FONT <= _number(t, "y") <= height - 3, (layout, t.text)
        for r in svg.iter(f"{SVG}rect"):
            assert _number(r, "x") >= 0 and _number(r, "x") + _number(r, "width") <= width + 1e-6
            assert _number(r, "y") >= 0 and _number(r, "y") + _number(r, "height") <= height
        for line in svg.iter(f"{SVG}line"):
            for x in ("x1", "x2"):
                assert 0 <= _number(line, x) <= width
            for y in ("y1", "y2"):
                assert 0 <= _number(line, y) <= height


@pytest.mark.parametrize("name", sorted(CHARTS))
def test_both_layouts_carry_the_same_title_and_data(name: str) -> None:
    wide, narrow = layouts(CHARTS[name]).values()

    def data(svg: ET.Element) -> list[str]:
        return [t.text or "" for el in svg.iter() for t in el.findall(f"{SVG}title")]

    assert wide.findtext(f"{SVG}title") == narrow.findtext(f"{SVG}title") != ""
    shapes = ("rect", "line", "circle")
    assert sorted(
        t.text or "" for s in shapes for el in wide.iter(f"{SVG}{s}") for t in el
    ) == sorted(t.text or "" for s in shapes for el in narrow.iter(f"{SVG}{s}") for t in el)
    assert data(wide)


def test_a_cut_label_keeps_its_whole_text_as_a_tooltip() -> None:
    narrow = layouts(CHARTS["phase bars"])["narrow"]
    cut = [t for t in narrow.iter(f"{SVG}text") if (t.text or "").endswith("\u2026")]
    assert len(cut) == 2  # a phase's name, the card's
    assert all(LONG in (t.findtext(f"{SVG}title") or "") for t in cut)


@pytest.mark.parametrize(
    ("days", "axis", "hover"),
    [
        (1, "GPU-hours per day; days 1 to 3", "day 3, b: 3.0 GPU-hours"),
        (7, "GPU-hours per week; weeks 1 to 3", "week 3, b: 3.0 GPU-hours"),
        (30, "GPU-hours per 30 days; periods 1 to 3", "period 3 (days 61 to 90), b: 3.0"),
        (365, "GPU-hours per year; years 1 to 3", "year 3, b: 3.0 GPU-hours"),
        (730, "GPU-hours per 2 years; periods 1 to 3", "period 3 (years 5 to 6), b: 3.0"),
    ],
)
def test_schedule_names_its_period(days: int, axis: str, hover: str) -> None:
    html = schedule_svg([{"a": 1.0, "b": 3.0}] * 3, ["a", "b"], days)
    for svg in layouts(html).values():
        texts = " ".join(t.text or "" for t in svg.iter(f"{SVG}text"))
        assert axis in texts
        assert any(hover in (t.text or "") for t in svg.iter(f"{SVG}title"))
        assert (svg.findtext(f"{SVG}title") or "").startswith(axis.split(";")[0])


def test_schedule_refuses_a_period_that_is_not_a_positive_integer() -> None:
    for bad in (0, -7, 1.5, True):
        with pytest.raises(ValueError, match="period_days"):
            schedule_svg([], [], bad)  # type: ignore[arg-type]


def test_budget_page_passes_the_schedule_period_on() -> None:
    r = compute("budget")
    r = {**r, "schedule_period_days": 7}
    assert "GPU-hours per week; weeks 1 to" in schedule_html(r)
    r.pop("schedule_period_days")
    assert "GPU-hours per day; days 1 to" in schedule_html(r)


@pytest.mark.parametrize("periods", [1, 200])
def test_schedule_draws_every_period_at_any_count(periods: int) -> None:
    html = schedule_svg([{"a": 2.0, "b": 1.0}] * periods, ["a", "b"], 7)
    for svg in layouts(html).values():
        bars = [r for r in svg.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None]
        assert len(bars) == 2 * periods
        assert all(_number(r, "width") > 0 for r in bars)
        assert len(html) < 200_000
