"""The family table: one entry per model_type, each citing the transformers code it follows."""

from __future__ import annotations

import dataclasses

import pytest

from calculators.model.families import ALIASES, FAMILIES, LLAMA_LIKE, Family, family_of

_TF = "huggingface/transformers src/transformers/models/"


@pytest.mark.parametrize("model_type", sorted(FAMILIES))
def test_every_entry_cites_transformers(model_type):
    family = FAMILIES[model_type]
    assert family.source.startswith(_TF)
    assert "transformers" in family.source
    # the cited path is the model's own directory (gemma3_text lives in models/gemma3/)
    directory = family.source[len(_TF) :].split("/", 1)[0]
    assert model_type.startswith(directory)


@pytest.mark.parametrize("model_type", sorted(FAMILIES))
def test_keys_are_model_types(model_type):
    assert FAMILIES[model_type].model_type == model_type
    assert family_of(model_type) is FAMILIES[model_type]


def test_table_covers_the_shipped_families():
    assert set(FAMILIES) == {
        "llama",
        "mistral",
        "mixtral",
        "qwen2",
        "qwen2_moe",
        "qwen3",
        "qwen3_moe",
        "gemma",
        "gemma2",
        "gemma3_text",
        "phi3",
        "gpt2",
        "olmo2",
        "deepseek_v2",
        "deepseek_v3",
    }


def test_gemma3_alias():
    assert ALIASES == {"gemma3": "gemma3_text"}
    assert family_of("gemma3") is FAMILIES["gemma3_text"]
    assert "gemma3" not in FAMILIES


def test_alias_targets_exist():
    for target in ALIASES.values():
        assert target in FAMILIES


@pytest.mark.parametrize("model_type", ["mystery", "", "LLAMA", "gemma3_vision", "gpt-2"])
def test_unknown_model_type_is_none(model_type):
    assert family_of(model_type) is None


def test_llama_like_is_the_llama_entry():
    assert FAMILIES["llama"] is LLAMA_LIKE
    assert LLAMA_LIKE.tie_default is False
    assert LLAMA_LIKE.mlp == "gated" and LLAMA_LIKE.norm == "rmsnorm"
    assert LLAMA_LIKE.bias_key == "attention_bias"
    assert LLAMA_LIKE.sliding == "none"
    assert LLAMA_LIKE.config_defaults == {}


def test_tie_defaults():
    tied = {name for name, family in FAMILIES.items() if family.tie_default}
    assert tied == {"gemma", "gemma2", "gemma3_text", "gpt2"}


def test_config_defaults():
    assert FAMILIES["qwen3"].config_defaults == {"head_dim": 128}
    assert FAMILIES["qwen3_moe"].config_defaults == {"head_dim": 128}
    assert FAMILIES["gemma"].config_defaults == {"head_dim": 256}
    assert FAMILIES["gemma2"].config_defaults == {"head_dim": 256, "sliding_window": 4096}
    gemma3 = FAMILIES["gemma3_text"].config_defaults
    assert gemma3["vocab_size"] == 262_208
    assert (gemma3["num_attention_heads"], gemma3["num_key_value_heads"]) == (8, 4)
    assert gemma3["head_dim"] == 256
    for family in FAMILIES.values():
        for key, value in family.config_defaults.items():
            assert isinstance(value, int) and not isinstance(value, bool) and value > 0, key


def test_structural_facts():
    assert FAMILIES["qwen2"].qkv_bias and FAMILIES["qwen2_moe"].qkv_bias
    assert FAMILIES["gpt2"].qkv_bias and FAMILIES["gpt2"].learned_positions
    assert FAMILIES["phi3"].fused_qkv and FAMILIES["phi3"].fused_gate_up
    assert FAMILIES["olmo2"].qk_norm == "full"
    assert FAMILIES["olmo2"].norm_names == (
        "post_attention_layernorm",
        "post_feedforward_layernorm",
    )
    for name in ("qwen3", "qwen3_moe", "gemma3_text"):
        assert FAMILIES[name].qk_norm == "per_head"
    for name in ("gemma2", "gemma3_text"):
        assert len(FAMILIES[name].norm_names) == 4
    assert {n for n, f in FAMILIES.items() if f.attention == "mla"} == {
        "deepseek_v2",
        "deepseek_v3",
    }
    assert {n: f.moe for n, f in FAMILIES.items() if f.moe} == {
        "mixtral": "mixtral",
        "qwen2_moe": "qwen2_moe",
        "qwen3_moe": "qwen3_moe",
        "deepseek_v2": "deepseek",
        "deepseek_v3": "deepseek",
    }
    assert {n: f.sliding for n, f in FAMILIES.items() if f.sliding != "none"} == {
        "mistral": "all",
        "mixtral": "all",
        "phi3": "all",
        "qwen2": "qwen2",
        "qwen2_moe": "qwen2",
        "qwen3": "qwen2",
        "qwen3_moe": "qwen2",
        "gemma2": "alternate",
        "gemma3_text": "pattern",
    }


def test_family_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        LLAMA_LIKE.tie_default = True  # type: ignore[misc]


def test_family_requires_source():
    with pytest.raises(TypeError):
        Family(model_type="x", tie_default=False)  # type: ignore[call-arg]
