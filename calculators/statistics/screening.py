"""Reading an unreplicated two-level screen: Lenth's pseudo standard error, the
half-normal plot's scores, and the curvature test of centre points.

Lenth's method (R. V. Lenth, "Quick and easy analysis of unreplicated factorials",
Technometrics 31:469-473, 1989)
  A 2^(k-p) design of N runs without replicates gives m = N - 1 orthogonal contrasts
  c_1 .. c_m (the effects), each with the same variance, and no degrees of freedom
  left for noise. If only a few effects are active (effect sparsity), the small |c_j|
  are noise, and their median measures it:
      s0  = 1.5 median |c_j|
      PSE = 1.5 median { |c_j| : |c_j| < 2.5 s0 }
  (1.5 is about 1 / 0.6745: the median of |Z| for a standard normal Z is 0.6745 sigma;
  the second step drops the effects that look active). The PSE stands in for the
  standard error of an effect, with about d = m / 3 degrees of freedom (Lenth's
  simulation), which gives
      ME  = t_{0.975, d} PSE                      (margin of error, each effect, 95%)
      SME = t_{gamma, d} PSE,  gamma = (1 + 0.95^(1/m)) / 2
                                                   (simultaneous margin over all m)
  An effect beyond ME is likely active; one beyond SME is active even allowing for
  reading m effects at once. Assumptions: independent errors of equal variance, and
  fewer than about half the effects active (else the PSE is inflated and the method
  misses effects).

Half-normal plot (C. Daniel, "Use of half-normal plots in interpreting factorial
two-level experiments", Technometrics 1:311-341, 1959)
  The |c_j| in increasing order against the half-normal quantiles
      q_i = Phi^-1(0.5 + 0.5 (i - 0.5) / m),   i = 1 .. m.
  Noise effects fall on a line through the origin of slope sigma_effect (here drawn
  with the PSE); active effects stand above it, at the right.

Centre points (D. C. Montgomery, Design and Analysis of Experiments, 8th ed., Wiley
2012, section 6.8, "Addition of center points to the 2^k design"; NIST/SEMATECH
e-Handbook of Statistical Methods, section 5.3.3.7, "Adding centerpoints",
https://www.itl.nist.gov/div898/handbook/pri/section3/pri337.htm)
  n_C runs with every numeric factor at the middle of its two levels. A two-level
  design fits planes: if the response bends (a learning rate with its optimum inside
  the range), the mean of the factorial runs differs from the mean at the centre:
      curvature = ybar_F - ybar_C
      SE        = s sqrt(1 / n_F + 1 / n_C)
      t         = curvature / SE,   df = n_C - 1   (s from the centre points alone)
  with s the standard deviation of the centre points (pure error: they are replicates
  of one setting). Equivalently SS_curvature = n_F n_C (ybar_F - ybar_C)^2 / (n_F + n_C)
  and F = SS_curvature / s^2 = t^2 with (1, n_C - 1) degrees of freedom. The test
  says that some factor bends, not which: the centre points do not separate the
  quadratic terms (a response surface design does).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist, fmean, median, stdev

from calculators.checks import is_real
from calculators.errors import InputError, shown
from calculators.statistics.student_t import t_isf, t_sf

__all__ = [
    "MIN_CONTRASTS",
    "Curvature",
    "Lenth",
    "curvature",
    "half_normal_scores",
    "lenth",
]

# Lenth's method needs enough contrasts for a median to mean something: his paper and
# the tables that reproduce it start at the 8-run designs (m = 7).
MIN_CONTRASTS = 7
# The two multipliers of Lenth (1989): 1.5 ~ 1 / Phi^-1(0.75), and the 2.5 s0 cut.
_SCALE = 1.5
_CUT = 2.5
_NORMAL = NormalDist()


def _numbers(field: str, values: Sequence[float], least: int) -> list[float]:
    values = list(values)
    if len(values) < least:
        raise InputError(field, f"{field} needs at least {least} values, got {len(values):,}")
    for v in values:
        if not is_real(v) or not math.isfinite(v):
            raise InputError(field, f"{field} values must be finite numbers, got {shown(v)}")
    return [float(v) for v in values]


@dataclass(frozen=True)
class Lenth:
    """Lenth's analysis of m contrasts: s0, the PSE, its degrees of freedom d = m / 3,
    the margin of error ME and the simultaneous one SME (both at `level`), the t
    quantiles behind them, and gamma (the SME's quantile)."""

    m: int
    s0: float
    pse: float
    df: float
    level: float
    t_me: float
    t_sme: float
    gamma: float
    me: float
    sme: float


def lenth(contrasts: Sequence[float], level: float = 0.95) -> Lenth:
    """Lenth's pseudo standard error, margin of error and simultaneous margin of error
    of `contrasts` (the effects of an unreplicated two-level design, at least
    MIN_CONTRASTS), at confidence `level` (see the module docstring for the formulas).

    ME = t_{(1 + level)/2, m/3} PSE; SME = t_{gamma, m/3} PSE with
    gamma = (1 + level^(1/m)) / 2 (Lenth 1989, section 3). InputError at `contrasts`
    for too few or non-finite values, and when the PSE would be 0 (half or more of the
    small contrasts exactly 0: no noise to measure)."""
    c = _numbers("contrasts", contrasts, MIN_CONTRASTS)
    if not is_real(level) or not 0.5 < level < 1:
        raise InputError("level", f"level must be between 0.5 and 1, got {shown(level)}")
    m = len(c)
    size = [abs(v) for v in c]
    s0 = _SCALE * median(size)
    kept = [v for v in size if v < _CUT * s0]
    pse = _SCALE * median(kept) if kept else 0.0
    if pse == 0:  # then every nonzero effect would be "beyond" a margin of 0
        raise InputError(
            "contrasts",
            "contrasts: at least half the effects that look like noise are exactly 0, so "
            "Lenth's method has no noise to measure",
        )
    df = m / 3
    gamma = (1 + level ** (1 / m)) / 2
    t_me = t_isf((1 - level) / 2, df)
    t_sme = t_isf(1 - gamma, df)
    return Lenth(
        m=m,
        s0=s0,
        pse=pse,
        df=df,
        level=level,
        t_me=t_me,
        t_sme=t_sme,
        gamma=gamma,
        me=t_me * pse,
        sme=t_sme * pse,
    )


def half_normal_scores(m: int) -> list[float]:
    """The half-normal quantiles Phi^-1(0.5 + 0.5 (i - 0.5) / m), i = 1 .. m, against
    which the i-th smallest |effect| is plotted (Daniel 1959). ValueError for m < 1."""
    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        raise ValueError(f"m must be a positive integer, got {m!r}")
    return [_NORMAL.inv_cdf(0.5 + 0.5 * (i - 0.5) / m) for i in range(1, m + 1)]


@dataclass(frozen=True)
class Curvature:
    """The centre-point test: the means of the factorial and centre runs, the
    curvature ybar_F - ybar_C, the pure-error sd s (its df), the standard error, t,
    the two-sided p-value, the sum of squares for curvature and F = t^2."""

    factorial_mean: float
    centre_mean: float
    n_factorial: int
    n_centre: int
    estimate: float
    sd: float
    df: int
    standard_error: float
    t: float
    p_value: float
    ss_curvature: float
    f: float


def curvature(
    factorial: Sequence[float],
    centre: Sequence[float],
    *,
    sd: float | None = None,
    df: int | None = None,
) -> Curvature:
    """Curvature from centre points: ybar_F - ybar_C with SE = s sqrt(1/n_F + 1/n_C),
    t on df degrees of freedom (Montgomery, 8th ed., section 6.8).

    `factorial`: the response of each factorial run (a run's mean over its seeds is one
    value); `centre`: each centre-point run. s is the centre points' standard deviation
    on n_C - 1 df unless `sd` and `df` give a pooled pure-error estimate (the seeds of
    replicated factorial runs may join it). InputError for fewer than 2 factorial
    runs or 2 centre points without a given sd, or non-finite values."""
    f = _numbers("factorial", factorial, 2)
    if sd is None:
        c = _numbers("centre", centre, 2)
        s, d = stdev(c), len(c) - 1
    else:
        c = _numbers("centre", centre, 1)
        if not is_real(sd) or not math.isfinite(sd) or sd < 0:
            raise InputError("sd", f"sd must be a finite number >= 0, got {shown(sd)}")
        if isinstance(df, bool) or not isinstance(df, int) or df < 1:
            raise InputError("df", f"df must be a positive integer with sd, got {shown(df)}")
        s, d = float(sd), df
    nf, nc = len(f), len(c)
    yf, yc = fmean(f), fmean(c)
    estimate = yf - yc
    se = s * math.sqrt(1 / nf + 1 / nc)
    ss = nf * nc * estimate**2 / (nf + nc)
    if se > 0:
        t = estimate / se
        p = min(1.0, 2 * t_sf(abs(t), d))
    else:  # identical centre points: any curvature is exact, none is no evidence
        t = math.copysign(math.inf, estimate) if estimate else 0.0
        p = 0.0 if estimate else 1.0
    return Curvature(
        factorial_mean=yf,
        centre_mean=yc,
        n_factorial=nf,
        n_centre=nc,
        estimate=estimate,
        sd=s,
        df=d,
        standard_error=se,
        t=t,
        p_value=p,
        ss_curvature=ss,
        f=t * t,
    )
