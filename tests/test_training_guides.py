"""The validate-the-loop guide (docs/training/validate-the-loop.md): its planned run is
the LoRA run it describes, and its sentences say what the calculators and the tools do.
If a block or a sentence drifted from the other, the page would still build."""

from __future__ import annotations

from pathlib import Path

import pytest

from calculators.model.presets import load_preset
from calculators.model.spec import ModelSpec
from calculators.training.throughput import matmul_parameters
from calculators.web import compute
from tests.page_blocks import page_blocks

PAGE = Path(__file__).resolve().parents[1] / "docs" / "training" / "validate-the-loop.md"
LORA = ("lora_rank", "lora_targets")


def _text() -> str:
    return " ".join(PAGE.read_text(encoding="utf-8").split())


def test_the_planned_run_is_the_lora_run_of_the_memory_blocks() -> None:
    blocks = {b.id: b for b in page_blocks(PAGE) if b.id}
    step, plan = blocks["step"], blocks["plan"]
    assert plan.name == "throughput" and step.name == "training"
    # the plan counts the step the page describes: the same LoRA on the same model
    assert {k: plan.inputs[k] for k in LORA} == {k: step.inputs[k] for k in LORA}
    for key in ("model", "seq_len", "gpu"):
        assert plan.inputs[key] == step.inputs[key]
    assert plan.result is not None
    training = plan.result["training"]
    assert training["adapter_parameters"] == step.result["trainable_parameters"] > 0
    # 4N (the frozen base's forward and input gradients) plus 6 per adapter parameter,
    # where full fine-tuning costs 6N, both plus the same attention term
    n = matmul_parameters(ModelSpec.from_hf_config(load_preset(plan.inputs["model"])))
    full = compute("throughput", {k: v for k, v in plan.inputs.items() if k not in LORA})
    attention = full["training"]["flops_per_token"] - 6 * n
    assert 0 < attention < n
    assert training["flops_per_token"] == 4 * n + 6 * training["adapter_parameters"] + attention
    assert training["gpu_hours"] / full["training"]["gpu_hours"] == pytest.approx(
        training["flops_per_token"] / full["training"]["flops_per_token"]
    )
    assert (
        "the base is frozen, so a token costs 4N FLOPs plus 6 per adapter parameter where "
        "full fine-tuning costs 6N, both plus the same attention term" in _text()
    )


def test_the_label_check_skips_the_masked_positions() -> None:
    # -100 marks the positions without a loss: a check over every position would fail
    # on every prompt mask
    text = _text()
    assert "compare `labels` with `input_ids` where `labels != -100`" in text
    assert "`(labels == input_ids)[labels != -100].all()`" in text
    assert "`labels[:, 1:]` with `input_ids[:, 1:]`" not in text


def test_the_precision_is_named_by_its_policy_not_bf16_mixed() -> None:
    # "bf16 mixed precision" reads as Lightning's bf16-mixed (autocast over fp32 weights);
    # the page's step keeps bf16 weights with an fp32 master copy
    text = _text()
    assert "bf16 mixed precision" not in text.lower() and "bf16-mixed" not in text
    blocks = [b for b in page_blocks(PAGE) if b.name == "training"]
    assert blocks and {b.inputs["precision"] for b in blocks} == {"bf16-fp32-master"}
    assert "`bf16-fp32-master` (bf16 weights, an fp32 master copy of what trains)" in text
