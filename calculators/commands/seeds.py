"""seeds: paired seed statistics, the interval of the difference, the minimum detectable
effect, the seeds needed, each variant's mean and sd and the seeds B wins, ties and loses
(`calculators.statistics.seeds`); the exact sign-flip test and the chance that every run
of a change beats every baseline run with no effect (`calculators.statistics.permutation`);
the expected best score after n trials of a search (`calculators.statistics.expected_max`)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from calculators.commands.declaration import Args, Calculator, Input
from calculators.commands.shared import UsageError
from calculators.parsing import parse_numbers
from calculators.statistics.expected_max import MAX_TRIALS, Trials, expected_max
from calculators.statistics.permutation import (
    MAX_EXACT_SEEDS,
    all_beat_probability,
    all_pairs_beat_probability,
    paired_sign_flip_test,
)
from calculators.statistics.seeds import (
    ALPHA_RANGE,
    CONFIDENCE_RANGE,
    EFFECT_RANGE,
    MAX_SEEDS,
    POWER_MAX,
    SD_RANGE,
    PairedComparison,
    exact_differences,
    minimum_detectable_effect,
    paired_difference,
    paired_summary,
    seeds_needed,
)
from calculators.web.render import html_table, line_chart_svg, strip_plot_svg, summary

# n shown in the text and the page's table when the trials are many (the JSON and the
# chart hold every n)
_SHOWN_N = (1, 2, 3, 5, 10, 20, 50, 100, 200, 500)


def _p_value(p: float | None, log10_p: float | None) -> str:
    """'0.0123', or '10^-412.3' where p is below what a double holds."""
    if p is None or log10_p is None:
        return "undefined"
    return f"{p:.4g}" if p > 1e-300 else f"10^{log10_p:.1f}"


def _shown_n(total: int) -> list[int]:
    """The n the text and the table show: every n up to 10 trials, else a spread of them
    and the last."""
    if total <= 10:
        return list(range(1, total + 1))
    return [n for n in _SHOWN_N if n < total] + [total]


def _exact_tests(q: PairedComparison) -> dict[str, Any]:
    """The exact tests of the paired scores, as the JSON's fields: the sign-flip test
    (None past MAX_EXACT_SEEDS seeds) and the chances that, with no effect, every run of b
    beats every run of a (runs independent) or b beats a on every seed (runs paired), with
    what the scores show."""
    k = len(q.a)
    flip = paired_sign_flip_test(q)
    differences, _ = exact_differences(q)
    return {
        "scores": {"a": list(q.a), "b": list(q.b)},
        "permutation_p_value": None if flip is None else flip.p_value,
        "permutation": None
        if flip is None
        else {"patterns": flip.patterns, "at_least_as_extreme": flip.extreme},
        "all_beat": min(q.b) > max(q.a),
        "all_beat_probability": all_beat_probability(k),
        "all_pairs_beat": all(d > 0 for d in differences),
        "all_pairs_beat_probability": all_pairs_beat_probability(k),
    }


def _summary_text(s: dict[str, Any]) -> str:
    """Each variant's mean and sd, and the paired counts, as one line of the text result."""
    return (
        f"A mean {s['a']['mean']:.4g}, sd {s['a']['sd']:.4g}; "
        f"B mean {s['b']['mean']:.4g}, sd {s['b']['sd']:.4g}; "
        f"seeds with b above a: {s['wins']}, equal: {s['ties']}, below: {s['losses']}"
    )


def _summary_rows(s: dict[str, Any]) -> list[list[str]]:
    """Each variant's mean and sd, and the paired counts, as rows of the page's table."""
    return [
        ["mean of A", _cell(s["a"]["mean"])],
        ["sd of A (n - 1)", _cell(s["a"]["sd"])],
        ["mean of B", _cell(s["b"]["mean"])],
        ["sd of B (n - 1)", _cell(s["b"]["sd"])],
        ["seeds where b > a (wins)", str(s["wins"])],
        ["seeds where b = a (ties)", str(s["ties"])],
        ["seeds where b < a (losses)", str(s["losses"])],
    ]


