"""The tensor inventory: validation, totals, and the roles and shapes each family stores."""

from __future__ import annotations

import re
from collections import Counter
from functools import cache

import pytest
from hypothesis import given, settings
from strategies import specs

from calculators.model.params import parameter_counts
from calculators.model.presets import load_preset, preset_ids
from calculators.model.spec import ModelSpec
from calculators.model.tensors import Tensor, model_tensors


@cache
def spec_of(preset_id: str) -> ModelSpec:
    return ModelSpec.from_hf_config(load_preset(preset_id), name=preset_id)


@cache
def tensors_of(preset_id: str) -> tuple[Tensor, ...]:
    return model_tensors(spec_of(preset_id))


def by_name(preset_id: str) -> dict[str, Tensor]:
    return {t.name: t for t in tensors_of(preset_id)}


def roles_in_layer(preset_id: str, layer: int) -> Counter[str]:
    return Counter(t.role for t in tensors_of(preset_id) if t.layer == layer)


# --- Tensor ----------------------------------------------------------------------------------


def test_tensor_sizes():
    t = Tensor(name="w", role="ffn_up_exps", shape=(6, 4), category="experts", count=8, active=2)
    assert (t.numel, t.parameters, t.active_parameters) == (24, 192, 48)
    assert t.is_matrix
    dense = Tensor(name="n", role="norm", shape=(4,), category="norms")
    assert (dense.numel, dense.parameters, dense.active_parameters) == (4, 4, 4)
    assert not dense.is_matrix
    assert dense.layer is None and dense.mtp is False and dense.active is None


@pytest.mark.parametrize("shape", [(), (0,), (4, 0), (-1, 8)])
def test_tensor_shape_must_be_positive(shape):
    with pytest.raises(
        ValueError, match=rf"^tensor w: shape must be positive, got {re.escape(repr(shape))}$"
    ):
        Tensor(name="w", role="attn_q", shape=shape, category="attention")


@pytest.mark.parametrize("count", [0, -3])
def test_tensor_count_must_be_positive(count):
    with pytest.raises(ValueError, match=rf"^tensor w: count must be positive, got {count}$"):
        Tensor(name="w", role="attn_q", shape=(2, 2), category="attention", count=count)


@pytest.mark.parametrize("active", [-1, 5])
def test_tensor_active_within_count(active):
    with pytest.raises(ValueError, match=rf"^tensor w: active must be in \[0, 4\], got {active}$"):
        Tensor(
            name="w", role="ffn_up_exps", shape=(2, 2), category="experts", count=4, active=active
        )


def test_tensor_active_bounds_inclusive():
    assert Tensor(name="w", role="ffn_up_exps", shape=(2,), category="experts", count=4, active=0)
    assert Tensor(name="w", role="ffn_up_exps", shape=(2,), category="experts", count=4, active=4)


# --- totals ----------------------------------------------------------------------------------


@pytest.mark.parametrize("preset_id", preset_ids())
def test_inventory_sums_to_counts(preset_id):
    tensors = tensors_of(preset_id)
    counts = parameter_counts(spec_of(preset_id))
    assert sum(t.parameters for t in tensors) == counts.total + counts.mtp
    assert sum(t.parameters for t in tensors if t.mtp) == counts.mtp
    assert sum(t.active_parameters for t in tensors if not t.mtp) == counts.active


@pytest.mark.parametrize("preset_id", preset_ids())
def test_names_unique(preset_id):
    names = [t.name for t in tensors_of(preset_id)]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("preset_id", preset_ids())
def test_embedding_first_and_lm_head_only_when_untied(preset_id):
    spec, tensors = spec_of(preset_id), tensors_of(preset_id)
    assert tensors[0].name == "model.embed_tokens.weight"
    assert tensors[0].role == "token_embd"
    assert tensors[0].shape == (spec.vocab_size, spec.hidden_size)
    heads = [t for t in tensors if t.role == "output" or t.category == "lm_head"]
    if spec.tie_word_embeddings:
        assert heads == []
    else:
        assert [(t.name, t.shape) for t in heads] == [
            ("lm_head.weight", (spec.vocab_size, spec.hidden_size))
        ]


