"""The `compare` calculator from the command line: its JSON contract on small files whose
values are worked by hand (the scikit-learn docstring example of
`precision_recall_fscore_support` as a file), the same file as .csv and .jsonl, its page
and downloads, and one-line errors (exit 2) naming the file, the line and the field."""

from __future__ import annotations

import io
import json
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculators import progress
from calculators.cli import main
from calculators.commands import CALCULATORS
from calculators.commands.compare import PROGRESS_EVERY, scores_csv, tables
from calculators.evaluation.classification import MAX_LABELS
from calculators.web.render import CONFUSION_MAX_LABELS, confusion_matrix_svg
from tests import test_web_render as web_render

# scikit-learn's precision_recall_fscore_support example (gold and a), with a candidate b
# right on rows 1 to 3 and a reviewer's tags on some of a's errors
SK_ROWS = [
    ("1", "cat", "cat", "cat", ""),
    ("2", "dog", "pig", "dog", "look-alike"),
    ("3", "pig", "dog", "pig", "look-alike;blurry"),
    ("4", "cat", "cat", "dog", ""),
    ("5", "dog", "cat", "cat", "blurry"),
    ("6", "pig", "dog", "dog", ""),
]


def write_csv(folder: Path, rows, header=("id", "gold", "a", "b", "tag"), name="p.csv") -> str:
    lines = [",".join(header), *(",".join(r) for r in rows)]
    path = folder / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def write_jsonl(folder: Path, objects, name="p.jsonl") -> str:
    path = folder / name
    path.write_text("".join(json.dumps(o) + "\n" for o in objects), encoding="utf-8")
    return str(path)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        status = main(["compare", *argv])
    return status, out.getvalue(), err.getvalue()


def run_json(*argv: str) -> dict:
    status, out, err = run(*argv, "--json")
    assert status == 0, err
    return json.loads(out)


def test_json_contract_on_the_scikit_learn_example(tmp_path):
    r = run_json("--predictions", write_csv(tmp_path, SK_ROWS))
    assert r["n"] == 6
    a = r["a"]
    # a: 2 right of 6; macro F1 0.8 / 3 (sklearn prints 0.267), cat P 2/3 R 1 F1 0.8
    assert a["accuracy"] == pytest.approx(1 / 3)
    assert a["macro_f1"] == pytest.approx(0.8 / 3)
    assert a["micro_f1"] == pytest.approx(1 / 3)
    assert a["confusion"]["labels"] == ["cat", "dog", "pig"]
    # rows reference, columns prediction: dog -> pig, cat; pig -> dog, dog
    assert a["confusion"]["matrix"] == [[2, 0, 0], [1, 0, 1], [0, 2, 0]]
    assert a["per_class"]["cat"] == {
        "precision": pytest.approx(2 / 3),
        "recall": 1.0,
        "f1": pytest.approx(0.8),
        "support": 2,
    }
    b = r["b"]
    # b: right on rows 1, 2, 3; wrong on 4 (cat -> dog), 5 (dog -> cat), 6 (pig -> dog)
    assert b["accuracy"] == 0.5
    assert b["confusion"]["matrix"] == [[1, 1, 0], [1, 1, 0], [0, 1, 1]]
    # b per class: cat P 1/2 R 1/2; dog P 1/3 R 1/2 F1 2/(2+2+1) = 0.4; pig P 1 R 1/2
    assert b["per_class"]["dog"]["f1"] == pytest.approx(0.4)
    assert b["macro_f1"] == pytest.approx((0.5 + 0.4 + 2 / 3) / 3)
    p = r["paired"]
    # row 4: a right, b wrong (negative flip); rows 2 and 3: a wrong, b right
    assert (p["negative_flips"], p["positive_flips"]) == (1, 2)
    assert (p["both_right"], p["both_wrong"]) == (1, 2)
    assert p["negative_flip_rate"] == pytest.approx(1 / 6)
    assert p["accuracy_change"] == pytest.approx(1 / 6)
    # discordant 2 and 1: chi-square (|2 - 1| - 1)^2 / 3 = 0, uncorrected 1/3; exact p =
    # 2 P(X <= 1 | 3) = 1; mid-p 1 - P(X = 1) = 1 - 3/8
    m = p["mcnemar"]
    assert (m["statistic"], m["p_value"]) == (0.0, 1.0)
    assert m["statistic_uncorrected"] == 1 / 3
    assert m["p_value_exact"] == 1.0 and m["p_value_mid"] == 5 / 8
    # accuracy b - a = (2 - 1) / 6, each interval around it and within [-1, 1]
    d = p["difference"]
    assert d["estimate"] == pytest.approx(1 / 6) and d["confidence"] == 0.95
    for name in ("wald", "bonett_price", "newcombe"):
        assert -1 <= d[name]["low"] < 1 / 6 < d[name]["high"] <= 1
    assert p["regressions"] == [
        {"id": "4", "line": 5, "gold": "cat", "a": "cat", "b": "dog", "tag": ""}
    ]
    assert [f["id"] for f in p["improvements"]] == ["2", "3"]
    assert p["by_class"]["cat"] == {"support": 2, "negative": 1, "positive": 0}
    t = r["taxonomy"]
    # a's errors: rows 2 (look-alike), 3 (look-alike, blurry), 5 (blurry), 6 (none)
    assert t["a_errors"] == 4 and t["tagged_errors"] == 3
    assert t["tags"]["look-alike"] == {
        "errors": 2,
        "share": 0.5,
        "ceiling": pytest.approx(2 / 6),
        "fixed": 2,
        "remaining": 0,
        # without --cost, no experiment is ranked
        "gpu_hours": None,
        "ceiling_per_gpu_hour": None,
        "rank": None,
    }
    assert t["ranking"] == []
    assert t["tags"]["blurry"]["fixed"] == 1 and t["tags"]["blurry"]["remaining"] == 1
    assert t["new_errors"] == 1 and t["new_errors_by_tag"] == {"(untagged)": 1}


