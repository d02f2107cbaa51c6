"""KV cache memory: per token, per context and batch, allocation rules and the inverses.

Expected values are computed by hand from each preset's public config.json (the
`config_source` in calculators/model/presets/index.json, huggingface.co/<repo>/blob/main/
config.json); the arithmetic is in the comments.
"""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculators.memory.kv_cache import (
    ContextLimit,
    KVLine,
    KVSettings,
    kv_bytes_per_token,
    kv_cache_bytes,
    layer_bytes_per_token,
    max_context,
    max_sequences,
)
from calculators.memory.kv_formats import KV_FORMATS
from calculators.model.presets import load_preset
from calculators.model.spec import LayerSpec, MLASpec, ModelSpec

GIB = 1 << 30
MIB = 1 << 20


def _preset(preset_id: str) -> ModelSpec:
    return ModelSpec.from_hf_config(load_preset(preset_id), name=preset_id)


LLAMA = _preset("llama-3.1-8b")
MISTRAL = _preset("mistral-7b-v0.1")
GEMMA2 = _preset("gemma-2-9b")
GEMMA3 = _preset("gemma-3-1b")
DSV3 = _preset("deepseek-v3")
PHI3 = _preset("phi-3-mini-4k")

EXPANDED = KVSettings(mla_layout="expanded")


# --- bytes per token, from the public configs -----------------------------------------


@pytest.mark.parametrize(
    ("preset_id", "expected"),
    [
        # huggingface.co/meta-llama/Llama-3.1-8B: 32 layers, 8 KV heads, head_dim 4096/32 = 128.
        # 32 x 2 (K, V) x 8 x 128 x 2 bytes = 131,072.
        ("llama-3.1-8b", 32 * 2 * 8 * 128 * 2),
        # huggingface.co/Qwen/Qwen2.5-7B: 28 layers, 4 KV heads, head_dim 3584/28 = 128
        # (use_sliding_window false). 28 x 2 x 4 x 128 x 2 = 57,344.
        ("qwen2.5-7b", 28 * 2 * 4 * 128 * 2),
        # huggingface.co/mistralai/Mistral-7B-v0.1: 32 layers, 8 KV heads, 128.
        # 32 x 2 x 8 x 128 x 2 = 131,072 (no window is full at one token).
        ("mistral-7b-v0.1", 32 * 2 * 8 * 128 * 2),
        # huggingface.co/google/gemma-2-9b: 42 layers, 8 KV heads, head_dim 256.
        # 42 x 2 x 8 x 256 x 2 = 344,064.
        ("gemma-2-9b", 42 * 2 * 8 * 256 * 2),
        # huggingface.co/google/gemma-3-1b-pt: 26 layers, 1 KV head, head_dim 256.
        # 26 x 2 x 1 x 256 x 2 = 26,624.
        ("gemma-3-1b", 26 * 2 * 1 * 256 * 2),
        # huggingface.co/deepseek-ai/DeepSeek-V3, MLA latent layout: the cache holds the
        # compressed c_t^KV (kv_lora_rank 512) and the shared rope key k_t^R
        # (qk_rope_head_dim 64): DeepSeek-V2 paper, arXiv:2405.04434, eq. 9-10 and Table 1
        # "KV Cache per Token: (d_c + d_h^R) l". 61 x (512 + 64) x 2 = 70,272.
        ("deepseek-v3", 61 * (512 + 64) * 2),
        # huggingface.co/deepseek-ai/DeepSeek-V2-Lite: 27 layers, same MLA dims.
        # 27 x (512 + 64) x 2 = 31,104.
        ("deepseek-v2-lite", 27 * (512 + 64) * 2),
        # huggingface.co/openai-community/gpt2: n_layer 12, n_head 12 (MHA), 768/12 = 64.
        # 12 x 2 x 12 x 64 x 2 = 36,864.
        ("gpt2", 12 * 2 * 12 * 64 * 2),
        # huggingface.co/microsoft/Phi-3-mini-4k-instruct: 32 layers, 32 KV heads (MHA),
        # head_dim 3072/32 = 96. 32 x 2 x 32 x 96 x 2 = 393,216.
        ("phi-3-mini-4k", 32 * 2 * 32 * 96 * 2),
    ],
)
def test_bytes_per_token(preset_id, expected):
    spec = _preset(preset_id)
    assert kv_bytes_per_token(spec) == expected
    assert kv_bytes_per_token(spec, KVSettings()) == expected
    one = kv_cache_bytes(spec, context=1)
    assert one.bytes_per_token == expected
    assert one.total_bytes == expected  # one token: no window is full, bf16 has no scales


