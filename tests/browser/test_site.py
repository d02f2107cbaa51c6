"""The site around the calculators: home page cards, formulas, the notebook, validation
reports, downloads, and Material's instant navigation."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from calculators.web import compute
from tests.browser.conftest import ROOT, Watched

pytestmark = pytest.mark.browser


def test_home_page_asks_and_shows_five_questions(watched: Watched, base_url: str) -> None:
    page = watched.page
    page.goto(base_url)
    expect(page.locator("h1")).to_contain_text("Which question is holding you up today?")
    cards = page.locator(".grid.cards > ul > li")
    expect(cards).to_have_count(5)
    for i in range(5):
        assert cards.nth(i).locator("a").count() >= 3


def test_formulas_are_rendered_at_build_time(no_js: Watched, base_url: str) -> None:
    page = no_js.page  # no JavaScript: KaTeX ran when the site was built
    page.goto(base_url + "memory/kv-cache/")
    expect(page.locator(".katex").first).to_be_visible()
    assert page.locator(".katex-error").count() == 0


def test_notebook_page_renders_its_outputs(watched: Watched, base_url: str) -> None:
    page = watched.page
    page.goto(base_url + "reference/kv-cache-notebook/")
    expect(page.get_by_text("tokens:").first).to_be_visible()


def test_memory_notebook_shows_its_measurements(no_js: Watched, base_url: str) -> None:
    # executed when the site was built: its tables and charts are in the page itself
    page = no_js.page
    page.goto(base_url + "memory/estimate-vs-peak-notebook/")
    for caption in ("phases of step 2", "by category", "the gap, line by line (CPU)"):
        expect(page.locator("caption", has_text=caption)).to_have_count(1)
    assert page.locator(".kd-charts").count() == 2
    expect(page.locator(".kd-chart-wide").first).to_be_visible()


def test_validation_page_without_reports(watched: Watched, base_url: str) -> None:
    page = watched.page
    page.goto(base_url + "probes/validation/")
    reports = [
        p
        for p in sorted((ROOT / "docs/data/validation").glob("*.json"))
        if "$schema" not in json.loads(p.read_text(encoding="utf-8"))
    ]
    if not reports:
        expect(page.get_by_text("No reports yet")).to_be_visible()
    for path in reports:
        expect(page.locator("td code", has_text=path.name).first).to_be_visible()
        expect(page.locator("details summary", has_text=path.name).first).to_be_visible()


def test_downloads_carry_the_current_result(watched: Watched, base_url: str) -> None:
    page = watched.page
    page.goto(base_url + "calculators/kv-cache/")
    result = page.locator("[data-result]").first
    expect(result).to_have_attribute("data-state", "ready", timeout=60_000)
    with page.expect_download() as info:
        page.locator('[data-download="json"]').first.click()
    data = json.loads(Path(info.value.path()).read_text(encoding="utf-8"))
    inputs = {"model": "llama-3.1-8b", "context": 8192, "batch": 4, "free_gib": 40}
    assert data == json.loads(json.dumps(compute("kv-cache", inputs)))
    with page.expect_download() as info:
        page.locator('[data-download="csv"]').first.click()
    text = Path(info.value.path()).read_text(encoding="utf-8")
    assert text.startswith("field,value\n")
    assert f"total_bytes,{data['total_bytes']}\n" in text


def test_instant_navigation_binds_the_calculator(watched: Watched, base_url: str) -> None:
    page = watched.page
    page.goto(base_url + "calculators/")
    page.locator("article a[href$='batch/']").first.click()
    expect(page).to_have_url(re.compile(r"calculators/batch/$"))
    result = page.locator('form[data-calculator="batch"] [data-result]')
    expect(result).to_have_attribute("data-state", "ready", timeout=60_000)
    page.locator('[name="micro_batch"]').fill("2")
    want = compute("batch", {"micro_batch": 2, "gpus": 8, "seq_len": 4096, "global_batch": 256})
    # the worker answers with Python's own json.dumps, so the text is identical
    expect(result).to_have_attribute("data-result-json", json.dumps(want), timeout=10_000)
    expect(result).to_contain_text(f"{want['accumulation_steps']:,}")


def _pages(site: Path) -> list[str]:
    return sorted(
        str(p.relative_to(site).parent).replace(".", "") for p in site.rglob("index.html")
    )


def test_no_page_refers_to_another_host(site_dir: Path) -> None:
    # what a page would fetch: scripts, stylesheets, images, frames (a canonical link is
    # only an address, not a request)
    tag = re.compile(r"<(?:script|link|img|iframe)\b[^>]*>", re.I)
    remote = re.compile(r'\b(?:src|href)="(?:https?:)?//', re.I)
    offenders = [
        f"{p.relative_to(site_dir).as_posix()}: {t}"
        for p in site_dir.rglob("*.html")
        for t in tag.findall(p.read_text(encoding="utf-8"))
        if remote.search(t) and 'rel="canonical"' not in t
    ]
    assert offenders == []
    assert len(_pages(site_dir)) > 30


def test_every_other_page_loads_cleanly(watched: Watched, base_url: str, site_dir: Path) -> None:
    page = watched.page
    visited = 0
    for rel in _pages(site_dir):
        path = f"{rel}/" if rel else ""
        if (site_dir / rel / "index.html").read_text(encoding="utf-8").count("data-calculator="):
            continue  # calculator pages have their own tests
        page.goto(base_url + path)
        expect(page.locator("article h1").first).to_be_visible()
        visited += 1
    assert visited > 20


def test_search_works_offline_and_leaves_report_fields_out(watched: Watched, base_url: str) -> None:
    page = watched.page
    page.goto(base_url)
    box = page.locator("input.md-search__input")
    meta = page.locator(".md-search-result__meta")

    def search(query: str) -> None:
        box.fill("")
        box.press_sequentially(query)  # Material searches on key events

    box.click()
    search("GQA")
    expect(meta).to_contain_text("matching document", timeout=30_000)
    expect(page.locator(".md-search-result a[href*='memory/kv-cache/']").first).to_be_attached()
    search("validation")
    expect(page.locator(".md-search-result a[href*='probes/validation/']").first).to_be_attached()
    # A word found only in the reports' collapsed fields: the platform string of each
    # report's environment (e.g. Linux-...-glibc2.36).
    reports = (ROOT / "docs/data/validation").glob("*.json")
    assert any("glibc2" in p.read_text(encoding="utf-8") for p in reports)
    search("glibc2")
    expect(meta).to_have_text("No matching documents")
