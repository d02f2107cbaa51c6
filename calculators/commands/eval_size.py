"""eval-size: how large an evaluation set must be (`calculators.evaluation.sizing`): the
standard error and Wilson interval of one accuracy; the standard error of a paired
difference of two accuracies and the examples its interval needs; the power of McNemar's
test (exact conditional, and Connor's normal approximation) and the examples a gain
needs; the examples two independent sets would need, for contrast; and the examples for
common gains at the same discordance."""

from __future__ import annotations

from dataclasses import replace
from statistics import NormalDist
from typing import Any

from calculators.commands.declaration import Args, Calculator, Input
from calculators.commands.seeds import ALPHA, CONFIDENCE, POWER
from calculators.errors import InputError
from calculators.evaluation.sizing import (
    EXACT_MAX_EXAMPLES,
    MAX_EXAMPLES,
    accuracy_examples_for_half_width,
    accuracy_standard_error,
    check_paired_table,
    examples_for_power,
    mcnemar_power,
    mcnemar_power_normal,
    paired_difference_examples_for_half_width,
    paired_difference_standard_error,
    unpaired_examples,
    wilson_interval,
)
from calculators.web.render import html_table, line_chart_svg, notes_html, summary

# The gains of the decision table, in accuracy units (half a point to five points).
COMMON_GAINS = (0.005, 0.01, 0.02, 0.03, 0.05)
# Points of the power curve: shares of the examples the gain needs.
_CURVE_SHARES = (0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1.0, 1.25, 1.5, 1.75, 2.0)


def _gain_id(gain: float) -> str:
    """A table row's id, in percentage points with 'p' for the decimal point ('0p5pt',
    '2pt'): a page names the row by its gain, and a dot would split the reference."""
    return f"{gain * 100:g}".replace(".", "p") + "pt"


def _z_half_width(se: float, confidence: float) -> float:
    """z_{1-(1-c)/2} SE: the normal-approximation interval's half-width."""
    return NormalDist().inv_cdf(0.5 + confidence / 2.0) * se


def _gain_row(args: Args, discordance: float, gain: float) -> dict[str, Any]:
    """A decision-table row: the examples a gain needs, paired and unpaired, or why not."""
    row: dict[str, Any] = {"id": _gain_id(gain), "gain": gain}
    try:
        check_paired_table(args.accuracy, discordance, gain)
        n, method = examples_for_power(discordance, gain, args.alpha, args.power, args.method)
        row.update(examples_paired=n, method=method, discordant=n * discordance)
    except InputError as e:
        row.update(examples_paired=None, method=None, discordant=None, why=str(e))
    try:
        row["examples_unpaired"] = unpaired_examples(args.accuracy, gain, args.alpha, args.power)
    except InputError as e:
        row["examples_unpaired"] = None
        row.setdefault("why", str(e))
    return row


def _discordance(args: Args) -> float:
    """The discordance typed, or b + c over n where a pilot's count is given."""
    if args.discordant is None:
        return float(args.discordance)
    if (
        not isinstance(args.discordant, int)
        or isinstance(args.discordant, bool)
        or not 0 < args.discordant <= args.examples
    ):
        raise InputError(
            "discordant",
            f"discordant must be a whole number from 1 to examples ({args.examples:,}): the "
            f"examples of the pilot where exactly one model is right, got {args.discordant!r}",
        )
    return args.discordant / args.examples


