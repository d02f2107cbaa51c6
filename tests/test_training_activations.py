"""Saved tensors of a training forward pass, term by term."""

from calculators.presets import load_preset
from calculators.spec import ModelSpec
from calculators.training_activations import (
    ActivationSettings,
    kept_layer_bytes_per_token,
    layer_terms,
    outside_layers_bytes_per_token,
)

BF16_SDPA = ActivationSettings(act_bytes=2, softmax_bytes=4, attention="sdpa", dropout=False)


def spec(name: str) -> ModelSpec:
    return ModelSpec.from_hf_config(load_preset(name))


def test_llama_layer_terms():
    s = spec("llama-3.1-8b")  # h 4096, 32 q heads, 8 kv heads, head_dim 128, I 14336
    terms = {t.id: t.bytes_per_token for t in layer_terms(s, s.layers[0], 4096, BF16_SDPA)}
    assert terms == {
        "norms": 2 * (4096 * 2 + 4),
        "matmul_inputs": 2 * 4096 * 2,
        "qkv": (32 + 2 * 8) * 128 * 2,  # GQA: k and v keep 8 heads
        "attention_out": 2 * 32 * 128 * 2 + 32 * 4,
        "mlp": 4 * 14336 * 2,
    }


def test_qwen3_adds_qk_norm_inputs():
    s = spec("qwen3-8b")
    ids = [t.id for t in layer_terms(s, s.layers[0], 128, BF16_SDPA)]
    assert "qk_norm" in ids


def test_moe_counts_routed_assignments_and_capacity():
    s = spec("mixtral-8x7b")  # top-2 of 8 experts, I_e 14336, h 4096
    dropless = {t.id: t.bytes_per_token for t in layer_terms(s, s.layers[0], 128, BF16_SDPA)}
    assert dropless["experts"] == 2 * (4096 + 4 * 14336) * 2
    assert dropless["router"] == 8 * 4
    padded = ActivationSettings(
        act_bytes=2, softmax_bytes=4, attention="sdpa", dropout=False, capacity_factor=1.25
    )
    capped = {t.id: t.bytes_per_token for t in layer_terms(s, s.layers[0], 128, padded)}
    assert capped["experts"] == round(1.25 * dropless["experts"])


def test_full_checkpointing_keeps_the_layer_input():
    s = spec("llama-3.1-8b")
    assert kept_layer_bytes_per_token(s, s.layers[0], 2048, BF16_SDPA, "full") == 4096 * 2


def test_eager_scores_grow_with_sequence():
    s = spec("llama-3.2-1b")
    eager = ActivationSettings(act_bytes=2, softmax_bytes=4, attention="eager", dropout=False)
    short = {t.id: t.bytes_per_token for t in layer_terms(s, s.layers[0], 1024, eager)}
    long = {t.id: t.bytes_per_token for t in layer_terms(s, s.layers[0], 2048, eager)}
    # fp32 softmax output plus its bf16 copy, per head and key.
    assert short["scores"] == 32 * 1024 * (4 + 2)
    assert long["scores"] == 2 * short["scores"]


def test_outside_layers():
    s = spec("llama-3.1-8b")
    out = outside_layers_bytes_per_token(s, BF16_SDPA)
    assert out == {
        "embedding": 8,
        "final_norm": 2 * 4096 * 2 + 4,
        "logits": 128_256 * 2,
        "loss": 128_256 * 4,
    }
