"""HTML tables, SVG charts and CSV for calculator results, in pure Python.

The same functions prerender the result into the built page and redraw it in the
browser's worker, so what a reader sees before and after JavaScript has one source.
Capacity is always shown in GiB (2^30 bytes), labelled so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from calculators.units import format_count, format_gib
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


def stacked_bar_svg(
    segments: Sequence[tuple[str, int]],
    *,
    capacity: int | None = None,
    capacity_label: str = "usable memory",
    title: str = "",
) -> str:
    """A horizontal bar of byte segments in GiB, with a marker at `capacity` if given."""
    width, left, right, bar_y, bar_h = 640, 10, 10, 30, 34
    segments = [(label, b) for label, b in segments if b > 0]
    total = sum(b for _, b in segments)
    scale_max = max(total, capacity or 0, 1)
    span = width - left - right
    legend_rows = (len(segments) + 1) // 2
    height = bar_y + bar_h + 34 + 18 * legend_rows
    out = [
        f'<svg class="kd-chart" role="img" viewBox="0 0 {width} {height}" '
        f'xmlns="http://www.w3.org/2000/svg" font-size="12" fill="currentColor">',
        f"<title>{escape(title or 'memory by component, GiB')}</title>",
    ]
    x = float(left)
    for i, (label, b) in enumerate(segments):
        w = span * b / scale_max
        colour = PALETTE[i % len(PALETTE)]
        out.append(
            f'<rect x="{x:.2f}" y="{bar_y}" width="{w:.2f}" height="{bar_h}" fill="{colour}">'
            f"<title>{escape(label)}: {format_gib(b)}</title></rect>"
        )
        x += w
    out.append(
        f'<text x="{left}" y="20">total {escape(format_gib(total))}'
        + (
            f" of {escape(format_gib(capacity))} {escape(capacity_label)}"
            if capacity is not None
            else ""
        )
        + "</text>"
    )
    if capacity is not None:
        cx = left + span * capacity / scale_max
        colour = "#D55E00" if total > capacity else "currentColor"
        out.append(
            f'<line x1="{cx:.2f}" x2="{cx:.2f}" y1="{bar_y - 6}" y2="{bar_y + bar_h + 6}" '
            f'stroke="{colour}" stroke-width="2" stroke-dasharray="4 3"/>'
        )
        anchor = "end" if cx > width / 2 else "start"
        out.append(
            f'<text x="{cx:.2f}" y="{bar_y + bar_h + 20}" text-anchor="{anchor}">'
            f"{escape(capacity_label)}</text>"
        )
    for i, (label, b) in enumerate(segments):
        lx = left + (i % 2) * (span / 2)
        ly = bar_y + bar_h + 40 + 18 * (i // 2)
        out.append(
            f'<rect x="{lx:.2f}" y="{ly - 10}" width="10" height="10" '
            f'fill="{PALETTE[i % len(PALETTE)]}"/>'
            f'<text x="{lx + 14:.2f}" y="{ly}">{escape(label)}: {escape(format_gib(b))}</text>'
        )
    out.append("</svg>")
    return "".join(out)


def schedule_svg(schedule: Sequence[dict[str, float]], phases: Sequence[str]) -> str:
    """Day-by-day GPU-hours, stacked by phase (the budget's schedule)."""
    width, left, top, bottom = 640, 44, 16, 28
    days = max(len(schedule), 1)
    peak = max((sum(day.values()) for day in schedule), default=0.0) or 1.0
    legend_rows = (len(phases) + 2) // 3
    plot_h = 160
    height = top + plot_h + bottom + 18 * legend_rows
    slot = (width - left - 10) / days
    colour = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(phases)}
    out = [
        f'<svg class="kd-chart" role="img" viewBox="0 0 {width} {height}" '
        f'xmlns="http://www.w3.org/2000/svg" font-size="12" fill="currentColor">',
        "<title>GPU-hours per day, by phase</title>",
        f'<text x="4" y="{top + 4}">{peak:,.1f}</text>',
        f'<text x="4" y="{top + plot_h}">0</text>',
        f'<text x="{left}" y="{top + plot_h + 16}">GPU-hours per day; days 1 to {days}</text>',
    ]
    for d, day in enumerate(schedule):
        y = float(top + plot_h)
        for name, hours in day.items():
            h = plot_h * hours / peak
            y -= h
            out.append(
                f'<rect x="{left + d * slot + 1:.2f}" y="{y:.2f}" width="{max(slot - 2, 1):.2f}" '
                f'height="{h:.2f}" fill="{colour.get(name, PALETTE[0])}">'
                f"<title>day {d + 1}, {escape(name)}: {hours:,.1f} GPU-hours</title></rect>"
            )
    for i, name in enumerate(phases):
        lx = left + (i % 3) * 200
        ly = top + plot_h + 36 + 18 * (i // 3)
        out.append(
            f'<rect x="{lx}" y="{ly - 10}" width="10" height="10" fill="{colour[name]}"/>'
            f'<text x="{lx + 14}" y="{ly}">{escape(name)}</text>'
        )
    out.append("</svg>")
    return "".join(out)


def interval_svg(low: float, high: float, mean: float, level: float) -> str:
    """The interval of the paired difference against zero."""
    width, left, right, y = 640, 20, 20, 40
    lo, hi = min(low, 0.0), max(high, 0.0)
    pad = (hi - lo) * 0.1 or 1.0
    lo, hi = lo - pad, hi + pad

    def px(v: float) -> float:
        return left + (width - left - right) * (v - lo) / (hi - lo)

    return (
        f'<svg class="kd-chart" role="img" viewBox="0 0 {width} 70" '
        f'xmlns="http://www.w3.org/2000/svg" font-size="12" fill="currentColor">'
        f"<title>{level:.0%} interval of the mean difference (b - a)</title>"
        f'<line x1="{px(0):.2f}" x2="{px(0):.2f}" y1="10" y2="60" stroke="currentColor" '
        f'stroke-dasharray="4 3"/><text x="{px(0) + 4:.2f}" y="62">0</text>'
        f'<line x1="{px(low):.2f}" x2="{px(high):.2f}" y1="{y}" y2="{y}" stroke="{PALETTE[0]}" '
        f'stroke-width="4"/><circle cx="{px(mean):.2f}" cy="{y}" r="6" fill="{PALETTE[1]}"/>'
        f'<text x="{px(low):.2f}" y="{y - 10}" text-anchor="middle">{low:.4g}</text>'
        f'<text x="{px(high):.2f}" y="{y - 10}" text-anchor="middle">{high:.4g}</text>'
        "</svg>"
    )


def _p(text: str) -> str:
    return f'<p class="kd-summary">{escape(text)}</p>'


def _weights(r: dict[str, Any]) -> str:
    p = r["parameters"]
    rows = [[k, format_count(n), f"{n:,}"] for k, n in p["by_line"].items() if n]
    rows += [["total", format_count(p["total"]), f"{p['total']:,}"]]
    rows += [["active per token", format_count(p["active"]), f"{p['active']:,}"]]
    cats = list(r["bytes_by_category"].items())
    return "".join(
        [
            _p(
                f"{r['model']} in {r['format']}: {format_gib(r['weight_bytes'])} of weights "
                f"({r['weight_bytes']:,} bytes), {format_count(p['total'])} parameters."
            ),
            stacked_bar_svg(cats, title="weights by tensor category, GiB"),
            html_table(
                ["category", "GiB", "bytes"],
                [[c, format_gib(b), f"{b:,}"] for c, b in cats]
                + [["total", format_gib(r["weight_bytes"]), f"{r['weight_bytes']:,}"]],
                caption="Weights memory",
            ),
            html_table(["parameters", "count", "exact"], rows, caption="Parameter counts"),
        ]
    )


def _kv_cache(r: dict[str, Any]) -> str:
    rows = [
        [
            f"{line['layers']} x {line['attention']}"
            + (f" (window {line['window']:,})" if line["window"] else ""),
            f"{line['bytes_per_token']:,}",
            f"{line['tokens_held']:,}",
            format_gib(line["bytes"]),
        ]
        for line in r["lines"]
    ]
    if r["scale_bytes"]:
        rows.append(["per-layer scales", "", "", format_gib(r["scale_bytes"])])
    rows.append(["total", f"{r['bytes_per_token']:,}", "", format_gib(r["total_bytes"])])
    segments = [
        (
            f"{line['layers']} {line['attention']} layers"
            + (f" (window {line['window']:,})" if line["window"] else ""),
            line["bytes"],
        )
        for line in r["lines"]
    ]
    if r["scale_bytes"]:
        segments.append(("scales", r["scale_bytes"]))
    parts = [
        _p(
            f"{r['model']}: {format_gib(r['total_bytes'])} of KV cache for {r['batch']:,} x "
            f"{r['context']:,} tokens in {r['kv_format']} ({r['allocation']}); "
            f"{r['bytes_per_token']:,} bytes per token."
        ),
        stacked_bar_svg(
            segments,
            capacity=r.get("free_bytes"),
            capacity_label="free memory",
            title="KV cache by layer kind, GiB",
        ),
        html_table(["layers", "bytes/token", "tokens held", "GiB"], rows, caption="KV cache"),
    ]
    if "max_context" in r:
        parts.append(
            _p(
                f"In {format_gib(r['free_bytes'])} free: longest context "
                f"{r['max_context']:,} tokens for {r['batch']:,} sequence(s) (limited by "
                f"{r['max_context_limited_by']}); at most {r['max_sequences']:,} sequences of "
                f"{r['context']:,} tokens."
            )
        )
    return "".join(parts)


def _envelope(r: dict[str, Any]) -> str:
    verdict = "fits" if r["fits"] else "does not fit"
    card = r["gpu"] or "the card"
    return "".join(
        [
            _p(
                f"{r['model']}: {format_gib(r['total_bytes'])} in total against "
                f"{format_gib(r['visible_bytes'])} visible on {card}: {verdict}, headroom "
                f"{format_gib(r['headroom_bytes'])}."
            ),
            stacked_bar_svg(
                [(line["label"], line["bytes"]) for line in r["lines"]],
                capacity=r["visible_bytes"],
                capacity_label=f"visible on {card}",
                title="memory envelope against the card, GiB",
            ),
            html_table(
                ["line", "GiB", "basis"],
                [[line["label"], format_gib(line["bytes"]), line["basis"]] for line in r["lines"]]
                + [["total", format_gib(r["total_bytes"]), ""]],
                caption="Memory envelope",
            ),
            html_table(
                ["card", "visible", "needed", "headroom", "fits"],
                [
                    [
                        c["gpu"],
                        format_gib(c["visible_bytes"]),
                        format_gib(c["total_bytes"]),
                        format_gib(c["headroom_bytes"]),
                        "yes" if c["fits"] else "no",
                    ]
                    for c in r["cards"]
                ],
                caption="Every catalog card",
            ),
        ]
    )


def phase_bars_svg(phases: Sequence[tuple[str, int]], capacity: int, label: str) -> str:
    """One bar per phase in GiB, with the card's usable memory marked across them."""
    width, left, top, row = 640, 230, 10, 26
    peak = max([b for _, b in phases] + [capacity, 1])
    span = width - left - 70
    height = top + row * len(phases) + 24
    cx = left + span * capacity / peak
    out = [
        f'<svg class="kd-chart" role="img" viewBox="0 0 {width} {height}" '
        f'xmlns="http://www.w3.org/2000/svg" font-size="12" fill="currentColor">',
        "<title>memory by phase against the card, GiB</title>",
    ]
    for i, (name, b) in enumerate(phases):
        y = top + i * row
        colour = PALETTE[5] if b > capacity else PALETTE[0]
        out.append(
            f'<text x="{left - 6}" y="{y + 15}" text-anchor="end">{escape(name)}</text>'
            f'<rect x="{left}" y="{y + 3}" width="{span * b / peak:.2f}" height="{row - 8}" '
            f'fill="{colour}"><title>{escape(name)}: {format_gib(b)}</title></rect>'
            f'<text x="{left + span * b / peak + 4:.2f}" y="{y + 15}">{format_gib(b)}</text>'
        )
    bottom = top + row * len(phases)
    out.append(
        f'<line x1="{cx:.2f}" x2="{cx:.2f}" y1="{top}" y2="{bottom}" stroke="currentColor" '
        f'stroke-width="2" stroke-dasharray="4 3"/>'
        f'<text x="{cx:.2f}" y="{bottom + 16}" text-anchor="middle">{escape(label)} '
        f"{format_gib(capacity)}</text></svg>"
    )
    return "".join(out)


def _training(r: dict[str, Any]) -> str:
    reserves = sum(x["bytes"] for x in r["reserves"])
    verdict = "fits" if r["fits"] else "does not fit"
    largest = r.get("max_micro_batch")
    return "".join(
        [
            _p(
                f"{r['model']}: {format_gib(r['total_bytes'])} per GPU at the peak "
                f"({r['peak_phase'].replace('_', ' ')}) with reserves, against "
                f"{format_gib(r['visible_bytes'])} visible: {verdict}, headroom "
                f"{format_gib(r['headroom_bytes'])}."
                + ("" if largest is None else f" Largest micro-batch that fits: {largest}.")
            ),
            phase_bars_svg(
                [(p["label"] + " + reserves", p["bytes"] + reserves) for p in r["phases"]],
                r["visible_bytes"],
                "visible",
            ),
            html_table(
                ["phase", "GiB"],
                [[p["label"], format_gib(p["bytes"])] for p in r["phases"]],
                caption="Phases of a step (reserves not included)",
            ),
            html_table(
                ["line", "GiB", "basis"],
                [
                    [x["label"], format_gib(x["bytes"]), x["basis"]]
                    for x in r["lines"]
                    if x["bytes"]
                ],
                caption="Memory lines",
            ),
            html_table(
                ["on top of the peak", "GiB", "basis"],
                [[x["label"], format_gib(x["bytes"]), x["basis"]] for x in r["reserves"]]
                + [["total", format_gib(r["total_bytes"]), ""]],
                caption="Reserves",
            ),
        ]
    )


def _throughput(r: dict[str, Any]) -> str:
    t, b = r["training"], r["inference"]
    return "".join(
        [
            _p(
                f"{r['model']}: {t['tokens']:,} training tokens take "
                f"{t['seconds'] / 3600:,.2f} h on {t['gpus']:,} GPU(s) at MFU {t['mfu']:.0%} "
                f"({t['gpu_hours']:,.1f} GPU-hours)."
            ),
            html_table(
                ["quantity", "value"],
                [
                    ["FLOPs per token", f"{t['flops_per_token']:.4g}"],
                    ["total FLOPs", f"{t['total_flops']:.4g}"],
                    ["tokens per second", f"{t['tokens_per_second']:,.0f}"],
                    ["wall-clock hours", f"{t['seconds'] / 3600:,.2f}"],
                    ["GPU-hours", f"{t['gpu_hours']:,.1f}"],
                ],
                caption="Training",
            ),
            html_table(
                ["quantity", "value"],
                [
                    [
                        "decode tokens per second (upper bound)",
                        f"{b['decode_tokens_per_second']:,.0f}",
                    ],
                    ["decode bound", b["decode_bound"]],
                    ["bytes read per decode step", format_gib(b["bytes_per_step"])],
                    [
                        "prefill tokens per second (upper bound)",
                        f"{b['prefill_tokens_per_second']:,.0f}",
                    ],
                ],
                caption=f"Inference, batch {b['batch']:,} at context {b['context']:,}",
            ),
        ]
    )


def _batch(r: dict[str, Any]) -> str:
    rows = [[k.replace("_", " "), f"{v:,}" if isinstance(v, int) else str(v)] for k, v in r.items()]
    return _p(
        f"{r['sequences_per_update']:,} sequences and {r['tokens_per_update']:,} tokens per "
        "update; normalise the loss by the update's total token count."
    ) + html_table(["quantity", "value"], rows, caption="Effective batch")


def _budget(r: dict[str, Any]) -> str:
    rows = [
        [
            p["name"],
            f"{p['runs']} + {p['reruns']}",
            f"{p['gpu_hours']:,.1f}",
            f"{p['wall_hours']:,.1f}",
        ]
        for p in r["phases"]
    ]
    rows.append(["total", "", f"{r['gpu_hours']:,.1f}", f"{r['wall_hours']:,.1f}"])
    per_decision = (
        ""
        if r["cost_per_decision"] is None
        else f", {r['cost_per_decision']:,.2f} USD per decision"
    )
    return "".join(
        [
            _p(
                ("Example phases. " if r["example_phases"] else "")
                + f"{r['gpu_hours']:,.1f} GPU-hours over {r['wall_days']:.2f} days, "
                f"{r['cost_usd']:,.2f} USD{per_decision}."
            ),
            schedule_svg(r["schedule"], [p["name"] for p in r["phases"]]),
            html_table(["phase", "runs + reruns", "GPU-hours", "wall hours"], rows, caption="Plan"),
            html_table(
                ["package", "covers", "slack hours", "USD"],
                [
                    [
                        k["label"],
                        "yes" if k["covers"] else "no",
                        f"{k['slack_hours']:,.1f}",
                        f"{k['price_usd']:,.2f}",
                    ]
                    for k in r["packages"]
                ],
                caption="Packages",
            ),
        ]
    )


def _seeds(r: dict[str, Any]) -> str:
    parts = []
    rows = []
    if "paired" in r:
        p = r["paired"]
        parts.append(
            _p(
                f"{p['seeds']} paired seeds: mean difference (b - a) {p['mean_difference']:.4g}, "
                f"{p['confidence']:.0%} interval [{p['ci_low']:.4g}, {p['ci_high']:.4g}], "
                + ("excludes 0." if p["excludes_zero"] else "includes 0.")
            )
        )
        parts.append(interval_svg(p["ci_low"], p["ci_high"], p["mean_difference"], p["confidence"]))
        rows += [
            [
                k.replace("_", " "),
                "n/a" if v is None else f"{v:.4g}" if isinstance(v, float) else str(v),
            ]
            for k, v in p.items()
        ]
    if "minimum_detectable_effect" in r:
        rows.append(["minimum detectable effect", f"{r['minimum_detectable_effect']:.4g}"])
    if "seeds_needed" in r:
        rows.append(["seeds needed", str(r["seeds_needed"])])
    parts.append(html_table(["quantity", "value"], rows, caption="Seed statistics"))
    return "".join(parts)


RENDERERS: dict[str, Callable[[dict[str, Any]], str]] = {
    "weights": _weights,
    "kv-cache": _kv_cache,
    "envelope": _envelope,
    "training": _training,
    "throughput": _throughput,
    "batch": _batch,
    "budget": _budget,
    "seeds": _seeds,
}


def render_result(name: str, result: dict[str, Any]) -> str:
    """The result as HTML: a summary, an SVG chart where one helps, and tables."""
    return RENDERERS[name](result)


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
