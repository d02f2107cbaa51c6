"""Sentences of the evaluation guides that more than one page shares, or that describe what a
calculator's search returns: the digits examples' writer caveat, said wherever the digits
figures are used, and the evaluation-set table's reading of its exact McNemar sizes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from calculators.evaluation.sizing import mcnemar_power_exact
from tests.page_blocks import results_by_id

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
EVAL_SET = DOCS / "evaluation" / "evaluation-set.md"
ANCHOR = "worked-example-the-two-digit-classifiers"


def _section(text: str, heading: str) -> str:
    """From `heading` to the next heading of the same or a higher level."""
    start = text.index(heading)
    level = heading.split(" ", 1)[0]
    stop = re.compile(rf"^#{{1,{len(level)}}} ", re.M).search(text, start + len(heading))
    return text[start : stop.start() if stop else len(text)]


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_the_writer_caveat_is_explained_under_the_anchor_the_others_link() -> None:
    # evaluation-set.md: the digits split puts each writer on both sides (type L3.2)
    text = EVAL_SET.read_text(encoding="utf-8")
    section = _flat(_section(text, "### Worked example: the two digit classifiers"))
    assert "**These figures hold for writers the models were trained on.**" in section
    assert "splits the images at random" in section and "13 writers" in section


# Each place that uses the digits figures says, in one sentence, what the random split by
# image means for them, and links the explanation.
WRITER_CAVEAT = {
    "evaluation/error-analysis.md": (
        "## Worked example: two classifiers of handwritten digits",
        f"(evaluation-set.md#{ANCHOR})",
    ),
    "evaluation/seed-variability.md": (
        "## Worked example: two models on the digits data, ten seeds",
        f"(evaluation-set.md#{ANCHOR})",
    ),
    "data/evaluation/README.md": (
        "## `digits/`",
        f"(../../evaluation/evaluation-set.md#{ANCHOR})",
    ),
}


@pytest.mark.parametrize("page", sorted(WRITER_CAVEAT))
def test_every_digits_example_states_the_writer_caveat_and_links_it(page: str) -> None:
    heading, link = WRITER_CAVEAT[page]
    section = _flat(_section((DOCS / page).read_text(encoding="utf-8"), heading))
    sentences = [s for s in re.split(r"(?<=[.;])\s", section) if link in s]
    assert sentences, f"{page}: no sentence of the digits example links {link}"
    (sentence,) = sentences
    assert "writer" in sentence and ("at random" in sentence or "not by writer" in sentence)
    # what it means for the figures: they hold for writers the models trained on
    assert "trained on" in sentence
    # and the link's target is a relative path to the page that explains it
    target = (DOCS / page).parent / link.strip("()").split("#")[0]
    assert target.resolve() == EVAL_SET.resolve()


# evaluation-set.md, "How many examples do you need?": "Each figure is the number of
# examples ... at which the power of the exact McNemar test ... crosses [80%]: with one
# example fewer it falls short ... read a figure as where the power crosses the target, not
# as a guaranteed minimum."
def test_the_size_table_reads_as_a_crossing_of_the_target_power() -> None:
    text = _flat(EVAL_SET.read_text(encoding="utf-8"))
    assert "Each figure is the fewest examples" not in text
    assert "with one example fewer it falls short" in text
    assert "not as a guaranteed minimum" in text
    blocks = results_by_id(EVAL_SET)
    cells = 0
    for block in ("t02", "t05", "t10", "t20"):
        r = blocks[block]
        psi, alpha = r["paired"]["discordance"], r["mcnemar"]["alpha"]
        target = r["mcnemar"]["power_target"]
        for g in r["gains"]:
            n = g.get("examples_paired")
            if n is None:  # a gain above the discordance: "above the discordance"
                continue
            assert g["method"] == "exact"
            assert mcnemar_power_exact(n, psi, g["gain"], alpha) >= target
            assert mcnemar_power_exact(n - 1, psi, g["gain"], alpha) < target
            cells += 1
    assert cells == 18  # the table's cells with a figure: 5 rows of 4, less 2 impossible
