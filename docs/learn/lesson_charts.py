"""Charts for the lessons, drawn by the site's own SVG code (calculators/web/render.py) so
that a lesson's plot looks like a calculator's: text and axes in the page's colour
(`currentColor`, readable in dark mode), one colour and dash pattern per line, and a
narrow drawing for phones. No plotting library is needed.

A downloaded lesson reads the calculators from calculators.zip beside it (the lessons'
index lists it); in a clone of the repository, from the clone.

    import lesson_charts as charts
    charts.show(charts.lines({"SGD": [(0, 4.5), (1, 3.9)]}, title=..., x_label=..., y_label=...))
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_BUNDLED = _HERE / "calculators.zip"
sys.path.insert(0, str(_BUNDLED if _BUNDLED.exists() else _HERE.parents[1]))

from calculators.web.render import bar_chart_svg, line_chart_svg  # noqa: E402

# The site's stylesheet picks one of the two drawings by the box's width; outside the site
# (a downloaded notebook in Jupyter) these rules do the same, so one chart shows, not two.
STYLE = (
    "<style>.kd-charts{container-type:inline-size}.kd-chart{width:100%;height:auto;"
    "display:block}.kd-charts .kd-chart-wide{max-width:40rem}.kd-charts .kd-chart-narrow"
    "{display:none;max-width:20rem}@container (max-width:559.98px){.kd-charts "
    ".kd-chart-wide{display:none}.kd-charts .kd-chart-narrow{display:block}}</style>"
)


def figure(value: float, digits: int = 3) -> str:
    """`value` to `digits` significant figures, written out in full between 0.001 and a
    million (4,570 rather than 4.57e+03: easier to read for someone new to the notation),
    in scientific notation outside that range. A count (an int) below a million is
    written exactly."""
    if isinstance(value, int) and abs(value) < 10**6:
        return f"{value:,}"  # a count, written exactly
    if value == 0 or not 1e-3 <= abs(value) < 1e6:
        return f"{value:.{digits}g}"
    rounded = float(f"{value:.{digits}g}")
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(rounded))))
    return f"{rounded:,.{decimals}f}"


def lines(
    series: Mapping[str, Sequence[tuple[float, float]]],
    *,
    title: str,
    x_label: str,
    y_label: str,
    digits: int = 3,
) -> str:
    """One line per named series of (x, y) points; y values labelled to `digits` figures."""
    return line_chart_svg(
        list(series.items()),
        title=title,
        x_label=x_label,
        y_label=y_label,
        y_format=lambda y: figure(y, digits),
    )


def bars(values: Mapping[str, float], *, title: str, unit: str, digits: int = 3) -> str:
    """One horizontal bar per label, each labelled with its value to `digits` figures."""
    return bar_chart_svg(
        list(values.items()),
        title=title,
        unit_label=unit,
        value_format=lambda v: figure(v, digits),
    )


def show(chart: str) -> None:
    """Display a chart inline (as HTML, so that it takes the page's text colour)."""
    from IPython.display import HTML, display

    display(HTML(STYLE + chart))
