"""The sentences of docs/budget/campaign-budget.md and docs/evaluation/seed-variability.md
that read their computed figures, held to them: the seed counts, their minimum detectable
effects, the control runs, the rerun margin rounded per phase and the packages. If a
calculator change turned one of them false the pages would still build, so each is checked
here on the pages' own blocks, computed as the site's hook computes them (references in a
block's values resolved, earlier blocks first)."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from calculators.statistics.seeds import minimum_detectable_effect, paired_power, seeds_needed
from tests.page_blocks import hook, results_by_id

ROOT = Path(__file__).resolve().parents[1]
BUDGET_PAGE = ROOT / "docs" / "budget" / "campaign-budget.md"
SEEDS_PAGE = ROOT / "docs" / "evaluation" / "seed-variability.md"
BLOCK = hook()._BLOCK


@cache
def blocks(page: Path) -> dict[str, dict[str, Any]]:
    """Every block with an id on `page`, computed on its inputs as the page resolves them."""
    return results_by_id(page)


@pytest.fixture(scope="module")
def b() -> dict[str, dict[str, Any]]:
    return blocks(BUDGET_PAGE)


@pytest.fixture(scope="module")
def s() -> dict[str, dict[str, Any]]:
    return blocks(SEEDS_PAGE)


def _prose_before(page: Path, heading: str) -> str:
    text = BLOCK.sub("", page.read_text(encoding="utf-8"))
    return text[: text.index(heading)]


# --- campaign-budget.md


def test_the_decision_is_on_the_first_screen():
    # "a reader finds the decision for their case within the first 600 words"
    before = _prose_before(BUDGET_PAGE, "## The problem")
    assert "## The decision for your case" in before
    assert len(before.split()) <= 600


def test_the_seed_counts_are_tied_to_their_mde(b):
    # "With s_d and delta = 0.02: n seeds, whose MDE is ..." and "Three seeds detect only
    # ..., more than delta": the seeds calculator's functions, on the seeds page's spread.
    sd = b["pilot"]["paired"]["sd_difference"]
    plan = b["b7"]["seed_count"]
    assert plan["sd_difference"] == pytest.approx(sd, rel=1e-5)  # |raw| keeps 6 digits
    assert plan["seeds"] == seeds_needed(0.02, plan["sd_difference"]) == b["pilot"]["seeds_needed"]
    assert plan["minimum_detectable_effect"] <= plan["detect"] == 0.02
    three = b["three"]["seed_count"]
    assert three["seeds"] == 3 and three["minimum_detectable_effect"] > 0.02
    # "three seeds would miss a true two-point gain more often than ... 80% power allows"
    assert paired_power(0.02, three["sd_difference"], 3) < three["power"] == 0.8
    assert three["minimum_detectable_effect"] == pytest.approx(
        b["pilot"]["minimum_detectable_effect"], rel=1e-5
    )
    # a one-point rule needs more seeds, more GPU-hours and more days
    one = b["one"]
    assert one["seed_count"]["seeds"] > plan["seeds"]
    assert one["seed_count"]["minimum_detectable_effect"] <= 0.01
    assert one["gpu_hours"] > b["b7"]["gpu_hours"] and one["wall_days"] > b["b7"]["wall_days"]


def test_the_seed_count_names_its_test_and_what_the_exact_test_needs(b):
    # "The count above is for the paired t test ... with the plan's [[floor4:paired.seeds]]
    # seeds, an arm above its control on every seed still gets p = [[floor4]], and with
    # [[floor5]] seeds [[floor5]]. The fewest seeds that can reach 5% are [[floor6]] ...
    # plan that many per configuration: ... [[exact:gpu_hours]] GPU-hours instead of
    # [[b7:gpu_hours]]"; the decision table: "plan [[exact:seed_count.seeds]]"
    n = b["b7"]["seed_count"]["seeds"]
    floors = {k: b[f"floor{k}"] for k in (4, 5, 6)}
    assert floors[4]["paired"]["seeds"] == n  # the plan's own count
    for k, r in floors.items():
        assert r["paired"]["seeds"] == k
        assert r["summary"]["wins"] == k  # B above A on every seed: the floor, 2 / 2^k
        assert (
            r["permutation_p_value"] == 2 / 2**k == r["permutation"]["at_least_as_extreme"] / 2**k
        )
    assert floors[4]["permutation_p_value"] > floors[5]["permutation_p_value"] >= 0.05
    assert floors[6]["permutation_p_value"] < 0.05  # the fewest that can reach 5%
    exact = b["exact"]
    assert exact["seed_count"]["seeds"] == 6 > n
    assert exact["seed_count"]["sd_difference"] == b["b7"]["seed_count"]["sd_difference"]
    experiments = exact["phases"][1]
    assert (experiments["runs"], experiments["control_runs"]) == (3 * 6, 6)
    assert exact["gpu_hours"] > b["b7"]["gpu_hours"]
    mde = exact["seed_count"]["minimum_detectable_effect"]
    assert mde < b["b7"]["seed_count"]["minimum_detectable_effect"]
    assert mde == pytest.approx(minimum_detectable_effect(exact["seed_count"]["sd_difference"], 6))
    # the page says which test the count assumes, in the decision and in the method
    text = " ".join(BUDGET_PAGE.read_text(encoding="utf-8").split())
    assert "The count assumes the paired \\(t\\) test" in text
    assert "The count above is for the paired \\(t\\) test" in text
    assert "(#which-test-the-seeds-assume)" in text and "#### Which test the seeds assume" in text


FITS = re.compile(r"(\w+)\s+\[\[[^\]|]+\|fits\]\]")
PLURAL = {"they", "we", "you", "these", "those", "both", "all", "rounds", "runs", "seeds"}


@pytest.mark.parametrize("page", [BUDGET_PAGE, SEEDS_PAGE], ids=lambda p: p.name)
def test_a_fits_verdict_reads_for_either_outcome(page):
    # `|fits` prints "fits" or "does not fit": its subject must be singular for both to read
    # ("they fits" once rendered on the campaign budget page)
    text = BLOCK.sub("", page.read_text(encoding="utf-8"))
    subjects = [m.group(1).lower() for m in FITS.finditer(text)]
    assert subjects and not set(subjects) & PLURAL, subjects


def test_five_rounds_fit_in_the_30_day_package_sentence(b):
    # "Five rounds ... take [[rounds:wall_days]] days ...: their schedule
    # [[rounds:packages.2.covers|fits]] in a 30-day package, with [..] hours left"
    text = " ".join(BUDGET_PAGE.read_text(encoding="utf-8").split())
    assert "their schedule [[rounds:packages.2.covers|fits]] in a 30-day package" in text
    assert b["rounds"]["packages"][2]["days"] == 30 and b["rounds"]["packages"][2]["covers"]


def test_both_pages_give_three_seeds_the_same_mde(b, s):
    # "so that ... three seeds detect the same gain on both"
    assert b["three"]["seed_count"]["minimum_detectable_effect"] == pytest.approx(
        s["ex3"]["minimum_detectable_effect"], rel=1e-5
    )
    assert b["pilot"]["paired"]["sd_difference"] == s["ex"]["paired"]["sd_difference"]


def test_control_runs_are_one_set_per_comparison_phase(b):
    r = b["b7"]
    n = r["seed_count"]["seeds"]
    phases = {p["name"]: p for p in r["phases"]}
    for name in ("experiments", "evaluation"):  # "comparison phases (arms=3)"
        p = phases[name]
        assert (p["arms"], p["runs"], p["control_runs"]) == (3, 3 * n, n)
    assert r["control_runs"] == 2 * n
    assert r["control_gpu_hours"] == n * 6 + n * 0.5
    for name in ("initial check", "resumption test", "export"):
        assert phases[name]["control_runs"] == 0


def test_the_margin_is_rounded_per_phase(b):
    # "Rounded once over the campaign they would be [pooled]"; "the rounding adds
    # [rounding] GPU-hours over the exact share"; "the resumption test budgets 1 rerun for
    # 1 run"
    r = b["b7"]
    assert r["reruns"] == sum(p["reruns"] for p in r["phases"]) > r["pooled_reruns"]
    for p in r["phases"]:
        assert p["reruns"] == -(-(p["runs"] + p["control_runs"]) * 2 // 10)  # ceil at 0.2
    assert r["rounding_gpu_hours"] > 0
    resume = r["phases"][3]
    assert resume["name"] == "resumption test" and resume["runs"] == resume["reruns"] == 1
    # "a phase of two one-hour checks at m = 0.2 budgets one rerun"
    check = r["phases"][0]
    assert (check["runs"], check["reruns"]) == (2, 1) and check["reruns_exact"] < 0.5
    hours = (1, 6, 0.5, 2, 1)  # the page's GPU-hours per run, phase by phase
    exact = sum(
        0.2 * (p["runs"] + p["control_runs"]) * h for p, h in zip(r["phases"], hours, strict=True)
    )
    assert r["margin_gpu_hours"] == pytest.approx(exact + r["rounding_gpu_hours"])


def test_packages_as_the_page_reads_them(b):
    r7, r3, r8 = b["b7"], b["b3"], b["b8"]
    # one GPU: the 3-day package does not cover (negative slack), the 7-day one is cheapest
    assert not r7["packages"][0]["covers"] and r7["packages"][0]["slack_hours"] < 0
    assert r7["cheapest_covering_days"] == 7 and r7["packages"][1]["covers"]
    # "Rent four GPUs: ... the cheapest covering package lasts 3 days and costs [packages.0]"
    assert r3["cheapest_covering_days"] == 3 and r3["packages"][0]["covers"]
    assert r3["packages"][0]["price_usd"] > r7["packages"][1]["price_usd"]
    assert r3["cost_usd"] == r7["cost_usd"]
    # "Eight GPUs take [..] wall hours against [..] on four, not half"
    assert r3["wall_hours"] / 2 < r8["wall_hours"] < r3["wall_hours"]
    assert r8["phases"][3]["wall_hours"] == r3["phases"][3]["wall_hours"]
    # "On one GPU, the 30-day package covers this plan but leaves [slack] hours unused"
    assert r7["packages"][2]["covers"] and r7["packages"][2]["slack_hours"] > 0
    # "Confirming all eight variants ... [does not fit] in a 7-day package": read by |fits|
    # a one-point rule: the 7-day package no longer covers one GPU
    assert b["one"]["cheapest_covering_days"] == 30
    # "Five rounds ... fit in a 30-day package", slack left
    assert b["rounds"]["packages"][2]["covers"] and b["rounds"]["packages"][2]["slack_hours"] > 0
    assert not b["rounds"]["packages"][1]["covers"]


def test_screening_is_cheaper_than_confirming(b):
    assert b["screen"]["cost_usd"] < b["confirm"]["cost_usd"] < b["confirmall"]["cost_usd"]
    assert b["confirm"]["control_runs"] == b["confirm"]["seed_count"]["seeds"]


def test_no_margin_is_fewer_hours(b):
    assert b["nomargin"]["gpu_hours"] < b["b7"]["gpu_hours"]
    assert b["nomargin"]["wall_days"] < b["b7"]["wall_days"]


# --- seed-variability.md


def test_the_seeds_table_ties_every_count_to_its_mde(s):
    # the package table: each row's seeds come with the MDE the budget computes for them,
    # the same as the seeds calculator's at that count
    sd = s["ex"]["paired"]["sd_difference"]
    for block, n in (("s3", 3), ("s5", 5), ("s6", 6), ("s10", 10)):
        plan = s[block]["seed_count"]
        assert plan["seeds"] == n
        assert plan["minimum_detectable_effect"] == pytest.approx(
            minimum_detectable_effect(sd, n), rel=1e-5
        )
        # a comparison of one change against the baseline: n runs and n control runs
        (p,) = s[block]["phases"]
        assert (p["runs"], p["control_runs"]) == (n, n)
    # "the seeds that detect delta": the budget asked for delta gives the seeds calculator's n
    assert s["sdelta"]["seed_count"]["seeds"] == s["ex"]["seeds_needed"]
    assert s["sdelta"]["seed_count"]["minimum_detectable_effect"] <= 0.005
    # "... which only the 30-day package holds"
    assert [k["covers"] for k in s["sdelta"]["packages"]] == [False, False, True]
    # "Three seeds answer only 'is the gain larger than ...?', more than twice the gain
    # measured here"
    assert (
        s["s3"]["seed_count"]["minimum_detectable_effect"]
        > 2 * s["ex"]["paired"]["mean_difference"]
    )


def test_more_seeds_detect_smaller_gains_on_the_seeds_page(s):
    mdes = [s[k]["seed_count"]["minimum_detectable_effect"] for k in ("s3", "s5", "s6", "s10")]
    assert mdes == sorted(mdes, reverse=True)
    # "three seeds detect only ..., more than the gap measured here"
    assert s["ex3"]["minimum_detectable_effect"] > s["ex"]["paired"]["mean_difference"]
    assert s["ex5"]["minimum_detectable_effect"] > s["ex"]["paired"]["mean_difference"]


def test_six_seeds_pass_the_exact_floor_and_have_an_mde(s):
    # "plan at least six seeds when the exact test is to decide; with the example's
    # spread six seeds detect [ex6]"
    assert s["six"]["permutation_p_value"] < 0.05 <= s["five"]["permutation_p_value"]
    assert s["ex6"]["minimum_detectable_effect"] == pytest.approx(
        s["s6"]["seed_count"]["minimum_detectable_effect"], rel=1e-5
    )


def test_the_package_sentences_of_the_seeds_page(s):
    # "Five seeds each fill a 3-day package to the hour"
    assert s["s5"]["packages"][0]["covers"] and 0 <= s["s5"]["packages"][0]["slack_hours"] < 1
    # "on four GPUs, ten seeds each ... fit in a 3-day package of four GPUs"
    assert s["s10x4"]["packages"][0]["covers"]
    assert s["s10x4"]["packages"][0]["price_usd"] > s["s10"]["packages"][1]["price_usd"]
    # "with runs of 24 GPU-hours ... the 30-day package holds them"
    assert s["l10"]["packages"][2]["covers"]


def test_the_calculator_page_reads_the_rounding_example():
    # docs/calculators/budget.md: "the initial check's 2 runs budget 1 rerun and the
    # experiments' 12 runs and 4 control runs budget 4: in all 11 reruns, where one rounding
    # over the campaign would give only 8"
    r = blocks(ROOT / "docs" / "calculators" / "budget.md")["ex"]
    check, experiments = r["phases"][0], r["phases"][1]
    assert (check["runs"], check["control_runs"], check["reruns"]) == (2, 0, 1)
    assert (experiments["runs"], experiments["control_runs"], experiments["reruns"]) == (12, 4, 4)
    assert (r["reruns"], r["pooled_reruns"]) == (11, 8)


def test_the_calculators_example_is_the_campaign_budget_guides_plan(b):
    # docs/calculators/budget.md, "The example campaign": the default phases (`ex`, no phase
    # typed) are comparison phases of [[ex:phases.1.arms]] arms and a control on
    # [[ex:phases.1.seeds]] seeds, "the fewest whose paired t test detects a gain of
    # [[exs:seed_count.detect]] ... given an sd of [[exs:seed_count.sd_difference]] ... It
    # is the plan of the campaign budget guide": `exs` types that plan's phases
    page = blocks(ROOT / "docs" / "calculators" / "budget.md")
    ex, exs = page["ex"], page["exs"]
    assert ex["example_phases"] and not exs["example_phases"]
    # the default states the seed plan its comparison phases were sized for, as `exs`,
    # which types the guide's phases with the guide's spread and gain, computes it
    assert ex["seed_count"] == exs["seed_count"]
    assert ex["phases"] == exs["phases"]
    assert ex["gpu_hours"] == exs["gpu_hours"] and ex["wall_hours"] == exs["wall_hours"]
    s = exs["seed_count"]
    assert s == b["b7"]["seed_count"]  # the guide's spread, gain and seeds
    assert (s["detect"], s["power"], s["alpha"]) == (0.02, 0.8, 0.05)
    assert s["seeds"] == seeds_needed(s["detect"], s["sd_difference"])
    assert s["minimum_detectable_effect"] <= s["detect"]
    for i in (1, 2):  # experiments and evaluation
        p = ex["phases"][i]
        assert (p["arms"], p["seeds"]) == (3, s["seeds"])
        assert (p["runs"], p["control_runs"]) == (3 * s["seeds"], s["seeds"])

    # the same phases as the guide's plan, on its own GPUs and price
    def shape(r):
        return [(p["name"], p["runs"], p["control_runs"], p["gpu_hours"]) for p in r["phases"]]

    assert shape(ex) == shape(b["b7"])


def test_the_examples_run_sizes_count_the_lora_step_the_probe_measures():
    # The example campaign is LoRA (rank 16, all linear layers) on Llama 3.1 8B; the
    # throughput probe, given --lora-rank as the page's command gives it, counts
    # 4N + 6 N_a per token plus attention. The blocks that size the runs must count the
    # same, or a measured MFU plugged back in gives the wrong hours.
    from calculators.model.presets import load_preset
    from calculators.model.spec import ModelSpec
    from calculators.training.throughput import matmul_parameters
    from calculators.web import compute
    from tests.page_blocks import page_blocks

    lora = {"lora_rank": "16", "lora_targets": "all-linear"}  # as the block writes them
    by_id = {x.id: x for x in page_blocks(BUDGET_PAGE) if x.id}
    for bid in ("tshort", "tfull", "tlow", "tfour"):
        block = by_id[bid]
        assert {k: block.inputs[k] for k in lora} == lora, bid
        n = matmul_parameters(ModelSpec.from_hf_config(load_preset(block.inputs["model"])))
        full = compute("throughput", {k: v for k, v in block.inputs.items() if k not in lora})
        attention = full["training"]["flops_per_token"] - 6 * n
        t = block.result["training"]
        assert t["flops_per_token"] == 4 * n + 6 * t["adapter_parameters"] + attention, bid
    probe_command = BUDGET_PAGE.read_text(encoding="utf-8")
    assert "--lora-rank 16 --lora-targets all-linear" in probe_command
