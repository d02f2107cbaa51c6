"""Parameter counts pinned to published figures, and the properties every count keeps.

PINNED lists each preset whose published figure (calculators/model/presets/index.json,
published_parameters) is the model's unique parameter count; the integer and its source
are written here literally, so a change to the counting code or to index.json fails a test.
The four presets whose published figure counts something else are reconciled below exactly
as their published_parameters_note explains.
"""

from __future__ import annotations

import dataclasses
import math
from functools import cache

import pytest
from hypothesis import given, settings
from strategies import hf_configs, specs

from calculators.model.params import LINES, counts_of, parameter_counts
from calculators.model.presets import get_preset, load_preset
from calculators.model.spec import ModelSpec
from calculators.model.tensors import model_tensors


@cache
def spec_of(preset_id: str) -> ModelSpec:
    return ModelSpec.from_hf_config(load_preset(preset_id), name=preset_id)


def counts(preset_id: str):
    return parameter_counts(spec_of(preset_id))


# (preset id, published unique parameter count, published_parameters_source from index.json)
PINNED: list[tuple[str, int, str]] = [
    (
        "deepseek-v2-lite",
        15_706_484_224,
        "Hugging Face-derived parameter table listing deepseek-ai/DeepSeek-V2-Lite "
        "total_params 15706484224; DeepSeek-V2 paper: 15.7B total, 2.4B activated",
    ),
    (
        "gemma-2-2b",
        2_614_341_888,
        "Hugging Face safetensors / model.parameters() sum for google/gemma-2-2b "
        "(pinned in several repos); keras-hub gemma2_2b_en",
    ),
    (
        "gemma-2-9b",
        9_241_705_984,
        "Hugging Face safetensors metadata for google/gemma-2-9b (safetensors.total "
        "9241705984); keras-hub gemma2_9b_en",
    ),
    (
        "gemma-2b",
        2_506_172_416,
        "keras-hub gemma_2b_en preset metadata (params 2506172416); same figure from "
        "PEFT print_trainable_parameters on google/gemma-2b",
    ),
    (
        "gemma-3-1b",
        999_885_952,
        "keras-hub gemma3_1b preset ('text-only pretrained', params 999885952); Hugging "
        "Face safetensors for gemma-3-1b-it (same architecture); Gemma 3 tech report "
        "Table 1: 0 vision / 302M embedding / 698M non-embedding",
    ),
    (
        "llama-2-7b",
        6_738_415_616,
        "Hugging Face safetensors metadata / GGUF general.parameter_count for "
        "Llama-2-7b; also keras-hub llama presets",
    ),
    (
        "llama-3.1-70b",
        70_553_706_496,
        "Hugging Face safetensors metadata of the Llama 3.1/3.3 70B repos "
        "(safetensors.total = 70553706496, e.g. the parameter count pinned for "
        "meta-llama/Llama-3.3-70B-Instruct, which shares the architecture, in public catalog "
        "tests and GGUF general.parameter_count of Llama-70B conversions)",
    ),
    (
        "llama-3.1-8b",
        8_030_261_248,
        "Hugging Face safetensors metadata for meta-llama/Llama-3.1-8B (model page "
        "parameter count; also GGUF general.parameter_count of llama3.1:8b)",
    ),
    (
        "llama-3.2-1b",
        1_235_814_400,
        "Hugging Face safetensors metadata for the Llama-3.2-1B repos (lm_head not "
        "stored: tied); also pinned as LLAMA_3_2_1B_PARAMETER_COUNT in ModelCloud "
        "GPTQModel tests",
    ),
    (
        "mistral-7b-v0.1",
        7_241_732_096,
        "Hugging Face safetensors metadata / GGUF general.parameter_count for Mistral-7B-v0.1",
    ),
    (
        "mixtral-8x7b",
        46_702_792_704,
        "Hugging Face safetensors metadata (Mixtral-8x7B repos, safetensors.total = "
        "46702792704); also keras-hub mixtral_8_7b_en preset metadata",
    ),
    (
        "olmo2-7b",
        7_298_617_344,
        "Hugging Face safetensors metadata for allenai/OLMo-2-1124-7B (F32: 7298617344, "
        "revision 7df9a82518afdecae4e8c026b27adccc8c1f0032)",
    ),
    (
        "phi-3-mini-4k",
        3_821_079_552,
        "Hugging Face safetensors metadata for microsoft/Phi-3-mini-4k-instruct (BF16 "
        "3821079552, seen in a Go test of the HF API); keras-hub "
        "phi3_mini_4k_instruct_en",
    ),
    (
        "qwen1.5-moe-a2.7b",
        14_315_784_192,
        "keras-hub qwen1.5_moe_2.7b_en preset metadata; same figure in a Hugging "
        "Face-derived parameter table for both Qwen1.5-MoE-A2.7B and -Chat",
    ),
    (
        "qwen2.5-0.5b",
        494_032_768,
        "Hugging Face safetensors metadata for Qwen2.5-0.5B (tied lm_head not stored); "
        "also GGUF n_params",
    ),
    (
        "qwen2.5-7b",
        7_615_616_512,
        "Hugging Face safetensors / GGUF general.parameter_count for Qwen2.5-7B(-Instruct)",
    ),
    (
        "qwen3-30b-a3b",
        30_532_122_624,
        "GGUF general.parameter_count of Qwen3-30B-A3B conversions, and a checkpoint "
        "loader that asserts sum of safetensors shapes == 30532122624; model card: "
        "30.5B total, 3.3B activated, 29.9B non-embedding",
    ),
    (
        "qwen3-8b",
        8_190_735_360,
        "Hugging Face safetensors metadata for Qwen/Qwen3-8B (BF16 total 8190735360); "
        "also GGUF n_params",
    ),
]


