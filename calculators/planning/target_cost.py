"""Cost to reach a fixed quality target at the reader's prices, from published MLPerf rows.

The rows are the submissions of MLPerf Training that reached the benchmark's quality
target (e.g. llama2_70b_lora: eval_accuracy <= 0.925, the evaluation loss), read from the
public result logs by `python -m benchmarks.mlperf.raw_table`, which writes
`time_to_target.json` beside this module (its sources: `benchmarks/mlperf/SOURCES.md`;
repository, commit and results folder of each submission are in the file). Nothing here
is typed by hand: every time comes from that file; every price from the reader.

For a submission on a system of n accelerators, with its score s (minutes to target: the
olympic mean of its runs, times its scaling factor), its fastest and slowest successful
runs t_min and t_max (minutes), and a price p (USD per accelerator-hour):

  GPU-hours to target      = s / 60 x n               (the table's score_gpu_hours)
  cost to target           = GPU-hours to target x p
  cost of the fastest run  = t_min / 60 x n x p
  cost of the slowest run  = t_max / 60 x n x p
  wall minutes to target   = s
  cost of a run with its logged initialisation = (s + i) / 60 x n x p
  runs to target in a D-day rental of the system = floor(D x 24 x 60 / (s + i))
                                                 (back to back, nothing else between them)
  rental of the system for D days = D x 24 x n x p

where i is the submission's mean logged initialisation in minutes (first init_start to
run_start in its logs; 0 where the logs have none): MLPerf's clock leaves it out, a rental
bills it. It is a lower bound on the set-up: where an implementation logs init_start is
its own choice, and nothing before it (container start, data staging) is logged.

Assumptions: the price is per accelerator-hour (a node price divided by its accelerators);
a system's cost counts all its accelerators for the whole run (run_start to run_stop, as
MLPerf times it: set-up before run_start, storage and idle time are not in it; the rules,
`training_rules.adoc` "Run Results", let up to 30 minutes of model initialisation and the
data's preprocessing and reformatting happen before the clock starts). The scores are
computed from the logs, not checked against MLCommons' reference convergence points.

Digits shown: a figure derived from a score is shown to the first significant digit of its
standard error (two digits where that error begins with a 1), the usual rule for stating a
measured value (J. R. Taylor, An Introduction to Error Analysis, 2nd ed., 1997, section
2.2). The score's standard error is that of the mean of the runs it averages (s / sqrt(k),
in `time_to_target.json`); GPU-hours and cost scale it by the same factor as the score, the
price being taken as exact. USD are never shown finer than the cent.

Submissions differ in system size and software stack: time to target does not fall in
proportion to the accelerators added, and a stack can move it as much as a card does, so a
comparison is like with like only within one benchmark, one system size and one stack
(`comparable`); `scaling_pairs` gives the pairs of one stack and one accelerator at two
sizes.

Prices are given per accelerator name: a name prices every accelerator whose name holds it,
case-insensitively ("H100" prices "NVIDIA H100-SXM5-80GB"). Where several names match one
accelerator, the first listed applies (a warning says so); `default_price`, if given,
prices the accelerators no name matches; an accelerator left without a price has no cost
(None), never a guessed one. A name matching no accelerator of the benchmark is an error
that lists the accelerators; a name matching several different accelerators prices them
all alike, with a warning.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from math import floor, isfinite, log10
from typing import Any

from calculators.errors import InputError, shown
from calculators.limits import MAX_PRICE_PER_GPU_HOUR
from calculators.planning.budget import EXAMPLE_DISCOUNTS

_HERE = os.path.dirname(os.path.abspath(__file__))
TABLE_FILE = "time_to_target.json"

# Rental packages the runs to target are counted in, in days: the budget's packages.
PACKAGE_DAYS = tuple(EXAMPLE_DISCOUNTS)
# Price lines one request may give.
MAX_PRICE_LINES = 100
# The benchmark the calculator prices unless told otherwise (the page's example).
DEFAULT_BENCHMARK = "llama2_70b_lora"
# USD are not shown finer than this many decimals (the cent).
USD_DECIMALS = 2
# Digits kept where a figure has no standard error (too few runs to estimate one).
MAX_DECIMALS = 4


@dataclass(frozen=True, kw_only=True)
class Submission:
    """One submission of the table: its score, its runs' spread and its source."""

    benchmark: str
    round: str
    submitter: str
    system: str
    accelerator: str | None
    accelerator_count: int
    framework: str | None = None
    runs: int
    score_minutes: float | None
    score_gpu_hours: float | None
    score_standard_error_minutes: float | None = None
    mean_init_minutes: float | None = None
    fastest_run_minutes: float | None
    slowest_run_minutes: float | None
    quality_target: str | None
    source_repository: str | None
    source_commit: str | None
    source_path: str | None

    @property
    def id(self) -> str:
        return f"{self.submitter}/{self.system}"


