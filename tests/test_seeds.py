"""Seed statistics: t and noncentral t against published and computed references, paired
intervals, exact power, MDE and seeds needed, bounds, and JSON-safe results.

Reference values are pinned in tests/data/seeds_reference.json, each table with its
source and version (scipy, statsmodels, mpmath); tests/data/make_seeds_reference.py
rewrites it. Nothing here imports them: these tests also run in the browser's Python.
"""

import json
import math
from fractions import Fraction
from pathlib import Path
from statistics import NormalDist, fmean, stdev

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from calculators.decimals import typed_value
from calculators.errors import InputError
from calculators.statistics.seeds import (
    ALPHA_RANGE,
    CONFIDENCE_RANGE,
    EFFECT_RANGE,
    MAX_SEEDS,
    POWER_MAX,
    SCORE_RANGE,
    SD_RANGE,
    PairedComparison,
    PairedResult,
    PairedSummary,
    VariantSummary,
    exact_differences,
    minimum_detectable_effect,
    paired_difference,
    paired_power,
    paired_summary,
    seeds_needed,
)
from calculators.statistics.student_t import (
    nct_cdf,
    nct_sf,
    t_cdf,
    t_isf,
    t_quantile,
)

REFERENCE = json.loads((Path(__file__).parent / "data" / "seeds_reference.json").read_text())


def rows(table: str) -> list[list]:
    return REFERENCE[table]["rows"]


def test_paired_difference_worked_example():
    a = (0.80, 0.82, 0.79, 0.81, 0.80)
    b = (0.82, 0.83, 0.81, 0.84, 0.81)
    r = paired_difference(PairedComparison(a=a, b=b))
    d = [y - x for x, y in zip(a, b, strict=True)]  # 0.02, 0.01, 0.02, 0.03, 0.01
    assert r.seeds == 5
    assert r.mean_difference == pytest.approx(0.018)
    assert r.sd_difference == pytest.approx(stdev(d))
    assert r.standard_error == pytest.approx(stdev(d) / math.sqrt(5))
    assert round(r.t_critical, 3) == 2.776  # NIST table, df 4
    assert r.ci_low == pytest.approx(0.018 - r.t_critical * r.standard_error)
    assert r.ci_high == pytest.approx(0.018 + r.t_critical * r.standard_error)
    assert r.excludes_zero
    assert r.t_statistic == pytest.approx(0.018 / r.standard_error)
    # two-sided p from the t distribution with 4 df
    assert r.p_value == pytest.approx(2 * (1 - t_cdf(r.t_statistic, 4)))
    assert 0.001 < r.p_value < 0.01
    # the exact figures of the typed decimals: mean 0.018, sd sqrt(0.00007)
    assert r.mean_difference == 0.018
    assert r.sd_difference == math.sqrt(0.00007)


def test_identical_differences_have_no_t_statistic():
    r = paired_difference(PairedComparison(a=(1.0, 2.0, 3.0), b=(1.5, 2.5, 3.5)))
    # every difference is exactly 0.5 in binary floating point, so sd is exactly 0
    assert r.sd_difference == 0.0
    assert r.t_statistic is None
    assert r.p_value is None
    # Changed: this pinned ci_low == ci_high == 0.5, an interval of width 0 that "excluded
    # 0". With sd 0 the t interval is undefined (0/0 in its derivation); it now says so.
    assert r.ci_low is None and r.ci_high is None
    assert r.excludes_zero is None
    assert r.log10_p_value is None
    assert r.mean_difference == 0.5
    assert r.standard_error == 0.0


# G*Power 3.1 (Faul et al. 2007, Behavior Research Methods 39:175), "t tests - Means:
# difference from constant (matched pairs)", a priori, two tails, alpha 0.05, power 0.80:
# total sample size 34 for dz = 0.5, 15 for dz = 0.8, 10 for dz = 1.0, 90 for dz = 0.3.
@pytest.mark.parametrize(("dz", "n"), [(0.5, 34), (0.8, 15), (1.0, 10), (0.3, 90)])
def test_seeds_needed_matches_gpower(dz, n):
    assert seeds_needed(dz, 1.0) == n


def test_mde_large_n_is_the_normal_formula():
    z = NormalDist().inv_cdf
    expected = (z(0.975) + z(0.8)) * 0.02 / math.sqrt(10_000)
    assert minimum_detectable_effect(0.02, 10_000) == pytest.approx(expected, rel=1e-3)


@settings(max_examples=50, deadline=None)
@given(sd=st.floats(0.001, 10), n=st.integers(2, 200))
def test_mde_falls_with_more_seeds(sd, n):
    assert minimum_detectable_effect(sd, n + 1) < minimum_detectable_effect(sd, n)
    assert minimum_detectable_effect(sd, n) > 0


@settings(max_examples=50, deadline=None)
@given(ratio=st.floats(0.05, 5), sd=st.floats(0.05, 5))
def test_seeds_needed_is_the_smallest_that_resolves(ratio, sd):
    # effect / sd >= 0.05 keeps n within max_seeds (about 3,200 seeds at 0.05)
    effect = ratio * sd
    n = seeds_needed(effect, sd)
    assert minimum_detectable_effect(sd, n) <= effect
    if n > 2:
        assert minimum_detectable_effect(sd, n - 1) > effect


def _valid_score(x: float) -> float:
    # Changed from the raw floats: scores below 1e-200 in magnitude are now refused
    # (see test_bounds_are_refused_at_their_field); they become 0 here.
    return x if x == 0 or abs(x) >= SCORE_RANGE[0] else 0.0