@pytest.mark.parametrize("preset_id", preset_ids())
def test_one_d_tensors_are_norms_or_biases(preset_id):
    for t in tensors_of(preset_id):
        if not t.is_matrix:
            assert t.role in ("norm", "bias", "exp_probs_b"), t.name
        else:
            assert t.role not in ("norm", "bias"), t.name


@pytest.mark.parametrize("preset_id", preset_ids())
def test_layer_indices(preset_id):
    spec = spec_of(preset_id)
    layers = {t.layer for t in tensors_of(preset_id) if not t.mtp} - {None}
    assert layers == set(range(spec.num_layers))
    for t in tensors_of(preset_id):
        if t.layer is not None:
            assert t.name.startswith(f"model.layers.{t.layer}.")


def test_tied_presets():
    tied = {pid for pid in preset_ids() if spec_of(pid).tie_word_embeddings}
    assert tied == {
        "gemma-2-2b",
        "gemma-2-9b",
        "gemma-2b",
        "gemma-3-1b",
        "gemma-3-4b",
        "gpt2",
        "llama-3.2-1b",
        "qwen2.5-0.5b",
        "qwen3-0.6b",
    }


# --- roles per family ------------------------------------------------------------------------


def test_llama_layer_roles_and_shapes():
    assert roles_in_layer("llama-3.1-8b", 0) == Counter(
        {
            "norm": 2,
            "attn_q": 1,
            "attn_k": 1,
            "attn_v": 1,
            "attn_output": 1,
            "ffn_gate": 1,
            "ffn_up": 1,
            "ffn_down": 1,
        }
    )
    t = by_name("llama-3.1-8b")
    assert t["model.layers.0.self_attn.q_proj.weight"].shape == (4096, 4096)
    assert t["model.layers.0.self_attn.k_proj.weight"].shape == (1024, 4096)
    assert t["model.layers.0.self_attn.v_proj.weight"].shape == (1024, 4096)
    assert t["model.layers.0.mlp.down_proj.weight"].shape == (4096, 14336)
    assert t["model.norm.weight"].shape == (4096,)


def test_phi3_fused_qkv_and_gate_up():
    roles = roles_in_layer("phi-3-mini-4k", 0)
    assert roles["attn_qkv"] == 1 and roles["ffn_gate_up"] == 1
    for unfused in ("attn_q", "attn_k", "attn_v", "ffn_gate", "ffn_up"):
        assert roles[unfused] == 0
    t = by_name("phi-3-mini-4k")
    assert t["model.layers.0.self_attn.qkv_proj.weight"].shape == (3 * 3072, 3072)
    assert t["model.layers.0.mlp.gate_up_proj.weight"].shape == (2 * 8192, 3072)
    assert t["model.layers.0.mlp.down_proj.weight"].shape == (3072, 8192)
    assert not any(x.role == "bias" for x in tensors_of("phi-3-mini-4k"))


def test_gpt2_layernorm_biases_and_positions():
    t = by_name("gpt2")
    assert t["model.embed_positions.weight"].role == "position_embd"
    assert t["model.embed_positions.weight"].shape == (1024, 768)
    assert t["model.embed_positions.weight"].category == "position_embedding"
    assert t["model.layers.0.input_layernorm.bias"].role == "bias"
    assert t["model.layers.0.post_attention_layernorm.bias"].shape == (768,)
    assert t["model.norm.bias"].shape == (768,)
    assert t["model.layers.0.self_attn.qkv_proj.weight"].shape == (2304, 768)
    assert t["model.layers.0.self_attn.qkv_proj.bias"].shape == (2304,)
    assert t["model.layers.0.self_attn.o_proj.bias"].shape == (768,)
    assert t["model.layers.0.mlp.c_fc.weight"].shape == (3072, 768)
    assert t["model.layers.0.mlp.c_fc.bias"].shape == (3072,)
    assert t["model.layers.0.mlp.c_proj.weight"].shape == (768, 3072)
    assert t["model.layers.0.mlp.c_proj.bias"].shape == (768,)
    assert roles_in_layer("gpt2", 0) == Counter(
        {"norm": 2, "bias": 6, "attn_qkv": 1, "attn_output": 1, "ffn_up": 1, "ffn_down": 1}
    )
    # per layer: 2 LayerNorm biases + qkv, o, fc, proj biases; plus the final norm's bias
    assert sum(x.role == "bias" for x in tensors_of("gpt2")) == 12 * 6 + 1