@dataclass(frozen=True, kw_only=True)
class Package:
    """A rental of the whole system for `days` days."""

    days: int
    runs_to_target: int
    rental_cost_usd: float | None


@dataclass(frozen=True, kw_only=True)
class Option:
    """One submission priced: what reaching the target costs on its system."""

    id: str
    submitter: str
    system: str
    accelerator: str
    accelerator_count: int
    framework: str | None
    runs: int
    price_per_accelerator_hour: float | None
    price_from: str | None  # the price name that matched, "default_price", or None
    gpu_hours_to_target: float
    cost_to_target_usd: float | None
    wall_minutes: float
    fastest_run_minutes: float
    slowest_run_minutes: float
    fastest_run_cost_usd: float | None
    slowest_run_cost_usd: float | None
    score_standard_error_minutes: float | None
    init_minutes: float | None
    cost_with_init_usd: float | None
    cost_standard_error_usd: float | None
    minutes_decimals: int
    gpu_hours_decimals: int
    usd_decimals: int | None
    packages: tuple[Package, ...]
    source: dict[str, str | None]


@dataclass(frozen=True, kw_only=True)
class TargetCost:
    """The options of one benchmark, cheapest first (unpriced ones last)."""

    benchmark: str
    round: str
    quality_target: str
    accelerators: tuple[str, ...]
    options: tuple[Option, ...]
    cheapest: str | None
    # priced options whose cost is within two standard errors of the difference from the
    # cheapest's: the runs do not tell them apart at these prices
    tied_with_cheapest: tuple[str, ...]
    warnings: tuple[str, ...]
    notes: tuple[str, ...]


@cache
def load_table() -> dict[str, Any]:
    """time_to_target.json as written by `python -m benchmarks.mlperf.raw_table`.

    Read as a file beside this module, as the model presets are (the package is always
    installed as files, the site's zip included). Cached: do not modify the result.
    """
    with open(os.path.join(_HERE, TABLE_FILE), encoding="utf-8") as f:
        return json.load(f)


@cache
def submissions() -> tuple[Submission, ...]:
    """Every submission of the table, in its order."""
    out = []
    for s in load_table()["submissions"]:
        src = s.get("source") or {}
        out.append(
            Submission(
                benchmark=s["benchmark"],
                round=s["round"],
                submitter=s["submitter"],
                system=s["system"],
                accelerator=s["accelerator"],
                accelerator_count=int(s["accelerator_count"]),
                framework=s.get("framework"),
                runs=int(s["runs"]),
                score_minutes=s["score_minutes"],
                score_gpu_hours=s["score_gpu_hours"],
                score_standard_error_minutes=s.get("score_standard_error_minutes"),
                mean_init_minutes=s.get("mean_init_minutes"),
                fastest_run_minutes=s["fastest_run_minutes"],
                slowest_run_minutes=s["slowest_run_minutes"],
                quality_target=s["quality_target"],
                source_repository=src.get("repository"),
                source_commit=src.get("commit"),
                source_path=src.get("path"),
            )
        )
    return tuple(out)


