"""The evaluation-set size calculator (`calculators.evaluation.sizing` and the `eval-size`
command), and the sentences of docs/evaluation/evaluation-set.md and
docs/calculators/eval-size.md that read its figures: each is computed here on the pages'
own inputs and its claim asserted, so that a change in the calculator that turned one
false fails here rather than building silently."""

from __future__ import annotations

import io
import itertools
import json
import math
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculators.cli import main
from calculators.errors import InputError
from calculators.evaluation.sizing import (
    EXACT_MAX_EXAMPLES,
    MAX_EXAMPLES,
    accuracy_examples_for_half_width,
    accuracy_standard_error,
    check_paired_table,
    connor_examples,
    examples_for_power,
    mcnemar_power,
    mcnemar_power_exact,
    mcnemar_power_normal,
    paired_difference_examples_for_half_width,
    paired_difference_standard_error,
    unpaired_examples,
    wilson_interval,
)
from calculators.web import compute

DOCS = Path(__file__).resolve().parents[1] / "docs"

# --- Pinned values, each from the public source named.


def test_wilson_interval_matches_newcombe_1998():
    # R. G. Newcombe, "Two-sided confidence intervals for the single proportion",
    # Statistics in Medicine 17 (1998) 857-872, Table I, method 3 (Wilson score, no
    # continuity correction): 81/263 -> 0.2553 to 0.3662; 15/148 -> 0.0624 to 0.1605.
    low, high = wilson_interval(81 / 263, 263)
    assert (round(low, 4), round(high, 4)) == (0.2553, 0.3662)
    low, high = wilson_interval(15 / 148, 148)
    assert (round(low, 4), round(high, 4)) == (0.0624, 0.1605)


def test_connor_sample_size_matches_published_examples():
    # powerandsamplesize.com (HyLown), "Compare Paired Proportions: McNemar's Z-test,
    # 2-Sided Equality", citing Connor (1987) p. 209: p01 0.45, p10 0.05, alpha 0.05,
    # power 0.8 -> ceiling(n) = 23.
    assert connor_examples(0.5, 0.05 - 0.45, alpha=0.05, power=0.8) == 23
    # clinicaltrials-tools, McNemar's test sample size (Connor 1987): discordance 0.45,
    # discordant odds ratio 2 (0.30 against 0.15), power 0.8 -> 155 pairs, power 80.1%.
    assert connor_examples(0.45, 0.15, alpha=0.05, power=0.8) == 155
    assert round(mcnemar_power_normal(155, 0.45, 0.15), 3) == 0.801


def test_unpaired_examples_match_r_power_prop_test():
    # R's stats::power.prop.test documentation example: p1 0.50, p2 0.75, power 0.90
    # -> n = 76.7 per group; n = 50 gives power 0.740 (checked via the n formula's
    # inverse: 50 is below what 0.74 + a little needs, 51 above 0.74's).
    assert unpaired_examples(0.5, 0.25, alpha=0.05, power=0.9) == 77
    assert unpaired_examples(0.5, 0.25, alpha=0.05, power=0.739) <= 50
    assert unpaired_examples(0.5, 0.25, alpha=0.05, power=0.741) > 50


def _scipy_exact_power(n: int, discordance: float, gain: float, alpha: float) -> float:
    """The exact conditional power summed term by term with scipy's binomial pmf and
    scipy's two-sided binomial test: an independent public implementation."""
    stats = pytest.importorskip("scipy.stats")
    pi = (discordance + gain) / (2 * discordance)
    total = 0.0
    for m in range(1, n + 1):
        weight = stats.binom.pmf(m, n, discordance)
        if weight < 1e-17:
            continue
        reject = sum(
            stats.binom.pmf(x, m, pi)
            for x in range(m + 1)
            if stats.binomtest(x, m, 0.5).pvalue <= alpha
        )
        total += weight * reject
    return float(total)


@pytest.mark.parametrize(
    ("n", "discordance", "gain", "alpha"),
    [(50, 0.3, 0.1, 0.05), (120, 0.1, 0.05, 0.05), (200, 0.5, -0.1, 0.01), (60, 0.2, 0.2, 0.05)],
)
def test_exact_power_equals_scipy_summed_term_by_term(n, discordance, gain, alpha):
    want = _scipy_exact_power(n, discordance, gain, alpha)
    assert mcnemar_power_exact(n, discordance, gain, alpha) == pytest.approx(want, abs=1e-11)


