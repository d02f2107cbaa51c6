"""Student's t and the noncentral t, in pure Python: tails, quantiles, and the power of
the two-sided t test.

Every tail is summed directly, never as 1 minus the other, so a tail of 1e-200 is
reported as 1e-200, and its logarithm stays finite where the tail underflows a double.
The seed statistics (`calculators.statistics.seeds`) are built on these.

Sources: the regularized incomplete beta is Lentz's continued fraction (Numerical Recipes
3rd ed., section 6.4) with the front factor x^a (1-x)^b / B(a, b) in the form of
DiDonato & Morris (1992), ACM TOMS 18:360, Algorithm 708 (`brcomp`); the t tails follow
Cephes `stdtr`; the t quantiles are checked against NIST/SEMATECH e-Handbook of
Statistical Methods, section 1.3.6.7.2; the noncentral t is the Poisson-weighted
incomplete-beta series of Benton & Krishnamoorthy (2003), Computational Statistics &
Data Analysis 43:249-267, section 4; the power of the two-sided test is the same series
with the odd terms cancelled (T'² is noncentral F, Patnaik 1949). The tests pin scipy's,
statsmodels' and mpmath's values.
"""

from __future__ import annotations

from math import erfc, exp, inf, isfinite, lgamma, log, log1p, pi, sqrt
from statistics import NormalDist

from calculators.checks import is_real
from calculators.errors import InputError, shown

__all__ = [
    "NCT_MAX_NONCENTRALITY",
    "nct_cdf",
    "nct_sf",
    "regularized_beta",
    "t_cdf",
    "t_isf",
    "t_log10_sf",
    "t_pdf",
    "t_quantile",
    "t_sf",
    "t_upper_tail",
    "two_sided_power_and_miss",
    "two_sided_power_excess",
]

# |λ| accepted by nct_cdf / nct_sf: the series then needs at most ~8,000 terms.
NCT_MAX_NONCENTRALITY = 100.0

_EPS = 1e-15  # continued fractions stop when a step changes the value by less
_FPMIN = 1e-300  # Lentz's guard against a zero denominator
_MAX_CF_STEPS = 5_000
_MAX_SERIES_TERMS = 20_000
_LN10 = log(10.0)
_HALF_LOG_2PI = 0.5 * log(2.0 * pi)
_SQRT2 = sqrt(2.0)
_NORMAL = NormalDist()


# --- Regularized incomplete beta I_x(a, b), with its complement and its logarithm.


def _stirling_correction(z: float) -> float:
    """ω(z) = lgamma(z) - ((z - ½) log z - z + ½ log 2π), by its asymptotic series for
    z >= 10 (Abramowitz & Stegun 6.1.41; the seventh term is below 1e-15 there)."""
    if z < 10.0:
        return lgamma(z) - ((z - 0.5) * log(z) - z + _HALF_LOG_2PI)
    w = 1.0 / (z * z)
    series = 1 / 12 - w * (
        1 / 360 - w * (1 / 1260 - w * (1 / 1680 - w * (1 / 1188 - w * (691 / 360360 - w / 156))))
    )
    return series / z


def _rlog1(u: float) -> float:
    """u - log(1 + u), without cancellation near u = 0 (TOMS 708's `rlog1`)."""
    if abs(u) > 0.1:
        return u - log1p(u)
    total, power = 0.0, u
    for k in range(2, 40):  # |u| <= 0.1: ~17 terms reach 1e-17 relative
        power *= -u
        term = power / k
        total -= term
        if abs(term) <= 1e-17 * abs(total):
            break
    return total


