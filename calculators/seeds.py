"""Seed statistics: is a gap between two variants larger than seed-to-seed noise?

A paired comparison runs both variants with the same n seeds (same data order,
same initialisation per seed) and works on the per-seed differences
d_i = b_i - a_i, which removes the variance the two runs share:

  mean   d̄ = (1/n) Σ d_i
  sd     s = sqrt(Σ (d_i - d̄)² / (n - 1))
  CI     d̄ ± t_{1-α/2, n-1} · s / √n                        (paired Student t)
  MDE    (t_{1-α/2, n-1} + t_{power, n-1}) · s / √n          (smallest true gap a
         two-sided test at level α detects with the given power; the usual
         approximation that puts a central t in place of the noncentral one)
  seeds  the smallest n >= 2 whose MDE is at most the effect.

Sources: Student (1908), "The probable error of a mean"; the t quantiles are
checked against NIST/SEMATECH e-Handbook of Statistical Methods, section
1.3.6.7.2 "Critical values of the Student's t distribution"; the MDE form is
Cohen (1988), Statistical Power Analysis, ch. 2, with t in place of z for small n.
The t distribution is computed here in pure Python (regularized incomplete beta
by Lentz's continued fraction, Numerical Recipes 3rd ed., section 6.4).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import exp, isfinite, lgamma, log, log1p, pi, sqrt

from calculators.checks import positive_int, positive_number

_EPS = 1e-15
_TINY = 1e-300


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """Continued fraction of I_x(a, b) (Numerical Recipes betacf, modified Lentz)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c if abs(c) > _TINY else _TINY
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c if abs(c) > _TINY else _TINY
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < _EPS:
            return h
    raise ArithmeticError("incomplete beta continued fraction did not converge")


def regularized_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularized incomplete beta function, for a, b > 0 and 0 <= x <= 1."""
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"x must be in [0, 1], got {x!r}")
    if x in (0.0, 1.0):
        return x
    front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log(1.0 - x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_continued_fraction(a, b, x) / a
    return 1.0 - front * _beta_continued_fraction(b, a, 1.0 - x) / b


def _df(df: object) -> None:
    if isinstance(df, bool) or not isinstance(df, int | float) or not df > 0:
        raise ValueError(f"df must be a positive number, got {df!r}")


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with `df` degrees of freedom.

    P(|T| < t) = 1 - I_{ν/(ν+t²)}(ν/2, 1/2) (the relation Cephes `stdtr` documents), and
    by the reflection I_x(a, b) = 1 - I_{1-x}(b, a) also I_{t²/(ν+t²)}(1/2, ν/2). The form
    whose argument is below 1/2 is used: near t = 0, 1 - x formed from an x close to 1
    loses digits (Cephes, too, switches method there).
    """
    _df(df)
    t2 = t * t
    if t2 < df:
        inner = 0.5 * regularized_beta(0.5, df / 2.0, t2 / (df + t2))
        return 0.5 + inner if t >= 0 else 0.5 - inner
    tail = 0.5 * regularized_beta(df / 2.0, 0.5, df / (df + t2))
    return 1.0 - tail if t >= 0 else tail


def t_pdf(t: float, df: float) -> float:
    """Density of Student's t: Γ((ν+1)/2) / (√(νπ) Γ(ν/2)) · (1 + t²/ν)^(-(ν+1)/2)."""
    _df(df)
    log_norm = lgamma((df + 1.0) / 2.0) - lgamma(df / 2.0) - 0.5 * log(df * pi)
    return exp(log_norm - (df + 1.0) / 2.0 * log1p(t * t / df))


def t_quantile(p: float, df: float) -> float:
    """The t with P(T <= t) = p, to 1e-12 in t.

    Newton's method on `t_cdf` (its derivative is `t_pdf`) inside a bracket that
    bisection keeps: a Newton step that leaves the bracket is replaced by its midpoint.
    About six evaluations of the cdf instead of bisection's forty; the pages recompute
    the seed statistics on every keystroke.
    """
    _df(df)
    if isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 < p < 1.0:
        raise ValueError(f"p must be a probability in (0, 1), got {p!r}")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        lo, hi = hi, hi * 2.0
    t = (lo + hi) / 2.0
    for _ in range(200):
        gap = t_cdf(t, df) - p
        if gap == 0.0:
            return t
        if gap < 0:
            lo = t
        else:
            hi = t
        newton = t - gap / t_pdf(t, df)
        if abs(newton - t) <= 1e-13 * max(1.0, t) and lo <= newton <= hi:
            return newton
        t = newton if lo < newton < hi else (lo + hi) / 2.0
        if hi - lo <= 1e-12 * max(1.0, hi):
            return (lo + hi) / 2.0
    raise ArithmeticError(f"t_quantile({p!r}, {df!r}) did not converge")


