"""Error taxonomy: each tag's share of the baseline's errors, the ceiling on the gain,
and after a fix the errors fixed, remaining and new.

Pinned examples: A. Ng, Machine Learning Yearning (draft, 2018), chapter 14 (p. 30: 5% of
the errors of a 90%-accurate system are dogs, so fixing dogs gives at best 90.5%) and
chapter 15 (p. 33: one image may fall in several categories, so the shares, 8%, 43% and
61% in its table, add up to more than 100%). The rest is counted by hand in the tests,
the ranking of the next experiment by ceiling per GPU-hour included.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculators.errors import InputError
from calculators.evaluation.taxonomy import (
    MAX_EXPERIMENT_GPU_HOURS,
    MAX_TAGS,
    UNTAGGED,
    ExperimentCosts,
    TaggedOutcomes,
    ceiling_per_gpu_hour,
    error_taxonomy,
    experiment_ranking,
    split_tags,
)
from calculators.limits import MAX_GPU_HOURS_PER_RUN


def by_tag(taxonomy):
    return {t.tag: t for t in taxonomy.tags}


def test_ng_chapter_14_dogs_ceiling():
    # 1,000 dev examples at 90% accuracy: 100 errors, 5 of them dogs
    a_correct = (True,) * 900 + (False,) * 100
    tags = ((),) * 900 + (("dog",),) * 5 + ((),) * 95
    t = error_taxonomy(TaggedOutcomes(a_correct=a_correct, tags=tags))
    dog = by_tag(t)["dog"]
    assert (t.a_errors, dog.errors) == (100, 5)
    assert dog.share == pytest.approx(0.05)
    # the ceiling: 5 / 1000 = 0.005 of accuracy, so 90% -> 90.5% at best
    assert dog.ceiling == pytest.approx(0.005)
    assert 0.9 + dog.ceiling == pytest.approx(0.905)
    assert by_tag(t)[UNTAGGED].errors == 95
    assert t.tagged_errors == 5
    assert t.new_errors is None and dog.fixed is None


def test_ng_chapter_15_several_categories_per_example():
    # 100 errors: 8 dog, 43 great cat, 61 blurry, with overlaps (shares sum to 112%)
    tags = (
        [("dog",)] * 8
        + [("great cat", "blurry")] * 20
        + [("great cat",)] * 23
        + [("blurry",)] * 41
        + [()] * 8
    )
    t = error_taxonomy(TaggedOutcomes(a_correct=(False,) * 100, tags=tuple(tags)))
    shares = {tag: round(v.share, 2) for tag, v in by_tag(t).items()}
    assert shares == {"dog": 0.08, "great cat": 0.43, "blurry": 0.61, UNTAGGED: 0.08}
    assert sum(v.errors for v in t.tags) == 120 > t.a_errors == 100
    # most errors first, ties by name ("(" sorts before letters)
    assert [v.tag for v in t.tags] == ["blurry", "great cat", UNTAGGED, "dog"]


def test_after_a_fix_by_hand():
    # rows:          0      1      2      3      4      5
    a_correct = (False, False, False, True, True, False)
    b_correct = (True, False, True, False, False, False)
    tags = (("x",), ("x", "y"), ("y",), (), ("y",), ())
    t = error_taxonomy(TaggedOutcomes(a_correct=a_correct, tags=tags, b_correct=b_correct))
    x, y, none = by_tag(t)["x"], by_tag(t)["y"], by_tag(t)[UNTAGGED]
    # x: rows 0 (fixed), 1 (remains); y: rows 1 (remains), 2 (fixed); untagged: row 5
    assert (x.errors, x.fixed, x.remaining) == (2, 1, 1)
    assert (y.errors, y.fixed, y.remaining) == (2, 1, 1)
    assert (none.errors, none.fixed, none.remaining) == (1, 0, 1)
    # new errors of b: rows 3 (no tag) and 4 (tag y, written for b's error there)
    assert t.new_errors == 2
    assert t.new_errors_by_tag == {UNTAGGED: 1, "y": 1}
    assert t.a_errors == 4 and t.tagged_errors == 3


def test_a_tag_on_a_row_both_get_right_is_not_counted():
    t = error_taxonomy(
        TaggedOutcomes(a_correct=(True, False), tags=(("x",), ()), b_correct=(True, True))
    )
    assert [v.tag for v in t.tags] == [UNTAGGED]
    assert t.new_errors == 0 and t.new_errors_by_tag == {}


def test_split_tags():
    assert split_tags("blurry; dog;blurry") == ("blurry", "dog")
    assert split_tags(" ; ") == ()
    assert split_tags("") == ()
    assert split_tags("a b") == ("a b",)


def test_no_errors_no_tags():
    t = error_taxonomy(TaggedOutcomes(a_correct=(True, True), tags=(("x",), ())))
    assert t.a_errors == 0 and t.tags == ()


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"a_correct": (), "tags": ()}, "no examples"),
        ({"a_correct": (True,), "tags": ()}, "0 rows for 1"),
        ({"a_correct": (True,), "tags": ((),), "b_correct": ()}, "0 rows for 1"),
        ({"a_correct": (True,), "tags": (("",),)}, "is not a tag"),
    ],
)
def test_bad_inputs(kwargs, words):
    with pytest.raises(InputError, match=words):
        TaggedOutcomes(**kwargs)


def test_too_many_tags():
    tags = tuple((f"t{i}",) for i in range(MAX_TAGS + 1))
    with pytest.raises(InputError, match="distinct tags"):
        TaggedOutcomes(a_correct=(False,) * len(tags), tags=tags)


ROWS = st.lists(
    st.tuples(
        st.booleans(),
        st.booleans(),
        st.lists(st.sampled_from(["p", "q", "r"]), max_size=2, unique=True).map(tuple),
    ),
    min_size=1,
    max_size=120,
)


@settings(max_examples=200, deadline=None)
@given(ROWS)
def test_balances_add_up(rows):
    a = tuple(r[0] for r in rows)
    b = tuple(r[1] for r in rows)
    tags = tuple(r[2] for r in rows)
    t = error_taxonomy(TaggedOutcomes(a_correct=a, tags=tags, b_correct=b))
    n = len(rows)
    assert t.a_errors == a.count(False)
    for v in t.tags:
        assert v.fixed + v.remaining == v.errors
        assert v.ceiling == pytest.approx(v.errors / n)
        assert 0 < v.share <= 1
    # every error of a is in at least one tag (UNTAGGED included), in several at most
    # as many as it has tags
    assert t.a_errors <= sum(v.errors for v in t.tags)
    assert t.new_errors == sum(1 for x, y in zip(a, b, strict=True) if x and not y)
    assert t.new_errors <= sum(t.new_errors_by_tag.values())


@settings(max_examples=100, deadline=None)
@given(ROWS, st.randoms(use_true_random=False))
def test_permuting_rows_changes_nothing(rows, rnd):
    shuffled = list(rows)
    rnd.shuffle(shuffled)

    def result(rs):
        return error_taxonomy(
            TaggedOutcomes(
                a_correct=tuple(r[0] for r in rs),
                tags=tuple(r[2] for r in rs),
                b_correct=tuple(r[1] for r in rs),
            )
        )

    assert result(shuffled) == result(rows)


# ---- ranking the next experiment by ceiling per GPU-hour -------------------------------


def taxonomy_of(counts: dict[str, int], n: int):
    """A taxonomy of n examples whose errors carry the tags `counts` says, one tag each."""
    tags = [(tag,) for tag, k in counts.items() for _ in range(k)]
    a_correct = (False,) * len(tags) + (True,) * (n - len(tags))
    return error_taxonomy(
        TaggedOutcomes(a_correct=a_correct, tags=tuple(tags) + ((),) * (n - len(tags)))
    )


def costs(**hours):
    return ExperimentCosts(gpu_hours=tuple(hours.items()))


def test_ng_dogs_per_gpu_hour():
    # Ng's chapter 14: 5 dog errors of 1,000 examples, a ceiling of 0.005; an experiment
    # of 10 GPU-hours buys at most 0.005 / 10 = 0.0005 of accuracy per GPU-hour
    t = taxonomy_of({"dog": 5, "other": 95}, 1000)
    (dog,) = experiment_ranking(t, costs(dog=10.0))
    assert (dog.tag, dog.ceiling, dog.gpu_hours, dog.rank) == ("dog", 0.005, 10.0, 1)
    assert dog.ceiling_per_gpu_hour == pytest.approx(0.0005)
    assert ceiling_per_gpu_hour(0.005, 10.0) == pytest.approx(0.0005)


def test_ranking_by_hand_with_a_tie():
    # 10 examples; errors: x 4, y 2, z 1, w 1 (ceilings 0.4, 0.2, 0.1, 0.1)
    t = taxonomy_of({"x": 4, "y": 2, "z": 1, "w": 1}, 10)
    ranking = experiment_ranking(t, costs(x=8, y=2, z=1))
    # per GPU-hour: x 0.4 / 8 = 0.05, y 0.2 / 2 = 0.1, z 0.1 / 1 = 0.1: y and z tie, y
    # has the larger ceiling; w has no cost and is not ranked
    assert [(r.rank, r.tag) for r in ranking] == [(1, "y"), (2, "z"), (3, "x")]
    assert [r.ceiling_per_gpu_hour for r in ranking] == pytest.approx([0.1, 0.1, 0.05])
    assert [r.gpu_hours for r in ranking] == [2.0, 1.0, 8.0]
    # the cheap fix of a small category (y) comes before the costly fix of the largest (x)
    assert max(t.tags, key=lambda v: v.errors).tag == "x"


def test_a_full_tie_is_ordered_by_tag():
    t = taxonomy_of({"b": 3, "a": 3}, 9)
    assert [r.tag for r in experiment_ranking(t, costs(b=1.5, a=1.5))] == ["a", "b"]


def test_untagged_errors_may_carry_a_cost():
    t = error_taxonomy(TaggedOutcomes(a_correct=(False, False, True), tags=((), ("x",), ())))
    ranking = experiment_ranking(t, ExperimentCosts(gpu_hours=((UNTAGGED, 2.0), ("x", 1.0))))
    # both ceilings are 1/3: x for 1 GPU-hour comes first
    assert [r.tag for r in ranking] == ["x", UNTAGGED]
    assert ranking[1].ceiling_per_gpu_hour == pytest.approx(1 / 6)


def test_the_bound_is_the_budget_calculators_per_run_bound():
    assert MAX_EXPERIMENT_GPU_HOURS == MAX_GPU_HOURS_PER_RUN
    t = taxonomy_of({"x": 1}, 2)
    (r,) = experiment_ranking(t, costs(x=MAX_EXPERIMENT_GPU_HOURS))
    assert r.ceiling_per_gpu_hour == pytest.approx(0.5 / MAX_EXPERIMENT_GPU_HOURS)


@pytest.mark.parametrize(
    ("pairs", "words"),
    [
        ((("x", 0.0),), "> 0 and at most 1,000,000,000, got 0.0"),
        ((("x", -1),), "got -1"),
        ((("x", float("inf")),), "got inf"),
        ((("x", float("nan")),), "got nan"),
        ((("x", True),), "got True"),
        ((("x", "3"),), "got '3'"),
        ((("x", MAX_EXPERIMENT_GPU_HOURS * 1.5),), "got 1500000000.0"),
        ((("x", 1.0), ("x", 2.0)), "tag 'x' twice"),
        (((" ", 1.0),), "not a tag"),
    ],
)
def test_bad_costs(pairs, words):
    with pytest.raises(InputError, match=re.escape(words)) as e:
        ExperimentCosts(gpu_hours=pairs)
    assert e.value.field == "cost" and str(e.value).startswith("cost")


def test_a_cost_for_a_tag_not_in_the_taxonomy_lists_the_known_tags():
    t = taxonomy_of({"x": 2, "y": 1}, 5)
    with pytest.raises(InputError, match=r"'nope'.*known tags: 'x', 'y'$") as e:
        experiment_ranking(t, costs(nope=1.0))
    assert e.value.field == "cost"
    many = taxonomy_of({f"t{i:02d}": 1 for i in range(13)}, 20)
    with pytest.raises(InputError, match=r"'t09' and 3 more$"):
        experiment_ranking(many, costs(nope=1.0))
    clean = taxonomy_of({}, 3)
    with pytest.raises(InputError, match="carry no tag"):
        experiment_ranking(clean, costs(x=1.0))


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["p", "q", "r", "s", "t"]), st.integers(1, 30), min_size=1, max_size=5
    ),
    st.integers(0, 50),
    st.data(),
)
def test_the_ranking_is_sorted_and_each_ratio_gives_back_its_ceiling(counts, right, data):
    t = taxonomy_of(counts, sum(counts.values()) + right)
    costed = data.draw(st.lists(st.sampled_from(sorted(counts)), min_size=1, unique=True))
    hours = st.floats(1e-3, 1e6, allow_nan=False) | st.integers(1, 10_000)
    pairs = tuple((tag, data.draw(hours)) for tag in costed)
    ranking = experiment_ranking(t, ExperimentCosts(gpu_hours=pairs))
    assert sorted(r.tag for r in ranking) == sorted(costed)
    assert [r.rank for r in ranking] == list(range(1, len(costed) + 1))
    keys = [(-r.ceiling_per_gpu_hour, -r.ceiling, r.tag) for r in ranking]
    assert keys == sorted(keys)
    ceilings = {v.tag: v.ceiling for v in t.tags}
    for r in ranking:
        assert r.ceiling == ceilings[r.tag]
        assert r.ceiling_per_gpu_hour * r.gpu_hours == pytest.approx(r.ceiling, rel=1e-12)
