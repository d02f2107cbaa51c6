"""The exact sign-flip test and the all-beat probabilities: hand-enumerated cases, Fisher's
published count on Darwin's plants, brute-force enumeration, properties and bounds."""

from __future__ import annotations

from fractions import Fraction
from itertools import combinations, product
from math import comb

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculators.errors import InputError
from calculators.statistics.permutation import (
    MAX_EXACT_SEEDS,
    SignFlipResult,
    all_beat_probability,
    all_pairs_beat_probability,
    paired_sign_flip_test,
    sign_flip_test,
)
from calculators.statistics.seeds import PairedComparison


def enumerated(differences: list[int]) -> int:
    """Patterns with |sum| >= the observed |sum|, listed one by one."""
    observed = abs(sum(differences))
    return sum(
        abs(sum(s * d for s, d in zip(signs, differences, strict=True))) >= observed
        for signs in product((1, -1), repeat=len(differences))
    )


def test_three_seeds_by_hand():
    # a = 0.80, 0.81, 0.79 and b = 0.81, 0.83, 0.83: differences 0.01, 0.02, 0.04, that is
    # 1, 2, 4 hundredths; observed sum 7. The 8 sign patterns and their sums:
    #   + + +  7    + + -  -1    + - +  3    + - -  -5
    #   - + +  5    - + -  -3    - - +  1    - - -  -7
    # |sum| >= 7 for + + + and - - - only: p = 2 / 8.
    r = paired_sign_flip_test(PairedComparison(a=(0.80, 0.81, 0.79), b=(0.81, 0.83, 0.83)))
    assert r == SignFlipResult(seeds=3, patterns=8, extreme=2, p_value=0.25)


def test_ties_with_the_observed_sum_count():
    # differences 1, -1, 2: observed sum 2. Sums by pattern:
    #   + + +  2    + + -  -2    + - +  4    + - -  0
    #   - + +  0    - + -  -4    - - +  2    - - -  -2
    # |sum| >= 2 for six patterns (four of them tie with 2 exactly): p = 6 / 8.
    assert sign_flip_test([1, -1, 2]) == SignFlipResult(
        seeds=3, patterns=8, extreme=6, p_value=0.75
    )


def test_ties_are_exact_where_floats_would_break_them():
    # b - a = 0.1, 0.2, -0.3, 0.3 as typed, that is 1, 2, -3, 3 tenths: observed sum 3.
    # The 16 sums, signs in order:
    #   ++++  3   +++-  -3   ++-+  9   ++--  3   +-++ -1   +-+- -7   +--+  5   +--- -1
    #   -+++  1   -++- -5    -+-+  7   -+-- 1    --++ -3   --+- -9   ---+  3   ---- -3
    # |sum| >= 3 for 12 of them, six of them ties at exactly 3. In doubles two of those
    # ties come out just under the observed sum (0.1 + 0.2 is 0.30000000000000004), and a
    # float comparison counts 10.
    a, b = (0.0, 0.0, 0.3, 0.0), (0.1, 0.2, 0.0, 0.3)
    exact = [Fraction(repr(y)) - Fraction(repr(x)) for x, y in zip(a, b, strict=True)]
    assert exact == [Fraction(k, 10) for k in (1, 2, -3, 3)]
    floats = [y - x for x, y in zip(a, b, strict=True)]
    float_count = sum(
        abs(sum(s * d for s, d in zip(signs, floats, strict=True))) >= abs(sum(floats))
        for signs in product((1, -1), repeat=4)
    )
    assert float_count == 10  # the reason exact integers are used
    assert enumerated([1, 2, -3, 3]) == 12
    r = paired_sign_flip_test(PairedComparison(a=a, b=b))
    assert r == SignFlipResult(seeds=4, patterns=16, extreme=12, p_value=0.75)


def test_darwins_plants_as_fisher_counted():
    # Fisher (1935), The Design of Experiments, ch. III, section 21: Darwin's 15 pairs of
    # Zea mays, cross- minus self-fertilised heights in eighths of an inch. Of the 2^15 =
    # 32,768 sign patterns, 863 give a total at least the observed 314 (2.634%, one
    # side); two-sided, twice that.
    d = [49, -67, 8, 16, 6, 23, 28, 41, 14, 29, 56, 24, 75, 60, -48]
    assert sum(d) == 314
    r = sign_flip_test(d)
    assert (r.patterns, r.extreme) == (32_768, 2 * 863)
    assert r.p_value == pytest.approx(0.05267, abs=1e-5)


def test_five_seeds_cannot_reach_five_percent():
    # the smallest p is 2 / 2^n: 1/16 at 5 seeds, 1/32 at 6
    assert sign_flip_test([1, 2, 3, 4, 5]).p_value == 2 / 32
    assert sign_flip_test([1, 2, 3, 4, 5, 6]).p_value == 2 / 64


