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
    ("calculators/serve/", "serve", ("tp", "2"), ("gpu_memory_utilization", "1.5")),
    ("calculators/serve/", "serve", ("engine", "sglang"), ("mem_fraction_static", "1.5")),
    ("calculators/training/", "training", ("seq_len", "4096"), ("zero", "7")),
    ("calculators/throughput/", "throughput", ("mfu", "0.5"), ("mfu", "2")),
    ("calculators/batch/", "batch", ("micro_batch", "2"), ("micro_batch", "abc")),
    ("calculators/budget/", "budget", ("gpus", "8"), ("price", "-1")),
    ("calculators/seeds/", "seeds", ("effect", "0.01"), ("alpha", "1.5")),
    ("calculators/gap/", "gap", ("allocated", "23"), ("reserved", "1")),
    ("calculators/design/", "design", ("seeds", "5"), ("fraction", "9")),
    ("calculators/target-cost/", "target-cost", ("default_price", "2"), ("default_price", "-1")),
    ("calculators/useful-cost/", "useful-cost", ("sequences", "32"), ("gpus", "h900")),
    ("calculators/sampling/", "sampling", ("temperature", "1.5"), ("top_p", "1.5")),
    ("calculators/generate/", "generate", ("top_k", "3"), ("seed", "-1")),
    ("memory/kv-cache/", "kv-cache", ("batch", "2"), ("batch", "0")),
    ("memory/sizing-gpu-memory/", "envelope", ("gpu", "mi300x"), ("context", "0")),
    ("memory/estimate-vs-peak/", "gap", ("device_used", "30"), ("device_used", "1")),
    ("budget/campaign-budget/", "budget", ("gpus", "8"), ("price", "-1")),
    ("calculators/leakage/", "leakage", ("threshold", "0.6"), ("threshold", "1.5")),
    ("calculators/compare/", "compare", ("cost", "other=5"), ("cost", "other=-1")),
    ("evaluation/evaluation-set/", "leakage", ("shingle", "3"), ("ngram", "0")),
    ("calculators/eval-size/", "eval-size", ("gain", "0.03"), ("gain", "0.5")),
    ("evaluation/evaluation-set/", "eval-size", ("gain", "0.02"), ("gain", "0.5")),
    ("evaluation/error-analysis/", "compare", ("cost", "other=5"), ("cost", "other=-1")),
    ("evaluation/seed-variability/", "seeds", ("confidence", "0.99"), ("alpha", "1.5")),
    (
        "training/effective-batch/",
        "batch",
        ("micro_batch_tokens", "10,100\n50,50"),
        ("micro_batch_tokens", "10,100"),
    ),
    ("training/validate-the-loop/", "training", ("micro_batch", "2"), ("zero", "7")),
]
IDS = [c[0].strip("/").replace("/", "-") for c in CASES]
READY = 60_000  # ms: Pyodide's first load on a slow CI machine

# A file input with no file picked computes with its example (a path under docs/).
_READ_INPUTS = """form => {
  const out = {};
  for (const el of form.elements) {
    if (!el.name) continue;
    if (el.type === "file") out[el.name] = el.dataset.example;
    else out[el.name] = el.type === "checkbox" ? el.checked : el.value;
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
    assert urlencode({field: value}) in page.url


def wait_settled(page: Page, name: str) -> None:
    """Until the form shows a recomputed result or an error."""
    page.wait_for_function(
        """sel => {
          const form = document.querySelector(sel);
          return form.querySelector("[data-result]").dataset.state === "ready"
            || [...form.querySelectorAll(".kd-error, .kd-form-error")].some(e => !e.hidden);
        }""",
        arg=f'form[data-calculator="{name}"]',
        timeout=READY,
    )


def shown_errors(page: Page, name: str) -> list[str]:
    return form_of(page, name).evaluate(
        """form => [...form.querySelectorAll(".kd-error, .kd-form-error")]
          .filter(e => !e.hidden).map(e => e.textContent)"""
    )


def wait_result(page: Page, name: str, want: Any, timeout: float = 10_000) -> None:
    page.wait_for_function(
        "([sel, want]) => JSON.stringify(JSON.parse(document.querySelector(sel)"
        ".dataset.resultJson)) === JSON.stringify(want)",
        arg=[f'form[data-calculator="{name}"] [data-result]', want],
        timeout=timeout,
    )


def reopen_shared_link(page: Page, name: str) -> dict[str, Any]:
    """Click the form's link, open it afresh; the inputs the new page shows."""
    form_of(page, name).locator("[data-share]").click()
    url = page.url
    page.goto("about:blank")
    page.goto(url)
    wait_settled(page, name)
    return inputs_of(page, name)


# page, calculator, fields to set in order (clearing optional ones that have a default)
CLEARED = [
    (
        "calculators/batch/",
        "batch",
        {"global_batch": "", "accumulation": "4"},
    ),
    (
        "calculators/seeds/",
        "seeds",
        {"a": "", "b": "", "sd_difference": "0.01", "seeds": "10"},
    ),
]


