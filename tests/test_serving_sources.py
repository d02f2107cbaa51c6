"""The serve page cites each runtime rule at a release tag, and the runtimes' own source
lines (calculators/serving/runtimes.py) are among the links it shows."""

from __future__ import annotations

import re
from pathlib import Path

from calculators.serving.runtimes import RUNTIMES

PAGE = (Path(__file__).resolve().parents[1] / "docs" / "calculators" / "serve.md").read_text()
SOURCES = PAGE[PAGE.index("## Sources") :]
RUNTIME_REPO = re.compile(r"https://github\.com/(vllm-project/vllm|sgl-project/sglang)/[^)\s]+")
AT_TAG = re.compile(r"https://github\.com/[^/]+/[^/]+/(blob|tree)/v\d+\.\d+\.\d+/")


def test_every_runtime_link_on_the_page_is_pinned_to_a_release():
    links = [m.group(0) for m in RUNTIME_REPO.finditer(PAGE)]
    assert len(links) >= 15
    unpinned = [
        u for u in links if "/pull/" not in u and "/issues/" not in u and not AT_TAG.match(u)
    ]
    assert unpinned == []


def test_each_runtime_source_is_a_link_in_the_sources_table():
    for runtime in RUNTIMES.values():
        url = runtime.source.split(" ")[0]
        assert AT_TAG.match(url), runtime.id
        assert f"({url})" in SOURCES, runtime.id


def test_the_sources_cover_the_rules_the_page_states():
    rows = [line for line in SOURCES.splitlines() if line.startswith("| ") and "---" not in line]
    rules = " ".join(row.split("|")[1] for row in rows[1:])
    for rule in ("KV budget", "sampler", "concurrency", "block sizes", "batch defaults",
                 "vocabulary padding", "KV heads", "rotary", "V0", "mem-fraction-static",
                 "pool", "SGLang 0.4", "hybrid memory allocator",
                 "sliding-window layers"):  # fmt: skip
        assert rule in rules, rule
