"""Comparison phases: the seeds per arm, tied to a stated minimum detectable effect, and the
control runs that the comparison reads against.

A comparison phase trains `arms` configurations and one control (the reference
configuration: the baseline recipe, or the cell of a grid left as it is), each on the same
n seeds, in the same phase, so that every arm is read as n paired differences against the
control (the paired t test of `calculators.statistics.seeds`):

  runs          = arms x n
  control runs  = n            (one set, shared by every arm of the phase)

n is tied to a minimum detectable effect (MDE): the smallest true gain that a two-sided
paired t test at level alpha detects with probability `power`, given s_d, the standard
deviation of the per-seed differences (from a pilot or an earlier campaign):

  from a gain to detect δ:  n = seeds_needed(δ, s_d, alpha, power)
  from a seed count n:      MDE = minimum_detectable_effect(s_d, n, alpha, power)

and in both cases the MDE of the n chosen is given beside it. Both are the functions the
seeds calculator uses (`calculators.statistics.seeds`), imported, not copied, so the seed
statistics page and the budget give the same n for the same δ.

Assumptions: the control is re-run with the arms, on their seeds, on the same card and
software, rather than read from an earlier run or a paper: a paired difference needs both
runs of a seed, and a score from another run carries every source of variation the pairing
removes (Bouthillier et al. 2021, "Accounting for Variance in Machine Learning
Benchmarks", arXiv:2103.03098; Dodge et al. 2020, arXiv:2002.06305, on how far the seed
alone moves a fine-tuned score). Each arm is tested at level alpha on its own: with
several arms against one control, lower alpha (alpha / arms, Bonferroni) to hold the
chance of any false "gain" at alpha; that raises n.
"""

from __future__ import annotations

from dataclasses import dataclass

from calculators.checks import positive_int
from calculators.errors import InputError, shown
from calculators.limits import MAX_RUNS
from calculators.planning.budget import Phase
from calculators.statistics.seeds import minimum_detectable_effect, seeds_needed

__all__ = ["SeedCount", "SeedPlan", "comparison_phase", "seed_count"]


@dataclass(frozen=True, kw_only=True)
class SeedPlan:
    """What ties a seed count to its minimum detectable effect.

    sd_difference: sd of the per-seed paired differences, in the metric's units;
    detect: the gain to detect (the MDE asked for), in the same units; or
    seeds: a seed count, whose MDE is then computed (exactly one of detect and seeds);
    alpha, power: the two-sided test's level and the power (the seeds calculator's
    defaults). The ranges are checked by `calculators.statistics.seeds`.
    """

    sd_difference: float
    detect: float | None = None
    seeds: int | None = None
    alpha: float = 0.05
    power: float = 0.8

    def __post_init__(self) -> None:
        if (self.detect is None) == (self.seeds is None):
            raise InputError(
                "detect",
                "detect and seeds: give exactly one (the gain to detect, or a seed count "
                f"whose minimum detectable effect is computed), got detect {shown(self.detect)} "
                f"and seeds {shown(self.seeds)}",
                subject="detect",
            )


@dataclass(frozen=True, kw_only=True)
class SeedCount:
    """The seeds per arm and the minimum detectable effect they give.

    detect: the gain asked for (None when the seed count was given); the MDE of `seeds`
    is at most `detect` when it was asked for.
    """

    seeds: int
    minimum_detectable_effect: float
    detect: float | None
    sd_difference: float
    alpha: float
    power: float


def seed_count(plan: SeedPlan) -> SeedCount:
    """n = seeds_needed(detect, s_d) when a gain is asked for, else the seeds given; and
    MDE = minimum_detectable_effect(s_d, n): both from `calculators.statistics.seeds`
    (the noncentral t power of the paired t test, exact; Student 1908)."""
    n = plan.seeds
    if n is None:
        assert plan.detect is not None  # SeedPlan holds exactly one
        n = seeds_needed(plan.detect, plan.sd_difference, alpha=plan.alpha, power=plan.power)
    mde = minimum_detectable_effect(plan.sd_difference, n, alpha=plan.alpha, power=plan.power)
    return SeedCount(
        seeds=n,
        minimum_detectable_effect=mde,
        detect=plan.detect,
        sd_difference=plan.sd_difference,
        alpha=plan.alpha,
        power=plan.power,
    )


def comparison_phase(
    name: str, *, arms: int, seeds: int, gpu_hours_per_run: float, gpus_per_run: int = 1
) -> Phase:
    """A phase of `arms` x `seeds` runs plus `seeds` control runs (the module docstring)."""
    try:
        positive_int("arms", arms, maximum=MAX_RUNS)
        positive_int("seeds", seeds, maximum=MAX_RUNS)
    except InputError as e:
        raise InputError("phase", f"phase {name}: {e}", subject="") from None
    if arms * seeds > MAX_RUNS:
        raise InputError(
            "phase",
            f"phase {name}: arms x seeds must be at most {MAX_RUNS:,} runs, "
            f"got {arms:,} x {seeds:,}",
            subject="",
        )
    return Phase(
        name=name,
        runs=arms * seeds,
        control_runs=seeds,
        gpu_hours_per_run=gpu_hours_per_run,
        gpus_per_run=gpus_per_run,
        arms=arms,
        seeds=seeds,
    )


# An example campaign for a first fine-tuning project (hours are examples, not defaults).
# Its experiments and their evaluation compare EXAMPLE_ARMS arms with one control, each on
# the seeds whose paired t test detects a gain of EXAMPLE_DETECT (two points of accuracy;
# level 0.05, power 0.8) given EXAMPLE_SD_DIFFERENCE, the sd of the per-seed differences
# measured on the ten paired seeds of the seed variability guide
# (docs/data/evaluation/digits/seeds.json), as `|raw|` writes it: the spread the campaign
# budget guide's plan borrows, so that the example is that plan (tests/test_budget.py).
EXAMPLE_SD_DIFFERENCE = 0.00731817
EXAMPLE_DETECT = 0.02
EXAMPLE_ARMS = 3
EXAMPLE_SEEDS = seeds_needed(EXAMPLE_DETECT, EXAMPLE_SD_DIFFERENCE)


def example_phases(seeds: int) -> tuple[Phase, ...]:
    """The example campaign, its comparison phases on `seeds` seeds per configuration."""
    return (
        Phase(name="initial check", runs=2, gpu_hours_per_run=1.0),
        comparison_phase("experiments", arms=EXAMPLE_ARMS, seeds=seeds, gpu_hours_per_run=6.0),
        comparison_phase("evaluation", arms=EXAMPLE_ARMS, seeds=seeds, gpu_hours_per_run=0.5),
        Phase(name="resumption test", runs=1, gpu_hours_per_run=2.0),
        Phase(name="export", runs=1, gpu_hours_per_run=1.0),
    )


EXAMPLE_PHASES = example_phases(EXAMPLE_SEEDS)