def run(args: Args) -> tuple[dict[str, Any], str]:
    notes: list[str] = []
    n = args.examples
    discordance = _discordance(args)
    check_paired_table(args.accuracy, discordance, args.gain)
    if args.discordant is not None:
        notes.append(
            f"the discordance is the pilot's {args.discordant:,} discordant examples over "
            f"{n:,}, {discordance:.4g}; the discordance typed is not used"
        )
    se = accuracy_standard_error(args.accuracy, n)
    low, high = wilson_interval(args.accuracy, n, args.confidence)
    accuracy = {
        "value": args.accuracy,
        "examples": n,
        "standard_error": se,
        "standard_error_bound": 0.5 / n**0.5,
        "confidence": args.confidence,
        "wilson_low": low,
        "wilson_high": high,
        "examples_for_half_width": accuracy_examples_for_half_width(
            args.accuracy, args.half_width, args.confidence
        ),
    }
    paired_se = paired_difference_standard_error(discordance, args.gain, n)
    paired = {
        "discordance": discordance,
        "gain": args.gain,
        "standard_error": paired_se,
        "half_width": _z_half_width(paired_se, args.confidence),
        "half_width_target": args.half_width,
        "examples_for_half_width": paired_difference_examples_for_half_width(
            discordance, args.gain, args.half_width, args.confidence
        ),
    }
    power, power_method = mcnemar_power(n, discordance, args.gain, args.alpha, args.method)
    needed, needed_method = examples_for_power(
        discordance, args.gain, args.alpha, args.power, method=args.method
    )
    normal_needed, _ = examples_for_power(
        discordance, args.gain, args.alpha, args.power, method="normal"
    )
    mcnemar = {
        "alpha": args.alpha,
        "power_target": args.power,
        "power": power,
        "power_method": power_method,
        "power_normal": mcnemar_power_normal(n, discordance, args.gain, args.alpha),
        "examples": needed,
        "examples_method": needed_method,
        "examples_normal": normal_needed,
        "discordant_expected": needed * discordance,
        "reached": power >= args.power,
    }
    unpaired = unpaired_examples(args.accuracy, args.gain, args.alpha, args.power)
    contrast = {
        "examples_per_set": unpaired,
        "examples_total": 2 * unpaired,
        "ratio_to_paired": unpaired / needed,
    }
    gains = [_gain_row(args, discordance, g) for g in COMMON_GAINS]
    curve = []
    for share in _CURVE_SHARES:
        m = max(1, round(needed * share))
        if m <= MAX_EXAMPLES:
            p, _ = mcnemar_power(m, discordance, args.gain, args.alpha, args.method)
            curve.append({"examples": m, "power": p})
    if args.method == "exact" and (n > EXACT_MAX_EXAMPLES or needed_method == "normal"):
        notes.append(
            f"above {EXACT_MAX_EXAMPLES:,} examples the power is Connor's normal "
            "approximation, not the exact sum"
        )
    if needed * discordance < 20:
        notes.append(
            f"only about {needed * discordance:.3g} discordant examples are expected at "
            "that size: the normal approximation is poor there, read the exact figure"
        )
    data = {
        "accuracy": accuracy,
        "paired": paired,
        "mcnemar": mcnemar,
        "unpaired": contrast,
        "gains": gains,
        "curve": curve,
        "notes": notes,
    }
    text = [
        f"Accuracy {args.accuracy:g} on {n:,} examples: standard error {se:.4g} "
        f"(at most 0.5/sqrt(n) = {accuracy['standard_error_bound']:.4g}); "
        f"{args.confidence:.0%} Wilson interval [{low:.4g}, {high:.4g}]",
        f"Paired difference (discordance {discordance:g}, gain {args.gain:g}): "
        f"standard error {paired_se:.4g}, {args.confidence:.0%} half-width "
        f"{paired['half_width']:.4g}; examples for a half-width of {args.half_width:g}: "
        f"{paired['examples_for_half_width']:,}",
        f"McNemar power at {n:,} examples (alpha {args.alpha:g}, {power_method}): "
        f"{power:.4g}; examples for power {args.power:g}: {needed:,} ({needed_method}; "
        f"Connor's normal approximation: {normal_needed:,})",
        f"Two independent sets instead: {unpaired:,} examples each "
        f"({contrast['ratio_to_paired']:.3g} times the paired set)",
        "Examples for common gains at this discordance (paired; unpaired per set): "
        + "; ".join(
            f"{r['gain']:g}: "
            + (f"{r['examples_paired']:,}" if r["examples_paired"] is not None else "n/a")
            + "; "
            + (f"{r['examples_unpaired']:,}" if r["examples_unpaired"] is not None else "n/a")
            for r in gains
        ),
    ]
    text += [f"Note: {x}" for x in notes]
    return data, "\n".join(text)


def _count(value: int | None) -> str:
    return "n/a" if value is None else f"{value:,}"