@settings(max_examples=50, deadline=None)
@given(
    pairs=st.lists(st.tuples(st.floats(-100, 100), st.floats(-100, 100)), min_size=2, max_size=30),
    confidence=st.sampled_from([0.8, 0.9, 0.95, 0.99]),
)
def test_interval_contains_the_mean_and_widens_with_confidence(pairs, confidence):
    pairs = [(_valid_score(x), _valid_score(y)) for x, y in pairs]
    a, b = zip(*pairs, strict=True)
    r = paired_difference(PairedComparison(a=a, b=b, confidence=confidence))
    assert r.mean_difference == pytest.approx(fmean(y - x for x, y in pairs), abs=1e-9)
    if r.sd_difference == 0:  # changed: equal differences have no interval (None)
        assert r.ci_low is None and r.ci_high is None
        return
    assert r.ci_low <= r.mean_difference <= r.ci_high
    wider = paired_difference(PairedComparison(a=a, b=b, confidence=0.999))
    assert wider.ci_high - wider.ci_low >= r.ci_high - r.ci_low - 1e-12


@pytest.mark.parametrize(
    ("kwargs", "match", "field"),
    [
        ({"a": (1.0,), "b": (1.0,)}, "seeds must be at least 2, got 1", "a"),
        ({"a": (1.0, 2.0), "b": (1.0,)}, r"b must have one score per seed of a \(2\), got 1", "b"),
        ({"a": (1.0, math.nan), "b": (1.0, 2.0)}, "a scores must be finite numbers, got nan", "a"),
        ({"a": (1.0, 2.0), "b": (1.0, "x")}, "b scores must be finite numbers, got 'x'", "b"),
        ({"a": (1.0, 2.0), "b": (1.0, 2.0), "confidence": 1.0}, "confidence must be in", None),
    ],
)
def test_bad_comparisons(kwargs, match, field):
    with pytest.raises(ValueError, match=match) as e:
        PairedComparison(**kwargs)
    assert isinstance(e.value, InputError)
    assert e.value.field == (field or "confidence")
    assert str(e.value).startswith(e.value.field)


def test_bad_power_inputs():
    with pytest.raises(ValueError, match="sd_difference must be a positive number, got 0"):
        minimum_detectable_effect(0, 5)
    with pytest.raises(ValueError, match="seeds must be at least 2, got 1"):
        minimum_detectable_effect(1.0, 1)
    # Changed: the bounds of power and alpha are now [above alpha, 1 - 1e-10] and
    # [1e-10, 0.5], said in the messages (they were (0, 1)).
    with pytest.raises(
        ValueError, match=r"power must be a number above alpha and at most 1 - 1e-10"
    ):
        minimum_detectable_effect(1.0, 5, power=1.2)
    with pytest.raises(ValueError, match=r"alpha must be a number from 1e-10 to 0.5 .*got 0"):
        minimum_detectable_effect(1.0, 5, alpha=0)
    with pytest.raises(ValueError, match=r"effect must be a positive number, got -0\.1"):
        seeds_needed(-0.1, 1.0)
    with pytest.raises(ValueError, match=r"needs more than max_seeds \(100\)"):
        seeds_needed(0.01, 1.0, max_seeds=100)
    with pytest.raises(ValueError, match=r"p must be a probability in \(0, 1\), got 1"):
        t_quantile(1, 5)
    with pytest.raises(ValueError, match="df must be a positive number, got 0"):
        t_cdf(1.0, 0)


# --- Pinned references (tests/data/seeds_reference.json, sources and versions inside).


def test_reference_file_names_its_sources():
    assert REFERENCE["versions"] == {
        "scipy": "1.17.1",
        "statsmodels": "0.15.0",
        "mpmath": "1.3.0",
        "numpy": "2.4.6",
    }
    for table in ("t_sf", "t_isf", "nct", "power", "mde", "seeds_needed", "quadrature", "paired"):
        assert REFERENCE[table]["source"]
        assert rows(table)


def test_paired_power_matches_statsmodels():
    # statsmodels.stats.power.TTestPower().power(dz, n, alpha), statsmodels 0.15.0: the
    # one-sample / paired two-sided t test, effect_size = δ / sd, nobs = n, df = n - 1
    # (the same quantity as here; checked against scipy's nct when the table was made).
    # 40 rows where statsmodels returns NaN carry scipy's nct.sf(c, nc) + nct.sf(c, -nc).
    for dz, n, alpha, power, _source in rows("power"):
        assert paired_power(dz, 1.0, n, alpha=alpha) == pytest.approx(power, abs=1e-13), (
            dz,
            n,
            alpha,
        )


def test_minimum_detectable_effect_grid():
    # The root of TTestPower().power (scipy.optimize.brentq, xtol 1e-15), scipy 1.17.1,
    # statsmodels 0.15.0: n 2..30, alpha 0.01/0.05/0.1, power 0.5/0.8/0.9/0.95.
    # These replace the central-t values (t_{1-α/2} + t_power) sd / √n the code gave, which
    # the issue showed overstate the power (see test_mde_at_three_seeds_has_the_power).
    for n, alpha, power, dz in rows("mde"):
        assert minimum_detectable_effect(1.0, n, alpha=alpha, power=power) == pytest.approx(
            dz, rel=1e-12
        ), (n, alpha, power)
        assert minimum_detectable_effect(0.01, n, alpha=alpha, power=power) == pytest.approx(
            0.01 * dz, rel=1e-12
        )


def test_seeds_needed_grid():
    # The smallest n with TTestPower().power >= power, scipy 1.17.1 / statsmodels 0.15.0,
    # over dz 0.2..3, alpha 0.01/0.05/0.1, power 0.5/0.8/0.9/0.95.
    short = 0
    for dz, alpha, power, n, central in rows("seeds_needed"):
        assert seeds_needed(dz, 1.0, alpha=alpha, power=power) == n, (dz, alpha, power)
        short += central < n
    # the central-t rule the code had was one seed short in 17 of these 168 cells
    assert short == 17


def test_seeds_needed_cells_where_the_central_rule_was_one_short():
    # e.g. dz 0.7, alpha 0.01, power 0.8: the central rule said 27 seeds, whose real power
    # is 0.796 (TTestPower().power, statsmodels 0.15.0); 28 are needed.
    assert seeds_needed(0.7, 1.0, alpha=0.01, power=0.8) == 28
    assert seeds_needed(1.0, 1.0, alpha=0.01, power=0.9) == 19
    assert seeds_needed(2.5, 1.0, alpha=0.05, power=0.9) == 5
    assert paired_power(0.7, 1.0, 27, alpha=0.01) == pytest.approx(0.7958360498928483, abs=1e-13)