def _probability(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be in (0, 1), got {value!r}")


@dataclass(frozen=True, kw_only=True)
class PairedComparison:
    """Scores of variants A and B, one pair per seed (same seed, same position)."""

    a: tuple[float, ...]
    b: tuple[float, ...]
    confidence: float = 0.95

    def __post_init__(self) -> None:
        if len(self.a) != len(self.b):
            raise ValueError(
                f"b must have one score per seed of a ({len(self.a)}), got {len(self.b)}"
            )
        if len(self.a) < 2:
            raise ValueError(f"seeds must be at least 2, got {len(self.a)}")
        for name, scores in (("a", self.a), ("b", self.b)):
            for x in scores:
                if isinstance(x, bool) or not isinstance(x, int | float) or not isfinite(x):
                    raise ValueError(f"{name} scores must be finite numbers, got {x!r}")
        _probability("confidence", self.confidence)


@dataclass(frozen=True, kw_only=True)
class PairedResult:
    """The paired comparison of B against A (differences are b - a)."""

    seeds: int
    mean_difference: float
    sd_difference: float
    standard_error: float
    t_critical: float
    ci_low: float
    ci_high: float
    t_statistic: float | None  # None when every difference is equal (sd 0)
    p_value: float | None
    confidence: float

    @property
    def excludes_zero(self) -> bool:
        """The interval lies wholly on one side of 0."""
        return self.ci_low > 0 or self.ci_high < 0


def paired_difference(q: PairedComparison) -> PairedResult:
    """Mean difference, sd, Student-t confidence interval and two-sided p-value."""
    n = len(q.a)
    d = [b - a for a, b in zip(q.a, q.b, strict=True)]
    mean = sum(d) / n
    sd = sqrt(sum((x - mean) ** 2 for x in d) / (n - 1))
    se = sd / sqrt(n)
    t_crit = t_quantile(1.0 - (1.0 - q.confidence) / 2.0, n - 1)
    t_stat = p = None
    if se > 0:
        t_stat = mean / se
        p = 2.0 * (1.0 - t_cdf(abs(t_stat), n - 1))
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
        confidence=q.confidence,
    )


def _sd(sd_difference: object) -> None:
    positive_number("sd_difference", sd_difference)


def minimum_detectable_effect(
    sd_difference: float, seeds: int, *, alpha: float = 0.05, power: float = 0.8
) -> float:
    """(t_{1-α/2, n-1} + t_{power, n-1}) · sd / √n: the smallest true paired gap that a
    two-sided test at level `alpha` finds with probability `power` over `seeds` seeds."""
    _sd(sd_difference)
    positive_int("seeds", seeds)
    if seeds < 2:
        raise ValueError(f"seeds must be at least 2, got {seeds}")
    _probability("alpha", alpha)
    _probability("power", power)
    df = seeds - 1
    return (t_quantile(1 - alpha / 2, df) + t_quantile(power, df)) * sd_difference / sqrt(seeds)


def seeds_needed(
    effect: float,
    sd_difference: float,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    max_seeds: int = 10_000,
) -> int:
    """The smallest n >= 2 with minimum_detectable_effect(sd, n) <= effect.

    ValueError naming `effect` when even `max_seeds` seeds cannot resolve it.
    """
    if isinstance(effect, bool) or not isinstance(effect, int | float) or not effect > 0:
        raise ValueError(f"effect must be a positive number, got {effect!r}")
    _sd(sd_difference)

    def ok(n: int) -> bool:
        return minimum_detectable_effect(sd_difference, n, alpha=alpha, power=power) <= effect

    if not ok(max_seeds):
        raise ValueError(
            f"effect {effect!r} needs more than max_seeds ({max_seeds}) seeds at "
            f"sd_difference {sd_difference!r}"
        )
    lo, hi = 1, max_seeds  # MDE falls as n grows: ok(hi) holds, n = lo is below range
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid) if mid >= 2 else False:
            hi = mid
        else:
            lo = mid
    return hi
