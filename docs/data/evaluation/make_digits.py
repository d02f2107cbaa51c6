"""Real predictions for the evaluation guides: two small networks trained on scikit-learn's
bundled handwritten digits, ten seeds each, and a random search of the candidate.

    python docs/data/evaluation/make_digits.py [--out DIR]   # default: next to this file

Writes, into DIR/digits/:

- `predictions.csv`: id, gold, a, b, tag for the 500 test images, from the seed-0 runs of
  both models. `id` is the image's index in `load_digits()`, `gold`, `a` and `b` are digit
  labels, `tag` an error category for each of the baseline's errors, assigned by the
  rules in `TAG_RULES` (standing in for a reviewer: the tags are NOT a person's judgement).
- `seeds.json`: `a` and `b`, the test accuracies of seeds 0-9 (same test set, paired by
  seed), and `trials`, the validation accuracies of a random search of b's learning rate
  and L2 penalty, as lists the seed calculator takes; `runs` and `search` with the
  details; and what produced them (versions, split, what a seed drives).
- `metadata.json`: what `predictions.csv` holds and how it was made.

Data: scikit-learn's copy of the test set of the UCI ML hand-written digits data (E.
Alpaydin and C. Kaynak, 1998; 1,797 images of 8x8 pixels, grey levels 0-16), shipped
inside the package, so nothing is downloaded. Models: a = MLPClassifier with one hidden
layer of 16 ReLU units, b = the same with 32 units; Adam, 200 epochs (every run reaches
that cap), inputs scaled to [0, 1]. The seed is scikit-learn's `random_state`: it draws the
initial weights and the order of the mini-batches in every epoch. The split is fixed
(stratified, `random_state=0`): 1,047 training, 250 validation and 500 test images; every
accuracy is then a multiple of 0.002 or 0.004, a short decimal a reader can type.

Every output is deterministic: no dates, fixed seeds, BLAS limited to one thread (a
threaded reduction may sum in another order from run to run), and the versions of
scikit-learn and NumPy recorded, since another version may train differently. Runs in
about 15 s on one core.
"""

from __future__ import annotations

import os

# One BLAS thread before NumPy loads: the sums then have one order on a given machine.
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
import csv  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import sklearn  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.neural_network import MLPClassifier  # noqa: E402

HERE = Path(__file__).resolve().parent
SEEDS = tuple(range(10))
TEST_SIZE = 500
VALIDATION_SIZE = 250
SPLIT_SEED = 0
HIDDEN = {"a": 16, "b": 32}
MAX_EPOCHS = 200
# The search: learning rate and L2 penalty drawn log-uniformly, b's architecture, seed 0.
TRIALS = 16
SEARCH_SEED = 2019
LEARNING_RATE_RANGE = (1e-4, 1e-1)
ALPHA_RANGE = (1e-6, 1e-1)
# The stand-in reviewer: an error (true digit g, baseline's prediction p) takes the first
# rule whose true digits hold g and whose predicted digits hold p, else "other". The rules
# name the confusions the baseline makes most on this split (thin strokes read as a 1, the
# round digits 3, 5, 8 and 9 taken for each other).
DIGITS = frozenset(range(10))
CURVES = frozenset({3, 5, 8, 9})
TAG_RULES = (
    ("read as a 1", DIGITS, frozenset({1})),
    ("curves 3/5/8/9", CURVES, CURVES),
)
OTHER = "other"


def error_tag(gold: int, predicted: int) -> str:
    """The rule's tag for an error of the baseline (see TAG_RULES)."""
    for tag, true_digits, predicted_digits in TAG_RULES:
        if gold in true_digits and predicted in predicted_digits:
            return tag
    return OTHER