def test_exact_power_with_every_example_discordant_is_the_binomial_test_power():
    # psi = 1: M = n always, so the power is the exact binomial test's power on n trials,
    # summed here with integers: reject x with 2 P(X <= min(x, n - x)) <= alpha at 1/2.
    n, gain, alpha = 30, 0.4, 0.05
    pi = (1 + gain) / 2
    lower = [sum(math.comb(n, j) for j in range(k + 1)) for k in range(n + 1)]
    want = sum(
        math.comb(n, x) * pi**x * (1 - pi) ** (n - x)
        for x in range(n + 1)
        if 2 * lower[min(x, n - x)] <= alpha * 2**n and 2 * min(x, n - x) < n
    )
    assert mcnemar_power_exact(n, 1.0, gain, alpha) == pytest.approx(want, abs=1e-13)


def test_exact_power_at_no_gain_is_at_most_alpha():
    # the exact conditional test is conservative: its real level is below alpha
    for n in (20, 200, 2000):
        assert 0 < mcnemar_power_exact(n, 0.2, 0.0, 0.05) <= 0.05


def test_exact_and_normal_agree_at_large_n():
    # where the calculator switches methods the power jumps by less than 0.2 points
    exact = mcnemar_power_exact(EXACT_MAX_EXAMPLES, 0.5, 0.003)
    assert exact == pytest.approx(mcnemar_power_normal(EXACT_MAX_EXAMPLES, 0.5, 0.003), abs=2e-3)


def test_huge_n_takes_bounded_time_and_switches_to_the_normal_approximation():
    start = time.perf_counter()
    power, method = mcnemar_power(MAX_EXAMPLES, 0.5, 1e-4)
    assert method == "normal" and 0.5 < power < 1
    power, method = mcnemar_power(EXACT_MAX_EXAMPLES, 0.9, 0.002)
    assert method == "exact" and 0 < power < 1
    n, method = examples_for_power(0.5, 2e-4)
    assert method == "normal" and n > EXACT_MAX_EXAMPLES
    assert time.perf_counter() - start < 30  # a fraction of a second in CPython


def test_search_returns_a_crossing_of_the_target():
    for discordance, gain in ((0.1, 0.02), (0.02, 0.01), (0.3, 0.1), (1.0, 0.2)):
        n, method = examples_for_power(discordance, gain, 0.05, 0.8)
        assert method == "exact"
        assert mcnemar_power_exact(n, discordance, gain) >= 0.8
        assert mcnemar_power_exact(n - 1, discordance, gain) < 0.8


def test_exact_power_saw_tooths_when_every_example_is_discordant():
    # why the search's docstring warns: with psi = 1 a larger n can have less power
    powers = [mcnemar_power_exact(n, 1.0, 0.2) for n in range(1, 40)]
    assert any(b < a for a, b in itertools.pairwise(powers))


# --- Properties.

SMALL_PSI = st.floats(min_value=0.01, max_value=0.3)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=3000),
    step=st.integers(min_value=1, max_value=500),
    psi=SMALL_PSI,
    share=st.floats(min_value=0.05, max_value=1.0),
)
def test_power_increases_with_n(n, step, psi, share):
    # the exact power for discordances up to 0.3 (where evaluation sets live: the
    # saw-tooth needs nearly every example discordant); the normal one everywhere
    gain = psi * share
    assert mcnemar_power_exact(n + step, psi, gain) >= mcnemar_power_exact(n, psi, gain) - 1e-12
    assert mcnemar_power_normal(n + step, psi, gain) >= mcnemar_power_normal(n, psi, gain)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=3000),
    psi=st.floats(min_value=0.01, max_value=1.0),
    a=st.floats(min_value=0.0, max_value=1.0),
    b=st.floats(min_value=0.0, max_value=1.0),
)
def test_power_increases_with_the_gain(n, psi, a, b):
    small, large = sorted((a * psi, b * psi))
    assert mcnemar_power_exact(n, psi, large) >= mcnemar_power_exact(n, psi, small) - 1e-12
    if n >= 4:  # Connor's formula is monotone in the gain from n >= z^2 psi (its docstring)
        assert mcnemar_power_normal(n, psi, large) >= mcnemar_power_normal(n, psi, small) - 1e-15


@settings(max_examples=100, deadline=None)
@given(
    psi=st.floats(min_value=0.001, max_value=1.0),
    share=st.floats(min_value=0.0, max_value=1.0),
    h1=st.floats(min_value=1e-3, max_value=1.0),
    h2=st.floats(min_value=1e-3, max_value=1.0),
    p=st.floats(min_value=0.0, max_value=1.0),
)
def test_examples_fall_as_the_target_half_width_grows(psi, share, h1, h2, p):
    narrow, wide = sorted((h1, h2))
    gain = psi * share
    assert paired_difference_examples_for_half_width(
        psi, gain, wide
    ) <= paired_difference_examples_for_half_width(psi, gain, narrow)
    assert accuracy_examples_for_half_width(p, wide) <= accuracy_examples_for_half_width(p, narrow)


