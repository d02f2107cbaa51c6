"""MinHash by densified one-permutation hashing, LSH banding and the choice of bands and
rows (calculators.evaluation.minhash)."""

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from calculators.evaluation.minhash import (
    HASHES,
    RECALL_TARGET,
    band_keys,
    bands_and_rows,
    candidate_probability,
    false_positive_area,
    probe_order,
    signature,
)
from calculators.evaluation.text import PRIME

# ---- the S-curve ------------------------------------------------------------------------------


def test_candidate_probability_by_hand():
    # r = 20, b = 450, a steep curve (the formula: Leskovec, Rajaraman and Ullman, "Mining of
    # Massive Datasets", section 3.4.2):
    # s = 0.8: 0.8^20 = 0.0115292, (1 - 0.0115292)^450 = exp(450 ln 0.9884708)
    #        = exp(-5.21838) = 0.005416, so P = 0.99458
    assert candidate_probability(0.8, 450, 20) == pytest.approx(0.99458, abs=5e-5)
    # s = 0.5: 0.5^20 = 9.5367e-7; P = 1 - (1 - 9.5367e-7)^450 = 450 x 9.5367e-7 - (about
    # 9e-8 of second order) = 4.2906e-4
    assert candidate_probability(0.5, 450, 20) == pytest.approx(4.2906e-4, rel=1e-4)
    # The book's worked example (section 3.4.2): b = 20, r = 5 at s = 0.8. 0.8^5 = 0.32768,
    # 0.67232^20 = 0.000356, so P = 0.999644 (the book, rounding 0.8^5 to .328, says .99965)
    assert candidate_probability(0.8, 20, 5) == pytest.approx(0.999644, abs=1e-6)


def test_candidate_probability_small_cases():
    for s in (0.0, 0.3, 1.0):
        assert candidate_probability(s, 1, 1) == pytest.approx(s)
        assert candidate_probability(s, 1, 2) == pytest.approx(s * s)
        assert candidate_probability(s, 2, 1) == pytest.approx(1 - (1 - s) ** 2)


@pytest.mark.parametrize(("s", "b", "r"), [(-0.1, 1, 1), (1.1, 1, 1), (0.5, 0, 1), (0.5, 1, 0)])
def test_candidate_probability_refuses_bad_arguments(s, b, r):
    with pytest.raises(ValueError):
        candidate_probability(s, b, r)


@given(
    st.floats(min_value=0, max_value=1),
    st.floats(min_value=0, max_value=1),
    st.integers(min_value=1, max_value=64),
    st.integers(min_value=1, max_value=64),
)
def test_candidate_probability_rises_with_similarity(s1, s2, b, r):
    lo, hi = sorted((s1, s2))
    p_lo, p_hi = candidate_probability(lo, b, r), candidate_probability(hi, b, r)
    assert 0.0 <= p_lo <= p_hi <= 1.0
    assert candidate_probability(1.0, b, r) == 1.0
    assert candidate_probability(0.0, b, r) == 0.0


def test_false_positive_area_is_exact_for_low_degree():
    # Simpson's rule is exact for polynomials up to degree 3:
    # b = r = 1: P(s) = s, area t^2 / 2; b = 2, r = 1: P(s) = 2s - s^2, area t^2 - t^3 / 3
    assert false_positive_area(0.6, 1, 1) == pytest.approx(0.18, rel=1e-12)
    assert false_positive_area(0.6, 2, 1) == pytest.approx(0.36 - 0.072, rel=1e-12)
    # b = 1, r = 3: P(s) = s^3, area t^4 / 4
    assert false_positive_area(0.5, 1, 3) == pytest.approx(0.015625, rel=1e-12)


# ---- bands and rows from the threshold ------------------------------------------------------