def test_the_bound_is_twenty_seeds():
    assert MAX_EXACT_SEEDS == 20
    twenty = tuple(0.5 + i / 100 for i in range(20))
    r = paired_sign_flip_test(PairedComparison(a=twenty, b=tuple(x + 0.01 for x in twenty)))
    assert r is not None and r.patterns == 2**20 and r.extreme == 2
    more = (*twenty, 0.9)
    assert paired_sign_flip_test(PairedComparison(a=more, b=more)) is None


@pytest.mark.parametrize(
    ("differences", "words"),
    [
        ([], "1 to 20"),
        (list(range(21)), "for the exact test, got 21"),
        ([1, 0.5], "exact integers"),
        ([1, True], "exact integers"),
        ("12", "a list of integers"),
    ],
)
def test_bad_differences_are_refused(differences, words):
    with pytest.raises(InputError) as e:
        sign_flip_test(differences)
    assert e.value.field == "differences"
    assert words in str(e.value)


small = st.lists(st.integers(-50, 50), min_size=1, max_size=10)


@settings(max_examples=60, deadline=None)
@given(differences=small)
def test_counts_equal_full_enumeration(differences):
    r = sign_flip_test(differences)
    assert r.extreme == enumerated(differences)
    assert r.patterns == 2 ** len(differences)


@settings(max_examples=60, deadline=None)
@given(differences=st.lists(st.integers(-(10**30), 10**30), min_size=1, max_size=16))
def test_p_value_is_a_probability_and_even_in_count(differences):
    r = sign_flip_test(differences)
    assert 0.0 < r.p_value <= 1.0
    # patterns pair with their mirror images, which have the same |sum|
    assert r.extreme % 2 == 0
    if sum(differences) != 0:
        assert r.p_value >= 2 / r.patterns


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 20))
def test_all_zero_differences_give_one(n):
    assert sign_flip_test([0] * n).p_value == 1.0


@settings(max_examples=60, deadline=None)
@given(differences=st.lists(st.integers(-1000, 1000), min_size=1, max_size=14), data=st.data())
def test_order_and_global_sign_do_not_matter(differences, data):
    p = sign_flip_test(differences)
    shuffled = data.draw(st.permutations(differences))
    assert sign_flip_test(list(shuffled)) == p
    assert sign_flip_test([-d for d in differences]) == p
    # swapping a and b flips every sign: the two-sided p is the same
    scaled = sign_flip_test([7 * d for d in differences])  # the scale does not matter
    assert scaled == p


@settings(max_examples=40, deadline=None)
@given(
    pairs=st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 1000)), min_size=2, max_size=12)
)
def test_paired_scores_swap_and_reorder(pairs):
    a = tuple(x / 1000 for x, _ in pairs)
    b = tuple(y / 1000 for _, y in pairs)
    r = paired_sign_flip_test(PairedComparison(a=a, b=b))
    assert r == paired_sign_flip_test(PairedComparison(a=b, b=a))
    assert r == paired_sign_flip_test(PairedComparison(a=a[::-1], b=b[::-1]))
    assert r is not None
    assert r.extreme == enumerated([y - x for x, y in pairs])


# --- With no effect, every run of the change above every run of the baseline.


@pytest.mark.parametrize(("k", "expected"), [(1, 1 / 2), (2, 1 / 6), (3, 1 / 20), (4, 1 / 70)])
def test_all_beat_probability_by_hand(k, expected):
    # C(2, 1) = 2, C(4, 2) = 6, C(6, 3) = 20, C(8, 4) = 70
    assert all_beat_probability(k) == expected


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
def test_all_beat_probability_counts_rank_assignments(k):
    # every way of giving k of the 2k ranks to the change is equally likely with no
    # effect; only one gives it the top k
    assignments = list(combinations(range(2 * k), k))
    top = tuple(range(k, 2 * k))
    assert len(assignments) == comb(2 * k, k)
    assert all_beat_probability(k) == assignments.count(top) / len(assignments)


def test_all_pairs_beat_probability():
    assert all_pairs_beat_probability(3) == 1 / 8
    assert all_pairs_beat_probability(5) == 1 / 32
    # every paired pattern is a fair coin per seed: one pattern of 2^k is all heads
    assert all_pairs_beat_probability(10) == 1 / 1024


def test_tiny_probabilities_underflow_to_zero():
    assert 0.0 < all_beat_probability(500) < 1e-290
    assert all_beat_probability(601) == 0.0
    assert all_beat_probability(100_000) == 0.0
    assert all_pairs_beat_probability(1074) == 5e-324
    assert all_pairs_beat_probability(100_000) == 0.0


@pytest.mark.parametrize("k", [0, -1, True, 2.0, "3"])
def test_bad_run_counts_are_refused(k):
    for f in (all_beat_probability, all_pairs_beat_probability):
        with pytest.raises(InputError) as e:
            f(k)
        assert e.value.field == "runs"
        assert "positive whole number" in str(e.value)


def test_public_api():
    from calculators.statistics import permutation

    assert sorted(permutation.__all__) == [
        "MAX_EXACT_SEEDS",
        "SignFlipResult",
        "all_beat_probability",
        "all_pairs_beat_probability",
        "paired_sign_flip_test",
        "sign_flip_test",
    ]