def test_pinned_numbers():
    # The same expectations as literals, so a slip in the arithmetic above shows.
    assert kv_bytes_per_token(LLAMA) == 131_072
    assert kv_bytes_per_token(_preset("qwen2.5-7b")) == 57_344
    assert kv_bytes_per_token(DSV3) == 70_272
    assert kv_bytes_per_token(_preset("gpt2")) == 36_864


@pytest.mark.parametrize(
    ("preset_id", "expected"),
    [
        # transformers' eager DeepseekV3Attention caches full per-head K (nope 128 + rope 64)
        # and V (v_head_dim 128): 61 layers x 128 heads x (192 + 128) x 2 = 4,997,120.
        ("deepseek-v3", 61 * 128 * (192 + 128) * 2),
        # DeepSeek-V2-Lite: 27 layers x 16 heads x (192 + 128) x 2 = 276,480.
        ("deepseek-v2-lite", 27 * 16 * (192 + 128) * 2),
    ],
)
def test_mla_expanded_layout(preset_id, expected):
    spec = _preset(preset_id)
    assert kv_bytes_per_token(spec, EXPANDED) == expected
    assert kv_cache_bytes(spec, context=10, settings=EXPANDED).total_bytes == 10 * expected


def test_mla_latent_is_much_smaller_than_expanded():
    # DeepSeek-V3: 4,997,120 / 70,272 = 71.1x (the paper's motivation for MLA).
    ratio = kv_bytes_per_token(DSV3, EXPANDED) / kv_bytes_per_token(DSV3)
    assert ratio == pytest.approx(4_997_120 / 70_272)
    assert ratio > 70


def test_layer_bytes_per_token():
    bf16 = KVSettings()
    # One Llama-3.1-8B layer: 2 x 8 x 128 x 2 = 4,096.
    assert layer_bytes_per_token(LLAMA, LLAMA.layers[0], bf16) == 4_096
    # One DeepSeek-V3 layer, latent: (512 + 64) x 2 = 1,152; expanded: 128 x 320 x 2 = 81,920.
    assert layer_bytes_per_token(DSV3, DSV3.layers[0], bf16) == 1_152
    assert layer_bytes_per_token(DSV3, DSV3.layers[0], EXPANDED) == 81_920


def test_mla_layout_ignored_for_gqa_models():
    assert kv_bytes_per_token(LLAMA, EXPANDED) == kv_bytes_per_token(LLAMA) == 131_072


# --- sliding windows ------------------------------------------------------------------


def test_mistral_all_sliding_capped_at_window():
    # Mistral-7B-v0.1: sliding_window 4096 on all 32 layers (arXiv:2310.06825 section 2,
    # rolling buffer cache). One layer-token is 2 x 8 x 128 x 2 = 4,096 bytes.
    result = kv_cache_bytes(MISTRAL, context=32_768)
    assert result.bytes_per_token == 131_072
    assert result.lines == (
        KVLine(
            attention="sliding",
            window=4096,
            layers=32,
            bytes_per_token=131_072,
            tokens_held=4096,
            bytes=4096 * 131_072,
        ),
    )
    # 32 layers x 4096 tokens x 4,096 bytes = 536,870,912 (512 MiB), not 32768 x 131,072.
    assert result.total_bytes == 32 * 4096 * 4096 == 536_870_912
    assert result.total_bytes < 32_768 * 131_072


def test_mistral_below_window_is_linear():
    assert kv_cache_bytes(MISTRAL, context=4096).total_bytes == 4096 * 131_072
    assert kv_cache_bytes(MISTRAL, context=4097).total_bytes == 4096 * 131_072
    assert kv_cache_bytes(MISTRAL, context=100).total_bytes == 100 * 131_072


def test_gemma2_alternating_half_capped():
    # google/gemma-2-9b: sliding_window 4096 on even layers (Gemma2DecoderLayer: layer 0
    # slides), 21 sliding + 21 full. One layer-token: 2 x 8 x 256 x 2 = 8,192 bytes.
    result = kv_cache_bytes(GEMMA2, context=8192)
    sliding, full = result.lines
    assert sliding == KVLine(
        attention="sliding",
        window=4096,
        layers=21,
        bytes_per_token=21 * 8192,  # 172,032
        tokens_held=4096,
        bytes=21 * 8192 * 4096,  # 704,643,072
    )
    assert full == KVLine(
        attention="full",
        window=None,
        layers=21,
        bytes_per_token=21 * 8192,
        tokens_held=8192,
        bytes=21 * 8192 * 8192,  # 1,409,286,144
    )
    # 704,643,072 + 1,409,286,144 = 2,113,929,216
    assert result.total_bytes == 2_113_929_216
    # Below the window every layer holds the whole context.
    assert kv_cache_bytes(GEMMA2, context=4096).total_bytes == 4096 * 344_064