@pytest.mark.parametrize(("path", "name", "fields"), CLEARED, ids=["batch", "seeds"])
def test_shared_link_keeps_cleared_fields_cleared(
    watched: Watched, base_url: str, path: str, name: str, fields: dict[str, str]
) -> None:
    page = watched.page
    page.goto(base_url + path)
    wait_ready(page, name)
    for field, value in fields.items():
        set_value(page, name, field, value)
    want = cpython(name, inputs_of(page, name))
    wait_result(page, name, want)

    restored = reopen_shared_link(page, name)
    assert {k: restored[k] for k in fields} == fields
    assert shown_errors(page, name) == []
    expect(form_of(page, name).locator("[data-result]")).to_have_attribute("data-state", "ready")
    assert result_json(page, name) == want
    for k in fields:
        assert f"{k}=" in page.url  # every field travels, empty ones too


def test_shared_link_carries_an_unticked_box(watched: Watched, base_url: str) -> None:
    page = watched.page
    page.goto(
        base_url + "calculators/training/?" + urlencode({"calc": "training", "dropout": "true"})
    )
    wait_ready(page, "training")
    box = form_of(page, "training").locator('[name="dropout"]')
    assert box.is_checked()
    box.uncheck()
    want = cpython("training", inputs_of(page, "training"))
    wait_result(page, "training", want)

    restored = reopen_shared_link(page, "training")
    assert "dropout=false" in page.url
    assert restored["dropout"] is False
    assert shown_errors(page, "training") == []
    assert result_json(page, "training") == want


def test_an_old_link_with_bf16_mixed_selects_bf16_fp32_master(
    watched: Watched, base_url: str
) -> None:
    # the precision policy bf16-mixed was renamed bf16-fp32-master (Lightning's bf16-mixed
    # is autocast over fp32 weights); a link shared before the rename keeps its meaning
    page = watched.page
    page.goto(
        base_url
        + "calculators/training/?"
        + urlencode({"calc": "training", "precision": "bf16-mixed", "seq_len": "1024"})
    )
    wait_ready(page, "training")
    control = form_of(page, "training").locator('[name="precision"]')
    assert control.input_value() == "bf16-fp32-master"
    assert control.locator("option:checked").get_attribute("value") == "bf16-fp32-master"
    inputs = inputs_of(page, "training")
    assert inputs["precision"] == "bf16-fp32-master" and inputs["seq_len"] == "1024"
    assert shown_errors(page, "training") == []
    assert result_json(page, "training") == cpython(
        "training", {**inputs, "precision": "bf16-mixed"}
    )
    form_of(page, "training").locator("[data-share]").click()
    assert "precision=bf16-fp32-master" in page.url


def _calculator_worker(page: Page):  # type: ignore[no-untyped-def]
    # Material's search runs in a worker too: the calculators' is worker.js
    found = [w for w in page.workers if w.url.endswith("/kd/worker.js")]
    assert len(found) == 1, [w.url for w in page.workers]
    return found[0]


def test_a_computation_that_hangs_is_stopped(watched: Watched, base_url: str) -> None:
    page = watched.page
    name = "budget"
    page.goto(base_url + "calculators/budget/")
    wait_ready(page, name)
    good = result_json(page, name)
    stuck = _calculator_worker(page)
    closed: list[bool] = []
    stuck.on("close", lambda _: closed.append(True))

    # The worker is kept busy for longer than the (shortened) limit, as an input that
    # computes for ever would keep it: an ordinary input then gets no answer in time.
    page.evaluate("window.kdComputeTimeoutMs = 300")
    stuck.evaluate(
        "setTimeout(() => { const end = Date.now() + 20000; while (Date.now() < end); })"
    )
    set_value(page, name, "gpus", "8")
    general = form_of(page, name).locator(".kd-form-error")
    expect(general).to_be_visible(timeout=10_000)
    expect(general).to_contain_text("took more than 0.3 s to compute")
    status = form_of(page, name).locator("[data-status]")
    expect(status).to_contain_text("took more than 0.3 s to compute, so it was stopped")
    expect(status).to_contain_text("the result shown is for the last inputs that worked")
    # the last good result stays
    assert result_json(page, name) == good
    expect(form_of(page, name).locator("[data-result] svg").first).to_be_attached()
    for _ in range(100):
        if closed:
            break
        page.wait_for_timeout(50)
    assert closed, "the stuck worker was not stopped"

    # a fresh worker answers the next input, at the normal limit
    page.evaluate("delete window.kdComputeTimeoutMs")
    set_value(page, name, "gpus", "2")
    want = cpython(name, inputs_of(page, name))
    assert want != good
    wait_result(page, name, want, timeout=READY)  # the fresh worker loads Pyodide first
    expect(form_of(page, name).locator("[data-result]")).to_have_attribute("data-state", "ready")
    expect(general).to_be_hidden()
    expect(status).to_have_text("recomputed in your browser")
    assert _calculator_worker(page) is not stuck


def test_loading_pyodide_does_not_count_against_the_limit(watched: Watched, base_url: str) -> None:
    page = watched.page
    name = "kv-cache"
    # a limit far below the time Pyodide takes to load here (its wasm is held back longer)
    page.add_init_script("window.kdComputeTimeoutMs = 1500")
    held = []
    page.route("**/pyodide.asm.wasm", lambda route: held.append(route))
    page.goto(base_url + "calculators/kv-cache/")
    for _ in range(600):
        if held:
            break
        page.wait_for_timeout(50)
    assert len(held) == 1, "the worker never asked for Pyodide"
    page.wait_for_timeout(2500)
    held[0].fallback()
    wait_settled(page, name)
    assert shown_errors(page, name) == []
    expect(form_of(page, name).locator("[data-result]")).to_have_attribute("data-state", "ready")
    assert result_json(page, name) == cpython(name, inputs_of(page, name))
