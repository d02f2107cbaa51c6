"""budget: campaign GPU-hours, days, cost, rental packages and a schedule by period
(`calculators.planning.budget`); comparison phases whose seeds per arm are tied to a
minimum detectable effect, with their control runs (`calculators.planning.comparison`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from calculators.commands.declaration import Args, Calculator, Input
from calculators.commands.seeds import ALPHA, POWER
from calculators.commands.shared import PRICE, UsageError, load_spec
from calculators.commands.training import LORA_RANK, LORA_TARGETS
from calculators.errors import InputError, shown
from calculators.limits import (
    MAX_DECISIONS,
    MAX_GPUS,
    MAX_MARGIN,
)
from calculators.memory.gpus import GPUS
from calculators.parsing import parse_float, parse_int
from calculators.planning.budget import (
    Campaign,
    Package,
    Phase,
    campaign_budget,
    phase_from_tokens,
)
from calculators.planning.comparison import (
    EXAMPLE_DETECT,
    EXAMPLE_SD_DIFFERENCE,
    SeedCount,
    SeedPlan,
    comparison_phase,
    example_phases,
    seed_count,
)
from calculators.render import table
from calculators.statistics.seeds import (
    EFFECT_RANGE,
    MAX_SEEDS,
    SD_RANGE,
)
from calculators.training.lora import adapter_parameters_or_none
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


def _budget_phase(args: Args, text: str, seeds: SeedCount | None = None) -> Phase:
    """NAME:RUNS:GPU_HOURS[:GPUS], with RUNS a count or arms=K (a comparison phase: K arms
    and one control, each on the seeds of the seed plan) and GPU_HOURS a number or
    tokens=N (derived from throughput)."""
    f = _fields("phase", text, _PHASE, 3)
    arms = None
    if f[1].startswith("arms="):
        arms = _part("phase", text, "arms", f[1].removeprefix("arms="), parse_int)
        if seeds is None:
            raise UsageError(
                f"--phase {shown(f[0])}: arms= needs the seeds per arm: --detect (the gain "
                "to detect) or --seeds, with --sd-difference",
                "phase",
            )
        runs = 1  # the phase's runs are arms x seeds, below
    else:
        runs = _part("phase", text, "RUNS", f[1], parse_int)
    phase = _hours_phase(args, text, f, runs)
    if arms is None or seeds is None:
        return phase
    return comparison_phase(
        phase.name,
        arms=arms,
        seeds=seeds.seeds,
        gpu_hours_per_run=phase.gpu_hours_per_run,
        gpus_per_run=phase.gpus_per_run,
    )


def _hours_phase(args: Args, text: str, f: list[str], runs: int) -> Phase:
    """The phase with its GPU-hours per run: typed, or tokens=N derived from throughput."""
    gpus = _part("phase", text, "GPUS", f[3], parse_int) if len(f) == 4 else 1
    if not f[2].startswith("tokens="):
        hours = _part("phase", text, "GPU_HOURS", f[2], parse_float)
        return Phase(name=f[0], runs=runs, gpu_hours_per_run=hours, gpus_per_run=gpus)
    if args.model is None and args.config is None:
        raise UsageError(
            f"--phase {shown(f[0])}: tokens= needs --model or --config to derive hours", "phase"
        )
    spec = load_spec(args)
    return phase_from_tokens(
        f[0],
        runs=runs,
        tokens_per_run=_part("phase", text, "tokens", f[2].removeprefix("tokens="), parse_int),
        spec=spec,
        seq_len=args.seq_len,
        gpu=args.gpu,
        mfu=args.mfu,
        gpus_per_run=gpus,
        adapter_parameters=adapter_parameters_or_none(spec, args.lora_rank, args.lora_targets),
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


def _seed_count(args: Args) -> SeedCount | None:
    """The seeds per arm and their minimum detectable effect, when asked for; with no
    phase typed, the example campaign's own plan (its gain and spread, at the level and
    power given), on which its comparison phases run."""
    test = {k: v for k, v in (("alpha", args.alpha), ("power", args.power)) if v is not None}
    if args.detect is None and args.seeds is None:
        if args.phase:
            return None
        sd = args.sd_difference or EXAMPLE_SD_DIFFERENCE
        return seed_count(SeedPlan(sd_difference=sd, detect=EXAMPLE_DETECT, **test))
    if args.detect is not None and args.seeds is not None:
        raise UsageError(
            "--seeds and --detect exclude each other: give the gain to detect (the seeds "
            "follow) or the seeds (the gain they detect follows)",
            "seeds",
        )
    if args.sd_difference is None:
        given = "--detect" if args.detect is not None else "--seeds"
        raise UsageError(
            f"{given} needs --sd-difference: the sd of the per-seed paired differences, "
            "from a pilot or an earlier campaign, ties a seed count to the gain it detects",
            "sd_difference",
        )
    return seed_count(
        SeedPlan(sd_difference=args.sd_difference, detect=args.detect, seeds=args.seeds, **test)
    )


def _seeds_line(s: dict[str, Any]) -> str:
    """The seed count and its minimum detectable effect, as one line."""
    asked = "" if s["detect"] is None else f"the gain to detect {s['detect']:.4g} needs "
    return (
        f"Seeds per arm: {asked}{s['seeds']:,}, whose minimum detectable effect is "
        f"{s['minimum_detectable_effect']:.4g} (sd of the paired differences "
        f"{s['sd_difference']:.4g}, two-sided alpha {s['alpha']:g}, power {s['power']:g})"
    )


def _controls_line(r: dict[str, Any]) -> str:
    """The control runs, as one line."""
    return (
        f"Control runs: {r['control_runs']:,}, {r['control_gpu_hours']:,.1f} GPU-hours "
        "(the reference configuration on each comparison phase's seeds)"
    )


def _margin_line(r: dict[str, Any]) -> str:
    """The rerun margin and what rounding it up per phase adds, as one line."""
    return (
        f"Rerun margin: {r['reruns']:,} reruns, {r['margin_gpu_hours']:,.1f} GPU-hours; "
        f"ceil(runs x {r['margin']:g}) in each phase adds {r['rounding_gpu_hours']:,.1f} "
        f"GPU-hours over the exact share ({r['pooled_reruns']:,} reruns if rounded once "
        "over the campaign)"
    )


def _runs_cell(p: dict[str, Any]) -> str:
    """'12 + 3', or '3 x 4 + 4 control + 4' for a comparison phase."""
    if p.get("control_runs"):
        made = f"{p['arms']} x {p['seeds']}" if p.get("arms") else f"{p['runs']:,}"
        return f"{made} + {p['control_runs']:,} control + {p['reruns']:,}"
    return f"{p['runs']:,} + {p['reruns']:,}"


def named_lines(r: dict[str, Any]) -> list[str]:
    """The result's named lines: the seeds and their MDE, the control runs, the margin."""
    lines = [] if r.get("seed_count") is None else [_seeds_line(r["seed_count"])]
    if r.get("control_runs"):
        lines.append(_controls_line(r))
    if "rounding_gpu_hours" in r:
        lines.append(_margin_line(r))
    return lines


