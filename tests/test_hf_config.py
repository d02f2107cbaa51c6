"""Reading Hugging Face config.json dicts into ModelSpec (calculators.model.hf_config)."""

from __future__ import annotations

import copy
import re
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import hf_configs

from calculators.limits import CONFIG_MAX
from calculators.model.families import FAMILIES, LLAMA_LIKE
from calculators.model.hf_config import read_hf_config
from calculators.model.presets import load_preset, preset_ids
from calculators.model.spec import LayerSpec, MLASpec, ModelSpec


@cache
def preset_spec(preset_id: str) -> ModelSpec:
    return ModelSpec.from_hf_config(load_preset(preset_id), name=preset_id)


def tiny(**overrides: object) -> dict[str, object]:
    """A small Llama-style config.json dict; None in `overrides` deletes the key."""
    config: dict[str, object] = {
        "model_type": "llama",
        "vocab_size": 64,
        "hidden_size": 32,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "intermediate_size": 48,
        "max_position_embeddings": 128,
    }
    for key, value in overrides.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    return config


def kinds(spec: ModelSpec) -> list[tuple[str, int | None]]:
    return [(layer.attention, layer.window) for layer in spec.layers]


# --- head_dim --------------------------------------------------------------------------------


def test_qwen3_8b_head_dim_equals_hidden_over_heads():
    spec = preset_spec("qwen3-8b")
    assert spec.head_dim == 128
    assert spec.hidden_size // spec.num_heads == 128


def test_qwen3_0_6b_head_dim_is_read_not_derived():
    spec = preset_spec("qwen3-0.6b")
    assert (spec.hidden_size, spec.num_heads) == (1024, 16)
    assert spec.head_dim == 128
    assert spec.head_dim != 1024 // 16


def test_gemma_2_9b_head_dim_is_read_not_derived():
    spec = preset_spec("gemma-2-9b")
    assert (spec.hidden_size, spec.num_heads) == (3584, 16)
    assert spec.head_dim == 256
    assert 3584 // 16 == 224


@pytest.mark.parametrize(
    ("preset_id", "head_dim"),
    [("llama-3.1-8b", 128), ("llama-2-7b", 128), ("mistral-7b-v0.1", 128), ("phi-3-mini-4k", 96)],
)
def test_head_dim_derived_when_key_absent(preset_id, head_dim):
    assert "head_dim" not in load_preset(preset_id)
    spec = preset_spec(preset_id)
    assert spec.head_dim == head_dim == spec.hidden_size // spec.num_heads


def test_explicit_head_dim_overrides_derivation():
    spec = read_hf_config(tiny(head_dim=16))
    assert spec.head_dim == 16
    assert spec.hidden_size // spec.num_heads == 8


def test_qwen3_head_dim_default_when_absent_is_noted():
    spec = read_hf_config(tiny(model_type="qwen3"))
    assert spec.head_dim == 128
    assert "head_dim absent: 128, the qwen3 config default" in spec.assumptions


def test_gemma_head_dim_default_when_absent():
    spec = read_hf_config(tiny(model_type="gemma"))
    assert spec.head_dim == 256
    assert "head_dim absent: 256, the gemma config default" in spec.assumptions


def test_null_head_dim_is_treated_as_absent():
    assert read_hf_config(tiny(head_dim=None)).head_dim == 8
    config = tiny()
    config["head_dim"] = None
    assert read_hf_config(config).head_dim == 8


# --- GQA / MQA / MHA -------------------------------------------------------------------------


def test_gemma_2b_is_mqa():
    spec = preset_spec("gemma-2b")
    assert spec.num_kv_heads == 1
    assert spec.gqa_group == spec.num_heads == 8


@pytest.mark.parametrize(
    ("preset_id", "heads", "kv_heads"),
    [
        ("llama-3.1-8b", 32, 8),
        ("llama-2-7b", 32, 32),
        ("qwen2.5-7b", 28, 4),
        ("gemma-3-1b", 4, 1),
        ("qwen3-30b-a3b", 32, 4),
    ],
)
def test_kv_heads(preset_id, heads, kv_heads):
    spec = preset_spec(preset_id)
    assert (spec.num_heads, spec.num_kv_heads) == (heads, kv_heads)
    assert spec.gqa_group == heads // kv_heads