def split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Pixels scaled to [0, 1], labels, and the train, validation and test indices."""
    digits = load_digits()
    x, y = digits.data / 16.0, digits.target
    index = np.arange(len(y))
    rest, test = train_test_split(index, test_size=TEST_SIZE, stratify=y, random_state=SPLIT_SEED)
    train, validation = train_test_split(
        rest, test_size=VALIDATION_SIZE, stratify=y[rest], random_state=SPLIT_SEED
    )
    return x, y, np.sort(train), np.sort(validation), np.sort(test)


def model(hidden: int, seed: int, **settings: float) -> MLPClassifier:
    return MLPClassifier(
        hidden_layer_sizes=(hidden,), max_iter=MAX_EPOCHS, random_state=seed, **settings
    )


def accuracy(correct: int, total: int) -> dict[str, int | float]:
    return {"correct": correct, "total": total, "accuracy": correct / total}


def build() -> dict[str, str]:
    """The three files' text, by name."""
    x, y, train, validation, test = split()
    runs: dict[str, list[dict[str, object]]] = {"a": [], "b": []}
    seed0: dict[str, np.ndarray] = {}
    with warnings.catch_warnings():
        # some runs stop at MAX_EPOCHS before Adam's tolerance: the cap is part of the recipe
        warnings.simplefilter("ignore", ConvergenceWarning)
        for name, hidden in HIDDEN.items():
            for seed in SEEDS:
                fitted = model(hidden, seed).fit(x[train], y[train])
                predicted = fitted.predict(x[test])
                if seed == 0:
                    seed0[name] = predicted
                runs[name].append(
                    {
                        "seed": seed,
                        "epochs": int(fitted.n_iter_),
                        **accuracy(int((predicted == y[test]).sum()), len(test)),
                    }
                )
        sampler = np.random.RandomState(SEARCH_SEED)  # the legacy generator: a fixed stream
        trials = []
        for trial in range(TRIALS):
            lr = float(10 ** sampler.uniform(*np.log10(LEARNING_RATE_RANGE)))
            alpha = float(10 ** sampler.uniform(*np.log10(ALPHA_RANGE)))
            lr, alpha = float(f"{lr:.3g}"), float(f"{alpha:.3g}")  # as a reader would log them
            fitted = model(HIDDEN["b"], 0, learning_rate_init=lr, alpha=alpha)
            fitted.fit(x[train], y[train])
            correct = int((fitted.predict(x[validation]) == y[validation]).sum())
            trials.append(
                {
                    "trial": trial + 1,
                    "learning_rate_init": lr,
                    "alpha": alpha,
                    **accuracy(correct, len(validation)),
                }
            )
    versions = {"scikit-learn": sklearn.__version__, "numpy": np.__version__}
    split_text = (
        f"stratified by digit with train_test_split(random_state={SPLIT_SEED}): "
        f"{TEST_SIZE} test images, then {VALIDATION_SIZE} validation images from the rest, "
        f"{len(train)} training images"
    )
    models = {
        name: f"MLPClassifier(hidden_layer_sizes=({hidden},), max_iter={MAX_EPOCHS}, "
        "random_state=SEED), other settings scikit-learn's defaults (ReLU, Adam, "
        "learning_rate_init 0.001, alpha 0.0001, batch_size 200); pixels divided by 16"
        for name, hidden in HIDDEN.items()
    }
    source = (
        "scikit-learn's load_digits(), shipped inside the package: its copy of the test set "
        "of the UCI ML hand-written digits data, Optical Recognition of Handwritten Digits "
        "(E. Alpaydin and C. Kaynak, 1998; "
        "https://archive.ics.uci.edu/dataset/80/optical+recognition+of+handwritten+digits), "
        "1,797 images of 8x8 pixels with 17 grey levels (0-16), from forms filled in by 13 "
        "people"
    )
    seed_drives = (
        "scikit-learn's random_state of the MLPClassifier: the initial weights and the "
        "shuffled order of the mini-batches in every epoch; the split and the data are the "
        "same for every seed"
    )
    seeds = {
        "generated_by": "python docs/data/evaluation/make_digits.py",
        "source": source,
        "versions": versions,
        "split": {
            "train": len(train),
            "validation": len(validation),
            "test": len(test),
            "how": split_text,
        },
        "models": models,
        "seed_drives": seed_drives,
        # the scores as the seed calculator takes them: seed 0 to 9 in order, same test set
        "a": [r["accuracy"] for r in runs["a"]],
        "b": [r["accuracy"] for r in runs["b"]],
        "trials": [t["accuracy"] for t in trials],
        "runs": runs,
        "search": {
            "what": f"random search of b ({HIDDEN['b']} hidden units, seed 0): "
            f"learning_rate_init log-uniform in {list(LEARNING_RATE_RANGE)}, alpha (L2) "
            f"log-uniform in {list(ALPHA_RANGE)}, each drawn with numpy's "
            f"RandomState({SEARCH_SEED}) and rounded to 3 significant digits; the score is "
            "the accuracy on the validation images",
            "trials": trials,
        },
    }
    gold = y[test]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["id", "gold", "a", "b", "tag"])
    for i, g, a, b in zip(test, gold, seed0["a"], seed0["b"], strict=True):
        tag = "" if a == g else error_tag(int(g), int(a))
        writer.writerow([int(i), int(g), int(a), int(b), tag])
    metadata = {
        "file": "predictions.csv",
        "generated_by": "python docs/data/evaluation/make_digits.py",
        "source": source,
        "versions": versions,
        "rows": "one per test image, ordered by id",
        "columns": {
            "id": "the image's index in load_digits()",
            "gold": "the digit the image shows (the data set's label)",
            "a": f"the baseline's prediction: {HIDDEN['a']} hidden units, seed 0",
            "b": f"the candidate's prediction: {HIDDEN['b']} hidden units, seed 0",
            "tag": "for each error of the baseline, a category ASSIGNED BY A RULE, not by a "
            "human reviewer: the first rule of tag_rule whose true digits hold the true "
            "digit and whose predicted digits hold the baseline's prediction, else 'other'; "
            "empty where the baseline is right",
        },
        "tag_rule": [
            {"tag": t, "true_digits": sorted(g), "predicted_digits": sorted(p)}
            for t, g, p in TAG_RULES
        ]
        + [{"tag": OTHER, "true_digits": "any other error", "predicted_digits": ""}],
        "models": models,
        "seed_drives": seed_drives,
        "split": seeds["split"],
    }
    return {
        "predictions.csv": out.getvalue(),
        "seeds.json": json.dumps(seeds, indent=1, allow_nan=False) + "\n",
        "metadata.json": json.dumps(metadata, indent=1, allow_nan=False) + "\n",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="folder to write digits/ into")
    args = parser.parse_args(argv)
    folder = args.out / "digits"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in build().items():
        (folder / name).write_bytes(text.encode("utf-8"))
        print(f"{folder / name}: {len(text.encode('utf-8')):,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
