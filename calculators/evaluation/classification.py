"""Classification scores of one model's predictions against the reference labels.

Labels are strings: a CSV cell is read as text, and a JSON number in a .jsonl file is
turned into its text by the command before it gets here (17 is "17"). They are sorted
as strings, so "10" sorts before "9"; the order only arranges the confusion matrix and
the per-class table, no score depends on it.

The label set of a model is the union of the labels in the reference and in that
model's predictions, as scikit-learn's `unique_labels(y_true, y_pred)` makes it: a label
the model predicts that the reference never holds is a class with support 0, precision
0 and F1 0, and it counts in the macro average, as in scikit-learn.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from math import fsum

from calculators.errors import InputError, shown
from calculators.progress import report

__all__ = [
    "MAX_LABELS",
    "ClassScores",
    "ClassificationScores",
    "ConfusionMatrix",
    "LabelledPredictions",
    "accuracy",
    "class_scores",
    "classification_scores",
    "confusion_matrix",
    "label_set",
    "macro_f1",
    "micro_f1",
]

# Distinct labels a file may hold (reference and predictions together): the confusion
# matrix holds the square of this many counts, a million at most.
MAX_LABELS = 1_000


@dataclass(frozen=True, kw_only=True)
class LabelledPredictions:
    """One model's predictions with the reference, row by row.

    reference: the reference label of each example.
    predicted: the model's label of each example, in the same order.
    field:     the input to blame for a bad value (the command names its file here).
    """

    reference: tuple[str, ...]
    predicted: tuple[str, ...]
    field: str = "predicted"

    def __post_init__(self) -> None:
        if len(self.reference) != len(self.predicted):
            raise InputError(
                self.field,
                f"{self.field} has {len(self.predicted):,} predictions for "
                f"{len(self.reference):,} reference labels: they must be as many",
            )
        if not self.reference:
            raise InputError(self.field, f"{self.field} has no examples: at least 1 is needed")
        for name, values in (("reference", self.reference), ("predicted", self.predicted)):
            bad = next((v for v in values if not isinstance(v, str)), None)
            if bad is not None:
                raise InputError(
                    self.field, f"{self.field}: the {name} label {shown(bad)} is not a string"
                )
        count = len(label_set(self.reference, self.predicted))
        if count > MAX_LABELS:
            raise InputError(
                self.field,
                f"{self.field} has {count:,} distinct labels, above the limit of "
                f"{MAX_LABELS:,} (the confusion matrix holds the square of that many counts)",
            )


@dataclass(frozen=True)
class ConfusionMatrix:
    """Counts of (reference, prediction) pairs: `matrix[i][j]` examples whose reference
    is `labels[i]` were predicted as `labels[j]`. Rows are the reference."""

    labels: tuple[str, ...]
    matrix: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class ClassScores:
    """One class's precision, recall and F1 (each 0 where its denominator is 0, as
    scikit-learn's `zero_division=0`), and its support (examples with that reference)."""

    precision: float
    recall: float
    f1: float
    support: int


@dataclass(frozen=True)
class ClassificationScores:
    """Everything `classification_scores` gives for one model."""

    n: int
    correct: int
    accuracy: float
    macro_f1: float
    micro_f1: float
    confusion: ConfusionMatrix
    per_class: dict[str, ClassScores]


def label_set(*columns: tuple[str, ...]) -> tuple[str, ...]:
    """The distinct labels of the columns, sorted as strings."""
    seen: set[str] = set()
    for column in columns:
        seen.update(column)
    return tuple(sorted(seen))


def accuracy(p: LabelledPredictions) -> float:
    """Share of examples whose prediction equals the reference: correct / n."""
    correct = sum(1 for r, q in zip(p.reference, p.predicted, strict=True) if r == q)
    return correct / len(p.reference)


def confusion_matrix(p: LabelledPredictions) -> ConfusionMatrix:
    """The confusion matrix over `label_set(reference, predicted)`: rows are the
    reference, columns the prediction (scikit-learn's `confusion_matrix` convention:
    C[i][j] counts examples known to be in class i and predicted in class j)."""
    labels = label_set(p.reference, p.predicted)
    index = {label: i for i, label in enumerate(labels)}
    rows = [[0] * len(labels) for _ in labels]
    pairs = Counter(zip(p.reference, p.predicted, strict=True))
    for done, ((r, q), count) in enumerate(pairs.items()):
        rows[index[r]][index[q]] = count
        if done % 10_000 == 9_999:  # a million distinct pairs at most
            report(done + 1, len(pairs), "confusion matrix")
    return ConfusionMatrix(labels, tuple(tuple(row) for row in rows))


def _ratio(part: int, whole: int) -> float:
    """part / whole, 0 where whole is 0 (scikit-learn's zero_division=0)."""
    return part / whole if whole else 0.0


def class_scores(c: ConfusionMatrix) -> dict[str, ClassScores]:
    """Per class k, from the confusion matrix C:

        TP = C[k][k]   FP = sum_i C[i][k] - TP   FN = sum_j C[k][j] - TP
        precision = TP / (TP + FP)   recall = TP / (TP + FN)
        F1 = 2 TP / (2 TP + FP + FN)   (the harmonic mean of precision and recall)
        support = TP + FN

    A ratio whose denominator is 0 is 0: a class never predicted has precision 0, as
    scikit-learn's `precision_recall_fscore_support(..., zero_division=0)`.
    Source: scikit-learn, `sklearn.metrics.precision_recall_fscore_support`.
    """
    k = len(c.labels)
    column_sums = [sum(c.matrix[i][j] for i in range(k)) for j in range(k)]
    out: dict[str, ClassScores] = {}
    for i, label in enumerate(c.labels):
        tp = c.matrix[i][i]
        support = sum(c.matrix[i])
        fp, fn = column_sums[i] - tp, support - tp
        out[label] = ClassScores(
            precision=_ratio(tp, tp + fp),
            recall=_ratio(tp, support),
            f1=_ratio(2 * tp, 2 * tp + fp + fn),
            support=support,
        )
    return out


def macro_f1(scores: dict[str, ClassScores]) -> float:
    """The unweighted mean of the per-class F1 over every class of the label set
    (scikit-learn's `f1_score(..., average="macro")`). Summed with math.fsum, correctly
    rounded: Python 3.12 changed how sum() adds floats, and the page's Python (Pyodide,
    3.14) must give the command line's digits."""
    return fsum(s.f1 for s in scores.values()) / len(scores) if scores else 0.0


def micro_f1(c: ConfusionMatrix) -> float:
    """F1 of the counts summed over classes: 2 TP / (2 TP + FP + FN) with TP the trace
    of C and FP = FN = the off-diagonal sum. With one label per example every error is
    one FP (of the predicted class) and one FN (of the reference class), so micro F1
    equals accuracy (scikit-learn's `f1_score(..., average="micro")`)."""
    tp = sum(c.matrix[i][i] for i in range(len(c.labels)))
    total = sum(sum(row) for row in c.matrix)
    wrong = total - tp
    return _ratio(2 * tp, 2 * tp + 2 * wrong)


def classification_scores(p: LabelledPredictions) -> ClassificationScores:
    """Accuracy, the confusion matrix, per-class scores, macro and micro F1 of one model."""
    c = confusion_matrix(p)
    scores = class_scores(c)
    correct = sum(c.matrix[i][i] for i in range(len(c.labels)))
    return ClassificationScores(
        n=len(p.reference),
        correct=correct,
        accuracy=correct / len(p.reference),
        macro_f1=macro_f1(scores),
        micro_f1=micro_f1(c),
        confusion=c,
        per_class=scores,
    )
