"""The expected best validation score after n trials of a hyper-parameter search.

A search tries N configurations and reports the best. Its best score grows with the
number of trials, so two methods tuned with different budgets are not compared fairly by
their best scores. Dodge et al. (2019) report instead the expected maximum after n trials,
n = 1 .. N, estimated from the N scores observed: if V is the score of one trial drawn at
random, the best of n independent trials V*_n has P(V*_n <= v) = P(V <= v)^n, and with
the empirical distribution of the N observed scores in place of P (each trial drawn with
replacement),

  E[V*_n] = Σ_j v_j (F(v_j)^n - F(v_{j-1})^n),    F(v) = #{trials <= v} / N,

over the distinct observed scores v_1 < ... < v_k (F(v_0) = 0). Tied scores are one
distinct value whose F counts them all, as the empirical distribution does. Summed by
parts, the same is

  E[V*_n] = v_k - Σ_{j<k} (v_{j+1} - v_j) F(v_j)^n,

which is how it is computed: each term is a gap times a power below 1, so the value rises
with n (never falls, even in floating point: each power only shrinks, and the sum is
correctly rounded by `math.fsum`), starts at the mean of the scores at n = 1 and stays
below the best observed score, which it approaches as n grows.

Assumptions: higher is better (negate a loss); the trials are independent draws from one
search distribution (random search, not a sequential optimiser whose later trials depend
on earlier ones). Limitation: drawing with replacement makes the estimate at n = N lower
than the best observed score, and it is biased for n near N; Tang et al. (2020) give an
unbiased estimator without replacement. Read the curve where n is well below N.

Sources: Dodge, Gururangan, Card, Schwartz and Smith (2019), "Show Your Work: Improved
Reporting of Experimental Results", EMNLP-IJCNLP 2019, section 3 (expected validation
performance); Tang, Ash, Lee, Maheshwari and Andreas (2020), "Showing Your Work Doesn't
Always Work", ACL 2020 (the bias and the unbiased estimator).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from math import fsum, isfinite
from operator import mul

from calculators.checks import is_real
from calculators.errors import InputError, shown
from calculators.statistics.seeds import SCORE_RANGE

__all__ = ["MAX_TRIALS", "Trials", "expected_max"]

# A random search rarely runs more than a few hundred trials; the curve costs N times the
# distinct scores (250,000 products and correctly rounded sums at this bound: about 0.15 s
# in CPython, well under a second in Pyodide).
MAX_TRIALS = 500


def _num(x: float) -> str:
    return f"{x:g}".replace("e+", "e")


@dataclass(frozen=True, kw_only=True)
class Trials:
    """The validation scores of N trials of one search, in any order (higher is better).

    scores: 1 to MAX_TRIALS finite numbers, each 0 or of magnitude 1e-200 to 1e200 (the
    seed scores' bounds).
    """

    scores: tuple[float, ...]

    def __post_init__(self) -> None:
        scores = self.scores
        if not isinstance(scores, tuple | list):
            raise InputError(
                "trials", f"trials must be a list of scores, one per trial, got {shown(scores)}"
            )
        if not 1 <= len(scores) <= MAX_TRIALS:
            raise InputError(
                "trials",
                f"trials must have 1 to {MAX_TRIALS:,} scores (one per trial), got {len(scores):,}",
            )
        low, high = SCORE_RANGE
        for x in scores:
            if not is_real(x) or not isfinite(x):
                raise InputError(
                    "trials",
                    f"trials scores must be finite numbers, got {shown(x)}",
                    subject="trials scores",
                )
            if x != 0 and not low <= abs(x) <= high:
                raise InputError(
                    "trials",
                    f"trials scores must be 0 or of magnitude {_num(low)} to {_num(high)}, "
                    f"got {shown(x)}",
                    subject="trials scores",
                )
        object.__setattr__(self, "scores", tuple(scores))


def expected_max(trials: Trials) -> tuple[float, ...]:
    """E[best of n trials] for n = 1 .. N (the tuple's i-th value is n = i + 1), from the
    empirical distribution of the N scores: v_k - Σ_{j<k} (v_{j+1} - v_j) F(v_j)^n (see
    the module's docstring for the formula, its assumptions and its sources).
    """
    scores = trials.scores
    total = len(scores)
    counts = sorted(Counter(scores).items())
    values = [v for v, _ in counts]
    # F(v_j) for every distinct value but the largest (F there is 1)
    below = []
    seen = 0
    for _, c in counts[:-1]:
        seen += c
        below.append(seen / total)
    gaps = [values[j + 1] - values[j] for j in range(len(below))]
    best = values[-1]
    powers = [1.0] * len(below)
    out = []
    for _ in range(total):
        powers = list(map(mul, powers, below))  # F(v_j)^n, one rounding a step
        out.append(best - fsum(map(mul, gaps, powers)))
    return tuple(out)
