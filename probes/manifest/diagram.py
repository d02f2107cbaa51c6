"""The runs' lineage as an SVG drawing, in pure Python: one row per run in start order,
indented under its parent, an elbow line from each parent to its children, the node
coloured by status and the status written beside it (colour is never the only cue).

Text and lines use `currentColor`, so the drawing reads in light and dark themes; the
colours are the site's Okabe-Ito palette (colour-blind safe).
"""

from __future__ import annotations

from html import escape
from typing import Any

ROW = 26  # row height, viewBox units
INDENT = 22  # one generation
WIDTH = 640
FONT = 12
MAX_ROWS = 500  # a larger drawing is unreadable: the title says how many were left out
STATUS_FILL = {
    "ok": "#009E73",
    "interrupted": "#E69F00",
    "failed": "#D55E00",
    "killed": "#D55E00",
    "running": "none",
}


def depths(runs: list[dict[str, Any]]) -> dict[str, int]:
    """Each run's generation: 0 for a run without a parent among `runs`, else its
    parent's + 1 (a cycle, which only hand-edited files can hold, is cut at depth 0)."""
    parent = {r["id"]: r.get("parent") for r in runs}
    out: dict[str, int] = {}
    for rid in parent:
        seen, node, d = set(), rid, 0
        while parent.get(node) in parent and node not in seen:
            seen.add(node)
            node, d = parent[node], d + 1
        out[rid] = d if node not in seen else 0
    return out


def lineage_svg(runs: list[dict[str, Any]], title: str = "run lineage") -> str:
    """The drawing: rows sorted by start time, x by generation; `id  status  metrics`
    as each row's label (the first two numeric metrics, to 4 significant digits)."""
    ordered = sorted(runs, key=lambda r: (r["started_at"], r["id"]))
    left_out = max(0, len(ordered) - MAX_ROWS)
    ordered = ordered[:MAX_ROWS]
    depth = depths(ordered)
    row = {r["id"]: i for i, r in enumerate(ordered)}
    height = ROW * max(len(ordered), 1) + 8
    whole = title + (f" (the first {MAX_ROWS} runs; {left_out} more not drawn)" if left_out else "")
    parts = [
        f'<svg class="kd-lineage" role="img" viewBox="0 0 {WIDTH} {height}" '
        f'xmlns="http://www.w3.org/2000/svg" font-size="{FONT}" fill="currentColor">'
        f"<title>{escape(whole)}</title>"
    ]

    def xy(rid: str) -> tuple[float, float]:
        return 12 + INDENT * depth[rid], 4 + ROW * row[rid] + ROW / 2

    for r in ordered:
        p = r.get("parent")
        if p in row:
            (x0, y0), (x1, y1) = xy(p), xy(r["id"])
            parts.append(
                f'<path d="M{x0:g},{y0 + 6:g} V{y1:g} H{x1 - 6:g}" fill="none" '
                'stroke="currentColor" stroke-opacity="0.6"/>'
            )
    for r in ordered:
        x, y = xy(r["id"])
        fill = STATUS_FILL.get(r["status"], "none")
        numbers = [
            f"{k} {v:.4g}"
            for k, v in (r.get("metrics") or {}).items()
            if isinstance(v, int | float) and not isinstance(v, bool)
        ][:2]
        label = "  ".join([r["id"], r["status"], *numbers])
        room = int((WIDTH - x - 16) / (FONT * 0.6))
        label = label if len(label) <= room else label[: max(room - 3, 0)] + "..."
        parts.append(
            f'<circle cx="{x:g}" cy="{y:g}" r="6" fill="{fill}" stroke="currentColor">'
            f"<title>{escape(r['id'])}: {escape(r['status'])}</title></circle>"
            f'<text x="{x + 12:g}" y="{y + FONT / 3:g}">{escape(label)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)