def test_gemma3_five_to_one_pattern():
    # google/gemma-3-1b-pt: sliding_window 512, sliding_window_pattern 6: layers 5, 11, 17,
    # 23 full (4), the other 22 sliding. One layer-token: 2 x 1 x 256 x 2 = 1,024 bytes.
    result = kv_cache_bytes(GEMMA3, context=32_768)
    by_kind = {(line.attention, line.window): line for line in result.lines}
    assert set(by_kind) == {("sliding", 512), ("full", None)}
    assert by_kind["sliding", 512].layers == 22
    assert by_kind["sliding", 512].tokens_held == 512
    assert by_kind["full", None].layers == 4
    assert by_kind["full", None].tokens_held == 32_768
    # 22 x 1024 x 512 + 4 x 1024 x 32768 = 11,534,336 + 134,217,728 = 145,752,064
    assert result.total_bytes == 145_752_064


def test_phi3_all_layers_sliding_2047():
    # microsoft/Phi-3-mini-4k-instruct: sliding_window 2047 on all 32 layers,
    # max_position_embeddings 4096. 2047 x 393,216 = 804,913,152.
    result = kv_cache_bytes(PHI3, context=4096)
    assert [(line.attention, line.window, line.layers) for line in result.lines] == [
        ("sliding", 2047, 32)
    ]
    assert result.total_bytes == 2047 * 393_216 == 804_913_152
    # Paged (block 16): the last 2047 tokens straddle ceil(2046 / 16) + 1 = 129 blocks
    # (vLLM SlidingWindowSpec.max_memory_usage_bytes), 2064 token slots.
    paged = kv_cache_bytes(PHI3, context=4096, settings=KVSettings(allocation="paged"))
    assert paged.lines[0].tokens_held == 2064
    assert paged.total_bytes == 2064 * 393_216
    # Within the window, paged is plain block rounding: 2000 tokens -> 125 blocks.
    short = kv_cache_bytes(PHI3, context=2000, settings=KVSettings(allocation="paged"))
    assert short.lines[0].tokens_held == 2000


# --- allocation -----------------------------------------------------------------------


def test_dynamic_is_exact():
    result = kv_cache_bytes(LLAMA, context=17)
    assert result.allocation == "dynamic"
    assert result.allocated_length == 17
    assert result.lines[0].tokens_held == 17
    assert result.total_bytes == 17 * 131_072


@pytest.mark.parametrize(
    ("context", "block_size", "held"),
    [
        (17, 16, 32),  # vLLM PagedAttention (arXiv:2309.06180), default block 16
        (16, 16, 16),
        (1, 16, 16),
        (17, 1, 17),
        (17, 64, 64),
        (100, 32, 128),
        (8192, 16, 8192),
    ],
)
def test_paged_rounds_up_to_blocks(context, block_size, held):
    paged = KVSettings(allocation="paged", block_size=block_size)
    result = kv_cache_bytes(LLAMA, context=context, settings=paged)
    assert result.block_size == block_size
    assert result.lines[0].tokens_held == held
    assert result.per_sequence_bytes == held * 131_072
    assert result.total_bytes == held * 131_072
    # bytes_per_token carries no allocation rounding
    assert result.bytes_per_token == 131_072


def test_paged_rounds_each_sequence():
    # 3 sequences of 17 tokens hold 3 x 32 tokens, not ceil(51 / 16) x 16 = 64.
    result = kv_cache_bytes(LLAMA, context=17, batch=3, settings=KVSettings(allocation="paged"))
    assert result.total_bytes == 3 * 32 * 131_072


def test_paged_default_block_size_is_16():
    assert KVSettings().block_size == 16
    result = kv_cache_bytes(LLAMA, context=17, settings=KVSettings(allocation="paged"))
    assert result.lines[0].tokens_held == 32


def test_paged_sliding_rounds_window():
    # Gemma 3 1B window 512 with block 48, past the window: the last 512 tokens touch
    # ceil(511 / 48) + 1 = 12 blocks = 576 slots (vLLM SlidingWindowSpec).
    result = kv_cache_bytes(
        GEMMA3, context=1000, settings=KVSettings(allocation="paged", block_size=48)
    )
    by_kind = {line.attention: line.tokens_held for line in result.lines}
    assert by_kind == {"sliding": 576, "full": 1008}  # 21 x 48 = 1008
    assert result.total_bytes == 22 * 1024 * 576 + 4 * 1024 * 1008


