"""throughput on CPU: rates measured, no MFU without a catalog peak."""

from __future__ import annotations

import pytest

from calculators.model.spec import ModelSpec
from calculators.training.lora import adapter_parameters_or_none
from calculators.training.throughput import (
    frozen_base_training_flops_per_token,
    training_flops_per_token,
)
from probes.setup import load_config
from probes.throughput import card_for, detect_card
from tests.probes_helpers import run_probe

# a tiny model on the CPU, a short training and decode run: seconds
TINY_CPU = ("--config", "tiny-llama", "--device", "cpu", "--seq-len", "32")


def test_cpu_rates_without_mfu(tmp_path) -> None:
    code, r = run_probe(
        tmp_path,
        "throughput",
        *TINY_CPU,
        "--steps",
        "2",
        "--warmup",
        "1",
        "--decode-tokens",
        "4",
        "--context",
        "16",
    )
    assert code == 0 and r and r["status"] == "ok"
    m = r["measured"]
    assert m["training_tokens_per_second"] > 0 and m["decode_tokens_per_second"] > 0
    assert (
        m["training_flops_per_second"]
        == m["training_tokens_per_second"] * (r["details"]["flops_per_token"])
    )
    assert "mfu" not in m and r["estimate"] == {}
    assert r["details"]["budget_inputs"]["mfu"] is None


def test_card_detection() -> None:
    assert detect_card("cpu", None) is None
    assert detect_card("cpu", "h100-sxm") == "h100-sxm"


@pytest.mark.parametrize(
    ("name", "total", "card"),
    [
        ("NVIDIA H100 80GB HBM3", 85_045_477_376, "h100-sxm"),
        ("NVIDIA A100-SXM4-80GB", 85_100_068_864, "a100-80gb"),
        ("NVIDIA A100-SXM4-40GB", 42_298_834_944, "a100-40gb"),
        ("NVIDIA H200", 150_109_945_856, "h200"),
        ("NVIDIA GeForce RTX 4090", 25_386_352_640, "rtx-4090"),
        ("NVIDIA L4", 23_570_219_008, "l4"),
        ("NVIDIA L40S", 47_803_596_800, "l40s"),
        ("AMD Instinct MI300X", 206_141_652_992, "mi300x"),
        ("Tesla T4", 15_835_398_144, None),
    ],
)
def test_card_from_the_device_name(name: str, total: int, card: str | None) -> None:
    assert card_for(name, total) == card


def test_lora_counts_the_frozen_base_flops(tmp_path) -> None:
    # issue 23: a LoRA step computes no weight gradients for the base, 4 N + 6 N_a FLOPs
    # per token, not 6 N; the adapters are the ones the probe created, which the
    # calculators count the same way for the same rank and targets
    code, r = run_probe(
        tmp_path,
        "throughput",
        *TINY_CPU,
        "--steps",
        "2",
        "--warmup",
        "0",
        "--decode-tokens",
        "2",
        "--context",
        "8",
        "--lora-rank",
        "4",
    )
    assert code == 0 and r and r["status"] == "ok"
    spec = ModelSpec.from_hf_config(load_config("tiny-llama", None)[0])
    d = r["details"]
    assert d["adapter_parameters"] == adapter_parameters_or_none(
        spec, 4, ",".join(r["inputs"]["lora_targets"])
    )
    assert d["flops_per_token"] == frozen_base_training_flops_per_token(
        spec, 32, d["adapter_parameters"]
    )
    assert d["flops_per_token"] < training_flops_per_token(spec, 32)
    assert d["flops_per_token_formula"].startswith("4 N + 6 N_a")