def test_kv_heads_absent_is_mha_and_noted():
    spec = preset_spec("gpt2")
    assert spec.num_kv_heads == spec.num_heads == 12
    assert (
        "num_key_value_heads absent: multi-head attention (one KV head per query head)"
        in spec.assumptions
    )


# --- tied embeddings -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("preset_id", "family"),
    [
        ("gemma-2b", "gemma"),
        ("gemma-2-2b", "gemma2"),
        ("gemma-3-1b", "gemma3_text"),
        ("gpt2", "gpt2"),
    ],
)
def test_tied_by_default_when_key_absent(preset_id, family):
    assert "tie_word_embeddings" not in load_preset(preset_id)
    spec = preset_spec(preset_id)
    assert spec.tie_word_embeddings is True
    assert f"tie_word_embeddings absent: true, the {family} default" in spec.assumptions


def test_llama_untied_by_default_when_key_absent():
    spec = read_hf_config(tiny())
    assert spec.tie_word_embeddings is False
    assert "tie_word_embeddings absent: false, the llama default" in spec.assumptions


@pytest.mark.parametrize(("preset_id", "tied"), [("llama-3.2-1b", True), ("llama-3.1-8b", False)])
def test_explicit_tie_key_is_read_without_note(preset_id, tied):
    spec = preset_spec(preset_id)
    assert spec.tie_word_embeddings is tied
    assert not any("tie_word_embeddings" in note for note in spec.assumptions)


def test_explicit_false_overrides_tied_family_default():
    spec = read_hf_config(tiny(model_type="gemma", head_dim=8, tie_word_embeddings=False))
    assert spec.tie_word_embeddings is False


# --- biases ----------------------------------------------------------------------------------


def test_qwen2_qkv_bias_is_hardcoded():
    spec = preset_spec("qwen2.5-7b")
    assert "attention_bias" not in load_preset("qwen2.5-7b")
    assert spec.qkv_bias is True
    assert spec.o_bias is False
    assert spec.mlp_bias is False
    # attention_bias is not a Qwen2 config key: it cannot switch the hardcoded bias off.
    assert read_hf_config(tiny(model_type="qwen2", attention_bias=False)).qkv_bias is True


def test_llama_biases_follow_config_keys():
    plain = read_hf_config(tiny())
    assert (plain.qkv_bias, plain.o_bias, plain.mlp_bias) == (False, False, False)
    biased = read_hf_config(tiny(attention_bias=True, mlp_bias=True))
    assert (biased.qkv_bias, biased.o_bias, biased.mlp_bias) == (True, True, True)


def test_gpt2_biases_and_layout():
    spec = preset_spec("gpt2")
    assert (spec.qkv_bias, spec.o_bias, spec.mlp_bias) == (True, True, True)
    assert spec.norm == "layernorm"
    assert spec.mlp == "plain"
    assert spec.fused_qkv is True
    assert spec.learned_positions is True
    # GPT2Config.attribute_map aliases
    assert (spec.hidden_size, spec.num_layers, spec.num_heads) == (768, 12, 12)
    assert spec.intermediate_size == 3072
    assert spec.max_position_embeddings == 1024
    assert "n_inner absent: 4 x hidden_size (GPT-2)" in spec.assumptions


def test_bad_bias_flag_type():
    with pytest.raises(ValueError, match=r"config key 'attention_bias' must be true or false"):
        read_hf_config(tiny(attention_bias="yes"))


# --- sliding windows -------------------------------------------------------------------------


def test_mistral_all_layers_sliding():
    spec = preset_spec("mistral-7b-v0.1")
    assert spec.num_layers == 32
    assert kinds(spec) == [("sliding", 4096)] * 32


def test_qwen2_5_7b_sliding_window_disabled():
    config = load_preset("qwen2.5-7b")
    assert config["sliding_window"] == 131072
    assert config["use_sliding_window"] is False
    spec = preset_spec("qwen2.5-7b")
    assert kinds(spec) == [("full", None)] * 28
    assert (
        "sliding_window=131072 is present but use_sliding_window is false: every layer uses "
        "full attention"
    ) in spec.assumptions


def test_qwen2_use_sliding_window_from_max_window_layers():
    config = tiny(
        model_type="qwen2", use_sliding_window=True, sliding_window=64, max_window_layers=2
    )
    assert kinds(read_hf_config(config)) == [
        ("full", None),
        ("full", None),
        ("sliding", 64),
        ("sliding", 64),
    ]


