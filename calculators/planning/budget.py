"""Campaign budget: GPU-hours, wall-clock days, cost, rental packages and a schedule.

A campaign is phases run one after the other (an initial check before the
experiments, evaluation after them, ...). A phase has `runs` runs of
`gpu_hours_per_run` GPU-hours each on `gpus_per_run` GPUs, and `control_runs` runs of
the reference configuration beside them (a comparison phase: arms x seeds runs and one
control per seed, `calculators.planning.comparison`); with G GPUs rented,
floor(G / gpus_per_run) runs go at once. Interrupted or invalid runs are budgeted
as a named margin line: ceil((runs + control_runs) x margin) extra runs per phase, with
the margin taken as the decimal typed (100 runs at 0.07 are 7 reruns; in binary floating
point 100 x 0.07 is 7.000000000000001, which rounds up to 8).

  phase runs       = runs + control_runs
  phase GPU-hours  = (phase runs + reruns) x gpu_hours_per_run
  phase wall hours = (ceil(phase runs / concurrent) + ceil(reruns / concurrent))
                     x gpu_hours_per_run / gpus_per_run   (reruns follow the runs they redo)
  total            = sum over phases (phases do not overlap)
  cost at an hourly price = total GPU-hours x price per GPU-hour
  a package of D days on G' GPUs covers the plan when G' >= G and 24 D >= wall hours

The margin is rounded up in each phase, not once over the campaign: a rerun is a whole
run of its own phase (its own length and GPUs), and it must end before the next phase
starts, so a phase of 2 runs at 0.2 budgets one rerun (its share, 0.4 of a run, rounded
up). The named line `rounding_gpu_hours` is what this adds over the exact share,
sum over phases of (reruns - margin x phase runs) x gpu_hours_per_run, and
`pooled_reruns`, ceil(margin x sum of phase runs), what one rounding over the whole
campaign would have given.

Prices are inputs. `example_packages` builds 3-, 7- and 30-day packages from an
hourly price with example discounts: they show the calculation, they are not quotes.

The schedule gives the GPU-hours of each phase per period: per day for a campaign of up
to SCHEDULE_MAX_PERIODS days, then per week, per 30 days, per year or per several years,
so that a plan of any length is summarised in at most SCHEDULE_MAX_PERIODS rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import ceil, floor, fsum

from calculators.checks import fraction, non_negative_int, positive_int, positive_number
from calculators.decimals import typed_value
from calculators.errors import InputError, shown
from calculators.limits import (
    MAX_DECISIONS,
    MAX_GPU_HOURS_PER_RUN,
    MAX_GPUS,
    MAX_MARGIN,
    MAX_PACKAGE_DAYS,
    MAX_PACKAGE_USD,
    MAX_PRICE_PER_GPU_HOUR,
    MAX_RUNS,
)
from calculators.model.spec import ModelSpec
from calculators.training.throughput import Precision, training_time


def _named(name: str) -> str:
    """A phase's name in a message, cut short if it is long."""
    return name if len(name) <= 40 else f"{name[:30]}... ({len(name):,} characters)"


# Phases and rental offers a campaign may list.
MAX_PHASES = 1_000
MAX_PACKAGES = 1_000


@dataclass(frozen=True, kw_only=True)
class Phase:
    """One phase: `runs` runs of `gpu_hours_per_run` GPU-hours on `gpus_per_run` GPUs,
    and `control_runs` runs of the reference configuration beside them (0 but in a
    comparison phase; `arms` and `seeds` then say how `runs` was made, arms x seeds).

    Its errors are blamed on the input `phase` (the phase is one line of it).
    """

    name: str
    runs: int
    gpu_hours_per_run: float
    gpus_per_run: int = 1
    control_runs: int = 0
    arms: int | None = None
    seeds: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise InputError(
                "phase", f"phase name must be a non-empty string, got {shown(self.name)}"
            )
        try:
            positive_int("runs", self.runs, maximum=MAX_RUNS)
            positive_number(
                "gpu_hours_per_run", self.gpu_hours_per_run, maximum=MAX_GPU_HOURS_PER_RUN
            )
            positive_int("gpus_per_run", self.gpus_per_run, maximum=MAX_GPUS)
            non_negative_int("control_runs", self.control_runs, maximum=MAX_RUNS)
        except InputError as e:
            raise InputError("phase", f"phase {_named(self.name)}: {e}", subject="") from None
        made = (self.arms, self.seeds)
        if made != (None, None) and (
            None in made or (self.runs, self.control_runs) != (made[0] * made[1], made[1])
        ):
            raise InputError(
                "phase",
                f"phase {_named(self.name)}: arms {self.arms!r} and seeds {self.seeds!r} must "
                f"give runs = arms x seeds and control_runs = seeds, got runs {self.runs} and "
                f"control_runs {self.control_runs}",
                subject="",
            )


