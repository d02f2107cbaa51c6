"""seeds: paired seed statistics, the interval of the difference, the minimum detectable
effect and the seeds needed (`calculators.statistics.seeds`)."""

from __future__ import annotations

from typing import Any

from calculators.commands.declaration import Args, Calculator, Input
from calculators.commands.shared import UsageError
from calculators.parsing import parse_numbers
from calculators.statistics.seeds import (
    ALPHA_RANGE,
    CONFIDENCE_RANGE,
    EFFECT_RANGE,
    MAX_SEEDS,
    POWER_MAX,
    SD_RANGE,
    PairedComparison,
    minimum_detectable_effect,
    paired_difference,
    seeds_needed,
)
from calculators.web.render import html_table, interval_svg, summary


def _p_value(p: float | None, log10_p: float | None) -> str:
    """'0.0123', or '10^-412.3' where p is below what a double holds."""
    if p is None or log10_p is None:
        return "undefined"
    return f"{p:.4g}" if p > 1e-300 else f"10^{log10_p:.1f}"


def run(args: Args) -> tuple[dict[str, Any], str]:
    data: dict[str, Any] = {}
    text: list[str] = []
    notes: list[str] = []  # what could not be computed, and why
    if args.a is not None or args.b is not None:
        if args.a is None or args.b is None:
            raise UsageError("--a and --b must be given together", "b" if args.b is None else "a")
        r = paired_difference(
            PairedComparison(
                a=parse_numbers("a", args.a),
                b=parse_numbers("b", args.b),
                confidence=args.confidence,
            )
        )
        data["paired"] = {**vars(r), "excludes_zero": r.excludes_zero}
        head = (
            f"{r.seeds} paired seeds: mean difference (b - a) {r.mean_difference:.4g}, "
            f"sd {r.sd_difference:.4g}"
        )
        if r.ci_low is None or r.ci_high is None:
            notes.append(
                "every difference b - a is the same, as typed: their sd is 0, so the t "
                "interval and the test are undefined (with more seeds, or scores to more "
                "digits, the differences would show their spread)"
            )
            text.append(head)
        else:
            text.append(
                f"{head}\n{r.confidence:.0%} interval [{r.ci_low:.4g}, {r.ci_high:.4g}] "
                f"(t = {r.t_critical:.4g}, df {r.seeds - 1}); two-sided p "
                f"{_p_value(r.p_value, r.log10_p_value)}; "
                + ("excludes 0" if r.excludes_zero else "includes 0")
            )
        sd = args.sd_difference if args.sd_difference is not None else r.sd_difference
        seeds = args.seeds if args.seeds is not None else r.seeds
    else:
        sd, seeds = args.sd_difference, args.seeds
    # An sd of 0 from equal differences plans nothing; an sd the reader gives is checked.
    usable = sd is not None and (sd > 0 or args.sd_difference is not None)
    if not usable and sd is not None and (seeds is not None or args.effect is not None):
        notes.append(
            "the minimum detectable effect and the seeds needed need an sd of the differences "
            "above 0: give one (--sd-difference), from a pilot run or an earlier campaign"
        )
    if usable and seeds is not None:
        mde = minimum_detectable_effect(sd, seeds, alpha=args.alpha, power=args.power)
        data["minimum_detectable_effect"] = mde
        text.append(
            f"Minimum detectable effect with {seeds} seeds (alpha {args.alpha:g}, "
            f"power {args.power:g}): {mde:.4g}"
        )
    if args.effect is not None and usable:
        n = seeds_needed(args.effect, sd, alpha=args.alpha, power=args.power)
        data["seeds_needed"] = n
        text.append(f"Seeds needed to detect {args.effect:g}: {n}")
    elif args.effect is not None and sd is None:
        raise UsageError("--effect needs --sd-difference or --a/--b", "effect")
    if not data:
        raise UsageError("give --a and --b, or --sd-difference with --seeds or --effect")
    data["notes"] = notes
    text += [f"Note: {n}" for n in notes]
    return data, "\n".join(text)


