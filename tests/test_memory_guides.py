"""The memory guides' sentences that read their computed figures (docs/memory/
sizing-gpu-memory.md and kv-cache.md, and the envelope calculator's page): the runtime
each serving example assumes changes the answer, and the pages say by how much. If a
calculator change turned one of these sentences false, the page would still build, so
they are held here on the same inputs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from calculators.memory.gpus import get_gpu
from calculators.serving.runtimes import vllm_batch_defaults
from calculators.units import HEADROOM_DIGITS, format_headroom
from calculators.web import compute
from tests.page_blocks import page_blocks, results_by_id

ROOT = Path(__file__).resolve().parents[1]

SEVENTY_B = {"model": "llama-3.1-70b", "context": "8192", "batch": "4"}


def envelope(**inputs: str) -> dict[str, Any]:
    return compute("envelope", inputs)


def chunk_for(gpu: str) -> int:
    """vLLM's default max_num_batched_tokens for `vllm serve` on `gpu` (8192 on cards of
    70 GiB or more but the A100, else 2048: vllm/engine/arg_utils.py, as the serve
    calculator reads it)."""
    card = get_gpu(gpu)
    return vllm_batch_defaults("vllm", "serve", card.visible_bytes, card.name, 8192)[0]


@pytest.mark.parametrize(("gpu", "chunk"), [("h100-sxm", 8192), ("h200", 8192), ("l40s", 2048)])
def test_the_guides_chunks_are_vllms_defaults_on_their_cards(gpu: str, chunk: int) -> None:
    assert chunk_for(gpu) == chunk
    assert chunk_for("a100-80gb") == 2048  # the A100 is the exception the page's rule names


def test_one_pass_prefill_doubles_the_70b_bf16_card_count() -> None:
    chunked = envelope(**SEVENTY_B, format="bf16", gpu="h100-sxm", prefill_chunk="8192")
    whole = envelope(**SEVENTY_B, format="bf16", gpu="h100-sxm")
    cards = {c["gpu"]: c for c in chunked["cards"]}, {c["gpu"]: c for c in whole["cards"]}
    assert not chunked["fits"] and not whole["fits"]  # "one H100 cannot hold it"
    # the box's "can double the card count": 2 H100s in vLLM's chunks, 4 in one pass
    assert 2 * cards[0]["h100-sxm"]["cards_needed"] == cards[1]["h100-sxm"]["cards_needed"]
    line = {x["id"]: x for x in whole["lines"]}["activations"]
    assert "transformers' generate()" in line["basis"]


def test_the_long_context_awq_case_fits_chunked_and_not_in_one_pass() -> None:
    inputs = {"model": "llama-3.1-70b", "format": "awq-int4", "context": "32768", "batch": "8"}
    chunked = envelope(**inputs, gpu="h200", prefill_chunk="8192")
    whole = envelope(**inputs, gpu="h200")
    assert chunked["fits"] and not whole["fits"]


def test_the_8b_example_fits_either_way_and_chunks_save_workspace() -> None:
    inputs = {"model": "llama-3.1-8b", "context": "8192", "batch": "8", "gpu": "l40s"}
    chunked = envelope(**inputs, prefill_chunk="2048")
    whole = envelope(**inputs)
    act = [{x["id"]: x["bytes"] for x in r["lines"]}["activations"] for r in (chunked, whole)]
    assert chunked["fits"] and whole["fits"] and act[0] < act[1]


def test_the_kv_probe_command_runs_on_an_h100_and_not_on_an_l40s() -> None:
    # kv-cache.md: the probe prefills 8 x 32K in one pass; "it fits on an H100 and does not
    # fit on an L40S, where it runs at most N sequences"
    r = envelope(model="llama-3.1-8b", context="32768", batch="8", gpu="h100-sxm")
    cards = {c["gpu"]: c for c in r["cards"]}
    assert r["fits"] and not cards["l40s"]["fits"] and cards["l40s"]["max_sequences"] >= 1


def _page(path: str) -> str:
    """A docs page with its whitespace folded, so that a sentence reads across lines."""
    return " ".join((ROOT / "docs" / path).read_text(encoding="utf-8").split())


def test_the_sizing_guide_gives_every_headroom_as_approximate() -> None:
    # calculators/units.py prints headroom to HEADROOM_DIGITS (a tenth of a GiB); the page
    # says why and, since its reason (tens to a few hundred MiB) can exceed that step,
    # calls every headroom approximate (tests/test_units.py pins the digits)
    text = _page("memory/sizing-gpu-memory.md")
    assert HEADROOM_DIGITS == 1
    assert (
        "with about [[e8:headroom_bytes|headroom]] of headroom. Read every headroom as "
        "approximate, good to a few tenths of a GiB at best: the visible memory it is "
        "measured against moves by tens to a few hundred MiB with the card and the driver, "
        "so it is printed to a tenth of a GiB and no finer." in text
    )
    refs = re.findall(r"(\S+) \[\[(\w+):headroom_bytes\|(\w+)\]\]", text)
    assert len(refs) == text.count(":headroom_bytes|") >= 6
    for before, block, fmt in refs:
        assert fmt == "headroom", block  # the rounded format, never |gib
        # in prose "about" precedes it; in the 70B table the column says "(about)"
        assert before.lstrip("(") in ("about", "|"), (before, block)
    assert "| headroom (about) |" in text
    e8 = results_by_id(ROOT / "docs/memory/sizing-gpu-memory.md")["e8"]
    assert format_headroom(e8["headroom_bytes"]).endswith(" GiB") and e8["fits"]


def test_the_envelope_pages_example_is_vllms_chunk_and_names_the_one_pass_case() -> None:
    blocks = {b.id: b for b in page_blocks(ROOT / "docs/calculators/envelope.md") if b.id}
    ex, whole = blocks["ex"], blocks["whole"]
    # the shown example is `vllm serve` on its card; `whole` is the same without a chunk
    assert int(ex.inputs["prefill_chunk"]) == chunk_for(ex.inputs["gpu"])
    assert "prefill_chunk" not in whole.inputs
    assert {k: v for k, v in ex.inputs.items() if k != "prefill_chunk"} == whole.inputs
    lines = [{x["id"]: x for x in b.result["lines"]} for b in (ex, whole) if b.result]
    assert lines[0]["activations"]["bytes"] < lines[1]["activations"]["bytes"]
    assert "transformers' generate()" in lines[1]["activations"]["basis"]
    text = _page("calculators/envelope.md")
    assert (
        "The example serves its requests the way `vllm serve` would on an L40S: the prefill "
        "chunk is [[ex:prefill_chunk|int]] tokens, vLLM's default on that card" in text
    )
    assert ex.inputs["gpu"] == "l40s"
    assert "Clear the field for the transformers `generate()` case" in text
    assert "prefill_chunk=" + ex.inputs["prefill_chunk"] + "]]" in text  # the command too
