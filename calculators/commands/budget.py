"""budget: campaign GPU-hours, days, cost, rental packages and a schedule by period
(`calculators.planning.budget`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from calculators.commands.declaration import Args, Calculator, Input
from calculators.commands.shared import PRICE, UsageError, load_spec
from calculators.errors import InputError, shown
from calculators.limits import (
    MAX_DECISIONS,
    MAX_GPUS,
    MAX_MARGIN,
)
from calculators.memory.gpus import GPUS
from calculators.parsing import parse_float, parse_int
from calculators.planning.budget import (
    EXAMPLE_PHASES,
    Campaign,
    Package,
    Phase,
    campaign_budget,
    phase_from_tokens,
)
from calculators.render import table
from calculators.web.render import html_table, schedule_svg, summary


def _fields(field: str, text: str, names: tuple[str, ...], required: int) -> list[str]:
    """The ':'-separated parts of one --phase or --package value."""
    parts = text.split(":")
    if not required <= len(parts) <= len(names):
        form = ":".join(names[:required]) + "".join(f"[:{n}]" for n in names[required:])
        raise UsageError(f"--{field} must be {form}, got {shown(text)}", field)
    return parts


def _part(field: str, text: str, name: str, value: str, parse: Callable[[str, str], Any]) -> Any:
    """One part of a --phase or --package value, parsed; the error names the part."""
    try:
        return parse(name, value)
    except InputError as e:
        raise UsageError(f"--{field} {shown(text)}: {e}", field) from None


_PHASE = ("NAME", "RUNS", "GPU_HOURS", "GPUS")


def _budget_phase(args: Args, text: str) -> Phase:
    """NAME:RUNS:GPU_HOURS[:GPUS], or NAME:RUNS:tokens=N[:GPUS] derived from throughput."""
    f = _fields("phase", text, _PHASE, 3)
    runs = _part("phase", text, "RUNS", f[1], parse_int)
    gpus = _part("phase", text, "GPUS", f[3], parse_int) if len(f) == 4 else 1
    if not f[2].startswith("tokens="):
        hours = _part("phase", text, "GPU_HOURS", f[2], parse_float)
        return Phase(name=f[0], runs=runs, gpu_hours_per_run=hours, gpus_per_run=gpus)
    if args.model is None and args.config is None:
        raise UsageError(
            f"--phase {shown(f[0])}: tokens= needs --model or --config to derive hours", "phase"
        )
    return phase_from_tokens(
        f[0],
        runs=runs,
        tokens_per_run=_part("phase", text, "tokens", f[2].removeprefix("tokens="), parse_int),
        spec=load_spec(args),
        seq_len=args.seq_len,
        gpu=args.gpu,
        mfu=args.mfu,
        gpus_per_run=gpus,
    )


def _budget_package(text: str) -> Package:
    """DAYS:GPUS:USD."""
    f = _fields("package", text, ("DAYS", "GPUS", "USD"), 3)
    return Package(
        days=_part("package", text, "DAYS", f[0], parse_int),
        gpus=_part("package", text, "GPUS", f[1], parse_int),
        price_usd=_part("package", text, "USD", f[2], parse_float),
        label=f"{f[0]}-day offer",
    )


def run(args: Args) -> tuple[dict[str, Any], str]:
    phases = EXAMPLE_PHASES
    if args.phase:
        phases = tuple(_budget_phase(args, text) for text in args.phase)
    packages = tuple(_budget_package(text) for text in args.package) if args.package else None
    r = campaign_budget(
        Campaign(
            phases=phases,
            gpus=args.gpus,
            price_per_gpu_hour=args.price,
            margin=args.margin,
            decisions=args.decisions,
            packages=packages,
        )
    )
    data = {
        "phases": [vars(p) for p in r.phases],
        "gpu_hours": r.gpu_hours,
        "margin_gpu_hours": r.margin_gpu_hours,
        "wall_hours": r.wall_hours,
        "wall_days": r.wall_days,
        "cost_usd": r.cost_usd,
        "cost_per_decision": r.cost_per_decision,
        "packages": [vars(k) for k in r.packages],
        "schedule": list(r.schedule),
        "schedule_period_days": r.schedule_period_days,
        "example_phases": not args.phase,
    }
    rows = [
        [p.name, f"{p.runs:,} + {p.reruns:,}", f"{p.gpu_hours:,.1f}", f"{p.wall_hours:,.1f}"]
        for p in r.phases
    ]
    rows.append(["total", "", f"{r.gpu_hours:,.1f}", f"{r.wall_hours:,.1f}"])
    best = r.cheapest_covering
    text = [
        (
            "Example phases (pass --phase NAME:RUNS:GPU_HOURS[:GPUS] for yours)\n"
            if not args.phase
            else ""
        )
        + table(["phase", "runs + reruns", "GPU-hours", "wall hours"], rows),
        f"\n{r.wall_days:,.2f} days on {args.gpus:,} GPUs; ${r.cost_usd:,.2f} at "
        f"${args.price:,.2f} per GPU-hour"
        + ("" if r.cost_per_decision is None else f", ${r.cost_per_decision:,.2f} per decision"),
        table(
            ["package", "covers", "slack hours", "USD"],
            [
                [
                    k.label,
                    "yes" if k.covers else "no",
                    f"{k.slack_hours:,.1f}",
                    f"{k.price_usd:,.2f}",
                ]
                for k in r.packages
            ],
        ),
        "Cheapest package that covers the plan: " + (best.label if best else "none"),
        "",
        table(
            ["day" if r.schedule_period_days == 1 else "days", "GPU-hours by phase"],
            [
                [
                    period_label(i, r.schedule_period_days),
                    ", ".join(f"{n} {h:,.1f}" for n, h in row.items()),
                ]
                for i, row in enumerate(r.schedule)
            ],
        ),
    ]
    return data, "\n".join(text)


def period_label(index: int, period_days: int) -> str:
    """Row `index` (from 0) of a schedule in periods of `period_days`: '3' or '8-14'."""
    first = index * period_days + 1
    return str(first) if period_days == 1 else f"{first:,}-{first + period_days - 1:,}"


def html(r: dict[str, Any]) -> str:
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
            summary(
                ("Example phases. " if r["example_phases"] else "")
                + f"{r['gpu_hours']:,.1f} GPU-hours over {r['wall_days']:.2f} days, "
                f"{r['cost_usd']:,.2f} USD{per_decision}."
            ),
            schedule_svg(
                r["schedule"],
                [p["name"] for p in r["phases"]],
                r.get("schedule_period_days", 1),
            ),
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


CALCULATOR = Calculator(
    name="budget",
    title="Campaign budget",
    summary="GPU-hours, days, cost, rental packages and a schedule by period.",
    help="campaign GPU-hours, days, cost and packages",
    inputs=(
        Input(
            name="phase",
            label="Phases",
            kind="lines",
            default=(),
            optional=True,
            help="One per line, NAME:RUNS:GPU_HOURS[:GPUS], in order; empty: an example campaign.",
            metavar="NAME:RUNS:GPU_HOURS[:GPUS]",
        ),
        Input(
            name="config",
            label="config.json",
            kind="text",
            page=False,
            help="config.json, for tokens= phases",
            metavar="PATH",
        ),
        Input(
            name="model",
            label="Model preset",
            kind="text",
            page=False,
            help="a preset, for tokens= phases",
            metavar="PRESET",
        ),
        Input(
            name="gpu",
            label="GPU",
            kind="choice",
            default="h100-sxm",
            choices=tuple(g.id for g in GPUS),
            page=False,
            help="catalog card, for tokens= phases",
        ),
        Input(
            name="mfu",
            label="MFU",
            kind="float",
            default=0.3,
            page=False,
            help="MFU, for tokens= phases",
        ),
        Input(
            name="seq_len",
            label="Sequence length",
            kind="int",
            default=4096,
            page=False,
            help="sequence, for tokens= phases",
        ),
        Input(
            name="gpus",
            label="GPUs rented",
            kind="int",
            default=1,
            example=4,
            unit="GPUs",
            minimum=1,
            maximum=MAX_GPUS,
            help="GPUs rented in parallel.",
        ),
        PRICE,
        Input(
            name="margin",
            label="Rerun margin",
            kind="float",
            default=0.2,
            minimum=0,
            maximum=MAX_MARGIN,
            help="Share of runs budgeted again for interruptions, in [0, 10): 0.2 "
            "redoes one run in five.",
        ),
        Input(
            name="decisions",
            label="Decisions",
            kind="int",
            optional=True,
            minimum=1,
            maximum=MAX_DECISIONS,
            help="Useful results the campaign is for; gives the cost per decision.",
        ),
        Input(
            name="package",
            label="Rental offers",
            kind="lines",
            default=(),
            optional=True,
            help="One per line, DAYS:GPUS:USD; empty: example 3/7/30-day packages.",
            metavar="DAYS:GPUS:USD",
        ),
    ),
    run=run,
    html=html,
    renamed={"price_per_gpu_hour": "price", "tokens": "phase"},
    order=7,
)
