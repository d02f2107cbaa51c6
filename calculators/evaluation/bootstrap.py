"""Two models scored on the same examples with a graded score: the paired bootstrap.

Free-text outputs are rarely right or wrong: each gets a score (a token F1, a ROUGE or
chrF, a judge's grade, a field F1), so McNemar's test on right/wrong does not apply. The
paired bootstrap works on the per-example differences d_i = b_i - a_i, keeping each
example's two scores together (the examples are resampled, not the scores, so the
correlation between a and b on one example stays in):

1. Draw n examples with replacement from the n, B times (a seeded `random.Random`, so
   the same inputs give the same digits on the command line and in the browser).
2. Each draw gives a mean difference m*_b; their spread is the sampling spread of the
   mean difference d = mean(d_i).
3. The percentile interval runs from the k-th smallest to the k-th largest of the B
   means, k = max(1, floor((B + 1) alpha / 2)), alpha = 1 - confidence: at B = 2,000
   and 95%, the 50th from each end (B. Efron and R. J. Tibshirani, An Introduction to
   the Bootstrap, Chapman & Hall 1993, chapter 13, the percentile interval; the (B + 1)
   alpha order statistic is Davison and Hinkley's, 1997, chapter 5). Counting the same
   k from each end keeps the interval symmetric: swapping a and b mirrors it exactly.
4. The two-sided p-value of "no difference" by the shift method: the B means, shifted to
   have mean 0 under the null (m*_b - d), are as far from 0 as the observed d in

       p = (1 + #{b : |m*_b - d| >= |d|}) / (B + 1)

   of the resamples (Efron and Tibshirani 1993, section 16.4, the test by translating the
   data to the null; the 1 + ... / (B + 1) form counts the observed sample among the
   resamples, A. C. Davison and D. V. Hinkley, Bootstrap Methods and their Application,
   1997, section 4.2). Berg-Kirkpatrick, Burkett and Klein (EMNLP 2012, "An Empirical
   Investigation of Statistical Significance in NLP") use the same shifted comparison,
   one-sided; Koehn (EMNLP 2004, "Statistical Significance Tests for Machine Translation
   Evaluation") introduced the paired bootstrap for system scores.

Assumptions: the examples are independent draws from the population the claim is
about; B is large enough that the Monte Carlo error is small (the p-value's own standard
error is about sqrt(p (1 - p) / B)). The percentile interval is first-order accurate and
slightly too short for small n (tens of examples). Like McNemar's test, this sees only the
examples, not the variation from retraining with another seed.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from calculators.errors import InputError
from calculators.progress import report

__all__ = [
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "MAX_DRAWS",
    "MAX_RESAMPLES",
    "MIN_RESAMPLES",
    "PairedBootstrap",
    "PairedScores",
    "paired_bootstrap",
]

# Efron and Tibshirani (1993) ask for about 1,000 resamples or more for a percentile
# interval; 2,000 keeps each 2.5% tail 50 resamples deep.
DEFAULT_RESAMPLES = 2_000
DEFAULT_SEED = 0
MIN_RESAMPLES = 100
MAX_RESAMPLES = 100_000
# Examples drawn in all (n x B): about 50 ns each in CPython, a few seconds at the bound
# (slower in the browser's Pyodide); beyond it, fewer resamples or a sample of examples.
MAX_DRAWS = 50_000_000
# Resamples between two progress reports.
_PROGRESS_EVERY = 500


@dataclass(frozen=True, kw_only=True)
class PairedScores:
    """Per-example scores of a and b on the same examples, in the same order: finite
    numbers of any scale (a score in [0, 1], a judge's grade, a BLEU)."""

    a_scores: tuple[float, ...]
    b_scores: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.a_scores) != len(self.b_scores):
            raise InputError(
                "b_scores",
                f"b_scores has {len(self.b_scores):,} scores for {len(self.a_scores):,} "
                "of a: they must be as many",
            )
        if len(self.a_scores) < 2:
            raise InputError(
                "a_scores", f"a_scores has {len(self.a_scores)} examples: at least 2 are needed"
            )
        for name, scores in (("a_scores", self.a_scores), ("b_scores", self.b_scores)):
            for i, x in enumerate(scores):
                if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x):
                    raise InputError(
                        name, f"{name} must be finite numbers, got {x!r} at position {i + 1}"
                    )