def test_large_noncentrality_matches_mpmath_quadrature():
    # λ above 50 goes through the integral over Z; mpmath 1.3.0 quad at 50 digits of
    # E_Z[Q(ν/2, ν (Z + λ)² / (2 c²))] for the miss probability (2 seeds at alpha 1e-10
    # need λ near 4e10).
    for nu, alpha, lam, miss in rows("quadrature"):
        seeds = nu + 1
        power = paired_power(lam, math.sqrt(seeds), seeds, alpha=alpha)  # effect √n / sd = λ
        assert 1 - power == pytest.approx(miss, rel=1e-9, abs=1e-16), (nu, alpha, lam)


def test_paired_cases_match_exact_arithmetic():
    # exact rationals of the typed scores, mpmath 1.3.0 at 50 digits
    for a, b, mean, sd, t, p, log10_p in rows("paired"):
        r = paired_difference(PairedComparison(a=tuple(a), b=tuple(b)))
        assert r.mean_difference == mean
        assert r.sd_difference == pytest.approx(sd, rel=1e-15)
        assert r.t_statistic == pytest.approx(t, rel=1e-15)
        assert r.p_value == pytest.approx(p, rel=1e-13, abs=0)
        assert r.log10_p_value == pytest.approx(log10_p, rel=1e-14, abs=1e-14)


# --- Defect 1: power with the noncentral t.


def test_mde_at_three_seeds_has_the_power():
    # 3 seeds, alpha 0.05, power 0.8: the central-t form gave 3.0965 sd, whose real power is
    # 0.766 (TTestPower().power, statsmodels 0.15.0); the exact answer is 3.26404 sd.
    mde = minimum_detectable_effect(1.0, 3, alpha=0.05, power=0.8)
    assert mde == pytest.approx(3.264043549699571, rel=1e-12)
    assert paired_power(mde, 1.0, 3) == pytest.approx(0.8, abs=1e-12)
    assert paired_power(3.0965101474461254, 1.0, 3) == pytest.approx(0.7662710461269, abs=1e-12)


def test_power_below_one_half_has_a_positive_effect():
    # the central form gave -0.43 sd at power 0.01; power 0.3 > alpha has a real answer
    mde = minimum_detectable_effect(1.0, 5, alpha=0.05, power=0.3)
    assert mde > 0
    assert paired_power(mde, 1.0, 5) == pytest.approx(0.3, abs=1e-12)
    tiny = minimum_detectable_effect(1.0, 5, alpha=0.05, power=0.05 + 1e-9)
    assert 0 < tiny < mde
    # one ulp above alpha: power - alpha is summed directly, not as rounding noise
    alpha = 0.0820849986238988
    hair = minimum_detectable_effect(1.0, 5, alpha=alpha, power=math.nextafter(alpha, 1))
    assert 0 < hair < tiny


@pytest.mark.parametrize("power", [0.01, 0.05])
def test_power_at_or_below_alpha_is_refused(power):
    with pytest.raises(InputError, match="detects' a zero effect with probability alpha") as e:
        minimum_detectable_effect(1.0, 5, alpha=0.05, power=power)
    assert e.value.field == "power"
    with pytest.raises(InputError) as e:
        seeds_needed(0.5, 1.0, alpha=0.05, power=power)
    assert e.value.field == "power"


def test_power_is_alpha_at_no_effect_and_one_at_a_huge_one():
    assert paired_power(EFFECT_RANGE[0], SD_RANGE[1], 5, alpha=0.05) == pytest.approx(
        0.05, rel=1e-13
    )
    assert paired_power(EFFECT_RANGE[1], SD_RANGE[0], 2, alpha=1e-10) == 1.0


# --- Defect 2: p-values of exactly 0, quantiles through 1 - tiny.


def test_strong_effects_have_tiny_p_values_not_zero():
    # five seeds, differences 1 ± 1e-6: t = 2.8e6, p = 9.375e-26 (mpmath, see the table);
    # the code had 2 (1 - cdf) = 0.0
    r = paired_difference(
        PairedComparison(a=(0, 0, 0, 0, 0), b=(1, 1.000001, 0.999999, 1.0000005, 0.9999995))
    )
    assert r.p_value == pytest.approx(9.374999999992187e-26, rel=1e-13)
    assert r.log10_p_value == pytest.approx(-25.02802872360, abs=1e-11)
    assert r.excludes_zero is True


def test_p_values_below_the_smallest_double_keep_their_logarithm():
    r = paired_difference(PairedComparison(a=(0,) * 30, b=tuple(1 + i * 1e-15 for i in range(30))))
    assert r.p_value == 0.0
    assert r.log10_p_value == pytest.approx(-408.6516146520680, abs=1e-10)


def test_critical_values_for_tiny_tails():
    # confidence 1 - 1e-10 at 2 seeds: t = 1 / tan(π 5e-11) = 6366197723.675813; the code
    # had 6366195502.49 (1 - 5e-11 formed in floating point loses 6 digits)
    r = paired_difference(PairedComparison(a=(0.1, 0.3), b=(0.2, 0.5), confidence=1 - 1e-10))
    assert r.t_critical == pytest.approx(1 / math.tan(math.pi * 5e-11), rel=1e-13)
    r = paired_difference(PairedComparison(a=(0.1, 0.3, 0.2), b=(0.2, 0.5, 0.6), confidence=0.999))
    assert r.t_critical == pytest.approx((1 - 1e-3) / math.sqrt(1e-3 * (1 - 5e-4)), rel=1e-13)


# --- Defect 3: zero or near-zero variance, and overflow.


