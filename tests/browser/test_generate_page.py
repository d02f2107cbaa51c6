"""The generation widget (docs/calculators/generate.md) in headless Chromium: the model runs
in the page's worker, a knob changes the first step's distribution, the same seed gives
the same sentence as before and as CPython, and nothing is fetched off 127.0.0.1 (the
`watched` fixture fails the test on an outside request or a console error)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Watched
from tests.browser.test_calculator_pages import (
    cpython,
    form_of,
    inputs_of,
    result_json,
    set_value,
    wait_ready,
    wait_result,
)

pytestmark = pytest.mark.browser

NAME = "generate"


def _stage(r, stage_id):  # type: ignore[no-untyped-def]
    return next(s for s in r["first_step"]["stages"] if s["id"] == stage_id)


def test_a_knob_changes_the_distribution_and_the_seed_fixes_the_sentence(
    watched: Watched, base_url: str
) -> None:
    page = watched.page
    page.goto(base_url + "calculators/generate/")
    wait_ready(page, NAME)
    first = result_json(page, NAME)
    assert first == cpython(NAME, inputs_of(page, NAME))
    assert _stage(first, "top_k")["enabled"] is False

    # top-k 3: the first step keeps three candidates, and the chart for it appears
    set_value(page, NAME, "top_k", "3")
    want = cpython(NAME, inputs_of(page, NAME))
    wait_result(page, NAME, want)
    top_k = _stage(result_json(page, NAME), "top_k")
    assert top_k["enabled"] is True and top_k["kept"] == 3
    titles = form_of(page, NAME).locator("[data-result] svg.kd-chart-wide > title")
    expect(titles.filter(has_text="after top-k")).to_have_count(1)

    # another seed, another sentence; the first seed again, the first sentence again
    set_value(page, NAME, "top_k", "0")
    set_value(page, NAME, "seed", "5")
    other = cpython(NAME, inputs_of(page, NAME))
    wait_result(page, NAME, other)
    assert other["text"] != first["text"]
    set_value(page, NAME, "seed", str(first["settings"]["seed"]))
    wait_result(page, NAME, first)
    assert result_json(page, NAME)["text"] == first["text"]
    expect(form_of(page, NAME).locator("[data-status]")).to_have_text("recomputed in your browser")


def test_the_lesson_links_to_the_widget(watched: Watched, base_url: str) -> None:
    page = watched.page
    page.goto(base_url + "learn/11-sampling-knobs/")
    link = page.locator("a[href*='calculators/generate']").first
    expect(link).to_be_attached()
    link.click()
    wait_ready(page, NAME)
    assert result_json(page, NAME) == cpython(NAME, inputs_of(page, NAME))


def test_the_widget_runs_in_the_lesson_page_itself(watched: Watched, base_url: str) -> None:
    # docs/learn/11-sampling-knobs.ipynb names the calculator in a Markdown cell
    # ([[calculator generate ...]]); the hook puts the live form there.
    page = watched.page
    page.goto(base_url + "learn/11-sampling-knobs/")
    wait_ready(page, NAME)
    first = result_json(page, NAME)
    assert first == cpython(NAME, inputs_of(page, NAME))
    assert first["settings"]["seed"] == 1  # the cell's own preset
    set_value(page, NAME, "top_k", "3")
    want = cpython(NAME, inputs_of(page, NAME))
    wait_result(page, NAME, want)
    assert _stage(result_json(page, NAME), "top_k")["kept"] == 3
