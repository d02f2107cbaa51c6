"""Every guide answers its reader's question on its first screen (issue 23, "Length and
shape"): an answer block, either an "In short" box or a first section titled "The
decision ...", ends within the first 600 words of prose, before the method and the worked
example."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
SECTIONS = ("memory", "evaluation", "training", "adaptation", "budget")
# pages of a section that are not guides: its index and a protocol's checklist
NOT_GUIDES = {"index.md", "fine-tuning-protocol.md"}
FIRST_SCREEN_WORDS = 600
# issue 23: pages of 4,500 to 7,500 words read as references, not guides; digressions go
# into collapsed notes, which a reader opens when they want them
PAGE_WORDS = 4000
BOX = re.compile(r'^!!! abstract "In short[^"]*"\n(?:    .*\n|\n)+', re.M)
DECISION = re.compile(r"^## The decision\b.*\n(?:(?!## ).*\n)+", re.M)
FENCE = re.compile(r"^```.*?^```[ \t]*$", re.M | re.S)
# a collapsed block (pymdownx.details): closed until the reader opens it
COLLAPSED = re.compile(r"^\?\?\? .*\n(?:    .*\n|\n)*", re.M)


def guides() -> list[Path]:
    return sorted(p for s in SECTIONS for p in (DOCS / s).glob("*.md") if p.name not in NOT_GUIDES)


def prose_words(markdown: str) -> int:
    """Words a reader reads on the page as it opens: calculator blocks, code fences and
    collapsed notes left out."""
    return len(COLLAPSED.sub("", FENCE.sub("", markdown)).split())


def answer_end(markdown: str) -> int | None:
    """Where the page's answer block ends (the first box or decision section), or None."""
    found = [m for m in (BOX.search(markdown), DECISION.search(markdown)) if m]
    return min(m.end() for m in found) if found else None


@pytest.mark.parametrize("page", guides(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_answer_comes_first(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    end = answer_end(text)
    assert end is not None, f"{page.name}: no 'In short' box or 'The decision' section"
    answer_starts = text.rfind("\n", 0, end - 1)
    assert "## The problem" not in text[:answer_starts], f"{page.name}: the answer comes late"
    words = prose_words(text[:end])
    assert words <= FIRST_SCREEN_WORDS, f"{page.name}: the answer ends after {words} words"


@pytest.mark.parametrize("page", guides(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_page_reads_in_at_most_4000_words_as_it_opens(page: Path) -> None:
    words = prose_words(page.read_text(encoding="utf-8"))
    assert words <= PAGE_WORDS, f"{page.name}: {words} words outside collapsed notes"


def test_the_word_count_leaves_code_and_collapsed_notes_out() -> None:
    text = "one two\n```calculator x\nid: a\nshow: no\n```\nthree\n"
    assert prose_words(text) == 3
    assert prose_words(text + '??? note "Aside"\n\n    hidden words here\n\nfour\n') == 4


def test_an_answer_after_the_problem_or_past_600_words_is_refused() -> None:
    box = '!!! abstract "In short"\n    - a\n    - b\n    - c\n\n'
    assert answer_end("# T\n\n" + box + "## The problem\n") is not None
    assert prose_words("word " * 700 + box) > FIRST_SCREEN_WORDS
    assert answer_end("# T\n\n## The problem\n\nno answer here\n") is None


def test_no_index_marks_a_written_guide_as_planned() -> None:
    # a section index once listed two finished guides as "(planned)"
    link = re.compile(r"\]\(([\w.-]+\.(?:md|ipynb))\)\s*\*\(planned\)\*")
    for section in SECTIONS:
        index = DOCS / section / "index.md"
        stale = [m for m in link.findall(index.read_text(encoding="utf-8"))
                 if (DOCS / section / m).is_file()]  # fmt: skip
        assert stale == [], f"{section}/index.md marks written guides as planned: {stale}"
