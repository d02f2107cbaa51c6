"""calculators.web.render: tables, charts and CSV from real results."""

from __future__ import annotations

import csv
import io
import math
import re
import xml.etree.ElementTree as ET
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculators.units import GIB, format_gib
from calculators.web import CALCULATORS, compute, render_result, to_csv
from calculators.web.render import (
    DASHES,
    FONT,
    NARROW,
    PALETTE,
    WIDE,
    X_TICKS,
    Y_TICKS,
    bar_chart_svg,
    flatten,
    html_table,
    interval_svg,
    line_chart_svg,
    nice_step,
    phase_bars_svg,
    power_of_two_text,
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


# ---- line charts and plain bar charts ---------------------------------------------------


def polyline_points(line: ET.Element) -> list[tuple[float, float]]:
    """The (x, y) vertices of a <polyline>."""
    return [(float(x), float(y)) for x, y in (p.split(",") for p in line.get("points", "").split())]


def plot_area(svg: ET.Element) -> tuple[float, float, float, float]:
    """The line chart's plot area, (left, top, right, bottom), from its kd-plot rect."""
    (area,) = [r for r in svg.iter(f"{SVG}rect") if r.get("class") == "kd-plot"]
    x, y = _number(area, "x"), _number(area, "y")
    return x, y, x + _number(area, "width"), y + _number(area, "height")


def tick_texts(svg: ET.Element, anchor: str) -> list[str]:
    """The texts drawn with `anchor`: the y axis's ticks are right-aligned ('end'), the x
    axis's centred under their ticks ('middle')."""
    return [t.text or "" for t in svg.iter(f"{SVG}text") if t.get("text-anchor") == anchor]


def expected_ticks(lo: float, hi: float, count: int) -> list[str]:
    """The 1-2-5 rule written out on its own: the step is the first of 1, 2, 5, 10, 20,
    50, ... (and their tenths) at least (hi - lo) / count; ticks run over the multiples of
    the step from the last at or below lo to the first at or above hi, labelled with as
    many decimals as the step has."""
    candidates = sorted(m * 10.0**k for k in range(-6, 10) for m in (1, 2, 5))
    step = next(c for c in candidates if c >= (hi - lo) / count)
    decimals = max(0, -math.floor(math.log10(step)))
    first, last = round(math.floor(lo / step)), round(math.ceil(hi / step))
    return [f"{i * step:,.{decimals}f}" for i in range(first, last + 1)]


SERIES = [
    ("bf16", [(1.0, 3.0), (2.0, 5.0), (3.0, 4.0)]),
    ("fp8", [(1.0, 1.0), (1.5, 2.0), (2.0, 2.5), (2.5, 3.5), (3.0, 6.0)]),
    ("one point", [(2.0, 0.5)]),
]


def test_line_chart_draws_one_line_per_series_with_its_points() -> None:
    html = line_chart_svg(SERIES, x_label="x", y_label="y", title="t")
    for svg in layouts(html).values():
        lines = list(svg.iter(f"{SVG}polyline"))
        assert [len(polyline_points(line)) for line in lines] == [len(p) for _, p in SERIES]
        assert [line.get("stroke") for line in lines] == list(PALETTE[: len(SERIES)])
        # a dash pattern per series (the first solid): told apart without colour
        assert [line.get("stroke-dasharray", "") for line in lines] == list(DASHES[: len(SERIES)])
        assert len(list(svg.iter(f"{SVG}circle"))) == sum(len(p) for _, p in SERIES)
        legend = [t.text for t in svg.iter(f"{SVG}text")]
        assert all(name in legend for name, _ in SERIES)


def test_line_chart_points_are_drawn_in_x_order() -> None:
    html = line_chart_svg(
        [("s", [(3.0, 1.0), (1.0, 2.0), (2.0, 3.0)])], x_label="x", y_label="y", title="t"
    )
    for svg in layouts(html).values():
        (line,) = svg.iter(f"{SVG}polyline")
        xs = [x for x, _ in polyline_points(line)]
        assert xs == sorted(xs)


def test_each_point_carries_its_values_as_a_tooltip() -> None:
    html = line_chart_svg(
        SERIES, x_label="context", y_label="y", title="t", y_format=lambda v: f"{v:.3f} GiB"
    )
    for svg in layouts(html).values():
        tips = [c.findtext(f"{SVG}title") for c in svg.iter(f"{SVG}circle")]
        assert tips == [
            f"{name}: {y:.3f} GiB at context = {x:g}" for name, points in SERIES for x, y in points
        ]


@pytest.mark.parametrize(
    ("y_max", "y_min"),
    [(37.0, 0.0), (0.83, 0.0), (3.0, -12.0), (2500.0, 40.0), (1.0, 1.0)],
)
def test_linear_y_ticks_follow_the_1_2_5_rule(y_max: float, y_min: float) -> None:
    html = line_chart_svg(
        [("s", [(0.0, y_min), (1.0, y_max)])], x_label="x", y_label="y", title="t"
    )
    # the y axis always takes in 0
    lo, hi = min(0.0, y_min), max(0.0, y_max)
    for svg in layouts(html).values():
        assert tick_texts(svg, "end") == expected_ticks(lo, hi, Y_TICKS)


@pytest.mark.parametrize(("x_min", "x_max"), [(3.0, 47.0), (0.01, 0.37), (-5.0, 1000.0)])
def test_linear_x_ticks_follow_the_1_2_5_rule(x_min: float, x_max: float) -> None:
    html = line_chart_svg(
        [("s", [(x_min, 1.0), (x_max, 2.0)])], x_label="x", y_label="y", title="t"
    )
    for layout, svg in layouts(html).items():
        count = X_TICKS[{"wide": WIDE, "narrow": NARROW}[layout]]
        assert tick_texts(svg, "middle") == expected_ticks(x_min, x_max, count)


def test_nice_step_is_the_smallest_1_2_5_step_at_least_span_over_count() -> None:
    # 37 / 5 = 7.4: 5 is under it, 10 the next; 0.83 / 5 = 0.166: 0.2; 1000 / 4 = 250: 500
    assert nice_step(37, 5) == 10
    assert nice_step(0.83, 5) == pytest.approx(0.2)
    assert nice_step(1000, 4) == 500
    assert nice_step(50, 5) == 10  # exactly a 1-2-5 value: itself


def test_log2_axis_is_ticked_at_powers_of_two() -> None:
    contexts = [2**k for k in range(12, 18)]  # 4096 to 131072
    html = line_chart_svg(
        [("s", [(c, c / 1000) for c in contexts])],
        x_label="context",
        y_label="y",
        title="t",
        x_log2=True,
    )
    # 2^k tokens is 2^(k-10) K: 4K for 2^12, 128K for 2^17
    expected = [f"{2 ** (k - 10)}K" for k in range(12, 18)]
    assert expected[0] == "4K" and expected[-1] == "128K"
    for svg in layouts(html).values():
        assert tick_texts(svg, "middle") == expected
        # doubling the context moves the same distance along the axis
        (line,) = svg.iter(f"{SVG}polyline")
        xs = [x for x, _ in polyline_points(line)]
        gaps = [b - a for a, b in pairwise(xs)]
        assert max(gaps) - min(gaps) < 0.02


def test_powers_of_two_take_binary_prefixes() -> None:
    assert power_of_two_text(9) == str(2**9)
    assert power_of_two_text(10) == "1K"
    assert power_of_two_text(17) == f"{2**17 // 2**10}K"
    assert power_of_two_text(20) == "1M"
    assert power_of_two_text(-1) == "0.5"


def test_reference_lines_are_dashed_and_labelled() -> None:
    html = line_chart_svg(
        SERIES,
        x_label="x",
        y_label="y",
        title="t",
        hlines=[("visible on the card", 79.25)],
        y_format=lambda v: f"{v:.2f} GiB",
    )
    for svg in layouts(html).values():
        marked = [
            line for line in svg.iter(f"{SVG}line") if line.findtext(f"{SVG}title") is not None
        ]
        (mark,) = marked
        assert mark.findtext(f"{SVG}title") == "visible on the card: 79.25 GiB"
        assert mark.get("stroke-dasharray")
        assert "visible on the card: 79.25 GiB" in [t.text for t in svg.iter(f"{SVG}text")]
        # the axis reaches past the line: 79.25 / 5 = 15.85 a tick, so 20 apart, up to 80
        assert tick_texts(svg, "end")[-1] == "80"


@pytest.mark.parametrize(
    ("series", "hlines", "log2", "blamed"),
    [
        ([], (), False, "series"),
        ([("empty", [])], (), False, "series"),
        ([("s", [(1.0, math.nan)])], (), False, "series"),
        ([("s", [(math.inf, 1.0)])], (), False, "series"),
        ([("s", [(1.0, 1.0)])], [("card", math.nan)], False, "hlines"),
        ([("s", [(0.0, 1.0)])], (), True, "series"),
        ([("s", [(-4.0, 1.0)])], (), True, "series"),
    ],
)
def test_line_chart_refuses_what_it_cannot_draw(
    series: list, hlines: list, log2: bool, blamed: str
) -> None:
    with pytest.raises(ValueError, match=blamed):
        line_chart_svg(series, x_label="x", y_label="y", title="t", x_log2=log2, hlines=hlines)


FINITE = st.floats(min_value=-1e9, max_value=1e9, allow_nan=False, allow_infinity=False)
POSITIVE = st.floats(min_value=1e-3, max_value=1e9, allow_nan=False, allow_infinity=False)


@st.composite
def chart_data(draw: st.DrawFn) -> tuple[list, list, bool]:
    """1 to 4 series of 1 to 8 points, reference lines, and whether x is on a log2 axis."""
    log2 = draw(st.booleans())
    point = st.tuples(POSITIVE if log2 else FINITE, FINITE)
    # any printable text: control characters have no place in XML (nor in any name here)
    names = st.text(st.characters(exclude_categories=("Cc", "Cs")), min_size=1, max_size=40)
    series = draw(
        st.lists(st.tuples(names, st.lists(point, min_size=1, max_size=8)), min_size=1, max_size=4)
    )
    hlines = draw(st.lists(st.tuples(names, FINITE), max_size=2))
    return series, hlines, log2


@settings(max_examples=150, deadline=None)
@given(chart_data())
def test_every_point_lies_inside_the_plot_area(data: tuple[list, list, bool]) -> None:
    series, hlines, log2 = data
    html = line_chart_svg(series, x_label="x", y_label="y", title="t", x_log2=log2, hlines=hlines)
    slack = 0.01  # coordinates are written to two decimals
    for svg in layouts(html).values():
        left, top, right, bottom = plot_area(svg)
        assert right - left > 0 and bottom - top > 0
        points = [p for line in svg.iter(f"{SVG}polyline") for p in polyline_points(line)]
        points += [(_number(c, "cx"), _number(c, "cy")) for c in svg.iter(f"{SVG}circle")]
        assert len(points) == 2 * sum(len(p) for _, p in series)
        for x, y in points:
            assert left - slack <= x <= right + slack and top - slack <= y <= bottom + slack
        _, _, width, _ = (float(v) for v in svg.get("viewBox", "").split())
        for t in svg.iter(f"{SVG}text"):  # and every label inside the drawing
            w = text_width(t.text or "")
            start = (
                _number(t, "x")
                - {"start": 0, "middle": w / 2, "end": w}[t.get("text-anchor", "start")]
            )
            assert -slack <= start and start + w <= width + slack, t.text


def test_bar_chart_draws_one_labelled_bar_per_value() -> None:
    bars = [("bf16", 16 * GIB), ("int8", 8 * GIB), ("nf4", 5 * GIB)]
    html = bar_chart_svg(bars, title="weights by format", unit_label="weights, GiB")
    for svg in layouts(html).values():
        rects = [r for r in svg.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None]
        assert [r.findtext(f"{SVG}title") for r in rects] == [
            f"{name}: {format_gib(b)}" for name, b in bars
        ]
        widths = [_number(r, "width") for r in rects]
        # widths are written to two decimals, each off by up to 0.005
        assert widths[0] == pytest.approx(16 / 8 * widths[1], abs=0.02)
        assert widths[0] == pytest.approx(16 / 5 * widths[2], abs=0.02)
        assert not list(svg.iter(f"{SVG}line"))  # no capacity is marked
        assert "weights, GiB" in [t.text for t in svg.iter(f"{SVG}text")]
        assert svg.findtext(f"{SVG}title") == "weights by format"


def test_bar_chart_formats_values_its_own_way() -> None:
    html = bar_chart_svg(
        [("a", 0.25), ("b", 0.5)], title="t", value_format=lambda v: f"{v:.0%}", unit_label="share"
    )
    for svg in layouts(html).values():
        texts = [t.text for t in svg.iter(f"{SVG}text")]
        assert "25%" in texts and "50%" in texts


@pytest.mark.parametrize("bars", [[], [("a", -1)], [("a", math.nan)], [("a", math.inf)]])
def test_bar_chart_refuses_what_it_cannot_draw(bars: list) -> None:
    with pytest.raises(ValueError, match="bars"):
        bar_chart_svg(bars, title="t", unit_label="u")


# The new charts, with labels and numbers longer than any page gives them, held to the
# same checks as CHARTS above (nothing outside the drawing, both layouts alike).
NEW_CHARTS = {
    "line chart": line_chart_svg(
        [(LONG, [(1.0, 2e12), (2.0, 3e12)]), ("b", [(1.5, -4.0)])],
        x_label=LONG,
        y_label=LONG,
        title=LONG,
        hlines=[(LONG, 5e11)],
    ),
    "line chart, log2": line_chart_svg(
        [(f"s{i}", [(2**k, k * i) for k in range(10, 18)]) for i in range(9)],
        x_label="context (tokens)",
        y_label="memory (GiB)",
        title="t",
        x_log2=True,
        hlines=[("visible on h100-sxm", 79.2)],
    ),
    "bar chart": bar_chart_svg([(LONG, 2**60), ("b", GIB)], title=LONG, unit_label="unit " + LONG),
}


@pytest.mark.parametrize("name", sorted(NEW_CHARTS))
def test_new_charts_pass_the_checks_every_chart_does(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(CHARTS, name, NEW_CHARTS[name])
    test_nothing_is_drawn_outside_the_chart(name)
    test_both_layouts_carry_the_same_title_and_data(name)


def test_many_series_keep_distinct_colour_and_dash_pairs() -> None:
    count = len(PALETTE) * len(DASHES)  # coprime lengths: every pair once
    html = line_chart_svg(
        [(f"s{i}", [(1.0, float(i))]) for i in range(count)], x_label="x", y_label="y", title="t"
    )
    for svg in layouts(html).values():
        styles = {
            (line.get("stroke"), line.get("stroke-dasharray", ""))
            for line in svg.iter(f"{SVG}polyline")
        }
        assert len(styles) == count


# ---- checklist_svg: the preflight report's checks --------------------------------------
# (imports inside the functions: this section is appended to the module as it stood)

PREFLIGHT = "docs/data/validation/cpu-preflight-tiny-llama.json"


def _preflight_checks() -> list[dict]:
    """The committed CPU preflight report's checks."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    return json.loads((root / PREFLIGHT).read_text(encoding="utf-8"))["details"]["checks"]


def _marks(svg: ET.Element) -> list[tuple[str, str]]:
    """Each mark's tooltip and fill, in drawing order."""
    return [(c.findtext(f"{SVG}title") or "", c.get("fill", "")) for c in svg.iter(f"{SVG}circle")]


def _drawn_text(svg: ET.Element) -> str:
    """The visible text, lines joined by spaces, and the tooltips of cut lines after it."""
    shown = " ".join(t.text or "" for t in svg.iter(f"{SVG}text"))
    tips = " ".join(t.findtext(f"{SVG}title") or "" for t in svg.iter(f"{SVG}text"))
    return f"{shown} {tips}"


def test_checklist_draws_the_committed_report_one_row_per_check() -> None:
    from calculators.web.render import CHECK_MARKS, checklist_svg

    checks = _preflight_checks()
    html = checklist_svg(checks)
    for layout, svg in layouts(html).items():
        marks = _marks(svg)
        assert [tip for tip, _ in marks] == [
            f"check {c['number']} {c['id']}: {c['status']}" for c in checks
        ]
        assert [fill for _, fill in marks] == [CHECK_MARKS[c["status"]][0] for c in checks]
        text = _drawn_text(svg)
        passed = sum(c["status"] == "pass" for c in checks)
        assert text.startswith(f"{passed} passed, ")
        for c in checks:
            assert f"{c['number']}. {c['title']}" in text, (layout, c["id"])
            # the summary is drawn whole (its wrapped lines joined), or is the tooltip of
            # a line that had to be cut
            assert c["summary"] in text, (layout, c["id"])
        # one row per check, down the drawing in the report's order
        ys = [float(c.get("cy", "0")) for c in svg.iter(f"{SVG}circle")]
        assert ys == sorted(ys) and len(set(ys)) == len(ys) == len(checks)


def test_checklist_marks_a_failure_and_a_skip_with_their_reason() -> None:
    from calculators.web.render import CHECK_MARKS, checklist_svg

    checks = _preflight_checks()[:3]
    checks[1] = {**checks[1], "status": "fail", "look_at": "a detach() in the path"}
    skip = "not selected (--checks)"
    checks[2] = {**checks[2], "status": "skipped", "summary": skip, "look_at": skip}
    for svg in layouts(checklist_svg(checks)).values():
        assert [fill for _, fill in _marks(svg)] == [PALETTE[2], PALETTE[5], "none"]
        text = _drawn_text(svg)
        assert text.startswith("1 passed, 1 failed, 1 skipped")
        assert "2. Gradients reach what should train (failed)" in text
        assert "look at: a detach() in the path" in text
        assert "3. Overfit one batch (skipped)" in text
        assert text.count(skip) == 1  # the reason is the summary: not drawn twice
        # a shape as well as a colour: a tick, a cross and a dash
        assert [p.get("d") for p in svg.iter(f"{SVG}path")] == [
            CHECK_MARKS[s][1] for s in ("pass", "fail", "skipped")
        ]


@pytest.mark.parametrize(
    ("items", "complaint"),
    [
        ([], "no checks"),
        ([{"status": "passed", "title": "t"}], "check 1 has status 'passed'"),
        ([{"status": "pass", "title": "t"}, {"status": "fail", "title": " "}], "check 2 has no"),
    ],
)
def test_checklist_refuses_what_it_cannot_draw(items: list, complaint: str) -> None:
    from calculators.web.render import checklist_svg

    with pytest.raises(ValueError, match=complaint):
        checklist_svg(items)


def test_checklist_passes_the_checks_every_chart_does(monkeypatch: pytest.MonkeyPatch) -> None:
    from calculators.web.render import checklist_svg

    long_fail = {"id": LONG, "title": LONG, "summary": LONG, "look_at": LONG}
    items = [
        {"number": 1, "status": "fail", **long_fail},
        {"number": 2, "id": "x", "title": "x", "status": "skipped", "summary": "", "look_at": "y"},
        *_preflight_checks(),
    ]
    monkeypatch.setitem(CHARTS, "checklist", checklist_svg(items, title=LONG))
    test_nothing_is_drawn_outside_the_chart("checklist")
    test_both_layouts_carry_the_same_title_and_data("checklist")
