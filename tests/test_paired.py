"""Paired comparison of two models: the 2x2 table, flips, and McNemar's test (exact
binomial and continuity-corrected chi-square).

The published table: Armitage and Berry, Statistical Methods in Medical Research (3rd
ed., 1994, p. 127), as worked in the StatsDirect manual ("McNemar's test"): two culture
media on 50 sputum specimens, 20 growing on both, 12 on A only, 2 on B only, 16 on
neither; printed: Yates-corrected chi-square 5.785714, P = 0.0162, exact (sign test)
P = 0.0129. Every other pinned value is computed by hand in its test, and the binomial
tail is checked against exact sums of binomial coefficients (fractions).
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
    binomial_half_cdf,
    chi_square_1_sf,
    flips_by_class,
    log_binomial_half_cdf,
    log_binomial_half_pmf,
    mcnemar,
    mcnemar_chi_square,
    mcnemar_exact,
    negative_flip_rate,
    paired_table,
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


def test_equal_flips_give_p_one_and_a_zero_statistic():
    # |n01 - n10| - 1 < 0: the correction is not allowed past the difference
    assert mcnemar_chi_square(3, 3) == (0.0, 1.0)
    assert mcnemar_exact(3, 3) == (1.0, 0.0)
    # one apart: 2 P(X <= 3), X ~ Bin(7, 1/2) = 2 * 64/128 = 1, capped at 1
    assert mcnemar_exact(3, 4)[0] == 1.0
    assert mcnemar_chi_square(3, 4)[0] == 0.0


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
    assert m.statistic >= 0 and m.log10_p_value_exact <= 0


@settings(max_examples=100, deadline=None)
@given(OUTCOMES)
def test_a_model_compared_with_itself_has_no_flips(pairs):
    a = tuple(x for x, _ in pairs)
    t = paired_table(PairedOutcomes(a_correct=a, b_correct=a))
    assert t.negative_flips == t.positive_flips == 0
    m = mcnemar(t)
    assert (m.statistic, m.p_value, m.p_value_exact) == (0.0, 1.0, 1.0)


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


def test_chi_square_tail_bounds():
    assert chi_square_1_sf(Fraction(0)) == 1.0
    assert chi_square_1_sf(Fraction(3201)) == 0.0  # z > 40: below the smallest double
    with pytest.raises(ValueError):
        chi_square_1_sf(Fraction(-1))
