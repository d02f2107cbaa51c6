"""KV cache storage formats: bytes per value, per-layer scales, block rules and errors."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculators.memory.kv_cache import KVSettings, kv_bytes_per_token, kv_cache_bytes
from calculators.memory.kv_formats import KV_FORMATS, KVFormat, get_kv_format
from calculators.model.presets import load_preset
from calculators.model.spec import LayerSpec, ModelSpec

KNOWN_IDS = ("fp32", "bf16", "fp16", "fp8", "fp8-e5m2", "int8")


def _preset(preset_id: str) -> ModelSpec:
    return ModelSpec.from_hf_config(load_preset(preset_id), name=preset_id)


def _spec(*, head_dim: int, layers: int = 2, heads: int = 4, kv_heads: int = 2) -> ModelSpec:
    return ModelSpec(
        name="tiny",
        model_type="llama",
        vocab_size=100,
        hidden_size=heads * head_dim,
        num_layers=layers,
        num_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate_size=64,
        layers=tuple(LayerSpec(attention="full") for _ in range(layers)),
        tie_word_embeddings=False,
        max_position_embeddings=4096,
    )


LLAMA = _preset("llama-3.1-8b")


# --- the table ------------------------------------------------------------------------


def test_known_ids():
    assert tuple(KV_FORMATS) == KNOWN_IDS
    for fid, fmt in KV_FORMATS.items():
        assert fmt.id == fid
        assert get_kv_format(fid) is fmt
        assert fmt.source  # every format says where it comes from


@pytest.mark.parametrize(
    ("fid", "elements", "block", "scales", "bits"),
    [
        # IEEE 754 binary32: 4 bytes a value.
        ("fp32", 1, 4, 0, 32.0),
        # bfloat16 / IEEE binary16: 2 bytes a value.
        ("bf16", 1, 2, 0, 16.0),
        ("fp16", 1, 2, 0, 16.0),
        # vLLM --kv-cache-dtype fp8 / fp8_e5m2: 1 byte a value plus fp32 k_scale and v_scale
        # per attention layer (2 x 4 = 8 bytes, vllm/attention/layer.py).
        ("fp8", 1, 1, 8, 8.0),
        ("fp8-e5m2", 1, 1, 8, 8.0),
        # llama.cpp block_q8_0 (ggml/src/ggml-common.h): fp16 d + 32 x int8 = 34 bytes per
        # 32 values, 34 x 8 / 32 = 8.5 bits a value.
        ("int8", 32, 34, 0, 8.5),
    ],
)
def test_format_rows(fid, elements, block, scales, bits):
    fmt = get_kv_format(fid)
    assert fmt.block_elements == elements
    assert fmt.block_bytes == block
    assert fmt.layer_scale_bytes == scales
    assert fmt.bits_per_value == bits


@pytest.mark.parametrize(
    ("fid", "values", "expected"),
    [
        ("fp32", 128, 512),
        ("bf16", 128, 256),
        ("fp16", 96, 192),
        ("fp8", 128, 128),
        ("fp8-e5m2", 576, 576),
        ("int8", 32, 34),
        ("int8", 128, 136),  # 4 blocks x 34
        ("int8", 576, 612),  # MLA latent 512 + 64 = 18 blocks x 34
    ],
)
def test_bytes_for(fid, values, expected):
    assert get_kv_format(fid).bytes_for(values) == expected


@pytest.mark.parametrize("values", [1, 16, 31, 33, 80, 100])
def test_int8_row_not_divisible_by_32_raises(values):
    with pytest.raises(ValueError, match=rf"kv_format int8 .* blocks of 32 .* {values} values"):
        get_kv_format("int8").bytes_for(values)


@given(values=st.integers(min_value=1, max_value=4096))
@settings(max_examples=50, deadline=None)
def test_plain_formats_scale_linearly(values):
    for fid, width in (("fp32", 4), ("bf16", 2), ("fp16", 2), ("fp8", 1), ("fp8-e5m2", 1)):
        assert get_kv_format(fid).bytes_for(values) == width * values


@given(blocks=st.integers(min_value=1, max_value=256))
@settings(max_examples=50, deadline=None)
def test_int8_is_34_bytes_per_32_values(blocks):
    assert get_kv_format("int8").bytes_for(32 * blocks) == 34 * blocks


# --- errors ---------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["q4_0", "BF16", "", "fp8_e4m3", None])
def test_unknown_format_names_field_value_and_choices(bad):
    with pytest.raises(ValueError, match=re.escape(f"got {bad!r}")) as info:
        get_kv_format(bad)
    message = str(info.value)
    assert message.startswith("kv_format must be one of ")
    for fid in KNOWN_IDS:
        assert fid in message


def test_unknown_format_rejected_by_settings():
    with pytest.raises(ValueError, match=r"kv_format must be one of .*; got 'q4_0'"):
        KVSettings(kv_format="q4_0")


@pytest.mark.parametrize(
    "fields",
    [
        {"block_elements": 0},
        {"block_bytes": 0},
        {"block_elements": -1},
        {"layer_scale_bytes": -1},
    ],
)
def test_format_rejects_bad_block_sizes(fields):
    base = {
        "id": "x",
        "name": "x",
        "block_elements": 1,
        "block_bytes": 1,
        "layer_scale_bytes": 0,
        "source": "test",
    }
    with pytest.raises(ValueError, match=r"kv format x: block sizes must be positive"):
        KVFormat(**(base | fields))


# --- formats applied to a model -------------------------------------------------------


def test_llama_bytes_per_token_by_format():
    # meta-llama/Llama-3.1-8B config.json: 32 layers, 8 KV heads, head_dim 4096 / 32 = 128.
    # Values per token: 32 x 2 (K, V) x 8 x 128 = 65,536.
    per_format = {fid: kv_bytes_per_token(LLAMA, KVSettings(kv_format=fid)) for fid in KNOWN_IDS}
    assert per_format == {
        "fp32": 65_536 * 4,  # 262,144
        "bf16": 65_536 * 2,  # 131,072
        "fp16": 65_536 * 2,
        "fp8": 65_536,  # half of bf16
        "fp8-e5m2": 65_536,
        # 32 x 2 x 8 x (128 / 32 x 34) = 32 x 2 x 8 x 136 = 69,632 = 65,536 x 34 / 32
        "int8": 69_632,
    }


def test_fp8_total_is_half_bf16_plus_per_layer_scales():
    bf16 = kv_cache_bytes(LLAMA, context=1000, batch=3)
    fp8 = kv_cache_bytes(LLAMA, context=1000, batch=3, settings=KVSettings(kv_format="fp8"))
    # 3 x 1000 x 65,536 + 32 layers x 8 bytes (k_scale, v_scale in fp32).
    assert fp8.scale_bytes == 32 * 8 == 256
    assert fp8.per_sequence_bytes == 1000 * 65_536
    assert fp8.total_bytes == 3 * 1000 * 65_536 + 256 == 196_608_256
    assert fp8.total_bytes - fp8.scale_bytes == bf16.total_bytes // 2
    assert bf16.scale_bytes == 0


def test_fp8_scales_do_not_grow_with_batch_or_context():
    fp8 = KVSettings(kv_format="fp8")
    a = kv_cache_bytes(LLAMA, context=1, batch=1, settings=fp8)
    b = kv_cache_bytes(LLAMA, context=4096, batch=8, settings=fp8)
    assert a.scale_bytes == b.scale_bytes == 256
    assert a.total_bytes == 65_536 + 256 == 65_792


def test_int8_total_is_34_over_32_of_one_byte_per_value():
    result = kv_cache_bytes(LLAMA, context=2048, settings=KVSettings(kv_format="int8"))
    # 2048 tokens x 65,536 values x 34 / 32 bytes, no per-layer scales (scales are in blocks).
    assert result.total_bytes == 2048 * 65_536 * 34 // 32 == 142_606_336
    assert result.scale_bytes == 0


def test_int8_mla_latent():
    # DeepSeek-V3: latent row 512 + 64 = 576 values = 18 q8_0 blocks of 34 bytes, 61 layers.
    spec = _preset("deepseek-v3")
    assert kv_bytes_per_token(spec, KVSettings(kv_format="int8")) == 61 * 18 * 34 == 37_332


@pytest.mark.parametrize("head_dim", [80, 48, 100])
def test_int8_head_dim_not_divisible_by_32_raises(head_dim):
    spec = _spec(head_dim=head_dim)
    int8 = KVSettings(kv_format="int8")
    pattern = rf"kv_format int8 .* a row of {head_dim} values does not divide"
    with pytest.raises(ValueError, match=pattern):
        kv_bytes_per_token(spec, int8)
    with pytest.raises(ValueError, match=pattern):
        kv_cache_bytes(spec, context=16, settings=int8)
    # Any plain format is fine with the same shape: 2 layers x 2 x 2 kv heads x d x 2 bytes.
    assert kv_bytes_per_token(spec) == 2 * 2 * 2 * head_dim * 2


def test_int8_accepts_head_dim_96():
    # microsoft/Phi-3-mini-4k-instruct: head_dim 3072 / 32 = 96 = 3 blocks; 32 layers, MHA
    # (32 KV heads): 32 x 2 x 32 x 3 x 34 = 208,896.
    spec = _preset("phi-3-mini-4k")
    assert kv_bytes_per_token(spec, KVSettings(kv_format="int8")) == 208_896


@given(
    fid=st.sampled_from(KNOWN_IDS),
    head_dim=st.sampled_from([32, 64, 96, 128, 256]),
    layers=st.integers(min_value=1, max_value=8),
    kv_heads=st.integers(min_value=1, max_value=4),
)
@settings(max_examples=50, deadline=None)
def test_bytes_per_token_matches_bits_per_value(fid, head_dim, layers, kv_heads):
    spec = _spec(head_dim=head_dim, layers=layers, heads=kv_heads, kv_heads=kv_heads)
    fmt = get_kv_format(fid)
    values = layers * 2 * kv_heads * head_dim
    assert kv_bytes_per_token(spec, KVSettings(kv_format=fid)) * 8 == values * fmt.bits_per_value
