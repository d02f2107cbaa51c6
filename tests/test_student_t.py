"""Student's t and the noncentral t: closed forms, published tables, and pinned references
(scipy, mpmath; tests/data/seeds_reference.json names each source and version). Nothing
here imports them: these tests also run in the browser's Python.
"""

import json
import math
from pathlib import Path
from statistics import NormalDist

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculators.statistics import student_t
from calculators.statistics.student_t import (
    nct_cdf,
    nct_sf,
    regularized_beta,
    t_cdf,
    t_isf,
    t_log10_sf,
    t_pdf,
    t_quantile,
    t_sf,
)

REFERENCE = json.loads((Path(__file__).parent / "data" / "seeds_reference.json").read_text())


def rows(table: str) -> list[list]:
    return REFERENCE[table]["rows"]


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


def test_t_upper_tail_matches_mpmath():
    # mpmath 1.3.0 betainc at 50 digits, down to 1e-300 and, as log10, far below.
    # Relative error ~1e-16 per degree of freedom: at df 1e5 the argument
    # ν / (ν + t²) = 1 - 4e-5 carries only 12 digits of t.
    for t, df, sf, log10_sf in rows("t_sf"):
        tol = 1e-13 + 1e-16 * df
        if sf > 0:
            assert t_sf(t, df) == pytest.approx(sf, rel=tol), (t, df)
            assert t_cdf(-t, df) == pytest.approx(sf, rel=tol), (t, df)
        else:
            assert t_sf(t, df) == 0.0
        # the logarithm of the tail is finite where the tail underflows
        assert t_log10_sf(t, df) == pytest.approx(log10_sf, rel=1e-13, abs=tol), (t, df)


def test_t_upper_quantile_matches_mpmath():
    for p, df, t in rows("t_isf"):
        # t is determined by p to about ε / (d log sf / d log t) = ε / (t · hazard)
        assert t_isf(p, df) == pytest.approx(t, rel=1e-12 + 1e-17 * df), (p, df)


def test_t_upper_quantile_closed_forms_for_tiny_tails():
    # df 1: P(T > t) = atan(1/t) / π, so t = 1 / tan(π p); df 2: t = (1 - 2p) / sqrt(2p(1-p)).
    for p in (0.2, 1e-3, 5e-11, 1e-20, 1e-100, 1e-300):
        assert t_isf(p, 1) == pytest.approx(1 / math.tan(math.pi * p), rel=1e-13)
        assert t_isf(p, 2) == pytest.approx((1 - 2 * p) / math.sqrt(2 * p * (1 - p)), rel=1e-13)


def test_noncentral_t_matches_scipy():
    # scipy.stats.nct.cdf / sf, scipy 1.17.1; df 1 .. 1e5, |nc| up to 40, t -20 .. 45.
    # The issue asks for 1e-10; the series gives ~1e-13 (the largest gaps at df 1e5).
    for t, df, nc, cdf, sf in rows("nct"):
        assert nct_cdf(t, df, nc) == pytest.approx(cdf, abs=1e-11), (t, df, nc)
        assert nct_sf(t, df, nc) == pytest.approx(sf, abs=1e-11), (t, df, nc)


def test_t_sf_computes_the_tail_directly():
    # P(T_5 > 1e10) = 1.9e-48 and P(T_1 > 1e200) = 1 / (π 1e200): not 1 - 1.
    assert t_sf(1e10, 1) == pytest.approx(math.atan(1e-10) / math.pi, rel=1e-14)
    assert t_sf(1e200, 1) == pytest.approx(1 / (math.pi * 1e200), rel=1e-14)
    assert t_cdf(-1e200, 1) == t_sf(1e200, 1)


@settings(max_examples=60, deadline=None)
@given(t=st.floats(-1e6, 1e6), df=st.one_of(st.integers(1, 100_000), st.floats(0.5, 1e4)))
def test_t_tails_add_up(t, df):
    sf, cdf = t_sf(t, df), t_cdf(t, df)
    assert 0.0 <= sf <= 1.0 and 0.0 <= cdf <= 1.0
    if min(sf, cdf) > 1e-300:
        assert sf + cdf == pytest.approx(1.0, abs=2e-16)
    assert t_sf(-t, df) == cdf


@settings(max_examples=40, deadline=None)
@given(
    t=st.floats(-60, 60),
    df=st.one_of(st.integers(1, 1000), st.floats(0.5, 1e5)),
    nc=st.floats(-40, 40),
)
def test_noncentral_t_tails_add_up_and_reflect(t, df, nc):
    cdf, sf = nct_cdf(t, df, nc), nct_sf(t, df, nc)
    assert 0.0 <= cdf <= 1.0 and 0.0 <= sf <= 1.0
    assert cdf + sf == pytest.approx(1.0, abs=1e-13)
    assert nct_sf(-t, df, -nc) == pytest.approx(cdf, abs=1e-13)


def test_public_api():
    assert sorted(student_t.__all__) == sorted(
        [
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
    )
    assert all(hasattr(student_t, name) for name in student_t.__all__)
