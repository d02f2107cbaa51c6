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
  runs to target in a D-day rental of the system = floor(D x 24 x 60 / s)
                                                 (back to back, nothing between them)
  rental of the system for D days = D x 24 x n x p

Assumptions: the price is per accelerator-hour (a node price divided by its accelerators);
a system's cost counts all its accelerators for the whole run (run_start to run_stop, as
MLPerf times it: set-up before run_start, storage and idle time are not in it). The scores
are computed from the logs, not checked against MLCommons' reference convergence points.

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
from math import floor, isfinite
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


@dataclass(frozen=True, kw_only=True)
class Submission:
    """One submission of the table: its score, its runs' spread and its source."""

    benchmark: str
    round: str
    submitter: str
    system: str
    accelerator: str | None
    accelerator_count: int
    runs: int
    score_minutes: float | None
    score_gpu_hours: float | None
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
                runs=int(s["runs"]),
                score_minutes=s["score_minutes"],
                score_gpu_hours=s["score_gpu_hours"],
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

    for name in prices:
        matched = [a for a in accelerators if _matches(name, a)]
        if not matched:
            raise InputError(
                "price",
                f"price name {shown(name)} matches no accelerator of {benchmark}; "
                f"the accelerators are: {'; '.join(accelerators)}",
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
        options.append(
            Option(
                id=s.id,
                submitter=s.submitter,
                system=s.system,
                accelerator=s.accelerator,
                accelerator_count=n,
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
                packages=tuple(
                    Package(
                        days=days,
                        runs_to_target=floor(days * 24 * 60 / s.score_minutes),
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
    notes += [
        "cost to target = GPU-hours to target (score minutes / 60 x accelerators) x price per "
        "accelerator-hour: every accelerator of the system for the whole timed run "
        "(run_start to run_stop); set-up, storage and idle time are not counted",
        "scores are computed from the published MLPerf Training logs (olympic mean x "
        "scaling factor), not checked against MLCommons' reference convergence points; "
        "sources: benchmarks/mlperf/SOURCES.md",
        "a price name prices every accelerator whose name holds it (case-insensitive); "
        "where several match one accelerator, the first listed applies",
        "runs in a D-day rental = floor(D x 24 x 60 / score minutes), back to back",
    ]
    return TargetCost(
        benchmark=benchmark,
        round=", ".join(rounds),
        quality_target="; ".join(targets),
        accelerators=accelerators,
        options=tuple(options),
        cheapest=priced[0].id if priced else None,
        warnings=tuple(warnings),
        notes=tuple(notes),
    )
