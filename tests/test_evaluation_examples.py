"""The evaluation guides' example data (docs/data/evaluation): each generator, rerun into a
temporary folder, writes the committed files byte for byte; and the files hold what their
descriptions say (ten seeds a model, the planted leaks, the simulated extractors' errors).

The generators run as scripts in a fresh interpreter, as a reader runs them: the digits one
limits BLAS to one thread before NumPy loads, which an import into this test process (where
NumPy may be loaded already) could not do.
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
import sklearn

from calculators.evaluation.records import read_rows

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "data" / "evaluation"
FILES = {
    "make_digits.py": ("digits", ("predictions.csv", "seeds.json", "metadata.json")),
    "make_leakage_example.py": ("leakage", ("train.jsonl", "eval.jsonl", "planted.json")),
    "make_extraction.py": ("extraction", ("predictions.jsonl", "planted.json")),
}


def _json(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def test_the_digits_were_made_with_this_scikit_learn():
    # another scikit-learn may train differently: the byte-for-byte check below would then
    # fail for that reason, said here first
    made_with = _json(DATA / "digits" / "seeds.json")["versions"]["scikit-learn"]
    assert made_with == sklearn.__version__, (
        f"docs/data/evaluation/digits was made with scikit-learn {made_with}, this is "
        f"{sklearn.__version__}: pin it, or rerun make_digits.py and review the change"
    )


@pytest.mark.parametrize("script", sorted(FILES))
def test_generator_reproduces_the_committed_files(script: str, tmp_path: Path):
    folder, names = FILES[script]
    done = subprocess.run(
        [sys.executable, str(DATA / script), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / folder).iterdir()) == sorted(names)
    for name in names:
        made = (tmp_path / folder / name).read_bytes()
        assert made == (DATA / folder / name).read_bytes(), f"{folder}/{name} differs"


# --- digits


def test_digits_have_ten_seeds_a_model_on_one_test_set():
    seeds = _json(DATA / "digits" / "seeds.json")
    test_size = seeds["split"]["test"]
    for model in ("a", "b"):
        runs = seeds["runs"][model]
        assert [r["seed"] for r in runs] == list(range(10))
        for r in runs:
            assert r["total"] == test_size == 500
            assert 0 < r["accuracy"] < 1
            assert r["accuracy"] == r["correct"] / r["total"]
        # the list the seed calculator takes, seed by seed
        assert seeds[model] == [r["accuracy"] for r in runs]
    split = seeds["split"]
    assert split["train"] + split["validation"] + split["test"] == 1797  # load_digits()
    trials = seeds["search"]["trials"]
    assert 10 <= len(trials) <= 20
    assert all(0 < t["accuracy"] < 1 and t["total"] == split["validation"] for t in trials)
    assert seeds["trials"] == [t["accuracy"] for t in trials]
    assert "initial weights" in seeds["seed_drives"]
    # accuracies over 500 and 250 images are short decimals, as a reader types them
    assert all(len(repr(x)) <= 5 for x in seeds["a"] + seeds["b"] + seeds["trials"])


def test_digits_predictions_agree_with_the_seed_zero_accuracies():
    rows = _csv(DATA / "digits" / "predictions.csv")
    seeds = _json(DATA / "digits" / "seeds.json")
    assert len(rows) == 500
    assert len({r["id"] for r in rows}) == 500
    assert [int(r["id"]) for r in rows] == sorted(int(r["id"]) for r in rows)
    for model in ("a", "b"):
        correct = sum(r[model] == r["gold"] for r in rows)
        assert correct == seeds["runs"][model][0]["correct"]
    # the project's own reader takes the file as the compare calculator will
    read = read_rows(
        str(DATA / "digits" / "predictions.csv"),
        input_name="predictions",
        fields=("id", "gold", "a", "b"),
        optional=("tag",),
    )
    assert len(read) == 500


def test_digits_tags_are_rule_assigned_to_the_baselines_errors():
    rows = _csv(DATA / "digits" / "predictions.csv")
    meta = _json(DATA / "digits" / "metadata.json")
    assert "ASSIGNED BY A RULE, not by a human reviewer" in meta["columns"]["tag"]
    rules = meta["tag_rule"]
    tags = {rule["tag"] for rule in rules}
    for r in rows:
        assert (r["tag"] == "") == (r["a"] == r["gold"])
        if r["tag"]:
            assert r["tag"] in tags
            # the first rule holding both digits, as the metadata states it
            gold, pred = int(r["gold"]), int(r["a"])
            first = next(
                (
                    rule["tag"]
                    for rule in rules[:-1]
                    if gold in rule["true_digits"] and pred in rule["predicted_digits"]
                ),
                rules[-1]["tag"],
            )
            assert r["tag"] == first


# --- leakage


def _rows(name: str) -> list[dict[str, str]]:
    rows = read_rows(
        str(DATA / "leakage" / name),
        input_name=name.split(".")[0],
        fields=("id", "text", "user", "date"),
    )
    return [r.values for r in rows]


def _norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _shingles(text: str, k: int = 5) -> set[tuple[str, ...]]:
    ws = _norm(text).split()
    return {tuple(ws[i : i + k]) for i in range(len(ws) - k + 1)} or {tuple(ws)}


def _jaccard(a: str, b: str) -> float:
    x, y = _shingles(a), _shingles(b)
    return len(x & y) / len(x | y)


def test_leakage_files_are_small_with_unique_string_fields():
    train, evaluation = _rows("train.jsonl"), _rows("eval.jsonl")
    size = sum((DATA / "leakage" / n).stat().st_size for n in ("train.jsonl", "eval.jsonl"))
    assert size < 1_000_000  # the page audits them in the browser
    for rows in (train, evaluation):
        assert len({r["id"] for r in rows}) == len(rows)
        assert all(isinstance(v, str) for r in rows for v in r.values())
        assert all(re.fullmatch(r"\d{4}-\d{2}-\d{2}", r["date"]) for r in rows)
    planted = _json(DATA / "leakage" / "planted.json")
    assert planted["sizes"] == {"train": len(train), "eval": len(evaluation)}


def test_leakage_holds_what_was_planted():
    train = {r["id"]: r for r in _rows("train.jsonl")}
    evaluation = {r["id"]: r for r in _rows("eval.jsonl")}
    p = _json(DATA / "leakage" / "planted.json")
    assert len(p["exact"]) == 6
    for pair in p["exact"]:
        assert _norm(evaluation[pair["eval"]]["text"]) == _norm(train[pair["train"]]["text"])
    assert {pair["change"] for pair in p["exact"]} >= {"lower case", "no-break spaces"}
    assert len(p["near"]) == 8 and len(p["near_below_threshold"]) == 4
    for pair in p["near"] + p["near_below_threshold"]:
        low, high = p["near_levels"][pair["level"]]
        j = _jaccard(evaluation[pair["eval"]]["text"], train[pair["train"]]["text"])
        assert low <= j <= high and j == pytest.approx(pair["jaccard"], abs=1e-4)
        assert _norm(evaluation[pair["eval"]]["text"]) != _norm(train[pair["train"]]["text"])
    for kind, rows in (("within_train", train), ("within_eval", evaluation)):
        assert len(p[kind]) == 3
        for first, second in p[kind]:
            assert _norm(rows[first]["text"]) == _norm(rows[second]["text"])
    assert len(p["ngram"]) == 5
    for pair in p["ngram"]:
        e, t = _norm(evaluation[pair["eval"]]["text"]), _norm(train[pair["train"]]["text"])
        tw = t.split()  # a 13-word run of the train item lies in the eval item
        assert any(" ".join(tw[i : i + 13]) in e for i in range(len(tw) - 12))
        assert _jaccard(e, t) < 0.5  # contaminated, not a near copy
    train_users = {r["user"] for r in train.values()}
    shared = [i for i, r in evaluation.items() if r["user"] in train_users]
    assert sorted(shared) == p["groups"]["eval_items"] and len(shared) == 6
    assert len(p["groups"]["shared_users"]) == 4
    newest = max(r["date"] for r in train.values())
    assert newest == p["time"]["newest_train_date"]
    old = sorted(i for i, r in evaluation.items() if r["date"] < newest)
    assert old == p["time"]["eval_items_before_train_end"] and len(old) == 6


def test_leakage_expected_findings_count_the_plants():
    p = _json(DATA / "leakage" / "planted.json")
    x = p["expected"]
    exact = {q["eval"] for q in p["exact"]}
    near = {q["eval"] for q in p["near"]}
    low = {q["eval"] for q in p["near_below_threshold"]}
    span = {q["eval"] for q in p["ngram"]}
    assert set(x["exact.eval_items"]) == exact
    assert set(x["near.eval_items"]) == exact | near  # a superset of the exact ones
    assert set(x["ngram.eval_items"]) == exact | near | low | span
    assert x["groups.eval_items"] == p["groups"]["eval_items"]
    assert x["time.eval_items_before_train_end"] == p["time"]["eval_items_before_train_end"]
    assert sorted(map(sorted, x["within.train_duplicates"])) == p["within_train"]
    assert sorted(map(sorted, x["within.eval_duplicates"])) == p["within_eval"]
    assert "generated" in p and "seed" in p


# --- extraction


def test_extraction_rows_and_errors_agree_with_planted():
    rows = [
        r.values
        for r in read_rows(
            str(DATA / "extraction" / "predictions.jsonl"),
            input_name="predictions",
            fields=("id", "gold", "a", "b"),
        )
    ]
    p = _json(DATA / "extraction" / "planted.json")
    assert len(rows) == p["rows"] == 60  # 15 cards of the catalog, four sentences each
    assert "no model produced these outputs" in p["generated"]
    errors = {e["id"]: e for e in p["errors_by_row"]}
    for model in ("a", "b"):
        invalid = 0
        for r in rows:
            assert isinstance(r[model], str) and isinstance(r["gold"], dict)
            made = errors[r["id"]][model]
            try:
                json.loads(r[model])
            except ValueError:
                invalid += 1
                assert any(e.startswith("malformed:") for e in made)
                continue
            if not made:  # no error: the gold object itself
                assert json.loads(r[model]) == r["gold"]
        assert invalid == p["error_counts"][model]["malformed"]
    assert p["error_counts"]["a"]["memory_in_gib"] == 0 < p["error_counts"]["b"]["memory_in_gib"]


def test_the_readme_names_every_file_and_its_command():
    text = (DATA / "README.md").read_text(encoding="utf-8")
    for script, (folder, names) in FILES.items():
        assert f"python docs/data/evaluation/{script}" in text
        for name in names:
            assert f"{folder}/{name}" in text
    assert "generated" in text.lower() and "Alpaydin" in text