def test_qwen2_qkv_bias_without_o_bias():
    t = by_name("qwen2.5-7b")
    assert t["model.layers.0.self_attn.q_proj.bias"].shape == (3584,)
    assert t["model.layers.0.self_attn.k_proj.bias"].shape == (512,)
    assert t["model.layers.0.self_attn.v_proj.bias"].shape == (512,)
    assert "model.layers.0.self_attn.o_proj.bias" not in t


def test_qk_norms():
    q3 = by_name("qwen3-8b")
    assert q3["model.layers.0.self_attn.q_norm.weight"].shape == (128,)
    assert q3["model.layers.0.self_attn.k_norm.weight"].shape == (128,)
    olmo = by_name("olmo2-7b")
    assert olmo["model.layers.0.self_attn.q_norm.weight"].shape == (32 * 128,)
    assert olmo["model.layers.0.self_attn.k_norm.weight"].shape == (32 * 128,)
    assert "model.layers.0.input_layernorm.weight" not in olmo
    assert "model.layers.0.self_attn.q_norm.weight" not in by_name("llama-3.1-8b")


def test_gemma2_four_norms_per_layer():
    norms = [t.name for t in tensors_of("gemma-2-9b") if t.layer == 0 and t.role == "norm"]
    assert norms == [
        "model.layers.0.input_layernorm.weight",
        "model.layers.0.post_attention_layernorm.weight",
        "model.layers.0.pre_feedforward_layernorm.weight",
        "model.layers.0.post_feedforward_layernorm.weight",
    ]


def test_mla_roles_with_q_lora():
    roles = roles_in_layer("deepseek-v3", 0)
    for role in ("attn_q_a", "attn_q_b", "attn_kv_a_mqa", "attn_kv_b", "attn_output"):
        assert roles[role] == 1, role
    for role in ("attn_q", "attn_k", "attn_v", "attn_qkv"):
        assert roles[role] == 0, role
    # input, post_attention, q_a_layernorm, kv_a_layernorm
    assert roles["norm"] == 4
    t = by_name("deepseek-v3")
    p = "model.layers.0.self_attn."
    assert t[p + "q_a_proj.weight"].shape == (1536, 7168)
    assert t[p + "q_a_layernorm.weight"].shape == (1536,)
    assert t[p + "q_b_proj.weight"].shape == (128 * (128 + 64), 1536)
    assert t[p + "kv_a_proj_with_mqa.weight"].shape == (512 + 64, 7168)
    assert t[p + "kv_a_layernorm.weight"].shape == (512,)
    assert t[p + "kv_b_proj.weight"].shape == (128 * (128 + 128), 512)
    assert t[p + "o_proj.weight"].shape == (7168, 128 * 128)


def test_mla_roles_without_q_lora():
    roles = roles_in_layer("deepseek-v2-lite", 0)
    assert roles["attn_q"] == 1
    assert roles["attn_q_a"] == 0 and roles["attn_q_b"] == 0
    assert roles["attn_kv_a_mqa"] == 1 and roles["attn_kv_b"] == 1
    t = by_name("deepseek-v2-lite")
    assert t["model.layers.0.self_attn.q_proj.weight"].shape == (16 * 192, 2048)
    assert t["model.layers.0.self_attn.kv_a_proj_with_mqa.weight"].shape == (576, 2048)


# --- experts ---------------------------------------------------------------------------------


def test_mixtral_experts_stacked():
    t = by_name("mixtral-8x7b")
    p = "model.layers.0.mlp."
    for name, shape in (
        ("experts.*.gate_proj.weight", (14336, 4096)),
        ("experts.*.up_proj.weight", (14336, 4096)),
        ("experts.*.down_proj.weight", (4096, 14336)),
    ):
        expert = t[p + name]
        assert (expert.shape, expert.count, expert.active) == (shape, 8, 2)
        assert expert.category == "experts"
        assert expert.parameters == 8 * 14336 * 4096
        assert expert.active_parameters == 2 * 14336 * 4096
    router = t[p + "gate.weight"]
    assert (router.role, router.shape, router.category) == ("ffn_gate_inp", (8, 4096), "router")
    assert router.count == 1 and router.active is None
    assert roles_in_layer("mixtral-8x7b", 0)["ffn_gate"] == 0


