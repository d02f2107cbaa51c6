"""LoRA targets and trainable parameter counts."""

import pytest

from calculators.model.presets import load_preset
from calculators.model.spec import ModelSpec
from calculators.training.lora import linear_module_names, lora_parameters


def spec(name: str) -> ModelSpec:
    return ModelSpec.from_hf_config(load_preset(name), name=name)


def test_gpt3_175b_budget_of_hu_et_al():
    # Hu et al. 2021 (arXiv:2106.09685) section 7.1, Table 5: on GPT-3 175B (96 layers,
    # d_model 12288) the budget of 18M trainable parameters is W_q at r = 8, W_q and W_v at
    # r = 4, or all four attention matrices at r = 2: 96 x 8 x (12288 + 12288) each.
    config = {
        "model_type": "llama",
        "vocab_size": 50257,
        "hidden_size": 12288,
        "intermediate_size": 4 * 12288,
        "num_hidden_layers": 96,
        "num_attention_heads": 96,
        "num_key_value_heads": 96,
    }
    gpt3 = ModelSpec.from_hf_config(config, name="gpt3-175b-shape")
    budgets = {
        lora_parameters(gpt3, 8, ("q_proj",)).trainable,
        lora_parameters(gpt3, 4, ("q_proj", "v_proj")).trainable,
        lora_parameters(gpt3, 2, ("q_proj", "k_proj", "v_proj", "o_proj")).trainable,
    }
    assert budgets == {18_874_368}


def test_experts_are_wrapped_once_each():
    s = spec("mixtral-8x7b")
    one = lora_parameters(s, 1, ("down_proj",))
    assert one.trainable == 32 * 8 * (14336 + 4096)


def test_all_linear_skips_lm_head_and_router():
    s = spec("mixtral-8x7b")
    names = linear_module_names(s)
    assert "gate" not in names and "lm_head" not in names
    everything = lora_parameters(s, 1, ("all-linear",)).trainable
    assert everything == sum(lora_parameters(s, 1, (n,)).trainable for n in names)


def test_unknown_target_lists_the_choices():
    with pytest.raises(ValueError, match="choose from qkv_proj, o_proj, c_fc, c_proj"):
        lora_parameters(spec("gpt2"), 4, ("c_attn",))
    with pytest.raises(ValueError, match="lora_rank must be a positive integer, got 0"):
        lora_parameters(spec("gpt2"), 0, ("c_fc",))


def test_all_attention_names_each_models_projections():
    llama = spec("llama-3.1-8b")
    four = lora_parameters(llama, 16, ("q_proj", "k_proj", "v_proj", "o_proj")).trainable
    assert lora_parameters(llama, 16, ("all-attention",)).trainable == four
    # DeepSeek's MLA has no q/k/v_proj: q_a, q_b, kv_a and kv_b and o are its projections.
    ds = spec("deepseek-v2-lite")  # q_proj (no q LoRA), kv_a 576 x 2048, kv_b 4096 x 512
    per_layer = 16 * ((2048 + 3072) + (2048 + 576) + (512 + 4096) + (2048 + 2048))
    assert lora_parameters(ds, 16, ("all-attention",)).trainable == 27 * per_layer
