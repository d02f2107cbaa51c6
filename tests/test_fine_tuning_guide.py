"""The fine-tuning guide's sentences that read its computed table (docs/adaptation/
fine-tuning.md, 'Three readings of the table'): if a calculator change turned one of them
false, the page would still build, so they are checked here on the same inputs."""

from __future__ import annotations

from typing import Any

import pytest

from calculators.web import compute

BASE = {
    "model": "llama-3.1-8b",
    "micro_batch": "4",
    "seq_len": "2048",
    "precision": "bf16-mixed",
    "checkpointing": "full",
}
LORA = {"lora_rank": "16", "lora_targets": "all-linear"}


def step(gpu: str, **extra: str) -> dict[str, Any]:
    return compute("training", {**BASE, "gpu": gpu, **extra})


@pytest.fixture(scope="module")
def table() -> dict[str, dict[str, Any]]:
    return {
        "full1": step("h100-sxm"),
        "full8": step("h100-sxm", zero="3", gpus="8"),
        "attn": step("h100-sxm", lora_rank="16", lora_targets="all-attention"),
        "lora": step("h100-sxm", **LORA),
        "lora24": step("rtx-4090", **LORA),
        "qlora24": step("rtx-4090", **LORA, base_format="nf4-dq"),
        "nock": step("h100-sxm", **{**LORA, "checkpointing": "none"}),
    }


def test_full_fine_tuning_fits_no_single_card_at_any_micro_batch(table) -> None:
    assert not table["full1"]["fits"] and table["full1"]["max_micro_batch"] == 0
    assert table["full8"]["fits"]  # "it needs its states sharded over several GPUs"


def test_lora_fits_a_24_gb_card_only_at_a_smaller_micro_batch_and_qlora_at_4(table) -> None:
    assert table["lora"]["fits"] and table["lora"]["max_micro_batch"] > 4
    assert not table["lora24"]["fits"] and 1 <= table["lora24"]["max_micro_batch"] < 4
    assert table["qlora24"]["fits"]


def test_all_linear_trains_several_times_more_but_memory_changes_little(table) -> None:
    lora, attn = table["lora"], table["attn"]
    assert lora["trainable_parameters"] >= 2 * attn["trainable_parameters"]
    assert abs(lora["total_bytes"] - attn["total_bytes"]) < 0.05 * lora["total_bytes"]


def test_lora_count_is_the_formula_summed_over_llama_layers(table) -> None:
    # Llama 3.1 8B config.json (meta-llama/Llama-3.1-8B): hidden 4096, intermediate 14336,
    # 32 layers, 8 KV heads of 128: q,o 4096+4096; k,v 4096+1024; gate,up,down 4096+14336.
    per_layer = 2 * (4096 + 4096) + 2 * (4096 + 1024) + 3 * (4096 + 14336)
    assert table["lora"]["trainable_parameters"] == 16 * 32 * per_layer


def test_checkpointing_off_costs_memory(table) -> None:
    assert table["nock"]["total_bytes"] > table["lora"]["total_bytes"]
