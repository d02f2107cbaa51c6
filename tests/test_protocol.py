"""The fine-tuning protocol's checklist (calculators/web/protocol.py) and its JSON source
(docs/data/adaptation/fine-tuning-protocol.json)."""

from __future__ import annotations

import copy
import json
import re
import unicodedata
from pathlib import Path

import pytest

from calculators.web.protocol import checked_protocol, item_count, protocol_markdown

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "docs" / "data" / "adaptation" / "fine-tuning-protocol.json"


def _slug(heading: str) -> str:
    # Python-Markdown's toc slugify (markdown/extensions/toc.py, `slugify`), which MkDocs
    # uses for the anchors the checklist links to.
    text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


@pytest.fixture(scope="module")
def protocol() -> dict:
    return json.loads(SOURCE.read_text(encoding="utf-8"))


def test_every_item_links_to_a_heading_of_the_guide(protocol) -> None:
    guide = (ROOT / "docs" / protocol["guide"]).read_text(encoding="utf-8")
    anchors = {_slug(m) for m in re.findall(r"^#{2,4} (.+)$", guide, re.M)}
    for phase in protocol["phases"]:
        for item in phase["items"]:
            assert item["section"] in anchors, item["id"]


def test_every_tool_page_exists(protocol) -> None:
    for phase in protocol["phases"]:
        for item in phase["items"]:
            page = item.get("tool", {}).get("page")
            if page:
                assert (ROOT / "docs" / page).is_file(), page


def test_page_and_download_hold_the_same_items_in_order(protocol) -> None:
    page = protocol_markdown(protocol, page="adaptation/fine-tuning-protocol.md")
    download = protocol_markdown(protocol, page=None)
    boxes = [
        [line.split(sep)[0] for line in re.findall(r"^- \[ \] \*\*\d+\.\*\* (.+)$", md, re.M)]
        for md, sep in ((page, " ([section]("), (download, " (guide: "))
    ]
    texts = [i["text"] for p in protocol["phases"] for i in p["items"]]
    assert boxes[0] == boxes[1] == texts
    assert len(texts) == item_count(protocol) == 21


def test_page_links_are_relative_to_the_page_and_download_links_are_site_paths(protocol) -> None:
    page = protocol_markdown(protocol, page="adaptation/fine-tuning-protocol.md")
    assert "(fine-tuning.md#1-write-the-hypothesis-before-the-computation)" in page
    assert "[leakage calculator](../calculators/leakage.md)" in page
    download = protocol_markdown(protocol, page=None)
    assert "guide: adaptation/fine-tuning/#what-to-deliver" in download
    assert download.startswith(f"# {protocol['title']}\n")


def test_a_repeated_id_is_refused_naming_it(protocol) -> None:
    bad = copy.deepcopy(protocol)
    bad["phases"][1]["items"][0]["id"] = "hypothesis"
    with pytest.raises(ValueError, match=r"phases\[1\]\.items\[0\]: id 'hypothesis' used twice"):
        checked_protocol(bad)


@pytest.mark.parametrize("field", ["text", "section"])
def test_a_missing_field_is_refused_naming_it(protocol, field: str) -> None:
    bad = copy.deepcopy(protocol)
    del bad["phases"][0]["items"][2][field]
    with pytest.raises(ValueError, match=rf"phases\[0\]\.items\[2\]: missing .*'{field}'"):
        checked_protocol(bad)


def test_a_tool_needs_a_page_or_a_command(protocol) -> None:
    bad = copy.deepcopy(protocol)
    bad["phases"][0]["items"][2]["tool"] = {"name": "x"}
    with pytest.raises(ValueError, match="needs a 'page' or a 'command'"):
        checked_protocol(bad)
