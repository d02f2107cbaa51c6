"""HTML tables, SVG charts and CSV for calculator results, in pure Python.

The same functions prerender the result into the built page and redraw it in the
browser's worker, so what a reader sees before and after JavaScript has one source.
Capacity is always shown in GiB (2^30 bytes), labelled so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from calculators.units import format_gib
from calculators.web.text import csv_row, escape

# Colour-blind-safe palette (Okabe-Ito), readable on light and dark backgrounds.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442")


def html_table(head: Sequence[str], rows: Iterable[Sequence[Any]], *, caption: str = "") -> str:
    """A table; cells are escaped, numeric-looking cells right-aligned by the site CSS."""
    parts = ['<table class="kd-table">']
    if caption:
        parts.append(f"<caption>{escape(caption)}</caption>")
    parts.append("<thead><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr></thead>")
    parts.append("<tbody>")
    for row in rows:
        parts.append("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>")
    parts.append("</tbody></table>")
    return "".join(parts)


# Every chart is drawn twice, in a wide and a narrow layout, inside one `.kd-charts` box; the
# site's CSS shows the one that suits the box's width. SVG text scales with the drawing, so
# one 640-unit drawing shrunk onto a 375 px phone has 6 px text; the narrow layout, about
# half as wide, keeps it near 11 px there. Both carry the same title and data.
WIDE = 640
NARROW = 340
FONT = 12  # font-size, viewBox units
LINE = 16  # baseline to baseline of a wrapped label
# Glyph advance assumed when laying out text, in em: above the average of the fonts the site
# falls back to (about 0.5 to 0.55 for the phones' system fonts, Helvetica, Arial and
# Liberation Sans; about 0.6 for DejaVu Sans), so labels placed with it stay inside the
# drawing. The unit tests hold the layouts to it; the browser tests measure real text.
EM_ADVANCE = 0.6


def _width(text: str) -> float:
    """Estimated advance of `text` in viewBox units."""
    return len(text) * EM_ADVANCE * FONT


def _shorten(text: str, room: float) -> str:
    """`text`, cut with an ellipsis where it would run past `room` units."""
    if _width(text) <= room:
        return text
    keep = max(int(room / (EM_ADVANCE * FONT)) - 1, 0)
    return text[:keep].rstrip() + "\u2026"


def _wrap(text: str, room: float, max_lines: int = 3) -> list[str]:
    """`text` in lines of at most `room` units, broken at spaces (never at no-break spaces);
    a word longer than a line, or what is left past `max_lines`, is cut with an ellipsis."""
    lines: list[str] = []
    for word in text.split(" "):
        if lines and _width(f"{lines[-1]} {word}") <= room:
            lines[-1] += f" {word}"
        else:
            lines.append(word)
    if len(lines) > max_lines:
        lines[max_lines - 1 :] = [" ".join(lines[max_lines - 1 :])]
    return [_shorten(line, room).replace("\u00a0", " ") for line in lines]


def _text(x: float, y: float, text: str, *, anchor: str = "start", full: str = "") -> str:
    """A <text>; `full`, the label before it was cut, is its tooltip when it differs."""
    a = "" if anchor == "start" else f' text-anchor="{anchor}"'
    tip = f"<title>{escape(full)}</title>" if full and full != text else ""
    return f'<text x="{x:.2f}" y="{y:.2f}"{a}>{escape(text)}{tip}</text>'


def _keep(text: str) -> str:
    """`text` with no-break spaces: `_wrap` keeps it on one line."""
    return text.replace(" ", "\u00a0")


def _lines(x: float, y: float, text: str, room: float, max_lines: int = 3) -> list[str]:
    """`text` wrapped into <text> lines from baseline `y` down; the whole text is the first
    line's tooltip when wrapping had to cut it."""
    lines = _wrap(text, room, max_lines)
    full = text.replace("\u00a0", " ")
    cut = " ".join(lines) != full
    return [
        _text(x, y + LINE * i, line, full=full if cut and i == 0 else "")
        for i, line in enumerate(lines)
    ]


def _place(x: float, text: str, lo: float, hi: float, anchor: str) -> tuple[float, str]:
    """Where to put `text` meant to sit at `x` with `anchor` so that it stays within
    [lo, hi] (moved along, and cut if it is longer than that): its x and its text."""
    text = _shorten(text, hi - lo)
    w = _width(text)
    offset = {"start": 0.0, "middle": w / 2, "end": w}[anchor]
    start = min(max(x - offset, lo), hi - w)
    return start + offset, text


def _fraction(part: float, whole: float) -> float:
    """part / whole in [0, 1]; 0 where either is not a finite number."""
    if not (math.isfinite(part) and math.isfinite(whole)) or whole <= 0:
        return 0.0
    return min(max(part / whole, 0.0), 1.0)


def _svg(width: int, height: float, title: str, body: Iterable[str]) -> str:
    layout = "wide" if width == WIDE else "narrow"
    return (
        f'<svg class="kd-chart kd-chart-{layout}" role="img" '
        f'viewBox="0 0 {width} {math.ceil(height)}" xmlns="http://www.w3.org/2000/svg" '
        f'font-size="{FONT}" fill="currentColor">'
        f"<title>{escape(title)}</title>{''.join(body)}</svg>"
    )


def _both(draw: Callable[[int], str]) -> str:
    """The chart drawn at both widths, in the box the site's CSS picks one from."""
    return f'<div class="kd-charts">{draw(WIDE)}{draw(NARROW)}</div>'


def stacked_bar_svg(
    segments: Sequence[tuple[str, int]],
    *,
    capacity: int | None = None,
    capacity_label: str = "usable memory",
    title: str = "",
) -> str:
    """A horizontal bar of byte segments in GiB, with a marker at `capacity` if given."""
    kept = [(label, b) for label, b in segments if b > 0]
    return _both(
        lambda width: _stacked_bar(
            width, kept, capacity, capacity_label, title or "memory by component, GiB"
        )
    )


def _stacked_bar(
    width: int,
    segments: Sequence[tuple[str, int]],
    capacity: int | None,
    capacity_label: str,
    title: str,
) -> str:
    left = right = 10
    span = width - left - right
    total = sum(b for _, b in segments)
    scale_max = max(total, capacity or 0, 1)
    header = _keep(f"total {format_gib(total)}")
    if capacity is not None:
        header += f" {_keep(f'of {format_gib(capacity)}')} {capacity_label}"
    body = _lines(left, 20, header, span)
    bar_y = 30 + LINE * (len(body) - 1)
    bar_h = 34 if width == WIDE else 28
    x = float(left)
    for i, (label, b) in enumerate(segments):
        w = span * _fraction(b, scale_max)
        body.append(
            f'<rect x="{x:.2f}" y="{bar_y}" width="{w:.2f}" height="{bar_h}" '
            f'fill="{PALETTE[i % len(PALETTE)]}">'
            f"<title>{escape(label)}: {format_gib(b)}</title></rect>"
        )
        x += w
    if capacity is not None:
        cx = left + span * _fraction(capacity, scale_max)
        colour = "#D55E00" if total > capacity else "currentColor"
        body.append(
            f'<line x1="{cx:.2f}" x2="{cx:.2f}" y1="{bar_y - 6}" y2="{bar_y + bar_h + 6}" '
            f'stroke="{colour}" stroke-width="2" stroke-dasharray="4 3"/>'
        )
        anchor = "end" if cx > width / 2 else "start"
        lx, shown = _place(cx, capacity_label, left, width - right, anchor)
        body.append(_text(lx, bar_y + bar_h + 20, shown, anchor=anchor, full=capacity_label))
    # the legend: two columns when wide, one when narrow; an entry wraps within its column
    columns = 2 if width == WIDE else 1
    column = span / columns
    y = bar_y + bar_h + 40
    for first in range(0, len(segments), columns):
        tallest = 1
        for j, (label, b) in enumerate(segments[first : first + columns]):
            lx = left + j * column
            entry = _lines(lx + 14, y, f"{label}: {_keep(format_gib(b))}", column - 18)
            body.append(
                f'<rect x="{lx:.2f}" y="{y - 10}" width="10" height="10" '
                f'fill="{PALETTE[(first + j) % len(PALETTE)]}"/>'
            )
            body += entry
            tallest = max(tallest, len(entry))
        y += LINE * (tallest - 1) + 18
    return _svg(width, y - 6, title, body)


