"""No capacity figure is typed by hand on a page: every GiB, GB or MiB figure comes from a
reference (`[[...]]`) resolved at build time, or sits in code the reader copies."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.parts)

_FENCE = re.compile(r"^(`{3,}|~{3,}).*?^\1\s*$", re.M | re.S)
_INLINE = re.compile(r"`[^`\n]+`")
_REFERENCE = re.compile(r"\[\[[^\]]+\]\]")
_MATH = re.compile(r"\\\(.*?\\\)|\\\[.*?\\\]", re.S)
# a number (1, 1.5, 1,024, 2^30) followed by a capacity unit
_FIGURE = re.compile(r"\b\d[\d,.]*(?:\^\d+)?\s?(?:GiB|GB|MiB|MB|TiB|TB|KiB|kB)\b")


def hand_typed(markdown: str) -> list[str]:
    """The capacity figures of `markdown` outside code, math and references."""
    for pattern in (_FENCE, _INLINE, _REFERENCE, _MATH):
        markdown = pattern.sub(" ", markdown)
    return _FIGURE.findall(markdown)


def test_the_check_finds_a_typed_figure_and_passes_references():
    assert hand_typed("the weights are 14.96 GiB on an 80 GB card") == ["14.96 GiB", "80 GB"]
    assert hand_typed("nvidia-smi prints 81559MiB") == ["81559MiB"]
    assert hand_typed("weights [[w8:weight_bytes|gib]], `torch.empty(2 GiB)`") == []
    assert hand_typed("```sh\necho 24 GB\n```\n") == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(DOCS)))
def test_no_capacity_figure_is_typed_by_hand(page: Path) -> None:
    assert hand_typed(page.read_text(encoding="utf-8")) == []
