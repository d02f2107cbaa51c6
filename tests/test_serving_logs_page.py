"""The validation page's section (calculators/serving/logs_page.py, the `[[serving-logs]]`
directive): its counts are the data file's, and each SGLang check has its row and its bar."""

from __future__ import annotations

import re
from pathlib import Path

from calculators.serving.logs import KNOWN_MISSES, compare, load_records
from calculators.serving.logs_page import serving_logs_markdown
from calculators.serving.sglang_logs import sglang_checks

RECORDS = Path(__file__).resolve().parents[1] / "docs" / "data" / "serving-logs" / "records.json"
DATA = load_records(str(RECORDS))
PAGE = serving_logs_markdown(str(RECORDS))


def test_the_counts_are_the_files():
    total = len(DATA["records"]) + len(DATA["not_modelled"]) + len(DATA["sglang"])
    assert PAGE.startswith(f"**{total} launches** collected")
    assert f"**{len(DATA['records'])} vLLM launches compared**" in PAGE
    assert f"{len(DATA['sglang'])} SGLang launches" in PAGE
    assert f"{len(DATA['left_out'])} more threads read and left out" in PAGE


def test_each_sglang_check_has_its_row_and_its_bar():
    checks = sglang_checks(str(RECORDS))
    section = PAGE[PAGE.index("### SGLang: the pool it sizes") :]
    chart = section[: section.index("</svg>")]  # the wide variant (a phone one follows)
    assert len(re.findall(r"<rect [^>]*><title>", chart)) == len(checks)
    for c in checks:
        row = f"| [{c.id}]({c.source}) | {c.model} | {c.tp} | {c.kind} |"
        assert row in section, row
        assert f"{c.logged_tokens:,} | {c.predicted_tokens:,} |" in section
    # a launch without a check says why
    checked = {c.id for c in checks}
    for r in DATA["sglang"]:
        if r["id"] not in checked:
            assert r["not_compared"] in section.replace("&#x27;", "'"), r["id"]


def test_each_compared_record_has_a_row_with_every_line_it_logs():
    table = PAGE[PAGE.index("| record | model | card, TP | runtime | weights | non-torch") :]
    rows = [line for line in table.split("\n\n")[0].splitlines()[2:]]
    assert len(rows) == len(DATA["records"])
    for r, row in zip(DATA["records"], rows, strict=True):
        c = compare(r, str(RECORDS.parent))
        cells = row.split(" | ")
        assert len(cells) == 11, row
        assert row.startswith(f"| [{c.id}]({r['source']})" + (" †" if c.in_sample else ""))
        # a cell for each logged line, with its signed error in brackets
        assert sum(1 for cell in cells[4:10] if " / " in cell and "(" in cell) == len(
            [e for e in c.lines if e.line != "kv_tokens_from_logged_budget"]
        )


def test_every_line_with_data_has_its_chart():
    figures = re.findall(r"<figcaption>([^<]+): predicted against logged, per record<", PAGE)
    assert figures[0] == "KV budget"
    assert {
        "Weights per rank",
        "Non-torch memory",
        "Activation peak",
        "Maximum concurrency",
    } <= set(figures)


def test_each_known_miss_is_on_the_page_with_its_reason():
    section = PAGE[PAGE.index("### Known misses") : PAGE.index("### What the misses say")]
    for rid, (_line, why) in KNOWN_MISSES.items():
        assert f"[{rid}](" in section
        assert why.replace("'", "&#x27;") in section
