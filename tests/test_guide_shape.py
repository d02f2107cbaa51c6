"""Every guide answers its reader's question on its first screen: an "In short" box, ending
within the first 600 words of prose, gives the decision for the common case, before the
method and the worked example (issue 23, "Length and shape")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
SECTIONS = ("memory", "evaluation", "training", "adaptation", "budget")
# pages of a section that are not guides: its index and a protocol's checklist
NOT_GUIDES = {"index.md", "fine-tuning-protocol.md"}
FIRST_SCREEN_WORDS = 600
BOX = re.compile(r'^!!! abstract "In short[^"]*"\n((?:    .*\n|\n)+)', re.M)
FENCE = re.compile(r"^```.*?^```[ \t]*$", re.M | re.S)


def guides() -> list[Path]:
    return sorted(
        p for s in SECTIONS for p in (DOCS / s).glob("*.md") if p.name not in NOT_GUIDES
    )


def prose_words(markdown: str) -> int:
    """Words a reader reads: calculator blocks and code fences left out."""
    return len(FENCE.sub("", markdown).split())


@pytest.mark.parametrize("page", guides(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_answer_comes_first(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    box = BOX.search(text)
    assert box, f"{page.name}: no 'In short' box"
    before_and_box = text[: box.end()]
    words = prose_words(before_and_box)
    assert words <= FIRST_SCREEN_WORDS, f"{page.name}: the box ends after {words} words"
    # the box says something: at least three points, not a heading alone
    assert box.group(1).count("\n    - ") + box.group(1).startswith("    - ") >= 3


def test_the_word_count_leaves_code_out() -> None:
    text = "one two\n```calculator x\nid: a\nshow: no\n```\nthree\n"
    assert prose_words(text) == 3