def test_gemma_2_9b_alternates():
    spec = preset_spec("gemma-2-9b")
    assert spec.num_layers == 42
    for i, (attention, window) in enumerate(kinds(spec)):
        if i % 2 == 0:
            assert (attention, window) == ("sliding", 4096)
        else:
            assert (attention, window) == ("full", None)
    assert sum(layer.attention == "sliding" for layer in spec.layers) == 21


def test_gemma2_window_default_when_absent():
    config = tiny(model_type="gemma2", head_dim=8, num_hidden_layers=2)
    spec = read_hf_config(config)
    assert kinds(spec) == [("sliding", 4096), ("full", None)]
    assert "sliding_window absent: 4096, the gemma2 config default" in spec.assumptions


def test_assumptions_are_not_repeated():
    # The window default is read once per sliding layer; each assumption should be listed once.
    spec = read_hf_config(tiny(model_type="gemma2", head_dim=8, num_hidden_layers=4))
    assert len(spec.assumptions) == len(set(spec.assumptions))


def test_gemma_3_1b_five_sliding_to_one_full():
    spec = preset_spec("gemma-3-1b")
    assert spec.num_layers == 26
    expected = [("full", None) if (i + 1) % 6 == 0 else ("sliding", 512) for i in range(26)]
    assert kinds(spec) == expected
    assert [i for i, layer in enumerate(spec.layers) if layer.attention == "full"] == [
        5,
        11,
        17,
        23,
    ]
    # every group of six: five sliding then one full
    assert kinds(spec)[:6] == [("sliding", 512)] * 5 + [("full", None)]


def test_gemma3_pattern_is_read_from_config():
    config = tiny(model_type="gemma3_text", head_dim=8, sliding_window=16, sliding_window_pattern=2)
    assert kinds(read_hf_config(config)) == [("sliding", 16), ("full", None)] * 2


@pytest.mark.parametrize("model_type", ["llama", "qwen3", "mistral", "gemma2", "mystery"])
def test_layer_types_honored(model_type):
    config = tiny(
        model_type=model_type,
        head_dim=8,
        sliding_window=32,
        layer_types=["full_attention", "sliding_attention", "sliding_attention", "full_attention"],
    )
    assert kinds(read_hf_config(config)) == [
        ("full", None),
        ("sliding", 32),
        ("sliding", 32),
        ("full", None),
    ]


def test_layer_types_bad_length():
    config = tiny(layer_types=["full_attention"] * 3, sliding_window=8)
    with pytest.raises(
        ValueError,
        match=r"config key 'layer_types' must list num_hidden_layers \(4\) entries, got \[",
    ):
        read_hf_config(config)


def test_layer_types_not_a_list():
    with pytest.raises(ValueError, match=r"config key 'layer_types' must list"):
        read_hf_config(tiny(layer_types="full_attention"))


def test_layer_types_unknown_entry():
    config = tiny(layer_types=["full_attention"] * 3 + ["chunked_attention"])
    with pytest.raises(
        ValueError,
        match=r"'layer_types' entries must be 'full_attention' or 'sliding_attention', "
        r"got 'chunked_attention'",
    ):
        read_hf_config(config)


def test_sliding_layer_types_need_window():
    config = tiny(layer_types=["sliding_attention"] * 4)
    with pytest.raises(ValueError, match=r"config key 'sliding_window' is missing"):
        read_hf_config(config)


def test_phi3_window_on_every_layer():
    assert kinds(preset_spec("phi-3-mini-4k")) == [("sliding", 2047)] * 32


def test_null_sliding_window_means_full():
    # mixtral-8x7b has "sliding_window": null
    assert load_preset("mixtral-8x7b")["sliding_window"] is None
    assert kinds(preset_spec("mixtral-8x7b")) == [("full", None)] * 32


def test_bad_use_sliding_window_type():
    with pytest.raises(
        ValueError, match=r"config key 'use_sliding_window' must be true or false, got 'no'"
    ):
        read_hf_config(tiny(model_type="qwen2", use_sliding_window="no"))


# --- MoE -------------------------------------------------------------------------------------


