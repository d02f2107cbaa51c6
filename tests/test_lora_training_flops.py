"""Training FLOPs with a frozen base (LoRA, QLoRA): 4N + 6 N_a + attention instead of 6N
(`calculators.training.throughput.frozen_base_training_flops_per_token`), and the
throughput and budget calculators that use it only when a LoRA rank is given."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculators.model.presets import load_preset
from calculators.model.spec import ModelSpec
from calculators.planning.budget import phase_from_tokens
from calculators.training.lora import adapter_parameters_or_none, lora_parameters
from calculators.training.throughput import (
    attention_flops_per_token,
    frozen_base_training_flops_per_token,
    matmul_parameters,
    training_flops_per_token,
    training_time,
)
from calculators.web import compute
from tests.strategies import specs
from tests.throughput_inputs import LLAMA_8B_ONE_H100, LORA_16_ALL_LINEAR_INPUTS

LLAMA = ModelSpec.from_hf_config(load_preset("llama-3.1-8b"))
# Llama 3.1 8B config.json (meta-llama/Llama-3.1-8B): hidden 4096, intermediate 14336, 32
# layers, 32 query heads and 8 KV heads of 128, vocabulary 128,256. LoRA rank 16 on every
# linear layer of the decoder: q,o 4096+4096; k,v 4096+1024; gate,up,down 4096+14336.
LORA_16_ALL_LINEAR = 16 * 32 * (2 * (4096 + 4096) + 2 * (4096 + 1024) + 3 * (4096 + 14336))


def test_frozen_base_formula_for_llama_by_hand():
    # N: every matmul parameter a token uses, the lm_head included, the input embedding
    # not (PaLM appendix B); 7,504,924,672 for this model (tests/test_throughput.py).
    n = 7_504_924_672
    attention = 2 * 32 * (128 + 128) * 2048 * 32  # QK^T and AV, every layer, forward
    assert matmul_parameters(LLAMA) == n
    assert attention_flops_per_token(LLAMA, 2048) == attention
    assert lora_parameters(LLAMA, 16, ("all-linear",)).trainable == LORA_16_ALL_LINEAR
    got = frozen_base_training_flops_per_token(LLAMA, 2048, LORA_16_ALL_LINEAR)
    assert got == 4 * n + 6 * LORA_16_ALL_LINEAR + 3 * attention
    # the base's weight gradients, 2N, are what the frozen step saves over the full one
    full = training_flops_per_token(LLAMA, 2048)
    assert full - got == 2 * n - 6 * LORA_16_ALL_LINEAR


def test_lora_step_costs_about_two_thirds_of_a_full_step_on_llama_8b():
    # 4N / 6N with small adapter and attention terms on top: between 2/3 and 0.72 here.
    ratio = frozen_base_training_flops_per_token(
        LLAMA, 2048, LORA_16_ALL_LINEAR
    ) / training_flops_per_token(LLAMA, 2048)
    assert 2 / 3 < ratio < 0.72


def test_full_training_time_is_unchanged_without_an_adapter():
    t = training_time(LLAMA, tokens=10**8, seq_len=2048, gpu="h100-sxm", mfu=0.3)
    assert t.adapter_parameters is None
    assert t.flops_per_token == training_flops_per_token(LLAMA, 2048)


def test_training_time_scales_with_the_frozen_formula():
    full = training_time(LLAMA, tokens=10**8, seq_len=2048, gpu="h100-sxm", mfu=0.3)
    lora = training_time(
        LLAMA,
        tokens=10**8,
        seq_len=2048,
        gpu="h100-sxm",
        mfu=0.3,
        adapter_parameters=LORA_16_ALL_LINEAR,
    )
    assert lora.flops_per_token == frozen_base_training_flops_per_token(
        LLAMA, 2048, LORA_16_ALL_LINEAR
    )
    assert lora.seconds / full.seconds == pytest.approx(
        lora.flops_per_token / full.flops_per_token, rel=1e-12
    )


@settings(max_examples=40, deadline=None)
@given(spec=specs(), seq_len=st.integers(1, 32768), share=st.floats(0.0, 0.3))
def test_a_small_adapter_always_costs_less_than_full_training(spec, seq_len, share):
    # With N_a < N / 3 the saved 2N outweighs the adapter's 6 N_a.
    n_a = max(1, int(matmul_parameters(spec) * share))
    frozen = frozen_base_training_flops_per_token(spec, seq_len, n_a)
    full = training_flops_per_token(spec, seq_len)
    assert frozen == full - 2 * matmul_parameters(spec) + 6 * n_a
    assert frozen < full


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "16"])
def test_bad_adapter_count_names_the_field(bad):
    with pytest.raises(ValueError, match="adapter_parameters must be a positive integer"):
        training_time(LLAMA, tokens=10**6, seq_len=2048, gpu="h100-sxm", adapter_parameters=bad)


def test_adapter_count_from_the_typed_inputs():
    assert adapter_parameters_or_none(LLAMA, None, "all-linear") is None
    assert adapter_parameters_or_none(LLAMA, 16, "all-linear") == LORA_16_ALL_LINEAR
    assert adapter_parameters_or_none(LLAMA, 16, "q_proj,v_proj,") == 16 * 32 * (
        (4096 + 4096) + (4096 + 1024)
    )
    with pytest.raises(ValueError, match="lora_targets: 'qproj' matches no linear layer"):
        adapter_parameters_or_none(LLAMA, 16, "qproj")


THROUGHPUT = LLAMA_8B_ONE_H100  # the fine-tuning guide's example run


def test_throughput_calculator_default_is_full_training():
    t = compute("throughput", THROUGHPUT)["training"]
    assert t["adapter_parameters"] is None
    assert t["flops_per_token"] == training_flops_per_token(LLAMA, 2048)


def test_throughput_calculator_with_a_rank_uses_the_frozen_base():
    t = compute("throughput", {**THROUGHPUT, **LORA_16_ALL_LINEAR_INPUTS})
    assert t["training"]["adapter_parameters"] == LORA_16_ALL_LINEAR
    assert t["training"]["flops_per_token"] == frozen_base_training_flops_per_token(
        LLAMA, 2048, LORA_16_ALL_LINEAR
    )


def test_budget_tokens_phase_with_and_without_a_rank():
    full = phase_from_tokens(
        "x", runs=1, tokens_per_run=10**8, spec=LLAMA, seq_len=2048, gpu="h100-sxm", mfu=0.3
    )
    lora = phase_from_tokens(
        "x",
        runs=1,
        tokens_per_run=10**8,
        spec=LLAMA,
        seq_len=2048,
        gpu="h100-sxm",
        mfu=0.3,
        adapter_parameters=LORA_16_ALL_LINEAR,
    )
    assert (
        full.gpu_hours_per_run
        == training_time(LLAMA, tokens=10**8, seq_len=2048, gpu="h100-sxm", mfu=0.3).gpu_hours
    )
    assert lora.gpu_hours_per_run / full.gpu_hours_per_run == pytest.approx(
        frozen_base_training_flops_per_token(LLAMA, 2048, LORA_16_ALL_LINEAR)
        / training_flops_per_token(LLAMA, 2048)
    )


def test_budget_command_line_takes_the_rank(capsys):
    from calculators.cli import main

    common = [
        "budget",
        "--model",
        "llama-3.1-8b",
        "--seq-len",
        "2048",
        "--mfu",
        "0.3",
        "--margin",
        "0",
        "--price",
        "1",
        "--phase",
        "sft:1:tokens=100000000",
        "--json",
    ]
    import json

    assert main(common) == 0
    full = json.loads(capsys.readouterr().out)["phases"][0]["gpu_hours"]
    assert main([*common, "--lora-rank", "16", "--lora-targets", "all-linear"]) == 0
    lora = json.loads(capsys.readouterr().out)["phases"][0]["gpu_hours"]
    assert lora < full
    assert main([*common, "--lora-rank", "0"]) == 2
    assert "--lora-rank must be a positive integer, got 0" in capsys.readouterr().err
