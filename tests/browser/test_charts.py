"""The result charts on a phone and on a desktop: which drawing shows, how large its text
renders, and that nothing sticks out (real fonts, real layout, headless Chromium)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import Watched
from tests.browser.test_calculator_pages import form_of, wait_ready

pytestmark = pytest.mark.browser

CHART_PAGES = [
    "weights",
    "kv-cache",
    "envelope",
    "training",
    "budget",
    "seeds",
    "leakage",
    "compare",
    "eval-size",
]
MIN_TEXT_PX = 10  # the smallest text height (its box on screen) a phone reader gets

# Each visible chart of the form: its layout, its box and the box of each of its texts.
_VISIBLE_CHARTS = """form => [...form.querySelectorAll("[data-result] svg.kd-chart")]
  .filter(svg => svg.getBoundingClientRect().width > 0)
  .map(svg => {
    const box = svg.getBoundingClientRect();
    return {
      layout: svg.classList.contains("kd-chart-narrow") ? "narrow" : "wide",
      left: box.left, right: box.right, width: box.width,
      texts: [...svg.querySelectorAll("text")].map(t => {
        const r = t.getBoundingClientRect();
        return { text: t.textContent, left: r.left, right: r.right, height: r.height };
      }),
    };
  })"""


def visible_charts(page: Any, name: str) -> list[dict[str, Any]]:
    charts = form_of(page, name).evaluate(_VISIBLE_CHARTS)
    # each chart comes drawn twice, in one box: one drawing of each shows
    boxes = form_of(page, name).locator("[data-result] .kd-charts").count()
    assert len(charts) == boxes >= 1
    return charts


def check_chart(chart: dict[str, Any], viewport_width: int) -> None:
    assert chart["left"] >= 0 and chart["right"] <= viewport_width
    assert chart["texts"], "a chart without text"
    for t in chart["texts"]:
        assert t["height"] >= MIN_TEXT_PX, t
        # inside the drawing, measured with the fonts the browser really uses
        assert chart["left"] - 0.5 <= t["left"] and t["right"] <= chart["right"] + 0.5, t


@pytest.mark.parametrize("name", CHART_PAGES)
def test_charts_are_readable_on_a_phone(phone: Watched, base_url: str, name: str) -> None:
    page = phone.page
    page.goto(base_url + f"calculators/{name}/")
    wait_ready(page, name)  # the chart the worker drew
    for chart in visible_charts(page, name):
        check_chart(chart, 375)
        assert chart["layout"] == "narrow"


@pytest.mark.parametrize("name", CHART_PAGES)
def test_charts_are_wide_on_a_desktop(no_js: Watched, base_url: str, name: str) -> None:
    page = no_js.page  # the chart built with the page
    page.goto(base_url + f"calculators/{name}/")
    for chart in visible_charts(page, name):
        check_chart(chart, 1280)
        assert chart["layout"] == "wide"
        assert chart["width"] > 600