def test_the_same_file_as_jsonl_gives_the_same_result(tmp_path):
    csv_result = run_json("--predictions", write_csv(tmp_path, SK_ROWS))
    objects = [
        {"id": int(i), "gold": g, "a": a, "b": b, **({"tag": t} if t else {})}
        for i, g, a, b, t in SK_ROWS
    ]
    jsonl_result = run_json("--predictions", write_jsonl(tmp_path, objects))
    for key in ("n", "a", "b", "taxonomy"):
        assert jsonl_result[key] == csv_result[key]
    # the flips name the same rows; their lines differ by the CSV's header line
    for key in ("regressions", "improvements"):
        for j, c in zip(jsonl_result["paired"][key], csv_result["paired"][key], strict=True):
            assert {**j, "line": j["line"] + 1} == c
    assert jsonl_result["paired"]["mcnemar"] == csv_result["paired"]["mcnemar"]


def test_numbers_in_jsonl_are_labels_by_their_text(tmp_path):
    rows = [{"id": 1, "gold": 3, "a": 3.0, "b": "3"}, {"id": 2, "gold": 10, "a": 9, "b": 10}]
    r = run_json("--predictions", write_jsonl(tmp_path, rows))
    assert r["a"]["confusion"]["labels"] == ["10", "3", "9"]  # sorted as strings
    assert r["a"]["correct"] == 1 and r["b"]["correct"] == 2


def test_without_b_there_is_no_paired_section(tmp_path):
    rows = [(i, g, a) for i, g, a, _, _ in SK_ROWS]
    r = run_json("--predictions", write_csv(tmp_path, rows, header=("id", "gold", "a")))
    assert "b" not in r and "paired" not in r and "taxonomy" not in r
    assert r["a"]["accuracy"] == pytest.approx(1 / 3)


def test_other_field_names(tmp_path):
    rows = [(g, i, a) for i, g, a, _, _ in SK_ROWS]
    path = write_csv(tmp_path, rows, header=("label", "key", "old"))
    r = run_json(
        "--predictions", path, "--id-field", "key", "--gold-field", "label", "--a-field", "old"
    )
    assert r["a"]["field"] == "old" and r["a"]["correct"] == 2


def test_plain_text_output(tmp_path):
    status, out, _ = run("--predictions", write_csv(tmp_path, SK_ROWS))
    assert status == 0
    assert "p.csv: 6 examples, classification" in out
    assert "Negative flips (a right, b wrong): 1" in out
    assert "Confusion matrix of a" in out and "look-alike" in out


