"""Two models on the same examples: the paired 2x2 table, flips and McNemar's test.

Each example is right or wrong for model a (the baseline) and for model b (the
candidate). The four cells of the paired table:

                  b right          b wrong
    a right       both_right       negative_flips (n10)
    a wrong       positive_flips   both_wrong
                  (n01)

A negative flip is a regression (Yan et al., "Positive-Congruent Training: Towards
Regression-Free Model Updates", CVPR 2021, arXiv:2011.09161: the negative flip rate is
the share of examples the old model got right and the new one gets wrong). McNemar's test
(McNemar 1947, Psychometrika 12(2)) asks whether the two models' error rates differ,
using only the discordant examples n01 and n10. Dietterich (1998, "Approximate
Statistical Tests for Comparing Supervised Classification Learning Algorithms", Neural
Computation 10(7), the first of the five tests of section 3) finds its type I error low
and recommends it for two classifiers compared once on one test set.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction

from calculators.errors import InputError

__all__ = [
    "EXACT_MAX",
    "MAX_DISCORDANT",
    "ClassFlips",
    "McNemar",
    "PairedOutcomes",
    "PairedTable",
    "binomial_half_cdf",
    "chi_square_1_sf",
    "flips_by_class",
    "log_binomial_half_cdf",
    "log_binomial_half_pmf",
    "mcnemar",
    "mcnemar_chi_square",
    "mcnemar_exact",
    "negative_flip_rate",
    "paired_table",
]

# Up to this many discordant examples the binomial tail is summed exactly in integers;
# above it, from Loader's saddle-point pmf (`log_binomial_half_pmf`).
EXACT_MAX = 1_000
# The tail sum takes about 5 sqrt(n) terms at most (`log_binomial_half_cdf`): at 10^12
# discordant examples that is five million, a few seconds; the files hold 2 million rows.
MAX_DISCORDANT = 10**12
# Terms of the tail below this share of its sum are past the last bit of a double.
_NEGLIGIBLE = 2.0**-60


@dataclass(frozen=True, kw_only=True)
class PairedOutcomes:
    """Whether a and b are right on each example, in the same order (equal lengths,
    at least one example)."""

    a_correct: tuple[bool, ...]
    b_correct: tuple[bool, ...]

    def __post_init__(self) -> None:
        if len(self.a_correct) != len(self.b_correct):
            raise InputError(
                "b_correct",
                f"b_correct has {len(self.b_correct):,} outcomes for "
                f"{len(self.a_correct):,} of a: they must be as many",
            )
        if not self.a_correct:
            raise InputError("a_correct", "a_correct has no examples: at least 1 is needed")


@dataclass(frozen=True)
class PairedTable:
    """The paired 2x2 table (module docstring); the four counts sum to n."""

    n: int
    both_right: int
    negative_flips: int  # a right, b wrong: n10
    positive_flips: int  # a wrong, b right: n01
    both_wrong: int


@dataclass(frozen=True)
class McNemar:
    """McNemar's test on the discordant counts.

    statistic:     the continuity-corrected chi-square (`mcnemar_chi_square`).
    p_value:       its p-value from the chi-square distribution with 1 degree of freedom.
    p_value_exact: the exact two-sided binomial p-value (`mcnemar_exact`).
    log10_p_value_exact: its base-10 logarithm, finite where p underflows a double.
    discordant:    n01 + n10.
    """

    statistic: float
    p_value: float
    p_value_exact: float
    log10_p_value_exact: float
    discordant: int


@dataclass(frozen=True)
class ClassFlips:
    """Flips among the examples of one reference class."""

    support: int
    negative: int
    positive: int


def paired_table(o: PairedOutcomes) -> PairedTable:
    """Count the four cells: both right, a right and b wrong (negative flip), a wrong
    and b right (positive flip), both wrong."""
    cells = Counter(zip(o.a_correct, o.b_correct, strict=True))
    return PairedTable(
        n=len(o.a_correct),
        both_right=cells[True, True],
        negative_flips=cells[True, False],
        positive_flips=cells[False, True],
        both_wrong=cells[False, False],
    )


def negative_flip_rate(t: PairedTable) -> float:
    """NFR = negative flips / n (Yan et al., CVPR 2021): the share of all
    examples that the update breaks. Accuracy b - accuracy a = (positive - negative) / n."""
    return t.negative_flips / t.n


def flips_by_class(o: PairedOutcomes, reference: tuple[str, ...]) -> dict[str, ClassFlips]:
    """Support, negative and positive flips per reference label, labels sorted as strings."""
    if len(reference) != len(o.a_correct):
        raise InputError(
            "reference",
            f"reference has {len(reference):,} labels for {len(o.a_correct):,} outcomes",
        )
    support: Counter[str] = Counter(reference)
    negative: Counter[str] = Counter()
    positive: Counter[str] = Counter()
    for label, a, b in zip(reference, o.a_correct, o.b_correct, strict=True):
        if a and not b:
            negative[label] += 1
        elif b and not a:
            positive[label] += 1
    return {
        label: ClassFlips(support=count, negative=negative[label], positive=positive[label])
        for label, count in sorted(support.items())
    }


def _check_counts(n01: int, n10: int) -> None:
    for name, value in (("positive_flips", n01), ("negative_flips", n10)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InputError(name, f"{name} must be a whole number >= 0, got {value!r}")
    if n01 + n10 > MAX_DISCORDANT:
        raise InputError(
            "negative_flips",
            f"negative_flips + positive_flips is {n01 + n10:,}, above the limit of "
            f"{MAX_DISCORDANT:,} discordant examples",
        )


def mcnemar_chi_square(n01: int, n10: int) -> tuple[float, float]:
    """The continuity-corrected McNemar statistic and its p-value:

        X^2 = (max(|n01 - n10| - 1, 0))^2 / (n01 + n10),   p = P(chi^2_1 >= X^2)
            = erfc(sqrt(X^2 / 2))

    (Edwards' continuity correction, as Dietterich 1998 writes the statistic.) The
    correction is never larger than the difference: with n01 = n10 the statistic is 0,
    where the bare formula would give 1 / (n01 + n10). With no discordant example the
    statistic is 0 and p is 1. The chi-square p-value with one degree of freedom is the
    two-sided normal tail of sqrt(X^2): P(|Z| >= z) = erfc(z / sqrt 2).
    """
    _check_counts(n01, n10)
    discordant = n01 + n10
    if discordant == 0:
        return 0.0, 1.0
    corrected = Fraction(max(abs(n01 - n10) - 1, 0) ** 2, discordant)
    return float(corrected), chi_square_1_sf(corrected)


# pi to 60 digits (math.pi holds 16): enough for the 50-digit arithmetic below
_PI = Decimal("3.14159265358979323846264338327950288419716939937510582097494")
_DIGITS = 50
_CF_TERMS = 400  # erfc's continued fraction at z >= 3: far past convergence at 50 digits


def chi_square_1_sf(x: Fraction) -> float:
    """P(chi^2 with 1 degree of freedom >= x) = erfc(sqrt(x / 2)), for a rational x >= 0.

    Computed in 50-digit decimal arithmetic (correctly rounded software, the same in
    CPython and in the browser's Pyodide) and rounded once to a double, so the page and
    the command line give the same digits: math.erfc comes from the platform's C library,
    whose last digit differs between glibc and the browser's. Method: the Maclaurin series
    erf(z) = 2/sqrt(pi) sum_n (-1)^n z^(2n+1) / (n! (2n+1)) below z = 3 (terms peak near
    e^(z^2) < 10^4, far inside 50 digits), and above it Laplace's continued fraction
    erfc(z) = exp(-z^2)/sqrt(pi) / (z + (1/2)/(z + 1/(z + (3/2)/(z + 2/(z + ...)))))
    (Abramowitz and Stegun 7.1.5 and 7.1.14). Past z = 40 the value is below 10^-696,
    under the smallest double: 0.0.
    """
    if x < 0:
        raise ValueError(f"a chi-square statistic is at least 0, got {x}")
    with localcontext() as ctx:
        ctx.prec = _DIGITS
        z2 = Decimal(x.numerator) / Decimal(x.denominator) / 2
        if z2 > 1600:  # z > 40
            return 0.0
        z = z2.sqrt()
        if z < 3:
            term, total, n = z, z, 0
            while True:
                n += 1
                term = -term * z2 / n
                step = term / (2 * n + 1)
                total += step
                if abs(step) < Decimal(10) ** (-_DIGITS - 2):
                    break
            return float(1 - 2 * total / _PI.sqrt())
        fraction = z
        for k in range(_CF_TERMS, 0, -1):
            fraction = z + Decimal(k) / 2 / fraction
        return float((-z2).exp() / _PI.sqrt() / fraction)


# ---- the binomial(n, 1/2) distribution ---------------------------------------------------

_S0, _S1, _S2, _S3, _S4 = 1 / 12, 1 / 360, 1 / 1260, 1 / 1680, 1 / 1188
_LN_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _stirling_error(n: int) -> float:
    """log(n!) - [(n + 1/2) log n - n + log sqrt(2 pi)], the error of Stirling's formula
    (Loader 2000). Small n directly (log of the exact factorial); larger n by
    its asymptotic series, truncated where the next term is below a double's precision
    (the cut points are R's `stirlerr`, nmath/stirlerr.c)."""
    if n <= 15:
        return math.log(math.factorial(n)) - (n + 0.5) * math.log(n) + n - _LN_SQRT_2PI
    nn = float(n) * n
    if n > 500:
        return (_S0 - _S1 / nn) / n
    if n > 80:
        return (_S0 - (_S1 - _S2 / nn) / nn) / n
    if n > 35:
        return (_S0 - (_S1 - (_S2 - _S3 / nn) / nn) / nn) / n
    return (_S0 - (_S1 - (_S2 - (_S3 - _S4 / nn) / nn) / nn) / nn) / n


def _deviance(x: float, mean: float) -> float:
    """x log(x / mean) + mean - x without cancellation when x is near mean (Loader 2000:
    a series in v = (x - mean) / (x + mean); R's nmath/bd0.c)."""
    if abs(x - mean) < 0.1 * (x + mean):
        v = (x - mean) / (x + mean)
        s = (x - mean) * v
        ej = 2 * x * v
        v2 = v * v
        for j in range(1, 1000):
            ej *= v2
            s1 = s + ej / (2 * j + 1)
            if s1 == s:
                return s1
            s = s1
    return x * math.log(x / mean) + mean - x


def log_binomial_half_pmf(k: int, n: int) -> float:
    """log P(X = k) for X ~ Binomial(n, 1/2), 0 <= k <= n, to about 1e-15 relative
    accuracy for any n: Loader's saddle-point expansion

        log P = S(n) - S(k) - S(n - k) - D(k, n/2) - D(n - k, n/2)
                - 1/2 log(2 pi k (n - k) / n)

    with S the Stirling error and D the deviance x log(x / m) + m - x (C. Loader, "Fast
    and Accurate Computation of Binomial Probabilities", 2000; R's nmath/dbinom.c, dbinom_raw).
    P(X = 0) = P(X = n) = 2^-n exactly.
    """
    if not 0 <= k <= n:
        raise InputError("k", f"k must be between 0 and n = {n:,}, got {k:,}")
    if k in (0, n):
        return -n * math.log(2)
    half = n / 2
    lc = (
        _stirling_error(n)
        - _stirling_error(k)
        - _stirling_error(n - k)
        - _deviance(k, half)
        - _deviance(n - k, half)
    )
    return lc - 0.5 * (math.log(2 * math.pi) + math.log(k) + math.log1p(-k / n))


def log_binomial_half_cdf(k: int, n: int) -> float:
    """log P(X <= k) for X ~ Binomial(n, 1/2), 0 <= k <= n.

    For n <= EXACT_MAX: log(sum_{j<=k} C(n, j)) - n log 2 in exact integers. Above:
    P(X <= k) = P(X = k) * sum_{j<=k} P(X = j) / P(X = k), the ratios built downward by
    P(X = j - 1) / P(X = j) = j / (n - j + 1), stopped once a term falls below 2^-60 of
    the sum. For k <= n/2 the terms fall like a normal tail, so the loop takes at most
    about 5 sqrt(n) steps (the normal tail is below 2^-60 of its peak past 9.2 standard
    deviations, sqrt(n)/2 each), or k + 1 where that is fewer; for k > n/2 the
    complement is summed. No term underflows: the sum is scaled by P(X = k).
    """
    if not 0 <= k <= n:
        raise InputError("k", f"k must be between 0 and n = {n:,}, got {k:,}")
    if k == n:
        return 0.0
    if n <= EXACT_MAX:
        return math.log(_lower_tail_count(k, n)) - n * math.log(2)  # big integers whole
    if 2 * k > n:  # the upper tail of the complement is the short one
        return math.log1p(-math.exp(log_binomial_half_cdf(n - k - 1, n)))
    ratio_sum, ratio, j = 1.0, 1.0, k
    while j > 0:
        ratio *= j / (n - j + 1)
        ratio_sum += ratio
        if ratio < _NEGLIGIBLE * ratio_sum:
            break
        j -= 1
    return log_binomial_half_pmf(k, n) + math.log(ratio_sum)


def _lower_tail_count(k: int, n: int) -> int:
    """sum_{j<=k} C(n, j), exactly: 2^n P(X <= k)."""
    total, term = 0, 1
    for j in range(k + 1):
        total += term
        term = term * (n - j) // (j + 1)
    return total


def binomial_half_cdf(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2) (`log_binomial_half_cdf`), 0 where it
    underflows a double."""
    return math.exp(log_binomial_half_cdf(k, n))


def mcnemar_exact(n01: int, n10: int) -> tuple[float, float]:
    """The exact two-sided McNemar p-value and its base-10 logarithm:

        p = min(1, 2 P(X <= min(n01, n10))),   X ~ Binomial(n01 + n10, 1/2)

    the sign test on the discordant examples: under the null hypothesis that a and b
    have the same error rate, each discordant example is a flip either way with
    probability 1/2 (the sign test: the binomial test that McNemar's chi-square, McNemar
    1947, approximates). p is 1 with no discordant example; it may underflow to 0
    for millions of flips all one way, and the logarithm still says how small it is.
    """
    _check_counts(n01, n10)
    n = n01 + n10
    if n == 0:
        return 1.0, 0.0
    k = min(n01, n10)
    if n <= EXACT_MAX:  # one correctly rounded division of integers
        count, whole = 2 * _lower_tail_count(k, n), 2**n
        if count >= whole:
            return 1.0, 0.0
        return count / whole, math.log10(count) - n * math.log10(2)
    log_p = min(math.log(2) + log_binomial_half_cdf(k, n), 0.0)
    return math.exp(log_p), log_p / math.log(10)


def mcnemar(t: PairedTable) -> McNemar:
    """McNemar's test on the flips of a paired table (n01 = positive, n10 = negative)."""
    statistic, p = mcnemar_chi_square(t.positive_flips, t.negative_flips)
    exact, log10_exact = mcnemar_exact(t.positive_flips, t.negative_flips)
    return McNemar(
        statistic=statistic,
        p_value=p,
        p_value_exact=exact,
        log10_p_value_exact=log10_exact,
        discordant=t.positive_flips + t.negative_flips,
    )
