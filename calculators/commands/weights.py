"""weights: parameter counts and the bytes of the weights in a number format
(`calculators.memory.weights`)."""

from __future__ import annotations

from typing import Any

from calculators.commands.declaration import Args, Calculator
from calculators.commands.shared import (
    FORMAT,
    KEEP_UNQUANTIZED,
    MODEL_SOURCE,
    assumption_lines,
    keep_unquantized,
    load_spec,
)
from calculators.memory.weights import weight_bytes
from calculators.model.params import parameter_counts
from calculators.render import table
from calculators.units import format_count, format_gib
from calculators.web.render import html_table, stacked_bar_svg, summary


def run(args: Args) -> tuple[dict[str, Any], str]:
    spec = load_spec(args)
    counts = parameter_counts(spec)
    w = weight_bytes(spec, args.format, keep_unquantized=keep_unquantized(args))
    data = {
        "model": spec.name,
        "model_type": spec.model_type,
        "format": args.format,
        "parameters": {
            "total": counts.total,
            "active": counts.active,
            "embedding": counts.embedding,
            "non_embedding": counts.non_embedding,
            "mtp": counts.mtp,
            "by_line": counts.by_line,
        },
        "weight_bytes": w.main_bytes,
        # what a format costs per parameter once its scales and the tensors it leaves in
        # float are counted: 8 x bytes / parameters of the main model
        "bits_per_parameter": 8 * w.main_bytes / counts.total,
        "mtp_weight_bytes": w.mtp_bytes,
        # the rows under weight_bytes add up to it; the MTP modules are apart
        "bytes_by_category": w.main_by_category,
        "bytes_by_format": w.main_by_format,
        "mtp_bytes_by_format": w.mtp_by_format,
        "assumptions": list(spec.assumptions),
    }
    rows = [[line, format_count(n), f"{n:,}"] for line, n in counts.by_line.items() if n]
    rows += [
        ["total", format_count(counts.total), f"{counts.total:,}"],
        ["active per token", format_count(counts.active), f"{counts.active:,}"],
    ]
    if counts.mtp:
        rows.append(["MTP modules (apart)", format_count(counts.mtp), f"{counts.mtp:,}"])
    text = "\n".join(
        [
            f"{spec.name} ({spec.model_type})",
            table(["parameters", "count", "exact"], rows),
            "",
            table(
                ["weights in " + args.format, "GiB", "bytes"],
                [[fmt, format_gib(b), f"{b:,}"] for fmt, b in w.main_by_format.items()]
                + [["total (main model)", format_gib(w.main_bytes), f"{w.main_bytes:,}"]]
                + _mtp_rows(w.mtp_bytes),
            ),
            *assumption_lines(spec),
        ]
    )
    return data, text


def _mtp_rows(mtp_bytes: int) -> list[list[str]]:
    if not mtp_bytes:
        return []
    return [["MTP modules (apart)", format_gib(mtp_bytes), f"{mtp_bytes:,}"]]


def html(r: dict[str, Any]) -> str:
    p = r["parameters"]
    rows = [[k, format_count(n), f"{n:,}"] for k, n in p["by_line"].items() if n]
    rows += [["total", format_count(p["total"]), f"{p['total']:,}"]]
    rows += [["active per token", format_count(p["active"]), f"{p['active']:,}"]]
    cats = list(r["bytes_by_category"].items())
    return "".join(
        [
            summary(
                f"{r['model']} in {r['format']}: {format_gib(r['weight_bytes'])} of weights "
                f"({r['weight_bytes']:,} bytes), {format_count(p['total'])} parameters."
            ),
            stacked_bar_svg(cats, title="weights by tensor category, GiB"),
            html_table(
                ["category", "GiB", "bytes"],
                [[c, format_gib(b), f"{b:,}"] for c, b in cats]
                + [["total", format_gib(r["weight_bytes"]), f"{r['weight_bytes']:,}"]]
                + (
                    [["MTP modules (apart)", format_gib(mtp), f"{mtp:,}"]]
                    if (mtp := r.get("mtp_weight_bytes", 0))
                    else []
                ),
                caption="Weights memory",
            ),
            html_table(["parameters", "count", "exact"], rows, caption="Parameter counts"),
        ]
    )


CALCULATOR = Calculator(
    name="weights",
    title="Weights memory",
    summary="Parameter counts and the bytes of the weights in a number format.",
    help="parameter counts and weights memory",
    inputs=(*MODEL_SOURCE, FORMAT, KEEP_UNQUANTIZED),
    run=run,
    html=html,
    order=1,
)
