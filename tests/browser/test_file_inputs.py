"""Calculators that read the reader's own files, in real headless Chromium: a file picked
in the page is read by the browser, computed in the worker, and gives CPython's result for
the same file; nothing leaves 127.0.0.1 (the fixtures fail the test on any other request);
a bad file is reported at its field; a long audit shows its progress while the page keeps
answering."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import Watched
from tests.browser.test_calculator_pages import (
    READY,
    cpython,
    form_of,
    inputs_of,
    result_json,
    shown_errors,
    wait_ready,
    wait_result,
)

pytestmark = pytest.mark.browser

DOCS = Path(__file__).resolve().parents[2] / "docs"


def pick(page: Page, name: str, field: str, path: Path) -> None:
    form_of(page, name).locator(f'input[type="file"][name="{field}"]').set_input_files(str(path))


def subset(source: Path, target: Path, keep: float, seed: int) -> Path:
    """Some lines of a JSON Lines example, in a new order: a file the page has never seen."""
    lines = source.read_text(encoding="utf-8").splitlines()
    rng = random.Random(seed)
    kept = [line for line in lines if rng.random() < keep]
    rng.shuffle(kept)
    target.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return target


def test_leakage_on_the_readers_files_equals_cpython(
    watched: Watched, base_url: str, tmp_path: Path
) -> None:
    page = watched.page
    page.goto(base_url + "calculators/leakage/")
    wait_ready(page, "leakage")
    example = result_json(page, "leakage")
    examples = DOCS / "data/evaluation/leakage"
    train = subset(examples / "train.jsonl", tmp_path / "mine-train.jsonl", 0.7, 1)
    held = subset(examples / "eval.jsonl", tmp_path / "mine-eval.jsonl", 0.7, 2)
    pick(page, "leakage", "train", train)
    pick(page, "leakage", "eval", held)
    want = audit(page, train, held)
    assert want != example
    wait_result(page, "leakage", want, timeout=30_000)
    form = form_of(page, "leakage")
    expect(form.locator("[data-command]")).to_contain_text("--train mine-train.jsonl")
    expect(form.locator("[data-command]")).to_contain_text("--eval mine-eval.jsonl")
    expect(form.locator('[data-field="train"] [data-file-current]')).to_contain_text(
        "your file mine-train.jsonl"
    )
    # the download holds the pairs of the reader's files
    csv_link = form.locator('[data-download="csv"]')
    assert csv_link.get_attribute("href").startswith("blob:")


def test_compare_on_the_readers_file_equals_cpython(
    watched: Watched, base_url: str, tmp_path: Path
) -> None:
    page = watched.page
    page.goto(base_url + "calculators/compare/")
    wait_ready(page, "compare")
    example = result_json(page, "compare")
    source = (DOCS / "data/evaluation/digits/predictions.csv").read_text(encoding="utf-8")
    head, *rows = source.splitlines()
    mine = tmp_path / "mine.csv"
    mine.write_text("\n".join([head, *rows[: len(rows) // 2]]) + "\n", encoding="utf-8")
    pick(page, "compare", "predictions", mine)
    want = cpython("compare", {**inputs_of(page, "compare"), "predictions": str(mine)})
    assert want != example
    wait_result(page, "compare", want, timeout=30_000)
    for stem in ("regressions",):
        link = form_of(page, "compare").locator(f'[data-download="csv:{stem}"]')
        assert link.get_attribute("href").startswith("blob:")


def test_a_bad_file_is_reported_at_its_field(
    watched: Watched, base_url: str, tmp_path: Path
) -> None:
    page = watched.page
    page.goto(base_url + "calculators/leakage/")
    wait_ready(page, "leakage")
    good = result_json(page, "leakage")
    bad = tmp_path / "broken.jsonl"
    fine = '{"id": "1", "text": "fine", "user": "u", "date": "2024-01-01"}'
    bad.write_text(fine + '\n{"id": "2", "user": "u", "date": "2024-01-02"}\n', encoding="utf-8")
    pick(page, "leakage", "eval", bad)
    box = form_of(page, "leakage").locator('[data-field="eval"] .kd-error')
    expect(box).to_be_visible(timeout=30_000)
    expect(box).to_contain_text("broken.jsonl line 2")
    expect(box).to_contain_text("'text'")
    assert result_json(page, "leakage") == good  # the last good result stays
    assert len(shown_errors(page, "leakage")) == 1


def audit(page: Page, train: Path, held: Path) -> Any:
    """CPython's audit of the two files with the form's other inputs."""
    files = {"train": str(train), "eval": str(held)}
    return cpython("leakage", {**inputs_of(page, "leakage"), **files})


def _audit_files(tmp_path: Path) -> tuple[Path, Path]:
    """5,000 train and 1,000 eval texts of about 60 words (the benchmark's generator)."""
    from benchmarks.speed_leakage import write_corpus

    return write_corpus(tmp_path, train=5_000, eval=1_000, seed=7)


def test_a_long_audit_shows_progress_and_the_page_keeps_answering(
    watched: Watched, base_url: str, tmp_path: Path
) -> None:
    page = watched.page
    page.goto(base_url + "calculators/leakage/")
    wait_ready(page, "leakage")
    train, held = _audit_files(tmp_path)
    want = audit(page, train, held)
    pick(page, "leakage", "train", train)
    pick(page, "leakage", "eval", held)
    progress = form_of(page, "leakage").locator("[data-progress]")
    expect(progress).to_be_visible(timeout=30_000)
    seen: list[Any] = []
    round_trips: list[float] = []
    while progress.is_visible():
        seen.append(progress.evaluate("p => [p.value, p.max]"))
        # the page's own thread runs a task at once while the worker audits
        round_trips.append(
            page.evaluate(
                "() => new Promise(r => { const t = performance.now();"
                " setTimeout(() => r(performance.now() - t), 0); })"
            )
        )
        page.wait_for_timeout(100)
    assert any(0 < value <= high for value, high in seen), seen
    assert round_trips and max(round_trips) < 250, round_trips
    wait_result(page, "leakage", want, timeout=READY)
    expect(form_of(page, "leakage").locator("[data-status]")).to_have_text(
        "recomputed in your browser"
    )