def test_deepseek_v3_experts_shared_and_score_bias():
    t = by_name("deepseek-v3")
    dense = "model.layers.2.mlp."
    assert t[dense + "gate_proj.weight"].shape == (18432, 7168)
    assert dense + "gate.weight" not in t
    p = "model.layers.3.mlp."
    up = t[p + "experts.*.up_proj.weight"]
    assert (up.role, up.shape, up.count, up.active) == ("ffn_up_exps", (2048, 7168), 256, 8)
    shared = t[p + "shared_experts.gate_proj.weight"]
    assert (shared.role, shared.shape, shared.count, shared.active) == (
        "ffn_gate_shexp",
        (2048, 7168),
        1,
        None,
    )
    assert shared.category == "shared_experts"
    bias = t[p + "gate.e_score_correction_bias"]
    assert (bias.role, bias.shape, bias.category) == ("exp_probs_b", (256,), "router")
    # one per MoE layer: 58 in the main model, 1 in the MTP layer
    assert sum(x.role == "exp_probs_b" for x in tensors_of("deepseek-v3")) == 59
    assert not any(x.role == "exp_probs_b" for x in tensors_of("deepseek-v2-lite"))


def test_qwen1_5_moe_shared_expert_gate():
    t = by_name("qwen1.5-moe-a2.7b")
    p = "model.layers.0.mlp."
    gate = t[p + "shared_expert_gate.weight"]
    assert (gate.role, gate.shape, gate.category) == ("ffn_gate_inp_shexp", (1, 2048), "router")
    assert t[p + "shared_experts.up_proj.weight"].shape == (5632, 2048)
    down = t[p + "experts.*.down_proj.weight"]
    assert (down.shape, down.count, down.active) == ((2048, 1408), 60, 4)


def test_qwen3_moe_no_shared_expert():
    roles = roles_in_layer("qwen3-30b-a3b", 0)
    assert roles["ffn_gate_exps"] == roles["ffn_up_exps"] == roles["ffn_down_exps"] == 1
    assert roles["ffn_gate_shexp"] == 0 and roles["ffn_gate_inp_shexp"] == 0
    up = by_name("qwen3-30b-a3b")["model.layers.0.mlp.experts.*.up_proj.weight"]
    assert (up.count, up.active) == (128, 8)


# --- MTP -------------------------------------------------------------------------------------


def test_deepseek_v3_mtp_module():
    mtp = [t for t in tensors_of("deepseek-v3") if t.mtp]
    assert mtp, "deepseek-v3 has one MTP module"
    assert {t.layer for t in mtp} == {61}
    names = {t.name: t for t in mtp}
    assert names["model.layers.61.eh_proj.weight"].shape == (7168, 2 * 7168)
    assert names["model.layers.61.eh_proj.weight"].role == "nextn_eh_proj"
    for norm in ("enorm", "hnorm", "shared_head.norm"):
        assert names[f"model.layers.61.{norm}.weight"].shape == (7168,)
    # the MTP decoder layer is MoE like the last main layer; embedding and head are shared
    assert names["model.layers.61.mlp.experts.*.up_proj.weight"].count == 256
    assert not any(t.role in ("token_embd", "output") for t in mtp)
    # MTP tensors come last
    tensors = tensors_of("deepseek-v3")
    first = next(i for i, t in enumerate(tensors) if t.mtp)
    assert all(t.mtp for t in tensors[first:])
    assert not any(t.mtp for t in tensors_of("deepseek-v2-lite"))


# --- properties ------------------------------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(specs())
def test_inventory_properties(spec):
    tensors = model_tensors(spec)
    counts = parameter_counts(spec)
    assert sum(t.parameters for t in tensors) == counts.total + counts.mtp
    assert len({t.name for t in tensors}) == len(tensors)
    assert sum(t.role == "token_embd" for t in tensors) == 1
    assert sum(t.role == "output" for t in tensors) == (0 if spec.tie_word_embeddings else 1)
    for t in tensors:
        assert t.parameters >= t.active_parameters > 0 or t.active == 0
        if t.count > 1:
            assert t.category == "experts" and t.active is not None
    n_mtp_layers = {t.layer for t in tensors if t.mtp}
    assert n_mtp_layers == set(range(spec.num_layers, spec.num_layers + spec.mtp_layers))