def _cell(value: Any) -> str:
    """A table cell: yes/no for booleans, n/a for what is undefined, 4 digits for floats."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def html(r: dict[str, Any]) -> str:
    parts = []
    rows = []
    if "paired" in r:
        p = r["paired"]
        head = f"{p['seeds']} paired seeds: mean difference (b - a) {p['mean_difference']:.4g}"
        if p["ci_low"] is None or p["ci_high"] is None:
            parts.append(summary(f"{head}; every difference is the same, so no t interval."))
        else:
            parts.append(
                summary(
                    f"{head}, {p['confidence']:.0%} interval [{p['ci_low']:.4g}, "
                    f"{p['ci_high']:.4g}], "
                    + ("excludes 0." if p["excludes_zero"] else "includes 0.")
                )
            )
            parts.append(
                interval_svg(p["ci_low"], p["ci_high"], p["mean_difference"], p["confidence"])
            )
        rows += [[k.replace("_", " "), _cell(v)] for k, v in p.items()]
    if "minimum_detectable_effect" in r:
        rows.append(["minimum detectable effect", f"{r['minimum_detectable_effect']:.4g}"])
    if "seeds_needed" in r:
        rows.append(["seeds needed", str(r["seeds_needed"])])
    parts.append(html_table(["quantity", "value"], rows, caption="Seed statistics"))
    return "".join(parts)


CALCULATOR = Calculator(
    name="seeds",
    title="Seed statistics",
    summary="Paired seeds: interval of the difference, minimum detectable effect, seeds needed.",
    help="paired seed statistics: interval, MDE, seeds needed",
    inputs=(
        Input(
            name="a",
            label="Variant A scores",
            kind="text",
            example="0.80,0.82,0.79,0.81,0.80",
            optional=True,
            help="One score per seed, comma-separated.",
            metavar="SCORES",
        ),
        Input(
            name="b",
            label="Variant B scores",
            kind="text",
            example="0.82,0.83,0.81,0.84,0.81",
            optional=True,
            help="Same seeds, same order as A.",
            metavar="SCORES",
        ),
        Input(
            name="confidence",
            label="Interval level",
            kind="float",
            default=0.95,
            minimum=CONFIDENCE_RANGE[0],
            maximum=CONFIDENCE_RANGE[1],
            help="Confidence level of the interval, from 0.5 to 1 - 1e-10.",
        ),
        Input(
            name="sd_difference",
            label="sd of the differences",
            kind="float",
            optional=True,
            minimum=SD_RANGE[0],
            maximum=SD_RANGE[1],
            help="Instead of scores: the standard deviation of per-seed differences.",
        ),
        Input(
            name="seeds",
            label="Seeds",
            kind="int",
            optional=True,
            minimum=2,
            maximum=MAX_SEEDS,
            help="Seeds for the minimum detectable effect; empty: as many as scores.",
        ),
        Input(
            name="effect",
            label="Gap to detect",
            kind="float",
            example=0.005,
            optional=True,
            minimum=EFFECT_RANGE[0],
            maximum=EFFECT_RANGE[1],
            help="The smallest difference worth detecting: how many seeds it needs.",
        ),
        Input(
            name="alpha",
            label="Test level alpha",
            kind="float",
            default=0.05,
            minimum=ALPHA_RANGE[0],
            maximum=ALPHA_RANGE[1],
            help="Two-sided test level, from 1e-10 to 0.5; the interval has its own level.",
        ),
        Input(
            name="power",
            label="Power",
            kind="float",
            default=0.8,
            minimum=0,
            maximum=POWER_MAX,
            help="Probability of detecting the gap when it is there: above alpha "
            "(alpha itself is the chance of 'detecting' no gap at all).",
        ),
    ),
    run=run,
    html=html,
    order=8,
)