def _periods(days: int) -> tuple[str, str, Callable[[int], str]]:
    """How a schedule of `days`-day periods names them: what one period is ('week'),
    what the axis counts ('weeks'), and the name of the i-th period (from 0)."""
    if days == 1:
        return "day", "days", lambda i: f"day {i + 1}"
    if days == 7:
        return "week", "weeks", lambda i: f"week {i + 1}"
    if days == 365:
        return "year", "years", lambda i: f"year {i + 1}"
    if days % 365 == 0:
        years = days // 365
        return (
            f"{years} years",
            "periods",
            lambda i: f"period {i + 1} (years {i * years + 1} to {(i + 1) * years})",
        )
    return (
        f"{days} days",
        "periods",
        lambda i: f"period {i + 1} (days {i * days + 1:,} to {(i + 1) * days:,})",
    )


def _hours(value: float, room: int) -> str:
    """GPU-hours in about `room` characters at most: grouped digits with one decimal, or
    three significant digits and an exponent where those would not fit."""
    text = f"{value:,.1f}"
    return text if len(text) <= room else f"{value:.3g}"


def schedule_svg(
    schedule: Sequence[dict[str, float]], phases: Sequence[str], period_days: int = 1
) -> str:
    """GPU-hours in each period of `period_days` days, stacked by phase (the budget's
    schedule). Any number of periods fits: bars narrow down to a fraction of a unit."""
    if isinstance(period_days, bool) or not isinstance(period_days, int) or period_days < 1:
        raise ValueError(f"period_days must be a positive integer, got {period_days!r}")
    return _both(lambda width: _schedule(width, schedule, phases, period_days))