def _log_front(a: float, b: float, x: float, y: float, lx: float, ly: float) -> float:
    """log(x^a y^b / B(a, b)), y = 1 - x, lx = log x, ly = log y.

    lgamma(a + b) - lgamma(a) - lgamma(b) would cancel about 5e5 down to a few units at
    a + b = 5e4, losing 1e-11 relative. Stirling's form with the corrections ω cancels
    the large parts exactly; with both a, b >= 10, a log(x / x0) + b log(y / y0)
    (x0 = a / (a + b)) is -(a rlog1(u) + b rlog1(v)) for u = x / x0 - 1, v = y / y0 - 1,
    as TOMS 708's `brcomp` does (DiDonato & Morris 1992).
    """
    if a < 10.0 and b < 10.0:
        return a * lx + b * ly + lgamma(a + b) - lgamma(a) - lgamma(b)
    if a < 10.0 or b < 10.0:
        s, ls, big, lbig = (a, lx, b, ly) if a < b else (b, ly, a, lx)
        # lgamma(big + s) - lgamma(big) by Stirling: no term of size big log big
        ratio = (big - 0.5) * log1p(s / big) + s * log(big + s) - s
        ratio += _stirling_correction(big + s) - _stirling_correction(big)
        return s * ls + big * lbig + ratio - lgamma(s)
    total = a + b
    x0, y0 = a / total, b / total
    d = x - x0 if x <= y else y0 - y
    u, v = d / x0, -d / y0
    if abs(u) <= 0.5 and abs(v) <= 0.5:
        core = -(a * _rlog1(u) + b * _rlog1(v))
    else:  # far from the peak the value is tiny; no cancellation to fear
        core = a * (lx - log(x0)) + b * (ly - log(y0))
    corrections = _stirling_correction(total) - _stirling_correction(a) - _stirling_correction(b)
    return core + 0.5 * log(a * b / total) - _HALF_LOG_2PI + corrections


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b) (Numerical Recipes `betacf`, modified Lentz):
    I_x(a, b) = front · cf / a; converges fast for x < (a + 1) / (a + b + 2)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _FPMIN else _FPMIN)
    h = d
    for m in range(1, _MAX_CF_STEPS):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _FPMIN else _FPMIN)
        c = 1.0 + aa / c
        c = c if abs(c) > _FPMIN else _FPMIN
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _FPMIN else _FPMIN)
        c = 1.0 + aa / c
        c = c if abs(c) > _FPMIN else _FPMIN
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < _EPS:
            return h
    raise ArithmeticError(f"incomplete beta continued fraction did not converge at {a}, {b}, {x}")


def _ibeta(a: float, b: float, x: float, y: float, lx: float, ly: float) -> tuple[float, float]:
    """(I_x(a, b), 1 - I_x(a, b)); the smaller one is computed directly, not as 1 - ..."""
    if x <= 0.0:
        return 0.0, 1.0
    if y <= 0.0:
        return 1.0, 0.0
    front = exp(_log_front(a, b, x, y, lx, ly))
    if x < (a + 1.0) / (a + b + 2.0):
        small = front * _beta_continued_fraction(a, b, x) / a
        return small, 1.0 - small
    small = front * _beta_continued_fraction(b, a, y) / b
    return 1.0 - small, small