def test_static_uses_max_length():
    static = KVSettings(allocation="static")
    result = kv_cache_bytes(LLAMA, context=100, settings=static, max_length=4096)
    assert result.allocated_length == 4096
    assert result.context == 100
    assert result.total_bytes == 4096 * 131_072 == 536_870_912
    # Without max_length the cache is sized for the context.
    assert kv_cache_bytes(LLAMA, context=100, settings=static).total_bytes == 100 * 131_072
    # max_length == context is allowed.
    assert (
        kv_cache_bytes(LLAMA, context=100, settings=static, max_length=100).total_bytes
        == 100 * 131_072
    )


def test_static_respects_sliding_window():
    static = KVSettings(allocation="static")
    result = kv_cache_bytes(MISTRAL, context=10, settings=static, max_length=32_768)
    assert result.lines[0].tokens_held == 4096
    assert result.total_bytes == 536_870_912


def test_static_max_length_below_context_raises():
    static = KVSettings(allocation="static")
    with pytest.raises(ValueError, match=r"max_length must be at least context \(100\), got 99"):
        kv_cache_bytes(LLAMA, context=100, settings=static, max_length=99)


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_static_max_length_must_be_positive_int(bad):
    static = KVSettings(allocation="static")
    with pytest.raises(
        ValueError, match=re.escape(f"max_length must be a positive integer, got {bad!r}")
    ):
        kv_cache_bytes(LLAMA, context=1, settings=static, max_length=bad)


@pytest.mark.parametrize("allocation", ["dynamic", "paged"])
def test_max_length_only_for_static(allocation):
    with pytest.raises(ValueError, match=r"max_length applies only to allocation 'static'"):
        kv_cache_bytes(
            LLAMA, context=10, settings=KVSettings(allocation=allocation), max_length=100
        )


# --- totals ---------------------------------------------------------------------------


def test_total_is_batch_times_sequence_plus_scales():
    fp8 = KVSettings(kv_format="fp8")
    result = kv_cache_bytes(GEMMA2, context=6000, batch=5, settings=fp8)
    # fp8 layer-token: 2 x 8 x 256 x 1 = 4,096 bytes; 21 sliding hold 4096, 21 full 6000.
    per_sequence = 21 * 4096 * 4096 + 21 * 4096 * 6000
    assert result.per_sequence_bytes == per_sequence == 868_417_536
    assert result.scale_bytes == 42 * 8
    assert result.total_bytes == 5 * per_sequence + 42 * 8
    assert sum(line.bytes for line in result.lines) + result.scale_bytes == result.total_bytes
    assert result.batch == 5
    assert result.kv_format == "fp8"


def test_lines_grouped_by_attention_and_window():
    # Two window sizes in one model: one line per (attention, window), in layer order.
    layers = (
        LayerSpec(attention="sliding", window=8),
        LayerSpec(attention="full"),
        LayerSpec(attention="sliding", window=32),
        LayerSpec(attention="sliding", window=8),
        LayerSpec(attention="full"),
    )
    spec = _tiny_spec(layers=layers, heads=4, kv_heads=2, head_dim=16)
    result = kv_cache_bytes(spec, context=20, batch=2)
    layer = 2 * 2 * 16 * 2  # 128 bytes a layer-token
    assert result.lines == (
        KVLine(
            attention="sliding",
            window=8,
            layers=2,
            bytes_per_token=2 * layer,
            tokens_held=8,
            bytes=2 * 8 * 2 * layer,
        ),
        KVLine(
            attention="full",
            window=None,
            layers=2,
            bytes_per_token=2 * layer,
            tokens_held=20,
            bytes=2 * 20 * 2 * layer,
        ),
        KVLine(
            attention="sliding",
            window=32,
            layers=1,
            bytes_per_token=layer,
            tokens_held=20,
            bytes=2 * 20 * layer,
        ),
    )
    assert result.total_bytes == 2 * (8 * 2 + 20 * 2 + 20) * layer == 19_456


def test_batch_scales_linearly_for_bf16():
    one = kv_cache_bytes(LLAMA, context=8192)
    eight = kv_cache_bytes(LLAMA, context=8192, batch=8)
    assert one.total_bytes == GIB  # 8192 x 131,072
    assert eight.total_bytes == 8 * GIB
    assert eight.per_sequence_bytes == one.per_sequence_bytes


# --- inverse: max_context -------------------------------------------------------------


def test_max_context_llama_exact_fit():
    # 1 GiB / 131,072 bytes a token = 8192 tokens exactly.
    limit = max_context(LLAMA, free_bytes=GIB)
    assert limit == ContextLimit(max_context=8192, limited_by="memory", total_bytes=GIB)
    assert max_context(LLAMA, free_bytes=GIB - 1).max_context == 8191
    # Two sequences: 4096 each.
    assert max_context(LLAMA, free_bytes=GIB, batch=2).max_context == 4096


