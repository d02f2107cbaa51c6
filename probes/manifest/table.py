"""`manifest table`: one row per run for the decision, as plain text, CSV or JSON.

Every run given is a row, whatever its status: a failed or interrupted run that silently
drops out of a comparison is how comparisons go wrong.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from calculators.render import table as text_table
from probes.manifest.lineage import _flat, changed_text

MAX_METRIC_COLUMNS = 6  # by default; --metric names any number
MAX_MANIFESTS = 10_000


def metric_names(runs: list[dict[str, Any]], chosen: list[str] | None) -> list[str]:
    """The metric columns: those chosen, else the numeric metrics (dotted names for
    nested ones) in the order they first appear, at most MAX_METRIC_COLUMNS."""
    if chosen:
        return list(dict.fromkeys(chosen))
    names: list[str] = []
    for run in runs:
        for k, v in _flat(run.get("metrics") or {}).items():
            number = isinstance(v, int | float) and not isinstance(v, bool)
            if k and k not in names and (number or v in ("NaN", "Infinity", "-Infinity")):
                names.append(k)
    return names[:MAX_METRIC_COLUMNS]


def rows(runs: list[dict[str, Any]], metrics: list[str] | None = None) -> list[dict[str, Any]]:
    """One row per run, sorted by start time then id: id, parent, status, what changed
    against the parent, the chosen metrics (None where a run has none), wall seconds,
    GPU-hours and cost. ValueError when two manifests share an id."""
    if len(runs) > MAX_MANIFESTS:
        raise ValueError(f"{len(runs):,} manifests given: at most {MAX_MANIFESTS:,}")
    by_id: dict[str, dict[str, Any]] = {}
    for run in runs:
        if run["id"] in by_id:
            raise ValueError(f"two manifests have the id {run['id']!r}")
        by_id[run["id"]] = run
    names = metric_names(runs, metrics)
    out = []
    for run in sorted(runs, key=lambda r: (r["started_at"], r["id"])):
        flat = _flat(run.get("metrics") or {})
        cost = run.get("cost") or {}
        out.append(
            {
                "id": run["id"],
                "parent": run.get("parent"),
                "status": run["status"],
                "changed": changed_text(run, by_id),
                "metrics": {n: flat.get(n) for n in names},
                "wall_seconds": run.get("wall_seconds"),
                "gpu_hours": cost.get("gpu_hours"),
                "cost_usd": cost.get("usd"),
            }
        )
    return out


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


HEAD = ["id", "parent", "status", "changed"]
TAIL = ["GPU-hours", "cost USD"]


def _table_cells(r: dict[str, Any]) -> list[str]:
    usd = r["cost_usd"]
    cost = "-" if usd is None else f"{usd:.2f}" if usd >= 0.01 or usd == 0 else f"{usd:.2g}"
    return [
        r["id"],
        r["parent"] or "-",
        r["status"],
        r["changed"],
        *(_cell(v) for v in r["metrics"].values()),
        _cell(r["gpu_hours"]),
        cost,
    ]


def render_text(table_rows: list[dict[str, Any]]) -> str:
    """The rows as a plain-text table (metrics to 4 significant digits, cost in cents)."""
    names = list(table_rows[0]["metrics"]) if table_rows else []
    return text_table([*HEAD, *names, *TAIL], [_table_cells(r) for r in table_rows])


def render_csv(table_rows: list[dict[str, Any]]) -> str:
    """The rows as CSV, every figure at full precision (empty where unknown)."""
    names = list(table_rows[0]["metrics"]) if table_rows else []
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*HEAD, *names, "wall_seconds", "gpu_hours", "cost_usd"])
    for r in table_rows:
        w.writerow(
            [
                r["id"],
                r["parent"] or "",
                r["status"],
                r["changed"],
                *("" if v is None else v for v in r["metrics"].values()),
                *("" if r[k] is None else r[k] for k in ("wall_seconds", "gpu_hours", "cost_usd")),
            ]
        )
    return buf.getvalue()