def benchmarks() -> tuple[str, ...]:
    """The benchmarks of the table, sorted."""
    return tuple(sorted({s.benchmark for s in submissions()}))


def shown_decimals(standard_error: float | None, *, finest: int = MAX_DECIMALS) -> int:
    """Decimal places that end a figure at the first significant digit of its standard
    error, or at its second where that digit is a 1 (Taylor 1997, section 2.2): 0.55 -> 1,
    0.12 -> 2, 0.015 -> 3, 1.6 -> 1, 12 -> 0. Never more than `finest`; `finest` where
    there is no error to go by (None or not above 0).
    """
    if standard_error is None or not isfinite(standard_error) or standard_error <= 0:
        return finest
    exponent = floor(log10(standard_error))
    # The leading digit, from the error scaled to [1, 10); guard the float edge of log10.
    leading = int(standard_error / 10.0**exponent + 1e-9)
    if leading >= 10:
        exponent, leading = exponent + 1, 1
    places = -exponent + (1 if leading == 1 else 0)
    return max(0, min(finest, places))


@dataclass(frozen=True, kw_only=True)
class ScalingPair:
    """One benchmark, one accelerator and one software stack at two system sizes."""

    benchmark: str
    accelerator: str
    framework: str
    small: str  # submission id
    large: str
    small_count: int
    large_count: int
    # wall minutes to target, small / large: how much sooner the larger system finished
    speedup: float
    # GPU-hours to target, large / small: what the speed cost in accelerator-hours
    gpu_hours_ratio: float
    # large / small accelerators: the speedup if time fell in proportion
    size_ratio: float
    # standard errors of the two ratios, from the scores' (relative errors in quadrature);
    # None where a score has none
    speedup_standard_error: float | None
    gpu_hours_ratio_standard_error: float | None


def comparable(a: Submission, b: Submission) -> bool:
    """Whether two submissions compare like with like: same benchmark, same system size
    (accelerators) and the same software stack as their submitters describe it."""
    return (
        a.benchmark == b.benchmark
        and a.accelerator_count == b.accelerator_count
        and a.framework is not None
        and a.framework == b.framework
    )


def scaling_pairs(
    benchmark: str | None = None, table: Iterable[Submission] | None = None
) -> tuple[ScalingPair, ...]:
    """Pairs of scored submissions that share benchmark, accelerator and stack but not
    the system size, smaller first.

    speedup = score_small / score_large (minutes); gpu_hours_ratio = GPU-hours_large /
    GPU-hours_small = size_ratio / speedup. Time falls in proportion to the accelerators
    only where speedup equals size_ratio (gpu_hours_ratio 1); below it, the larger system
    buys time with extra accelerator-hours. The ratios' standard errors combine the two
    scores' relative errors in quadrature (independent runs): se(r) = r x sqrt((se_a /
    s_a)^2 + (se_b / s_b)^2).
    """
    rows = [
        s
        for s in (submissions() if table is None else table)
        if (benchmark is None or s.benchmark == benchmark)
        and s.score_minutes
        and s.score_gpu_hours
        and s.accelerator
        and s.framework
    ]
    pairs = []
    for a in rows:
        for b in rows:
            if (
                a.benchmark == b.benchmark
                and a.accelerator == b.accelerator
                and a.framework == b.framework
                and a.accelerator_count < b.accelerator_count
            ):
                assert a.score_minutes and b.score_minutes and a.accelerator and a.framework
                assert a.score_gpu_hours and b.score_gpu_hours
                speedup = a.score_minutes / b.score_minutes
                ratio = b.score_gpu_hours / a.score_gpu_hours
                ea, eb = a.score_standard_error_minutes, b.score_standard_error_minutes
                relative = (
                    None
                    if ea is None or eb is None
                    else ((ea / a.score_minutes) ** 2 + (eb / b.score_minutes) ** 2) ** 0.5
                )
                pairs.append(
                    ScalingPair(
                        benchmark=a.benchmark,
                        accelerator=a.accelerator,
                        framework=a.framework,
                        small=a.id,
                        large=b.id,
                        small_count=a.accelerator_count,
                        large_count=b.accelerator_count,
                        speedup=speedup,
                        gpu_hours_ratio=ratio,
                        size_ratio=b.accelerator_count / a.accelerator_count,
                        speedup_standard_error=None if relative is None else speedup * relative,
                        gpu_hours_ratio_standard_error=None
                        if relative is None
                        else ratio * relative,
                    )
                )
    return tuple(sorted(pairs, key=lambda p: (p.benchmark, p.small, p.large)))