@settings(max_examples=200, deadline=None)
@given(
    p=st.floats(min_value=0.0, max_value=1.0), n=st.integers(min_value=1, max_value=MAX_EXAMPLES)
)
def test_standard_error_lies_within_its_bound(p, n):
    se = accuracy_standard_error(p, n)
    assert 0.0 <= se <= 0.5 / math.sqrt(n) * (1 + 1e-12)
    low, high = wilson_interval(p, n)
    assert 0.0 <= low <= high <= 1.0


@settings(max_examples=100, deadline=None)
@given(
    psi=st.floats(min_value=0.001, max_value=1.0),
    share=st.floats(min_value=-1.0, max_value=1.0),
    n=st.integers(min_value=1, max_value=10**6),
)
def test_paired_standard_error_lies_within_its_bound(psi, share, n):
    se = paired_difference_standard_error(psi, psi * share, n)
    assert 0.0 <= se <= math.sqrt(psi / n) * (1 + 1e-12)


# --- Bad input: InputError naming the field, the bound and the value.


@pytest.mark.parametrize(
    ("call", "field", "words"),
    [
        (lambda: accuracy_standard_error(1.5, 100), "accuracy", "from 0 to 1"),
        (lambda: accuracy_standard_error(0.5, 0), "examples", ">= 1, got 0"),
        (lambda: accuracy_standard_error(0.5, MAX_EXAMPLES + 1), "examples", "at most"),
        (
            lambda: paired_difference_standard_error(0.05, 0.1, 100),
            "gain",
            "at most the discordance",
        ),
        (lambda: paired_difference_standard_error(0.0, 0.0, 100), "discordance", "above 0"),
        (lambda: mcnemar_power_exact(100, 0.1, 0.02, alpha=0.9), "alpha", "from 1e-10 to 0.5"),
        (lambda: connor_examples(0.1, 0.0), "gain", "must not be 0"),
        (lambda: connor_examples(0.1, 0.02, power=0.01), "power", "above alpha"),
        (lambda: connor_examples(0.5, 1e-6), "gain", "more than the 1,000,000,000"),
        (lambda: unpaired_examples(0.95, 0.1), "gain", "within [0, 1]"),
        (lambda: wilson_interval(0.5, 10, confidence=1.0), "confidence", "from 0.5"),
        (lambda: paired_difference_examples_for_half_width(0.1, 0.0, 0.0), "half_width", "above 0"),
        (lambda: check_paired_table(0.9, 0.5, 0.01), "discordance", "2 (1 - accuracy) - gain"),
        (lambda: check_paired_table(0.05, 0.3, -0.01), "discordance", "2 accuracy + gain"),
        (lambda: mcnemar_power_exact(EXACT_MAX_EXAMPLES + 1, 0.1, 0.01), "examples", "normal"),
        (lambda: examples_for_power(0.1, 0.02, method="bayes"), "method", "'exact' or 'normal'"),
    ],
)
def test_bad_input_names_field_and_bound(call, field, words):
    with pytest.raises(InputError, match=None) as raised:
        call()
    assert raised.value.field == field
    assert words in str(raised.value)


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as e:
            code = int(e.code or 0)
    return code, out.getvalue(), err.getvalue()