def test_differences_equal_as_typed_have_sd_zero():
    # 0.2 - 0.1 and 0.3 - 0.2 are both 0.1 as typed; in binary they differ by 2.8e-17, and
    # the code reported sd 1.96e-17, p 0 and an interval that excludes 0
    r = paired_difference(PairedComparison(a=(0.1, 0.2), b=(0.2, 0.3)))
    assert r.sd_difference == 0.0
    assert r.standard_error == 0.0
    assert r.mean_difference == 0.1
    assert (r.ci_low, r.ci_high, r.t_statistic, r.p_value, r.log10_p_value) == (None,) * 5
    assert r.excludes_zero is None
    assert r.t_critical == pytest.approx(12.706204736174707, rel=1e-13)


def test_tiny_scores_keep_their_spread():
    # the squares of 1e-170 underflowed: the code said sd 0 for unequal differences
    r = paired_difference(PairedComparison(a=(1e-170, 3e-170), b=(0.0, 0.0)))
    assert r.sd_difference == pytest.approx(math.sqrt(2) * 1e-170, rel=1e-15)
    assert r.t_statistic == pytest.approx(-2.0, rel=1e-15)
    assert r.excludes_zero is False


def test_huge_scores_do_not_overflow():
    # the code raised OverflowError in the variance
    r = paired_difference(PairedComparison(a=(1e200, 0.0), b=(0.0, 0.0)))
    assert r.mean_difference == -5e199
    assert r.sd_difference == pytest.approx(math.sqrt(2) * 5e199, rel=1e-15)
    assert r.t_statistic == pytest.approx(-1.0, rel=1e-15)
    assert r.p_value == pytest.approx(0.5, rel=1e-14)
    assert all(math.isfinite(x) for x in (r.ci_low, r.ci_high, r.standard_error))


def test_t_statistic_beyond_a_double_is_refused():
    with pytest.raises(InputError, match="t statistic exceeds 1e300") as e:
        paired_difference(PairedComparison(a=(0.0, 1e-200), b=(1e200, 1e200)))
    assert e.value.field == "b"


@pytest.mark.parametrize(
    ("call", "field", "words"),
    [
        (lambda: PairedComparison(a=(1e-201, 1.0), b=(1.0, 2.0)), "a", ["1e-200", "1e-201"]),
        (lambda: PairedComparison(a=(1.0, 2.0), b=(1.0, -2e200)), "b", ["1e200", "-2e+200"]),
        (lambda: PairedComparison(a=(1.0, 2.0), b=(1.0, True)), "b", ["True"]),
        (lambda: PairedComparison(a=[1.0] * (MAX_SEEDS + 1), b=[1.0]), "a", ["100,000"]),
        (lambda: PairedComparison(a="1,2", b=(1.0, 2.0)), "a", ["list of scores"]),
        (lambda: PairedComparison(a=(1.0, 2.0), b=(1.0, 2.0), confidence=0.4), "confidence", []),
        (
            lambda: PairedComparison(a=(1.0, 2.0), b=(1.0, 2.0), confidence=1 - 1e-11),
            "confidence",
            [],
        ),
        (lambda: seeds_needed(math.inf, 1.0), "effect", ["inf"]),
        (lambda: seeds_needed(1e251, 1.0), "effect", ["1e250"]),
        (lambda: seeds_needed(1.0, 1e231), "sd_difference", ["1e230"]),
        (lambda: seeds_needed(1.0, 1.0, max_seeds=MAX_SEEDS + 1), "max_seeds", ["100,000"]),
        (lambda: paired_power(math.nan, 1.0, 5), "effect", ["nan"]),
        (lambda: paired_power(1.0, 1e-231, 5), "sd_difference", ["1e-230"]),
        (lambda: paired_power(1.0, 1.0, MAX_SEEDS + 1), "seeds", ["100,000"]),
        (lambda: paired_power(1.0, 1.0, 5.0), "seeds", ["5.0"]),
        (lambda: minimum_detectable_effect(1.0, 5, alpha=1e-11), "alpha", ["1e-10", "0.5"]),
        (lambda: minimum_detectable_effect(1.0, 5, alpha=0.6), "alpha", ["0.5"]),
        (lambda: minimum_detectable_effect(1.0, 5, power=1.0), "power", ["1 - 1e-10"]),
        (lambda: minimum_detectable_effect(1.0, 5, power=math.nan), "power", []),
    ],
)
def test_bounds_are_refused_at_their_field(call, field, words):
    with pytest.raises(InputError) as e:
        call()
    assert e.value.field == field
    assert str(e.value).startswith(field)
    for word in words:
        assert word in str(e.value)


