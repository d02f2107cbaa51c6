"""The paired bootstrap of a mean difference of per-example scores
(`calculators.evaluation.bootstrap`): its degenerate cases worked by hand, its agreement
with the normal theory of a mean on many examples (the paired t test of SciPy where
installed), its determinism and symmetry, and its bounds."""

from __future__ import annotations

import math
import random
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculators.errors import InputError
from calculators.evaluation.bootstrap import (
    MAX_DRAWS,
    MAX_RESAMPLES,
    MIN_RESAMPLES,
    PairedScores,
    paired_bootstrap,
)


def scores(a, b) -> PairedScores:
    return PairedScores(a_scores=tuple(a), b_scores=tuple(b))


def test_a_constant_difference_has_a_zero_width_interval_and_the_smallest_p():
    # every resample of d_i = 0.25 has mean 0.25: |m - d| = 0 < 0.25 in all B, p = 1/(B+1)
    r = paired_bootstrap(scores([0.5] * 40, [0.75] * 40), resamples=999)
    assert r.mean_difference == 0.25
    assert r.low == r.high == 0.25
    assert r.p_value == 1 / 1000
    assert r.b_better_share == 1.0


def test_no_difference_gives_p_one():
    r = paired_bootstrap(scores([0.1, 0.4, 0.9], [0.1, 0.4, 0.9]), resamples=200)
    assert r.mean_difference == 0.0 and r.p_value == 1.0
    assert r.low == r.high == 0.0 and r.b_better_share == 0.0


def test_means_are_the_two_columns_means():
    r = paired_bootstrap(scores([0.0, 0.5, 1.0, 0.5], [1.0, 1.0, 0.5, 0.5]), resamples=100)
    assert (r.mean_a, r.mean_b, r.mean_difference) == (0.5, 0.75, 0.25)


def _normal_sample(n: int, shift: float, seed: int) -> tuple[list[float], list[float]]:
    rng = random.Random(seed)
    a = [rng.random() for _ in range(n)]
    b = [x + shift + rng.gauss(0, 0.3) for x in a]
    return a, b


def test_interval_agrees_with_the_normal_theory_on_many_examples():
    # for n = 800 the mean difference is close to normal: the percentile interval is
    # near d -+ 1.96 s / sqrt(n), to the Monte Carlo error of 10,000 resamples
    a, b = _normal_sample(800, 0.02, seed=3)
    r = paired_bootstrap(scores(a, b), resamples=10_000, seed=1)
    d = [y - x for x, y in zip(a, b, strict=True)]
    half = 1.959964 * statistics.stdev(d) / math.sqrt(len(d))
    assert r.low == pytest.approx(r.mean_difference - half, abs=0.1 * half)
    assert r.high == pytest.approx(r.mean_difference + half, abs=0.1 * half)


def test_p_value_agrees_with_the_paired_t_test_where_scipy_is_installed():
    stats = pytest.importorskip("scipy.stats")
    for shift, seed in ((0.03, 5), (0.0, 6), (0.05, 7)):
        a, b = _normal_sample(600, shift, seed=seed)
        r = paired_bootstrap(scores(a, b), resamples=10_000, seed=2)
        t = stats.ttest_rel(b, a).pvalue
        # Monte Carlo error of p: sqrt(p (1 - p) / B) <= 0.005
        assert r.p_value == pytest.approx(t, abs=0.02 + 0.1 * t)


def test_same_seed_same_digits_another_seed_other_digits():
    a, b = _normal_sample(100, 0.01, seed=9)
    one = paired_bootstrap(scores(a, b), resamples=500, seed=11)
    assert paired_bootstrap(scores(a, b), resamples=500, seed=11) == one
    other = paired_bootstrap(scores(a, b), resamples=500, seed=12)
    assert (other.low, other.high) != (one.low, one.high)


SCORES = st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=2, max_size=60).map(
    lambda pairs: ([x for x, _ in pairs], [y for _, y in pairs])
)


@settings(max_examples=100, deadline=None)
@given(SCORES, st.integers(0, 2**32 - 1))
def test_interval_is_ordered_and_p_in_range(pair, seed):
    a, b = pair
    r = paired_bootstrap(scores(a, b), resamples=MIN_RESAMPLES, seed=seed)
    assert r.low <= r.high
    assert min(y - x for x, y in zip(a, b, strict=True)) - 1e-12 <= r.low
    assert r.high <= max(y - x for x, y in zip(a, b, strict=True)) + 1e-12
    assert 1 / (MIN_RESAMPLES + 1) <= r.p_value <= 1
    assert 0 <= r.b_better_share <= 1


@settings(max_examples=100, deadline=None)
@given(SCORES, st.integers(0, 1000))
def test_swapping_a_and_b_mirrors_the_result(pair, seed):
    # the same seed draws the same examples; negation is exact in floating point
    a, b = pair
    r = paired_bootstrap(scores(a, b), resamples=MIN_RESAMPLES, seed=seed)
    m = paired_bootstrap(scores(b, a), resamples=MIN_RESAMPLES, seed=seed)
    assert (m.low, m.high) == (-r.high, -r.low)
    assert m.p_value == r.p_value


def test_bounds_name_the_input_and_the_limit():
    ok = scores([0.1, 0.2], [0.3, 0.4])
    with pytest.raises(InputError, match=f"between {MIN_RESAMPLES:,} and {MAX_RESAMPLES:,}"):
        paired_bootstrap(ok, resamples=MIN_RESAMPLES - 1)
    with pytest.raises(InputError, match="resamples must be between"):
        paired_bootstrap(ok, resamples=MAX_RESAMPLES + 1)
    n = MAX_DRAWS // MAX_RESAMPLES + 1
    big = scores([0.0] * n, [1.0] * n)
    with pytest.raises(InputError, match=f"above the limit of {MAX_DRAWS:,}") as e:
        paired_bootstrap(big, resamples=MAX_RESAMPLES)
    assert e.value.field == "resamples"
    n = MAX_DRAWS // MIN_RESAMPLES + 1
    with pytest.raises(InputError, match="compare a random sample") as e:
        paired_bootstrap(scores([0.0] * n, [1.0] * n), resamples=MIN_RESAMPLES)
    assert e.value.field == "a_scores"
    with pytest.raises(InputError, match="seed must be"):
        paired_bootstrap(ok, seed=-1)
    with pytest.raises(InputError, match="b_scores has 1 scores for 2"):
        scores([0.1, 0.2], [0.3])
    with pytest.raises(InputError, match="at least 2"):
        scores([0.1], [0.3])
    with pytest.raises(InputError, match="finite numbers, got nan at position 2"):
        scores([0.1, float("nan")], [0.3, 0.2])
    with pytest.raises(InputError, match="finite numbers, got True"):
        scores([True, 0.1], [0.3, 0.2])