def test_page_and_downloads(tmp_path):
    r = run_json("--predictions", write_csv(tmp_path, SK_ROWS))
    page = CALCULATORS["compare"].html(r)
    assert page.count('<div class="kd-charts">') == 4  # flips, two matrices, tag ceilings
    assert "McNemar" in page and "Regressions: 1 of 1" in page
    files = tables(r)
    assert set(files) == {"regressions", "improvements", "confusion-a", "confusion-b"}
    assert files["regressions"] == "id,line,gold,a,b,tag\n4,5,cat,cat,dog,\n"
    assert files["confusion-a"].splitlines() == [
        "reference \\ prediction,cat,dog,pig",
        "cat,2,0,0",
        "dog,1,0,1",
        "pig,0,2,0",
    ]
    assert scores_csv(r).splitlines()[1] == "a,cat,0.6666666666666666,1.0,0.8,2"
    assert CALCULATORS["compare"].tables is tables


def test_extraction_task(tmp_path):
    rows = [
        {
            "id": 1,
            "gold": {"name": "Ada", "year": 1843},
            "a": '{"name": "Ada", "year": 1843}',
            "b": {"name": "Ada", "year": 1843},
        },
        {
            "id": 2,
            "gold": '{"name": "Alan", "year": 1936}',
            "a": "no JSON here",
            "b": '{"name": "Alan", "year": 1937}',
        },
        {
            "id": 3,
            "gold": {"name": "Grace"},
            "a": '{"name": "grace"}',
            "b": '{"name": "grace"}',
            "tag": "case",
        },
    ]
    path = write_jsonl(tmp_path, rows)
    r = run_json("--predictions", path, "--task", "extraction")
    a, b = r["a"], r["b"]
    assert a["exact_match"] == a["accuracy"] == pytest.approx(1 / 3)
    assert a["invalid"] == 1 and a["invalid_rate"] == pytest.approx(1 / 3)
    # a, name: right on row 1, missing (invalid) on row 2, wrong case on row 3
    assert a["fields"]["name"] == {
        "tp": 1,
        "fp": 1,
        "fn": 2,
        "precision": 0.5,
        "recall": pytest.approx(1 / 3),
        "f1": pytest.approx(0.4),
        "support": 3,
    }
    assert b["invalid"] == 0 and b["fields"]["year"]["tp"] == 1
    # row 1 right for both; b gets nothing else right: no flips
    assert r["paired"]["negative_flips"] == r["paired"]["positive_flips"] == 0
    assert "by_class" not in r["paired"]
    assert r["taxonomy"]["tags"]["case"] == {
        "errors": 1,
        "share": 0.5,
        "ceiling": pytest.approx(1 / 3),
        "fixed": 0,
        "remaining": 1,
        "gpu_hours": None,
        "ceiling_per_gpu_hour": None,
        "rank": None,
    }
    # with normalized strings "grace" is "Grace": row 3 is right for both
    normalized = run_json("--predictions", path, "--task", "extraction", "--normalize")
    assert normalized["a"]["correct"] == normalized["b"]["correct"] == 2
    assert list(normalized["taxonomy"]["tags"]) == ["(untagged)"]
    page = CALCULATORS["compare"].html(r)
    assert "Scores per field" in page
    assert set(tables(r)) == {"regressions", "improvements"}


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from("xyz"), st.sampled_from("xyz"), st.sampled_from("xyz")),
        min_size=1,
        max_size=30,
    ),
    st.randoms(use_true_random=False),
)
def test_b_equal_to_a_has_no_flips_and_row_order_changes_nothing(rows, rnd):
    with tempfile.TemporaryDirectory() as folder:
        numbered = [(str(i), g, a, a, "") for i, (g, a, _) in enumerate(rows)]
        same = run_json("--predictions", write_csv(Path(folder), numbered))
        p = same["paired"]
        assert p["negative_flips"] == p["positive_flips"] == 0
        assert p["mcnemar"]["p_value_exact"] == 1.0 and p["mcnemar"]["statistic"] == 0.0
        assert same["a"] == {**same["b"], "field": "a"}
        with_b = [(str(i), g, a, b, "") for i, (g, a, b) in enumerate(rows)]
        shuffled = list(with_b)
        rnd.shuffle(shuffled)
        one = run_json("--predictions", write_csv(Path(folder), with_b, name="one.csv"))
        two = run_json("--predictions", write_csv(Path(folder), shuffled, name="two.csv"))
        for key in ("a", "b", "taxonomy"):
            assert one.get(key) == two.get(key)
        for key in ("negative_flips", "positive_flips", "mcnemar", "by_class"):
            assert one["paired"][key] == two["paired"][key]


