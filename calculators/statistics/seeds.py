"""Seed statistics: is a gap between two variants larger than seed-to-seed noise?

A paired comparison runs both variants with the same n seeds (same data order,
same initialisation per seed) and works on the per-seed differences
d_i = b_i - a_i, which removes the variance the two runs share:

  mean   d̄ = (1/n) Σ d_i
  sd     s = sqrt(Σ (d_i - d̄)² / (n - 1))
  CI     d̄ ± t_{1-α/2, n-1} · s / √n                        (paired Student t)
  p      2 · P(T_{n-1} > |d̄| / (s / √n))                     (two-sided)
  power  P(|T'| > t_{1-α/2, n-1}),  T' ~ noncentral t(n - 1, λ = δ √n / σ)
  MDE    the δ > 0 whose power is the requested one
  seeds  the smallest n >= 2 whose power reaches the requested one.

Beside the differences, each variant's own mean and sample sd (n - 1) over its seeds, and
the paired counts: seeds where b_i > a_i (wins), b_i = a_i (ties), b_i < a_i (losses).

The differences, their mean and their sum of squares are exact: each score is taken as
the decimal the reader typed (the value `calculators.decimals.typed_value` gives, read
from the float's shortest repr), so differences that are equal as typed give sd 0 (the
interval and the test are then undefined, and the result says None), and no score within
the bounds below overflows or underflows. Each figure is rounded to a double once.

Sources: Student (1908), "The probable error of a mean"; the distributions, their
sources and their accuracy are in `calculators.statistics.student_t`; the power and the sample size
are checked against statsmodels' TTestPower and G*Power. The tests pin their values.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import ceil, inf, isfinite, isqrt, ldexp, log, sqrt
from statistics import NormalDist

from calculators.checks import is_real
from calculators.decimals import typed_value
from calculators.errors import InputError, shown
from calculators.statistics.student_t import (
    t_isf,
    t_upper_tail,
    two_sided_power_and_miss,
    two_sided_power_excess,
)

__all__ = [
    "ALPHA_RANGE",
    "CONFIDENCE_RANGE",
    "EFFECT_RANGE",
    "MAX_SEEDS",
    "POWER_MAX",
    "SCORE_RANGE",
    "SD_RANGE",
    "PairedComparison",
    "PairedResult",
    "PairedSummary",
    "VariantSummary",
    "exact_differences",
    "minimum_detectable_effect",
    "paired_difference",
    "paired_power",
    "paired_summary",
    "seeds_needed",
]

# --- Bounds: every figure stays a finite double, every loop a bounded number of steps.

# Scores per variant, and `seeds`: the exact sums stay bounded (0.8 s in CPython for
# 100,000 random scores), and the t distributions are checked up to 10^5 degrees of freedom.
MAX_SEEDS = 100_000
# A score is 0 or has this magnitude. The differences, their mean and their sd then lie
# within about 1e-219 .. 6e200, and the sums of squares are exact integers anyway.
SCORE_RANGE = (1e-200, 1e200)
# `sd_difference`: holds every sd `paired_difference` can return from accepted scores
# (2e-219 .. 6e200), so it can be fed back; the minimum detectable effect lies between
# ~5e-11 sd (power a hair above alpha, 100,000 seeds) and ~3e10 sd (2 seeds, alpha 1e-10,
# power 1 - 1e-10), so with this range it always lies within EFFECT_RANGE and can be fed
# back as `effect`.
SD_RANGE = (1e-230, 1e230)
# `effect`: any MDE, as above; effect / sd may then over- or underflow, where the power is
# exactly 1 or alpha to double precision.
EFFECT_RANGE = (1e-250, 1e250)
# A two-sided test with alpha above 0.5 rejects a true null more often than not; below
# 1e-10 no field tests (genome-wide 5e-8, particle physics' 5 sigma 5.7e-7 two-sided),
# and the critical t at 2 seeds (6.4e9 at 1e-10) and with it the MDE grow without bound.
ALPHA_RANGE = (1e-10, 0.5)
# An interval at level 1 - alpha is the set a level-alpha test does not reject: the
# same bounds. Below 0.5 an interval misses more often than it covers.
CONFIDENCE_RANGE = (0.5, 1.0 - 1e-10)
# Power 1 needs an infinite effect; at 1 - 1e-10 the miss probability is still resolved
# (to ~1e-13 relative) and the effect is at most ~6.5 critical values.
POWER_MAX = 1.0 - 1e-10
# |t| above this would not be a finite double: refused (see paired_difference). Scores
# spanning 1e-200 .. 1e200 can make the differences agree to 400 digits but not exactly.
_T_STATISTIC_MAX = 1e300
_T_SQUARED_MAX = 10**600

_LN10 = log(10.0)
_NORMAL = NormalDist()


def _num(x: float) -> str:
    """A bound as a reader writes it: 1e200, not 1e+200."""
    return f"{x:g}".replace("e+", "e")


def _check_range(name: str, value: object, low: float, high: float, what: str) -> None:
    if not is_real(value) or not isfinite(value) or value <= 0:  # type: ignore[arg-type,operator]
        raise InputError(name, f"{name} must be a positive number, got {shown(value)}")
    if not low <= value <= high:  # type: ignore[operator]
        raise InputError(
            name, f"{name} must be from {_num(low)} to {_num(high)} ({what}), got {shown(value)}"
        )


def _check_alpha(alpha: object) -> None:
    low, high = ALPHA_RANGE
    if not is_real(alpha) or not low <= alpha <= high:  # type: ignore[operator]
        raise InputError(
            "alpha",
            f"alpha must be a number from {low:g} to {high:g} (the two-sided test level), "
            f"got {shown(alpha)}",
        )


def _check_power(power: object, alpha: float) -> None:
    if not is_real(power) or not 0.0 < power <= POWER_MAX:  # type: ignore[operator]
        raise InputError(
            "power",
            f"power must be a number above alpha and at most 1 - 1e-10 (0.9999999999), "
            f"got {shown(power)}",
        )
    if power <= alpha:  # type: ignore[operator]
        raise InputError(
            "power",
            f"power must be above alpha ({alpha!r}), got {shown(power)}: a test at level "
            f"alpha already 'detects' a zero effect with probability alpha",
        )


def _check_seeds(name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise InputError(name, f"{name} must be a whole number of seeds, got {shown(value)}")
    if value < 2:
        raise InputError(name, f"{name} must be at least 2, got {value}")
    if value > MAX_SEEDS:
        raise InputError(name, f"{name} must be at most {MAX_SEEDS:,}, got {value:,}")


def _critical(alpha: float, df: int) -> float:
    return t_isf(alpha / 2.0, df)


def paired_power(effect: float, sd_difference: float, seeds: int, *, alpha: float = 0.05) -> float:
    """P(the two-sided paired t test at level `alpha` rejects) when the true mean
    difference is `effect` and the sd of the differences `sd_difference`, over `seeds`
    seeds: P(T' > c) + P(T' < -c), T' ~ noncentral t(n - 1, λ = effect √n / sd),
    c = t_{1-α/2, n-1}. At effect 0 this is alpha; it rises with effect and with seeds.
    Exact (to ~1e-14), not the central-t approximation; see `two_sided_power_and_miss`.
    """
    _check_range("effect", effect, *EFFECT_RANGE, "the gap to detect")
    _check_range("sd_difference", sd_difference, *SD_RANGE, "the sd of the differences")
    _check_seeds("seeds", seeds)
    _check_alpha(alpha)
    lam = effect / sd_difference * sqrt(seeds)
    return two_sided_power_and_miss(lam, seeds - 1, _critical(alpha, seeds - 1))[0]


def _solve_noncentrality(df: int, c: float, alpha: float, power: float) -> float:
    """The λ > 0 with P(|T'| > c) = power, by Brent's method (Brent 1973, ch. 4; the
    Numerical Recipes `zbrent` form) on the log of the miss (power > ½) or of the excess
    power - alpha (power <= ½), each summed directly and rising smoothly with λ, so that
    a power of 1 - 1e-10 or of alpha + 1e-17 is still resolved. The bracket grows from a
    normal approximation; the root is held to 1e-14 relative."""
    use_miss = power > 0.5
    log_target = log(1.0 - power) if use_miss else log(power - alpha)  # both exact

    def h(lam: float) -> float:
        if use_miss:
            miss = two_sided_power_and_miss(lam, df, c)[1]
            return log_target - (log(miss) if miss > 0 else -750.0)
        excess = two_sided_power_excess(lam, df, c, alpha)
        return (log(excess) if excess > 0 else -750.0) - log_target

    # The normal approximation to the noncentral t (Abramowitz & Stegun 26.7.10):
    # power ≈ Φ((λ - c (1 - 1/(4ν))) / √(1 + c²/(2ν))). The central-t form c + t_power is
    # 40 times too large at 2 seeds and power 1 - 1e-10; this is within about 20%.
    guess = c * (1.0 - 0.25 / df) + _NORMAL.inv_cdf(power) * sqrt(1.0 + c * c / (2.0 * df))
    guess = max(guess, 1e-3 * c)
    lo = hi = guess
    f_lo = f_hi = h(guess)
    factor = 1.25
    if f_hi < 0.0:  # walk up to a point above the root, the steps growing
        for _ in range(60):
            lo, f_lo = hi, f_hi
            hi *= factor
            factor *= factor
            f_hi = h(hi)
            if f_hi >= 0.0:
                break
        else:
            raise ArithmeticError("no upper bracket for the noncentrality")
    else:  # walk down to a point below the root
        for _ in range(60):
            hi, f_hi = lo, f_lo
            lo /= factor
            factor *= factor
            if lo < 1e-9 * c:  # at λ = 0 the power is alpha < power
                lo, f_lo = 0.0, h(0.0)
                break
            f_lo = h(lo)
            if f_lo < 0.0:
                break
        else:
            raise ArithmeticError("no lower bracket for the noncentrality")
    if f_hi == 0.0:
        return hi
    # Brent: a, b bracket the root, b the best estimate.
    a, b, fa, fb = lo, hi, f_lo, f_hi
    cc, fc = b, fb
    d = e = b - a
    for _ in range(200):
        if (fb > 0) == (fc > 0):
            cc, fc = a, fa
            d = e = b - a
        if abs(fc) < abs(fb):
            a, b, cc = b, cc, b
            fa, fb, fc = fb, fc, fb
        tol = 1e-14 * abs(b) + 1e-300
        xm = 0.5 * (cc - b)
        if abs(xm) <= tol or fb == 0.0:
            return b
        if abs(e) >= tol and abs(fa) > abs(fb):
            s = fb / fa
            if a == cc:
                p, q = 2.0 * xm * s, 1.0 - s
            else:
                q, r = fa / fc, fb / fc
                p = s * (2.0 * xm * q * (q - r) - (b - a) * (r - 1.0))
                q = (q - 1.0) * (r - 1.0) * (s - 1.0)
            if p > 0:
                q = -q
            p = abs(p)
            if 2.0 * p < min(3.0 * xm * q - abs(tol * q), abs(e * q)):
                e, d = d, p / q
            else:
                d = e = xm
        else:
            d = e = xm
        a, fa = b, fb
        b += d if abs(d) > tol else (tol if xm > 0 else -tol)
        fb = h(b)
    raise ArithmeticError("the noncentrality did not converge")


def minimum_detectable_effect(
    sd_difference: float, seeds: int, *, alpha: float = 0.05, power: float = 0.8
) -> float:
    """The smallest true paired gap δ > 0 that a two-sided paired t test at level `alpha`
    over `seeds` seeds detects with probability `power`: paired_power(δ) = power, solved
    exactly with the noncentral t (the central-t form (t_{1-α/2} + t_power) sd / √n
    overstates the power at few seeds: at 3 seeds, alpha 0.05, power 0.8 its answer has
    power 0.77). Any alpha < power < 1 has an answer; power <= alpha is refused.
    """
    _check_range("sd_difference", sd_difference, *SD_RANGE, "the sd of the differences")
    _check_seeds("seeds", seeds)
    _check_alpha(alpha)
    _check_power(power, alpha)
    df = seeds - 1
    lam = _solve_noncentrality(df, _critical(alpha, df), alpha, power)
    return lam * sd_difference / sqrt(seeds)


def seeds_needed(
    effect: float,
    sd_difference: float,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    max_seeds: int = 10_000,
) -> int:
    """The smallest n >= 2 with paired_power(effect, sd_difference, n, alpha=alpha) >= power.

    Power rises with n, so: start at the normal-theory guess with Guenther's (1981) t
    correction, n ≈ ((z_{1-α/2} + z_power) sd / effect)² + z²_{1-α/2} / 2, gallop away from
    it (steps 1, 2, 4, ...) to bracket the answer and bisect: O(log) power evaluations.
    InputError naming `effect` when even `max_seeds` seeds do not reach `power`.
    """
    _check_range("effect", effect, *EFFECT_RANGE, "the gap to detect")
    _check_range("sd_difference", sd_difference, *SD_RANGE, "the sd of the differences")
    _check_alpha(alpha)
    _check_power(power, alpha)
    _check_seeds("max_seeds", max_seeds)
    dz = effect / sd_difference

    def ok(n: int) -> bool:
        return two_sided_power_and_miss(dz * sqrt(n), n - 1, _critical(alpha, n - 1))[0] >= power

    z_a, z_b = -_NORMAL.inv_cdf(alpha / 2.0), _NORMAL.inv_cdf(power)
    ratio = (z_a + z_b) / dz if dz > 0 else inf
    guess = ratio * ratio + z_a * z_a / 2.0
    start = max_seeds if not guess < max_seeds else max(2, ceil(guess))
    if ok(start):
        hi, step = start, 1
        lo = hi - step
        while lo >= 2 and ok(lo):
            hi, step = lo, step * 2
            lo = hi - step
        lo = max(lo, 1)  # n = 1 stands for "not enough"
    else:
        if start == max_seeds:
            raise InputError(
                "effect",
                f"effect {effect!r} needs more than max_seeds ({max_seeds}) seeds at "
                f"sd_difference {sd_difference!r}, alpha {alpha!r} and power {power!r}",
            )
        lo, step = start, 1
        hi = lo + step
        while hi < max_seeds and not ok(hi):
            lo, step = hi, step * 2
            hi = lo + step
        if hi >= max_seeds:
            hi = max_seeds
            if not ok(hi):
                raise InputError(
                    "effect",
                    f"effect {effect!r} needs more than max_seeds ({max_seeds}) seeds at "
                    f"sd_difference {sd_difference!r}, alpha {alpha!r} and power {power!r}",
                )
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


# --- The paired comparison.


def _check_scores(name: str, scores: object) -> tuple[int | float, ...]:
    if not isinstance(scores, tuple | list):
        raise InputError(
            name, f"{name} must be a list of scores, one per seed, got {shown(scores)}"
        )
    if len(scores) > MAX_SEEDS:
        raise InputError(
            name,
            f"{name} must have at most {MAX_SEEDS:,} scores (one per seed), got {len(scores):,}",
        )
    low, high = SCORE_RANGE
    for x in scores:
        if not is_real(x) or not isfinite(x):
            raise InputError(
                name,
                f"{name} scores must be finite numbers, got {shown(x)}",
                subject=f"{name} scores",
            )
        if x != 0 and not low <= abs(x) <= high:
            raise InputError(
                name,
                f"{name} scores must be 0 or of magnitude {_num(low)} to {_num(high)}, "
                f"got {shown(x)}",
                subject=f"{name} scores",
            )
    return tuple(scores)


def _decimal_parts(x: int | float) -> tuple[int, int]:
    """(m, e) with m · 10^e == typed_value(x): the shortest decimal that reads back as x,
    taken from repr as digits and exponent (typed_value's Fraction parse costs 25 µs a
    score, 2.5 s at 100,000 seeds; this, about 1 µs)."""
    if isinstance(x, int):
        return x, 0
    text = repr(float(x))
    mantissa, _, exponent = text.partition("e")
    whole, _, frac = mantissa.partition(".")
    return int(whole + frac), (int(exponent) if exponent else 0) - len(frac)


def _sqrt_ratio(p: int, q: int) -> float:
    """√(p / q) for integers p >= 0, q > 0, correctly rounded to a double (an integer
    square root on 2^120-scaled numbers, with a sticky bit for the discarded rest)."""
    if p == 0:
        return 0.0
    e = (q.bit_length() - p.bit_length() + 124) // 2
    num, den = (p << (2 * e), q) if e >= 0 else (p, q << (-2 * e))
    quotient, rest = divmod(num, den)
    root = isqrt(quotient)
    inexact = rest != 0 or root * root != quotient
    return ldexp(float((root << 1) | inexact), -e - 1)


@dataclass(frozen=True, kw_only=True)
class PairedComparison:
    """Scores of variants A and B, one pair per seed (same seed, same position).

    a, b: the scores, 2 to 100,000 each, each 0 or of magnitude 1e-200 to 1e200;
    confidence: the interval's level, 0.5 to 1 - 1e-10.
    """

    a: tuple[float, ...]
    b: tuple[float, ...]
    confidence: float = 0.95

    def __post_init__(self) -> None:
        a = _check_scores("a", self.a)
        b = _check_scores("b", self.b)
        if len(a) != len(b):
            raise InputError("b", f"b must have one score per seed of a ({len(a)}), got {len(b)}")
        if len(a) < 2:
            raise InputError(
                "a", f"a must have one score per seed, and seeds must be at least 2, got {len(a)}"
            )
        low, high = CONFIDENCE_RANGE
        c = self.confidence
        if not is_real(c) or not low <= c <= high:  # type: ignore[operator]
            raise InputError(
                "confidence",
                f"confidence must be in [{low:g}, {high!r}] (1 - 1e-10 at most), got {shown(c)}",
            )
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", b)


@dataclass(frozen=True, kw_only=True)
class PairedResult:
    """The paired comparison of B against A (differences are b - a).

    When every difference is equal as typed, the sd is 0 and the t interval and test are
    undefined: ci_low, ci_high, t_statistic, p_value and log10_p_value are then None.
    """

    seeds: int
    mean_difference: float
    sd_difference: float
    standard_error: float
    t_critical: float  # t_{1-(1-confidence)/2, seeds-1}
    ci_low: float | None
    ci_high: float | None
    t_statistic: float | None
    p_value: float | None  # two-sided; 0.0 where it is below the smallest double
    log10_p_value: float | None  # finite even where p_value underflows to 0.0
    confidence: float

    @property
    def excludes_zero(self) -> bool | None:
        """The interval lies wholly on one side of 0; None when it is undefined (sd 0)."""
        if self.ci_low is None or self.ci_high is None:
            return None
        return self.ci_low > 0 or self.ci_high < 0


def exact_differences(q: PairedComparison) -> tuple[tuple[int, ...], int]:
    """The differences b_i - a_i exactly, as integers over one common denominator:
    (D, c) with D_i / c == typed_value(b_i) - typed_value(a_i) and c a power of ten.

    Each score is the shortest decimal that reads back as it (what the reader typed,
    `calculators.decimals.typed_value`), so differences equal as typed are equal here,
    where their floats may not be (0.3 - 0.1 and 0.2 - 0.0 as doubles differ in the last
    bit). Scores within SCORE_RANGE keep c at most 10^216 or so.
    """
    parts_a = [_decimal_parts(x) for x in q.a]
    parts_b = [_decimal_parts(y) for y in q.b]
    low = min(0, *(e for _, e in parts_a), *(e for _, e in parts_b))
    common = 10**-low  # every typed score is an integer multiple of 1 / common
    powers: dict[int, int] = {}

    def scaled(m: int, e: int) -> int:
        if e not in powers:
            powers[e] = 10 ** (e - low)
        return m * powers[e]

    diffs = tuple(scaled(*y) - scaled(*x) for x, y in zip(parts_a, parts_b, strict=True))
    return diffs, common


def paired_difference(q: PairedComparison) -> PairedResult:
    """Mean difference, sd, Student-t confidence interval and two-sided p-value.

    The differences are exact rationals of the typed scores (over a common denominator,
    as integers), so mean, variance and t are exact until each is rounded once to a
    double: mean = Σd / n, sd = √(n Σd² - (Σd)²) / √(n (n-1)), t = Σd √(n-1) / √(n Σd² - (Σd)²).
    p = 2 P(T > |t|) from the upper tail directly; log10_p_value from its logarithm.
    """
    n = len(q.a)
    df = n - 1
    diffs, common = exact_differences(q)
    s1 = sum(diffs)
    s2 = sum(d * d for d in diffs)
    spread = n * s2 - s1 * s1  # n (n-1) common² sd², exact
    mean = float(Fraction(s1, n * common))
    tail = (1 - typed_value(q.confidence)) / 2  # exact: 0.9999999999 gives 5e-11
    t_crit = t_isf(float(tail), df)
    if spread == 0:
        return PairedResult(
            seeds=n,
            mean_difference=mean,
            sd_difference=0.0,
            standard_error=0.0,
            t_critical=t_crit,
            ci_low=None,
            ci_high=None,
            t_statistic=None,
            p_value=None,
            log10_p_value=None,
            confidence=q.confidence,
        )
    sd = _sqrt_ratio(spread, n * df * common * common)
    se = _sqrt_ratio(spread, n * n * df * common * common)
    t_squared_num = s1 * s1 * df
    if t_squared_num > spread * _T_SQUARED_MAX:
        raise InputError(
            "b",
            "b - a: the differences agree to 300 significant digits but are not equal, "
            f"so the t statistic exceeds {_num(_T_STATISTIC_MAX)}; use scores of closer magnitudes",
        )
    t_stat = _sqrt_ratio(t_squared_num, spread)
    if s1 < 0:
        t_stat = -t_stat
    sf, log_sf = t_upper_tail(abs(t_stat), df)
    p = min(2.0 * sf, 1.0)
    log10_p = min((log(2.0) + log_sf) / _LN10, 0.0)
    return PairedResult(
        seeds=n,
        mean_difference=mean,
        sd_difference=sd,
        standard_error=se,
        t_critical=t_crit,
        ci_low=mean - t_crit * se,
        ci_high=mean + t_crit * se,
        t_statistic=t_stat,
        p_value=p,
        log10_p_value=log10_p,
        confidence=q.confidence,
    )


# --- Each variant on its own, and the paired counts.


@dataclass(frozen=True, kw_only=True)
class VariantSummary:
    """One variant's scores over its seeds: mean and sample sd (divisor n - 1)."""

    mean: float
    sd: float


@dataclass(frozen=True, kw_only=True)
class PairedSummary:
    """Each variant's mean and sd, and how many seeds B wins (b > a), ties (b = a, equal
    as typed) and loses (b < a); wins + ties + losses is the number of seeds."""

    a: VariantSummary
    b: VariantSummary
    wins: int
    ties: int
    losses: int


def _variant_summary(scores: tuple[int | float, ...]) -> VariantSummary:
    """mean = Σx / n, sd = √((n Σx² - (Σx)²) / (n (n-1))), on the typed decimals as
    integers over one power of ten, so each is exact until rounded once to a double
    (scores equal as typed give sd 0, not rounding noise)."""
    parts = [_decimal_parts(x) for x in scores]
    low = min(0, *(e for _, e in parts))
    common = 10**-low
    powers = {e: 10 ** (e - low) for e in {e for _, e in parts}}  # each 10^k once
    values = [m * powers[e] for m, e in parts]
    n = len(values)
    s1 = sum(values)
    s2 = sum(v * v for v in values)
    return VariantSummary(
        mean=float(Fraction(s1, n * common)),
        sd=_sqrt_ratio(n * s2 - s1 * s1, n * (n - 1) * common * common),
    )


def paired_summary(q: PairedComparison) -> PairedSummary:
    """Each variant's mean and sample sd over its seeds (each exact on the typed scores,
    then rounded once), and the paired counts of the sign of b_i - a_i taken exactly, as
    `exact_differences` gives it: 0.3 - 0.1 and 0.2 - 0.0 are the same difference, and
    0.1 against 0.1 is a tie whatever binary rounding would say. Scores within
    SCORE_RANGE keep every figure a finite double (|mean| <= 1e200, sd <= 1e200 · √2).
    """
    differences, _ = exact_differences(q)
    wins = sum(1 for d in differences if d > 0)
    losses = sum(1 for d in differences if d < 0)
    return PairedSummary(
        a=_variant_summary(q.a),
        b=_variant_summary(q.b),
        wins=wins,
        ties=len(differences) - wins - losses,
        losses=losses,
    )