@pytest.mark.parametrize("threshold", [0.05, 0.1, 0.3, 0.5, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0])
def test_banding_meets_the_recall_target_with_the_least_waste(threshold):
    b, r = bands_and_rows(threshold)
    assert b * r <= HASHES
    assert candidate_probability(threshold, b, r) >= RECALL_TARGET
    area = false_positive_area(threshold, b, r)
    # brute force over every banding that fits: none meets the target with less area
    for rows in range(1, HASHES + 1):
        for bands in range(1, HASHES // rows + 1):
            if candidate_probability(threshold, bands, rows) >= RECALL_TARGET:
                assert false_positive_area(threshold, bands, rows) >= area - 1e-12


def test_banding_at_the_default_threshold():
    # 0.8 with 128 hashes: r = 6, b = 16 (96 hashes). By hand: 0.8^6 = 0.262144,
    # 1 - 0.737856^16 = 1 - 0.0077 = 0.9923; 15 bands give 0.9895, below 0.99.
    assert bands_and_rows(0.8) == (16, 6)
    assert candidate_probability(0.8, 15, 6) < RECALL_TARGET


def test_banding_falls_back_to_the_highest_probability():
    # 0.01 cannot reach 0.99 with 128 hashes: 1 - 0.99^128 = 0.7238 at best (r = 1)
    assert bands_and_rows(0.01) == (128, 1)
    assert candidate_probability(0.01, 128, 1) == pytest.approx(1 - 0.99**128)


@pytest.mark.parametrize("bad", [0.0, -0.5, 1.5, math.nan])
def test_banding_refuses_thresholds_outside_0_1(bad):
    with pytest.raises(ValueError, match="threshold"):
        bands_and_rows(bad)


# ---- signatures -------------------------------------------------------------------------------


def test_probe_orders_are_permutations():
    orders = probe_order(16)
    assert len(orders) == 16
    assert all(sorted(o) == list(range(16)) for o in orders)
    assert len(set(orders)) > 1  # not one order for every bin
    assert probe_order(16) is orders  # computed once


def test_signature_by_hand():
    # 4 bins: 5 -> bin 1 value 1; 6 -> bin 2 value 1; 13 -> bin 1 value 3 (min stays 1).
    # Bins 0 and 3 are empty: each copies the first non-empty bin of its probe order.
    sig = signature([5, 6, 13], 4)
    assert sig[1] == 1
    assert sig[2] == 1
    for j in (0, 3):
        source = next(b for b in probe_order(4)[j] if b in (1, 2))
        assert sig[j] == {1: 1, 2: 1}[source]
    # no empty bin: nothing copied. 0 -> bin 0, 5 -> bin 1, 10 -> bin 2, 15 -> bin 3
    assert signature([0, 5, 10, 15, 4], 4) == [0, 1, 2, 3]  # 4 -> bin 0 value 1: min stays 0


def test_signature_needs_an_element():
    with pytest.raises(ValueError, match="at least one element"):
        signature([], 8)


@given(st.lists(st.integers(min_value=0, max_value=PRIME - 1), min_size=1, max_size=50))
def test_signature_depends_on_the_set_only(hashes):
    shuffled = list(reversed(hashes)) + hashes[:3]  # other order, repeats
    assert signature(hashes, 32) == signature(shuffled, 32)


def test_agreement_rate_estimates_jaccard():
    # Two sets of 60 elements sharing 40: J = 40 / 80 = 0.5. Over 200 draws of random
    # hashes, the share of the 128 bins on which the signatures agree averages J (the
    # densified estimator is unbiased); its standard error here is below 0.005.
    rng = random.Random(7)
    agree = 0
    draws = 200
    for _ in range(draws):
        union = [rng.randrange(PRIME) for _ in range(80)]
        a, b = union[:60], union[20:]
        sa, sb = signature(a, 128), signature(b, 128)
        agree += sum(x == y for x, y in zip(sa, sb, strict=True))
    assert agree / (draws * 128) == pytest.approx(0.5, abs=0.02)


def test_agreement_rate_for_sparse_sets():
    # Sparse sets (10 elements in 128 bins: most bins densified) still agree at the rate J:
    # 10 elements each, 5 shared, J = 5 / 15.
    rng = random.Random(11)
    agree = 0
    draws = 400
    for _ in range(draws):
        union = [rng.randrange(PRIME) for _ in range(15)]
        sa, sb = signature(union[:10], 128), signature(union[5:], 128)
        agree += sum(x == y for x, y in zip(sa, sb, strict=True))
    assert agree / (draws * 128) == pytest.approx(1 / 3, abs=0.03)


def test_band_keys():
    sig = list(range(12))
    assert band_keys(sig, 3, 4) == [(0, 1, 2, 3), (4, 5, 6, 7), (8, 9, 10, 11)]
    assert band_keys(sig, 2, 5) == [(0, 1, 2, 3, 4), (5, 6, 7, 8, 9)]  # the rest unused
    with pytest.raises(ValueError, match="need 15 values"):
        band_keys(sig, 3, 5)