def run(args: Args) -> tuple[dict[str, Any], str]:
    seeds = _seed_count(args)
    if args.phase:
        phases = tuple(_budget_phase(args, text, seeds) for text in args.phase)
    else:
        assert seeds is not None  # the example's plan, or the one asked for
        phases = example_phases(seeds.seeds)
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
    best = r.cheapest_covering
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
        "control_runs": r.control_runs,
        "control_gpu_hours": r.control_gpu_hours,
        "reruns": r.reruns,
        "pooled_reruns": r.pooled_reruns,
        "rounding_gpu_hours": r.rounding_gpu_hours,
        "margin": args.margin,
        "seed_count": None if seeds is None else vars(seeds),
        "cheapest_covering_days": None if best is None else best.days,
    }
    rows = [
        [p["name"], _runs_cell(p), f"{p['gpu_hours']:,.1f}", f"{p['wall_hours']:,.1f}"]
        for p in data["phases"]
    ]
    rows.append(["total", "", f"{r.gpu_hours:,.1f}", f"{r.wall_hours:,.1f}"])
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
        *named_lines(data),
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
        [p["name"], _runs_cell(p), f"{p['gpu_hours']:,.1f}", f"{p['wall_hours']:,.1f}"]
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
            html_table(
                ["line", "value"],
                [line.split(": ", 1) for line in named_lines(r)],
                caption="Seeds, control runs and rerun margin",
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
            help="One per line, NAME:RUNS:GPU_HOURS[:GPUS], in order; RUNS may be arms=K: "
            "K arms and one control, each on the seeds below. Empty: an example campaign.",
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
        replace(
            LORA_RANK,
            page=False,
            help="LoRA rank, for tokens= phases (base frozen: 4N + 6 N_a FLOPs per token); "
            "empty: full training, 6N",
        ),
        replace(
            LORA_TARGETS,
            page=False,
            help="LoRA target modules or all-linear, for tokens= phases with --lora-rank",
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
            name="sd_difference",
            label="sd of the paired differences",
            kind="float",
            optional=True,
            minimum=SD_RANGE[0],
            maximum=SD_RANGE[1],
            help="For arms= phases: the sd of per-seed differences against the control, "
            "from a pilot, in the metric's units.",
        ),
        Input(
            name="detect",
            label="Gain to detect",
            kind="float",
            optional=True,
            minimum=EFFECT_RANGE[0],
            maximum=EFFECT_RANGE[1],
            help="The minimum detectable effect asked for, in the metric's units: the seeds "
            "per arm follow.",
        ),
        Input(
            name="seeds",
            label="Seeds per arm",
            kind="int",
            optional=True,
            minimum=2,
            maximum=MAX_SEEDS,
            help="Instead of the gain to detect: the seeds per arm; the gain they detect is "
            "printed.",
        ),
        replace(
            ALPHA,
            default=None,
            optional=True,
            help="Two-sided level of each arm's paired test; empty: 0.05.",
        ),
        replace(
            POWER,
            default=None,
            optional=True,
            help="Chance of detecting the gain when it is there, above alpha; empty: 0.8.",
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
    renamed={
        "price_per_gpu_hour": "price",
        "tokens": "phase",
        "arms": "phase",
        "effect": "detect",
        "max_seeds": "detect",
    },
    order=7,
)
