"""Paired comparison of two models: the 2x2 table, flips, McNemar's test (exact
binomial, mid-p, chi-square with and without the continuity correction), and the
intervals on the difference of accuracies.

The published table: Armitage and Berry, Statistical Methods in Medical Research (3rd
ed., 1994, p. 127), as worked in the StatsDirect manual ("McNemar's test"): two culture
media on 50 sputum specimens, 20 growing on both, 12 on A only, 2 on B only, 16 on
neither; printed: Yates-corrected chi-square 5.785714, P = 0.0162, exact (sign test)
P = 0.0129. The chi-square statistic is statsmodels' (statsmodels/stats/
contingency_tables.py, `mcnemar`, commit 0100e6c8f309e31d2ac5922cfeef1db228b9762f:
`(np.abs(n1 - n2) - corr)**2 / (1. * (n1 + n2))`, not clamped). The mid-p example is
Fagerland, Lydersen and Laake's (BMC Med Res Methodol 13:91, 2013, and its supplement
"How to calculate the McNemar mid-p test": Bentur et al.'s 21 children, discordant 1 and
7, mid-p 0.039). The Newcombe interval is pinned to the authors' R package
(ocbe-uio/contingencytables, tests/testthat/test-ch8.R: Cavo et al.'s table 59, 6, 16,
80 gives -0.0621, 95% CI -0.1186 to -0.0046). Every other pinned value is computed by
hand in its test, and the binomial tail is checked against exact sums of binomial
coefficients (fractions).
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction
from statistics import NormalDist

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculators.errors import InputError
from calculators.evaluation.paired import (
    EXACT_MAX,
    MAX_DISCORDANT,
    ClassFlips,
    PairedOutcomes,
    PairedTable,
    binomial_half_cdf,
    bonett_price_interval,
    chi_square_1_sf,
    flips_by_class,
    log_binomial_half_cdf,
    log_binomial_half_pmf,
    mcnemar,
    mcnemar_chi_square,
    mcnemar_exact,
    mcnemar_mid_p,
    negative_flip_rate,
    newcombe_interval,
    normal_cdf,
    paired_difference,
    paired_table,
    wald_interval,
)


def exact_cdf(k: int, n: int) -> Fraction:
    return Fraction(sum(math.comb(n, j) for j in range(k + 1)), 2**n)


def outcomes(a: str, b: str) -> PairedOutcomes:
    """'1' right, '0' wrong."""
    return PairedOutcomes(
        a_correct=tuple(c == "1" for c in a), b_correct=tuple(c == "1" for c in b)
    )


def test_armitage_berry_culture_media_table():
    # discordant 12 and 2: chi-square (|12 - 2| - 1)^2 / 14 = 81 / 14 = 5.785714
    statistic, p = mcnemar_chi_square(2, 12)
    assert statistic == pytest.approx(81 / 14)
    assert round(statistic, 6) == 5.785714
    assert round(p, 4) == 0.0162
    # exact: 2 P(X <= 2), X ~ Bin(14, 1/2) = 2 (1 + 14 + 91) / 2^14 = 212 / 16384
    exact, log10 = mcnemar_exact(2, 12)
    assert exact == 212 / 16384
    assert round(exact, 4) == 0.0129
    assert log10 == pytest.approx(math.log10(212 / 16384))


def test_all_discordant_one_way_by_hand():
    # 5 flips all one way: exact p = 2 / 2^5 = 0.0625; chi-square (5 - 1)^2 / 5 = 3.2
    assert mcnemar_exact(0, 5) == (0.0625, pytest.approx(math.log10(0.0625)))
    statistic, p = mcnemar_chi_square(0, 5)
    assert statistic == pytest.approx(3.2)
    # P(chi^2_1 >= 3.2) = 2 (1 - Phi(sqrt 3.2))
    assert p == pytest.approx(2 * (1 - NormalDist().cdf(math.sqrt(3.2))))


def test_no_discordant_pair_gives_zero_and_one():
    assert mcnemar_chi_square(0, 0) == (0.0, 1.0)
    assert mcnemar_exact(0, 0) == (1.0, 0.0)


def test_equal_flips_are_not_clamped_as_in_statsmodels():
    # statsmodels: (|5 - 5| - 1)^2 / 10 = 0.1, P(chi^2_1 >= 0.1) = erfc(sqrt(0.05)) = 0.752
    statistic, p = mcnemar_chi_square(5, 5)
    assert statistic == 0.1
    assert round(p, 3) == 0.752
    assert p == pytest.approx(math.erfc(math.sqrt(0.05)), rel=1e-15)
    assert mcnemar_chi_square(3, 3)[0] == 1 / 6
    assert mcnemar_exact(3, 3) == (1.0, 0.0)
    # one apart: (1 - 1)^2 / 7 = 0; 2 P(X <= 3), X ~ Bin(7, 1/2) = 2 * 64/128 = 1
    assert mcnemar_exact(3, 4)[0] == 1.0
    assert mcnemar_chi_square(3, 4) == (0.0, 1.0)
    # without the correction, equal flips give 0 and one apart 1/7
    assert mcnemar_chi_square(5, 5, correction=False) == (0.0, 1.0)
    assert mcnemar_chi_square(3, 4, correction=False)[0] == 1 / 7


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 5_000), st.integers(0, 5_000))
def test_chi_square_is_the_statsmodels_formula(n01, n10):
    if n01 + n10 == 0:
        return
    for correction in (True, False):
        c = int(correction)
        statistic, p = mcnemar_chi_square(n01, n10, correction=correction)
        assert statistic == float(Fraction((abs(n01 - n10) - c) ** 2, n01 + n10))
        assert statistic == pytest.approx((abs(n01 - n10) - c) ** 2 / (n01 + n10), rel=1e-15)
        assert p == pytest.approx(math.erfc(math.sqrt(statistic / 2)), rel=1e-12, abs=1e-300)


def test_chi_square_matches_scipy_where_installed():
    # statsmodels' mcnemar(exact=False) is stats.chi2.sf of that statistic
    stats = pytest.importorskip("scipy.stats")
    for n01, n10 in [(5, 5), (1, 7), (2, 12), (40, 61), (480, 540), (3, 3), (0, 9)]:
        for c in (1, 0):
            want = (abs(n01 - n10) - c) ** 2 / (n01 + n10)
            statistic, p = mcnemar_chi_square(n01, n10, correction=bool(c))
            assert statistic == pytest.approx(want, rel=1e-15)
            assert p == pytest.approx(stats.chi2.sf(want, 1), rel=1e-12)


# ---- mid-p ------------------------------------------------------------------------------------


def test_mid_p_of_fagerland_bentur_example():
    # discordant 1 and 7: exact 2 * 9/256; mid-p = 2 * 9/256 - 8/256 = 10/256 = 0.039
    mid, log10 = mcnemar_mid_p(1, 7)
    assert mid == 10 / 256
    assert round(mid, 3) == 0.039
    assert log10 == pytest.approx(math.log10(10 / 256))
    assert mcnemar_exact(1, 7)[0] == 18 / 256
    # the same table's asymptotic tests, for the page's ordering of the three
    assert round(mcnemar_chi_square(1, 7, correction=False)[1], 3) == 0.034
    assert round(mcnemar_chi_square(1, 7)[1], 3) == 0.077


def test_mid_p_with_equal_flips_is_one_less_half_the_point_probability():
    # Fagerland et al.'s supplement: n12 = n21 gives 1 - 0.5 P(X = n12)
    assert mcnemar_mid_p(5, 5)[0] == 1 - math.comb(10, 5) / 2**11
    assert mcnemar_mid_p(0, 0) == (1.0, 0.0)
    assert mcnemar_mid_p(3, 4)[0] == 1 - math.comb(7, 3) / 2**7


def exact_mid_p(n01: int, n10: int) -> Fraction:
    n, k = n01 + n10, min(n01, n10)
    point = Fraction(math.comb(n, k), 2**n)
    if n01 == n10:
        return 1 - point / 2
    return 2 * exact_cdf(k, n) - point


@pytest.mark.parametrize("n", [EXACT_MAX + 1, 1_500, 4_000])
def test_mid_p_above_the_exact_range_equals_exact_fractions(n):
    for k in (0, 3, n // 4, n // 2 - 30, n // 2 - 1, n // 2):
        want = exact_mid_p(k, n - k)
        mid, log10 = mcnemar_mid_p(k, n - k)
        assert mid == pytest.approx(float(want), rel=1e-11)
        # log10 of the fraction from its integers: the value itself may underflow a double
        log10_want = math.log10(want.numerator) - math.log10(want.denominator)
        assert log10 == pytest.approx(log10_want, rel=1e-11, abs=1e-14)


def test_mid_p_matches_scipy_where_installed():
    stats = pytest.importorskip("scipy.stats")
    for n01, n10 in [(2, 12), (40, 61), (480, 540), (1_200, 1_310), (5, 5_000)]:
        n, k = n01 + n10, min(n01, n10)
        want = stats.binomtest(k, n, 0.5).pvalue - stats.binom.pmf(k, n, 0.5)
        assert mcnemar_mid_p(n01, n10)[0] == pytest.approx(want, rel=1e-9)


def test_mid_p_past_a_double_keeps_its_logarithm_and_bound():
    # 10^6 flips one way: 2 * 2^-n - 2^-n = 2^-n
    mid, log10 = mcnemar_mid_p(0, 1_000_000)
    assert mid == 0.0
    assert log10 == pytest.approx(-1_000_000 * math.log10(2), rel=1e-12)
    with pytest.raises(InputError, match=r"negative_flips .* above the limit of 1,000,000,000,000"):
        mcnemar_mid_p(MAX_DISCORDANT, 1)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 3_000), st.integers(0, 3_000))
def test_mid_p_lies_between_half_the_exact_p_and_the_exact_p(n01, n10):
    mid, log10 = mcnemar_mid_p(n01, n10)
    exact, _ = mcnemar_exact(n01, n10)
    assert (mid, log10) == mcnemar_mid_p(n10, n01)
    assert 0 <= mid <= exact <= 1
    assert mid >= exact / 2 or mid == 0.0


# ---- intervals on accuracy b - accuracy a --------------------------------------------------


def table(both_right: int, negative: int, positive: int, both_wrong: int) -> PairedTable:
    return PairedTable(
        n=both_right + negative + positive + both_wrong,
        both_right=both_right,
        negative_flips=negative,
        positive_flips=positive,
        both_wrong=both_wrong,
    )


def test_newcombe_interval_of_the_authors_package():
    # contingencytables' test: rows the first measure (a), columns the second (b): 59, 6,
    # 16, 80 gives a - b = -0.0621 (-0.1186 to -0.0046); here b - a, the signs reversed
    t = table(59, 6, 16, 80)
    i = newcombe_interval(t)
    assert (round(i.low, 4), round(i.high, 4)) == (0.0046, 0.1186)
    assert round(paired_difference(t).estimate, 4) == 0.0621


def test_wald_and_bonett_price_by_hand_on_the_bentur_table():
    # Bentur et al.: both right 1, a right only 1, b right only 7, both wrong 12; n = 21
    t, z = table(1, 1, 7, 12), NormalDist().inv_cdf(0.975)
    d = 6 / 21
    se = math.sqrt(8 - 36 / 21) / 21
    w = wald_interval(t)
    assert (w.low, w.high) == (pytest.approx(d - z * se), pytest.approx(d + z * se))
    assert (round(w.low, 3), round(w.high, 3)) == (0.052, 0.520)
    p01, p10 = 8 / 23, 2 / 23
    se_bp = math.sqrt((p01 + p10 - (p01 - p10) ** 2) / 23)
    bp = bonett_price_interval(t)
    assert bp.low == pytest.approx(p01 - p10 - z * se_bp)
    assert bp.high == pytest.approx(p01 - p10 + z * se_bp)


def test_no_discordant_example_gives_a_zero_wald_width_but_not_the_others():
    t = table(40, 0, 0, 10)
    assert wald_interval(t).low == wald_interval(t).high == 0.0
    assert bonett_price_interval(t).low < 0 < bonett_price_interval(t).high
    assert newcombe_interval(t).low < 0 < newcombe_interval(t).high


TABLES = st.tuples(*(st.integers(0, 60) for _ in range(4))).filter(lambda c: sum(c) > 0)


@settings(max_examples=300, deadline=None)
@given(TABLES)
def test_intervals_hold_the_estimate_and_stay_in_range(cells):
    t = table(*cells)
    d = paired_difference(t)
    assert d.estimate == (t.positive_flips - t.negative_flips) / t.n
    for i in (d.wald, d.bonett_price, d.newcombe):
        assert -1 <= i.low <= d.estimate <= i.high <= 1


@settings(max_examples=200, deadline=None)
@given(TABLES, st.integers(2, 20))
def test_intervals_narrow_as_n_grows_with_fixed_proportions(cells, k):
    small, large = (
        paired_difference(table(*cells)),
        paired_difference(table(*(k * c for c in cells))),
    )
    for name in ("wald", "bonett_price", "newcombe"):
        a, b = getattr(small, name), getattr(large, name)
        assert b.high - b.low <= a.high - a.low + 1e-12


@settings(max_examples=200, deadline=None)
@given(TABLES)
def test_swapping_a_and_b_mirrors_every_interval(cells):
    both_right, negative, positive, both_wrong = cells
    d = paired_difference(table(*cells))
    m = paired_difference(table(both_right, positive, negative, both_wrong))
    assert m.estimate == -d.estimate
    for name in ("wald", "bonett_price", "newcombe"):
        x, y = getattr(d, name), getattr(m, name)
        assert (y.low, y.high) == (
            pytest.approx(-x.high, abs=1e-12),
            pytest.approx(-x.low, abs=1e-12),
        )


def test_small_tails_equal_exact_fractions():
    for n in range(1, 80):
        for k in range(n + 1):
            want = exact_cdf(k, n)
            assert binomial_half_cdf(k, n) == pytest.approx(float(want), rel=1e-13)
            assert math.exp(log_binomial_half_pmf(k, n)) == pytest.approx(
                math.comb(n, k) / 2**n, rel=1e-13
            )


@pytest.mark.parametrize("n", [EXACT_MAX + 1, 1_500, 4_001])
def test_tails_above_the_exact_range_equal_exact_fractions(n):
    # the saddle-point path: checked against the exact sum where both can be computed
    for k in (0, 1, 7, n // 4, n // 2 - 40, n // 2 - 1, n // 2):
        want = exact_cdf(k, n)
        assert math.exp(log_binomial_half_cdf(k, n)) == pytest.approx(float(want), rel=1e-11)
        exact, _ = mcnemar_exact(k, n - k)
        assert exact == pytest.approx(min(1.0, 2 * float(want)), rel=1e-11)


def test_upper_half_uses_the_complement():
    n = 2_001
    for k in (n // 2 + 1, n - 3, n - 1, n):
        assert math.exp(log_binomial_half_cdf(k, n)) == pytest.approx(
            float(exact_cdf(k, n)), rel=1e-12
        )


def test_a_hundred_thousand_flips_against_exact_integers():
    # P(X <= k) = C(n, k) / 2^n * sum_j r_j with r_k = 1, r_{j-1} = r_j j / (n - j + 1):
    # C(n, k) exactly (math.comb), the sum in 40-digit decimals, independently of the
    # module's saddle-point pmf and float recurrence
    n = 100_000
    with localcontext() as ctx:
        ctx.prec = 40
        for k in (49_000, 48_200, 47_000):
            ratio = total = Decimal(1)
            for j in range(k, 0, -1):
                ratio = ratio * j / (n - j + 1)
                total += ratio
                if ratio < Decimal(10) ** -30 * total:
                    break
            # C(n, k) / 2^n: one correctly rounded division of integers, no cancellation
            log_want = math.log(math.comb(n, k) / 2**n) + float(total.ln())
            assert log_binomial_half_cdf(k, n) == pytest.approx(log_want, rel=1e-13)
            assert binomial_half_cdf(k, n) == pytest.approx(math.exp(log_want), rel=1e-11)


def test_a_p_value_past_a_double_still_has_its_logarithm():
    # 10^6 flips all one way: p = 2^(1 - 10^6); log10 p = (1 - 10^6) log10 2
    p, log10 = mcnemar_exact(0, 1_000_000)
    assert p == 0.0
    assert log10 == pytest.approx((1 - 1_000_000) * math.log10(2), rel=1e-12)


def test_bounds_and_types():
    with pytest.raises(InputError, match="negative_flips must be a whole number"):
        mcnemar_exact(1, -1)
    with pytest.raises(InputError, match="positive_flips must be a whole number"):
        mcnemar_chi_square(True, 1)
    with pytest.raises(InputError, match="above the limit"):
        mcnemar_exact(MAX_DISCORDANT, 1)
    with pytest.raises(InputError, match="as many"):
        PairedOutcomes(a_correct=(True,), b_correct=())
    with pytest.raises(InputError, match="no examples"):
        PairedOutcomes(a_correct=(), b_correct=())


def test_paired_table_and_flips_by_hand():
    o = outcomes("110010", "011011")
    t = paired_table(o)
    # rows 0: a right b wrong; 1: both right; 2: a wrong b right; 3: both wrong;
    # 4: both right; 5: a wrong b right
    assert (t.both_right, t.negative_flips, t.positive_flips, t.both_wrong) == (2, 1, 2, 1)
    assert negative_flip_rate(t) == pytest.approx(1 / 6)
    m = mcnemar(t)
    assert m.discordant == 3
    # n01 = 2, n10 = 1: 2 P(X <= 1 | 3) = 2 * 4/8 = 1
    assert m.p_value_exact == 1.0
    by_class = flips_by_class(o, ("x", "y", "x", "y", "y", "x"))
    assert by_class == {
        "x": ClassFlips(support=3, negative=1, positive=2),
        "y": ClassFlips(support=3, negative=0, positive=0),
    }


OUTCOMES = st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=300)


@settings(max_examples=200, deadline=None)
@given(OUTCOMES)
def test_counts_add_up_and_flips_explain_the_accuracy_change(pairs):
    o = PairedOutcomes(a_correct=tuple(a for a, _ in pairs), b_correct=tuple(b for _, b in pairs))
    t = paired_table(o)
    n = len(pairs)
    assert t.both_right + t.negative_flips + t.positive_flips + t.both_wrong == n == t.n
    a_right, b_right = sum(o.a_correct), sum(o.b_correct)
    assert t.negative_flips - t.positive_flips == a_right - b_right
    m = mcnemar(t)
    assert 0 <= m.p_value <= 1 and 0 <= m.p_value_exact <= 1
    assert 0 <= m.p_value_uncorrected <= 1 and 0 <= m.p_value_mid <= m.p_value_exact
    assert m.statistic >= 0 and m.log10_p_value_exact <= 0 and m.log10_p_value_mid <= 0


@settings(max_examples=100, deadline=None)
@given(OUTCOMES)
def test_a_model_compared_with_itself_has_no_flips(pairs):
    a = tuple(x for x, _ in pairs)
    t = paired_table(PairedOutcomes(a_correct=a, b_correct=a))
    assert t.negative_flips == t.positive_flips == 0
    m = mcnemar(t)
    assert (m.statistic, m.p_value, m.p_value_exact, m.p_value_mid) == (0.0, 1.0, 1.0, 1.0)


@settings(max_examples=100, deadline=None)
@given(OUTCOMES, st.randoms(use_true_random=False))
def test_permuting_rows_changes_nothing(pairs, rnd):
    shuffled = list(pairs)
    rnd.shuffle(shuffled)

    def result(rows):
        o = PairedOutcomes(a_correct=tuple(a for a, _ in rows), b_correct=tuple(b for _, b in rows))
        return paired_table(o), mcnemar(paired_table(o))

    assert result(shuffled) == result(pairs)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 3_000), st.integers(0, 3_000))
def test_exact_p_is_symmetric_and_in_range(n01, n10):
    p, log10 = mcnemar_exact(n01, n10)
    assert (p, log10) == mcnemar_exact(n10, n01)
    assert 0 <= p <= 1
    assert mcnemar_chi_square(n01, n10) == mcnemar_chi_square(n10, n01)


def test_matches_exact_binomial_test_of_scipy_where_installed():
    stats = pytest.importorskip("scipy.stats")
    pairs = [(2, 12), (40, 61), (480, 540), (1_200, 1_310), (5, 5_000), (997_171, 1_002_829)]
    for n01, n10 in pairs:
        want = stats.binomtest(min(n01, n10), n01 + n10, 0.5).pvalue
        assert mcnemar_exact(n01, n10)[0] == pytest.approx(want, rel=1e-9)


# P(chi^2_1 >= x) = erfc(sqrt(x / 2)), from mpmath 1.3.0's erfc at 60 digits, rounded once
# to a double (mpmath.erfc(mpmath.sqrt(mpmath.mpf(p) / q / 2)) with mp.dps = 60); 3.841 is
# the familiar 5% critical value of chi-square with 1 degree of freedom (p just above 0.05).
@pytest.mark.parametrize(
    ("x", "expected"),
    [
        (Fraction(9, 14), 0.4226780741706354),
        (Fraction(25, 3), 0.0038924171227786293),
        (Fraction(1), 0.3173105078629141),
        (Fraction(3841, 1000), 0.05001368376395671),
        (Fraction(2), 0.15729920705028513),
        (Fraction(200), 2.088487583762545e-45),
        (Fraction(1000), 1.7958327848007262e-219),
    ],
)
def test_chi_square_tail_is_correctly_rounded(x, expected):
    # exact equality: the page's Python and the command line must give the same digits
    assert chi_square_1_sf(x) == expected


@given(st.fractions(min_value=0, max_value=3_000, max_denominator=10_000))
def test_chi_square_tail_agrees_with_the_c_library(x):
    # the C library's erfc is close to correctly rounded: a few units in the last place,
    # plus what rounding x to a double moves the tail (d log p / dx is about -1/2)
    p = chi_square_1_sf(x)
    reference = math.erfc(math.sqrt(float(x) / 2))
    assert 0 <= p <= 1
    assert p == pytest.approx(reference, rel=1e-15 * (2 + float(x)), abs=1e-300)


# Phi(t) from mpmath 1.3.0's ncdf at 60 digits of the double t, rounded once to a double
# (mpmath.ncdf(mpmath.mpf(t)) with mp.dps = 60); 1.959963984540054 is z_0.975.
@pytest.mark.parametrize(
    ("t", "expected"),
    [
        (-1.0, 0.15865525393145705),
        (-1.959963984540054, 0.025000000000000012),
        (-8.0, 6.220960574271784e-16),
        (-12.0, 1.776482112077679e-33),
        (0.5, 0.6914624612740131),
        (3.0, 0.9986501019683699),
    ],
)
def test_normal_cdf_is_the_correctly_rounded_value(t, expected):
    # exact equality: the power the page prints must be the command line's, to the digit
    assert normal_cdf(t) == expected


@given(st.floats(min_value=-50, max_value=50))
def test_normal_cdf_is_symmetric_and_bounded(t):
    low, high = normal_cdf(-abs(t)), normal_cdf(abs(t))
    assert 0 <= low <= 0.5 <= high <= 1
    assert high == 1 - low  # the same tail, rounded the same way


@given(st.floats(min_value=-40, max_value=40), st.floats(min_value=1e-6, max_value=5))
def test_normal_cdf_is_monotone(t, step):
    assert normal_cdf(t) <= normal_cdf(t + step)


def test_normal_cdf_edges():
    assert normal_cdf(0.0) == 0.5
    assert normal_cdf(math.inf) == 1.0 and normal_cdf(-math.inf) == 0.0
    assert normal_cdf(-60.0) == 0.0  # below the smallest double
    with pytest.raises(ValueError, match="nan"):
        normal_cdf(math.nan)


def test_chi_square_tail_bounds():
    assert chi_square_1_sf(Fraction(0)) == 1.0
    assert chi_square_1_sf(Fraction(3201)) == 0.0  # z > 40: below the smallest double
    with pytest.raises(ValueError):
        chi_square_1_sf(Fraction(-1))