def _check_price(field: str, price: float, what: str = "") -> float:
    """`price` as a float; InputError naming `field` (and `what`) unless finite, >= 0 and
    at most MAX_PRICE_PER_GPU_HOUR."""
    subject = f"{field} {what}" if what else field
    if isinstance(price, bool) or not isinstance(price, int | float):
        raise InputError(field, f"{subject} must be a number, got {shown(price)}")
    if not isfinite(price):
        raise InputError(field, f"{subject} must be a finite number, got {shown(price)}")
    if price < 0:
        raise InputError(field, f"{subject} must be at least 0, got {price!r}")
    if price > MAX_PRICE_PER_GPU_HOUR:
        raise InputError(
            field, f"{subject} must be at most {MAX_PRICE_PER_GPU_HOUR:,}, got {price!r}"
        )
    return float(price)


def parse_prices(lines: Iterable[str], field: str = "price") -> dict[str, float]:
    """NAME=USD_PER_HOUR lines (blank ones skipped) -> {name: price}, in their order.

    InputError naming `field` on a line that is not NAME=NUMBER, a price that is negative,
    not finite or above the bound, a name given twice (case-insensitively) or too many lines.
    """
    prices: dict[str, float] = {}
    seen: dict[str, str] = {}
    for raw in lines:
        line = str(raw).strip()
        if not line:
            continue
        name, sep, value = line.partition("=")
        name = name.strip()
        if not sep or not name or not value.strip():
            raise InputError(
                field, f"{field} line {shown(line)} is not NAME=USD_PER_HOUR (e.g. H100=3.99)"
            )
        try:
            price = float(value.strip())
        except ValueError:
            raise InputError(
                field, f"{field} line {shown(line)}: {shown(value.strip())} is not a number"
            ) from None
        _check_price(field, price, f"for {shown(name)}")
        key = name.casefold()
        if key in seen:
            raise InputError(field, f"{field} name {shown(name)} is given twice")
        seen[key] = name
        prices[name] = price
        if len(prices) > MAX_PRICE_LINES:
            raise InputError(field, f"{field}: at most {MAX_PRICE_LINES} lines")
    return prices


def _matches(name: str, accelerator: str) -> bool:
    return name.casefold() in accelerator.casefold()


def _cost(minutes: float, count: int, price: float | None) -> float | None:
    return None if price is None else minutes / 60 * count * price


def _tied(a: Option, b: Option) -> bool:
    """Whether two priced options' costs differ by less than two standard errors of the
    difference, sqrt(se_a^2 + se_b^2) (independent runs); False without both errors."""
    if a.cost_standard_error_usd is None or b.cost_standard_error_usd is None:
        return False
    assert a.cost_to_target_usd is not None and b.cost_to_target_usd is not None
    spread = (a.cost_standard_error_usd**2 + b.cost_standard_error_usd**2) ** 0.5
    return abs(b.cost_to_target_usd - a.cost_to_target_usd) < 2 * spread