@dataclass(frozen=True, kw_only=True)
class PairedBootstrap:
    """The paired bootstrap of mean(b) - mean(a) (module docstring).

    n, resamples, seed, confidence: the inputs;
    mean_a, mean_b:   the two mean scores;
    mean_difference:  mean(b) - mean(a), the mean of the per-example differences;
    low, high:        the percentile interval at `confidence`;
    p_value:          the two-sided shift-method p-value, at least 1 / (resamples + 1);
    b_better_share:   the share of resamples whose mean difference is above 0 (a reading
                      of how stable the sign is, not a p-value).
    """

    n: int
    resamples: int
    seed: int
    confidence: float
    mean_a: float
    mean_b: float
    mean_difference: float
    low: float
    high: float
    p_value: float
    b_better_share: float


def _check(resamples: int, seed: int, confidence: float, n: int) -> None:
    if isinstance(resamples, bool) or not isinstance(resamples, int):
        raise InputError("resamples", f"resamples must be a whole number, got {resamples!r}")
    if not MIN_RESAMPLES <= resamples <= MAX_RESAMPLES:
        raise InputError(
            "resamples",
            f"resamples must be between {MIN_RESAMPLES:,} and {MAX_RESAMPLES:,}, got {resamples:,}",
        )
    if n * MIN_RESAMPLES > MAX_DRAWS:
        raise InputError(
            "a_scores",
            f"a_scores has {n:,} examples, above the {MAX_DRAWS // MIN_RESAMPLES:,} the "
            f"bootstrap can resample {MIN_RESAMPLES:,} times within its limit of "
            f"{MAX_DRAWS:,} draws: compare a random sample of the examples",
        )
    if n * resamples > MAX_DRAWS:
        raise InputError(
            "resamples",
            f"resamples {resamples:,} x {n:,} examples is {n * resamples:,} draws, above the "
            f"limit of {MAX_DRAWS:,}: use at most {MAX_DRAWS // n:,} resamples for this file",
        )
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise InputError("seed", f"seed must be a whole number in [0, 2^32), got {seed!r}")
    if not 0.5 <= confidence < 1:
        raise InputError("confidence", f"confidence must be in [0.5, 1), got {confidence!r}")


def _tail_rank(resamples: int, confidence: float) -> int:
    """k: the interval's ends are the k-th smallest and k-th largest resampled means."""
    return max(1, math.floor((resamples + 1) * (1 - confidence) / 2))


def paired_bootstrap(
    s: PairedScores,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = 0.95,
) -> PairedBootstrap:
    """The paired bootstrap of the mean difference of scores (module docstring).

    Deterministic for given inputs: `random.Random(seed)` draws the examples (its
    Mersenne Twister and `choices` are the same in CPython and Pyodide), and each
    resample's sum is math.fsum's correctly rounded one: the built-in sum() adds floats
    naively in CPython 3.11 and with compensation from 3.12 (Pyodide's), so its last
    digit would depend on the Python. Time is bounded by MAX_DRAWS."""
    n = len(s.a_scores)
    _check(resamples, seed, confidence, n)
    differences = [b - a for a, b in zip(s.a_scores, s.b_scores, strict=True)]
    d = math.fsum(differences) / n
    rng = random.Random(seed)
    means = []
    for i in range(resamples):
        means.append(math.fsum(rng.choices(differences, k=n)) / n)
        if i % _PROGRESS_EVERY == _PROGRESS_EVERY - 1:
            report(i + 1, resamples, "bootstrap resamples")
    extreme = sum(1 for m in means if abs(m - d) >= abs(d))
    ordered = sorted(means)
    k = _tail_rank(resamples, confidence)
    return PairedBootstrap(
        n=n,
        resamples=resamples,
        seed=seed,
        confidence=confidence,
        mean_a=math.fsum(s.a_scores) / n,
        mean_b=math.fsum(s.b_scores) / n,
        mean_difference=d,
        low=ordered[k - 1],
        high=ordered[-k],
        p_value=(1 + extreme) / (resamples + 1),
        b_better_share=sum(1 for m in means if m > 0) / resamples,
    )
