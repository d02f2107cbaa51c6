"""The sentences of docs/adaptation/ablations.md that read its computed figures: if a
calculator change turned one of them false, the page would still build, so each is
checked here on the page's own inputs (its `calculator design` blocks)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from calculators.web import compute
from tests.page_blocks import page_blocks

PAGE = Path(__file__).resolve().parents[1] / "docs" / "adaptation" / "ablations.md"


def blocks() -> dict[str, tuple[str, dict[str, str]]]:
    """Each block with an id: its calculator and inputs, as the site's hook reads them (a
    key given again adds a line to a `lines` input)."""
    return {b.id: (b.name, b.inputs) for b in page_blocks(PAGE) if b.id}


@pytest.fixture(scope="module")
def page() -> dict[str, dict[str, Any]]:
    return {ident: compute(name, values) for ident, (name, values) in blocks().items()}


def test_tuning_the_learning_rate_multiplies_the_screen_and_is_its_largest_line(page):
    # "It multiplies the runs: [[screen:total_runs]] training runs instead of
    # [[onelr:total_runs]]" and "Tuning the learning rate is the largest line of that bill"
    screen, onelr = page["screen"], page["onelr"]
    assert screen["total_runs"] == onelr["total_runs"] * screen["tuned_settings"]
    assert screen["tuned_settings"] > 1
    assert screen["gpu_hours"] - onelr["gpu_hours"] > onelr["gpu_hours"]
    # the full factorial, tuned the same way, costs more than the screen
    assert page["full"]["gpu_hours"] > page["half"]["gpu_hours"] > screen["gpu_hours"]


def test_centre_points_add_their_tuned_runs_to_an_unreplicated_screen(page):
    centred, numeric = page["centred"], page["numeric"]
    assert numeric["seeds"] == 1 and centred["centre_points"] >= 3
    extra = centred["total_runs"] - numeric["total_runs"]
    assert extra == centred["centre_points"] * centred["tuned_settings"]
    # the middle of warmup 100..1000 and rank 8..16, which the page quotes
    assert centred["centre_levels"]["warmup"] == "550"
    assert centred["centre_levels"]["lora_rank"] == "12"


def test_the_screen_aliases_data_with_two_interactions_and_folds_to_resolution_iv(page):
    screen = page["screen"]
    first = screen["aliases"][0]
    assert screen["resolution"] == 3
    assert first["names"] == "data" and len(first["aliased_with_names"]) == 2
    assert screen["fold_over"]["combined_resolution"] >= 4


def test_the_control_is_not_a_run_of_the_screen(page):
    screen = page["screen"]
    control = {f["name"]: f["levels"][0] for f in screen["factors"]}
    assert control not in screen["runs"]
    # run 1 keeps the control's data and warmup, but not its rank or dropout
    run = screen["runs"][0]
    assert (run["data"], run["warmup"]) == (control["data"], control["warmup"])
    assert run["lora_rank"] != control["lora_rank"]
    assert run["lora_dropout"] != control["lora_dropout"]


def test_lenth_picks_the_five_effects_montgomery_reads_as_active(page):
    # Montgomery, Design and Analysis of Experiments, 8th ed., Example 6.2 and section 6.5:
    # A, C, D, AC and AD are the active effects of the filtration-rate experiment
    lenth = page["lenth"]["analysis"]["lenth"]
    assert set(lenth["active"]) == {"A", "C", "D", "AC", "AD"}
    assert lenth["pse"] == 2.625 and lenth["contrasts"] == 15


def test_the_published_centre_points_show_no_curvature_and_give_a_standard_error(page):
    curv = page["curv"]
    c = curv["analysis"]["curvature"]
    assert c["p_value"] > 0.05  # "no evidence of curvature"
    assert c["centre_points"] == 5
    assert curv["effects"][0]["standard_error"] is not None  # one result per factorial run
    assert curv["seeds"] == 1


def test_an_eight_run_screen_has_wider_lenth_margins_than_a_sixteen_run_one():
    # "an eight-run screen ... only large effects clear its margins"
    from calculators.statistics.screening import lenth

    eight, sixteen = lenth([1.0] * 7), lenth([1.0] * 15)
    assert eight.t_me > 1.4 * sixteen.t_me and eight.t_sme > 1.7 * sixteen.t_sme