def regularized_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularized incomplete beta function, for a, b > 0 and 0 <= x <= 1."""
    if not is_real(x) or not 0.0 <= x <= 1.0:
        raise InputError("x", f"x must be in [0, 1], got {shown(x)}")
    for name, value in (("a", a), ("b", b)):
        if not is_real(value) or not isfinite(value) or value <= 0:
            raise InputError(name, f"{name} must be a positive number, got {shown(value)}")
    if x in (0.0, 1.0):
        return float(x)
    return _ibeta(a, b, x, 1.0 - x, log(x), log1p(-x))[0]


# --- Student's t.


def _df(df: object) -> None:
    if not is_real(df) or not isfinite(df) or not df > 0:  # type: ignore[arg-type,operator]
        raise InputError("df", f"df must be a positive number, got {shown(df)}")


def _t_value(t: object) -> None:
    if not is_real(t) or t != t:  # NaN is the only value unequal to itself
        raise InputError("t", f"t must be a number, got {shown(t)}")


def _t_args(t: float, nu: float) -> tuple[float, float, float, float]:
    """x = t² / (ν + t²), y = ν / (ν + t²) and their logarithms, for 0 < t < inf, with
    no overflow or underflow of t² (the page's t statistics reach 1e300)."""
    if 1e-150 < t < 1e150:
        r = t * t / nu
        lx = -log1p(1.0 / r) if r > 1.0 else log(r) - log1p(r)
        ly = -log1p(r)
        return r / (1.0 + r), 1.0 / (1.0 + r), lx, ly
    lr = 2.0 * log(t) - log(nu)  # log(t² / ν)
    if lr > 0:
        lx, ly = -log1p(exp(-lr)), -lr - log1p(exp(-lr))
    else:
        lx, ly = lr - log1p(exp(lr)), -log1p(exp(lr))
    return exp(lx), exp(ly), lx, ly


def t_upper_tail(t: float, nu: float) -> tuple[float, float]:
    """(P(T > t), log P(T > t)) for t >= 0: ½ I_y(ν/2, ½), y = ν / (ν + t²) (Cephes
    `stdtr`); its logarithm from the log front factor, so it stays finite where the
    probability underflows."""
    if t == 0.0:
        return 0.5, -log(2.0)
    if t == inf:
        return 0.0, -inf
    x, y, lx, ly = _t_args(t, nu)
    a, b = nu / 2.0, 0.5
    log_front = _log_front(a, b, y, x, ly, lx)
    if y < (a + 1.0) / (a + b + 2.0):
        log_i = log_front + log(_beta_continued_fraction(a, b, y)) - log(a)
        return 0.5 * exp(log_i), log_i - log(2.0)
    complement = exp(log_front) * _beta_continued_fraction(b, a, x) / b
    sf = 0.5 * (1.0 - complement)  # t <= √3 here, so sf >= 0.04: its logarithm is plain
    return sf, log(sf)


def t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with `df` degrees of freedom, the upper tail computed
    directly (no 1 - cdf), so 1e-200 comes out as 1e-200, not 0."""
    _df(df)
    _t_value(t)
    if t >= 0:
        return t_upper_tail(t, df)[0]
    return 1.0 - t_upper_tail(-t, df)[0]


def t_log10_sf(t: float, df: float) -> float:
    """log10 P(T > t), finite where the tail is below the smallest double (P(T_30 > 1e20)
    is 10^-581.9): the logarithm of the incomplete beta's front factor, not of a float."""
    _df(df)
    _t_value(t)
    if t >= 0:
        return t_upper_tail(t, df)[1] / _LN10
    return log1p(-t_upper_tail(-t, df)[0]) / _LN10


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with `df` degrees of freedom.

    P(T > |t|) = ½ I_{ν/(ν+t²)}(ν/2, ½) (the relation Cephes `stdtr` documents); the
    incomplete beta is evaluated on whichever side of its argument converges, and the
    smaller tail is never formed as 1 - something.
    """
    _df(df)
    _t_value(t)
    if t >= 0:
        return 1.0 - t_upper_tail(t, df)[0]
    return t_upper_tail(-t, df)[0]


def _t_log_pdf(t: float, nu: float) -> float:
    log_norm = lgamma((nu + 1.0) / 2.0) - lgamma(nu / 2.0) - 0.5 * log(nu * pi)
    if abs(t) < 1e150:
        return log_norm - (nu + 1.0) / 2.0 * log1p(t * t / nu)
    return log_norm - (nu + 1.0) / 2.0 * (2.0 * log(abs(t)) - log(nu))


def t_pdf(t: float, df: float) -> float:
    """Density of Student's t: Γ((ν+1)/2) / (√(νπ) Γ(ν/2)) · (1 + t²/ν)^(-(ν+1)/2)."""
    _df(df)
    _t_value(t)
    return exp(_t_log_pdf(t, df))


def _probability_arg(p: object) -> None:
    if not is_real(p) or not 0.0 < p < 1.0:  # type: ignore[operator]
        raise InputError("p", f"p must be a probability in (0, 1), got {shown(p)}")


def t_isf(p: float, df: float) -> float:
    """The t with P(T > t) = p: the upper-tail quantile, for tails down to 1e-300 (a
    tail of 1e-20 cannot be written as 1 - p in floating point).

    For p >= 1/4, Newton's method on the tail in t. Below, Newton's method on
    log P(T > e^u) in u = log t: that function is concave and nearly linear (slope -ν
    in the far tail), so the iteration converges from above in a few steps, started at
    the Cornish-Fisher estimate (A&S 26.7.5), or at the power-law tail P(T > t) ≈
    K t^-ν where that lies beyond 3√ν. A bracket that bisection keeps bounds both; at
    most 100 steps.
    """
    _df(df)
    _probability_arg(p)
    if p == 0.5:
        return 0.0
    if p > 0.5:
        return -t_isf(1.0 - p, df)  # 1 - p is exact for p in [0.5, 1] (Sterbenz)
    nu = float(df)
    z = -_NORMAL.inv_cdf(p)
    if p >= 0.25:
        lo, hi = 0.0, 1.0
        for _ in range(64):  # sf(2^64) is below 0.25 for every df >= 0.02
            if t_upper_tail(hi, nu)[0] <= p:
                break
            lo, hi = hi, hi * 2.0
        t = min(max(z, lo), hi)
        for _ in range(100):
            gap = t_upper_tail(t, nu)[0] - p
            if abs(gap) <= 2e-16 * p:  # p itself is known no better
                return t
            if gap > 0:
                lo = t
            else:
                hi = t
            new = t + gap / exp(_t_log_pdf(t, nu))
            if abs(new - t) <= 4e-16 * abs(new) or hi - lo <= 4e-16 * hi:
                return new
            t = new if lo < new < hi else 0.5 * (lo + hi)
        raise ArithmeticError(f"t_isf({p!r}, {df!r}) did not converge")
    log_p = log(p)
    # t_ν's tail is heavier than the normal's (E[Φ̄(xS)] >= Φ̄(x), S = √(χ²/ν)), so
    # t > z_{1-p}, and z_{0.75} = 0.6745 bounds the whole range p < 1/4 from below.
    cornish_fisher = z + (z**3 + z) / (4.0 * nu) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * nu**2)
    log_k = lgamma((nu + 1.0) / 2.0) - lgamma(nu / 2.0) - 0.5 * log(nu * pi)
    u_tail = (log_k + (nu - 1.0) / 2.0 * log(nu) - log_p) / nu  # sf ≈ K ν^((ν-1)/2) t^-ν
    lo, hi = log(0.6744), inf
    u = log(max(cornish_fisher, 0.6745))
    if u_tail > u and u_tail > 0.5 * log(9.0 * nu):  # the power law holds where t² >> ν
        u = u_tail
    for _ in range(100):
        if u > 709.0:
            raise InputError("p", f"p {p!r} at df {df!r}: the quantile exceeds 1e308")
        t = exp(u)
        _, log_sf = t_upper_tail(t, nu)
        gap = log_sf - log_p
        if abs(gap) <= 1e-15:  # the tail is computed to about this, relative
            return t
        if gap > 0:
            lo = u
        else:
            hi = u
        slope = -exp(u + _t_log_pdf(t, nu) - log_sf)
        new = u - gap / slope
        if abs(new - u) <= 2e-16 * max(1.0, abs(new)) or hi - lo <= 4e-16 * max(1.0, abs(lo)):
            return exp(new)
        if not lo < new < hi:
            new = 0.5 * (lo + hi) if hi < inf else u + 1.0
        u = new
    raise ArithmeticError(f"t_isf({p!r}, {df!r}) did not converge")