def test_pinned_table_covers_required_models():
    assert len(PINNED) >= 17
    assert {pid for pid, _, _ in PINNED} >= {
        "deepseek-v2-lite",
        "gemma-2-2b",
        "gemma-2-9b",
        "gemma-2b",
        "gemma-3-1b",
        "llama-2-7b",
        "llama-3.1-8b",
        "llama-3.2-1b",
        "mistral-7b-v0.1",
        "mixtral-8x7b",
        "olmo2-7b",
        "phi-3-mini-4k",
        "qwen1.5-moe-a2.7b",
        "qwen2.5-0.5b",
        "qwen2.5-7b",
        "qwen3-30b-a3b",
        "qwen3-8b",
    }


@pytest.mark.parametrize(("preset_id", "published", "source"), PINNED, ids=[p[0] for p in PINNED])
def test_total_equals_published_count(preset_id, published, source):
    assert counts(preset_id).total == published
    # the table and index.json agree
    preset = get_preset(preset_id)
    assert preset.published_parameters == published
    assert preset.published_parameters_source == source


@pytest.mark.parametrize(("preset_id", "published", "source"), PINNED, ids=[p[0] for p in PINNED])
def test_pinned_models_have_no_mtp(preset_id, published, source):
    assert counts(preset_id).mtp == 0


# --- published figures that count something else ---------------------------------------------


def test_qwen3_0_6b_safetensors_duplicates_the_tied_embedding():
    # "Hugging Face safetensors metadata for Qwen/Qwen3-0.6B (BF16: 751632384, ...)": the
    # checkpoint stores lm_head.weight although tie_word_embeddings is true.
    c = counts("qwen3-0.6b")
    assert c.total == 596_049_920
    assert c.by_line["embedding"] == 151_936 * 1024 == 155_582_464
    assert c.by_line["lm_head"] == 0
    assert c.total + 151_936 * 1024 == 751_632_384
    assert get_preset("qwen3-0.6b").published_parameters == 751_632_384


def test_gpt2_safetensors_includes_attention_mask_buffers():
    # "Hugging Face safetensors metadata for openai-community/gpt2 (F32: 137022720)": includes
    # 12 causal-mask buffers h.*.attn.bias of shape 1x1x1024x1024.
    spec, c = spec_of("gpt2"), counts("gpt2")
    assert c.total == 124_439_808
    assert (spec.num_layers, spec.max_position_embeddings) == (12, 1024)
    mask_buffers = spec.num_layers * 1 * 1 * 1024 * 1024
    assert mask_buffers == 12_582_912
    assert c.total + mask_buffers == 137_022_720
    assert get_preset("gpt2").published_parameters == 137_022_720


def test_deepseek_v3_safetensors_reconciliation():
    # "Hugging Face safetensors metadata for deepseek-ai/DeepSeek-V3: {BF16: 3918786560,
    # F8_E4M3: 680571043840, F32: 41555600}, total 684531386000"; the note: it includes
    # 41,540,496 FP8 weight_scale_inv values and the MTP layer's own embed_tokens and
    # shared_head copies (2 x 129280 x 7168).
    c = counts("deepseek-v3")
    assert c.total == 671_026_419_200
    assert c.mtp == 11_610_068_224
    assert c.total_with_mtp == 682_636_487_424
    duplicated = 2 * 129_280 * 7168
    assert duplicated == 1_853_358_080
    assert duplicated == c.by_line["embedding"] + c.by_line["lm_head"]
    published = get_preset("deepseek-v3").published_parameters
    assert published == 684_531_386_000
    fp8_scales = published - c.total - c.mtp - duplicated
    assert fp8_scales == 41_540_496