def target_cost(
    prices: Mapping[str, float],
    *,
    default_price: float | None = None,
    benchmark: str | None = None,
    table: Iterable[Submission] | None = None,
) -> TargetCost:
    """Cost to the benchmark's quality target of every submission at the prices given.

    `prices`: accelerator name part -> USD per accelerator-hour (first listed wins where
    several match one accelerator); `default_price`: for the accelerators none matches;
    `benchmark`: one of `benchmarks()` (None: the only one; an error if there are
    several); `table`: the submissions (default: the committed file).
    """
    rows = tuple(submissions() if table is None else table)
    names = sorted({s.benchmark for s in rows})
    if benchmark is None:
        if len(names) != 1:
            raise InputError("benchmark", f"benchmark must be one of {', '.join(names)}")
        benchmark = names[0]
    if benchmark not in names:
        raise InputError(
            "benchmark",
            f"benchmark must be one of {', '.join(names)}; got {shown(benchmark)}",
        )
    prices = {str(k): _check_price("price", v, f"for {shown(k)}") for k, v in prices.items()}
    if default_price is not None:
        default_price = _check_price("default_price", default_price)
    for name in prices:
        if not name.strip():
            raise InputError("price", "price names must not be empty")

    warnings: list[str] = []
    notes: list[str] = []
    scored = []
    for s in rows:
        if s.benchmark != benchmark:
            continue
        if (
            s.score_minutes is None
            or s.score_gpu_hours is None
            or s.score_minutes <= 0
            or s.accelerator is None
            or s.fastest_run_minutes is None
            or s.slowest_run_minutes is None
        ):
            notes.append(f"{s.id}: no valid score in the published logs; left out")
            continue
        scored.append(s)
    accelerators = tuple(sorted({s.accelerator for s in scored if s.accelerator}))

    everywhere = sorted({s.accelerator for s in rows if s.accelerator})
    for name in prices:
        matched = [a for a in accelerators if _matches(name, a)]
        if not matched and any(_matches(name, a) for a in everywhere):
            # One price list serves every benchmark: a card absent here is not an error.
            notes.append(f"price name {shown(name)} matches no accelerator of {benchmark}")
            continue
        if not matched:
            raise InputError(
                "price",
                f"price name {shown(name)} matches no accelerator of the table; "
                f"the accelerators of {benchmark} are: {'; '.join(accelerators)}",
            )
        if len(matched) > 1:
            warnings.append(
                f"price name {shown(name)} matches {len(matched)} different accelerators "
                f"({'; '.join(matched)}): all get its price, but where a line above it matches"
            )

    price_of: dict[str, tuple[float | None, str | None]] = {}
    for a in accelerators:
        applicable = [n for n in prices if _matches(n, a)]
        if applicable:
            price_of[a] = (prices[applicable[0]], applicable[0])
            if len(applicable) > 1:
                warnings.append(
                    f"{a} matches the price names {', '.join(map(shown, applicable))}: the "
                    f"first listed, {shown(applicable[0])}, applies"
                )
        elif default_price is not None:
            price_of[a] = (default_price, "default_price")
        else:
            price_of[a] = (None, None)
            ids = ", ".join(s.id for s in scored if s.accelerator == a)
            warnings.append(
                f"no price for {a} ({ids}): its cost is left empty; add a NAME=USD_PER_HOUR "
                "line or a default price"
            )

    options = []
    for s in scored:
        assert s.accelerator is not None and s.score_minutes is not None  # checked above
        assert s.score_gpu_hours is not None
        assert s.fastest_run_minutes is not None and s.slowest_run_minutes is not None
        price, basis = price_of[s.accelerator]
        n = s.accelerator_count
        error = s.score_standard_error_minutes
        # GPU-hours = score / 60 x n and cost = that x price: the error scales alike.
        hours_error = None if error is None else error / 60 * n
        options.append(
            Option(
                id=s.id,
                submitter=s.submitter,
                system=s.system,
                accelerator=s.accelerator,
                accelerator_count=n,
                framework=s.framework,
                runs=s.runs,
                price_per_accelerator_hour=price,
                price_from=basis,
                gpu_hours_to_target=s.score_gpu_hours,
                cost_to_target_usd=None if price is None else s.score_gpu_hours * price,
                wall_minutes=s.score_minutes,
                fastest_run_minutes=s.fastest_run_minutes,
                slowest_run_minutes=s.slowest_run_minutes,
                fastest_run_cost_usd=_cost(s.fastest_run_minutes, n, price),
                slowest_run_cost_usd=_cost(s.slowest_run_minutes, n, price),
                score_standard_error_minutes=error,
                init_minutes=s.mean_init_minutes,
                cost_with_init_usd=_cost(s.score_minutes + (s.mean_init_minutes or 0.0), n, price),
                cost_standard_error_usd=None
                if price is None or hours_error is None
                else hours_error * price,
                minutes_decimals=shown_decimals(error),
                gpu_hours_decimals=shown_decimals(hours_error),
                usd_decimals=None
                if price is None
                else shown_decimals(
                    None if hours_error is None else hours_error * price, finest=USD_DECIMALS
                ),
                packages=tuple(
                    Package(
                        days=days,
                        runs_to_target=floor(
                            days * 24 * 60 / (s.score_minutes + (s.mean_init_minutes or 0.0))
                        ),
                        rental_cost_usd=None if price is None else days * 24 * n * price,
                    )
                    for days in PACKAGE_DAYS
                ),
                source={
                    "repository": s.source_repository,
                    "commit": s.source_commit,
                    "path": s.source_path,
                },
            )
        )
    options.sort(
        key=lambda o: (
            o.cost_to_target_usd is None,
            o.cost_to_target_usd or 0.0,
            o.gpu_hours_to_target,
            o.id,
        )
    )
    priced = [o for o in options if o.cost_to_target_usd is not None]
    rounds = sorted({s.round for s in scored}) or sorted(
        {s.round for s in rows if s.benchmark == benchmark}
    )
    targets = sorted({s.quality_target for s in scored if s.quality_target})
    sizes = sorted({o.accelerator_count for o in options})
    stacks = sorted({o.framework or "not stated" for o in options})
    if any(not comparable(a, b) for a in scored for b in scored):
        notes.append(
            f"the options differ in system size ({', '.join(map(str, sizes))} accelerators) "
            f"and software stack ({len(stacks)} stacks): compare like with like; time to "
            "target does not fall in proportion to the accelerators added"
        )
    notes += [
        "cost to target = GPU-hours to target (score minutes / 60 x accelerators) x price per "
        "accelerator-hour: every accelerator of the system for the whole timed run "
        "(run_start to run_stop); set-up, storage and idle time are not counted, nor the up "
        "to 30 minutes of model initialisation and the data preparation the rules allow "
        "before the clock starts",
        "figures end at the first significant digit of their standard error (from the runs "
        "the score averages); USD not finer than the cent",
        "scores are computed from the published MLPerf Training logs (olympic mean x "
        "scaling factor), not checked against MLCommons' reference convergence points; "
        "sources: benchmarks/mlperf/SOURCES.md",
        "a price name prices every accelerator whose name holds it (case-insensitive); "
        "where several match one accelerator, the first listed applies",
        "runs in a D-day rental = floor(D x 24 x 60 / (score + logged initialisation "
        "minutes)), back to back; the logged initialisation (first init_start to run_start) "
        "is a lower bound on the set-up a rental bills",
    ]
    return TargetCost(
        benchmark=benchmark,
        round=", ".join(rounds),
        quality_target="; ".join(targets),
        accelerators=accelerators,
        options=tuple(options),
        cheapest=priced[0].id if priced else None,
        tied_with_cheapest=tuple(o.id for o in priced[1:] if _tied(priced[0], o)),
        warnings=tuple(warnings),
        notes=tuple(notes),
    )