# ---- per-example scores: the paired bootstrap -----------------------------------------------


SCORE_ROWS = [("1", "0.5", "0.75"), ("2", "1", "1"), ("3", "0", "0.5"), ("4", "0.25", "0")]


def test_scores_task_means_counts_and_bootstrap(tmp_path):
    path = write_csv(tmp_path, SCORE_ROWS, header=("id", "a", "b"))
    r = run_json("--predictions", path, "--task", "scores", "--resamples", "500", "--seed", "3")
    assert r["task"] == "scores" and r["n"] == 4
    # a: (0.5 + 1 + 0 + 0.25) / 4; b: (0.75 + 1 + 0.5 + 0) / 4
    assert r["a"] == {"field": "a", "n": 4, "mean": 0.4375}
    assert r["b"] == {"field": "b", "n": 4, "mean": 0.5625}
    p = r["paired"]
    assert (p["b_higher"], p["a_higher"], p["equal"]) == (2, 1, 1)
    assert p["mean_difference"] == 0.125
    s = p["bootstrap"]
    assert (s["resamples"], s["seed"], s["confidence"]) == (500, 3, 0.95)
    # the differences are 0.25, 0, 0.5, -0.25: every resampled mean lies between
    assert -0.25 <= s["low"] <= s["high"] <= 0.5 and 0 < s["p_value"] <= 1
    again = run_json("--predictions", path, "--task", "scores", "--resamples", "500", "--seed", "3")
    assert again == r
    assert r["notes"] and "percentile interval is too short" in r["notes"][0]
    assert "taxonomy" not in r and "gold" not in json.dumps(r)


def test_scores_task_jsonl_numbers_text_and_page(tmp_path):
    rows = [{"id": i, "a": float(a), "b": b} for i, a, b in SCORE_ROWS]
    r = run_json("--predictions", write_jsonl(tmp_path, rows), "--task", "scores")
    assert r["a"]["mean"] == 0.4375 and r["paired"]["bootstrap"]["resamples"] == 2_000
    status, out, _ = run("--predictions", write_jsonl(tmp_path, rows), "--task", "scores")
    assert status == 0 and "Mean score b - a: +0.125" in out and "paired bootstrap" in out
    page = CALCULATORS["compare"].html(r)
    assert "Paired bootstrap of the mean difference" in page
    assert tables(r) == {}
    assert scores_csv(r).splitlines() == ["model,field,mean,n", "a,a,0.4375,4", "b,b,0.5625,4"]


def test_scores_task_without_b_gives_the_mean_only(tmp_path):
    path = write_csv(tmp_path, [("1", "2"), ("2", "4")], header=("id", "a"))
    r = run_json("--predictions", path, "--task", "scores")
    assert r["a"]["mean"] == 3.0 and "paired" not in r and "b" not in r


def test_error_score_that_is_not_a_number(tmp_path):
    path = write_csv(tmp_path, [("1", "0.5", "0.7"), ("2", "high", "0.1")], header=("id", "a", "b"))
    line = error_line("--predictions", path, "--task", "scores")
    assert "p.csv line 3" in line and "'a'" in line and "number" in line
    path = write_jsonl(tmp_path, [{"id": 1, "a": 0.5, "b": True}])
    line = error_line("--predictions", path, "--task", "scores")
    assert "p.jsonl line 1" in line and "'b'" in line


def test_error_scores_bounds_and_cost(tmp_path):
    path = write_csv(tmp_path, SCORE_ROWS, header=("id", "a", "b"))
    line = error_line("--predictions", path, "--task", "scores", "--resamples", "10")
    assert "resamples" in line and "100" in line
    line = error_line("--predictions", path, "--task", "scores", "--cost", "x=1")
    assert "cost" in line and "scores" in line