def test_deepseek_v3_dtype_split_from_inventory():
    # The same figures per dtype: FP8 matrices are every linear weight but the embedding,
    # lm_head, routers and eh_proj; each carries one F32 scale per 128x128 block; F32 also holds
    # e_score_correction_bias; everything else (and the MTP copies of embed/head) is BF16.
    tensors = model_tensors(spec_of("deepseek-v3"))
    not_fp8 = ("token_embd", "output", "ffn_gate_inp", "nextn_eh_proj")
    fp8 = [t for t in tensors if t.is_matrix and t.role not in not_fp8]
    scales = sum(math.ceil(t.shape[0] / 128) * math.ceil(t.shape[1] / 128) * t.count for t in fp8)
    assert scales == 41_540_496
    assert sum(t.parameters for t in fp8) == 680_571_043_840
    score_bias = sum(t.parameters for t in tensors if t.role == "exp_probs_b")
    assert score_bias == 256 * 59
    assert scales + score_bias == 41_555_600
    bf16 = sum(t.parameters for t in tensors if t not in fp8 and t.role != "exp_probs_b")
    assert bf16 + 2 * 129_280 * 7168 == 3_918_786_560


def test_gemma_3_4b_text_only():
    # "Hugging Face safetensors / model.parameters() sum for google/gemma-3-4b-it ...; Gemma 3
    # tech report Table 1: 417M vision / 675M embedding / 3,209M non-embedding". The published
    # 4,300,079,472 includes the SigLIP tower (416,866,032) and projector (2,950,272).
    c = counts("gemma-3-4b")
    assert c.total == 3_880_263_168
    assert c.by_line["embedding"] == 262_208 * 2560 == 671_252_480
    assert c.non_embedding == 3_209_010_688
    assert round(c.non_embedding / 1e6) == 3209
    published = get_preset("gemma-3-4b").published_parameters
    assert published == 4_300_079_472
    assert published - c.total == 416_866_032 + 2_950_272


def test_gemma_3_1b_table_1():
    # Gemma 3 tech report Table 1: 302M embedding / 698M non-embedding
    c = counts("gemma-3-1b")
    assert c.embedding == 262_144 * 1152 == 301_989_888
    assert c.non_embedding == 697_896_064
    assert (round(c.embedding / 1e6), round(c.non_embedding / 1e6)) == (302, 698)


# --- active parameters ------------------------------------------------------------------------


def test_mixtral_active():
    # Mistral AI, "Mixtral of experts" blog: 12.9B active parameters per token
    c = counts("mixtral-8x7b")
    assert c.active == 12_879_925_248
    assert round(c.active / 1e8) / 10 == 12.9


def within_last_digit(value: float, published: float, unit: float) -> bool:
    """`value` is within one unit of the published figure's last digit.

    Model cards round both ways: Mixtral's 12.88B is "12.9B" and DeepSeek-V3's 36.6B is "37B",
    but Qwen3-30B-A3B's 3.353B is "3.3B" and DeepSeek-V2-Lite's 2.451B is "2.4B".
    """
    return abs(value - published) < unit


def test_qwen3_30b_a3b_active():
    # Qwen3-30B-A3B model card: 3.3B activated (30.5B total, 29.9B non-embedding)
    c = counts("qwen3-30b-a3b")
    assert c.active == 3_353_032_704
    assert within_last_digit(c.active, 3.3e9, 0.1e9)
    assert math.floor(c.active / 1e8) == 33
    assert round(c.total / 1e8) / 10 == 30.5
    assert round(c.non_embedding / 1e8) / 10 == 29.9


def test_qwen1_5_moe_active():
    # Qwen1.5-MoE-A2.7B model card: 2.7B activated
    c = counts("qwen1.5-moe-a2.7b")
    assert c.active == 2_689_173_504
    assert round(c.active / 1e8) / 10 == 2.7


def test_deepseek_v2_lite_activated():
    # DeepSeek-V2 paper (arXiv:2405.04434): V2-Lite has 15.7B total, 2.4B activated; DeepSeek
    # quotes activated parameters without the input embedding.
    c = counts("deepseek-v2-lite")
    assert round(c.total / 1e8) / 10 == 15.7
    activated = c.active - c.by_line["embedding"]
    assert activated == 2_451_435_008
    assert within_last_digit(activated, 2.4e9, 0.1e9)
    assert math.floor(activated / 1e8) == 24


def test_deepseek_v3_activated():
    # DeepSeek-V3 report (arXiv:2412.19437): 671B total, 37B activated per token
    c = counts("deepseek-v3")
    assert round(c.total / 1e9) == 671
    activated = c.active - c.by_line["embedding"]
    assert activated == 36_625_618_432
    assert round(activated / 1e9) == 37


