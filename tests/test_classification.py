"""Classification scores: accuracy, confusion matrix, per-class precision/recall/F1,
macro and micro F1.

Pinned values come from scikit-learn's documented examples (the docstrings of
`sklearn.metrics.precision_recall_fscore_support`, `f1_score` and `confusion_matrix`,
scikit-learn 1.9), each worked by hand in the test. The cross-checks against
scikit-learn itself skip where it is not installed (the Pyodide run).
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculators.errors import InputError
from calculators.evaluation.classification import (
    MAX_LABELS,
    LabelledPredictions,
    class_scores,
    classification_scores,
    confusion_matrix,
    label_set,
    macro_f1,
    micro_f1,
)

# scikit-learn, precision_recall_fscore_support docstring
SK_TRUE = ("cat", "dog", "pig", "cat", "dog", "pig")
SK_PRED = ("cat", "pig", "dog", "cat", "cat", "dog")


def scores(reference, predicted):
    return classification_scores(
        LabelledPredictions(reference=tuple(reference), predicted=tuple(predicted))
    )


def test_scikit_learn_docstring_example_per_class_and_averages():
    s = scores(SK_TRUE, SK_PRED)
    # By hand: cat is predicted 3 times, right twice (P 2/3), and found in both of its
    # examples (R 1, F1 2*2/(2*2+1+0) = 0.8); dog and pig are never right (0, 0, 0).
    # The docstring prints (0.66, 1, 0.8) for cat and 0 for pig and dog, support 2 each.
    assert s.per_class["cat"].precision == pytest.approx(2 / 3)
    assert s.per_class["cat"].recall == 1.0
    assert s.per_class["cat"].f1 == pytest.approx(0.8)
    for label in ("dog", "pig"):
        assert (s.per_class[label].precision, s.per_class[label].recall) == (0.0, 0.0)
        assert s.per_class[label].f1 == 0.0
    assert [s.per_class[k].support for k in ("cat", "dog", "pig")] == [2, 2, 2]
    # average='macro' prints (0.222, 0.333, 0.267): 0.8 / 3 for F1
    assert s.macro_f1 == pytest.approx(0.8 / 3)
    assert round(s.macro_f1, 3) == 0.267
    # average='micro' prints 0.33: 2 right of 6
    assert s.micro_f1 == pytest.approx(1 / 3)
    assert s.accuracy == pytest.approx(1 / 3)
    assert s.correct == 2


def test_f1_score_docstring_example_with_integer_labels_as_text():
    # f1_score docstring: y_true [0, 1, 2, 0, 1, 2], y_pred [0, 2, 1, 0, 0, 1]:
    # macro 0.267, micro 0.33, per class [0.8, 0, 0]
    s = scores("012012", "021001")
    assert [round(s.per_class[k].f1, 3) for k in "012"] == [0.8, 0.0, 0.0]
    assert round(s.macro_f1, 3) == 0.267
    assert round(s.micro_f1, 2) == 0.33


def test_confusion_matrix_docstring_example():
    # confusion_matrix docstring, labels ["ant", "bird", "cat"]: [[2,0,0],[0,0,1],[1,0,2]]
    c = confusion_matrix(
        LabelledPredictions(
            reference=("cat", "ant", "cat", "cat", "ant", "bird"),
            predicted=("ant", "ant", "cat", "cat", "ant", "cat"),
        )
    )
    assert c.labels == ("ant", "bird", "cat")
    assert c.matrix == ((2, 0, 0), (0, 0, 1), (1, 0, 2))


def test_a_class_never_predicted_has_precision_zero():
    # 'b' is never predicted: TP + FP = 0, precision 0 (zero_division=0), recall 0/1
    s = scores(("a", "b"), ("a", "a"))
    assert s.per_class["b"].precision == 0.0
    assert s.per_class["b"].recall == 0.0
    assert s.per_class["b"].f1 == 0.0
    # 'a': predicted twice, right once (P 1/2), R 1, F1 2/(2+1+0) = 2/3
    assert s.per_class["a"].precision == 0.5
    assert s.per_class["a"].f1 == pytest.approx(2 / 3)
    assert s.macro_f1 == pytest.approx(1 / 3)


def test_a_label_only_predicted_counts_in_the_macro_average_with_support_zero():
    # 'x' is not a reference label: support 0, F1 0, and macro averages over 3 classes
    s = scores(("a", "b", "b"), ("a", "b", "x"))
    assert s.confusion.labels == ("a", "b", "x")
    assert s.per_class["x"].support == 0
    assert s.per_class["x"].f1 == 0.0
    # a: F1 1; b: P 1, R 1/2, F1 2/(2+0+1) = 2/3; x: 0
    assert s.macro_f1 == pytest.approx((1 + 2 / 3 + 0) / 3)


def test_labels_sort_as_strings():
    assert label_set(("9", "10", "2")) == ("10", "2", "9")
    c = confusion_matrix(LabelledPredictions(reference=("9", "10"), predicted=("10", "10")))
    assert c.labels == ("10", "9")
    assert c.matrix == ((1, 0), (1, 0))


def test_an_empty_prediction_is_a_label_of_its_own():
    s = scores(("a", "a"), ("a", ""))
    assert s.confusion.labels == ("", "a")
    assert s.accuracy == 0.5


@pytest.mark.parametrize(
    ("reference", "predicted", "words"),
    [
        (("a",), ("a", "b"), "2 predictions for 1 reference"),
        ((), (), "no examples"),
        (("a", 1), ("a", "a"), "is not a string"),
    ],
)
def test_bad_inputs_are_refused(reference, predicted, words):
    with pytest.raises(InputError, match=words):
        LabelledPredictions(reference=reference, predicted=predicted)


def test_too_many_labels_are_refused_before_any_matrix_is_built():
    labels = tuple(str(i) for i in range(MAX_LABELS + 1))
    with pytest.raises(InputError, match=f"{MAX_LABELS + 1:,} distinct labels"):
        LabelledPredictions(reference=labels, predicted=labels)
    ok = labels[:MAX_LABELS]
    assert scores(ok, ok).accuracy == 1.0


LABELS = st.sampled_from(["a", "b", "c", "d", "10", "9", ""])


@st.composite
def labelled(draw):
    n = draw(st.integers(min_value=1, max_value=40))
    reference = draw(st.lists(LABELS.filter(bool), min_size=n, max_size=n))
    predicted = draw(st.lists(LABELS, min_size=n, max_size=n))
    return tuple(reference), tuple(predicted)


@settings(max_examples=200, deadline=None)
@given(labelled())
def test_invariants(data):
    reference, predicted = data
    s = scores(reference, predicted)
    n = len(reference)
    matrix = s.confusion.matrix
    assert sum(map(sum, matrix)) == n
    for label, row in zip(s.confusion.labels, matrix, strict=True):
        assert sum(row) == s.per_class[label].support == reference.count(label)
    for c in s.per_class.values():
        assert 0 <= c.precision <= 1 and 0 <= c.recall <= 1 and 0 <= c.f1 <= 1
    assert 0 <= s.macro_f1 <= 1
    # one label per example: every error is one FP and one FN, so micro F1 = accuracy
    assert s.micro_f1 == pytest.approx(s.accuracy)
    assert s.accuracy == pytest.approx(sum(r == p for r, p in zip(*data, strict=True)) / n)


@settings(max_examples=100, deadline=None)
@given(labelled(), st.randoms(use_true_random=False))
def test_permuting_rows_changes_nothing(data, rnd):
    order = list(range(len(data[0])))
    rnd.shuffle(order)
    shuffled = tuple(data[0][i] for i in order), tuple(data[1][i] for i in order)
    assert scores(*shuffled) == scores(*data)


def test_macro_and_micro_from_a_matrix_directly():
    c = confusion_matrix(LabelledPredictions(reference=SK_TRUE, predicted=SK_PRED))
    assert macro_f1(class_scores(c)) == pytest.approx(0.8 / 3)
    assert micro_f1(c) == pytest.approx(1 / 3)


def test_matches_scikit_learn_on_random_labels():
    metrics = pytest.importorskip("sklearn.metrics")
    rnd = random.Random(13)
    for _ in range(30):
        n = rnd.randint(1, 60)
        reference = tuple(rnd.choice("abcde") for _ in range(n))
        predicted = tuple(rnd.choice("abcdef") for _ in range(n))
        s = scores(reference, predicted)
        labels = list(s.confusion.labels)
        p, r, f, support = metrics.precision_recall_fscore_support(
            reference, predicted, labels=labels, zero_division=0
        )
        for i, label in enumerate(labels):
            c = s.per_class[label]
            assert (c.precision, c.recall, c.f1) == pytest.approx((p[i], r[i], f[i]))
            assert c.support == support[i]
        assert s.macro_f1 == pytest.approx(
            metrics.f1_score(reference, predicted, average="macro", zero_division=0)
        )
        assert s.micro_f1 == pytest.approx(
            metrics.f1_score(reference, predicted, average="micro", zero_division=0)
        )
        assert [list(row) for row in s.confusion.matrix] == metrics.confusion_matrix(
            reference, predicted, labels=labels
        ).tolist()