# ---- ranking the next experiment: --cost TAG=GPU_HOURS -----------------------------------

# The scikit-learn example's tags: look-alike 2 errors, blurry 2, (untagged) 1, of 6
# examples: ceilings 2/6, 2/6 and 1/6. With these costs the ceilings per GPU-hour are
# look-alike (1/3) / 1 = 1/3, blurry (1/3) / 2 = 1/6, (untagged) (1/6) / 0.5 = 1/3: a tie
# between look-alike and (untagged), broken by the larger ceiling (look-alike's).
SK_COSTS = ("--cost", "look-alike=1", "--cost", "blurry = 2", "--cost", "(untagged)=0.5")


def test_cost_ranks_the_tags_by_hand(tmp_path):
    r = run_json("--predictions", write_csv(tmp_path, SK_ROWS), *SK_COSTS)
    t = r["taxonomy"]
    assert [(x["rank"], x["tag"]) for x in t["ranking"]] == [
        (1, "look-alike"),
        (2, "(untagged)"),
        (3, "blurry"),
    ]
    assert t["ranking"][0] == {
        "tag": "look-alike",
        "ceiling": pytest.approx(1 / 3),
        "gpu_hours": 1.0,
        "ceiling_per_gpu_hour": pytest.approx(1 / 3),
        "rank": 1,
    }
    assert t["tags"]["blurry"]["gpu_hours"] == 2.0
    assert t["tags"]["blurry"]["ceiling_per_gpu_hour"] == pytest.approx(1 / 6)
    assert t["tags"]["blurry"]["rank"] == 3
    assert t["tags"]["(untagged)"]["ceiling_per_gpu_hour"] == pytest.approx(1 / 3)
    # the rest of the result does not depend on the costs
    plain = run_json("--predictions", write_csv(tmp_path, SK_ROWS))
    assert {k: v for k, v in r.items() if k != "taxonomy"} == {
        k: v for k, v in plain.items() if k != "taxonomy"
    }


def test_cost_for_some_tags_only(tmp_path):
    r = run_json("--predictions", write_csv(tmp_path, SK_ROWS), "--cost", "blurry=4")
    t = r["taxonomy"]
    assert [x["tag"] for x in t["ranking"]] == ["blurry"]
    assert t["ranking"][0]["ceiling_per_gpu_hour"] == pytest.approx((2 / 6) / 4)
    assert t["tags"]["look-alike"]["rank"] is None


def test_cost_in_the_text_page_and_downloads(tmp_path):
    path = write_csv(tmp_path, SK_ROWS)
    status, out, _ = run("--predictions", path, *SK_COSTS)
    assert status == 0
    assert "Next experiment by ceiling per GPU-hour" in out
    # 1/3 per GPU-hour is 33.3% of the examples; 1/6 is 16.7%
    lines = out.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("rank"))
    assert lines[first + 2].split() == ["1", "look-alike", "33.33%", "1", "33.3%"]
    assert lines[first + 4].split() == ["3", "blurry", "33.33%", "2", "16.7%"]
    r = run_json("--predictions", path, *SK_COSTS)
    page = CALCULATORS["compare"].html(r)
    # flips, two matrices, tag ceilings, and the ceilings per GPU-hour
    assert page.count('<div class="kd-charts">') == 5
    assert "Next experiment by ceiling per GPU-hour" in page
    assert "next experiment by ceiling per GPU-hour: look-alike" in page
    assert tables(r)["ranking"].splitlines() == [
        "rank,tag,ceiling,gpu_hours,ceiling_per_gpu_hour",
        f"1,look-alike,{2 / 6!r},1.0,{2 / 6!r}",
        f"2,(untagged),{1 / 6!r},0.5,{(1 / 6) / 0.5!r}",
        f"3,blurry,{2 / 6!r},2.0,{(2 / 6) / 2!r}",
    ]
    assert "ranking" not in tables(run_json("--predictions", path))


