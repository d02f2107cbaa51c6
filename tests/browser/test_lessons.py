"""The lessons' pages as a reader sees them: a chart in every lesson, drawn when the site
was built (visible without JavaScript), and the "Going deeper" blocks folded shut until
opened (docs/hooks/kernodeck.py, notebook_going_deeper)."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import ROOT, Watched

pytestmark = pytest.mark.browser

LEARN = ROOT / "docs" / "learn"
CHARTED = sorted(p.stem for p in LEARN.glob("[0-9][0-9]-*.ipynb"))


def _has_deeper(stem: str) -> bool:
    cells = json.loads((LEARN / f"{stem}.ipynb").read_text(encoding="utf-8"))["cells"]
    return any("going-deeper" in c.get("metadata", {}).get("tags", []) for c in cells)


@pytest.mark.parametrize("stem", CHARTED)
def test_every_lesson_shows_a_chart_without_javascript(no_js: Watched, base_url: str, stem: str):
    page = no_js.page
    page.goto(base_url + f"learn/{stem}/")
    charts = page.locator("svg.kd-chart-wide")  # each chart's wide drawing (render.py)
    expect(charts.first).to_be_visible()
    assert charts.first.locator("text").count() > 0, "a chart with its labels"


@pytest.mark.parametrize("stem", [s for s in CHARTED if _has_deeper(s)])
def test_going_deeper_blocks_are_shut_until_opened(watched: Watched, base_url: str, stem: str):
    page = watched.page
    page.goto(base_url + f"learn/{stem}/")
    blocks = page.locator("details.kd-deeper")
    assert blocks.count() >= 1
    for i in range(blocks.count()):
        expect(blocks.nth(i)).not_to_have_attribute("open", "")
        expect(blocks.nth(i).locator("summary")).to_contain_text("Going deeper: ")
    first = blocks.first
    inside = first.locator(".jp-Cell").first
    expect(inside).to_be_hidden()
    first.locator("summary").click()
    expect(inside).to_be_visible()