def _schedule(
    width: int, schedule: Sequence[dict[str, float]], phases: Sequence[str], period_days: int
) -> str:
    per, counted, name_of = _periods(period_days)
    n = max(len(schedule), 1)
    # fsum: the same last digit in CPython 3.11 and the browser's 3.12+ (sum() differs)
    peak = max((math.fsum(period.values()) for period in schedule), default=0.0) or 1.0
    top_label = _hours(peak, 9)
    left = _width(top_label) + 12
    right = 10
    plot_w = width - left - right
    top, plot_h = 16, 160 if width == WIDE else 140
    base = top + plot_h
    colour = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(phases)}
    body = [
        _text(left - 6, top + 4, top_label, anchor="end"),
        _text(left - 6, base, "0", anchor="end"),
    ]
    slot = plot_w / n
    bar_w = min(slot - min(2.0, slot * 0.2), 48.0)
    for i, period in enumerate(schedule):
        x = left + i * slot + (slot - bar_w) / 2
        y = float(base)
        for name, hours in period.items():
            h = plot_h * _fraction(hours, peak)
            y -= h
            body.append(
                f'<rect x="{x:.2f}" y="{y:.2f}" width="{bar_w:.2f}" height="{h:.2f}" '
                f'fill="{colour.get(name, PALETTE[0])}"><title>{escape(name_of(i))}, '
                f"{escape(name)}: {escape(_hours(hours, 24))} GPU-hours</title></rect>"
            )
    caption = f"{_keep(f'GPU-hours per {per};')} {_keep(f'{counted} 1 to {n:,}')}"
    lines = _lines(left, base + 16, caption, plot_w)
    body += lines
    # the legend: three columns when wide, one when narrow; long names are cut (the bars'
    # tooltips carry them whole)
    columns = 3 if width == WIDE else 1
    column = plot_w / columns
    y = base + 16 + LINE * (len(lines) - 1) + 20
    for i, name in enumerate(phases):
        lx = left + (i % columns) * column
        ly = y + 18 * (i // columns)
        shown = _shorten(name, column - 18)
        body.append(
            f'<rect x="{lx:.2f}" y="{ly - 10}" width="10" height="10" fill="{colour[name]}"/>'
            + _text(lx + 14, ly, shown, full=name)
        )
    rows = (len(phases) + columns - 1) // columns
    height = y + 18 * (rows - 1) + 12 if rows else y - 8
    return _svg(width, height, f"GPU-hours per {per}, by phase", body)


def interval_svg(low: float, high: float, mean: float, level: float) -> str:
    """The interval of the paired difference against zero."""
    title = f"{level:.0%} interval of the mean difference (b - a)"
    return _both(lambda width: _interval(width, low, high, mean, title))


def _interval(width: int, low: float, high: float, mean: float, title: str) -> str:
    left = right = 20
    y = 40
    lo, hi = min(low, 0.0), max(high, 0.0)
    pad = (hi - lo) * 0.1 or 1.0
    lo, hi = lo - pad, hi + pad

    def px(v: float) -> float:
        return left + (width - left - right) * _fraction(v - lo, hi - lo)

    low_text, high_text = f"{low:.4g}", f"{high:.4g}"
    a, b = px(low), px(high)
    edge_lo, edge_hi = 4.0, width - 4.0
    if b - a >= (_width(low_text) + _width(high_text)) / 2 + 8:
        (la, low_text), (ha, high_text) = (
            _place(a, low_text, edge_lo, edge_hi, "middle"),
            _place(b, high_text, edge_lo, edge_hi, "middle"),
        )
        labels = [_text(la, y - 10, low_text, anchor="middle")]
        labels.append(_text(ha, y - 10, high_text, anchor="middle"))
    else:
        # ends too close for centred labels: low ends left of the middle, high starts right
        # of it, the pair moved as one to stay inside
        mid = (a + b) / 2
        start, stop = mid - 4 - _width(low_text), mid + 4 + _width(high_text)
        mid += max(0.0, edge_lo - start) - max(0.0, stop - edge_hi)
        labels = [
            _text(mid - 4, y - 10, low_text, anchor="end"),
            _text(mid + 4, y - 10, high_text, anchor="start"),
        ]
    zero = px(0.0)
    return _svg(
        width,
        70,
        title,
        [
            f'<line x1="{zero:.2f}" x2="{zero:.2f}" y1="10" y2="60" stroke="currentColor" '
            f'stroke-dasharray="4 3"/>',
            _text(zero + 4, 62, "0"),
            f'<line x1="{a:.2f}" x2="{b:.2f}" y1="{y}" y2="{y}" stroke="{PALETTE[0]}" '
            f'stroke-width="4"><title>interval {escape(f"{low:.4g}")} to '
            f"{escape(f'{high:.4g}')}</title></line>",
            f'<circle cx="{px(mean):.2f}" cy="{y}" r="6" fill="{PALETTE[1]}">'
            f"<title>mean difference {escape(f'{mean:.4g}')}</title></circle>",
            *labels,
        ],
    )


def summary(text: str) -> str:
    """A result's one-line summary, above its chart and tables."""
    return f'<p class="kd-summary">{escape(text)}</p>'


def warnings_html(r: dict[str, Any]) -> str:
    """The result's warnings, shown above it: the figures stand, but read them with this."""
    return "".join(
        f'<p class="kd-warning" role="note"><strong>Warning:</strong> {escape(w)}</p>'
        for w in r.get("warnings", ())
    )


def notes_html(r: dict[str, Any]) -> str:
    """What the result could not compute, and why."""
    return "".join(f'<p class="kd-note">{escape(n)}</p>' for n in r.get("notes", ()))


def phase_bars_svg(phases: Sequence[tuple[str, int]], capacity: int, label: str) -> str:
    """One bar per phase in GiB, with the card's usable memory marked across them."""
    values = [format_gib(b) for _, b in phases]
    return _both(
        lambda width: _bars(
            width,
            phases,
            values,
            "memory by phase against the card, GiB",
            capacity=capacity,
            capacity_label=label,
        )
    )


def bar_chart_svg(
    bars: Sequence[tuple[str, float]],
    *,
    title: str,
    value_format: Callable[[Any], str] = format_gib,
    unit_label: str,
) -> str:
    """One horizontal bar per (label, value), each labelled with `value_format(value)`;
    `unit_label` under the bars says what the lengths measure (e.g. 'GiB (2^30 bytes)').

    No capacity is marked: for that, `phase_bars_svg`. ValueError on no bars, or a value
    that is negative or not a finite number.
    """
    if not bars:
        raise ValueError("bars: no bars to draw")
    for name, value in bars:
        if not (_is_number(value) and math.isfinite(value) and value >= 0):
            raise ValueError(f"bars: {name!r} has {value!r}, not a finite number >= 0")
    values = [value_format(v) for _, v in bars]
    return _both(lambda width: _bars(width, bars, values, title, unit_label=unit_label))


def _is_number(value: object) -> bool:
    """An int or a float; bool is not a number here."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _bars(
    width: int,
    bars: Sequence[tuple[str, float]],
    values: Sequence[str],
    title: str,
    *,
    capacity: int | None = None,
    capacity_label: str = "",
    unit_label: str = "",
) -> str:
    """Labelled horizontal bars, each with its value text after it; `capacity`, if given,
    is marked across them (bars past it in the warning colour), else `unit_label` is
    written under them."""
    wide = width == WIDE
    # wide: names in a column left of the bars, as wide as the longest needs up to half the
    # drawing; narrow: each name on a line above its bar
    names = max((_width(name) for name, _ in bars), default=0.0)
    left, top, row = (min(max(names + 16, 120), WIDE / 2), 10, 26) if wide else (10, 10, 40)
    span = width - left - 10 - max((_width(v) for v in values), default=0.0)
    # the longest bar (or the capacity) spans the room; 1 keeps an all-zero chart drawable
    peak = max([b for _, b in bars] + ([] if capacity is None else [capacity]), default=0)
    peak = peak if peak > 0 else 1
    body: list[str] = []
    marks: list[tuple[float, float]] = []
    for i, ((name, b), value) in enumerate(zip(bars, values, strict=True)):
        y = top + i * row
        w = span * _fraction(b, peak)
        colour = PALETTE[5] if capacity is not None and b > capacity else PALETTE[0]
        if wide:
            name_x, name_y, bar_y, bar_h = left - 6, y + 15, y + 3, row - 8
            shown = _shorten(name, left - 16)
        else:
            name_x, name_y, bar_y, bar_h = left, y + 12, y + 17, 16
            shown = _shorten(name, width - 2 * left)
        body.append(
            _text(name_x, name_y, shown, anchor="end" if wide else "start", full=name)
            + f'<rect x="{left:.2f}" y="{bar_y}" width="{w:.2f}" height="{bar_h}" '
            f'fill="{colour}"><title>{escape(name)}: {escape(value)}</title></rect>'
            + _text(left + w + 4, bar_y + bar_h - 3, value)
        )
        if not wide:  # the card's line crosses the bars only, not the names above them
            marks.append((bar_y - 3, bar_y + bar_h + 3))
    bottom = top + row * len(bars)
    if capacity is None:
        under = _lines(10, bottom + 16, unit_label, width - 20, 2) if unit_label else []
        body += under
        return _svg(width, bottom + 8 + LINE * len(under), title, body)
    cx = left + span * _fraction(capacity, peak)
    whole = f"{capacity_label} {format_gib(capacity)}"
    mark_x, mark = _place(cx, whole, 4, width - 4, "middle")
    body += [
        f'<line x1="{cx:.2f}" x2="{cx:.2f}" y1="{y1}" y2="{y2}" stroke="currentColor" '
        f'stroke-width="2" stroke-dasharray="4 3"/>'
        for y1, y2 in marks or [(top, bottom)]
    ]
    body.append(_text(mark_x, bottom + 16, mark, anchor="middle", full=whole))
    return _svg(width, bottom + 24, title, body)


# ---- line charts ------------------------------------------------------------------------

# Ticks a linear axis aims for: the step is the smallest 1, 2 or 5 x 10^k at least the
# axis's span over this count (`nice_ticks`).
Y_TICKS = 5
X_TICKS = {WIDE: 6, NARROW: 4}
# One dash pattern per series, in order, so that a line is told from the others without
# its colour (WCAG 1.4.1); the first is solid. Six patterns against seven colours: the
# pairs repeat only after 42 series.
DASHES = ("", "7 4", "2 3", "9 3 2 3", "4 2", "12 4")
# Binary prefixes for powers of two on a log2 axis, as context lengths are named: 128K
# is 131,072 tokens.
_BINARY_PREFIXES = ("", "K", "M", "G", "T")
# A span narrower than this is drawn as no span: its step, a fifth of it, would underflow.
_TINY_SPAN = 1e-300
# The largest magnitude drawn: an axis stretched to the next tick past 1.7e308 overflows.
_LARGEST = 1e300


def _plain(value: float) -> str:
    """A number as a reader writes it: grouped digits when whole, else six significant digits."""
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:,.6g}"


def nice_step(span: float, count: int) -> float:
    """The smallest step of the form 1, 2 or 5 x 10^k that is at least `span` / `count`."""
    raw = span / count
    power = 10.0 ** math.floor(math.log10(raw))
    # 10 as well: log10 of a value just under a power of ten may round up to it
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def nice_ticks(lo: float, hi: float, count: int) -> list[float]:
    """Ticks every `nice_step(hi - lo, count)` from the last multiple of the step at or
    below `lo` to the first at or above `hi`: the axis runs from the first to the last."""
    step = nice_step(hi - lo, count)
    # a hair of slack, so that lo = 0.3 with step 0.1 (0.3 / 0.1 = 2.9999999999999996)
    # starts at 0.3, not at 0.2
    first = math.floor(lo / step + 1e-9)
    last = math.ceil(hi / step - 1e-9)
    return [i * step for i in range(first, last + 1)]


def _tick_text(value: float, step: float) -> str:
    """A linear tick's label with as many decimals as the step has; six significant
    digits where those would run long (a tiny step, a huge value)."""
    decimals = max(0, -math.floor(math.log10(step)))
    if decimals > 6 or abs(value) >= 1e12:
        return f"{value:.6g}"
    return f"{value:,.{decimals}f}"


def power_of_two_text(exponent: int) -> str:
    """2^exponent with a binary prefix: 4K for 4096, 128K for 131072, 1M for 1048576;
    2^50 and up, past the prefixes, as 2^50."""
    if exponent < 0:
        return f"{2.0**exponent:g}"
    if exponent >= 10 * len(_BINARY_PREFIXES):
        return f"2^{exponent}"
    prefix = min(exponent // 10, len(_BINARY_PREFIXES) - 1)
    return f"{2 ** (exponent - 10 * prefix):,}{_BINARY_PREFIXES[prefix]}"


def _log2_ticks(lo: float, hi: float) -> list[int]:
    """Exponents of the powers of two from the one at or below `lo` to the one at or
    above `hi` (two at least, so that one value still has an axis around it)."""
    first, last = math.floor(math.log2(lo)), math.ceil(math.log2(hi))
    return list(range(first, max(last, first + 1) + 1))


def _check_points(
    series: Sequence[tuple[str, Sequence[tuple[float, float]]]],
    hlines: Sequence[tuple[str, float]],
    x_log2: bool,
) -> None:
    """ValueError unless every series has points, every value is a finite number of
    magnitude at most 1e300, and every x is positive on a log axis."""

    def drawable(value: object) -> bool:
        return _is_number(value) and abs(value) <= _LARGEST  # type: ignore[arg-type]

    if not series:
        raise ValueError("series: no series to draw")
    for name, points in series:
        if not points:
            raise ValueError(f"series: {name!r} has no points")
        for x, y in points:
            if not (drawable(x) and drawable(y)):
                raise ValueError(
                    f"series: {name!r} has the point {(x, y)!r}: values must be finite "
                    f"numbers of magnitude at most {_LARGEST:g}"
                )
            if x_log2 and x <= 0:
                raise ValueError(f"series: {name!r} has x = {x!r}, not positive on a log2 axis")
    for label, y in hlines:
        if not drawable(y):
            raise ValueError(
                f"hlines: {label!r} is at {y!r}, not a finite number of magnitude at most "
                f"{_LARGEST:g}"
            )


def line_chart_svg(
    series: Sequence[tuple[str, Sequence[tuple[float, float]]]],
    *,
    x_label: str,
    y_label: str,
    title: str,
    x_log2: bool = False,
    hlines: Sequence[tuple[str, float]] = (),
    y_format: Callable[[float], str] = _plain,
) -> str:
    """One line per (name, [(x, y), ...]) series, drawn in x order, with axes, a legend
    (colour and dash pattern per series) and dashed horizontal reference lines
    (label, y), e.g. a card's visible memory.

    The y axis always includes 0 and every reference line; ticks on a linear axis follow
    `nice_ticks` (1, 2 or 5 x 10^k apart). With `x_log2`, x is spaced by its logarithm and
    ticked at powers of two labelled 1K, 2K, ... (`power_of_two_text`). Each point's
    tooltip gives its series, x and `y_format(y)`. ValueError on no series, a series
    without points, a value that is not a finite number (of magnitude at most 1e300),
    or x <= 0 on a log2 axis.
    """
    _check_points(series, hlines, x_log2)
    ordered = [(name, sorted(points)) for name, points in series]
    return _both(
        lambda width: _line_chart(width, ordered, x_label, y_label, title, x_log2, hlines, y_format)
    )


def _x_axis(
    xs: Sequence[float], x_log2: bool, width: int
) -> tuple[Callable[[float], float], list[tuple[float, str]]]:
    """The x axis: the fraction of the plot's width at which a value sits, and the ticks
    as (fraction, label)."""
    lo, hi = min(xs), max(xs)
    if x_log2:
        exponents = _log2_ticks(lo, hi)
        first, last = exponents[0], exponents[-1]

        def at(x: float) -> float:
            return _fraction(math.log2(x) - first, last - first)

        return at, [((e - first) / (last - first), power_of_two_text(e)) for e in exponents]
    if not hi - lo > _TINY_SPAN:  # one x, in effect: an axis around it
        pad = abs(lo) / 2 or 1.0
        lo, hi = lo - pad, hi + pad
    ticks = nice_ticks(lo, hi, X_TICKS[width])
    step = ticks[1] - ticks[0]
    start, stop = ticks[0], ticks[-1]

    def linear(x: float) -> float:
        return _fraction(x - start, stop - start)

    return linear, [(linear(t), _tick_text(t, step)) for t in ticks]


@dataclass(frozen=True)
class _Frame:
    """A chart's plot area, drawn: where it sits, and a value's position in it."""

    body: list[str]
    left: float
    top: float
    base: float
    plot_w: float
    px: Callable[[float], float]
    py: Callable[[float], float]


def _frame(
    width: int,
    xs: Sequence[float],
    ys: Sequence[float],
    *,
    x_log2: bool,
    y_label: str,
    plot_h: int,
) -> _Frame:
    """The y label, the plot area, its grid, ticks and axes, for the line and point charts:
    y from 0 (or below, for negative values), x around `xs` (linear, or log2)."""
    x_at, x_ticks = _x_axis(xs, x_log2, width)
    lo, hi = min(0.0, *ys), max(0.0, *ys)
    y_ticks = nice_ticks(lo, hi if hi - lo > _TINY_SPAN else lo + 1, Y_TICKS)
    y_step, y_lo, y_hi = y_ticks[1] - y_ticks[0], y_ticks[0], y_ticks[-1]
    y_texts = [_tick_text(t, y_step) for t in y_ticks]
    # margins: the y labels on the left, half an x label past each end of the plot; none
    # more than 30% of the drawing, so that the plot keeps at least 40% of it
    cap = 0.3 * width
    left = min(max(max(_width(t) for t in y_texts) + 12, _width(x_ticks[0][1]) / 2 + 4), cap)
    right = min(max(12.0, _width(x_ticks[-1][1]) / 2 + 4), cap)
    plot_w = width - left - right
    body = _lines(10, 10 + FONT, y_label, width - 20, 2)
    top = 10 + FONT + LINE * (len(body) - 1) + 14
    base = top + plot_h

    def px(x: float) -> float:
        return left + plot_w * x_at(x)

    def py(y: float) -> float:
        return base - plot_h * _fraction(y - y_lo, y_hi - y_lo)

    # the plot area: the points stay inside it, the tests hold them to it
    body.append(
        f'<rect class="kd-plot" x="{left:.2f}" y="{top}" width="{plot_w:.2f}" '
        f'height="{plot_h}" fill="none"/>'
    )
    for tick, text in zip(y_ticks, y_texts, strict=True):
        y = py(tick)
        body.append(
            f'<line x1="{left:.2f}" x2="{left + plot_w:.2f}" y1="{y:.2f}" y2="{y:.2f}" '
            f'stroke="currentColor" stroke-opacity="0.15"/>'
        )
        lx, shown = _place(left - 6, text, 4, left - 6, "end")
        body.append(_text(lx, y + 4, shown, anchor="end", full=text))
    # x labels: every tick's when they fit side by side, else every second, third, ...
    spacing = plot_w / max(len(x_ticks) - 1, 1)
    widest = max(_width(text) for _, text in x_ticks) + 8
    stride = max(1, math.ceil(widest / spacing))
    for i, (at, text) in enumerate(x_ticks):
        x = left + plot_w * at
        body.append(
            f'<line x1="{x:.2f}" x2="{x:.2f}" y1="{base}" y2="{base + 4}" stroke="currentColor"/>'
        )
        if i % stride == 0:
            lx, shown = _place(x, text, 4, width - 4, "middle")
            body.append(_text(lx, base + 18, shown, anchor="middle", full=text))
    body.append(
        f'<path d="M{left:.2f} {top}V{base}H{left + plot_w:.2f}" fill="none" '
        f'stroke="currentColor"/>'
    )
    return _Frame(body, left, top, base, plot_w, px, py)


def _line_chart(
    width: int,
    series: Sequence[tuple[str, Sequence[tuple[float, float]]]],
    x_label: str,
    y_label: str,
    title: str,
    x_log2: bool,
    hlines: Sequence[tuple[str, float]],
    y_format: Callable[[float], str],
) -> str:
    wide = width == WIDE
    ys = [y for _, points in series for _, y in points] + [y for _, y in hlines]
    f = _frame(
        width,
        [x for _, points in series for x, _ in points],
        ys,
        x_log2=x_log2,
        y_label=y_label,
        plot_h=200 if wide else 180,
    )
    body, left, top, base, plot_w, px, py = f.body, f.left, f.top, f.base, f.plot_w, f.px, f.py
    for label, value in hlines:
        y = py(value)
        whole = f"{label}: {y_format(value)}"
        body.append(
            f'<line x1="{left:.2f}" x2="{left + plot_w:.2f}" y1="{y:.2f}" y2="{y:.2f}" '
            f'stroke="currentColor" stroke-width="1.5" stroke-dasharray="4 3">'
            f"<title>{escape(whole)}</title></line>"
        )
        # at the left end, which lines that grow with x (memory with context) leave clear;
        # above its line, or under it where the line runs along the top of the plot
        ly = y - 4 if y - 4 - FONT >= top else y + FONT + 2
        shown = _shorten(whole, plot_w - 8)
        body.append(_text(left + 4, ly, shown, full=whole))
    for i, (name, points) in enumerate(series):
        colour, dash = PALETTE[i % len(PALETTE)], DASHES[i % len(DASHES)]
        dashes = f' stroke-dasharray="{dash}"' if dash else ""
        coords = " ".join(f"{px(x):.2f},{py(y):.2f}" for x, y in points)
        body.append(
            f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="2"{dashes}/>'
        )
        for x, y in points:
            tip = f"{name}: {y_format(y)} at {x_label} = {_plain(x)}"
            body.append(
                f'<circle cx="{px(x):.2f}" cy="{py(y):.2f}" r="3" fill="{colour}">'
                f"<title>{escape(tip)}</title></circle>"
            )
    under = _lines(10, base + 38, x_label, width - 20, 2)
    body += under
    # the legend: a stretch of each line, in its colour and dashes, then its name
    columns = 3 if wide else 2
    column = (width - 20) / columns
    y0 = base + 38 + LINE * (len(under) - 1) + 24
    for i, (name, _) in enumerate(series):
        lx = 10 + (i % columns) * column
        ly = y0 + 18 * (i // columns)
        dash = DASHES[i % len(DASHES)]
        dashes = f' stroke-dasharray="{dash}"' if dash else ""
        body.append(
            f'<line x1="{lx:.2f}" x2="{lx + 24:.2f}" y1="{ly - 4}" y2="{ly - 4}" '
            f'stroke="{PALETTE[i % len(PALETTE)]}" stroke-width="2"{dashes}/>'
            + _text(lx + 30, ly, _shorten(name, column - 36), full=name)
        )
    rows = (len(series) + columns - 1) // columns
    return _svg(width, y0 + 18 * (rows - 1) + 8, title, body)


def flatten(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """(dotted path, scalar) pairs of a JSON value, lists indexed: lines.0.bytes."""
    if isinstance(value, dict):
        items: Iterable[tuple[Any, Any]] = value.items()
    elif isinstance(value, list | tuple):
        items = enumerate(value)
    else:
        return [(prefix, value)]
    out: list[tuple[str, Any]] = []
    for k, v in items:
        out += flatten(v, f"{prefix}.{k}" if prefix else str(k))
    return out


def to_csv(result: dict[str, Any]) -> str:
    """The result as CSV: one row per scalar, `field,value` with dotted paths."""
    return csv_row(["field", "value"]) + "".join(csv_row([p, v]) for p, v in flatten(result))


# ---- run grid: a design's runs by factor ------------------------------------------------

# Rows a run grid draws; a longer design is drawn up to here and says so (its table and
# its CSV hold every run).
GRID_MAX_ROWS = 256


def run_grid_svg(
    factors: Sequence[tuple[str, Sequence[str]]],
    coded: Sequence[Sequence[int]],
    *,
    letters: Sequence[str] | None = None,
    run_ids: Sequence[int] | None = None,
    title: str = "runs of the design by factor",
) -> str:
    """A design as a grid: one row per run, one column per factor (headed by its letter,
    the legend pairing letters and names), each cell shaded by the run's coded level.

    `factors` are (name, levels); `coded` holds one row per run: -1 / +1 for a two-level
    factor (first / second level), 0 .. L-1 for a factor of L levels. A cell at -1 or 0
    is drawn as an outline in the text colour (`currentColor`), one at +1 filled with
    the palette's first colour, a later level of a many-level factor filled with that
    colour at an opacity rising with the level; each cell's tooltip names its run,
    factor and level. At most GRID_MAX_ROWS rows are drawn; the title says when the
    design has more. ValueError on no factors, a row of the wrong length, or a code that
    is not one of its factor's.
    """
    if not factors:
        raise ValueError("factors: no factor to draw")
    k = len(factors)
    heads = list(letters) if letters is not None else [str(i + 1) for i in range(k)]
    if len(heads) != k:
        raise ValueError(f"letters: {len(heads)} letters for {k} factors")
    ids = list(run_ids) if run_ids is not None else list(range(1, len(coded) + 1))
    if len(ids) != len(coded):
        raise ValueError(f"run_ids: {len(ids)} ids for {len(coded)} runs")
    for n, row in enumerate(coded):
        if len(row) != k:
            raise ValueError(f"coded: run {ids[n]} has {len(row)} codes for {k} factors")
        for (name, levels), code in zip(factors, row, strict=True):
            allowed = (-1, 1) if len(levels) == 2 else range(len(levels))
            if isinstance(code, bool) or code not in allowed:
                raise ValueError(f"coded: run {ids[n]} has {code!r} for {name!r}")
    shown_rows = list(zip(ids, coded, strict=True))[:GRID_MAX_ROWS]
    whole = title
    if len(coded) > GRID_MAX_ROWS:
        whole = f"{title} (the first {GRID_MAX_ROWS:,} of {len(coded):,} runs)"
    return _both(lambda width: _run_grid(width, factors, heads, shown_rows, len(coded), whole))


def _cell_level(levels: Sequence[str], code: int) -> tuple[str, float]:
    """A cell's level text and its fill opacity (0: drawn as an outline)."""
    if len(levels) == 2:
        return levels[0 if code < 0 else 1], 0.0 if code < 0 else 1.0
    return levels[code], code / (len(levels) - 1)


def _run_grid(
    width: int,
    factors: Sequence[tuple[str, Sequence[str]]],
    heads: Sequence[str],
    rows: Sequence[tuple[int, Sequence[int]]],
    total: int,
    title: str,
) -> str:
    k = len(factors)
    label_w = max((_width(f"{i:,}") for i, _ in rows), default=0.0)
    left = max(label_w, _width("run")) + 14
    right = 10
    cell_w = min(48.0, (width - left - right) / k)
    n = max(len(rows), 1)
    row_h = max(2.0, min(16.0, 480 / n))
    top = 10 + FONT + 8  # the header row of letters above the grid
    body = [_text(left - 6, 10 + FONT, "run", anchor="end")]
    for j, head in enumerate(heads):
        x = left + (j + 0.5) * cell_w
        lx, text = _place(x, head, left + j * cell_w, left + (j + 1) * cell_w, "middle")
        body.append(_text(lx, 10 + FONT, text, anchor="middle", full=head))
    # run ids at the left: every row's where rows are tall enough, else every m-th
    every = max(1, math.ceil((FONT + 2) / row_h))
    for r, (run_id, row) in enumerate(rows):
        y = top + r * row_h
        if r % every == 0:
            body.append(_text(left - 6, y + row_h / 2 + FONT * 0.35, f"{run_id:,}", anchor="end"))
        inset = 1.0 if row_h >= 6 else 0.0
        for j, ((name, levels), code) in enumerate(zip(factors, row, strict=True)):
            level, opacity = _cell_level(levels, code)
            if len(levels) == 2:
                tip = f"run {run_id:,}: {name} = {level} ({code:+d})"
            else:
                tip = f"run {run_id:,}: {name} = {level} (level {code} of 0 to {len(levels) - 1})"
            style = (
                'fill="none" stroke="currentColor" stroke-opacity="0.45"'
                if opacity == 0
                else f'fill="{PALETTE[0]}" fill-opacity="{opacity:.2f}"'
            )
            body.append(
                f'<rect x="{left + j * cell_w + 1:.2f}" y="{y + inset / 2:.2f}" '
                f'width="{cell_w - 2:.2f}" height="{row_h - inset:.2f}" {style}>'
                f"<title>{escape(tip)}</title></rect>"
            )
    y = top + n * row_h + 18
    # the legend: an outline for the first level, a filled cell for the second
    legend = [("first level (-1)", "outline"), ("second level (+1)", "fill")]
    if any(len(levels) > 2 for _, levels in factors):
        legend = [("first level (-1, or 0)", "outline"), ("later levels: darker", "fill")]
    x = 10.0
    for text, kind in legend:
        w = 14 + _width(text) + 14
        if x + w > width - 10 and x > 10:
            x, y = 10.0, y + 18
        style = (
            'fill="none" stroke="currentColor" stroke-opacity="0.45"'
            if kind == "outline"
            else f'fill="{PALETTE[0]}"'
        )
        body.append(f'<rect x="{x:.2f}" y="{y - 10}" width="10" height="10" {style}/>')
        shown = _shorten(text, width - 10 - (x + 14))
        body.append(_text(x + 14, y, shown, full=text))
        x += w
    y += 20
    pairs = ", ".join(_keep(f"{h} {name}") for h, (name, _) in zip(heads, factors, strict=True))
    lines = _lines(10, y, f"Columns: {pairs}", width - 20, max_lines=k + 1)
    body += lines
    y += LINE * (len(lines) - 1)
    if total > len(rows):
        more = _lines(10, y + LINE, f"First {len(rows):,} of {total:,} runs drawn", width - 20)
        body += more
        y += LINE * len(more)
    return _svg(width, y + 8, title, body)


# ---- strip plot: per-seed scores, and the interval of their difference -------------------

# Points a strip plot draws per row; a longer row is drawn up to here and the title says
# so (its table and JSON hold every score).
STRIP_MAX_POINTS = 1_000


def strip_plot_svg(
    rows: Sequence[tuple[str, Sequence[float]]],
    *,
    title: str,
    value_label: str,
    paired: bool = False,
    differences: Sequence[float] = (),
    difference_label: str = "difference",
    interval: tuple[float, float] | None = None,
    interval_label: str = "interval",
) -> str:
    """Per-seed scores as dots, one row per variant (name, scores) on a shared axis, each
    row's mean a tick in its colour; with `paired`, a faint line joins the i-th score of
    every row (the same seed). With `differences`, a second panel below draws them on
    their own axis with 0 dashed, their mean as a larger dot and, with `interval` (low,
    high), the interval as a bar in the text colour, captioned by `interval_label`.

    Each dot's tooltip names its row, its seed (from 1) and its value. Equal values are
    stacked a few units apart, so that no seed hides another. At most STRIP_MAX_POINTS
    points a row are drawn; the title says when there are more. ValueError on no rows, a
    row without values, a value that is not a finite number of magnitude at most 1e300,
    rows of unequal length when `paired`, or an interval whose low end is above its high.
    """
    if not rows:
        raise ValueError("rows: no row to draw")
    check = [(name, [(float(i), v) for i, v in enumerate(values)]) for name, values in rows]
    if differences:
        check.append((difference_label, [(float(i), d) for i, d in enumerate(differences)]))
    _check_points(check, [("interval", v) for v in interval or ()], False)
    if paired and len({len(values) for _, values in rows}) != 1:
        raise ValueError("rows: paired rows must have one value per seed each")
    if interval is not None and not interval[0] <= interval[1]:
        raise ValueError(f"interval: low {interval[0]!r} is above high {interval[1]!r}")
    longest = max(len(values) for _, values in rows)
    whole = title
    if longest > STRIP_MAX_POINTS or len(differences) > STRIP_MAX_POINTS:
        whole = f"{title} (the first {STRIP_MAX_POINTS:,} seeds drawn)"
    kept = [(name, list(values[:STRIP_MAX_POINTS])) for name, values in rows]
    diffs = list(differences[:STRIP_MAX_POINTS])
    return _both(
        lambda width: _strip_plot(
            width,
            kept,
            whole,
            value_label,
            paired,
            diffs,
            difference_label,
            interval,
            interval_label,
        )
    )


def _strip_axis(
    values: Sequence[float], width: int, left: float, right: float
) -> tuple[Callable[[float], float], list[tuple[float, str]]]:
    """A linear axis over `values` between x = left and x = width - right: the x of a
    value, and the ticks as (x, label)."""
    lo, hi = min(values), max(values)
    if not hi - lo > _TINY_SPAN:  # one value, in effect: an axis around it
        pad = abs(lo) / 2 or 1.0
        lo, hi = lo - pad, hi + pad
    ticks = nice_ticks(lo, hi, X_TICKS[width])
    step, start, stop = ticks[1] - ticks[0], ticks[0], ticks[-1]
    span = width - left - right

    def px(v: float) -> float:
        return left + span * _fraction(v - start, stop - start)

    return px, [(px(t), _tick_text(t, step)) for t in ticks]


def _stacked(xs: Sequence[float]) -> list[float]:
    """A vertical offset per dot: 0 for the first at an x, then -4, +4, -8, +8, ...
    (within 12 units) for the later ones within a dot's width of it."""
    out = []
    seen: dict[int, int] = {}
    for x in xs:
        k = seen.get(round(x / 4), 0)
        seen[round(x / 4)] = k + 1
        out.append(min((k + 1) // 2 * 4, 12) * (-1 if k % 2 else 1))
    return out


def _axis_marks(
    px_ticks: Sequence[tuple[float, str]], y: float, left: float, right_x: float, width: int
) -> list[str]:
    """A horizontal axis line at `y` with its ticks and labels under it (every second,
    third, ... label where they would touch)."""
    body = [
        f'<line x1="{left:.2f}" x2="{right_x:.2f}" y1="{y:.2f}" y2="{y:.2f}" '
        f'stroke="currentColor"/>'
    ]
    spacing = (right_x - left) / max(len(px_ticks) - 1, 1)
    widest = max(_width(text) for _, text in px_ticks) + 8
    stride = max(1, math.ceil(widest / spacing))
    for i, (x, text) in enumerate(px_ticks):
        body.append(
            f'<line x1="{x:.2f}" x2="{x:.2f}" y1="{y:.2f}" y2="{y + 4:.2f}" stroke="currentColor"/>'
        )
        if i % stride == 0:
            lx, shown = _place(x, text, 4, width - 4, "middle")
            body.append(_text(lx, y + 18, shown, anchor="middle", full=text))
    return body


def _strip_plot(
    width: int,
    rows: Sequence[tuple[str, Sequence[float]]],
    title: str,
    value_label: str,
    paired: bool,
    differences: Sequence[float],
    difference_label: str,
    interval: tuple[float, float] | None,
    interval_label: str,
) -> str:
    row_h = 34
    names = max(_width(name) for name, _ in rows)
    left = min(max(names + 16, 40.0), 0.3 * width)
    right = 16.0
    body = _lines(10, 10 + FONT, value_label, width - 20, 2)
    top = 10 + FONT + LINE * (len(body) - 1) + 22
    px, ticks = _strip_axis([v for _, values in rows for v in values], width, left, right)
    ys = [top + i * row_h for i in range(len(rows))]
    points = []
    for (_, values), y in zip(rows, ys, strict=True):
        xs = [px(v) for v in values]
        points.append([(x, y + dy) for x, dy in zip(xs, _stacked(xs), strict=True)])
    if paired and len(rows) > 1:
        for i in range(len(rows[0][1])):
            coords = " ".join(f"{row[i][0]:.2f},{row[i][1]:.2f}" for row in points)
            body.append(
                f'<polyline points="{coords}" fill="none" stroke="currentColor" '
                f'stroke-opacity="0.3"/>'
            )
    for i, ((name, values), y, dots) in enumerate(zip(rows, ys, points, strict=True)):
        colour = PALETTE[i % len(PALETTE)]
        lx, shown = _place(left - 8, name, 4, left - 8, "end")
        body.append(_text(lx, y + 4, shown, anchor="end", full=name))
        for seed, (v, (x, cy)) in enumerate(zip(values, dots, strict=True)):
            tip = f"{name}, seed {seed + 1}: {v:.6g}"
            body.append(
                f'<circle cx="{x:.2f}" cy="{cy:.2f}" r="5" fill="{colour}" '
                f'fill-opacity="0.8"><title>{escape(tip)}</title></circle>'
            )
        mean = math.fsum(values) / len(values)
        mx = px(mean)
        body.append(
            f'<line x1="{mx:.2f}" x2="{mx:.2f}" y1="{y - 13}" y2="{y + 13}" '
            f'stroke="{colour}" stroke-width="3"><title>{escape(name)} mean: '
            f"{escape(f'{mean:.6g}')}</title></line>"
        )
    base = ys[-1] + row_h / 2 + 4
    body += _axis_marks(ticks, base, left, width - right, width)
    y = base + 18
    if differences:
        y += 28
        head = _lines(10, y, difference_label, width - 20, 2)
        body += head
        y += LINE * (len(head) - 1) + 26
        extent = [*differences, 0.0, *(interval or ())]
        dx, dticks = _strip_axis(extent, width, left, right)
        zero = dx(0.0)
        body.append(
            f'<line x1="{zero:.2f}" x2="{zero:.2f}" y1="{y - 16}" y2="{y + 16}" '
            f'stroke="currentColor" stroke-dasharray="4 3"/>'
        )
        if interval is not None:
            low, high = interval
            body.append(
                f'<line x1="{dx(low):.2f}" x2="{dx(high):.2f}" y1="{y + 12}" y2="{y + 12}" '
                f'stroke="currentColor" stroke-width="4"><title>{escape(interval_label)}: '
                f"{escape(f'{low:.4g}')} to {escape(f'{high:.4g}')}</title></line>"
            )
        xs = [dx(d) for d in differences]
        for seed, (d, x, dy) in enumerate(zip(differences, xs, _stacked(xs), strict=True)):
            tip = f"{difference_label}, seed {seed + 1}: {d:.6g}"
            body.append(
                f'<circle cx="{x:.2f}" cy="{y + dy - 4:.2f}" r="4" fill="{PALETTE[2]}" '
                f'fill-opacity="0.8"><title>{escape(tip)}</title></circle>'
            )
        mean = math.fsum(differences) / len(differences)
        body.append(
            f'<circle cx="{dx(mean):.2f}" cy="{y + 12}" r="6" fill="{PALETTE[5]}">'
            f"<title>mean {escape(difference_label)}: {escape(f'{mean:.4g}')}</title></circle>"
        )
        base = y + 26
        body += _axis_marks(dticks, base, left, width - right, width)
        y = base + 18
        if interval is not None:
            caption = f"{interval_label}: {_keep(f'{interval[0]:.4g} to {interval[1]:.4g}')}"
            under = _lines(10, y + 22, caption, width - 20, 2)
            body += under
            y += 22 + LINE * (len(under) - 1)
    return _svg(width, y + 10, title, body)


# ---- confusion matrix: counts of (reference, prediction) as a heat map ------------------

# Labels a confusion matrix draws; past it, the most frequent ones (the JSON, the tables
# and the CSV hold every label).
CONFUSION_MAX_LABELS = 30
# The darkest shade of a cell: the count written on it in the text colour (currentColor)
# keeps a contrast of about 7:1 or more on the site's light and dark backgrounds.
_CELL_MAX_OPACITY = 0.55


def confusion_matrix_svg(
    labels: Sequence[str],
    matrix: Sequence[Sequence[int]],
    *,
    title: str = "confusion matrix: rows are the reference, columns the prediction",
    heading: str = "rows: reference; columns: prediction",
) -> str:
    """A confusion matrix as a heat map: one row per reference label, one column per
    predicted label (`matrix[i][j]` examples of `labels[i]` predicted as `labels[j]`),
    under `heading`, the line that names the chart on the page (`title` is its tooltip).

    A cell's shade is its count's share of its row (of the reference class's examples):
    the diagonal (correct) in the palette's blue, the rest (confusions) in its
    vermillion, both at most `_CELL_MAX_OPACITY` so that the count written on the cell
    stays readable in light and dark mode; an empty cell is an outline. Each cell's
    tooltip gives both labels, the count and the share. Past CONFUSION_MAX_LABELS labels
    the most frequent ones are drawn (by examples in their row and column), in their
    given order, and the title says so. ValueError on no labels, a matrix that is not
    square over them, or a count that is not a whole number >= 0.
    """
    k = len(labels)
    if k == 0:
        raise ValueError("labels: no labels to draw")
    if len(matrix) != k or any(len(row) != k for row in matrix):
        raise ValueError(f"matrix: must be {k} x {k} for {k} labels")
    for row in matrix:
        for count in row:
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise ValueError(f"matrix: {count!r} is not a whole number >= 0")
    keep = list(range(k))
    whole = title
    if k > CONFUSION_MAX_LABELS:
        weight = [sum(matrix[i]) + sum(row[i] for row in matrix) for i in range(k)]
        top = sorted(range(k), key=lambda i: (-weight[i], i))[:CONFUSION_MAX_LABELS]
        keep = sorted(top)
        whole = f"{title} (the {CONFUSION_MAX_LABELS} most frequent of {k:,} labels)"
    shown = [labels[i] for i in keep]
    rows = [[matrix[i][j] for j in keep] for i in keep]
    totals = [sum(matrix[i]) for i in keep]  # the whole row, drawn columns or not
    return _both(
        lambda width: _confusion(width, shown, rows, totals, whole, heading, k > len(keep))
    )


def _confusion(
    width: int,
    labels: Sequence[str],
    rows: Sequence[Sequence[int]],
    totals: Sequence[int],
    title: str,
    heading: str,
    cut: bool,
) -> str:
    k = len(labels)
    # row labels on the left, up to 30% of the drawing; square cells fill the rest
    left = min(max(_width(label) for label in labels) + 14, 0.3 * width)
    left = max(left, 40.0)
    cell = min(44.0, (width - left - 10) / k)
    body = _lines(10, 10 + FONT, heading, width - 20, 2)
    head_y = 10 + FONT + LINE * (len(body) - 1) + 20
    top = head_y + 6
    for j, label in enumerate(labels):
        if cell < _width("x") + 2:
            break  # no room for even one character: the tooltips name the columns
        x = left + (j + 0.5) * cell
        text = _shorten(label, cell - 2)
        body.append(_text(x, head_y, text, anchor="middle", full=label))
    for i, (label, row) in enumerate(zip(labels, rows, strict=True)):
        y = top + i * cell
        if cell >= FONT:
            lx, text = _place(left - 6, label, 4, left - 6, "end")
            body.append(_text(lx, y + cell / 2 + FONT * 0.35, text, anchor="end", full=label))
        for j, count in enumerate(row):
            x = left + j * cell
            share = _fraction(count, totals[i])
            tip = (
                f"reference {labels[i]}, predicted {labels[j]}: {count:,} "
                f"({share:.1%} of the reference's {totals[i]:,})"
            )
            if count == 0:
                style = 'fill="none" stroke="currentColor" stroke-opacity="0.15"'
            else:
                colour = PALETTE[0] if i == j else PALETTE[5]
                opacity = 0.08 + (_CELL_MAX_OPACITY - 0.08) * share
                style = f'fill="{colour}" fill-opacity="{opacity:.3f}"'
            body.append(
                f'<rect x="{x + 0.5:.2f}" y="{y + 0.5:.2f}" width="{cell - 1:.2f}" '
                f'height="{cell - 1:.2f}" {style}><title>{escape(tip)}</title></rect>'
            )
            text = f"{count:,}"
            if count and _width(text) <= cell - 4 and cell >= FONT + 2:
                body.append(_text(x + cell / 2, y + cell / 2 + FONT * 0.35, text, anchor="middle"))
    y = top + k * cell + 22
    x = 10.0
    for text, colour in (
        ("correct (diagonal)", PALETTE[0]),
        ("confused (off the diagonal)", PALETTE[5]),
    ):
        w = 14 + _width(text) + 14
        if x + w > width - 10 and x > 10:
            x, y = 10.0, y + 18
        body.append(
            f'<rect x="{x:.2f}" y="{y - 10}" width="10" height="10" fill="{colour}" '
            f'fill-opacity="{_CELL_MAX_OPACITY}"/>'
        )
        body.append(_text(x + 14, y, _shorten(text, width - 10 - (x + 14)), full=text))
        x += w
    note = "darker: a larger share of the reference class's examples"
    if cut:
        note += f"; the {k} most frequent labels drawn"
    under = _lines(10, y + 20, note, width - 20, 3)
    body += under
    return _svg(width, y + 20 + LINE * (len(under) - 1) + 8, title, body)


# ---- checklist: a probe report's checks, one row each -----------------------------------

# A check's mark: its colour and the glyph drawn on it (a shape as well as a colour, so
# that the status reads without colour vision and in print). A skipped check is an
# outline in the text colour: it was not run, so it neither passed nor failed.
CHECK_MARKS = {
    "pass": (PALETTE[2], "M-4 0.5L-1.2 3.5L4.5 -3.5"),  # a tick on bluish green
    "fail": (PALETTE[5], "M-3.5 -3.5L3.5 3.5M3.5 -3.5L-3.5 3.5"),  # a cross on vermillion
    "skipped": ("", "M-4 0H4"),  # a dash in an outline
}
_MARK_R = 8.0


def checklist_svg(
    items: Sequence[dict[str, Any]], *, title: str = "checks: pass, fail or skipped"
) -> str:
    """A report's checks as a checklist: one row per check, in the given order, with its
    mark (a tick for pass, a cross for fail, a dash in an outline for skipped), its number
    and title, and under them its one-line summary of what was measured against what
    threshold; a failed or skipped check adds where to look or why it was skipped.

    Each item is a mapping with `status` (pass, fail or skipped), `title` and `summary`,
    and optionally `number`, `id` and `look_at` (the preflight probe's `details.checks`
    entries have all of them). A line too long for the drawing wraps, and past its line
    count is cut with its whole text as a tooltip; each mark's tooltip names the check and
    its status. ValueError on no items, an unknown status or an empty title.
    """
    if not items:
        raise ValueError("items: no checks to draw")
    for n, item in enumerate(items, start=1):
        status = item.get("status")
        if status not in CHECK_MARKS:
            raise ValueError(
                f"items: check {n} has status {status!r}, not one of {', '.join(CHECK_MARKS)}"
            )
        if not str(item.get("title") or "").strip():
            raise ValueError(f"items: check {n} has no title")
    return _both(lambda width: _checklist(width, items, title))


def _checklist(width: int, items: Sequence[dict[str, Any]], title: str) -> str:
    counts = {s: sum(item["status"] == s for item in items) for s in CHECK_MARKS}
    head = f"{counts['pass']} passed, {counts['fail']} failed, {counts['skipped']} skipped"
    body = _lines(10, 10 + FONT, head, width - 20, 2)
    y = 10 + FONT + LINE * (len(body) - 1) + 14  # the top of the first row
    left = 10 + 2 * _MARK_R + 8  # the text column, right of the marks
    room = width - left - 10
    for n, item in enumerate(items, start=1):
        status = item["status"]
        number = item.get("number", n)
        name = str(item.get("id") or item["title"])
        body.append(
            f'<line x1="10" x2="{width - 10}" y1="{y:.2f}" y2="{y:.2f}" '
            'stroke="currentColor" stroke-opacity="0.15"/>'
        )
        base = y + 8 + FONT  # the title's baseline
        cx, cy = 10 + _MARK_R, base - FONT * 0.35
        colour, glyph = CHECK_MARKS[status]
        style = (
            f'fill="{colour}"'
            if colour
            else 'fill="none" stroke="currentColor" stroke-opacity="0.6"'
        )
        ink = "#ffffff" if colour else "currentColor"
        body.append(
            f'<circle cx="{cx:.2f}" cy="{cy:.2f}" r="{_MARK_R}" {style}>'
            f"<title>{escape(f'check {number} {name}: {status}')}</title></circle>"
            f'<path d="{glyph}" transform="translate({cx:.2f} {cy:.2f})" fill="none" '
            f'stroke="{ink}" stroke-width="2" stroke-linecap="round"/>'
        )
        word = {"pass": "", "fail": " (failed)", "skipped": " (skipped)"}[status]
        heading = _lines(left, base, f"{number}. {item['title']}{word}", room, 2)
        body.append(f'<g font-weight="600">{"".join(heading)}</g>')
        lines = len(heading)
        summary = str(item.get("summary") or "")
        if summary:
            under = _lines(left, base + LINE * lines, summary, room, 4)
            body += under
            lines += len(under)
        look = item.get("look_at")
        if look and status != "pass" and look != summary:
            label = "look at" if status == "fail" else "why"
            more = _lines(left, base + LINE * lines, f"{label}: {look}", room, 4)
            body += more
            lines += len(more)
        y = base + LINE * (lines - 1) + 10
    body.append(
        f'<line x1="10" x2="{width - 10}" y1="{y:.2f}" y2="{y:.2f}" '
        'stroke="currentColor" stroke-opacity="0.15"/>'
    )
    return _svg(width, y + 6, title, body)


# ---- labelled points --------------------------------------------------------------------

POINT_RADIUS = 4


def _label_spot(
    cx: float,
    cy: float,
    w: float,
    box: tuple[float, float, float, float],
    placed: Sequence[tuple[float, float, float]],
) -> tuple[float, float]:
    """Where a label `w` wide goes for the point (cx, cy): its left x and baseline y.

    Right of the point, else left of it, else a line above or below on either side: the
    first spot inside `box` (x from, x to, baseline from, baseline to) that clears every
    label already `placed` (x from, x to, baseline); the first spot, kept inside the box,
    when none does (points close in both x and y).
    """
    x_lo, x_hi, y_lo, y_hi = box
    spots = [
        (cx + 8 if right else cx - 8 - w, cy + 4 + dy)
        for dy in (0, -(FONT + 2), FONT + 2, -2 * (FONT + 2), 2 * (FONT + 2))
        for right in (True, False)
    ]
    for x0, ly in spots:
        inside = x_lo <= x0 and x0 + w <= x_hi and y_lo <= ly <= y_hi
        if inside and not any(abs(ly - y0) < FONT and x0 < b and x0 + w > a for a, b, y0 in placed):
            return x0, ly
    x0, ly = spots[0]
    return min(max(x0, x_lo), x_hi - w), min(max(ly, y_lo), y_hi)


def labelled_points_svg(
    points: Sequence[tuple[str, float, float]],
    *,
    x_label: str,
    y_label: str,
    title: str,
    x_format: Callable[[float], str] = _plain,
    y_format: Callable[[float], str] = _plain,
) -> str:
    """A scatter of (label, x, y) points, each with its label written beside it, on linear
    axes: y from 0 (a divergence, a loss), x around the points. Each point's tooltip gives
    its label, `x_format(x)` and `y_format(y)`. No legend: the labels name the points, so
    the chart reads without its colours. ValueError on no points, or a value that is not a
    finite number of magnitude at most 1e300.
    """
    if not points:
        raise ValueError("points: no points to draw")
    _check_points([(label, [(x, y)]) for label, x, y in points], (), False)
    return _both(
        lambda width: _labelled_points(width, points, x_label, y_label, title, x_format, y_format)
    )


def _labelled_points(
    width: int,
    points: Sequence[tuple[str, float, float]],
    x_label: str,
    y_label: str,
    title: str,
    x_format: Callable[[float], str],
    y_format: Callable[[float], str],
) -> str:
    wide = width == WIDE
    f = _frame(
        width,
        [x for _, x, _ in points],
        [y for _, _, y in points],
        x_log2=False,
        y_label=y_label,
        plot_h=220 if wide else 200,
    )
    body, left, top, base, plot_w, px, py = f.body, f.left, f.top, f.base, f.plot_w, f.px, f.py
    # each label beside its point, clear of the labels placed before it (`_label_spot`)
    placed: list[tuple[float, float, float]] = []
    for i, (label, x, y) in enumerate(points):
        cx, cy = px(x), py(y)
        colour = PALETTE[i % len(PALETTE)]
        tip = f"{label}: {x_label} = {x_format(x)}, {y_label} = {y_format(y)}"
        body.append(
            f'<circle cx="{cx:.2f}" cy="{cy:.2f}" r="{POINT_RADIUS}" fill="{colour}" '
            f'stroke="currentColor" stroke-width="0.75"><title>{escape(tip)}</title></circle>'
        )
        shown = _shorten(label, plot_w - 4)
        w = _width(shown)
        x0, ly = _label_spot(cx, cy, w, (left + 2, left + plot_w - 2, top + FONT, base - 4), placed)
        placed.append((x0, x0 + w, ly))
        body.append(_text(x0, ly, shown, full=label))
    under = _lines(10, base + 38, x_label, width - 20, 2)
    body += under
    return _svg(width, base + 38 + LINE * (len(under) - 1) + 10, title, body)