@pytest.mark.parametrize(
    "preset_id", ["llama-3.1-8b", "qwen3-8b", "gemma-2-9b", "gpt2", "phi-3-mini-4k", "olmo2-7b"]
)
def test_dense_active_equals_total(preset_id):
    c = counts(preset_id)
    assert c.active == c.total


# --- non-embedding ----------------------------------------------------------------------------


def test_qwen3_8b_non_embedding():
    # Qwen3-8B model card: 8.2B parameters, 6.95B non-embedding
    c = counts("qwen3-8b")
    assert c.non_embedding == 6_946_075_648
    assert round(c.non_embedding / 1e7) / 100 == 6.95
    assert round(c.total / 1e8) / 10 == 8.2


def test_qwen3_0_6b_non_embedding():
    # Qwen3-0.6B model card: 0.6B parameters, 0.44B non-embedding
    c = counts("qwen3-0.6b")
    assert c.non_embedding == 440_467_456
    assert round(c.non_embedding / 1e7) / 100 == 0.44
    assert round(c.total / 1e8) / 10 == 0.6


def test_non_embedding_excludes_embeddings_and_head():
    c = counts("llama-3.1-8b")
    assert c.by_line["embedding"] == c.by_line["lm_head"] == 128_256 * 4096
    assert c.non_embedding == c.total - 2 * 128_256 * 4096
    g = counts("gpt2")
    assert g.by_line["position_embedding"] == 1024 * 768
    assert g.embedding == 50_257 * 768 + 1024 * 768
    assert g.non_embedding == g.total - g.embedding == 85_056_000


# --- breakdown --------------------------------------------------------------------------------


def test_lines():
    assert LINES == (
        "embedding",
        "position_embedding",
        "lm_head",
        "attention",
        "mlp",
        "experts",
        "shared_experts",
        "router",
        "norms",
    )


def test_empty_inventory():
    c = counts_of(())
    assert (c.total, c.active, c.non_embedding, c.mtp) == (0, 0, 0, 0)
    assert c.by_line == dict.fromkeys(LINES, 0)


def test_breakdown_of_mixtral():
    c = counts("mixtral-8x7b")
    assert c.by_line["experts"] == 32 * 8 * 3 * 14336 * 4096
    assert c.by_line["router"] == 32 * 8 * 4096
    assert c.by_line["mlp"] == 0
    assert c.by_line["shared_experts"] == 0
    assert c.by_line["norms"] == (32 * 2 + 1) * 4096


def test_counts_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        counts("gpt2").total = 0  # type: ignore[misc]


# --- properties -------------------------------------------------------------------------------


def _with(config: dict, **changes: object) -> ModelSpec:
    return ModelSpec.from_hf_config({**config, **changes})


@settings(max_examples=50, deadline=None)
@given(hf_configs())
def test_tied_never_exceeds_untied(config):
    tied_spec = _with(config, tie_word_embeddings=True)
    tied = parameter_counts(tied_spec)
    untied = parameter_counts(_with(config, tie_word_embeddings=False))
    assert tied.total <= untied.total
    # the twin differs by exactly one vocab x hidden matrix, the lm_head
    assert untied.total - tied.total == tied_spec.vocab_size * tied_spec.hidden_size
    assert untied.by_line["lm_head"] == tied_spec.vocab_size * tied_spec.hidden_size
    assert tied.by_line["lm_head"] == 0
    assert tied.non_embedding == untied.non_embedding


@settings(max_examples=50, deadline=None)
@given(hf_configs())
def test_gqa_never_exceeds_mha(config):
    spec = ModelSpec.from_hf_config(config)
    gqa = parameter_counts(spec)
    mha = parameter_counts(_with(config, num_key_value_heads=config["num_attention_heads"]))
    assert gqa.total <= mha.total
    assert gqa.active <= mha.active
    if spec.mla is None:
        # k and v each lose (heads - kv_heads) x head_dim rows (weight and bias) per layer
        rows = 2 * (spec.num_heads - spec.num_kv_heads) * spec.head_dim
        per_layer = rows * (spec.hidden_size + int(spec.qkv_bias))
        assert mha.total - gqa.total == spec.num_layers * per_layer
    else:
        # MLA has no separate KV heads: num_key_value_heads changes nothing
        assert mha.total == gqa.total


@settings(max_examples=50, deadline=None)
@given(specs())
def test_counts_never_negative_and_active_at_most_total(spec):
    c = parameter_counts(spec)
    assert all(v >= 0 for v in c.by_line.values())
    assert min(c.total, c.active, c.non_embedding, c.mtp) >= 0
    assert c.active_non_embedding >= 0
    assert c.active <= c.total
    assert c.non_embedding <= c.total
    assert sum(c.by_line.values()) == c.total
    assert c.total > 0
    if spec.moe is None or not any(layer.moe for layer in spec.layers):
        assert c.active == c.total