def test_public_api():
    from calculators.statistics import seeds

    assert sorted(seeds.__all__) == sorted(
        [
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
    )
    assert all(hasattr(seeds, name) for name in seeds.__all__)


def test_bounds_are_stated():
    assert ALPHA_RANGE == (1e-10, 0.5)
    assert CONFIDENCE_RANGE == (0.5, 1 - 1e-10)
    assert POWER_MAX == 1 - 1e-10
    assert SCORE_RANGE == (1e-200, 1e200)
    assert SD_RANGE == (1e-230, 1e230)
    assert EFFECT_RANGE == (1e-250, 1e250)
    assert MAX_SEEDS == 100_000


def test_extreme_corners_are_finite():
    # 2 seeds, alpha 1e-10, power 1 - 1e-10: λ near 4e10, through the integral over Z
    mde = minimum_detectable_effect(SD_RANGE[1], 2, alpha=ALPHA_RANGE[0], power=POWER_MAX)
    assert math.isfinite(mde)
    assert paired_power(mde, SD_RANGE[1], 2, alpha=ALPHA_RANGE[0]) == pytest.approx(
        POWER_MAX, abs=1e-12
    )
    tiny = minimum_detectable_effect(SD_RANGE[0], MAX_SEEDS, alpha=0.5, power=0.5 + 1e-16)
    assert EFFECT_RANGE[0] < tiny < SD_RANGE[0]
    assert paired_power(tiny, SD_RANGE[0], MAX_SEEDS, alpha=0.5) == pytest.approx(0.5, abs=1e-15)


# --- Properties.


def log_uniform(low: float, high: float) -> st.SearchStrategy[float]:
    """Floats spread over the decades from low to high (both included)."""
    return st.floats(math.log(low), math.log(high)).map(lambda u: min(max(math.exp(u), low), high))


alphas = log_uniform(*ALPHA_RANGE)
sds = log_uniform(*SD_RANGE)
effects = log_uniform(*EFFECT_RANGE)
few_seeds = st.integers(2, 60)


@st.composite
def alpha_and_power(draw):
    alpha = draw(alphas)
    u = draw(st.floats(0.0, 1.0, exclude_min=True))
    power = alpha + u * (POWER_MAX - alpha)
    assume(alpha < power <= POWER_MAX)
    return alpha, power


@settings(max_examples=60, deadline=None)
@given(dz=st.floats(0.01, 20), n=few_seeds, alpha=alphas, grow=st.floats(1.0, 3.0))
def test_power_rises_with_effect_and_with_seeds(dz, n, alpha, grow):
    base = paired_power(dz, 1.0, n, alpha=alpha)
    assert alpha * (1 - 1e-12) <= base <= 1.0
    assert paired_power(dz * grow, 1.0, n, alpha=alpha) >= base - 1e-15
    assert paired_power(dz, 1.0, n + 1, alpha=alpha) >= base - 1e-15


@settings(max_examples=60, deadline=None)
@given(sd=sds, n=st.one_of(few_seeds, st.integers(2, MAX_SEEDS)), ap=alpha_and_power())
def test_power_at_the_mde_is_the_requested_power(sd, n, ap):
    alpha, power = ap
    mde = minimum_detectable_effect(sd, n, alpha=alpha, power=power)
    assert mde > 0 and math.isfinite(mde)
    assert paired_power(mde, sd, n, alpha=alpha) == pytest.approx(power, abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(dz=st.floats(0.03, 30), ap=alpha_and_power())
def test_seeds_needed_is_minimal_in_power(dz, ap):
    alpha, power = ap
    try:
        n = seeds_needed(dz, 1.0, alpha=alpha, power=power, max_seeds=MAX_SEEDS)
    except InputError as e:
        assert e.field == "effect"
        assert paired_power(dz, 1.0, MAX_SEEDS, alpha=alpha) < power
        return
    assert paired_power(dz, 1.0, n, alpha=alpha) >= power
    if n > 2:
        assert paired_power(dz, 1.0, n - 1, alpha=alpha) < power


@settings(max_examples=30, deadline=None)
@given(dz=st.floats(0.01, 10), n=st.integers(2, 300), alpha=st.floats(0.001, 0.5))
def test_paired_power_is_the_two_noncentral_tails(dz, n, alpha):
    lam = dz * math.sqrt(n)
    assume(lam <= 100)
    c = t_isf(alpha / 2, n - 1)
    both = nct_sf(c, n - 1, lam) + nct_cdf(-c, n - 1, lam)
    assert paired_power(dz, 1.0, n, alpha=alpha) == pytest.approx(both, abs=1e-13)


scores = st.one_of(
    st.just(0.0),
    st.floats(-100, 100).map(_valid_score),
    st.floats(SCORE_RANGE[0], SCORE_RANGE[1]),
    st.floats(-SCORE_RANGE[1], -SCORE_RANGE[0]),
)
confidences = st.floats(CONFIDENCE_RANGE[0], CONFIDENCE_RANGE[1])


def _floats_in(result: PairedResult) -> list[float | None]:
    return [
        result.mean_difference,
        result.sd_difference,
        result.standard_error,
        result.t_critical,
        result.ci_low,
        result.ci_high,
        result.t_statistic,
        result.p_value,
        result.log10_p_value,
    ]


@settings(max_examples=80, deadline=None)
@given(pairs=st.lists(st.tuples(scores, scores), min_size=2, max_size=12), confidence=confidences)
def test_paired_results_are_json_safe(pairs, confidence):
    a, b = zip(*pairs, strict=True)
    try:
        r = paired_difference(PairedComparison(a=a, b=b, confidence=confidence))
    except InputError as e:  # differences equal to 300 digits but not exactly
        assert e.field == "b" and "t statistic exceeds" in str(e)
        return
    for x in _floats_in(r):
        assert x is None or (isinstance(x, float) and math.isfinite(x)), r
    json.dumps({**vars(r), "excludes_zero": r.excludes_zero}, allow_nan=False)
    assert (r.ci_low is None) == (r.sd_difference == 0) == (r.excludes_zero is None)
    if r.p_value is not None:
        assert 0.0 <= r.p_value <= 1.0
        assert r.log10_p_value <= 0.0
        if r.log10_p_value > -300:
            assert r.p_value > 0.0
            assert math.log10(r.p_value) == pytest.approx(r.log10_p_value, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(pairs=st.lists(st.tuples(scores, scores), min_size=2, max_size=8))
def test_mean_is_the_exact_mean_of_the_typed_scores(pairs):
    a, b = zip(*pairs, strict=True)
    exact = sum(typed_value(y) - typed_value(x) for x, y in pairs) / Fraction(len(pairs))
    try:
        r = paired_difference(PairedComparison(a=a, b=b))
    except InputError:
        return
    assert r.mean_difference == float(exact)


@settings(max_examples=40, deadline=None)
@given(effect=effects, sd=sds, n=st.integers(2, MAX_SEEDS), ap=alpha_and_power())
def test_power_calculators_are_json_safe(effect, sd, n, ap):
    alpha, power = ap
    values = [
        paired_power(effect, sd, n, alpha=alpha),
        minimum_detectable_effect(sd, n, alpha=alpha, power=power),
    ]
    try:
        values.append(float(seeds_needed(effect, sd, alpha=alpha, power=power)))
    except InputError as e:
        assert e.field == "effect" and "needs more than max_seeds" in str(e)
    assert all(math.isfinite(v) for v in values), values
    json.dumps(values, allow_nan=False)


def test_exact_differences_are_the_typed_decimals():
    # 0.3 - 0.1 and 0.2 - 0.0 are 0.19999999999999998 and 0.2 in doubles; as typed, both
    # are 2 tenths
    diffs, common = exact_differences(PairedComparison(a=(0.1, 0.0), b=(0.3, 0.2)))
    assert (diffs, common) == ((2, 2), 10)
    diffs, common = exact_differences(PairedComparison(a=(1, 2.5), b=(3, 0.25)))
    assert (diffs, common) == ((200, -225), 100)  # 2 and -2.25 in hundredths


# --- Each variant's mean and sd, and the seeds B wins, ties and loses.


def test_summary_of_the_readme_example_by_hand():
    s = paired_summary(
        PairedComparison(a=(0.80, 0.82, 0.79, 0.81, 0.80), b=(0.82, 0.83, 0.81, 0.84, 0.81))
    )
    # a: sum 4.02, mean 0.804; deviations -4, 16, -14, 6, -4 thousandths, squares
    # 16 + 256 + 196 + 36 + 16 = 520 millionths, / 4 = 0.00013
    # b: sum 4.11, mean 0.822; deviations -2, 8, -12, 18, -12 thousandths, squares
    # 4 + 64 + 144 + 324 + 144 = 680 millionths, / 4 = 0.00017
    assert s.a.mean == 0.804 and s.b.mean == 0.822
    assert s.a.sd == pytest.approx(math.sqrt(0.00013), rel=1e-15)
    assert s.b.sd == pytest.approx(math.sqrt(0.00017), rel=1e-15)
    # differences 2, 1, 2, 3, 1 hundredths: B wins every seed
    assert (s.wins, s.ties, s.losses) == (5, 0, 0)


def test_summary_of_the_digits_example_by_hand():
    seeds = json.loads(
        (Path(__file__).parents[1] / "docs/data/evaluation/digits/seeds.json").read_text()
    )
    s = paired_summary(PairedComparison(a=seeds["a"], b=seeds["b"]))
    # a sums to 9.598 and b to 9.688 over 10 seeds; b - a per seed, in thousandths:
    # 0, -2, 18, 10, 10, 8, 10, 10, 22, 4: one tie (seed 1: both 0.964), one loss
    # (seed 2: 0.966 against 0.968), eight wins
    assert s.a.mean == 0.9598 and s.b.mean == 0.9688
    assert (s.wins, s.ties, s.losses) == (8, 1, 1)
    # b's deviations from 0.9688, in ten-thousandths: -48, -28, 32, -28, -28, -8, 32, 32,
    # 52, -8; squares sum to 10,560, so sd = sqrt(10560e-8 / 9) = 0.003425
    assert s.b.sd == pytest.approx(math.sqrt(10560e-8 / 9), rel=1e-15)


def test_summary_is_exact_on_the_typed_scores():
    # 0.1 + 0.2 + 0.3 is 0.6000000000000001 in doubles (fmean gives 0.19999999999999998);
    # as typed the mean is 0.2 and the sd 0.1
    s = paired_summary(PairedComparison(a=(0.1, 0.2, 0.3), b=(0.3, 0.3, 0.3)))
    assert s.a == VariantSummary(mean=0.2, sd=0.1)
    # equal scores give sd 0 exactly, not rounding noise
    assert s.b == VariantSummary(mean=0.3, sd=0.0)
    assert (s.wins, s.ties, s.losses) == (2, 1, 0)
    # a tie is equality of the typed decimals: 1 and 1.0, 0.0 and -0.0 are the same
    s = paired_summary(PairedComparison(a=(1, 0.0, 0.5), b=(1.0, -0.0, 0.25)))
    assert (s.wins, s.ties, s.losses) == (0, 2, 1)


def test_summary_of_scores_at_the_bounds_is_finite():
    s = paired_summary(PairedComparison(a=(1e200, -1e200), b=(1e-200, 0.0)))
    # a: mean 0, sd sqrt(2 * 1e400 / 1) = 1.414e200; b: mean 5e-201, sd 1e-200 / sqrt(2)
    assert s.a.mean == 0.0
    assert s.a.sd == pytest.approx(math.sqrt(2) * 1e200, rel=1e-15)
    assert s.b.mean == 5e-201
    assert s.b.sd == pytest.approx(1e-200 / math.sqrt(2), rel=1e-15)
    # b - a: 1e-200 - 1e200 < 0 (a loss), 0 + 1e200 > 0 (a win)
    assert (s.wins, s.ties, s.losses) == (1, 0, 1)


@settings(max_examples=80, deadline=None)
@given(pairs=st.lists(st.tuples(scores, scores), min_size=2, max_size=12))
def test_summary_counts_add_up_and_swap_with_the_variants(pairs):
    a, b = zip(*pairs, strict=True)
    s = paired_summary(PairedComparison(a=a, b=b))
    assert isinstance(s, PairedSummary)
    assert s.wins + s.ties + s.losses == len(pairs)
    assert s.ties == sum(1 for x, y in pairs if x == y)
    swapped = paired_summary(PairedComparison(a=b, b=a))
    assert (swapped.wins, swapped.ties, swapped.losses) == (s.losses, s.ties, s.wins)
    assert (swapped.a, swapped.b) == (s.b, s.a)
    # each figure is the exact one of the typed scores, rounded once (stdev of Fractions
    # rounds its exact square root correctly)
    for values, v in ((a, s.a), (b, s.b)):
        typed = [typed_value(x) for x in values]
        assert v.mean == float(sum(typed) / len(typed))
        assert v.sd == stdev(typed)
        assert math.isfinite(v.mean) and math.isfinite(v.sd)


# --- The command: the exact tests, the expected best of n trials, the page.

README_A = "0.80,0.82,0.79,0.81,0.80"
README_B = "0.82,0.83,0.81,0.84,0.81"


def seeds_result(**inputs: str) -> dict:
    from calculators.web import compute

    return json.loads(json.dumps(compute("seeds", inputs), allow_nan=False))


def test_readme_example_has_its_exact_tests():
    r = seeds_result(a=README_A, b=README_B, trials="")
    # differences 2, 1, 2, 3, 1 hundredths, all positive: only the observed pattern and
    # its mirror image reach |sum| 9, so p = 2 / 2^5 = 0.0625, while the t test gives
    # 0.0086: five seeds cannot give an exact p below 1/16
    assert r["permutation_p_value"] == 0.0625
    assert r["permutation"] == {"patterns": 32, "at_least_as_extreme": 2}
    assert r["paired"]["p_value"] == pytest.approx(0.00858, abs=1e-5)
    # b beats a on every seed (chance 1/32 with no effect), but not every b run is above
    # every a run: a's 0.82 is above b's 0.81 (chance 1 / C(10, 5) = 1/252)
    assert r["all_pairs_beat"] is True
    assert r["all_pairs_beat_probability"] == 1 / 32
    assert r["all_beat"] is False
    assert r["all_beat_probability"] == 1 / 252
    assert r["scores"] == {"a": [0.8, 0.82, 0.79, 0.81, 0.8], "b": [0.82, 0.83, 0.81, 0.84, 0.81]}
    assert "expected_max" not in r
    # the hand computation of test_summary_of_the_readme_example_by_hand
    assert r["summary"] == {
        "a": {"mean": 0.804, "sd": pytest.approx(math.sqrt(0.00013), rel=1e-15)},
        "b": {"mean": 0.822, "sd": pytest.approx(math.sqrt(0.00017), rel=1e-15)},
        "wins": 5,
        "ties": 0,
        "losses": 0,
    }


def test_the_summary_is_in_the_text_and_the_table(capsys):
    from calculators.cli import main
    from calculators.web import compute, render_result

    assert main(["seeds", "--a", "0.964,0.968,0.954", "--b", "0.964,0.966,0.972"]) == 0
    out = capsys.readouterr().out
    # a: sum 2.886, mean 0.962, deviations 2, 6, -8 thousandths, sd sqrt(104e-6 / 2);
    # b: sum 2.902, mean 0.96733, deviations -10, -4, 14 thirds of a thousandth, squares
    # 312 ninths of a millionth, sd sqrt(312e-6 / 9 / 2) = 0.004163;
    # b - a: 0, -2, 18 thousandths: one tie, one loss, one win
    assert (
        f"A mean 0.962, sd {math.sqrt(104e-6 / 2):.4g}; "
        f"B mean 0.9673, sd {math.sqrt(312e-6 / 9 / 2):.4g}; "
        "seeds with b above a: 1, equal: 1, below: 1"
    ) in out
    html = render_result("seeds", compute("seeds", {"a": README_A, "b": README_B}))
    for row in (
        "<td>mean of A</td><td>0.804</td>",
        "<td>mean of B</td><td>0.822</td>",
        f"<td>sd of A (n - 1)</td><td>{math.sqrt(0.00013):.4g}</td>",
        "<td>seeds where b &gt; a (wins)</td><td>5</td>",
        "<td>seeds where b = a (ties)</td><td>0</td>",
        "<td>seeds where b &lt; a (losses)</td><td>0</td>",
    ):
        assert row in html, row


def test_recorded_fields_are_unchanged():
    # every field the behaviour record holds for a seeds example keeps its value; the new
    # fields come on top
    record = json.loads((Path(__file__).parent / "data" / "behaviour.json").read_text())
    entries = [e for e in record["pages"] if e["name"] == "seeds"]
    assert entries
    for entry in entries:
        r = seeds_result(**entry["inputs"])
        for key, value in entry["result"].items():
            assert r[key] == value, key


def test_more_than_twenty_seeds_have_no_exact_test_and_say_why():
    a = ",".join(f"0.{50 + i}" for i in range(21))
    b = ",".join(f"0.{51 + i}" for i in range(21))
    r = seeds_result(a=a, b=b, trials="")
    assert r["permutation_p_value"] is None and r["permutation"] is None
    assert any("up to 20 seeds" in n and "t test" in n for n in r["notes"])
    assert r["all_beat_probability"] == pytest.approx(1 / 538_257_874_440)  # C(42, 21)


def test_trials_alone_give_the_expected_best():
    r = seeds_result(a="", b="", trials="0.7,0.5,0.9,0.7", effect="")
    # the worked values of tests/test_expected_max.py
    assert [c["n"] for c in r["expected_max"]] == [1, 2, 3, 4]
    assert [c["value"] for c in r["expected_max"]] == pytest.approx(
        [0.7, 0.775, 0.8125, 0.8359375], abs=1e-15
    )
    assert r["trials_best"] == 0.9
    assert "paired" not in r and "permutation_p_value" not in r


def test_the_page_example_has_every_part():
    from calculators.web import compute, render_result

    # the calculator page's block: its own example, and the digits search's trials
    seeds = json.loads(
        (Path(__file__).parents[1] / "docs/data/evaluation/digits/seeds.json").read_text()
    )
    r = compute("seeds", {"trials": ",".join(map(repr, seeds["trials"]))})
    assert {"paired", "permutation_p_value", "expected_max", "seeds_needed"} <= set(r)
    html = render_result("seeds", r)
    assert "permutation p-value (exact sign-flip)" in html
    assert "1 / C(2k, k)" in html
    assert html.count('<div class="kd-charts">') == 2  # the strip plot, the curve
    assert "Expected best validation score after n trials" in html


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--trials", "0.5,x"], "--trials must be comma-separated numbers, got '0.5,x'"),
        (["--trials", ",".join(["0.5"] * 501)], "--trials must have 1 to 500 scores"),
        (["--trials", "0.5,1e-300"], "--trials must be 0 or of magnitude 1e-200 to 1e200"),
        ([], "give --a and --b, or --trials, or --sd-difference"),
    ],
)
def test_bad_trials_are_one_error_line(capsys, argv, words):
    from calculators.cli import main

    assert main(["seeds", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ")
    assert words in err[0]


# --- The strip plot (calculators.web.render.strip_plot_svg), as the seeds page draws it.


def strip(**kwargs) -> str:
    from calculators.web.render import strip_plot_svg

    base = {
        "title": "scores per seed",
        "value_label": "score",
        "paired": True,
        "differences": [0.02, 0.01, 0.02, 0.03, 0.01],
        "interval": (0.0076, 0.0284),
        "interval_label": "95% t interval of the mean difference",
    }
    rows = [("A", [0.80, 0.82, 0.79, 0.81, 0.80]), ("B", [0.82, 0.83, 0.81, 0.84, 0.81])]
    return strip_plot_svg(kwargs.pop("rows", rows), **{**base, **kwargs})


LONG = "a name far too long for the margin of any layout " * 3


def _strip_charts() -> dict[str, str]:
    return {
        "strip plot": strip(),
        "strip plot, long names and huge values": strip(
            rows=[(LONG, [1e299, -1e299, 0.0]), ("B" + LONG, [5e298, 1.0, -3.0])],
            differences=[-1e299, 1e299, -3.0],
            interval=(-1e299, 1e299),
            difference_label=LONG,
            interval_label=LONG,
            value_label=LONG,
            title=LONG,
        ),
        "strip plot, one value": strip(
            rows=[("A", [0.5])], paired=False, differences=[], interval=None
        ),
        "strip plot, equal values": strip(
            rows=[("A", [0.8] * 9), ("B", [0.8] * 9)],
            differences=[0.0] * 9,
            interval=None,
        ),
    }


@pytest.mark.parametrize("name", sorted(_strip_charts()))
def test_strip_plots_pass_the_checks_every_chart_does(name, monkeypatch):
    from tests import test_web_render as shared

    monkeypatch.setitem(shared.CHARTS, name, _strip_charts()[name])
    shared.test_nothing_is_drawn_outside_the_chart(name)
    shared.test_both_layouts_carry_the_same_title_and_data(name)


def _dots(svg) -> list[str]:
    from tests.test_web_render import SVG

    return [c.findtext(f"{SVG}title") or "" for c in svg.iter(f"{SVG}circle")]


def test_strip_plot_draws_every_seed_the_pairs_and_the_interval():
    from tests.test_web_render import SVG, layouts

    for svg in layouts(strip()).values():
        dots = _dots(svg)
        assert sum(d.startswith("A, seed ") for d in dots) == 5
        assert sum(d.startswith("B, seed ") for d in dots) == 5
        assert "B, seed 4: 0.84" in dots
        assert sum(d.startswith("difference, seed ") for d in dots) == 5
        assert "mean difference: 0.018" in dots
        assert len(list(svg.iter(f"{SVG}polyline"))) == 5  # one line per seed
        tips = [t.text or "" for t in svg.iter(f"{SVG}title")]
        assert "95% t interval of the mean difference: 0.0076 to 0.0284" in tips
        assert "A mean: 0.804" in tips and "B mean: 0.822" in tips
        text = " ".join(t.text or "" for t in svg.iter(f"{SVG}text"))
        assert "0.0076 to 0.0284" in text


def test_strip_plot_reads_in_dark_mode():
    # text and axes in the text colour, marks in the palette: nothing fixed to black or white
    html = strip()
    assert 'fill="currentColor"' in html
    for fixed in ("#000", "#fff", "black", "white"):
        assert fixed not in html.lower()


def test_equal_scores_are_stacked_not_hidden():
    from tests.test_web_render import SVG, layouts

    html = strip(rows=[("A", [0.8] * 3), ("B", [0.9] * 3)], differences=[], interval=None)
    for svg in layouts(html).values():
        a = [c for c in svg.iter(f"{SVG}circle") if (c.findtext(f"{SVG}title") or "")[0] == "A"]
        assert len({c.get("cy") for c in a}) == 3


def test_strip_plot_draws_up_to_its_bound_and_says_so():
    from calculators.web.render import STRIP_MAX_POINTS
    from tests.test_web_render import SVG, layouts

    many = [i / 10_000 for i in range(STRIP_MAX_POINTS + 5)]
    html = strip(rows=[("A", many), ("B", many)], differences=[], interval=None)
    for svg in layouts(html).values():
        assert len(_dots(svg)) == 2 * STRIP_MAX_POINTS
        assert (svg.findtext(f"{SVG}title") or "").endswith(
            f"(the first {STRIP_MAX_POINTS:,} seeds drawn)"
        )


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"rows": []}, "no row"),
        ({"rows": [("A", [])]}, "'A' has no points"),
        ({"rows": [("A", [0.5, math.nan])]}, "finite numbers"),
        ({"rows": [("A", [0.5]), ("B", [0.5, 0.6])]}, "one value per seed"),
        ({"interval": (0.03, 0.01)}, "above high"),
        ({"differences": [math.inf]}, "finite numbers"),
    ],
)
def test_strip_plot_refuses_what_it_cannot_draw(kwargs, match):
    with pytest.raises(ValueError, match=match):
        strip(**kwargs)


def test_the_seed_guides_clean_sweep_sentences_read_their_example():
    # docs/evaluation/seed-variability.md, pitfall "All three runs beat all three": its
    # example `three` (a: 0.80,0.82,0.79; b: 0.83,0.84,0.83) gives 1 / C(6, 3) = 1/20,
    # "exactly the conventional 5% level", and 1/2^3 for three paired seeds, "not rare".
    from types import SimpleNamespace

    from calculators.commands import DEFAULTS, run

    args = dict(DEFAULTS["seeds"], a="0.80,0.82,0.79", b="0.83,0.84,0.83")
    page = Path(__file__).resolve().parents[1] / "docs" / "evaluation" / "seed-variability.md"
    assert "a: 0.80,0.82,0.79\nb: 0.83,0.84,0.83" in page.read_text(encoding="utf-8")
    data, _ = run("seeds", SimpleNamespace(**args))
    assert data["all_beat_probability"] == 0.05
    assert data["all_pairs_beat_probability"] == 1 / 8 > 0.05