def test_mixtral_every_layer_moe():
    spec = preset_spec("mixtral-8x7b")
    assert all(layer.moe for layer in spec.layers)
    assert spec.moe is not None
    assert (spec.moe.n_routed_experts, spec.moe.experts_per_token) == (8, 2)
    assert spec.moe.expert_intermediate_size == 14336
    assert spec.moe.n_shared_experts == 0
    assert spec.moe.shared_intermediate_size == 0
    assert spec.moe.shared_expert_gate is False
    assert spec.moe.router_score_bias is False


def test_deepseek_v3_first_three_dense():
    spec = preset_spec("deepseek-v3")
    assert [layer.moe for layer in spec.layers[:4]] == [False, False, False, True]
    assert all(layer.moe for layer in spec.layers[3:])
    assert sum(layer.moe for layer in spec.layers) == 58
    moe = spec.moe
    assert moe is not None
    assert (moe.n_routed_experts, moe.experts_per_token) == (256, 8)
    assert (moe.n_shared_experts, moe.shared_intermediate_size) == (1, 2048)
    assert moe.expert_intermediate_size == 2048
    assert spec.intermediate_size == 18432


def test_router_score_bias_only_for_v3():
    v3, v2 = preset_spec("deepseek-v3"), preset_spec("deepseek-v2-lite")
    assert v3.moe is not None and v3.moe.router_score_bias is True
    assert v2.moe is not None and v2.moe.router_score_bias is False
    for preset_id in ("mixtral-8x7b", "qwen1.5-moe-a2.7b", "qwen3-30b-a3b"):
        moe = preset_spec(preset_id).moe
        assert moe is not None and moe.router_score_bias is False


def test_deepseek_v2_lite_moe():
    spec = preset_spec("deepseek-v2-lite")
    assert [layer.moe for layer in spec.layers[:2]] == [False, True]
    assert sum(layer.moe for layer in spec.layers) == 26
    moe = spec.moe
    assert moe is not None
    assert (moe.n_routed_experts, moe.experts_per_token) == (64, 6)
    assert (moe.n_shared_experts, moe.shared_intermediate_size) == (2, 2 * 1408)


def test_deepseek_moe_layer_freq():
    config = load_preset("deepseek-v2-lite")
    config.update(num_hidden_layers=6, first_k_dense_replace=1, moe_layer_freq=2)
    spec = read_hf_config(config)
    # DeepseekV3DecoderLayer: MoE when layer_idx >= first_k_dense_replace and
    # layer_idx % moe_layer_freq == 0
    assert [layer.moe for layer in spec.layers] == [False, False, True, False, True, False]


def test_qwen1_5_moe_shared_expert_and_gate():
    spec = preset_spec("qwen1.5-moe-a2.7b")
    moe = spec.moe
    assert moe is not None
    assert all(layer.moe for layer in spec.layers)
    assert (moe.n_routed_experts, moe.experts_per_token) == (60, 4)
    assert moe.expert_intermediate_size == 1408
    assert (moe.n_shared_experts, moe.shared_intermediate_size) == (1, 5632)
    assert moe.shared_expert_gate is True


def test_qwen3_moe_has_no_shared_expert():
    moe = preset_spec("qwen3-30b-a3b").moe
    assert moe is not None
    assert (moe.n_routed_experts, moe.experts_per_token, moe.expert_intermediate_size) == (
        128,
        8,
        768,
    )
    assert (moe.n_shared_experts, moe.shared_intermediate_size) == (0, 0)
    assert moe.shared_expert_gate is False


def test_qwen_moe_sparse_step_and_mlp_only_layers():
    config = load_preset("qwen1.5-moe-a2.7b")
    config.update(num_hidden_layers=6, decoder_sparse_step=2, mlp_only_layers=[3])
    spec = read_hf_config(config)
    assert [layer.moe for layer in spec.layers] == [False, True, False, False, False, True]


def test_qwen_moe_without_experts_is_dense():
    config = load_preset("qwen1.5-moe-a2.7b")
    config["num_experts"] = 0
    spec = read_hf_config(config)
    assert spec.moe is None
    assert not any(layer.moe for layer in spec.layers)


def test_dense_models_have_no_moe():
    for preset_id in ("llama-3.1-8b", "qwen3-8b", "gemma-2-9b", "gpt2"):
        spec = preset_spec(preset_id)
        assert spec.moe is None
        assert not any(layer.moe for layer in spec.layers)


