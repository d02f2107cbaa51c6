"""The leakage audit in the page: 5,000 train and 1,000 eval texts of about 60 words (the
generated sets of benchmarks/speed_leakage.py, a tenth of the eval set planted as copies)
picked in the calculator's form, audited by the page's worker under Pyodide in headless
Chromium (Debian's), localhost.

Measured per run, from the moment both files are picked to the result in the page: the
wall time, how many progress reports the page showed, and the longest task the page's own
thread ran meanwhile (PerformanceObserver, longtask: the page stays responsive when the
audit runs in the worker). Prints medians of 3 runs against CPython's time for the same
files; `make bench` runs it (it is not a timed test).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from statistics import median

from playwright.sync_api import sync_playwright

from benchmarks.site_load import CHROMIUM_ARGS, _build, start_server
from benchmarks.speed_leakage import write_corpus
from calculators.web import compute

RUNS = 3
PAGE = "calculators/leakage/"
FORM = 'form[data-calculator="leakage"]'

_WATCH = """() => {
  window.__longest = 0;
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) window.__longest = Math.max(window.__longest, e.duration);
  }).observe({ type: "longtask", buffered: true });
  window.__reports = 0;
  const bar = document.querySelector('FORM [data-progress]');
  new MutationObserver(() => window.__reports++).observe(bar, { attributes: true });
}""".replace("FORM", FORM)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "site"
        _build(site)
        train, held = write_corpus(Path(tmp), train=5_000, eval=1_000, seed=7)
        start = time.perf_counter()
        want = compute("leakage", {"train": str(train), "eval": str(held)})
        cpython = time.perf_counter() - start
        server, base = start_server(site)
        walls, reports, longest = [], [], []
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(
                    executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS
                )
                for _ in range(RUNS):
                    context = browser.new_context()
                    page = context.new_page()
                    page.goto(base + PAGE)
                    ready = f'{FORM} [data-result][data-state="ready"]'
                    page.wait_for_selector(ready, timeout=120_000)
                    page.evaluate(_WATCH)
                    started = time.perf_counter()
                    page.locator(f'{FORM} input[name="train"]').set_input_files(str(train))
                    page.locator(f'{FORM} input[name="eval"]').set_input_files(str(held))
                    page.wait_for_function(
                        "([sel, n]) => JSON.parse(document.querySelector(sel).dataset.resultJson)"
                        ".train_size === n",
                        arg=[f"{FORM} [data-result]", want["train_size"]],
                        timeout=300_000,
                    )
                    walls.append(time.perf_counter() - started)
                    reports.append(page.evaluate("window.__reports"))
                    longest.append(page.evaluate("window.__longest"))
                    context.close()
                browser.close()
        finally:
            server.terminate()
    sizes = f"{want['train_size']:,} train x {want['eval_size']:,} eval"
    print(f"## leakage audit in the page: {sizes}")
    print(f"- CPython, same files: {cpython:.2f} s")
    print(
        f"- page, pick to result, median of {RUNS}: {median(walls):.2f} s "
        f"(runs: {', '.join(f'{w:.2f}' for w in walls)}); ratio to CPython "
        f"{median(walls) / cpython:.1f}x"
    )
    print(f"- progress bar updates per run (median): {median(reports):.0f}")
    print(f"- longest task on the page's own thread (median): {median(longest):.0f} ms")


if __name__ == "__main__":
    main()
