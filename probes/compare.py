"""`python -m probes compare reports/*.json`: estimate vs measured as markdown and CSV.

Importable without torch. One row per report and figure name that the report holds in
`estimate` or `measured`: the figure, its unit, the estimate, the measurement and
measured / estimate. Bytes are shown in GiB (2^30) in the markdown table; the CSV keeps
the exact numbers.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Sequence
from typing import Any

from probes.report import read

GIB = 2**30
COLUMNS = (
    "report",
    "probe",
    "model",
    "device",
    "status",
    "figure",
    "unit",
    "estimate",
    "measured",
    "ratio",
)


def rows_of(reports: Sequence[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """One row per (report, figure), figures in estimate order then measured-only ones;
    a report without figures (an early failure) still gets one row with its status."""
    rows = []
    for path, r in reports:
        names = list(r["estimate"]) + [n for n in r["measured"] if n not in r["estimate"]]
        env = r["environment"]
        base = {
            "report": os.path.basename(path),
            "probe": r["probe"]["name"],
            "model": r["inputs"].get("model", ""),
            "device": env.get("device_name") or env.get("device") or "",
            "status": r["status"],
        }
        for name in names or [None]:
            rows.append(
                {
                    **base,
                    "figure": name or "",
                    "unit": r["units"].get(name, "") if name else "",
                    "estimate": r["estimate"].get(name) if name else None,
                    "measured": r["measured"].get(name) if name else None,
                    "ratio": r["ratio"].get(name) if name else None,
                }
            )
    return rows


def _show(value: Any, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "bytes":
        return f"{value / GIB:.4f} GiB"
    if isinstance(value, float):
        return f"{value:.4g}"
    return f"{value:,}"


def markdown(rows: list[dict[str, Any]]) -> str:
    head = [c for c in COLUMNS if c != "unit"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        cells = []
        for c in head:
            v = row[c]
            if c in ("estimate", "measured"):
                cells.append(_show(v, row["unit"]))
            elif c == "ratio":
                cells.append("-" if v is None else f"{v:.3f}")
            else:
                cells.append(str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def to_csv(rows: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    for row in rows:
        w.writerow({k: "" if v is None else v for k, v in row.items()})
    return buf.getvalue()


def compare(paths: Sequence[str], csv_path: str | None) -> str:
    """Read every report (ValueError naming a bad one), write CSV, return the markdown."""
    if not paths:
        raise ValueError("compare needs at least one report file, got none")
    rows = rows_of([(p, read(p)) for p in paths])
    if csv_path is not None:
        with open(csv_path, "w", encoding="utf-8", newline="") as f:
            f.write(to_csv(rows))
    return markdown(rows)


__all__ = ["COLUMNS", "compare", "markdown", "rows_of", "to_csv"]
