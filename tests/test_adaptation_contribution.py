"""The fine-tuning guide's contribution test data (docs/data/adaptation/contribution): the
generator, rerun into a temporary folder, writes the committed files byte for byte; the
files agree with each other and with the prediction comparison calculator; and they hold
what the summary claims (disjoint parts, LoRA's trainable count, the learning-rate rule,
the same budget for both adaptations).

The generator runs as a script in a fresh interpreter, as a reader runs it: it sets
PyTorch's thread count and deterministic mode for its whole process, which this test
process must not inherit. The transformation is tested in this process on its own.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculators.web import compute

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "data" / "adaptation" / "contribution"
SCRIPT = DATA / "make_contribution.py"
COMPARED = ("target.csv", "panel.csv", "summary.json", "ids.json")
WRITTEN = (*COMPARED, "environment.json")
VARIANTS = ("base", "lora", "full")
PARTS = ("target_test", "panel", "adapt_validation", "adapt_train", "source_train")
DIGITS = 1797  # load_digits(): the UCI test set as scikit-learn ships it


def _json(name: str):
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def _csv(name: str) -> list[dict[str, str]]:
    with (DATA / name).open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def summary() -> dict:
    return _json("summary.json")


@pytest.fixture(scope="module")
def ids() -> dict[str, list[int]]:
    return _json("ids.json")


@pytest.fixture(scope="module")
def generator():
    """The generator as a module, for its pure functions (importing it trains nothing)."""
    spec = importlib.util.spec_from_file_location("make_contribution", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


def test_generator_reproduces_the_committed_files(tmp_path: Path):
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(WRITTEN)
    made_with = _json("environment.json")
    here = json.loads((tmp_path / "environment.json").read_text(encoding="utf-8"))
    for name in COMPARED:
        made = (tmp_path / name).read_bytes()
        assert made == (DATA / name).read_bytes(), (
            f"{name} differs from a rebuild; the committed files were made with {made_with}, "
            f"this environment is {here}: rerun make_contribution.py and review the change"
        )


def test_parts_are_disjoint_and_cover_the_data_set(summary, ids):
    assert list(ids) == list(PARTS)
    seen: set[int] = set()
    for part in PARTS:
        assert ids[part] == sorted(set(ids[part])), part
        assert not seen & set(ids[part]), f"{part} overlaps another part"
        seen |= set(ids[part])
        assert len(ids[part]) == summary["split"]["images"][part]
    assert seen == set(range(DIGITS))


def test_the_panel_trained_nothing_and_chose_nothing(ids):
    panel = [int(r["id"]) for r in _csv("panel.csv")]
    assert panel == ids["panel"]
    trained_or_chose = set(ids["source_train"]) | set(ids["adapt_train"])
    trained_or_chose |= set(ids["adapt_validation"])
    assert not set(panel) & trained_or_chose
    target = [int(r["id"]) for r in _csv("target.csv")]
    assert target == ids["target_test"]
    assert not set(target) & trained_or_chose


def test_prediction_files_agree_with_the_summary_scores(summary):
    for name, part in (("target.csv", "target_test"), ("panel.csv", "panel")):
        rows = _csv(name)
        assert list(rows[0]) == ["id", "gold", *VARIANTS]
        assert all(r[k] in {str(d) for d in range(10)} for r in rows for k in rows[0] if k != "id")
        for variant in VARIANTS:
            score = summary["scores"][variant][part]
            correct = sum(r[variant] == r["gold"] for r in rows)
            assert (score["correct"], score["total"]) == (correct, len(rows))
            assert score["accuracy"] == correct / len(rows)


def test_both_adaptations_gain_on_the_target_by_the_stated_amount(summary):
    s = summary["scores"]
    base = s["base"]["target_test"]["accuracy"]
    for variant in ("lora", "full"):
        gain = summary["gain_on_target_test"][variant]
        assert gain == s[variant]["target_test"]["accuracy"] - base
        assert gain > 0.3  # adaptation was needed, and it worked
        assert summary["change_on_panel"][variant] == (
            s[variant]["panel"]["accuracy"] - s["base"]["panel"]["accuracy"]
        )
    # the base knows the source domain and not the target one
    assert s["base"]["panel"]["accuracy"] > 0.9 > 0.5 > base


def test_the_compare_calculator_reads_the_files_as_the_summary_says(summary):
    """The guide embeds `compare` on these files: its accuracies are the summary's, and
    its flips add up to the change in accuracy."""
    for name, part in (("target.csv", "target_test"), ("panel.csv", "panel")):
        for a, b in (("base", "lora"), ("base", "full"), ("lora", "full")):
            r = compute(
                "compare",
                {
                    "predictions": f"data/adaptation/contribution/{name}",
                    "a_field": a,
                    "b_field": b,
                },
            )
            assert r["a"]["accuracy"] == summary["scores"][a][part]["accuracy"]
            assert r["b"]["accuracy"] == summary["scores"][b][part]["accuracy"]
            p = r["paired"]
            change = summary["scores"][b][part]["correct"] - summary["scores"][a][part]["correct"]
            assert p["positive_flips"] - p["negative_flips"] == change
            if (name, a) == ("target.csv", "base"):
                assert p["mcnemar"]["p_value_exact"] < 1e-6  # the gain is no accident


def test_lora_trains_rank_times_in_plus_out_per_targeted_layer(summary):
    # LoRA adds B (out x r) and A (r x in) beside a frozen weight of out x in: r (in + out)
    # parameters a layer (Hu et al. 2021, arXiv:2106.09685, section 4.1)
    layers = summary["model"]["layers"]
    lora = summary["variants"]["lora"]
    r = lora["rank"]
    assert lora["targets"] == ["fc1", "fc2", "head"]
    expected = sum(r * (layers[t]["in"] + layers[t]["out"]) for t in lora["targets"])
    assert lora["trainable"] == expected == 1320
    # the base: a weight and a bias a layer
    dense = sum((v["in"] + 1) * v["out"] for v in layers.values())
    assert summary["model"]["parameters"] == dense == 8970
    full = summary["variants"]["full"]
    assert full["trainable"] == full["total"] == dense
    assert lora["total"] == dense + lora["trainable"]
    assert lora["trainable"] < full["trainable"] / 5
    assert lora["alpha"] == 2 * r


def test_both_adaptations_have_the_same_budget_and_seed(summary):
    t = summary["training"]
    adapt = t["adaptation"]
    batches = -(-summary["split"]["images"]["adapt_train"] // t["batch"])
    assert adapt["steps"] == batches * adapt["epochs"]
    assert "same seed" in adapt["same_for"]
    sweep = summary["sweep"]
    rates = adapt["learning_rates"]
    assert [(x["variant"], x["learning_rate"]) for x in sweep] == [
        (v, lr) for v in ("lora", "full") for lr in rates
    ]


def test_each_learning_rate_is_the_best_on_validation(summary):
    for variant in ("lora", "full"):
        rows = [x for x in summary["sweep"] if x["variant"] == variant]
        best = max(x["adapt_validation"] for x in rows)
        # ties go to the smaller rate: the first in the grid's order
        first = next(x for x in rows if x["adapt_validation"] == best)
        assert [x for x in rows if x["chosen"]] == [first]
        assert first["learning_rate"] == summary["variants"][variant]["learning_rate"]
        for part in PARTS:
            assert first[part] == summary["scores"][variant][part]["accuracy"]


def test_the_environment_names_its_versions():
    env = _json("environment.json")
    assert set(env) == {"python", "torch", "peft", "scikit-learn", "numpy"}
    assert all(isinstance(v, str) and v[0].isdigit() for v in env.values())


def _thicken_by_loops(image: list[list[int]]) -> list[list[int]]:
    """The definition, pixel by pixel: the largest value in the 3x3 window inside the image."""
    return [
        [
            max(
                image[r + dr][c + dc]
                for dr in (-1, 0, 1)
                for dc in (-1, 0, 1)
                if 0 <= r + dr < 8 and 0 <= c + dc < 8
            )
            for c in range(8)
        ]
        for r in range(8)
    ]


images = st.lists(st.integers(0, 16), min_size=64, max_size=64)


@settings(max_examples=60, deadline=None)
@given(st.lists(images, min_size=1, max_size=3))
def test_thicken_is_the_3x3_grey_dilation(generator, batch):
    pixels = np.array(batch, dtype=float)
    out = generator.thicken(pixels)
    assert out.shape == pixels.shape
    for row, made in zip(batch, out, strict=True):
        grid = [row[i * 8 : i * 8 + 8] for i in range(8)]
        assert made.reshape(8, 8).tolist() == _thicken_by_loops(grid)
    # a dilation only adds ink, and keeps the grey levels of the data set
    assert (out >= pixels).all() and out.max() == pixels.max()


def test_thicken_grows_a_dot_into_a_square(generator):
    dot = np.zeros(64)
    dot[3 * 8 + 4] = 16
    grown = generator.thicken(dot[None, :])[0].reshape(8, 8)
    assert grown.sum() == 9 * 16 and (grown[2:5, 3:6] == 16).all()


def test_the_readme_names_every_file_and_the_command():
    text = (DATA / "README.md").read_text(encoding="utf-8")
    assert "python docs/data/adaptation/contribution/make_contribution.py" in text
    for name in WRITTEN:
        assert f"`{name}`" in text
    assert "generated" in text.lower() and "Alpaydin" in text and "2405.09673" in text