def test_the_ranking_chart_passes_the_checks_every_chart_does(tmp_path, monkeypatch):
    # a long tag, and a ceiling per GPU-hour a million times smaller than the other
    rows = [
        ("1", "x", "y", "x", LONG_LABEL),
        ("2", "x", "y", "x", "short"),
        ("3", "x", "x", "x", ""),
    ]
    path = write_csv(tmp_path, rows)
    r = run_json("--predictions", path, "--cost", f"{LONG_LABEL}=0.5", "--cost", "short=5e5")
    page = CALCULATORS["compare"].html(r)
    start = page.index("ceiling per GPU-hour of the experiment")
    chart = page[page.rindex('<div class="kd-charts">', 0, start) :]
    chart = chart[: chart.index("</div>") + len("</div>")]
    monkeypatch.setitem(web_render.CHARTS, "ranking", chart)
    web_render.test_nothing_is_drawn_outside_the_chart("ranking")
    web_render.test_both_layouts_carry_the_same_title_and_data("ranking")


# ---- bad input: one line, exit 2, naming the file, the line and the field ---------------


def error_line(*argv: str) -> str:
    status, out, err = run(*argv)
    assert status == 2 and out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    return lines[0]


def test_error_no_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a short path: a long one is quoted cut
    line = error_line("--predictions", "none.csv")
    assert "predictions" in line and "none.csv" in line


def test_error_unknown_extension(tmp_path):
    path = tmp_path / "p.xlsx"
    path.write_text("id,gold,a\n", encoding="utf-8")
    assert "p.xlsx" in error_line("--predictions", str(path))


def test_error_not_utf8(tmp_path):
    path = tmp_path / "p.csv"
    path.write_bytes(b"id,gold,a\n1,caf\xe9,cafe\n")
    line = error_line("--predictions", str(path))
    assert "p.csv line 2" in line and "UTF-8" in line


