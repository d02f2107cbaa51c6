"""The half-normal plot of an unreplicated screen's effects, as SVG (Daniel 1959).

Each |effect| against its half-normal score (`calculators.statistics.screening.
half_normal_scores`), a line through the origin of slope PSE where noise effects fall,
and Lenth's margins of error ME and SME as dashed horizontal lines: an effect above
them, off the line at the right, is likely active. Drawn with the shared frame of
`calculators.web.render`, at both of its widths, in currentColor: readable without
JavaScript and in the dark theme.
"""

from __future__ import annotations

from collections.abc import Sequence

from calculators.statistics.screening import half_normal_scores
from calculators.web.render import (
    FONT,
    LINE,
    PALETTE,
    POINT_RADIUS,
    WIDE,
    _both,
    _check_points,
    _frame,
    _label_spot,
    _lines,
    _place,
    _plain,
    _shorten,
    _svg,
    _text,
    _width,
)
from calculators.web.text import escape

X_LABEL = "half-normal score"
Y_LABEL = "|effect|"


def half_normal_points(effects: Sequence[tuple[str, float]]) -> list[tuple[str, float, float]]:
    """(label, score, |effect|) in increasing |effect|: the i-th smallest against
    Phi^-1(0.5 + 0.5 (i - 0.5) / m)."""
    ordered = sorted(((label, abs(value)) for label, value in effects), key=lambda p: p[1])
    scores = half_normal_scores(len(ordered))
    return [(label, q, size) for (label, size), q in zip(ordered, scores, strict=True)]


def half_normal_svg(
    effects: Sequence[tuple[str, float]],
    *,
    pse: float,
    me: float,
    sme: float,
    title: str,
    labelled: int = 5,
) -> str:
    """The half-normal plot of (label, effect) pairs with the PSE line and the ME and
    SME lines; the `labelled` largest effects carry their labels (every point has its
    tooltip). ValueError on no effects or a value that is not a finite number."""
    if not effects:
        raise ValueError("effects: no effects to draw")
    points = half_normal_points(effects)
    _check_points(
        [(label, [(q, y)]) for label, q, y in points],
        [("ME", me), ("SME", sme), ("PSE", pse)],
        False,
    )
    return _both(lambda width: _draw(width, points, pse, me, sme, title, labelled))


def _draw(
    width: int,
    points: Sequence[tuple[str, float, float]],
    pse: float,
    me: float,
    sme: float,
    title: str,
    labelled: int,
) -> str:
    top_q = points[-1][1]
    f = _frame(
        width,
        [0.0, top_q],
        [y for _, _, y in points] + [me, sme, pse * top_q],
        x_log2=False,
        y_label=Y_LABEL,
        plot_h=220 if width == WIDE else 200,
    )
    body, left, top, base, plot_w, px, py = f.body, f.left, f.top, f.base, f.plot_w, f.px, f.py
    right = left + plot_w
    # the noise line: |effect| = PSE x score, where the inactive effects should lie
    body.append(
        f'<line class="kd-reference" x1="{px(0):.2f}" y1="{py(0):.2f}" x2="{px(top_q):.2f}" '
        f'y2="{py(pse * top_q):.2f}" stroke="currentColor" stroke-opacity="0.6">'
        f"<title>{escape(f'noise line: slope PSE = {_plain(pse)}')}</title></line>"
    )
    for name, y, dash in (("ME", me, "6 4"), ("SME", sme, "2 3")):
        ly = py(y)
        body.append(
            f'<line x1="{left:.2f}" x2="{right:.2f}" y1="{ly:.2f}" y2="{ly:.2f}" '
            f'stroke="currentColor" stroke-dasharray="{dash}">'
            f"<title>{escape(f'{name} = {_plain(y)}')}</title></line>"
        )
        tx, shown = _place(left + 4, f"{name} {y:.4g}", left + 2, right - 2, "start")
        body.append(_text(tx, ly - 4, shown))
    placed: list[tuple[float, float, float]] = []
    first_label = len(points) - labelled
    for i, (label, q, y) in enumerate(points):
        cx, cy = px(q), py(y)
        colour = PALETTE[0] if y > me else "currentColor"
        tip = f"{label}: |effect| = {_plain(y)}, score {q:.3f}"
        body.append(
            f'<circle cx="{cx:.2f}" cy="{cy:.2f}" r="{POINT_RADIUS}" fill="{colour}" '
            f'fill-opacity="{1 if y > me else 0.35}" stroke="currentColor" '
            f'stroke-width="0.75"><title>{escape(tip)}</title></circle>'
        )
        if i >= first_label:
            shown = _shorten(label, plot_w / 2)
            w = _width(shown)
            x0, ly = _label_spot(cx, cy, w, (left + 2, right - 2, top + FONT, base - 4), placed)
            placed.append((x0, x0 + w, ly))
            body.append(_text(x0, ly, shown, full=label))
    under = _lines(10, base + 38, X_LABEL, width - 20, 2)
    body += under
    return _svg(width, base + 38 + LINE * (len(under) - 1) + 10, title, body)