def test_max_context_fp8_counts_scales():
    # (2^30 - 256) / 65,536 = 16383.996..., so 16383 tokens, not 16384.
    limit = max_context(LLAMA, free_bytes=GIB, settings=KVSettings(kv_format="fp8"))
    assert limit.max_context == 16_383
    assert limit.total_bytes == 16_383 * 65_536 + 256


def test_max_context_limited_by_max_position_embeddings():
    # Llama-3.1-8B max_position_embeddings 131072: 131072 x 131,072 = 16 GiB.
    limit = max_context(LLAMA, free_bytes=16 * GIB)
    assert limit == ContextLimit(
        max_context=131_072, limited_by="max_position_embeddings", total_bytes=16 * GIB
    )
    assert max_context(LLAMA, free_bytes=16 * GIB - 1).limited_by == "memory"
    # An explicit limit stops the search there.
    assert max_context(LLAMA, free_bytes=16 * GIB, limit=1000) == ContextLimit(
        max_context=1000, limited_by="max_position_embeddings", total_bytes=1000 * 131_072
    )


def test_max_context_mistral_all_sliding():
    # Every layer slides (window 4096): the cache never exceeds 4096 x 131,072 = 512 MiB,
    # so 1 GiB reaches max_position_embeddings (32768).
    limit = max_context(MISTRAL, free_bytes=GIB)
    assert limit == ContextLimit(
        max_context=32_768, limited_by="max_position_embeddings", total_bytes=512 * MIB
    )
    # Under 512 MiB memory binds: 256 MiB / 131,072 = 2048 tokens.
    assert max_context(MISTRAL, free_bytes=256 * MIB) == ContextLimit(
        max_context=2048, limited_by="memory", total_bytes=256 * MIB
    )


def test_max_context_nothing_fits():
    assert max_context(LLAMA, free_bytes=0) == ContextLimit(
        max_context=0, limited_by="memory", total_bytes=0
    )
    assert max_context(LLAMA, free_bytes=131_071).max_context == 0
    assert max_context(LLAMA, free_bytes=131_072).max_context == 1
    # fp8 scales alone (256 bytes) do not fit in 255.
    assert max_context(LLAMA, free_bytes=255, settings=KVSettings(kv_format="fp8")).max_context == 0


def test_max_context_paged_rounds():
    # Paged block 16: 20 x 131,072 bytes hold 16 tokens (17..20 would need 32 tokens).
    paged = KVSettings(allocation="paged")
    assert max_context(LLAMA, free_bytes=20 * 131_072, settings=paged).max_context == 16


def test_max_context_needs_a_limit():
    spec = replace(LLAMA, max_position_embeddings=None)
    with pytest.raises(ValueError, match=r"limit is required"):
        max_context(spec, free_bytes=GIB)
    assert max_context(spec, free_bytes=GIB, limit=100_000).max_context == 8192


@pytest.mark.parametrize("bad", [-1, 1.5, True, "1"])
def test_max_context_free_bytes_errors(bad):
    with pytest.raises(
        ValueError, match=re.escape(f"free_bytes must be a non-negative integer, got {bad!r}")
    ):
        max_context(LLAMA, free_bytes=bad)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_max_context_batch_errors(bad):
    with pytest.raises(
        ValueError, match=re.escape(f"batch must be a positive integer, got {bad!r}")
    ):
        max_context(LLAMA, free_bytes=GIB, batch=bad)


@pytest.mark.parametrize("bad", [0, -5, 2.5, True])
def test_max_context_limit_errors(bad):
    # limit=0 must not silently become the model's max_position_embeddings.
    with pytest.raises(
        ValueError, match=re.escape(f"limit must be a positive integer, got {bad!r}")
    ):
        max_context(LLAMA, free_bytes=GIB, limit=bad)


# --- inverse: max_sequences -----------------------------------------------------------


def test_max_sequences_floor_rule():
    # One 8192-token Llama sequence is 1 GiB.
    assert max_sequences(LLAMA, free_bytes=80 * GIB, context=8192) == 80
    assert max_sequences(LLAMA, free_bytes=80 * GIB - 1, context=8192) == 79
    assert max_sequences(LLAMA, free_bytes=GIB - 1, context=8192) == 0
    assert max_sequences(LLAMA, free_bytes=0, context=8192) == 0