def t_quantile(p: float, df: float) -> float:
    """The t with P(T <= t) = p (for a small upper tail, call t_isf with the tail)."""
    _df(df)
    _probability_arg(p)
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_isf(p, df)
    return t_isf(1.0 - p, df)


# --- Noncentral t: Benton & Krishnamoorthy's series.


def _log_weight(m: float, k: int, z: float) -> float:
    """log(e^(-m) m^k / Γ(z)) for z = k + ½ or k + 1 (a Poisson weight and its odd kin).

    Written plainly, -m + k log m - lgamma(z) cancels terms of size m log m (4e4 at
    m = 5000) and loses 4e-12; Stirling's form (Loader 2000, "Fast and accurate
    computation of binomial probabilities", the bd0/stirlerr split) keeps only small
    terms: with ε = m / z - 1 it is -k rlog1(ε) - (z - k) ε - (z - k - ½) log z
    - ½ log 2π - ω(z).
    """
    if k == 0:
        return -m - lgamma(z)
    if z < 10.0:
        return -m + k * log(m) - lgamma(z)
    eps = (m - z) / z
    return (
        -k * _rlog1(eps)
        - (z - k) * eps
        - (z - k - 0.5) * log(z)
        - _HALF_LOG_2PI
        - _stirling_correction(z)
    )