def test_negative_first_k_dense_replace():
    config = load_preset("deepseek-v2-lite")
    config["first_k_dense_replace"] = -1
    with pytest.raises(
        ValueError,
        match=r"config key 'first_k_dense_replace' must be a non-negative integer, got -1",
    ):
        read_hf_config(config)


# --- MLA and MTP -----------------------------------------------------------------------------


def test_deepseek_v2_lite_mla():
    spec = preset_spec("deepseek-v2-lite")
    assert spec.mla == MLASpec(
        q_lora_rank=None,
        kv_lora_rank=512,
        qk_nope_head_dim=128,
        qk_rope_head_dim=64,
        v_head_dim=128,
    )
    assert spec.head_dim == 128 + 64
    assert spec.num_kv_heads == spec.num_heads == 16
    assert all(layer == LayerSpec(attention="mla", moe=layer.moe) for layer in spec.layers)
    assert spec.mtp_layers == 0


def test_deepseek_v3_mla_and_mtp():
    spec = preset_spec("deepseek-v3")
    assert spec.mla == MLASpec(
        q_lora_rank=1536,
        kv_lora_rank=512,
        qk_nope_head_dim=128,
        qk_rope_head_dim=64,
        v_head_dim=128,
    )
    assert spec.head_dim == 192
    assert spec.num_kv_heads == spec.num_heads == 128
    assert {layer.attention for layer in spec.layers} == {"mla"}
    assert spec.mtp_layers == 1


def test_mla_missing_key_named():
    config = load_preset("deepseek-v3")
    del config["kv_lora_rank"]
    with pytest.raises(ValueError, match=r"config key 'kv_lora_rank' is missing"):
        read_hf_config(config)


# --- nested text_config (Gemma 3 multimodal) -------------------------------------------------


def test_gemma_3_4b_reads_text_config_with_defaults():
    spec = preset_spec("gemma-3-4b")
    assert spec.model_type == "gemma3_text"
    assert (spec.hidden_size, spec.intermediate_size, spec.num_layers) == (2560, 10240, 34)
    # Gemma3TextConfig defaults for the keys text_config leaves out
    assert spec.vocab_size == 262_208
    assert (spec.num_heads, spec.num_kv_heads, spec.head_dim) == (8, 4, 256)
    assert spec.tie_word_embeddings is True
    assert spec.qk_norm == "per_head"
    notes = spec.assumptions
    assert (
        "read the language model from text_config of model_type 'gemma3'; vision tower and "
        "projector not counted"
    ) in notes
    for note in (
        "vocab_size absent: 262208, the gemma3_text config default",
        "num_attention_heads absent: 8, the gemma3_text config default",
        "num_key_value_heads absent: 4, the gemma3_text config default",
        "head_dim absent: 256, the gemma3_text config default",
        "tie_word_embeddings absent: true, the gemma3_text default",
    ):
        assert note in notes


def test_gemma_3_4b_window_pattern():
    spec = preset_spec("gemma-3-4b")
    full = [i for i, layer in enumerate(spec.layers) if layer.attention == "full"]
    assert full == [5, 11, 17, 23, 29]
    assert {layer.window for layer in spec.layers if layer.attention == "sliding"} == {1024}


def test_gemma_3_4b_pattern_default_is_noted():
    # text_config has no sliding_window_pattern; the reading uses Gemma3TextConfig's 6 and,
    # like every other default it takes, should list it.
    assert "sliding_window_pattern" not in load_preset("gemma-3-4b")["text_config"]
    assert any("sliding_window_pattern" in note for note in preset_spec("gemma-3-4b").assumptions)


def test_gemma_3_4b_max_position_embeddings_default():
    # families.FAMILIES["gemma3_text"].config_defaults lists max_position_embeddings=131072
    # (Gemma3TextConfig default); text_config leaves the key out.
    assert FAMILIES["gemma3_text"].config_defaults["max_position_embeddings"] == 131_072
    spec = preset_spec("gemma-3-4b")
    assert spec.max_position_embeddings == 131_072
    assert "max_position_embeddings absent: 131072, the gemma3_text config default" in (
        spec.assumptions
    )


def test_text_config_keeps_outer_model_type_when_missing():
    outer = {"model_type": "gemma3", "text_config": tiny()}
    del outer["text_config"]["model_type"]
    outer["text_config"]["head_dim"] = 8
    spec = read_hf_config(outer)
    assert spec.model_type == "gemma3"
    assert spec.family_source == FAMILIES["gemma3_text"].source