def test_command_json_and_one_line_error():
    code, out, _ = _cli("eval-size", "--discordance", "0.1", "--gain", "0.02", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["mcnemar"]["examples"] == examples_for_power(0.1, 0.02)[0]
    assert data["mcnemar"]["examples_normal"] == connor_examples(0.1, 0.02)
    assert [g["id"] for g in data["gains"]] == ["0p5pt", "1pt", "2pt", "3pt", "5pt"]
    code, out, err = _cli("eval-size", "--discordance", "0.01", "--gain", "0.02")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "--gain" in err and "0.02" in err


def test_pilot_count_sets_the_discordance():
    r = compute("eval-size", {"examples": "500", "discordant": "10", "accuracy": "0.964"})
    assert r["paired"]["discordance"] == 10 / 500
    assert any("not used" in n for n in r["notes"])
    with pytest.raises(ValueError, match="discordant"):
        compute("eval-size", {"examples": "500", "discordant": "501"})


# --- The pages' sentences, on the pages' own inputs.


def _table(discordance: str) -> dict[str, Any]:
    return compute("eval-size", {"accuracy": "0.85", "discordance": discordance, "gain": "0.01"})


@pytest.fixture(scope="module")
def table() -> dict[str, dict[str, Any]]:
    return {d: _table(d) for d in ("0.02", "0.05", "0.1", "0.2")}


@pytest.fixture(scope="module")
def digits() -> tuple[dict[str, Any], dict[str, Any]]:
    pilot = compute("compare", {"predictions": "data/evaluation/digits/predictions.csv"})
    size = compute(
        "eval-size",
        {
            "accuracy": repr(pilot["a"]["accuracy"]),
            "examples": str(pilot["n"]),
            "discordant": str(pilot["paired"]["mcnemar"]["discordant"]),
            "gain": "0.01",
            "half_width": "0.005",
        },
    )
    return pilot, size


def _paired(r: dict[str, Any], gain_id: str) -> int | None:
    return next(g["examples_paired"] for g in r["gains"] if g["id"] == gain_id)


def test_table_cells_the_page_quotes_exist_and_the_others_are_impossible(table):
    # the page writes "above the discordance" for 3 and 5 points at 0.02, quotes the rest
    for d, r in table.items():
        for g in r["gains"]:
            impossible = g["gain"] > float(d)
            assert (g["examples_paired"] is None) == impossible, (d, g)
            assert g["examples_unpaired"] is not None


def test_examples_grow_in_proportion_to_the_discordance(table):
    # "The examples grow in proportion to the discordance": n / psi within 25% across columns
    for gain_id in ("0p5pt", "1pt", "2pt"):
        per_psi = [_paired(r, gain_id) / float(d) for d, r in table.items()]
        assert max(per_psi) <= 1.25 * min(per_psi), (gain_id, per_psi)


def test_halving_the_gain_takes_about_four_times_the_examples(table):
    for r in table.values():
        for small, large in (("0p5pt", "1pt"), ("1pt", "2pt")):
            ratio = _paired(r, small) / _paired(r, large)
            assert 3.5 <= ratio <= 4.6, ratio


def test_every_paired_column_needs_fewer_than_two_separate_sets(table):
    for r in table.values():
        for g in r["gains"]:
            if g["examples_paired"] is not None:
                assert g["examples_paired"] < g["examples_unpaired"]
    low = table["0.02"]
    assert _paired(low, "1pt") * 5 < next(
        g["examples_unpaired"] for g in low["gains"] if g["id"] == "1pt"
    )  # "many times more when the models err on the same examples"


def test_the_table_reads_at_the_levels_the_page_names(table):
    m = table["0.1"]["mcnemar"]
    assert (m["alpha"], m["power_target"]) == (0.05, 0.8)
    assert all(g["method"] == "exact" for g in table["0.1"]["gains"])


def test_digits_worked_example_sentences(digits):
    pilot, size = digits
    a, p, m = size["accuracy"], size["paired"], size["mcnemar"]
    assert pilot["a"]["accuracy"] == pilot["b"]["accuracy"]  # "Both score ..."
    # "wider than the gain on each side"
    assert (a["wilson_high"] - a["value"]) > p["gain"] and (a["value"] - a["wilson_low"]) > p[
        "gain"
    ]
    # "The paired difference is more precise" than one accuracy
    assert p["standard_error"] < a["standard_error"]
    assert p["half_width_target"] == p["gain"] / 2  # "plus or minus half the gain"
    # "The test set is too small": power at n below target; "more than three times"
    assert m["power"] < m["power_target"] and m["power_method"] == "exact"
    assert m["examples"] > 3 * a["examples"]
    assert m["examples"] > m["examples_normal"]  # "the exact test is conservative"
    assert size["unpaired"]["examples_per_set"] > m["examples"]


def test_calculator_page_sentences():
    ex = compute("eval-size", {})
    assert ex["mcnemar"]["examples"] > ex["mcnemar"]["examples_normal"]
    big = compute("eval-size", {"examples": "2000000", "method": "exact"})
    assert big["mcnemar"]["power_method"] == "normal" and big["notes"]


def test_the_pages_blocks_hold_the_inputs_these_tests_use():
    # reads the Markdown (deselected in Pyodide, where the pages are not copied)
    page = (DOCS / "evaluation" / "evaluation-set.md").read_text(encoding="utf-8")
    for d, i in (("0.02", "t02"), ("0.05", "t05"), ("0.1", "t10"), ("0.2", "t20")):
        block = f"id: {i}\nshow: no\naccuracy: 0.85\ndiscordance: {d}\ngain: 0.01\n"
        assert block in page
    assert (
        "id: size\nshow: no\naccuracy: [[dig:a.accuracy|raw]]\nexamples: [[dig:n|raw]]\n"
        "discordant: [[dig:paired.mcnemar.discordant|raw]]\ngain: 0.01\nhalf_width: 0.005\n"
    ) in page
    assert "predictions: data/evaluation/digits/predictions.csv" in page
    calc = (DOCS / "calculators" / "eval-size.md").read_text(encoding="utf-8")
    assert "id: big\nshow: no\nexamples: 2000000\nmethod: exact\n" in calc