def test_max_sequences_fp8_scales():
    fp8 = KVSettings(kv_format="fp8")
    # floor((80 GiB - 256) / 512 MiB) = 159
    assert max_sequences(LLAMA, free_bytes=80 * GIB, context=8192, settings=fp8) == 159
    assert max_sequences(LLAMA, free_bytes=80 * GIB + 256, context=8192, settings=fp8) == 160
    assert max_sequences(LLAMA, free_bytes=100, context=1, settings=fp8) == 0


def test_max_sequences_static_and_paged():
    static = KVSettings(allocation="static")
    # Sized for max_length 8192 whatever the context: 1 GiB each.
    assert (
        max_sequences(LLAMA, free_bytes=4 * GIB, context=10, settings=static, max_length=8192) == 4
    )
    paged = KVSettings(allocation="paged")
    # 17 tokens hold 32: 32 x 131,072 = 4 MiB each.
    assert max_sequences(LLAMA, free_bytes=40 * MIB, context=17, settings=paged) == 10


def test_max_sequences_sliding():
    # Mistral at 32768 tokens holds 512 MiB a sequence.
    assert max_sequences(MISTRAL, free_bytes=10 * GIB, context=32_768) == 20


@pytest.mark.parametrize("bad", [-1, 2.0, True])
def test_max_sequences_free_bytes_errors(bad):
    with pytest.raises(
        ValueError, match=re.escape(f"free_bytes must be a non-negative integer, got {bad!r}")
    ):
        max_sequences(LLAMA, free_bytes=bad, context=10)


@pytest.mark.parametrize("bad", [0, -1, 2.0, True])
def test_max_sequences_context_errors(bad):
    with pytest.raises(
        ValueError, match=re.escape(f"context must be a positive integer, got {bad!r}")
    ):
        max_sequences(LLAMA, free_bytes=GIB, context=bad)


# --- input errors ---------------------------------------------------------------------


@pytest.mark.parametrize("field", ["context", "batch"])
@pytest.mark.parametrize("bad", [0, -1, 1.5, True, False, "8", None])
def test_context_and_batch_errors(field, bad):
    kwargs = {"context": 8, "batch": 1, field: bad}
    with pytest.raises(
        ValueError, match=re.escape(f"{field} must be a positive integer, got {bad!r}")
    ):
        kv_cache_bytes(LLAMA, **kwargs)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, False, "16"])
def test_block_size_errors(bad):
    with pytest.raises(
        ValueError, match=re.escape(f"block_size must be a positive integer, got {bad!r}")
    ):
        KVSettings(allocation="paged", block_size=bad)


@pytest.mark.parametrize("bad", ["Paged", "pagedattention", "", "none", None])
def test_allocation_errors(bad):
    with pytest.raises(
        ValueError,
        match=re.escape(f"allocation must be one of dynamic, paged, static; got {bad!r}"),
    ):
        KVSettings(allocation=bad)


@pytest.mark.parametrize("bad", ["compressed", "Latent", "", None])
def test_mla_layout_errors(bad):
    with pytest.raises(
        ValueError, match=re.escape(f"mla_layout must be latent or expanded; got {bad!r}")
    ):
        KVSettings(mla_layout=bad)


def test_settings_defaults():
    s = KVSettings()
    assert (s.kv_format, s.allocation, s.block_size, s.mla_layout) == (
        "bf16",
        "dynamic",
        16,
        "latent",
    )
    assert s.format is KV_FORMATS["bf16"]


# --- hypothesis properties ------------------------------------------------------------


def _tiny_spec(
    *,
    layers: tuple[LayerSpec, ...],
    heads: int,
    kv_heads: int,
    head_dim: int,
    mla: MLASpec | None = None,
    max_positions: int | None = 4096,
) -> ModelSpec:
    return ModelSpec(
        name="tiny",
        model_type="llama" if mla is None else "deepseek_v3",
        vocab_size=64,
        hidden_size=heads * head_dim,
        num_layers=len(layers),
        num_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate_size=32,
        layers=layers,
        tie_word_embeddings=False,
        mla=mla,
        max_position_embeddings=max_positions,
    )


DIMS = st.sampled_from([32, 64, 96, 128])  # multiples of 32, so int8 (q8_0) always applies
SLIDING = st.builds(
    LayerSpec, attention=st.just("sliding"), window=st.integers(min_value=1, max_value=64)
)
LAYER = st.one_of(st.just(LayerSpec(attention="full")), SLIDING)