def test_error_empty_file(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("", encoding="utf-8")
    assert "p.csv is empty" in error_line("--predictions", str(path))


def test_error_missing_column(tmp_path):
    line = error_line("--predictions", write_csv(tmp_path, [("1", "x")], header=("id", "gold")))
    assert "p.csv line 1" in line and "'a'" in line


def test_error_wrong_column_count(tmp_path):
    path = write_csv(tmp_path, [("1", "x", "x"), ("2", "y")], header=("id", "gold", "a"))
    line = error_line("--predictions", path)
    assert "p.csv line 3" in line and "columns" in line


def test_error_bad_json_line(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"id": 1, "gold": "x", "a": "x"}\n{"id": 2, "gold": \n', encoding="utf-8")
    line = error_line("--predictions", str(path))
    assert "p.jsonl line 2" in line and "JSON" in line


def test_error_missing_field_in_jsonl(tmp_path):
    path = write_jsonl(tmp_path, [{"id": 1, "gold": "x", "a": "x"}, {"id": 2, "gold": "y"}])
    line = error_line("--predictions", path)
    assert "p.jsonl line 2" in line and "'a'" in line


def test_error_duplicate_id_names_both_lines(tmp_path):
    path = write_csv(
        tmp_path, [("7", "x", "x"), ("8", "y", "y"), ("7", "z", "z")], header=("id", "gold", "a")
    )
    line = error_line("--predictions", path)
    assert "p.csv line 4" in line and "'7'" in line and "line 2" in line and "'id'" in line


def test_error_b_on_some_rows_only(tmp_path):
    path = write_jsonl(
        tmp_path, [{"id": 1, "gold": "x", "a": "x", "b": "x"}, {"id": 2, "gold": "y", "a": "y"}]
    )
    line = error_line("--predictions", path)
    assert "p.jsonl line 2" in line and "'b'" in line and "line 1" in line


def test_error_empty_reference(tmp_path):
    path = write_csv(tmp_path, [("1", "x", "x"), ("2", "", "y")], header=("id", "gold", "a"))
    line = error_line("--predictions", path)
    assert "p.csv line 3" in line and "'gold'" in line and "empty" in line


def test_error_label_that_is_not_a_label(tmp_path):
    path = write_jsonl(tmp_path, [{"id": 1, "gold": "x", "a": ["x"]}])
    line = error_line("--predictions", path)
    assert "p.jsonl line 1" in line and "'a'" in line


def test_error_too_many_labels(tmp_path):
    rows = [(str(i), f"L{i}", "x") for i in range(MAX_LABELS + 5)]
    line = error_line("--predictions", write_csv(tmp_path, rows, header=("id", "gold", "a")))
    # the references are read first: L0 .. L999 on lines 2 .. 1,001 are 1,000 labels,
    # L1000 on line 1,002 is one too many
    assert f"p.csv line {MAX_LABELS + 2}" in line and "'gold'" in line
    assert f"{MAX_LABELS:,}" in line


def test_error_bad_reference_object_in_extraction(tmp_path):
    path = write_csv(
        tmp_path, [("1", '"{""a"": 1}"', "{}"), ("2", "[1]", "{}")], header=("id", "gold", "a")
    )
    line = error_line("--predictions", path, "--task", "extraction")
    assert "p.csv line 3" in line and "'gold'" in line and "not an object" in line


def test_error_tag_of_the_wrong_type(tmp_path):
    path = write_jsonl(tmp_path, [{"id": 1, "gold": "x", "a": "y", "tag": 3}])
    line = error_line("--predictions", path)
    assert "p.jsonl line 1" in line and "'tag'" in line


def test_error_one_field_named_twice(tmp_path):
    line = error_line("--predictions", write_csv(tmp_path, SK_ROWS), "--b-field", "a")
    assert "--b-field" in line and "--a-field" in line


def test_a_real_example_file_when_it_is_there():
    # the site's worked example (written by the examples script); skipped until it exists
    path = Path(__file__).resolve().parents[1] / "docs" / "data" / "evaluation" / "digits"
    if not (path / "predictions.csv").exists():
        pytest.skip("docs/data/evaluation/digits/predictions.csv is not generated yet")
    r = run_json("--predictions", str(path / "predictions.csv"))
    assert r["n"] == r["a"]["n"] and 0 <= r["a"]["accuracy"] <= 1


# ---- the confusion-matrix heat map (calculators.web.render.confusion_matrix_svg) ----------

LONG_LABEL = "a label far longer than any column or margin leaves room for"


def cells(html: str, layout: str = "wide") -> list[str]:
    """The tooltips of the matrix's cells in one layout."""
    svg = web_render.layouts(html)[layout]
    return [
        r.findtext(f"{web_render.SVG}title") or ""
        for r in svg.iter(f"{web_render.SVG}rect")
        if r.findtext(f"{web_render.SVG}title")
    ]


def test_heat_map_draws_one_cell_per_pair_with_its_count():
    html = confusion_matrix_svg(["cat", "dog"], [[3, 1], [0, 2]])
    tips = cells(html)
    assert len(tips) == 4
    assert "reference cat, predicted dog: 1 (25.0% of the reference's 4)" in tips
    assert "reference dog, predicted cat: 0 (0.0% of the reference's 2)" in tips
    svg = web_render.layouts(html)["wide"]
    texts = [t.text for t in svg.iter(f"{web_render.SVG}text")]
    assert {"3", "1", "2"} <= set(texts) and "0" not in texts  # empty cells carry no text
    # the diagonal in blue, the rest in vermillion, never darker than the text allows
    fills = [
        (r.get("fill"), float(r.get("fill-opacity", 0))) for r in svg.iter(f"{web_render.SVG}rect")
    ]
    assert all(op <= 0.55 for _, op in fills)


def test_heat_map_draws_the_most_frequent_labels_past_its_limit():
    k = CONFUSION_MAX_LABELS + 10
    labels = [f"L{i:02d}" for i in range(k)]
    # label i has i + 1 examples, all right: the last 30 labels are the most frequent
    matrix = [[(i + 1) if i == j else 0 for j in range(k)] for i in range(k)]
    html = confusion_matrix_svg(labels, matrix)
    assert len(cells(html)) == CONFUSION_MAX_LABELS**2
    assert f"the {CONFUSION_MAX_LABELS} most frequent of {k} labels" in html
    # L00 .. L09 (1 to 10 examples) are left out; L10 .. L39 drawn
    assert "reference L09," not in html and "reference L10, predicted L10" in html


@pytest.mark.parametrize(
    ("labels", "matrix", "words"),
    [
        ([], [], "no labels"),
        (["a", "b"], [[1, 2]], "2 x 2"),
        (["a"], [[-1]], "whole number"),
        (["a"], [[True]], "whole number"),
        (["a"], [[1.5]], "whole number"),
    ],
)
def test_heat_map_refuses_what_it_cannot_draw(labels, matrix, words):
    with pytest.raises(ValueError, match=words):
        confusion_matrix_svg(labels, matrix)


HEAT_MAPS = {
    "confusion matrix, long labels": confusion_matrix_svg(
        [LONG_LABEL, "b", LONG_LABEL + "!"],
        [[10**9, 1, 0], [5, 0, 7], [0, 0, 3]],
        title=LONG_LABEL,
        heading=LONG_LABEL + " " + LONG_LABEL,
    ),
    "confusion matrix, 30 labels": confusion_matrix_svg(
        [str(i) for i in range(30)], [[(i * j) % 7 * 1000 for j in range(30)] for i in range(30)]
    ),
    "confusion matrix, cut at 30": confusion_matrix_svg(
        [f"class {i}" for i in range(45)], [[1] * 45 for _ in range(45)]
    ),
    "confusion matrix, one label": confusion_matrix_svg([""], [[0]]),
}


@pytest.mark.parametrize("name", sorted(HEAT_MAPS))
def test_heat_maps_pass_the_checks_every_chart_does(name, monkeypatch):
    monkeypatch.setitem(web_render.CHARTS, name, HEAT_MAPS[name])
    web_render.test_nothing_is_drawn_outside_the_chart(name)
    web_render.test_both_layouts_carry_the_same_title_and_data(name)


def test_a_long_file_reports_its_progress(tmp_path):
    # the page's watchdog hears from the computation every PROGRESS_EVERY rows
    rows = [(str(i), "x", "x" if i % 3 else "y", "x") for i in range(2 * PROGRESS_EVERY + 1)]
    path = write_csv(tmp_path, rows, header=("id", "gold", "a", "b"))
    heard: list[tuple[int, int, str]] = []
    progress.listen(lambda done, total, what: heard.append((done, total, what)))
    try:
        r = run_json("--predictions", path)
    finally:
        progress.listen(None)
    total = 2 * PROGRESS_EVERY + 1
    for what in ("references", "predictions of a", "predictions of b"):
        assert [h for h in heard if h[2] == what] == [
            (PROGRESS_EVERY, total, what),
            (2 * PROGRESS_EVERY, total, what),
        ]
    # rows 0, 3, 6, ...: a wrong and b right
    assert r["paired"]["positive_flips"] == len(range(0, total, 3))


@pytest.mark.parametrize(
    ("cost", "words"),
    [
        ("look-alike", ["TAG=GPU_HOURS", "'look-alike'"]),
        ("=3", ["TAG=GPU_HOURS", "'=3'"]),
        ("look-alike=abc", ["'abc'", "1,000,000,000"]),
        ("look-alike=inf", ["'inf'", "finite"]),
        ("look-alike=nan", ["'nan'", "finite"]),
        ("look-alike=0", ["got 'look-alike=0'", "> 0", "1,000,000,000"]),
        ("look-alike=-2", ["got 'look-alike=-2'", "> 0"]),
        ("look-alike=2e9", ["got 'look-alike=2e9'", "at most 1,000,000,000"]),
        ("dog=3", ["'dog'", "known tags: 'blurry', 'look-alike', '(untagged)'"]),
    ],
)
def test_error_bad_cost(tmp_path, cost, words):
    line = error_line("--predictions", write_csv(tmp_path, SK_ROWS), "--cost", cost)
    assert line.startswith("error: --cost")
    for w in words:
        assert w in line


def test_error_cost_given_twice(tmp_path):
    path = write_csv(tmp_path, SK_ROWS)
    line = error_line("--predictions", path, "--cost", "blurry=1", "--cost", "blurry=2")
    assert line.startswith("error: --cost") and "'blurry' twice" in line


def test_error_cost_without_a_tag_column(tmp_path):
    rows = [(i, g, a) for i, g, a, _, _ in SK_ROWS]
    path = write_csv(tmp_path, rows, header=("id", "gold", "a"))
    line = error_line("--predictions", path, "--cost", "blurry=1")
    assert line.startswith("error: --cost") and "'tag'" in line and "--tag-field" in line