def _exact_text(e: dict[str, Any]) -> list[str]:
    """The exact tests' lines of the plain-text result."""
    k = len(e["scores"]["a"])
    lines = []
    if e["permutation"] is not None:
        lines.append(
            f"Exact sign-flip test: two-sided p {e['permutation_p_value']:.4g} "
            f"({e['permutation']['at_least_as_extreme']:,} of "
            f"{e['permutation']['patterns']:,} sign patterns at least as extreme)"
        )
    lines.append(
        f"With no effect: every b run above every a run, chance 1 / C({2 * k}, {k}) = "
        f"{e['all_beat_probability']:.4g} ("
        + ("seen here" if e["all_beat"] else "not seen here")
        + f"); b above a on all {k} seeds, chance 1 / 2^{k} = "
        f"{e['all_pairs_beat_probability']:.4g} ("
        + ("seen here" if e["all_pairs_beat"] else "not seen here")
        + ")"
    )
    return lines


def run(args: Args) -> tuple[dict[str, Any], str]:
    data: dict[str, Any] = {}
    text: list[str] = []
    notes: list[str] = []  # what could not be computed, and why
    if args.a is not None or args.b is not None:
        if args.a is None or args.b is None:
            raise UsageError("--a and --b must be given together", "b" if args.b is None else "a")
        q = PairedComparison(
            a=parse_numbers("a", args.a),
            b=parse_numbers("b", args.b),
            confidence=args.confidence,
        )
        r = paired_difference(q)
        data["paired"] = {**vars(r), "excludes_zero": r.excludes_zero}
        data["summary"] = asdict(paired_summary(q))
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
        text.append(_summary_text(data["summary"]))
        exact = _exact_tests(q)
        data.update(exact)
        text += _exact_text(exact)
        if exact["permutation_p_value"] is None:
            notes.append(
                f"the exact sign-flip test counts all 2^n sign patterns up to "
                f"{MAX_EXACT_SEEDS} seeds; with {r.seeds:,} seeds read the t test's p-value, "
                "which the permutation p-value approaches as seeds grow"
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
    if args.trials is not None:
        trials = Trials(scores=parse_numbers("trials", args.trials))
        curve = expected_max(trials)
        data["expected_max"] = [{"n": i + 1, "value": v} for i, v in enumerate(curve)]
        data["trials_best"] = max(trials.scores)
        text.append(
            f"Expected best of n trials (Dodge et al. 2019), from {len(curve)} trial scores "
            f"(best observed {data['trials_best']:.4g}): "
            + ", ".join(f"n={n}: {curve[n - 1]:.4g}" for n in _shown_n(len(curve)))
        )
    if not data:
        raise UsageError(
            "give --a and --b, or --trials, or --sd-difference with --seeds or --effect"
        )
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
        defined = p["ci_low"] is not None and p["ci_high"] is not None
        if not defined:
            parts.append(summary(f"{head}; every difference is the same, so no t interval."))
        else:
            parts.append(
                summary(
                    f"{head}, {p['confidence']:.0%} interval [{p['ci_low']:.4g}, "
                    f"{p['ci_high']:.4g}], "
                    + ("excludes 0." if p["excludes_zero"] else "includes 0.")
                )
            )
        a, b = r["scores"]["a"], r["scores"]["b"]
        parts.append(
            strip_plot_svg(
                [("A", a), ("B", b)],
                title="scores per seed, and the interval of the mean difference (b - a)",
                value_label="score per seed (a line joins the two runs of one seed)",
                paired=True,
                differences=[y - x for x, y in zip(a, b, strict=True)],
                difference_label="difference b - a per seed",
                interval=(p["ci_low"], p["ci_high"]) if defined else None,
                interval_label=f"{p['confidence']:.0%} t interval of the mean difference",
            )
        )
        rows += [[k.replace("_", " "), _cell(v)] for k, v in p.items()]
        rows += _summary_rows(r["summary"])
        k = p["seeds"]
        if r["permutation"] is None:
            rows.append(["permutation p-value (exact sign-flip)", "n/a past 20 seeds"])
        else:
            rows.append(["permutation p-value (exact sign-flip)", _cell(r["permutation_p_value"])])
            rows.append(
                [
                    "sign patterns at least as extreme",
                    f"{r['permutation']['at_least_as_extreme']:,} of "
                    f"{r['permutation']['patterns']:,}",
                ]
            )
        rows.append(
            [
                f"chance with no effect that all {k} b runs beat all {k} a runs, 1 / C(2k, k)",
                _cell(r["all_beat_probability"]),
            ]
        )
        rows.append(["all b runs above all a runs here", _cell(r["all_beat"])])
        rows.append(
            [
                f"chance with no effect that b beats a on all {k} paired seeds, 1 / 2^k",
                _cell(r["all_pairs_beat_probability"]),
            ]
        )
        rows.append(["b above a on every seed here", _cell(r["all_pairs_beat"])])
    if "minimum_detectable_effect" in r:
        rows.append(["minimum detectable effect", f"{r['minimum_detectable_effect']:.4g}"])
    if "seeds_needed" in r:
        rows.append(["seeds needed", str(r["seeds_needed"])])
    if rows:
        parts.append(html_table(["quantity", "value"], rows, caption="Seed statistics"))
    if "expected_max" in r:
        parts.append(_expected_max_html(r["expected_max"], r["trials_best"]))
    return "".join(parts)


def _expected_max_html(curve: list[dict[str, Any]], best: float) -> str:
    """The expected best of n trials: a summary, the gain over one trial as a line chart
    (the gain starts at 0, so the chart's axis from 0 shows it at full height), a table."""
    total = len(curve)
    one = curve[0]["value"]
    last = curve[-1]["value"]
    parts = [
        summary(
            f"Expected best of n trials, from {total} trial scores: {one:.4g} for one trial "
            f"(their mean), {last:.4g} for {total}; best observed {best:.4g}."
        )
    ]
    parts.append(
        line_chart_svg(
            [
                (
                    "expected gain",
                    [(c["n"], c["value"] - one) for c in curve],
                )
            ],
            x_label="trials n",
            y_label="expected gain of the best of n trials over one trial (score units)",
            title="expected best validation score after n trials, over one trial",
            hlines=[(f"best of the {total} trials observed", best - one)],
            y_format=lambda v: f"{v:.4g}",
        )
    )
    by_n = {c["n"]: c["value"] for c in curve}
    parts.append(
        html_table(
            ["trials n", "expected best", "gain over one trial"],
            [[str(n), f"{by_n[n]:.4g}", f"{by_n[n] - one:.4g}"] for n in _shown_n(total)],
            caption="Expected best validation score after n trials (Dodge et al. 2019)",
        )
    )
    return "".join(parts)


# The level of an interval, of a test and its power, declared once: the seeds and
# eval-size calculators take them (each with its own help, `dataclasses.replace`).
CONFIDENCE = Input(
    name="confidence",
    label="Interval level",
    kind="float",
    default=0.95,
    minimum=CONFIDENCE_RANGE[0],
    maximum=CONFIDENCE_RANGE[1],
    help="Confidence level of the interval, from 0.5 to 1 - 1e-10.",
)
ALPHA = Input(
    name="alpha",
    label="Test level alpha",
    kind="float",
    default=0.05,
    minimum=ALPHA_RANGE[0],
    maximum=ALPHA_RANGE[1],
    help="Two-sided test level, from 1e-10 to 0.5; the interval has its own level.",
)
POWER = Input(
    name="power",
    label="Power",
    kind="float",
    default=0.8,
    minimum=0,
    maximum=POWER_MAX,
    help="Probability of detecting the gap when it is there: above alpha "
    "(alpha itself is the chance of 'detecting' no gap at all).",
)


CALCULATOR = Calculator(
    name="seeds",
    title="Seed statistics",
    summary="Paired seeds: interval of the difference, exact sign-flip test, minimum "
    "detectable effect, seeds needed; the expected best of n search trials.",
    help="paired seed statistics: interval, exact test, MDE, seeds needed, best of n trials",
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
        CONFIDENCE,
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
        ALPHA,
        POWER,
        Input(
            name="trials",
            label="Trial scores of a search",
            kind="text",
            optional=True,
            help=f"Validation scores of the trials of one hyper-parameter search, "
            f"comma-separated, 1 to {MAX_TRIALS:,}: the expected best after n trials.",
            metavar="SCORES",
        ),
    ),
    run=run,
    html=html,
    order=8,
)