def test_text_config_must_be_object():
    with pytest.raises(ValueError, match=r"config key 'text_config' must be an object, got list"):
        read_hf_config({"model_type": "gemma3", "text_config": []})


# --- unknown model_type ----------------------------------------------------------------------


def test_unknown_model_type_reads_as_llama_like():
    spec = read_hf_config(tiny(model_type="mystery"))
    assert spec.model_type == "mystery"
    assert spec.family_source == LLAMA_LIKE.source
    assert spec.mlp == "gated" and spec.norm == "rmsnorm"
    assert spec.norm_names == ("input_layernorm", "post_attention_layernorm")
    assert (spec.qkv_bias, spec.o_bias, spec.mlp_bias) == (False, False, False)
    assert spec.tie_word_embeddings is False
    assert spec.head_dim == 8
    assert kinds(spec) == [("full", None)] * 4
    notes = " | ".join(spec.assumptions)
    assert "model_type 'mystery' is not in the family table: read as Llama-like" in notes
    assert "gated MLP" in notes and "RMSNorm" in notes
    assert "tie_word_embeddings absent: false, the llama default" in notes


def test_unknown_model_type_notes_ignored_window():
    spec = read_hf_config(tiny(model_type="mystery", sliding_window=256))
    assert kinds(spec) == [("full", None)] * 4
    assert "sliding_window ignored: the Llama-like reading has no sliding window" in (
        spec.assumptions
    )


def test_unknown_model_type_with_experts_reads_as_mixtral():
    spec = read_hf_config(tiny(model_type="mystery", num_local_experts=4, num_experts_per_tok=2))
    assert spec.moe is not None
    assert (spec.moe.n_routed_experts, spec.moe.experts_per_token) == (4, 2)
    assert spec.moe.expert_intermediate_size == 48
    assert all(layer.moe for layer in spec.layers)
    assert "num_local_experts set: experts read as Mixtral-style (w1, w2, w3)" in (spec.assumptions)


@pytest.mark.parametrize("model_type", [None, "", 7])
def test_missing_model_type_reads_as_llama_like(model_type):
    config = tiny(model_type=None)
    if model_type is not None:
        config["model_type"] = model_type
    spec = read_hf_config(config)
    assert spec.family_source == LLAMA_LIKE.source
    assert f"model_type {model_type!r} missing or not a string: read as Llama-like" in (
        spec.assumptions
    )


def test_known_families_list_no_fallback_note():
    for preset_id in preset_ids():
        assert not any("Llama-like" in note for note in preset_spec(preset_id).assumptions)


# --- names -----------------------------------------------------------------------------------


def test_name_from_argument_then_name_or_path_then_model_type():
    assert read_hf_config(tiny(), name="mine").name == "mine"
    assert read_hf_config(load_preset("llama-2-7b")).name == "meta-llama/Llama-2-7b-hf"
    assert read_hf_config(tiny()).name == "llama"


def test_from_hf_config_is_read_hf_config():
    config = load_preset("qwen3-8b")
    assert ModelSpec.from_hf_config(config, name="q") == read_hf_config(config, name="q")


@pytest.mark.parametrize("preset_id", preset_ids())
def test_family_source_names_transformers(preset_id):
    assert "huggingface/transformers" in preset_spec(preset_id).family_source


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("config", "kind"), [([], "list"), ("{}", "str"), (None, "NoneType")])
def test_config_must_be_dict(config, kind):
    with pytest.raises(ValueError, match=rf"^config must be a JSON object, got {kind}$"):
        read_hf_config(config)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "key",
    ["vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size"],
)
def test_missing_key_named(key):
    with pytest.raises(ValueError, match=rf"^config key '{key}' is missing$"):
        read_hf_config(tiny(**{key: None}))


@pytest.mark.parametrize(
    "key",
    [
        "vocab_size",
        "hidden_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "intermediate_size",
        "head_dim",
        "max_position_embeddings",
    ],
)
@pytest.mark.parametrize("value", [-1, 0, 1.5, 32.0, True, False, "32"])
def test_bad_sizes_named(key, value):
    with pytest.raises(
        ValueError,
        match=rf"^config key '{key}' must be a positive integer, got {re.escape(repr(value))}$",
    ):
        read_hf_config(tiny(**{key: value}))


