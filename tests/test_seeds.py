"""Seed statistics: t quantiles against published tables, paired intervals, MDE and seeds."""

import math
from statistics import NormalDist, fmean, stdev

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculators.seeds import (
    PairedComparison,
    minimum_detectable_effect,
    paired_difference,
    regularized_beta,
    seeds_needed,
    t_cdf,
    t_pdf,
    t_quantile,
)

# NIST/SEMATECH e-Handbook of Statistical Methods, 1.3.6.7.2 "Critical Values of the
# Student's t Distribution" (upper-tail probabilities 0.05, 0.025, 0.005), three decimals.
NIST_T = [
    (0.975, 1, 12.706),
    (0.975, 2, 4.303),
    (0.975, 4, 2.776),
    (0.975, 9, 2.262),
    (0.975, 10, 2.228),
    (0.975, 29, 2.045),
    (0.975, 30, 2.042),
    (0.975, 100, 1.984),
    (0.95, 5, 2.015),
    (0.95, 20, 1.725),
    (0.995, 10, 3.169),
    (0.995, 3, 5.841),
]


@pytest.mark.parametrize(("p", "df", "expected"), NIST_T)
def test_t_quantile_matches_nist_table(p, df, expected):
    assert round(t_quantile(p, df), 3) == expected


def test_t_cdf_closed_forms():
    # df = 1 is the Cauchy distribution: F(t) = 1/2 + atan(t)/pi.
    for t in (-3.0, -0.5, 0.0, 0.7, 4.0):
        assert t_cdf(t, 1) == pytest.approx(0.5 + math.atan(t) / math.pi, abs=1e-12)
    # df = 2: F(t) = 1/2 + t / (2 sqrt(2 + t^2)).
    for t in (-2.0, 0.3, 5.0):
        assert t_cdf(t, 2) == pytest.approx(0.5 + t / (2 * math.sqrt(2 + t * t)), abs=1e-12)


def test_t_pdf_closed_forms():
    # df = 1 (Cauchy): 1 / (pi (1 + t^2)); df = 2: (2 + t^2)^(-3/2).
    for t in (-3.0, 0.0, 0.7, 40.0):
        assert t_pdf(t, 1) == pytest.approx(1 / (math.pi * (1 + t * t)), rel=1e-12)
        assert t_pdf(t, 2) == pytest.approx((2 + t * t) ** -1.5, rel=1e-12)


def test_t_exact_quantiles():
    # Inverting the closed forms above: df = 1, t = tan(pi (p - 1/2)); df = 2,
    # t = (2p - 1) sqrt(2 / (4 p (1 - p))).
    for p in (0.6, 0.8, 0.95, 0.99, 0.999999):
        assert t_quantile(p, 1) == pytest.approx(math.tan(math.pi * (p - 0.5)), rel=1e-10)
        exact = (2 * p - 1) * math.sqrt(2 / (4 * p * (1 - p)))
        assert t_quantile(p, 2) == pytest.approx(exact, rel=1e-10)


@given(
    p=st.floats(0.5001, 0.99999),
    df=st.one_of(st.integers(1, 100_000), st.floats(0.5, 1000.0)),
)
def test_t_quantile_inverts_the_cdf(p: float, df: float) -> None:
    t = t_quantile(p, df)
    assert t_cdf(t, df) == pytest.approx(p, abs=1e-12)
    assert t_quantile(1 - p, df) == -t


def test_t_approaches_the_normal():
    assert t_quantile(0.975, 100_000) == pytest.approx(NormalDist().inv_cdf(0.975), abs=1e-4)


def test_regularized_beta_closed_form():
    # I_x(1, 1) = x; I_x(a, 1) = x^a.
    assert regularized_beta(1, 1, 0.3) == pytest.approx(0.3)
    assert regularized_beta(3, 1, 0.5) == pytest.approx(0.125)
    with pytest.raises(ValueError, match=r"x must be in \[0, 1\], got 1.5"):
        regularized_beta(1, 1, 1.5)


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


def test_identical_differences_have_no_t_statistic():
    r = paired_difference(PairedComparison(a=(1.0, 2.0, 3.0), b=(1.5, 2.5, 3.5)))
    # every difference is exactly 0.5 in binary floating point, so sd is exactly 0
    assert r.sd_difference == 0.0
    assert r.t_statistic is None
    assert r.p_value is None
    assert r.ci_low == r.ci_high == 0.5


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


@settings(max_examples=50, deadline=None)
@given(
    pairs=st.lists(st.tuples(st.floats(-100, 100), st.floats(-100, 100)), min_size=2, max_size=30),
    confidence=st.sampled_from([0.8, 0.9, 0.95, 0.99]),
)
def test_interval_contains_the_mean_and_widens_with_confidence(pairs, confidence):
    a, b = zip(*pairs, strict=True)
    r = paired_difference(PairedComparison(a=a, b=b, confidence=confidence))
    assert r.ci_low <= r.mean_difference <= r.ci_high
    assert r.mean_difference == pytest.approx(fmean(y - x for x, y in pairs), abs=1e-9)
    wider = paired_difference(PairedComparison(a=a, b=b, confidence=0.999))
    assert wider.ci_high - wider.ci_low >= r.ci_high - r.ci_low - 1e-12


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"a": (1.0,), "b": (1.0,)}, "seeds must be at least 2, got 1"),
        ({"a": (1.0, 2.0), "b": (1.0,)}, r"b must have one score per seed of a \(2\), got 1"),
        ({"a": (1.0, math.nan), "b": (1.0, 2.0)}, "a scores must be finite numbers, got nan"),
        ({"a": (1.0, 2.0), "b": (1.0, "x")}, "b scores must be finite numbers, got 'x'"),
        ({"a": (1.0, 2.0), "b": (1.0, 2.0), "confidence": 1.0}, "confidence must be in"),
    ],
)
def test_bad_comparisons(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PairedComparison(**kwargs)


def test_bad_power_inputs():
    with pytest.raises(ValueError, match="sd_difference must be a positive number, got 0"):
        minimum_detectable_effect(0, 5)
    with pytest.raises(ValueError, match="seeds must be at least 2, got 1"):
        minimum_detectable_effect(1.0, 1)
    with pytest.raises(ValueError, match=r"power must be in \(0, 1\), got 1.2"):
        minimum_detectable_effect(1.0, 5, power=1.2)
    with pytest.raises(ValueError, match=r"alpha must be in \(0, 1\), got 0"):
        minimum_detectable_effect(1.0, 5, alpha=0)
    with pytest.raises(ValueError, match=r"effect must be a positive number, got -0\.1"):
        seeds_needed(-0.1, 1.0)
    with pytest.raises(ValueError, match=r"needs more than max_seeds \(100\)"):
        seeds_needed(0.01, 1.0, max_seeds=100)
    with pytest.raises(ValueError, match=r"p must be a probability in \(0, 1\), got 1"):
        t_quantile(1, 5)
    with pytest.raises(ValueError, match="df must be a positive number, got 0"):
        t_cdf(1.0, 0)