def _mixture(
    m: float, a0: float, b: float, x: float, y: float, lx: float, ly: float
) -> tuple[float, float]:
    """(Σ w_i I_x(a_i, b), Σ w_i (1 - I_x(a_i, b))) over i >= 0, a_i = a0 + i,
    w_i = e^(-m) m^i / Γ(a_i + ½).

    a0 = ½ gives the Poisson(m) weights; a0 = 1 the weights of the odd terms of
    Benton & Krishnamoorthy's noncentral t series. Their scheme: start at the mode
    k = ⌊m⌋, compute I_x(a_k, b) once, and walk both ways with
    I_x(a + 1, b) = I_x(a, b) - g(a), g(a) = Γ(a+b) / (Γ(a+1) Γ(b)) x^a y^b,
    g(a + 1) = g(a) x (a + b) / (a + 1). The weights fall geometrically away from the
    mode (ratio m / (a_i + ½) upward, (a_i - ½) / m downward), which bounds what the
    remaining terms can add; a walk stops when that bound is below 1e-16 of the sum
    (1e-300 absolute), after at most _MAX_SERIES_TERMS terms.
    """
    k = int(m)
    a_k = a0 + k
    w_k = exp(_log_weight(m, k, a_k + 0.5))
    i_k, j_k = _ibeta(a_k, b, x, y, lx, ly)
    g_k = exp(_log_front(a_k, b, x, y, lx, ly)) / a_k if x > 0.0 and y > 0.0 else 0.0
    sum_i, sum_j = w_k * i_k, w_k * j_k
    terms = 1
    # upward
    w, i_val, j_val, g, a = w_k, i_k, j_k, g_k, a_k
    while True:
        i_val = max(i_val - g, 0.0)
        j_val = min(j_val + g, 1.0)
        g *= x * (a + b) / (a + 1.0)
        w *= m / (a + 0.5)
        a += 1.0
        sum_i += w * i_val
        sum_j += w * j_val
        terms += 1
        ratio = m / (a + 0.5)
        if ratio < 1.0:
            rest = w * ratio / (1.0 - ratio)
            if rest * i_val <= 1e-16 * sum_i + 1e-300 and rest <= 1e-16 * sum_j + 1e-300:
                break
        if terms > _MAX_SERIES_TERMS:
            raise ArithmeticError(f"noncentral series did not converge (m {m}, b {b}, x {x})")
    # downward
    w, i_val, j_val, g, a = w_k, i_k, j_k, g_k, a_k
    for _ in range(k):
        if g:  # g is 0 throughout where x is 0 (t underflows) or 1
            g *= a / (x * (a + b - 1.0))  # g(a - 1)
        i_val = min(i_val + g, 1.0)
        j_val = max(j_val - g, 0.0)
        w *= (a - 0.5) / m
        a -= 1.0
        sum_i += w * i_val
        sum_j += w * j_val
        ratio = (a - 0.5) / m
        rest = w * ratio / (1.0 - ratio) if ratio < 1.0 else inf
        if rest <= 1e-16 * sum_i + 1e-300 and rest * j_val <= 1e-16 * sum_j + 1e-300:
            break
    return sum_i, sum_j