def test_heads_not_divisible_by_kv_heads():
    with pytest.raises(ValueError, match=r"num_attention_heads \(4\).*num_key_value_heads, got 3"):
        read_hf_config(tiny(num_key_value_heads=3))


def test_hidden_not_divisible_by_heads_without_head_dim():
    with pytest.raises(
        ValueError,
        match=r"^config key 'head_dim' is missing and hidden_size \(30\) is not divisible by "
        r"num_attention_heads \(4\)$",
    ):
        read_hf_config(tiny(hidden_size=30))


def test_hidden_not_divisible_is_fine_with_head_dim():
    assert read_hf_config(tiny(hidden_size=30, head_dim=8)).head_dim == 8


def test_gpt2_alias_errors_name_canonical_key():
    config = load_preset("gpt2")
    config["n_embd"] = 0
    with pytest.raises(ValueError, match=r"config key 'hidden_size' must be a positive integer"):
        read_hf_config(config)


# --- properties ------------------------------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(hf_configs())
def test_reading_does_not_mutate_config(config):
    before = copy.deepcopy(config)
    spec = read_hf_config(config)
    assert config == before
    assert spec.num_layers == config["num_hidden_layers"]
    assert spec.vocab_size == config["vocab_size"]


@settings(max_examples=50, deadline=None)
@given(hf_configs())
def test_reading_is_deterministic(config):
    assert read_hf_config(config) == read_hf_config(copy.deepcopy(config))


# ---- plausibility bounds: checked as each key is read, before anything is allocated ----


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("num_hidden_layers", 2**40),
        ("hidden_size", 2**20),
        ("num_attention_heads", 2**13),
        ("vocab_size", 2**30),
        ("intermediate_size", 2**24),
    ],
)
def test_sizes_past_plausibility_name_key_value_and_bound(key, value):
    config = load_preset("llama-3.1-8b")
    config[key] = value
    with pytest.raises(ValueError) as e:
        read_hf_config(config)
    assert f"config key '{key}' must be at most " in str(e.value)
    assert f"{value:,}" in str(e.value)


def test_expert_count_past_plausibility_is_refused():
    config = load_preset("mixtral-8x7b")
    config["num_local_experts"] = 2**20
    with pytest.raises(ValueError, match=r"'num_local_experts' must be at most 16,384"):
        read_hf_config(config)


@settings(max_examples=200, deadline=None)
@given(preset_id=st.sampled_from(preset_ids()), data=st.data())
def test_any_size_is_read_within_its_bound_or_refused(preset_id, data):
    # 2^40 layers built a 2^40-entry list before: MemoryError, or no answer at all
    config = load_preset(preset_id)
    target = config.get("text_config", config)
    key = data.draw(st.sampled_from(sorted(k for k in target if k in CONFIG_MAX)), label="key")
    target[key] = data.draw(st.integers(1, 2**64), label="value")
    try:
        spec = read_hf_config(config)
    except ValueError:  # named by its key; any other exception fails the test
        return
    assert spec.num_layers == len(spec.layers) <= CONFIG_MAX["num_hidden_layers"]
    assert spec.hidden_size <= CONFIG_MAX["hidden_size"]
    assert spec.vocab_size <= CONFIG_MAX["vocab_size"]
    assert spec.num_heads <= CONFIG_MAX["num_attention_heads"]
    assert spec.intermediate_size <= CONFIG_MAX["intermediate_size"]
    if spec.moe is not None:
        assert spec.moe.n_routed_experts <= CONFIG_MAX["n_routed_experts"]


# Any JSON value in place of any key of a real config: a spec or a ValueError naming the
# problem, never another exception (a TypeError from set() of dicts, a MemoryError).
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**64), 2**64)
    | st.floats(allow_nan=True)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(
    preset_id=st.sampled_from(preset_ids()),
    data=st.data(),
)
def test_any_value_in_any_key_is_read_or_refused_cleanly(preset_id, data):
    config = load_preset(preset_id)
    target = config.get("text_config", config)
    key = data.draw(st.sampled_from(sorted(target)), label="key")
    target[key] = data.draw(JSON_VALUES, label="value")
    try:
        spec = read_hf_config(config)
    except ValueError:
        return
    assert spec.num_layers == len(spec.layers) <= 1_024