def phase_from_tokens(
    name: str,
    *,
    runs: int,
    tokens_per_run: int,
    spec: ModelSpec,
    seq_len: int,
    gpu: str,
    mfu: float,
    gpus_per_run: int = 1,
    precision: Precision = "bf16",
    adapter_parameters: int | None = None,
) -> Phase:
    """A phase whose GPU-hours per run come from throughput instead of a guess.

    gpu_hours_per_run = tokens_per_run x training FLOPs per token
                        / (peak x mfu) / 3600   (`calculators.training.throughput.training_time`:
    PaLM's 6N + 12 L H Q T per token, Chowdhery et al. 2022, appendix B), the same on
    any number of GPUs at a constant MFU; `gpus_per_run` only changes the wall clock.
    With `adapter_parameters` (LoRA on a frozen base) a token costs 4N + 6 N_a instead.
    """
    t = training_time(
        spec,
        tokens=tokens_per_run,
        seq_len=seq_len,
        gpu=gpu,
        gpus=gpus_per_run,
        mfu=mfu,
        precision=precision,
        adapter_parameters=adapter_parameters,
    )
    return Phase(name=name, runs=runs, gpu_hours_per_run=t.gpu_hours, gpus_per_run=gpus_per_run)


@dataclass(frozen=True, kw_only=True)
class Package:
    """A rental offer: `gpus` GPUs for `days` days at `price_usd` in all."""

    days: int
    gpus: int
    price_usd: float
    label: str

    def __post_init__(self) -> None:
        try:
            positive_int("days", self.days, maximum=MAX_PACKAGE_DAYS)
            positive_int("gpus", self.gpus, maximum=MAX_GPUS)
            positive_number("price_usd", self.price_usd, maximum=MAX_PACKAGE_USD)
        except InputError as e:
            raise InputError("package", f"package {e}", subject="") from None


# Example discounts for longer rentals, for illustration only (not market data).
EXAMPLE_DISCOUNTS: dict[int, float] = {3: 0.0, 7: 0.10, 30: 0.25}


def example_packages(gpus: int, price_per_gpu_hour: float) -> tuple[Package, ...]:
    """3-, 7- and 30-day packages at the hourly price less EXAMPLE_DISCOUNTS (examples)."""
    positive_int("gpus", gpus)
    positive_number("price_per_gpu_hour", price_per_gpu_hour)
    return tuple(
        Package(
            days=d,
            gpus=gpus,
            price_usd=d * 24 * gpus * price_per_gpu_hour * (1 - off),
            label=f"{d}-day example ({off:.0%} off the hourly price; not a quote)",
        )
        for d, off in EXAMPLE_DISCOUNTS.items()
    )