def _nct_tails(t: float, nu: float, delta: float) -> tuple[float, float]:
    """(P(T' <= t), P(T' > t)) for t > 0, T' ~ noncentral t(ν, δ), each summed directly.

    Benton & Krishnamoorthy (2003), section 4 (Lenth 1989, AS 243, eq. 2):
      P(T' <= t) = Φ(-δ) + ½ Σ_i [P_i I_x(i + ½, ν/2) + (δ/√2) Q_i I_x(i + 1, ν/2)],
    x = t² / (ν + t²), P_i = e^(-δ²/2) (δ²/2)^i / i!, Q_i = e^(-δ²/2) (δ²/2)^i / Γ(i + 3/2).
    Since Σ P_i = 1 and Σ (δ/√2) Q_i = erf(δ/√2) = 2 Φ(δ) - 1, the upper tail is
      P(T' > t) = ½ Σ_i [P_i (1 - I_x(i + ½, ν/2)) + (δ/√2) Q_i (1 - I_x(i + 1, ν/2))].
    """
    x, y, lx, ly = _t_args(t, nu)
    b = nu / 2.0
    m = delta * delta / 2.0
    p_i, p_j = _mixture(m, 0.5, b, x, y, lx, ly)
    q_i, q_j = _mixture(m, 1.0, b, x, y, lx, ly)
    s = delta / _SQRT2
    lower = 0.5 * erfc(delta / _SQRT2) + 0.5 * (p_i + s * q_i)
    upper = 0.5 * (p_j + s * q_j)
    return min(max(lower, 0.0), 1.0), min(max(upper, 0.0), 1.0)


def _nct_args(t: object, df: object, nc: object) -> None:
    _df(df)
    _t_value(t)
    if not is_real(nc) or not abs(nc) <= NCT_MAX_NONCENTRALITY:  # type: ignore[arg-type]
        raise InputError(
            "nc",
            f"nc must be a number from -{NCT_MAX_NONCENTRALITY:g} to "
            f"{NCT_MAX_NONCENTRALITY:g}, got {shown(nc)}",
        )


def nct_cdf(t: float, df: float, nc: float) -> float:
    """P(T' <= t) for the noncentral t with `df` degrees of freedom and noncentrality `nc`
    (T' = (Z + nc) / √(χ²_df / df)), to about 1e-13 absolute (scipy 1.17 agrees to
    1.5e-13 over df 1..1e5, |nc| <= 40); |nc| <= 100.

    Benton & Krishnamoorthy (2003), CSDA 43:249, section 4 (see `_nct_tails`); for
    t < 0, P(T' <= t) = P(-T' >= -t) with -T' ~ noncentral t(df, -nc).
    """
    _nct_args(t, df, nc)
    if nc == 0:
        return t_cdf(t, df)
    if t == 0:
        return 0.5 * erfc(nc / _SQRT2)
    if t == inf or t == -inf:
        return 1.0 if t > 0 else 0.0
    if t > 0:
        return _nct_tails(t, df, nc)[0]
    return _nct_tails(-t, df, -nc)[1]


def nct_sf(t: float, df: float, nc: float) -> float:
    """P(T' > t) for the noncentral t, summed directly (no 1 - cdf); as `nct_cdf`."""
    _nct_args(t, df, nc)
    if nc == 0:
        return t_sf(t, df)
    if t == 0:
        return 0.5 * erfc(-nc / _SQRT2)
    if t == inf or t == -inf:
        return 0.0 if t > 0 else 1.0
    if t > 0:
        return _nct_tails(t, df, nc)[1]
    return _nct_tails(-t, df, -nc)[0]


# --- Power of the two-sided paired t test.

# Above this λ the power comes from the integral over Z (below): the series needs
# O(λ) terms, the integral a fixed 81 nodes; where both run they agree to ~1e-14.
_SERIES_MAX_NONCENTRALITY = 50.0
_QUAD_STEP = 0.25
_QUAD_NODES = tuple(-10.0 + _QUAD_STEP * k for k in range(81))
_QUAD_WEIGHTS = tuple(_QUAD_STEP * exp(-z * z / 2.0) / sqrt(2.0 * pi) for z in _QUAD_NODES)


def _gamma_pair(a: float, x: float) -> tuple[float, float]:
    """(P(a, x), Q(a, x)), the regularized incomplete gamma and its complement, each
    summed directly (Numerical Recipes 3rd ed. section 6.2: series below a + 1,
    Lentz's continued fraction above)."""
    if x <= 0.0:
        return 0.0, 1.0
    if x == inf:
        return 1.0, 0.0
    log_front = a * log(x) - x - lgamma(a)
    if x < a + 1.0:
        ap, term = a, 1.0 / a
        total = term
        for _ in range(_MAX_SERIES_TERMS):
            ap += 1.0
            term *= x / ap
            total += term
            if term < total * 1e-17:
                p = exp(log_front) * total
                return p, 1.0 - p
        raise ArithmeticError(f"incomplete gamma series did not converge at {a}, {x}")
    bb = x + 1.0 - a
    c, d = 1.0 / _FPMIN, 1.0 / bb
    h = d
    for i in range(1, _MAX_CF_STEPS):
        an = -i * (i - a)
        bb += 2.0
        d = an * d + bb
        d = 1.0 / (d if abs(d) > _FPMIN else _FPMIN)
        c = bb + an / c
        c = c if abs(c) > _FPMIN else _FPMIN
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < _EPS:
            q = exp(log_front) * h
            return 1.0 - q, q
    raise ArithmeticError(f"incomplete gamma continued fraction did not converge at {a}, {x}")