def html(r: dict[str, Any]) -> str:
    a, p, m, u = r["accuracy"], r["paired"], r["mcnemar"], r["unpaired"]
    parts = [
        summary(
            f"To detect a gain of {p['gain']:g} at discordance {p['discordance']:g} with "
            f"power {m['power_target']:g} (alpha {m['alpha']:g}): {m['examples']:,} examples, "
            f"scored by both models ({m['examples_method']}); two independent sets would "
            f"need {u['examples_per_set']:,} each. At {a['examples']:,} examples the power is "
            f"{m['power']:.3g}."
        ),
        notes_html(r),
    ]
    if len(r["curve"]) >= 2:
        parts.append(
            line_chart_svg(
                [("power of McNemar's test", [(c["examples"], c["power"]) for c in r["curve"]])],
                x_label="examples n (scored by both models)",
                y_label="power",
                title=f"power to detect a gain of {p['gain']:g} at discordance "
                f"{p['discordance']:g}, alpha {m['alpha']:g}",
                hlines=[(f"target power {m['power_target']:g}", m["power_target"])],
                y_format=lambda v: f"{v:.3g}",
            )
        )
    parts.append(
        html_table(
            ["quantity", "value"],
            [
                ["standard error of the accuracy", f"{a['standard_error']:.4g}"],
                ["its bound, 0.5 / sqrt(n)", f"{a['standard_error_bound']:.4g}"],
                [
                    f"{a['confidence']:.0%} Wilson interval",
                    f"[{a['wilson_low']:.4g}, {a['wilson_high']:.4g}]",
                ],
                [
                    f"examples for a half-width of {p['half_width_target']:g} (one accuracy)",
                    f"{a['examples_for_half_width']:,}",
                ],
                ["standard error of the paired difference", f"{p['standard_error']:.4g}"],
                [f"{a['confidence']:.0%} half-width of the difference", f"{p['half_width']:.4g}"],
                [
                    f"examples for a half-width of {p['half_width_target']:g} (difference)",
                    f"{p['examples_for_half_width']:,}",
                ],
                [f"McNemar power at n ({m['power_method']})", f"{m['power']:.4g}"],
                ["McNemar power at n (Connor's normal approximation)", f"{m['power_normal']:.4g}"],
                [f"examples for the target power ({m['examples_method']})", f"{m['examples']:,}"],
                ["examples for the target power (Connor)", f"{m['examples_normal']:,}"],
                ["discordant examples expected there", f"{m['discordant_expected']:.4g}"],
                ["two independent sets: examples per set", f"{u['examples_per_set']:,}"],
            ],
            caption="Evaluation-set size",
        )
    )
    parts.append(
        html_table(
            ["gain", "paired examples", "discordant expected", "unpaired, per set"],
            [
                [
                    f"{g['gain']:g}",
                    _count(g["examples_paired"]),
                    "n/a" if g["discordant"] is None else f"{g['discordant']:.4g}",
                    _count(g["examples_unpaired"]),
                ]
                for g in r["gains"]
            ],
            caption=f"Examples for common gains at discordance {p['discordance']:g}, power "
            f"{m['power_target']:g}, alpha {m['alpha']:g}",
        )
    )
    return "".join(parts)


CALCULATOR = Calculator(
    name="eval-size",
    title="Evaluation-set size",
    summary="How many examples an evaluation set needs: the standard error of an accuracy "
    "and of a paired difference, McNemar's power, the examples a gain needs.",
    help="evaluation-set size: SE of an accuracy and of a paired difference, McNemar power",
    inputs=(
        Input(
            name="accuracy",
            label="Baseline accuracy",
            kind="float",
            default=0.9,
            minimum=0,
            maximum=1,
            help="The baseline's accuracy, from 0 to 1: the standard error and the unpaired "
            "contrast use it.",
        ),
        Input(
            name="examples",
            label="Examples in the set",
            kind="int",
            default=1000,
            minimum=1,
            maximum=MAX_EXAMPLES,
            help="The evaluation set's size n: the standard errors and the power at n.",
        ),
        Input(
            name="discordance",
            label="Discordance",
            kind="float",
            default=0.1,
            minimum=0,
            maximum=1,
            help="The share of examples where exactly one of the two models is right, "
            "(b + c) / n: from a pilot run, or the last comparison of similar models.",
        ),
        Input(
            name="discordant",
            label="Discordant examples (pilot)",
            kind="int",
            optional=True,
            minimum=1,
            maximum=MAX_EXAMPLES,
            help="Instead of the discordance: the examples of a pilot comparison on the "
            "set above where exactly one model is right (b + c); the discordance is then "
            "b + c over the examples.",
        ),
        Input(
            name="gain",
            label="Gain to detect",
            kind="float",
            default=0.02,
            minimum=-1,
            maximum=1,
            help="acc(b) - acc(a), the smallest difference worth detecting; at most the "
            "discordance in size.",
        ),
        Input(
            name="half_width",
            label="Target half-width",
            kind="float",
            default=0.01,
            minimum=0,
            maximum=1,
            help="How precise an interval must be, in accuracy units: the examples each "
            "interval needs for it.",
        ),
        replace(CONFIDENCE, help="Confidence level of the intervals, from 0.5 to 1 - 1e-10."),
        replace(ALPHA, help="Two-sided level of McNemar's test, from 1e-10 to 0.5."),
        replace(POWER, help="The chance of detecting the gain when it is there: above alpha."),
        Input(
            name="method",
            label="Power by",
            kind="choice",
            default="exact",
            choices=("exact", "normal"),
            help=f"exact: the exact conditional test's power, summed (up to "
            f"{EXACT_MAX_EXAMPLES:,} examples); normal: Connor's approximation.",
        ),
    ),
    run=run,
    html=html,
    order=21,
)