@dataclass(frozen=True, kw_only=True)
class Campaign:
    """Phases, the GPUs rented, the hourly price and the rerun margin.

    decisions: useful results the campaign is for (variants compared, a final choice),
    for the cost per decision; None leaves it out.
    packages: offers to compare; None builds `example_packages`.
    """

    phases: tuple[Phase, ...]
    gpus: int
    price_per_gpu_hour: float
    margin: float = 0.2
    decisions: int | None = None
    packages: tuple[Package, ...] | None = None

    def __post_init__(self) -> None:
        if not self.phases:
            raise InputError("phase", "phases must list at least one phase, got none")
        if len(self.phases) > MAX_PHASES:
            raise InputError(
                "phase", f"phases must list at most {MAX_PHASES:,}, got {len(self.phases):,}"
            )
        if self.packages is not None and len(self.packages) > MAX_PACKAGES:
            raise InputError(
                "package",
                f"packages must list at most {MAX_PACKAGES:,}, got {len(self.packages):,}",
            )
        positive_int("gpus", self.gpus, maximum=MAX_GPUS)
        positive_number(
            "price_per_gpu_hour", self.price_per_gpu_hour, maximum=MAX_PRICE_PER_GPU_HOUR
        )
        fraction("margin", self.margin, upper=MAX_MARGIN)
        if self.decisions is not None:
            positive_int("decisions", self.decisions, maximum=MAX_DECISIONS)
        for p in self.phases:
            if p.gpus_per_run > self.gpus:
                raise InputError(
                    "phase",
                    f"phase {_named(p.name)}: gpus_per_run must be at most gpus ({self.gpus}), "
                    f"got {p.gpus_per_run}",
                    subject="",
                )


@dataclass(frozen=True, kw_only=True)
class PhasePlan:
    """A phase as scheduled.

    reruns_exact: the margin's exact share, margin x (runs + control_runs), before it is
    rounded up to `reruns`; rounding_gpu_hours: (reruns - reruns_exact) x hours per run.
    control_gpu_hours: the control runs' GPU-hours (their reruns are in the margin).
    """

    name: str
    runs: int
    reruns: int
    concurrent: int
    gpu_hours: float
    margin_gpu_hours: float
    start_hour: float
    wall_hours: float
    control_runs: int = 0
    control_gpu_hours: float = 0.0
    reruns_exact: float = 0.0
    rounding_gpu_hours: float = 0.0
    arms: int | None = None
    seeds: int | None = None


@dataclass(frozen=True, kw_only=True)
class PackageFit:
    """A package against the plan: covers it or not, with the slack and the cost."""

    label: str
    days: int
    gpus: int
    price_usd: float
    covers: bool
    slack_hours: float
    cost_per_decision: float | None


@dataclass(frozen=True, kw_only=True)
class BudgetResult:
    """Totals, per-phase plan, packages, and a schedule of GPU-hours by period.

    Named lines beside the totals: control_runs and control_gpu_hours (the reference
    configuration re-run in comparison phases), reruns and margin_gpu_hours (the margin,
    rounded up per phase), rounding_gpu_hours (what that rounding adds over the exact
    share) and pooled_reruns (the reruns one rounding over the campaign would give).
    """

    phases: tuple[PhasePlan, ...]
    gpu_hours: float
    margin_gpu_hours: float
    wall_hours: float
    cost_usd: float
    cost_per_decision: float | None
    packages: tuple[PackageFit, ...]
    schedule: tuple[dict[str, float], ...]  # per period: GPU-hours by phase name
    schedule_period_days: int = 1  # days in each period of `schedule`
    control_runs: int = 0
    control_gpu_hours: float = 0.0
    reruns: int = 0
    pooled_reruns: int = 0
    rounding_gpu_hours: float = 0.0

    @property
    def wall_days(self) -> float:
        return self.wall_hours / 24

    @property
    def cheapest_covering(self) -> PackageFit | None:
        """The cheapest package that covers the plan, if any does."""
        covering = [p for p in self.packages if p.covers]
        return min(covering, key=lambda p: p.price_usd) if covering else None