def two_sided_power_and_miss(lam: float, nu: float, c: float) -> tuple[float, float]:
    """(P(|T'| > c), P(|T'| <= c)) for T' ~ noncentral t(ν, λ), λ >= 0, c > 0, each summed
    directly so that either is accurate relative to itself.

    Adding Benton & Krishnamoorthy's upper-tail series at (c, λ) and at (c, -λ), the odd
    (Q) terms cancel: P(T' > c) + P(T' < -c) = Σ P_i I_{ν/(ν+c²)}(ν/2, i + ½), Poisson(λ²/2)
    weights (T'² is noncentral F(1, ν, λ²)), and the miss is Σ P_i I_{c²/(ν+c²)}(i + ½, ν/2).

    For λ > 50 the series is long; then, with S = √(χ²_ν/ν) and Z independent,
    P(|Z + λ| > c S) = ∫ φ(z) P(ν/2, ν (z + λ)² / (2c²)) dz (P the regularized lower
    incomplete gamma), by the trapezoidal rule on z in [-10, 10], step 1/4: the integrand
    is analytic there (its kink at z = -λ is 40 standard deviations out) and the rule
    converges geometrically (Trefethen & Weideman 2014, SIAM Review 56:385, section 5).
    """
    if lam == inf:
        return 1.0, 0.0
    if lam <= _SERIES_MAX_NONCENTRALITY:
        x, y, lx, ly = _t_args(c, nu)
        miss, power = _mixture(lam * lam / 2.0, 0.5, nu / 2.0, x, y, lx, ly)
    else:
        a, scale = nu / 2.0, nu / (2.0 * c * c)
        power = miss = 0.0
        for z, w in zip(_QUAD_NODES, _QUAD_WEIGHTS, strict=True):
            y = lam + z
            p, q = _gamma_pair(a, scale * y * y)
            power += w * p
            miss += w * q
    # the smaller one is accurate relative to itself; the larger is its complement
    if miss < power:
        return 1.0 - miss, miss
    return power, 1.0 - power


def two_sided_power_excess(lam: float, nu: float, c: float, alpha: float) -> float:
    """P(|T'| > c) - alpha, accurate relative to itself even where it is 1e-20.

    With J_i = I_y(ν/2, i + ½) and D_i = J_i - J_0 = g_0 + ... + g_(i-1) (all positive),
    the power is Σ P_i J_i = J_0 + Σ_(i>=1) P_i D_i, and J_0 = 2 P(T > c) = alpha: the
    excess is the sum of positive terms, where power - alpha would be rounding noise. For
    λ²/2 >= 1 the power is well above alpha and the plain difference serves.
    """
    m = lam * lam / 2.0
    if m >= 1.0:
        return two_sided_power_and_miss(lam, nu, c)[0] - alpha
    x, y, lx, ly = _t_args(c, nu)
    b, a = nu / 2.0, 0.5
    g = exp(_log_front(a, b, x, y, lx, ly)) / a if x > 0.0 and y > 0.0 else 0.0
    w, d, total = exp(-m), 0.0, 0.0
    for i in range(1, _MAX_SERIES_TERMS):
        d += g
        g *= x * (a + b) / (a + 1.0)
        a += 1.0
        w *= m / i
        total += w * d
        ratio = m / (i + 1.0)
        if w * ratio / (1.0 - ratio) <= 1e-17 * total or w == 0.0:
            return total
    raise ArithmeticError(f"power excess series did not converge (m {m}, nu {nu})")
