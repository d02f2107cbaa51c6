"""Every calculator page in real headless Chromium: prerendered result without JavaScript,
in-browser recompute equal to CPython's, inline errors, shared links, nothing off-host."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Page, expect

from calculators.web import CALCULATORS, compute
from tests.browser.conftest import Watched

pytestmark = pytest.mark.browser

# page path, calculator, an input to change and its new value, a bad value for a field
CASES = [
    ("calculators/weights/", "weights", ("format", "gguf-q4_k_m"), ("keep_unquantized", "bogus")),
    ("calculators/kv-cache/", "kv-cache", ("context", "16384"), ("context", "-5")),
    ("calculators/envelope/", "envelope", ("batch", "8"), ("batch", "0")),
    ("calculators/training/", "training", ("seq_len", "4096"), ("zero", "7")),
    ("calculators/throughput/", "throughput", ("mfu", "0.5"), ("mfu", "2")),
    ("calculators/batch/", "batch", ("micro_batch", "2"), ("micro_batch", "abc")),
    ("calculators/budget/", "budget", ("gpus", "8"), ("price", "-1")),
    ("calculators/seeds/", "seeds", ("effect", "0.01"), ("alpha", "1.5")),
    ("memory/kv-cache/", "kv-cache", ("batch", "2"), ("batch", "0")),
]
IDS = [c[0].strip("/").replace("/", "-") for c in CASES]
READY = 60_000  # ms: Pyodide's first load on a slow CI machine

_READ_INPUTS = """form => {
  const out = {};
  for (const el of form.elements) {
    if (el.name) out[el.name] = el.type === "checkbox" ? el.checked : el.value;
  }
  return out;
}"""


def form_of(page: Page, name: str):  # type: ignore[no-untyped-def]
    return page.locator(f'form[data-calculator="{name}"]').first


def inputs_of(page: Page, name: str) -> dict[str, Any]:
    return form_of(page, name).evaluate(_READ_INPUTS)


def result_json(page: Page, name: str) -> Any:
    raw = form_of(page, name).locator("[data-result]").get_attribute("data-result-json")
    assert raw is not None
    return json.loads(raw)


def cpython(name: str, inputs: dict[str, Any]) -> Any:
    return json.loads(json.dumps(compute(name, inputs)))


def set_value(page: Page, name: str, field: str, value: str) -> None:
    control = form_of(page, name).locator(f'[name="{field}"]')
    if control.evaluate("el => el.tagName") == "SELECT":
        control.select_option(value)
    else:
        control.fill(value)


def wait_ready(page: Page, name: str) -> None:
    expect(form_of(page, name).locator("[data-result]")).to_have_attribute(
        "data-state", "ready", timeout=READY
    )


def test_every_calculator_has_a_page() -> None:
    assert {c[1] for c in CASES} == set(CALCULATORS)


@pytest.mark.parametrize(("path", "name", "change", "bad"), CASES, ids=IDS)
def test_prerendered_without_javascript(
    no_js: Watched, base_url: str, path: str, name: str, change: Any, bad: Any
) -> None:
    page = no_js.page
    page.goto(base_url + path)
    result = form_of(page, name).locator("[data-result]")
    expect(result).to_be_visible()
    expect(result).to_have_attribute("data-state", "prerendered")
    assert result.locator("table").count() >= 1
    # what the page shows is CPython's result for the inputs the form shows
    assert result_json(page, name) == cpython(name, inputs_of(page, name))


@pytest.mark.parametrize(("path", "name", "change", "bad"), CASES, ids=IDS)
def test_recompute_matches_cpython(
    watched: Watched, base_url: str, path: str, name: str, change: Any, bad: Any
) -> None:
    page = watched.page
    held = []  # Pyodide's wasm is held back: the page must be complete without it
    page.route("**/pyodide.asm.wasm", lambda route: held.append(route))
    page.goto(base_url + path)
    result = form_of(page, name).locator("[data-result]")
    expect(result).to_be_visible()
    for _ in range(600):  # up to 30 s on a loaded machine: the worker asks for the wasm
        if held:
            break
        page.wait_for_timeout(50)
    assert len(held) == 1, "the worker never asked for Pyodide"
    expect(result).to_have_attribute("data-state", "prerendered")
    assert result.locator("table").first.is_visible()
    held[0].fallback()
    wait_ready(page, name)
    before = result_json(page, name)
    assert before == cpython(name, inputs_of(page, name))

    field, value = change
    set_value(page, name, field, value)
    expected = cpython(name, inputs_of(page, name))
    assert expected != before, "the chosen change must change the result"
    page.wait_for_function(
        "([sel, want]) => JSON.stringify(JSON.parse(document.querySelector(sel)"
        ".dataset.resultJson)) === JSON.stringify(want)",
        arg=[f'form[data-calculator="{name}"] [data-result]', expected],
        timeout=10_000,
    )
    assert result_json(page, name) == expected


@pytest.mark.parametrize(("path", "name", "change", "bad"), CASES, ids=IDS)
def test_bad_input_shows_inline_message(
    watched: Watched, base_url: str, path: str, name: str, change: Any, bad: Any
) -> None:
    page = watched.page
    page.goto(base_url + path)
    wait_ready(page, name)
    good = result_json(page, name)
    field, value = bad
    set_value(page, name, field, value)
    error = form_of(page, name).locator(f'.kd-field[data-field="{field}"] .kd-error')
    expect(error).to_be_visible(timeout=10_000)
    expect(error).to_contain_text(field)
    expect(error).to_contain_text(value)
    assert form_of(page, name).locator(f'[name="{field}"]').get_attribute("aria-invalid")
    # the last good result stays
    assert result_json(page, name) == good
    expect(form_of(page, name).locator("[data-result] table").first).to_be_visible()


@pytest.mark.parametrize(("path", "name", "change", "bad"), CASES, ids=IDS)
def test_shared_link_restores_inputs(
    watched: Watched, base_url: str, path: str, name: str, change: Any, bad: Any
) -> None:
    page = watched.page
    field, value = change
    page.goto(base_url + path + "?" + urlencode({"calc": name, field: value}))
    wait_ready(page, name)
    form = form_of(page, name)
    control = form.locator(f'[name="{field}"]')
    assert control.input_value() == value
    assert result_json(page, name) == cpython(name, inputs_of(page, name))
    # the page's own link carries the inputs back
    form.locator("[data-share]").click()
    assert f"{field}={value}" in page.url