def campaign_budget(c: Campaign) -> BudgetResult:
    """Schedule and cost `c` (see the module docstring for the formulas)."""
    plans, clock = [], 0.0
    rounding: list[Fraction] = []
    margin = typed_value(c.margin)  # exact: see the module docstring
    for p in c.phases:
        counted = p.runs + p.control_runs  # controls run, fail and are redone like the arms
        share = counted * margin  # exact (a Fraction)
        reruns = ceil(share)  # per phase: a rerun is a whole run of this phase
        concurrent = floor(c.gpus / p.gpus_per_run)
        total_runs = counted + reruns
        # the controls share the arms' waves; reruns start once a failure is seen: their
        # waves follow the phase's own
        waves = ceil(counted / concurrent) + ceil(reruns / concurrent)
        # exact, and summed exactly below: a float sum's last digit differs between
        # CPython 3.11 (naive) and 3.12+ (compensated, as in the browser's Pyodide)
        rounding.append((reruns - share) * typed_value(p.gpu_hours_per_run))
        wall = waves * p.gpu_hours_per_run / p.gpus_per_run
        plans.append(
            PhasePlan(
                name=p.name,
                runs=p.runs,
                reruns=reruns,
                concurrent=concurrent,
                gpu_hours=total_runs * p.gpu_hours_per_run,
                margin_gpu_hours=reruns * p.gpu_hours_per_run,
                start_hour=clock,
                wall_hours=wall,
                control_runs=p.control_runs,
                control_gpu_hours=p.control_runs * p.gpu_hours_per_run,
                reruns_exact=float(share),
                rounding_gpu_hours=float(rounding[-1]),
                arms=p.arms,
                seeds=p.seeds,
            )
        )
        clock += wall
    # math.fsum, correctly rounded: the built-in sum() adds floats naively in CPython 3.11
    # and with compensation from 3.12 (the browser's Pyodide), so its last digit differs
    gpu_hours = fsum(p.gpu_hours for p in plans)
    cost = gpu_hours * c.price_per_gpu_hour
    packages = (
        c.packages if c.packages is not None else example_packages(c.gpus, c.price_per_gpu_hour)
    )
    fits = tuple(
        PackageFit(
            label=k.label,
            days=k.days,
            gpus=k.gpus,
            price_usd=k.price_usd,
            covers=k.gpus >= c.gpus and k.days * 24 >= clock,
            slack_hours=k.days * 24 - clock,
            cost_per_decision=None if c.decisions is None else k.price_usd / c.decisions,
        )
        for k in packages
    )
    period = schedule_period_days(clock)
    return BudgetResult(
        phases=tuple(plans),
        gpu_hours=gpu_hours,
        margin_gpu_hours=fsum(p.margin_gpu_hours for p in plans),
        wall_hours=clock,
        cost_usd=cost,
        cost_per_decision=None if c.decisions is None else cost / c.decisions,
        packages=fits,
        schedule=_schedule(plans, period),
        schedule_period_days=period,
        control_runs=sum(p.control_runs for p in plans),
        control_gpu_hours=fsum(p.control_gpu_hours for p in plans),
        reruns=sum(p.reruns for p in plans),
        pooled_reruns=ceil(margin * sum(p.runs + p.control_runs for p in c.phases)),
        rounding_gpu_hours=float(sum(rounding)),
    )


# Rows of a schedule at most; a longer campaign is summarised in longer periods.
SCHEDULE_MAX_PERIODS = 60
SCHEDULE_PERIODS_DAYS = (1, 7, 30, 365)


def schedule_period_days(wall_hours: float) -> int:
    """Days per schedule row: the first of 1, 7, 30 and 365 that needs at most
    SCHEDULE_MAX_PERIODS rows, else the fewest whole years that do."""
    days = ceil(wall_hours / 24)
    for period in SCHEDULE_PERIODS_DAYS:
        if ceil(days / period) <= SCHEDULE_MAX_PERIODS:
            return period
    return 365 * ceil(days / (365 * SCHEDULE_MAX_PERIODS))


def _schedule(plans: list[PhasePlan], period_days: int) -> tuple[dict[str, float], ...]:
    """GPU-hours of each phase falling in each period of `period_days` days, at the
    phase's average rate."""
    end = max(p.start_hour + p.wall_hours for p in plans)
    width = 24.0 * period_days
    periods = []
    for d in range(ceil(end / width)):
        lo, hi = width * d, width * (d + 1)
        row: dict[str, float] = {}
        for p in plans:
            overlap = min(hi, p.start_hour + p.wall_hours) - max(lo, p.start_hour)
            if overlap > 0:
                row[p.name] = row.get(p.name, 0.0) + p.gpu_hours * overlap / p.wall_hours
        periods.append(row)
    return tuple(periods)