@st.composite
def gqa_specs(draw: st.DrawFn) -> ModelSpec:
    """A small GQA/MQA/MHA model with a mix of full and sliding layers."""
    kv = draw(st.integers(min_value=1, max_value=4))
    group = draw(st.integers(min_value=1, max_value=4))
    layers = tuple(draw(st.lists(LAYER, min_size=1, max_size=6)))
    positions = draw(st.integers(min_value=1, max_value=512))
    return _tiny_spec(
        layers=layers,
        heads=kv * group,
        kv_heads=kv,
        head_dim=draw(DIMS),
        max_positions=positions,
    )


@st.composite
def mla_specs(draw: st.DrawFn) -> ModelSpec:
    """A small MLA model."""
    nope, rope = draw(DIMS), draw(DIMS)
    heads = draw(st.integers(min_value=1, max_value=4))
    mla = MLASpec(
        q_lora_rank=None,
        kv_lora_rank=draw(DIMS),
        qk_nope_head_dim=nope,
        qk_rope_head_dim=rope,
        v_head_dim=draw(DIMS),
    )
    n = draw(st.integers(min_value=1, max_value=6))
    return _tiny_spec(
        layers=tuple(LayerSpec(attention="mla") for _ in range(n)),
        heads=heads,
        kv_heads=heads,
        head_dim=nope + rope,
        mla=mla,
        max_positions=draw(st.integers(min_value=1, max_value=512)),
    )


SPECS = st.one_of(gqa_specs(), mla_specs())
KV_SETTINGS = st.builds(
    KVSettings,
    kv_format=st.sampled_from(tuple(KV_FORMATS)),
    allocation=st.sampled_from(("dynamic", "paged", "static")),
    block_size=st.integers(min_value=1, max_value=32),
    mla_layout=st.sampled_from(("latent", "expanded")),
)
CONTEXT = st.integers(min_value=1, max_value=300)
BATCH = st.integers(min_value=1, max_value=8)


def _total(spec, context, batch=1, kv=None, max_length=None):
    return kv_cache_bytes(
        spec, context=context, batch=batch, settings=kv, max_length=max_length
    ).total_bytes


@given(spec=SPECS, kv=KV_SETTINGS, c1=CONTEXT, c2=CONTEXT, batch=BATCH)
@settings(max_examples=50, deadline=None)
def test_more_context_never_lowers_cache(spec, kv, c1, c2, batch):
    lo, hi = sorted((c1, c2))
    assert _total(spec, lo, batch, kv) <= _total(spec, hi, batch, kv)


@given(spec=SPECS, kv=KV_SETTINGS, context=CONTEXT, b1=BATCH, b2=BATCH)
@settings(max_examples=50, deadline=None)
def test_more_batch_never_lowers_cache(spec, kv, context, b1, b2):
    lo, hi = sorted((b1, b2))
    assert _total(spec, context, lo, kv) <= _total(spec, context, hi, kv)


@given(spec=gqa_specs(), kv=KV_SETTINGS, context=CONTEXT, batch=BATCH)
@settings(max_examples=50, deadline=None)
def test_gqa_never_exceeds_mha(spec, kv, context, batch):
    mha = replace(spec, num_kv_heads=spec.num_heads)
    assert kv_bytes_per_token(spec, kv) <= kv_bytes_per_token(mha, kv)
    assert _total(spec, context, batch, kv) <= _total(mha, context, batch, kv)
    # Exactly the group factor on what grows with tokens.
    gqa_seq = kv_cache_bytes(spec, context=context, settings=kv).per_sequence_bytes
    mha_seq = kv_cache_bytes(mha, context=context, settings=kv).per_sequence_bytes
    assert gqa_seq * spec.gqa_group == mha_seq


@given(spec=SPECS, kv=KV_SETTINGS, context=CONTEXT, batch=BATCH)
@settings(max_examples=50, deadline=None)
def test_no_result_is_negative_and_parts_add_up(spec, kv, context, batch):
    result = kv_cache_bytes(spec, context=context, batch=batch, settings=kv)
    assert result.bytes_per_token > 0
    assert result.per_sequence_bytes > 0
    assert result.scale_bytes >= 0
    assert result.total_bytes == batch * result.per_sequence_bytes + result.scale_bytes
    assert result.scale_bytes == kv.format.layer_scale_bytes * spec.num_layers
    assert sum(line.layers for line in result.lines) == spec.num_layers
    assert sum(line.bytes for line in result.lines) == batch * result.per_sequence_bytes
    assert sum(line.bytes_per_token for line in result.lines) == result.bytes_per_token
    for line in result.lines:
        assert line.bytes >= 0
        assert line.tokens_held >= 1
        if kv.allocation != "paged":
            assert line.tokens_held == min(context, line.window or context)


