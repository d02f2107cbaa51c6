"""Saved tensors of a training forward pass, term by term.

Expected values are written from the module docstring's rules on real preset shapes;
the probes check the same rules against autograd's saved tensors on CPU.
"""

from calculators.model.presets import load_preset
from calculators.model.spec import ModelSpec
from calculators.training.activations import (
    ActivationSettings,
    kept_layer_bytes,
    layer_terms,
    norm_bytes,
    outside_layers_bytes,
)

BF16 = ActivationSettings(
    act_bytes=2, residual_bytes=2, softmax_bytes=4, attention="sdpa", dropout=False
)
AMP = ActivationSettings(
    act_bytes=2, residual_bytes=4, softmax_bytes=4, attention="sdpa", dropout=False
)
B, S = 2, 1024
T = B * S


def spec(name: str) -> ModelSpec:
    return ModelSpec.from_hf_config(load_preset(name))


def terms(s: ModelSpec, st: ActivationSettings, layer: int = 0, **kw) -> dict[str, int]:
    return {t.id: t.bytes for t in layer_terms(s, s.layers[layer], B, S, st, **kw)}


def test_llama_layer_terms():
    s = spec("llama-3.1-8b")  # h 4096, 32 q heads, 8 kv heads, head_dim 128, I 14336
    h = 4096
    assert terms(s, BF16) == {
        # LlamaRMSNorm: fp32 input, rstd, bf16 normalised value; two per layer
        "norms": 2 * T * (4 * h + 4 + 2 * h),
        "matmul_inputs": T * 2 * h * 2,
        "qkv": T * (32 + 2 * 8) * 128 * 2,  # GQA: k and v keep 8 heads
        "attention_out": T * 32 * 128 * 2 + T * 32 * 4,
        "mlp": T * 4 * 14336 * 2,
    }


def test_autocast_casts_each_linear_input_and_keeps_fp32_residual():
    s = spec("llama-3.1-8b")
    amp = terms(s, AMP)
    # q, k, v and gate, up each cast the fp32 normed input to bf16 on their own.
    assert amp["matmul_inputs"] == T * 4096 * 2 * (3 + 2)
    assert amp["norms"] == 2 * T * (4 * 4096 + 4 + 4 * 4096)
    assert kept_layer_bytes(s, s.layers[0], B, S, AMP, "full") == T * 4096 * 4


def test_gemma_and_olmo2_norms_multiply_in_fp32():
    assert norm_bytes(spec("gemma-2-2b"), 10, 8, 2) == 10 * (4 * 8 + 4 + 4 * 8)
    assert norm_bytes(spec("olmo2-7b"), 10, 8, 2) == 10 * (4 * 8 + 4 + 4 * 8)
    assert norm_bytes(spec("llama-3.1-8b"), 10, 8, 2) == 10 * (4 * 8 + 4 + 2 * 8)
    assert norm_bytes(spec("gpt2"), 10, 8, 2) == 10 * (2 * 8 + 8)  # LayerNorm


def test_qwen3_adds_qk_norms():
    s = spec("qwen3-8b")  # 32 q heads, 8 kv heads, head_dim 128
    assert terms(s, BF16)["qk_norm"] == T * (32 + 8) * (4 * 128 + 4 + 2 * 128)


def test_eager_repeats_kv_and_keeps_scores():
    s = spec("llama-3.2-1b")  # 32 heads, 8 kv heads, head_dim 64
    eager = ActivationSettings(
        act_bytes=2, residual_bytes=2, softmax_bytes=4, attention="eager", dropout=False
    )
    got = terms(s, eager)
    assert got["qkv"] == T * 3 * 32 * 64 * 2  # repeat_kv: k and v at 32 heads
    # fp32 softmax output plus its bf16 copy, per head and key.
    assert got["scores"] == B * 32 * S * S * (4 + 2)


def test_moe_counts_routed_assignments_and_capacity():
    s = spec("mixtral-8x7b")  # top-2 of 8 experts, I_e 14336, h 4096
    dropless = terms(s, BF16)
    assert dropless["experts"] == T * 2 * ((3 * 4096 + 4 * 14336) * 2 + 8)
    assert dropless["router"] == T * (8 * 4 + 2 * 12 + 4)
    padded = ActivationSettings(
        act_bytes=2,
        residual_bytes=2,
        softmax_bytes=4,
        attention="sdpa",
        dropout=False,
        capacity_factor=1.25,
    )
    # 1.25 x T x 2 / 8 tokens per expert, 8 experts: 1.25 x the dropless assignments.
    assert terms(s, padded)["experts"] * 4 == dropless["experts"] * 5


def test_lora_keeps_only_what_adapters_need():
    s = spec("llama-3.1-8b")
    lora = ActivationSettings(
        act_bytes=2,
        residual_bytes=2,
        softmax_bytes=4,
        attention="sdpa",
        dropout=False,
        lora_targets=frozenset({"q_proj", "v_proj"}),
        lora_rank=8,
        lora_matrices=2,
    )
    got = terms(s, lora)
    assert got["matmul_inputs"] == T * 4096 * 2  # q/v read it; gate and up are frozen
    assert got["attention_out"] == T * 32 * 4  # o_proj frozen: only the logsumexp
    assert got["mlp"] == T * 3 * 14336 * 2  # down_proj frozen: no product kept
    assert got["norms"] == 2 * T * (4 * 4096 + 4)  # frozen weights: no normalised value
    assert got["lora"] == T * 8 * 2 * 2
    first = terms(s, lora, input_requires_grad=False)
    assert first["norms"] == T * (4 * 4096 + 4)


def test_full_checkpointing_keeps_the_layer_input():
    s = spec("llama-3.1-8b")
    assert kept_layer_bytes(s, s.layers[0], B, S, BF16, "full") == T * 4096 * 2


def test_outside_layers():
    s = spec("llama-3.1-8b")
    assert outside_layers_bytes(s, B, S, BF16) == {
        "embedding": T * 8 + 2 * S * 128 * 2,  # token ids, RoPE cos and sin
        "final_norm": T * (4 * 4096 + 4 + 2 * 4096) + T * 4096 * 2,
        "loss": T * 128_256 * 4,
    }
