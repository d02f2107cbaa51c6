"""Training FLOPs and time, and the decode/prefill bounds."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculators.memory.gpus import get_gpu
from calculators.memory.kv_cache import kv_cache_bytes
from calculators.memory.weights import weight_bytes
from calculators.model.params import parameter_counts
from calculators.model.presets import load_preset
from calculators.model.spec import ModelSpec
from calculators.training.throughput import (
    MFU_REFERENCES,
    attention_flops_per_token,
    inference_bounds,
    matmul_parameters,
    training_flops_per_token,
    training_time,
)

LLAMA = ModelSpec.from_hf_config(load_preset("llama-3.1-8b"))
MIXTRAL = ModelSpec.from_hf_config(load_preset("mixtral-8x7b"))
MISTRAL = ModelSpec.from_hf_config(load_preset("mistral-7b-v0.1"))

# GPT-3 175B as a GPT-2-style config (Brown et al. 2020, arXiv:2005.14165, table 2.1:
# 96 layers, d_model 12288, 96 heads of 128, context 2048; vocabulary of GPT-2).
GPT3 = ModelSpec.from_hf_config(
    {
        "model_type": "gpt2",
        "vocab_size": 50257,
        "n_embd": 12288,
        "n_layer": 96,
        "n_head": 96,
        "n_positions": 2048,
    }
)


def test_gpt3_training_compute_matches_the_paper():
    # Brown et al. 2020, table D.1: GPT-3 175B trained on 300B tokens, 3.14E+23 FLOPs,
    # computed as 6 N D (the attention term left out).
    assert 6 * matmul_parameters(GPT3) * 300e9 == pytest.approx(3.14e23, rel=0.005)


def test_palm_formula_for_llama():
    # PaLM appendix B: 6N + 12 L H Q T per token, N without the input embedding.
    n = parameter_counts(LLAMA).total - 128_256 * 4096
    assert matmul_parameters(LLAMA) == n == 7_504_924_672
    assert training_flops_per_token(LLAMA, 8192) == 6 * n + 12 * 32 * 32 * 128 * 8192


def test_windows_cap_the_attention_term():
    # Mistral 7B v0.1: every layer attends to at most 4096 tokens.
    assert attention_flops_per_token(MISTRAL, 32768) == attention_flops_per_token(MISTRAL, 4096)
    assert attention_flops_per_token(LLAMA, 32768) == 8 * attention_flops_per_token(LLAMA, 4096)


def test_moe_counts_active_experts_only():
    # Mixtral: 2 of 8 experts per token.
    c = parameter_counts(MIXTRAL)
    assert matmul_parameters(MIXTRAL) == c.active - c.embedding


def test_training_time_arithmetic():
    t = training_time(LLAMA, tokens=10**9, seq_len=8192, gpu="h100-sxm", gpus=8, mfu=0.4)
    peak = get_gpu("h100-sxm").bf16_dense_tflops * 1e12
    expected = 10**9 * training_flops_per_token(LLAMA, 8192) / (8 * peak * 0.4)
    assert t.seconds == pytest.approx(expected)
    assert t.gpu_hours == pytest.approx(expected * 8 / 3600)
    assert t.total_flops == 10**9 * t.flops_per_token


def test_decode_bound_at_batch_one_is_bandwidth():
    b = inference_bounds(LLAMA, gpu="h100-sxm", context=4096)
    expected_bytes = (
        weight_bytes(LLAMA, "bf16").main_bytes + kv_cache_bytes(LLAMA, context=4096).total_bytes
    )
    assert b.bytes_per_step == expected_bytes
    assert b.decode_bound == "bandwidth"
    assert b.decode_tokens_per_second == pytest.approx(3350e9 / expected_bytes)


def test_moe_decode_reads_the_experts_the_batch_touches():
    one = inference_bounds(MIXTRAL, gpu="h100-sxm", context=1024, batch=1)
    many = inference_bounds(MIXTRAL, gpu="h100-sxm", context=1024, batch=64)
    w = weight_bytes(MIXTRAL, "bf16")
    experts = w.by_category["experts"]
    kv1 = kv_cache_bytes(MIXTRAL, context=1024).total_bytes
    assert one.bytes_per_step == w.main_bytes - experts * 6 // 8 + kv1
    assert many.bytes_per_step == w.main_bytes + 64 * kv1


def test_mfu_references_have_sources():
    assert all(0 < r.value <= 1 and r.source for r in MFU_REFERENCES)


@settings(max_examples=30, deadline=None)
@given(batch=st.integers(1, 512), extra=st.integers(1, 512), context=st.integers(1, 32768))
def test_more_batch_never_lowers_decode_throughput(batch, extra, context):
    a = inference_bounds(MIXTRAL, gpu="a100-80gb", context=context, batch=batch)
    b = inference_bounds(MIXTRAL, gpu="a100-80gb", context=context, batch=batch + extra)
    assert b.decode_tokens_per_second >= a.decode_tokens_per_second * (1 - 1e-12)


@settings(max_examples=30, deadline=None)
@given(gpus=st.integers(1, 64), mfu=st.floats(0.05, 0.95))
def test_more_gpus_or_mfu_never_take_longer(gpus, mfu):
    a = training_time(LLAMA, tokens=10**8, seq_len=4096, gpu="h100-sxm", gpus=gpus, mfu=mfu)
    b = training_time(LLAMA, tokens=10**8, seq_len=4096, gpu="h100-sxm", gpus=gpus + 1, mfu=mfu)
    c = training_time(
        LLAMA, tokens=10**8, seq_len=4096, gpu="h100-sxm", gpus=gpus, mfu=min(1.0, mfu + 0.04)
    )
    assert b.seconds < a.seconds
    assert c.seconds < a.seconds


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"mfu": 0}, "mfu must be in"),
        ({"mfu": 1.5}, "mfu must be in"),
        ({"gpus": 0}, "gpus must be a positive integer, got 0"),
        ({"tokens": -1}, "tokens must be a positive integer, got -1"),
        ({"seq_len": 0}, "seq_len must be a positive integer, got 0"),
        ({"gpu": "a100-80gb", "precision": "fp8"}, "a100-80gb has no FP8"),
        ({"precision": "int4"}, "precision must be bf16 or fp8"),
        ({"gpu": "h300"}, "gpu must be one of"),
    ],
)
def test_bad_inputs_name_the_field(kwargs, match):
    args = {"tokens": 10**6, "seq_len": 2048, "gpu": "h100-sxm"} | kwargs
    with pytest.raises(ValueError, match=match):
        training_time(LLAMA, **args)