@given(spec=SPECS, kv=KV_SETTINGS, context=CONTEXT, batch=BATCH)
@settings(max_examples=50, deadline=None)
def test_paged_at_least_dynamic(spec, kv, context, batch):
    dynamic = _total(spec, context, batch, replace(kv, allocation="dynamic"))
    paged_result = kv_cache_bytes(
        spec, context=context, batch=batch, settings=replace(kv, allocation="paged")
    )
    assert paged_result.total_bytes >= dynamic
    # ... by less than two blocks per line per sequence (one for rounding, one more when
    # a sliding window straddles block edges).
    slack = batch * sum(
        (2 * kv.block_size - 1) * line.bytes_per_token for line in paged_result.lines
    )
    assert paged_result.total_bytes - dynamic <= slack
    for line in paged_result.lines:
        assert line.tokens_held % kv.block_size == 0


@given(spec=SPECS, kv=KV_SETTINGS, context=CONTEXT, extra=st.integers(0, 300), batch=BATCH)
@settings(max_examples=50, deadline=None)
def test_static_at_least_dynamic(spec, kv, context, extra, batch):
    static = replace(kv, allocation="static")
    dynamic = replace(kv, allocation="dynamic")
    sized = _total(spec, context, batch, static, max_length=context + extra)
    assert sized >= _total(spec, context, batch, dynamic)
    # static for max_length L is dynamic at context L
    assert sized == _total(spec, context + extra, batch, dynamic)


@given(
    spec=SPECS,
    kv=KV_SETTINGS,
    batch=st.integers(min_value=1, max_value=4),
    free=st.integers(min_value=0, max_value=20 * MIB),
)
@settings(max_examples=50, deadline=None)
def test_max_context_is_the_largest_that_fits(spec, kv, batch, free):
    limit = max_context(spec, free_bytes=free, batch=batch, settings=kv)
    n = limit.max_context
    assert 0 <= n <= spec.max_position_embeddings
    if n:
        assert limit.total_bytes == _total(spec, n, batch, kv) <= free
    else:
        assert limit.total_bytes == 0
    if limit.limited_by == "memory":
        assert n < spec.max_position_embeddings
        assert _total(spec, n + 1, batch, kv) > free
    else:
        assert limit.limited_by == "max_position_embeddings"
        assert n == spec.max_position_embeddings


@given(spec=SPECS, kv=KV_SETTINGS, context=CONTEXT, free=st.integers(0, 20 * MIB))
@settings(max_examples=50, deadline=None)
def test_max_sequences_is_the_largest_that_fits(spec, kv, context, free):
    n = max_sequences(spec, free_bytes=free, context=context, settings=kv)
    one = kv_cache_bytes(spec, context=context, settings=kv)
    assert n >= 0
    assert n == max(0, (free - one.scale_bytes) // one.per_sequence_bytes)
    if n:
        assert _total(spec, context, n, kv) <= free
    assert _total(spec, context, n + 1, kv) > free


@given(spec=gqa_specs(), context=CONTEXT)
@settings(max_examples=50, deadline=None)
def test_fp8_half_of_bf16(spec, context):
    bf16 = kv_cache_bytes(spec, context=context)
    fp8 = kv_cache_bytes(spec, context=context, settings=KVSettings(kv_format="fp8"))
    assert 2 * fp8.per_sequence_bytes == bf16.per_sequence_bytes
    assert fp8.total_bytes == bf16.total_bytes // 2 + 8 * spec.num_layers


@given(
    layers=st.lists(SLIDING, min_size=1, max_size=6),
    kv=st.integers(min_value=1, max_value=4),
    context=CONTEXT,
)
@settings(max_examples=50, deadline=None)
def test_all_sliding_cache_is_bounded(layers, kv, context):
    spec = _tiny_spec(layers=tuple(layers), heads=kv, kv_heads=kv, head_dim=32)
    bound = sum(
        layer.window * layer_bytes_per_token(spec, layer, KVSettings()) for layer in spec.layers
    )
    assert _total(spec, context) <= bound


def test_a_context_past_the_model_limit_is_computed_and_warned():
    spec = ModelSpec.from_hf_config(load_preset("gemma-2-2b"))
    assert spec.max_position_embeddings == 8192  # google/gemma-2-2b config.json
    inside = kv_cache_bytes(spec, context=8192)
    past = kv_cache_bytes(spec, context=8193)
    assert inside.warnings == ()
    (warning,) = past.warnings
    assert "context 8,193 tokens" in warning and "max_position_embeddings (8,192)" in warning
    assert past.total_bytes > inside.total_bytes
    static = kv_cache_bytes(
        spec, context=100, settings=KVSettings(allocation="static"), max_length=10_000
    )
    assert len(static.warnings) == 1 and "max_length 10,000" in static.warnings[0]
