"""The expected best of n trials (Dodge et al. 2019, section 3): by hand, against the
paper's sum computed exactly, properties and bounds."""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import pairwise
from statistics import fmean

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculators.errors import InputError
from calculators.statistics.expected_max import MAX_TRIALS, Trials, expected_max


def dodge_sum(scores: list[float], n: int) -> Fraction:
    """Dodge et al.'s sum as written, exactly: Σ_j v_j (F(v_j)^n - F(v_{j-1})^n) over the
    distinct scores, F the empirical distribution function."""
    values = sorted(set(scores))
    total = len(scores)
    out, before = Fraction(0), Fraction(0)
    for v in values:
        f = Fraction(sum(s <= v for s in scores), total)
        out += Fraction(v) * (f**n - before**n)
        before = f
    return out


def test_four_trials_by_hand():
    # scores 0.5, 0.7, 0.7, 0.9: distinct values 0.5, 0.7, 0.9 with F = 1/4, 3/4, 1
    # n = 1: the mean, (0.5 + 0.7 + 0.7 + 0.9) / 4 = 0.7
    # n = 2: 0.5 (1/16) + 0.7 (9/16 - 1/16) + 0.9 (1 - 9/16)
    #      = 0.03125 + 0.35 + 0.39375 = 0.775
    # n = 3: 0.5 (1/64) + 0.7 (27/64 - 1/64) + 0.9 (1 - 27/64)
    #      = 0.0078125 + 0.284375 + 0.5203125 = 0.8125
    # n = 4: 0.5 (1/256) + 0.7 (81/256 - 1/256) + 0.9 (1 - 81/256)
    #      = 0.001953125 + 0.21875 + 0.615234375 = 0.8359375
    got = expected_max(Trials(scores=(0.7, 0.5, 0.9, 0.7)))
    assert got == pytest.approx((0.7, 0.775, 0.8125, 0.8359375), abs=1e-15)


def test_two_trials_by_hand():
    # 0 and 1: the best of n draws is 0 only if all n are 0, (1/2)^n: E = 1 - 2^-n
    got = expected_max(Trials(scores=(1.0, 0.0)))
    assert got == (0.5, 0.75)


def test_one_trial_and_equal_trials():
    assert expected_max(Trials(scores=(0.93,))) == (0.93,)
    assert expected_max(Trials(scores=(0.93,) * 7)) == (0.93,) * 7


scores = st.lists(
    st.floats(-1e6, 1e6, allow_nan=False).map(lambda x: 0.0 if abs(x) < 1e-200 else x),
    min_size=1,
    max_size=40,
)


@settings(max_examples=80, deadline=None)
@given(scores=scores)
def test_matches_the_papers_sum(scores):
    got = expected_max(Trials(scores=tuple(scores)))
    scale = max(abs(s) for s in scores) or 1.0
    for n in sorted({1, min(2, len(scores)), len(scores)}):
        assert got[n - 1] == pytest.approx(float(dodge_sum(scores, n)), abs=1e-12 * scale)


@settings(max_examples=80, deadline=None)
@given(scores=scores)
def test_rises_from_the_mean_to_below_the_best(scores):
    got = expected_max(Trials(scores=tuple(scores)))
    assert len(got) == len(scores)
    scale = max(abs(s) for s in scores) or 1.0
    assert got[0] == pytest.approx(fmean(scores), abs=1e-12 * scale)
    assert all(x <= y for x, y in pairwise(got))  # never falls
    assert got[-1] <= max(scores)
    assert min(scores) - 1e-12 * scale <= got[0]


@settings(max_examples=60, deadline=None)
@given(scores=scores, data=st.data())
def test_order_of_the_trials_does_not_matter(scores, data):
    shuffled = data.draw(st.permutations(scores))
    assert expected_max(Trials(scores=tuple(shuffled))) == expected_max(
        Trials(scores=tuple(scores))
    )


@settings(max_examples=40, deadline=None)
@given(scores=st.lists(st.integers(0, 1000), min_size=2, max_size=30), shift=st.integers(-5, 5))
def test_a_shift_of_every_score_shifts_the_curve(scores, shift):
    base = expected_max(Trials(scores=tuple(s / 1000 for s in scores)))
    moved = expected_max(Trials(scores=tuple(s / 1000 + shift for s in scores)))
    assert moved == pytest.approx([b + shift for b in base], abs=1e-12)


def test_approaches_the_best_with_many_trials():
    # 500 trials, one of them best: at n = 500 the chance of never drawing it is
    # (499/500)^500 ~ e^-1, so the curve sits well below the best at n = N (the bias Tang
    # et al. 2020 point out) yet above every other score
    trials = tuple(i / 1000 for i in range(500))
    got = expected_max(Trials(scores=trials))
    assert trials[-2] < got[-1] < trials[-1]
    assert len(got) == MAX_TRIALS == 500


@pytest.mark.parametrize(
    ("scores", "words"),
    [
        ((), "1 to 500 scores"),
        (tuple(0.5 for _ in range(501)), "1 to 500 scores (one per trial), got 501"),
        ((0.5, math.nan), "trials scores must be finite numbers, got nan"),
        ((0.5, math.inf), "finite numbers"),
        ((0.5, True), "finite numbers, got True"),
        ((0.5, 1e-201), "0 or of magnitude 1e-200 to 1e200, got 1e-201"),
        ((0.5, -1e201), "magnitude"),
        ("0.5,0.6", "a list of scores"),
    ],
)
def test_bad_trials_are_refused_at_their_field(scores, words):
    with pytest.raises(InputError) as e:
        Trials(scores=scores)
    assert e.value.field == "trials"
    assert str(e.value).startswith("trials")
    assert words in str(e.value)


def test_trials_are_frozen_and_kept_as_a_tuple():
    t = Trials(scores=[0.5, 0.6])
    assert t.scores == (0.5, 0.6)
    with pytest.raises(AttributeError):
        t.scores = (0.1,)  # type: ignore[misc]


def test_public_api():
    from calculators.statistics import expected_max as module

    assert sorted(module.__all__) == ["MAX_TRIALS", "Trials", "expected_max"]
